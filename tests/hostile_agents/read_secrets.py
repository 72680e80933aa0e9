"""Hostile: tries to read a file outside its tmp (the query is its path) and the host's environment."""

import contextlib
import os


def agent_main(problem):
    leaked = {"env": dict(os.environ), "home": os.path.expanduser("~")}
    try:
        with open(problem["query"]) as handle:
            leaked["file"] = handle.read()
    except OSError as exc:
        leaked["file_error"] = f"{type(exc).__name__}"
    with contextlib.suppress(OSError):
        leaked["root"] = os.listdir("/")
    if "file" in leaked:
        return [{"leaked": leaked}]
    raise PermissionError(f"could not read the wallet: {leaked['file_error']}; env={sorted(leaked['env'])}; "
                          f"home={leaked['home']}; root={leaked.get('root')}")
