"""Hostile: prints 1 GB to stdout."""

import sys


def agent_main(problem):
    chunk = "x" * (1 << 20)
    for _ in range(1024):
        sys.stdout.write(chunk)
    return []
