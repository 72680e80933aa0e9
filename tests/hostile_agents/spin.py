"""Hostile when the query says "spin": leaves a sleeping process behind and spins forever.

Otherwise it lists the processes it shares its sandbox with besides its init and its parent (the
bootstrap): none should be left over."""

import os
import time


def agent_main(problem):
    if problem["query"] == "spin":
        if os.fork() == 0:
            time.sleep(3600)
            os._exit(0)
        while True:
            pass
    mine = {1, os.getppid(), os.getpid()}
    others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in mine]
    return [{"other_pids": others}]
