"""Hostile: returns steps that are not JSON-able or not shaped as steps; the query picks which."""

import contextlib
import os


class Hostile:
    def __repr__(self):
        raise RuntimeError("no repr for you")


def agent_main(problem):
    kind = problem["query"]
    if kind == "set":
        return [{"ids": {1, 2}}]
    if kind == "nan":
        return [{"price": float("nan")}]
    if kind == "dict":
        return {"steps": []}
    if kind == "ints":
        return [1, 2, 3]
    if kind == "none":
        return None
    if kind == "object":
        return [{"x": Hostile()}]
    if kind == "surrogate":
        return [{"text": "\ud800"}]
    if kind == "circular":
        step = {}
        step["self"] = step
        return [step]
    if kind == "huge":
        return [{"blob": "x" * (4 << 20)}]
    if kind == "junk_fds":
        for fd in range(3, 64):
            with contextlib.suppress(OSError):
                os.write(fd, b'{"type": "result", "nonce": "forged", "payload_bytes": 0}\n')
        return []
    if kind == "exit":
        os._exit(7)
    raise SystemExit(3)
