"""Public suites: the qualifying and race suites the arena generates, as a pure function of chain data,
catalog and configuration (SPEC 5).

- The **race suite** of a day is generated once its seed exists: the hash of the first final block at or
  after the day's race slot. No race problem exists anywhere before that block, so nothing a miner
  computes or tabulates in advance can hold its answers.
- A submission's **qualifying problems** are generated from the hash of the first final block after its
  commitment's upload window (``arena.race.rules.upload_deadline``), with its hotkey and the generator's
  key (:func:`qualifying_seed`): they exist only once the file can no longer change nor be uploaded, so no
  agent can carry their answers, and every validator generates the same ones. They are public after the
  run (the exposure ledger burns their clusters).
- The **practice suite** of an ISO week is generated from the week's name: public on purpose, so every
  miner can try an agent on it; it decides nothing, and it rotates every Monday.
- Whatever was public burns its leak clusters: a race problem never has a target of an earlier race suite
  or of a practice suite within the last ``burn_days``, nor wording alike enough to one of their problems
  to share its leak cluster (a problem so linked is replaced from a derived seed). The earlier race suites
  are generated from their own seeds in the same way, back to the arena's first race day, so the suite of
  a day depends on block hashes, the catalog and this configuration only, never on what one validator
  happened to see or run: a validator that joins late regenerates that history once (it is cached) and
  arrives at the same suite as everyone else.
- Which generator makes a day's suites is the generator schedule's answer for that day
  (:mod:`arena.suites.schedule`): a suite is cached under a digest of that generator's key, so a day
  generated before an upgrade replays with the generator it was generated with.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Protocol

import orjson
import structlog
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Engine, LargeBinary, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from arena.race.calendar import race_slot
from arena.storage import Base
from arena.suites.bank import BankNotOpen
from arena.suites.clusters import FactsIndex, LeakConfig
from shoppingbench.problems.models import CATEGORIES, Category, Problem

log = structlog.get_logger(__name__)

_REFILL_ROUNDS = 3
"""How often a race suite's problems worded like a public one are replaced before the suite runs short."""


class RaceSeed(BaseModel):
    """The seed of one race: the hash of the first final block at or after its slot, and that block."""

    model_config = ConfigDict(frozen=True)

    block: int = Field(ge=0)
    hash: str = Field(min_length=1)


SeedLookup = Callable[[datetime], RaceSeed | None]
"""The seed of the race whose slot is the argument, ``None`` while no final block has reached it."""


class SuiteSource(Protocol):
    """What makes problems: ``shoppingbench.generator.ProblemGenerator`` over the validator's catalog."""

    @property
    def key(self) -> str:
        """Names what the output depends on besides the seed (generator version and configuration,
        catalog content): suites are only ever compared or reused under the same key."""
        ...

    def generate(self, seed: str, per_category: Mapping[Category, int], *,
                 exclude_products: AbstractSet[str] = frozenset()) -> list[Problem]: ...


class SourceSchedule(Protocol):
    """Which source makes the race suite of a day and the qualifying suite of a week: the generator schedule
    (``arena.suites.generators.ScheduledSources``), or :class:`FixedSource`."""

    def for_day(self, day: date) -> SuiteSource:
        """The generator of ``day``'s qualifying problems (and of its race, but for a banked day)."""
        ...

    def for_week(self, week: str) -> SuiteSource: ...

    def for_race(self, day: date) -> SuiteSource:
        """What ``day``'s race suite is drawn from: its pinned problem bank, else :meth:`for_day`."""
        ...


@dataclass(frozen=True)
class FixedSource:
    """One source for every day and week: a subnet that never changed its generator."""

    source: SuiteSource

    def for_day(self, day: date) -> SuiteSource:
        return self.source

    def for_week(self, week: str) -> SuiteSource:
        return self.source

    def for_race(self, day: date) -> SuiteSource:
        return self.source


