"""Hostile: allocates 8 GB."""


def agent_main(problem):
    hog = bytearray(8 * 1024**3)
    return [{"size": len(hog)}]
