"""File writes that a crash cannot leave half done."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_file_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so readers (and a crash) see the old bytes or the new, never a mix."""
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp",
                                     delete=False) as handle:
        try:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        except BaseException:
            handle.close()
            os.unlink(handle.name)
            raise
    os.replace(handle.name, path)
