"""Slot uids leased per run across every process on the host, so no two runs ever share one.

``RLIMIT_NPROC`` counts the processes of a uid host-wide: two runs whose slots share a uid share one
process pool, and a fork bomb in one starves the other's agents. A uid is leased by holding an exclusive
``flock`` on ``<lock dir>/<uid>.lock`` for the length of the run: another runner process (a second
validator, a ``miner test`` beside it) or another run of this process finds it held and takes the next
free uids. A uid that any process runs as (a leftover, or something else on the host) is skipped too.
Locks die with their holder, so a crashed runner leaves nothing to clean; lock files are never removed
(removing one while another process waits on it would let two processes hold "the same" lock).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

MAX_UIDS_SCANNED: Final = 4096
"""How far past the base a lease looks for free uids before it gives up."""


def default_lock_dir() -> Path:
    """``/run/shoppingbench/uids`` for root (``/run`` is never cleaned while the host is up), else a
    directory of the user under the temporary directory."""
    if os.geteuid() == 0:
        return Path("/run/shoppingbench/uids")
    return Path(tempfile.gettempdir()) / f"shoppingbench-uids-{os.geteuid()}"


def uids_in_use() -> frozenset[int]:
    """Real uids of the processes running on the host now."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            status = Path(f"/proc/{entry}/status").read_text()
            line = next(line for line in status.splitlines() if line.startswith("Uid:"))
            found.add(int(line.split()[1]))
    return frozenset(found)


def _lock_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_uid != os.geteuid():
        raise RuntimeError(f"the uid lock directory {path} belongs to another user")
    return path


def _try_lock(directory: Path, uid: int) -> int | None:
    """An open descriptor holding ``uid``'s lock, or ``None`` when another holder has it."""
    fd = os.open(directory / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


@contextmanager
def lease_uids(base: int, count: int, lock_dir: Path | None = None) -> Iterator[int]:
    """The first of ``count`` consecutive uids from ``base`` on that no other run holds and no process runs
    as, held until the block exits."""
    directory = _lock_dir(lock_dir or default_lock_dir())
    busy = uids_in_use()
    held: list[int] = []
    first = base
    try:
        while len(held) < count:
            uid = first + len(held)
            if uid >= base + MAX_UIDS_SCANNED:
                raise RuntimeError(f"no {count} free consecutive slot uids in {base}..{uid}")
            fd = None if uid in busy else _try_lock(directory, uid)
            if fd is None:  # start again after the taken uid
                _release(held)
                held, first = [], uid + 1
            else:
                held.append(fd)
        yield first
    finally:
        _release(held)


def _release(descriptors: list[int]) -> None:
    for fd in descriptors:
        os.close(fd)  # closing the last descriptor of the lock releases it