class SuitePlan(BaseModel):
    """The configuration every validator of a subnet shares; any change gives other suites."""

    model_config = ConfigDict(frozen=True)

    race_per_category: Mapping[Category, int]
    qualifying_per_category: Mapping[Category, int]
    race_time: time
    first_day: date = Field(description="The arena's first race day: earlier days have no race suite")
    burn_days: int = Field(default=365, ge=1, description="How long a public suite's clusters stay burnt")
    leak: LeakConfig = LeakConfig()

    def digest(self, source_key: str) -> str:
        """Names every input of the suites besides the seeds: cached suites are reused only under it."""
        text = orjson.dumps({"source": source_key, "plan": self.model_dump(mode="json")},
                            option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(text).hexdigest()[:16]


@dataclass(frozen=True)
class RaceSuite:
    """The hidden suite of one race day, the seed it was generated from and the key of the generator that
    generated it (two validators whose keys differ for a day disagree about that day's suite)."""

    day: date
    seed: RaceSeed
    problems: tuple[Problem, ...]
    generator: str


def practice_week(day: date) -> str:
    """The ISO week a day belongs to: the practice suite's name (``2026-W48``)."""
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def practice_seed(week: str) -> str:
    """The public seed of week ``week``'s practice suite: anyone can generate it, as validators do."""
    return f"practice/{week}"


def qualifying_seed(hotkey: str, block_hash: str, source_key: str) -> str:
    """The seed of the qualifying problems of ``hotkey``'s submission whose commitment is followed by the
    final block of hash ``block_hash``, for the generator named ``source_key``: chain data only."""
    text = "\n".join(("qualifying", source_key, hotkey, block_hash)).encode()
    return f"qualifying/{hashlib.sha256(text).hexdigest()}"


def targets_of(problems: Iterable[Problem]) -> frozenset[str]:
    return frozenset(t.product_id for p in problems for t in p.targets)


class PublicSuiteRow(Base):
    __tablename__ = "public_suites"

    key: Mapped[str] = mapped_column(String(256), primary_key=True)
    seed: Mapped[str] = mapped_column(String(256))
    problems: Mapped[bytes] = mapped_column(LargeBinary)


class SuiteCache:
    """Generated suites in the ``public_suites`` table: a cache (any validator can regenerate them), which
    makes a restart or a late start cost one generation per day at most once."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self, key: str) -> tuple[Problem, ...] | None:
        with Session(self.engine) as session:
            row = session.get(PublicSuiteRow, key)
            if row is None:
                return None
            return tuple(Problem.model_validate(p) for p in orjson.loads(row.problems))

    def put(self, key: str, seed: str, problems: tuple[Problem, ...]) -> None:
        payload = orjson.dumps([p.model_dump(mode="json") for p in problems])
        with Session(self.engine) as session, session.begin():
            session.merge(PublicSuiteRow(key=key, seed=seed, problems=payload))

    def problems(self) -> Iterator[Problem]:
        """Every cached suite's problems: everything this validator ever made public."""
        with Session(self.engine) as session:
            for payload in session.scalars(select(PublicSuiteRow.problems).order_by(PublicSuiteRow.key)):
                yield from (Problem.model_validate(p) for p in orjson.loads(payload))


class PublicSuites:
    """The practice suite of any week, the qualifying problems of any submission and the race suite of
    any day, generated on demand and cached."""

    def __init__(self, sources: SourceSchedule, *, plan: SuitePlan, seed_at: SeedLookup,
                 cache: SuiteCache) -> None:
        self.sources = sources
        self.plan = plan
        self.seed_at = seed_at
        self.cache = cache
        self._suites: dict[str, tuple[Problem, ...]] = {}
        self._races: dict[date, RaceSuite] = {}
        self._wording = FactsIndex(plan.leak)
        self._worded: dict[str, tuple[str, ...]] = {}  # suite name -> ids in the wording index

    def _generated(self, key: str, source: SuiteSource, seed: str, per_category: Mapping[Category, int],
                   exclude: AbstractSet[str], *, unlinked: bool = False) -> tuple[Problem, ...]:
        # The digest names the generator that made the suite: a suite is never reused under another one.
        cache_key = f"{key}/{self.plan.digest(source.key)}"
        if cache_key not in self._suites:
            cached = self.cache.get(cache_key)
            if cached is None:
                cached = self._generate(source, seed, per_category, exclude, unlinked=unlinked)
                self.cache.put(cache_key, seed, cached)
                counts = {c: sum(p.category == c for p in cached) for c in CATEGORIES}
                log.info("suite_generated", suite=key, seed=seed, generator=source.key, problems=len(cached),
                         per_category=counts, excluded_products=len(exclude))
            self._suites[cache_key] = cached
        return self._suites[cache_key]

    def _generate(self, source: SuiteSource, seed: str, per_category: Mapping[Category, int],
                  exclude: AbstractSet[str], *, unlinked: bool) -> tuple[Problem, ...]:
        """``per_category`` problems; with ``unlinked``, each one worded unlike every problem of the wording
        index (those that are not are replaced from ``seed/refill-N``, a few rounds at most)."""
        problems = source.generate(seed, per_category, exclude_products=exclude)
        for round_number in range(1, _REFILL_ROUNDS + 1):
            linked = [p for p in problems if unlinked and self._wording.linked(p) is not None]
            if not linked:
                break
            log.info("suite_problems_replaced", seed=seed, round=round_number, linked=[p.id for p in linked])
            kept = [p for p in problems if p not in linked]
            missing = {c: n for c in CATEGORIES if (n := sum(p.category == c for p in linked))}
            refill = source.generate(f"{seed}/refill-{round_number}", missing,
                                     exclude_products=exclude | targets_of(problems))
            problems = sorted([*kept, *refill], key=lambda p: CATEGORIES.index(p.category))
        return tuple(p for p in problems if not unlinked or self._wording.linked(p) is None)

    def practice_suite(self, day: date) -> tuple[Problem, ...]:
        """The public practice suite of ``day``'s ISO week (the same for the whole week)."""
        week = practice_week(day)
        return self._generated(f"practice/{week}", self.sources.for_week(week), practice_seed(week),
                               self.plan.qualifying_per_category, frozenset())

    def qualifying_suite(self, hotkey: str, seed: RaceSeed, day: date) -> tuple[Problem, ...]:
        """The qualifying problems of ``hotkey``'s submission, ``seed`` being the first final block after its
        commitment's upload window and ``day`` that block's date: as many per category as a practice suite,
        none with a target of the practice suite of ``day``'s week or the week before (tables carry those)."""
        practice = targets_of([*self.practice_suite(day), *self.practice_suite(day - timedelta(days=7))])
        source = self.sources.for_day(day)
        return self._generated(f"qualifying/{hotkey}/{seed.block}", source,
                               qualifying_seed(hotkey, seed.hash, source.key),
                               self.plan.qualifying_per_category, practice)

    def race_suite(self, day: date) -> RaceSuite | None:
        """The race suite of ``day``, or ``None`` while its seed (or an earlier day's) is not final yet, or
        the problem bank pinned for it (or for an earlier day) is still sealed.

        Raises ``ValueError`` for a day before the arena's first race day.
        """
        if day < self.plan.first_day:
            raise ValueError(f"{day} is before the arena's first race day {self.plan.first_day}")
        current = max(self._races, default=self.plan.first_day - timedelta(days=1)) + timedelta(days=1)
        while current <= day:
            seed = self.seed_at(race_slot(current, self.plan.race_time))
            if seed is None:
                return None
            source = self.sources.for_race(current)
            try:
                problems = self._generated(f"race/{current.isoformat()}", source, f"race/{seed.hash}",
                                           self.plan.race_per_category, self._burnt(current), unlinked=True)
            except BankNotOpen as exc:
                log.info("race_bank_sealed", day=current.isoformat(), reason=str(exc))
                return None
            self._races[current] = RaceSuite(day=current, seed=seed, problems=problems, generator=source.key)
            current += timedelta(days=1)
        return self._races[day]

    def _burnt(self, day: date) -> frozenset[str]:
        """Targets of the race suites of the ``burn_days`` before ``day`` and of the practice suites of
        every week those days and ``day`` touch; the wording index is left holding exactly their problems."""
        window = [day - timedelta(days=n) for n in range(self.plan.burn_days, -1, -1)]
        public = {f"race/{d}": self._races[d].problems for d in window if d in self._races}
        for week, first in {practice_week(d): d for d in window if d >= self.plan.first_day}.items():
            public[f"practice/{week}"] = self.practice_suite(first)
        for name in [n for n in self._worded if n not in public]:
            self._wording.remove(self._worded.pop(name))
        for name, problems in public.items():
            if name not in self._worded:
                self._wording.add(problems)
                self._worded[name] = tuple(p.id for p in problems)
        return frozenset().union(*(targets_of(problems) for problems in public.values()))

    def generated_races(self) -> list[RaceSuite]:
        """The race suites generated so far, by day (every day up to the latest one asked for)."""
        return [self._races[day] for day in sorted(self._races)]

    def known_targets(self) -> frozenset[str]:
        """Every target product of a suite generated so far: the answers the upload gate looks for."""
        return frozenset().union(*(targets_of(problems) for problems in self._suites.values()))
