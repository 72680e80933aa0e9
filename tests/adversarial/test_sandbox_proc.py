"""What an agent can learn about its host from ``/proc`` inside the sandbox: pid 1 is the bootstrap
itself, so its command line names only paths the agent sees anyway, never the host paths bubblewrap's
own command line held (the run's workspace, the repository's bootstrap and SDK, the proxy's socket). As
the namespace's init it also ignores the agent's signals. On both isolating backends: under docker the
bootstrap is the container's pid 1 (``env -i`` execs it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoppingbench.sandbox.backends import BOOTSTRAP, SDK_DIR, BackendName
from shoppingbench.search.engine import BM25SearchEngine
from tests.sandbox_support import problem, run_agent, sandbox_backends

READER = '''"""Reports pid 1's command line and executable, as a hostile agent probing its host would."""

import os


def agent_main(problem):
    with open("/proc/1/cmdline", "rb") as handle:
        cmdline = handle.read().replace(b"\\0", b" ").decode()
    return [{"cmdline": cmdline, "pid": os.getpid(), "parent": os.getppid()}]
'''


@pytest.mark.parametrize("backend", sandbox_backends())
def test_pid_one_shows_no_host_path(backend: BackendName, tmp_path: Path,
                                    small_engine: BM25SearchEngine) -> None:
    agent = tmp_path / "reader.py"
    agent.write_text(READER)
    (record,) = run_agent(agent, [problem("probe", "probe")], small_engine, backend=backend)
    assert record.failure is None, record.failure
    cmdline = record.steps[0]["cmdline"]
    assert "bootstrap.py" in cmdline and record.steps[0]["parent"] == 1  # the bootstrap is pid 1
    for host_only in ("bwrap", "--ro-bind", str(BOOTSTRAP), str(SDK_DIR), str(tmp_path), "sb-run-"):
        assert host_only not in cmdline


KILLER = '''import os
import signal


def agent_main(problem):
    os.kill(1, signal.SIGKILL)
    return [{"after_kill": os.getppid()}]
'''


@pytest.mark.parametrize("backend", sandbox_backends())
def test_the_agent_cannot_kill_its_bootstrap(backend: BackendName, tmp_path: Path,
                                             small_engine: BM25SearchEngine) -> None:
    agent = tmp_path / "killer.py"
    agent.write_text(KILLER)
    first, second = run_agent(agent, [problem("kill-1", "kill"), problem("kill-2", "kill")], small_engine,
                              backend=backend)
    assert first.failure is None and second.failure is None
    assert first.steps == second.steps == [{"after_kill": 1}]
