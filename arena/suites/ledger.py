"""The exposure ledger: every problem that ever became public, when and through what, and every held-out
cluster (SPEC 5, 6). It is the one source of what is burnt for held-out suites, of the answers the upload
gate looks for in a file, and of each problem's leak cluster and dump split.

It lives in the validator's arena database beside the race log, apart from the suite cache: deleting the
cache (or the whole suite history a late validator regenerates) changes nothing it says. Problems are
stored whole, so a restarted validator places new problems against everything it ever exposed or held
out (``arena.suites.placement``), and nothing is ever removed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Literal, Protocol

import orjson
from pydantic import BaseModel, ConfigDict
from sqlalchemy import Boolean, DateTime, Engine, Integer, LargeBinary, String, func, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from arena.race.clock import UtcDatetime
from arena.storage import Base, open_database
from arena.suites.clusters import LeakConfig
from arena.suites.placement import ClusterBook, Placement, Side
from arena.suites.public import targets_of
from shoppingbench.problems.models import Problem
from trajectories.dumps.splits import LedgerSplits, SplitRule

ExposureKind = Literal["practice", "qualifying", "race"]
"""The suites that make problems public (a dump only carries attempts on problems they already did)."""


class Exposure(BaseModel):
    model_config = ConfigDict(frozen=True)

    problem_id: str
    kind: ExposureKind
    reference: str = ""
    """What exposed it: the practice week, the qualifying suite's submission id or the race id."""
    at: UtcDatetime


def exposures(problem_ids: Iterable[str], kind: ExposureKind, reference: str, at: datetime) -> list[Exposure]:
    return [Exposure(problem_id=pid, kind=kind, reference=reference, at=at) for pid in problem_ids]


class ExposureLedger(Protocol):
    def expose(self, problems: Sequence[Problem], kind: ExposureKind, reference: str, at: datetime) -> None:
        """Record ``problems`` as public (those already public are left as they are)."""
        ...

    def known_targets(self) -> frozenset[str]:
        """Every target product of a public problem."""
        ...

    def splits(self) -> LedgerSplits:
        """Every placed problem's cluster and dump split."""
        ...


