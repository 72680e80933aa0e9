"""The exposure ledger: every problem that ever became public, when, and through what (SPEC 5).

Exposures are recorded per problem and never removed. Whether a cluster is burnt is computed from
them against the current clusters, so a problem added later to a cluster that was public is burnt
too, with nothing to migrate.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict
from sqlalchemy import DateTime, Engine, Integer, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from arena.race.clock import UtcDatetime
from arena.storage import Base, open_database

ExposureKind = Literal["qualifying", "race", "dump", "published_code"]


class Exposure(BaseModel):
    model_config = ConfigDict(frozen=True)

    problem_id: str
    kind: ExposureKind
    reference: str = ""
    """What exposed it: a suite version, race id, dump date or submission id."""
    at: UtcDatetime


def exposures(problem_ids: Iterable[str], kind: ExposureKind, reference: str, at: datetime) -> list[Exposure]:
    return [Exposure(problem_id=pid, kind=kind, reference=reference, at=at) for pid in problem_ids]


class ExposureLedger(Protocol):
    def record(self, entries: Sequence[Exposure]) -> None: ...

    def exposed_ids(self) -> frozenset[str]: ...


class MemoryExposureLedger:
    def __init__(self) -> None:
        self.entries: list[Exposure] = []

    def record(self, entries: Sequence[Exposure]) -> None:
        self.entries.extend(entries)

    def exposed_ids(self) -> frozenset[str]:
        return frozenset(e.problem_id for e in self.entries)


class ExposureRow(Base):
    __tablename__ = "problem_exposures"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    problem_id: Mapped[str] = mapped_column(String(128), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    reference: Mapped[str] = mapped_column(String(256))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class SqlExposureLedger:
    """The ledger as the ``problem_exposures`` table of any SQLAlchemy database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(cls, url: str) -> SqlExposureLedger:
        return cls(open_database(url))

    def record(self, entries: Sequence[Exposure]) -> None:
        with Session(self.engine) as session, session.begin():
            session.add_all(ExposureRow(problem_id=e.problem_id, kind=e.kind, reference=e.reference, at=e.at)
                            for e in entries)

    def exposed_ids(self) -> frozenset[str]:
        with Session(self.engine) as session:
            return frozenset(session.scalars(select(ExposureRow.problem_id).distinct()))
