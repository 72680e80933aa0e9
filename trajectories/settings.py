"""The store section: ``ARENA_STORE_URL``, else a SQLite file under the root's data root (``ARENA_HOME``);
and ``ARENA_DUMPS_DIR``, where the daily dumps go (``dump export``) and the validator's site serves them.

A plain model, mixed into an entry point's root settings beside the harness, which declares ``home``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, Field

from shoppingbench.settings import Rooted


class _RootedStore(Rooted, Protocol):
    store_url: str | None


class _RootedDumps(Rooted, Protocol):
    dumps_dir: Path | None


class StoreSettings(BaseModel):
    """The store section of a root settings object."""

    store_url: str | None = Field(default=None, description=(
        "SQLAlchemy URL of the store, e.g. postgresql+psycopg://user@host:5432/arena. "
        "Default: the embedded SQLite file <home>/trajectories.sqlite3"))
    dumps_dir: Path | None = Field(default=None, description=(
        "Folder of the daily dumps, one YYYY-MM-DD/ folder each (`dump export --day`), which the "
        "validator's site lists at /dumps and serves. Default: <home>/dumps"))

    def trajectory_store_url(self: _RootedStore) -> str:
        if self.store_url:
            return self.store_url
        return f"sqlite:///{self.root / 'trajectories.sqlite3'}"

    def dumps_root(self: _RootedDumps) -> Path:
        return self.dumps_dir or self.root / "dumps"
