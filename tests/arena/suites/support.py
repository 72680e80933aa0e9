"""What the suite tests share: a chain-seed stand-in, validators' public suites opened over scheduled
sources with their own SQLite caches, and a suite's bytes for comparing validators."""

from __future__ import annotations

import hashlib
from contextlib import AbstractContextManager, ExitStack
from datetime import datetime
from pathlib import Path

import orjson
from sqlalchemy import create_engine

from arena.storage import Base
from arena.suites import PublicSuites, RaceSeed, SuiteCache, SuitePlan
from arena.suites.generators import ScheduledSources
from shoppingbench.problems.models import Problem


def seed_at(slot: datetime) -> RaceSeed:
    """A stand-in for the hash of the first final block at or after the slot."""
    return RaceSeed(block=int(slot.timestamp()) // 12,
                    hash=hashlib.sha256(slot.isoformat().encode()).hexdigest())


def suite_bytes(problems: tuple[Problem, ...]) -> bytes:
    return orjson.dumps([p.model_dump(mode="json") for p in problems])


class Validators:
    """Opens validators' public suites, each over its own sources and its own empty SQLite cache."""

    def __init__(self, stack: ExitStack, folder: Path, plan: SuitePlan) -> None:
        self.stack = stack
        self.folder = folder
        self.plan = plan

    def open(self, name: str, sources: AbstractContextManager[ScheduledSources]) -> PublicSuites:
        engine = create_engine(f"sqlite:///{self.folder / f'{name}.sqlite3'}")
        Base.metadata.create_all(engine)
        return PublicSuites(self.stack.enter_context(sources), plan=self.plan, seed_at=seed_at,
                            cache=SuiteCache(engine))
