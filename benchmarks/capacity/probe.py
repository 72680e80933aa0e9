"""What the capacity benchmark reads off the machine while a run goes: resident memory of the validator
process and of its sandboxes (sampled from ``/proc``), CPU time, and what the store holds afterwards.

Sandbox processes are the validator's descendants (``namespace`` and ``none`` backends) or, with the
``docker`` backend, the processes of the run's containers (named ``sb-<run id prefix>-<slot>``: their ids,
from ``docker ps``, appear in the processes' cgroup paths; other jobs' containers are not counted). A
process tree ``exclude`` names (the LLM double's) is left out of both.
"""

from __future__ import annotations

import os
import resource
import subprocess
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trajectories.store import TrajectoryStore

PROC = Path("/proc")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _rss_kb(pid: int) -> int:
    try:
        return int((PROC / str(pid) / "statm").read_text().split()[1]) * PAGE_KB
    except (OSError, IndexError, ValueError):
        return 0


def _parent(pid: int) -> int | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # the name may hold spaces and parentheses


def container_ids(name_prefix: str) -> list[str]:
    """The full ids of the running Docker containers whose name starts with ``name_prefix``."""
    try:
        listed = subprocess.run(["docker", "ps", "--no-trunc", "-q", "--filter", f"name=^{name_prefix}"],
                                capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return listed.stdout.split() if listed.returncode == 0 else []


def _in_container(pid: int, containers: Sequence[str]) -> bool:
    if not containers:
        return False
    try:
        cgroups = (PROC / str(pid) / "cgroup").read_text()
    except OSError:
        return False
    return any(container in cgroups for container in containers)


def _pids() -> list[int]:
    return [int(entry.name) for entry in PROC.iterdir() if entry.name.isdigit()]


def sandbox_pids(root: int, exclude: Iterable[int] = (), containers: Sequence[str] = ()) -> list[int]:
    """The processes below ``root`` (not under an ``exclude`` pid) and those of the ``containers``."""
    pids = _pids()
    parents = {pid: _parent(pid) for pid in pids}
    excluded = set(exclude)

    def below_root(pid: int) -> bool:
        seen = 0
        parent = parents.get(pid)
        while parent is not None and seen < 64:
            if parent in excluded:
                return False
            if parent == root:
                return True
            parent, seen = parents.get(parent), seen + 1
        return False

    return [pid for pid in pids
            if pid != root and pid not in excluded and (below_root(pid) or _in_container(pid, containers))]


def cpu_s(who: int = resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of every CPU since boot, from ``/proc/stat``."""
    fields = [float(v) for v in (PROC / "stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    return sum(fields) - idle, sum(fields)


@dataclass
class MemorySampler:
    """Samples every ``interval_s`` in a thread: the peak RSS of this process and of its sandboxes."""

    exclude: tuple[int, ...] = ()
    container_prefix: str | None = None
    """With the docker backend: the name prefix of the run's containers."""
    interval_s: float = 1.0
    validator_peak_kb: int = 0
    sandbox_peak_kb: int = 0
    sandbox_peak_processes: int = 0
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)

    def sample(self) -> None:
        me = os.getpid()
        self.validator_peak_kb = max(self.validator_peak_kb, _rss_kb(me))
        containers = container_ids(self.container_prefix) if self.container_prefix else []
        pids = sandbox_pids(me, self.exclude, containers)
        self.sandbox_peak_kb = max(self.sandbox_peak_kb, sum(_rss_kb(pid) for pid in pids))
        self.sandbox_peak_processes = max(self.sandbox_peak_processes, len(pids))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def __enter__(self) -> MemorySampler:
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="capacity-memory", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def stored_keys(store: TrajectoryStore) -> Counter[tuple[str, str]]:
    """How many stored attempts each (run id, problem id) has."""
    rows = store.fetch(store.attempt_ids())
    return Counter((str(row.run_id), str(row.problem_id)) for row in rows)


def lost_and_doubled(scheduled: Iterable[tuple[str, str]],
                     stored: Counter[tuple[str, str]]) -> tuple[int, int]:
    """Scheduled attempts the store lacks, and stored ones beyond one per scheduled attempt (a second copy,
    or one nobody scheduled)."""
    wanted = set(scheduled)
    lost = sum(1 for key in wanted if stored[key] == 0)
    doubled = sum(count - 1 if key in wanted else count for key, count in stored.items())
    return lost, doubled


def store_bytes(sqlite_file: Path) -> int:
    """The SQLite store's size on disk: the database with its WAL and shared-memory files."""
    return sum(p.stat().st_size for p in sqlite_file.parent.glob(sqlite_file.name + "*"))
