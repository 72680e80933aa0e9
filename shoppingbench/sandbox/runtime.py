"""A hard-linked mirror of the interpreter's installation and site-packages at a neutral host path, for
the namespace sandbox to mount instead of the originals.

The kernel shows every bind mount's source path to the processes inside (the fourth field of
``/proc/self/mountinfo``), so mounting the venv itself would tell an agent where the host keeps its
virtualenv, interpreter and repository. A mirror made of hard links copies no data (one walk: about
14 s for the 120,000 files of a venv with PyTorch on a loaded 2-core machine) and is made once per host
and content, one per source directory: its name hashes the source's path and the modification times of
its top-level entries, which every ``pip install`` or upgrade changes (older mirrors are left in place:
a running sandbox may still mount one; they cost directory entries, not data). It is built in a
temporary directory and renamed into place, so a runner never mounts half a mirror and concurrent
runners agree on one. The mirrors' directory must belong to this user and be writable by nobody else
(it lives in the shared temporary directory), or it is not used. Where hard links cannot be made (the
source on another filesystem, ``fs.protected_hardlinks`` for files of another user), there is no
mirror and the caller mounts the source itself.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Final

import structlog

log = structlog.get_logger(__name__)

DEFAULT_ROOT: Final = Path(tempfile.gettempdir()) / "sandbox-runtime"


def mirror_key(source: Path) -> str:
    """A name for the mirror of ``source`` as it is now."""
    digest = hashlib.sha256(f"{source}\0{source.stat().st_mtime_ns}\0".encode())
    with os.scandir(source) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            digest.update(f"{entry.name}\0{entry.stat(follow_symlinks=False).st_mtime_ns}\0".encode())
    return digest.hexdigest()[:16]


def mirror(source: Path, root: Path = DEFAULT_ROOT) -> Path | None:
    """A directory under ``root`` holding hard links to ``source``'s files, made now or earlier; ``None``
    when hard links cannot be made."""
    root.mkdir(mode=0o755, parents=True, exist_ok=True)
    if not _ours_alone(root):
        log.warning("sandbox_runtime_root_untrusted", root=str(root),
                    consequence="not used: someone else could plant the interpreter the sandbox runs")
        return None
    target = root / mirror_key(source)
    if target.is_dir():
        return target
    scratch = Path(tempfile.mkdtemp(prefix=".making-", dir=root))
    try:
        shutil.copytree(source, scratch / "tree", symlinks=True, copy_function=os.link)
        (scratch / "tree").rename(target)
    except OSError as exc:
        if target.is_dir():  # another runner made it first
            return target
        log.warning("sandbox_runtime_mirror_failed", source=str(source), error=str(exc)[:500],
                    consequence="the sandbox mounts it as it is: its host path shows in /proc/self/mountinfo")
        return None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    log.info("sandbox_runtime_mirrored", source=str(source), path=str(target))
    return target


def _ours_alone(root: Path) -> bool:
    """``root`` is a real directory of this user that nobody else may write to (it sits in a shared
    temporary directory, where anyone could have made it first)."""
    info = root.lstat()
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022
