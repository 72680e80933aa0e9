"""Reading a written dump back: its data files, their rows, and the recorded steps and proxy log in a row.

A dump (``dump export``) holds ``data/{split}-{shard}.parquet``; ``worker rewrite`` adds a side dataset
under ``DUMP/rewritten/data/``. Training and the rewrite both read dumps through this module, so neither
needs the other's internals. A row's recorded steps and proxy log are untrusted agent output: they parse
to ``None`` when they are not what they claim to be, never to an exception.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
from pydantic import ValidationError

from shoppingbench.dialogue import DialogueStep
from shoppingbench.records import ProxyCall
from trajectories.store.blobs import expand_proxy_log

REWRITTEN_DIR = "rewritten"
"""Where ``worker rewrite`` puts a dump's rewritten rows by default (``DUMP/rewritten/data/*.parquet``)."""


def read_held_out_clusters(path: Path) -> frozenset[str]:
    """Cluster ids one per line, ``#`` comments (the format of ``dump export --held-out-clusters``)."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return frozenset(line for line in lines if line)


def dump_files(dumps: Iterable[Path]) -> list[Path]:
    """Every data file of the dumps (all splits), refusing a directory that is no dump."""
    files: list[Path] = []
    for dump in dumps:
        found = sorted((dump / "data").glob("*.parquet"))
        if not found:
            raise FileNotFoundError(
                f"{dump} holds no data/*.parquet: pass a directory written by `dump export`")
        files.extend(found)
    return files


def split_files(dump: Path, split: str) -> list[Path]:
    """The data files of one split of ``dump`` (none when the dump has no row of that split)."""
    if not (dump / "data").is_dir():
        raise FileNotFoundError(f"{dump} holds no data/ directory: pass a directory written by `dump export`")
    return sorted((dump / "data").glob(f"{split}-*.parquet"))


def rewritten_files(dumps: Iterable[Path]) -> list[Path]:
    """The rewritten rows' files of the dumps that have them (``DUMP/rewritten/data/*.parquet``)."""
    return [path for dump in dumps for path in sorted((dump / REWRITTEN_DIR / "data").glob("*.parquet"))]


def read_rows(files: Iterable[Path], columns: Sequence[str], *, optional: Sequence[str] = (),
              batch_size: int = 256) -> Iterator[dict[str, Any]]:
    """The ``columns`` of every row of ``files``, in order, read a batch at a time; ``optional`` columns too
    where a file has them, else None (the columns a dump of an older schema version lacks)."""
    for path in files:
        parquet = pq.ParquetFile(path)
        present = [name for name in optional if name in parquet.schema_arrow.names]
        missing = dict.fromkeys(name for name in optional if name not in present)
        for batch in parquet.iter_batches(batch_size=batch_size, columns=[*columns, *present]):
            for row in batch.to_pylist():
                yield {**row, **missing} if missing else row


def parse_steps(raw: Any) -> list[DialogueStep] | None:
    """Untrusted recorded steps as ``DialogueStep``s, or None when they are not a list of such steps."""
    if not isinstance(raw, list):
        return None
    try:
        return [DialogueStep.model_validate(step) for step in raw]
    except (ValidationError, TypeError, ValueError, RecursionError):
        return None


def parse_steps_json(text: str | None) -> list[DialogueStep] | None:
    """A dump row's ``steps_json`` as ``DialogueStep``s, or None when it is not JSON of such steps."""
    try:
        return parse_steps(orjson.loads(text or "null"))
    except (orjson.JSONDecodeError, RecursionError):
        return None


def parse_proxy_log_json(text: str | None) -> list[ProxyCall] | None:
    """A dump row's ``proxy_log_json`` (blobs expanded) as ``ProxyCall``s, or None when it is unreadable."""
    try:
        entries = expand_proxy_log(orjson.loads(text or "null"))
        return [ProxyCall.model_validate(entry) for entry in entries] if isinstance(entries, list) else None
    except (orjson.JSONDecodeError, ValidationError, TypeError, RecursionError):
        return None