class ExposureRow(Base):
    __tablename__ = "problem_exposures"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    problem_id: Mapped[str] = mapped_column(String(128), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    reference: Mapped[str] = mapped_column(String(256))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class LedgerProblemRow(Base):
    """A problem the ledger placed: public (exposed) or only held out (a held-out suite's)."""

    __tablename__ = "ledger_problems"

    problem_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    cluster: Mapped[str] = mapped_column(String(128), index=True)
    public: Mapped[bool] = mapped_column(Boolean)
    problem: Mapped[bytes] = mapped_column(LargeBinary)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class LedgerClusterRow(Base):
    """A cluster's side, decided when it first entered the ledger."""

    __tablename__ = "ledger_clusters"

    cluster: Mapped[str] = mapped_column(String(128), primary_key=True)
    side: Mapped[str] = mapped_column(String(16))
    reference: Mapped[str] = mapped_column(String(256))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class SqlExposureLedger:
    """The ledger as tables of the arena database. ``rule`` decides the side of a cluster that a public
    problem starts (by hash of its key); a held-out suite's new clusters are held out. Writers take a
    lock: the work loop and the submission gate share one ledger."""

    def __init__(self, engine: Engine, leak_config: LeakConfig | None = None,
                 rule: SplitRule | None = None) -> None:
        self.engine = engine
        self.leak_config = leak_config or LeakConfig()
        self.rule = rule or SplitRule()
        self._lock = threading.Lock()
        self._book: ClusterBook | None = None
        self._public: set[str] = set()
        self._targets: frozenset[str] = frozenset()

    @classmethod
    def open(cls, url: str, leak_config: LeakConfig | None = None,
             rule: SplitRule | None = None) -> SqlExposureLedger:
        return cls(open_database(url), leak_config, rule)

    def _loaded(self) -> ClusterBook:
        """The placed problems, read again whenever another process (``validator held-out``) placed more."""
        with Session(self.engine) as session:
            placed = session.scalar(select(func.count()).select_from(LedgerProblemRow))
        if self._book is None or len(self._book.placements) != placed:
            book = ClusterBook(self.leak_config)
            with Session(self.engine) as session:
                sides = {cluster: side for cluster, side in
                         session.execute(select(LedgerClusterRow.cluster, LedgerClusterRow.side))}
                rows = session.scalars(select(LedgerProblemRow).order_by(LedgerProblemRow.problem_id)).all()
            problems = {row.problem_id: Problem.model_validate(orjson.loads(row.problem)) for row in rows}
            book.load((problems[row.problem_id], Placement(row.cluster, _side(sides[row.cluster])))
                      for row in rows)
            self._public = {row.problem_id for row in rows if row.public}
            self._targets = targets_of(problems[pid] for pid in self._public)
            self._book = book
        return self._book

    def _place(self, problems: Sequence[Problem], public: bool, kind: ExposureKind | None, reference: str,
               at: datetime) -> dict[str, Placement]:
        with self._lock:
            book = self._loaded()
            new_side = self._public_side if public else _held_out
            fresh = {p.id: p for p in problems}
            placed = book.place(list(fresh.values()), new_side)
            clusters = {pl.cluster: pl.side for pl in placed.values()}
            known = {pid for pid in fresh if pid not in placed}
            made_public = sorted(pid for pid in fresh if public and pid not in self._public)
            with Session(self.engine) as session, session.begin():
                existing = set(session.scalars(select(LedgerClusterRow.cluster)
                                               .where(LedgerClusterRow.cluster.in_(clusters))))
                session.add_all(LedgerClusterRow(cluster=c, side=side, reference=reference, at=at)
                                for c, side in sorted(clusters.items()) if c not in existing)
                session.add_all(LedgerProblemRow(problem_id=pid, cluster=pl.cluster, public=public, at=at,
                                                 problem=orjson.dumps(fresh[pid].model_dump(mode="json")))
                                for pid, pl in sorted(placed.items()))
                promoted = [pid for pid in made_public if pid in known]
                if promoted:
                    session.execute(update(LedgerProblemRow).where(LedgerProblemRow.problem_id.in_(promoted))
                                    .values(public=True))
                if kind is not None:
                    session.add_all(ExposureRow(problem_id=e.problem_id, kind=e.kind, reference=e.reference,
                                                at=e.at) for e in exposures(made_public, kind, reference, at))
            self._public.update(made_public)
            self._targets = self._targets | targets_of(fresh[pid] for pid in made_public)
            return {pid: book.placements[pid] for pid in fresh}

    def _public_side(self, cluster: str) -> Side:
        return "held_out" if self.rule.split_of(cluster) == "held_out" else "train"

    def expose(self, problems: Sequence[Problem], kind: ExposureKind, reference: str, at: datetime) -> None:
        self._place(problems, True, kind, reference, at)

    def hold_out(self, problems: Sequence[Problem], reference: str, at: datetime) -> dict[str, str]:
        """Record a held-out suite's problems (never public): the clusters they start are held out.
        Returns each problem's cluster."""
        return {pid: pl.cluster for pid, pl in self._place(problems, False, None, reference, at).items()}

    def exposed_ids(self) -> frozenset[str]:
        with Session(self.engine) as session:
            return frozenset(session.scalars(select(ExposureRow.problem_id).distinct()))

    def public_problems(self) -> list[Problem]:
        """Every public problem the ledger holds, by id."""
        with Session(self.engine) as session:
            payloads = session.scalars(select(LedgerProblemRow.problem).where(LedgerProblemRow.public)
                                       .order_by(LedgerProblemRow.problem_id)).all()
        return [Problem.model_validate(orjson.loads(payload)) for payload in payloads]

    def known_targets(self) -> frozenset[str]:
        with self._lock:
            self._loaded()
            return self._targets

    def clusters_of(self, problem_ids: Sequence[str]) -> dict[str, str]:
        """The cluster of each of ``problem_ids`` the ledger placed (those it did not are left out)."""
        with self._lock:
            placements = self._loaded().placements
            return {pid: placements[pid].cluster for pid in problem_ids if pid in placements}

    def splits(self) -> LedgerSplits:
        """Every placed problem's cluster and dump split, read from the database as it is now."""
        with Session(self.engine) as session:
            query = select(LedgerProblemRow.problem_id, LedgerClusterRow.cluster, LedgerClusterRow.side).join(
                LedgerClusterRow, LedgerProblemRow.cluster == LedgerClusterRow.cluster)
            return LedgerSplits({pid: Placement(cluster, _side(side)).split()
                                 for pid, cluster, side in session.execute(query)})


_SIDES: dict[str, Side] = {"train": "train", "held_out": "held_out", "contested": "contested"}


def _held_out(_cluster: str) -> Side:
    return "held_out"


def _side(text: str) -> Side:
    if text not in _SIDES:
        raise ValueError(f"the exposure ledger holds a cluster on an unknown side {text!r}")
    return _SIDES[text]
