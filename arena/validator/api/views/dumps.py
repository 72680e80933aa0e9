"""The dumps index's answers (``GET /dumps``, ``/api/dumps``, ``/api/dumps/{day}``): every day folder
``YYYY-MM-DD/`` of the validator's dumps directory (``ARENA_DUMPS_DIR``) that holds a complete dump (its
``manifest.json``, written last by ``dump export``), with the manifest's figures, the files to fetch and
the ``datasets.load_dataset`` line that reads that day from this server.

Manifests are parsed once per file version (path, size, mtime), so a request lists the folder and reads
nothing it has read before.
"""

from __future__ import annotations

import json
import re
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

import orjson
from pydantic import BaseModel, Field

DAY_FOLDER: Final = re.compile(r"^\d{4}-\d{2}-\d{2}$")
EXTRA_FILES: Final = ("README.md", "manifest.json")
"""Files of a dump the site serves besides the data files its manifest lists."""


class ScoreSummary(BaseModel):
    attempts: int
    success_rate: float
    mean_gt: float
    mean_rule: float
    mean_format: float
    mean_length: float
    rule_histogram: list[int] = Field(description="Attempts per tenth of the rule score, 0.0-0.1 first")
    judge_quality: dict[str, int] = Field(description="Attempts per judge quality level ('none': unjudged)")


class DumpFile(BaseModel):
    path: str
    bytes: int
    rows: int
    sha256: str
    url: str


class DumpDay(BaseModel):
    """One exported day, as the index lists it."""

    day: date
    attempts: int
    splits: dict[str, int]
    categories: dict[str, int]
    labels: dict[str, int]
    success_rate: float | None
    mean_rule: float | None
    files: int
    bytes: int
    schema_version: int
    url: str = Field(description="This day's JSON (``/api/dumps/{day}``)")


class DumpDetail(DumpDay):
    """One exported day with everything its manifest says and the files to fetch."""

    window: dict[str, str]
    split_rule: dict[str, Any]
    split_labels: dict[str, dict[str, int]]
    category_labels: dict[str, dict[str, int]]
    failures: dict[str, int]
    agents: dict[str, int]
    scores: dict[str, ScoreSummary] = Field(description="'all', and per 'category:', 'label:', 'split:'")
    file_list: list[DumpFile]
    card_url: str
    manifest_url: str
    load_dataset: str = Field(description="The Python line that loads this day from this server")


@lru_cache(maxsize=4096)
def _manifest(path: Path, size: int, mtime_ns: int) -> dict[str, Any]:
    loaded: dict[str, Any] = orjson.loads(path.read_bytes())
    return loaded


def manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of the dump in ``folder`` (``None``: no complete dump there)."""
    path = folder / "manifest.json"
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return _manifest(path, stat.st_size, stat.st_mtime_ns)


def dump_days(root: Path | None) -> list[date]:
    """The days with a complete dump under ``root``, newest first."""
    if root is None or not root.is_dir():
        return []
    days = [p.name for p in root.iterdir() if DAY_FOLDER.match(p.name) and (p / "manifest.json").is_file()]
    return sorted((date.fromisoformat(d) for d in days), reverse=True)


def summary(day: date, loaded: dict[str, Any]) -> DumpDay:
    stats, files = loaded["stats"], loaded["files"]
    everything = stats.get("scores", {}).get("all")
    return DumpDay(
        day=day,
        attempts=stats["attempts"],
        splits=loaded["splits"],
        categories=stats["counts"]["category"],
        labels=stats["counts"]["label"],
        success_rate=everything["success_rate"] if everything else None,
        mean_rule=everything["mean_rule"] if everything else None,
        files=len(files),
        bytes=sum(f["bytes"] for f in files.values()),
        schema_version=loaded["schema_version"],
        url=f"/api/dumps/{day}",
    )


def load_dataset_line(base_url: str, files: list[DumpFile], splits: list[str]) -> str:
    """``load_dataset("parquet", data_files=...)`` over this server's URLs of the day's Parquet files,
    split by split (only splits with rows have files)."""
    data_files = {
        s: [
            base_url.rstrip("/") + f.url
            for f in files
            if re.fullmatch(rf"data/{re.escape(s)}-\d+\.parquet", f.path)
        ]
        for s in splits
    }
    return f'load_dataset("parquet", data_files={json.dumps({s: u for s, u in data_files.items() if u})})'


def detail(day: date, loaded: dict[str, Any], base_url: str) -> DumpDetail:
    counts = loaded["stats"]["counts"]
    files = [
        DumpFile(path=path, bytes=f["bytes"], rows=f["rows"], sha256=f["sha256"], url=f"/dumps/{day}/{path}")
        for path, f in sorted(loaded["files"].items())
    ]
    return DumpDetail(
        **summary(day, loaded).model_dump(),
        window=loaded["window"],
        split_rule=loaded["split_rule"],
        split_labels=counts["split_label"],
        category_labels=counts["category_label"],
        failures=counts.get("failure", {}),
        agents=loaded["agents"],
        scores={
            name: ScoreSummary(
                **{k: v for k, v in s.items() if k != "rule_histogram"},
                rule_histogram=s["rule_histogram"]["counts"],
            )
            for name, s in loaded["stats"].get("scores", {}).items()
        },
        file_list=files,
        card_url=f"/dumps/{day}/README.md",
        manifest_url=f"/dumps/{day}/manifest.json",
        load_dataset=load_dataset_line(base_url, files, list(loaded["splits"])),
    )


def servable(root: Path | None, day: date, path: str) -> Path | None:
    """The file ``path`` of ``day``'s dump, if the manifest lists it (or it is the card or the manifest);
    never anything else under the folder (no path from the request reaches the filesystem unchecked)."""
    if root is None:
        return None
    folder = root / day.isoformat()
    loaded = manifest(folder)
    if loaded is None or (path not in loaded["files"] and path not in EXTRA_FILES):
        return None
    target = folder / path
    return target if target.is_file() else None
