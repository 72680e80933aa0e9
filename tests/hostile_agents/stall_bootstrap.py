"""Hostile when the query says "stall": tries to freeze the sandbox's bootstrap (same uid) so that only
the host could end the problem (the bootstrap is the PID namespace's init, which ignores it), then
sleeps. Otherwise a well-behaved empty answer."""

import os
import signal
import time


def agent_main(problem):
    if problem["query"] == "stall":
        os.kill(os.getppid(), signal.SIGSTOP)
        time.sleep(3600)
    return []
