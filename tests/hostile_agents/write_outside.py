"""Hostile: tries to write outside its tmp (the query is a host path) and over its own agent file."""

import os


def agent_main(problem):
    results = []
    for path in (problem["query"], os.path.abspath(__file__), "/usr/lib/escaped.txt", "/escaped.txt"):
        try:
            with open(path, "w") as handle:
                handle.write("ESCAPED")
            results.append(f"{path}: written")
        except OSError as exc:
            results.append(f"{path}: {type(exc).__name__}")
    with open("/tmp/allowed.txt", "w") as handle:  # its private tmp is writable
        handle.write("fine")
    if any(r.endswith("written") for r in results):
        return [{"written": results}]
    raise PermissionError("; ".join(results))
