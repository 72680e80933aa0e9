"""Hostile when the query says "bomb": forks without end. Otherwise a well-behaved answer."""

import os


def agent_main(problem):
    if problem["query"] == "bomb":
        while True:
            os.fork()
    step = {"completion": {"content": "<think>fine</think>", "message": {"think": "fine"}}, "extra_info": {}}
    return [step]
