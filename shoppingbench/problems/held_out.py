"""Where held-out suites live and how their versions are named, for the validator that writes them and the
training worker that evaluates on them.

A held-out suite version is two files under ``$ARENA_HOME/held-out/``: ``NAME-vN.jsonl``, its problems in
ShoppingBench JSONL (with ``id``, ``category`` and ``leak_cluster`` beside ``query``/``reward``/``voucher``,
so ``load_problems`` and ``datasets`` read it as it is), and ``NAME-vN.json``, what the validator knows
about it (the generator and catalog it came from, the digest of its private seed, when it was made).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

HELD_OUT_DIR: Final = "held-out"
DEFAULT_NAME: Final = "study"
_PROBLEMS_FILE: Final = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)-v(?P<version>\d+)\.jsonl$")


def problems_file(directory: Path, name: str, version: int) -> Path:
    return directory / f"{name}-v{version}.jsonl"


def latest_held_out(directory: Path, name: str = DEFAULT_NAME) -> Path | None:
    """The problems file of held-out suite ``name``'s newest version in ``directory``, if any."""
    versions = [(int(match["version"]), path) for path in directory.glob(f"{name}-v*.jsonl")
                if (match := _PROBLEMS_FILE.match(path.name)) and match["name"] == name]
    return max(versions)[1] if versions else None
