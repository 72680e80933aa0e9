"""A small model registry: one SQLite row per evaluated checkpoint (path, stage, data manifest hash, metrics).

The data manifest hash is the sha256 of the training dump's ``manifest.json`` bytes, which name the
sha256 of every data file, so it pins exactly what the checkpoint was trained (or evaluated) on.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import JSON, Float, Integer, String, Text, create_engine, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column


class _Base(DeclarativeBase):
    pass


class _Checkpoint(_Base):
    __tablename__ = "checkpoints"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    path: Mapped[str] = mapped_column(Text)
    stage: Mapped[str] = mapped_column(String(64))
    data_manifest_sha256: Mapped[str | None] = mapped_column(String(64))
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[float] = mapped_column(Float)


class CheckpointEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int | None = None
    path: str
    stage: str = Field(min_length=1)
    data_manifest_sha256: str | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    created_at: float = Field(default_factory=time.time)


def manifest_sha256(dump: Path) -> str:
    """sha256 of ``dump/manifest.json`` (as written by `dump export`)."""
    manifest = dump / "manifest.json"
    if not manifest.is_file():
        raise FileNotFoundError(f"{dump} has no manifest.json: pass a directory written by `dump export`")
    return hashlib.sha256(manifest.read_bytes()).hexdigest()


class ModelRegistry:
    """The registry in one SQLite file (created on first use)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._engine = create_engine(f"sqlite:///{path}")
        _Base.metadata.create_all(self._engine)

    def add(self, entry: CheckpointEntry) -> CheckpointEntry:
        row = _Checkpoint(path=entry.path, stage=entry.stage, data_manifest_sha256=entry.data_manifest_sha256,
                          metrics=entry.metrics, created_at=entry.created_at)
        with Session(self._engine) as session, session.begin():
            session.add(row)
            session.flush()
            return _entry(row)

    def get(self, entry_id: int) -> CheckpointEntry:
        with Session(self._engine) as session:
            row = session.get(_Checkpoint, entry_id)
            if row is None:
                raise KeyError(f"no checkpoint {entry_id} in the registry {self.path}")
            return _entry(row)

    def list(self, path: str | None = None) -> list[CheckpointEntry]:
        """Every entry in registration order, or only those of checkpoint ``path``."""
        query = select(_Checkpoint).order_by(_Checkpoint.id)
        if path is not None:
            query = query.where(_Checkpoint.path == path)
        with Session(self._engine) as session:
            return [_entry(row) for row in session.scalars(query)]

    def close(self) -> None:
        self._engine.dispose()


def _entry(row: _Checkpoint) -> CheckpointEntry:
    return CheckpointEntry(id=row.id, path=row.path, stage=row.stage,
                           data_manifest_sha256=row.data_manifest_sha256, metrics=row.metrics,
                           created_at=row.created_at)
