"""A hostile agent looking for its host inside the sandbox: pid 1's command line and environment, its
own, the mount table (``/proc/self/mounts`` and ``mountinfo``, whose fourth field is each bind mount's
source path), the working directory, ``sys.path``, ``sys.executable`` and the modules' ``__file__``. None
may name the host's virtual environment, interpreter, repository or the run's workspace. On both
isolating backends (docker where an engine and the sandbox image are available)."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

import pytest

from shoppingbench.sandbox.backends import BackendName
from shoppingbench.search.engine import BM25SearchEngine
from tests.sandbox_support import problem, run_agent, sandbox_backends

REPOSITORY = Path(__file__).resolve().parents[2]

PROBE = '''"""Reads everything a process can learn about where it runs, as a hostile agent would."""

import os
import sys

import httpx
import shoppingbench.agent_sdk as sdk


def read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().replace(b"\\0", b" ").decode("utf-8", "replace")
    except OSError as exc:
        return f"unreadable: {exc}"


def agent_main(problem):
    seen = {path: read(path) for path in ("/proc/1/cmdline", "/proc/1/environ", "/proc/self/cmdline",
                                          "/proc/self/environ", "/proc/self/mounts", "/proc/self/mountinfo",
                                          "/proc/1/mountinfo", "/proc/self/maps")}
    seen["cwd"] = os.getcwd()
    seen["environ"] = repr(dict(os.environ))
    seen["sys"] = repr([sys.path, sys.executable, sys.prefix, sys.base_prefix, sys.exec_prefix])
    seen["files"] = repr([__file__, sdk.__file__, httpx.__file__, os.__file__])
    try:
        seen["exe"] = os.readlink("/proc/self/exe")
    except OSError as exc:
        seen["exe"] = f"unreadable: {exc}"
    return [seen]
'''


def host_paths(workspace: Path) -> list[str]:
    """Paths that exist only on the host: the venv, the interpreter's installation, the repository, the
    test's workspace."""
    paths = {sys.prefix, sys.base_prefix, os.path.realpath(sys.base_prefix), os.path.dirname(sys.executable),
             os.path.dirname(os.path.realpath(sys.executable)), sysconfig.get_path("purelib"),
             str(REPOSITORY), str(workspace)}
    return sorted(p for p in paths if p not in ("/", "/usr", "/usr/local"))


@pytest.mark.parametrize("backend", sandbox_backends())
def test_the_agent_finds_no_host_path(backend: BackendName, tmp_path: Path,
                                      small_engine: BM25SearchEngine) -> None:
    agent = tmp_path / "probe.py"
    agent.write_text(PROBE)
    (record,) = run_agent(agent, [problem("probe", "probe")], small_engine, backend=backend)
    assert record.failure is None, record.failure
    seen: dict[str, str] = record.steps[0]
    assert "/" in seen["/proc/self/mountinfo"] and "/" in seen["/proc/1/cmdline"]  # the probe read them
    leaks = {(where, path) for where, text in seen.items() for path in host_paths(tmp_path) if path in text}
    assert not leaks, "\n".join(f"{w}: {p}" for w, p in sorted(leaks))


def mount_sources(mountinfo: str) -> list[str]:
    """The fourth field of each ``mountinfo`` line: the path, inside its filesystem, that the mount shows."""
    return [line.split()[3] for line in mountinfo.splitlines() if len(line.split()) > 4]


def test_no_mount_shows_the_runs_workspace(tmp_path: Path, small_engine: BM25SearchEngine) -> None:
    """The run's workspace (``sb-run-*`` in the host's temporary directory) holds the agent file and the
    copies of the bootstrap and the SDK: the namespace sandbox gets their bytes, not bind mounts of them,
    so no mount source names it (before, seven did: ``/tmp/sb-run-x1y2/code/bootstrap.py`` ...). Nor does
    any name the proxy's socket directory (``sb-proxy-*``; before, ``/tmp/sb-proxy-u3l8rrcr/slot-0.sock``
    was mounted at ``/run/proxy.sock``): the bootstrap reaches the socket through a descriptor."""
    agent = tmp_path / "probe.py"
    agent.write_text(PROBE)
    (record,) = run_agent(agent, [problem("probe", "probe")], small_engine, backend="namespace")
    assert record.failure is None, record.failure
    seen: dict[str, str] = record.steps[0]
    for where in ("/proc/self/mountinfo", "/proc/1/mountinfo"):
        sources = mount_sources(seen[where])
        assert sources and "/sandbox/boot/bootstrap.py" in seen[where]
        leaked = [source for source in sources
                  if "/sb-run-" in source or "/sb-proxy-" in source or source.startswith(str(tmp_path))]
        assert not leaked, f"{where}: {leaked}"
    assert "/sb-run-" not in seen["/proc/self/mounts"] and "/run/proxy.sock" not in seen["/proc/self/mounts"]
