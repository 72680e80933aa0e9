"""A year of a validator's suite draws, simulated with the validator's own ``PublicSuites``.

Every day: the week's public practice suite and the day's race suite, generated (by the generator the
schedule, ``ARENA_GENERATOR_SCHEDULE``, names for the day) from a stand-in seed
(the sha256 of the day, as a block hash would be); every ``held_out_every`` days a new version of a
held-out suite from a private seed, excluding every product a public suite burnt so far. At the end the
leak clusters of everything public are computed, and each race problem is checked against every public
problem that came before it (races and qualifying suites of earlier days): a shared cluster is a burnt
cluster repeated. Held-out problems that a later public suite caught (``compromised``) are counted too.

    python -m benchmarks.suite_year [--days 365] [--products 50000] [--per-category 20]

prints progress and, as its last line, one JSON object with ``days_simulated``, ``empty_draws`` (race
days that could not get a single problem), ``short_draws``, ``burnt_cluster_repeats``,
``held_out_versions``, ``held_out_compromised`` and timings.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock_time
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import create_engine

from arena.settings import ArenaSettings
from arena.storage import Base
from arena.suites.clusters import text_links
from arena.suites.generators import open_scheduled_sources
from arena.suites.held_out import HeldOutSuite, compromised, generate_held_out
from arena.suites.public import (
    PublicSuites,
    RaceSeed,
    SourceSchedule,
    SuiteCache,
    SuitePlan,
    practice_week,
    targets_of,
)
from benchmarks.sample_catalogs import DEFAULT_CACHE, catalog_dir
from shoppingbench.logs import configure_logging
from shoppingbench.problems.models import CATEGORIES, Problem

FIRST_DAY = date(2026, 1, 1)


@dataclass(frozen=True)
class YearReport:
    days_simulated: int
    race_problems: int
    qualifying_problems: int
    empty_draws: int
    short_draws: int
    burnt_cluster_repeats: int
    held_out_versions: int
    held_out_compromised: int
    generate_s: float
    cluster_s: float


def stand_in_seed(slot: datetime) -> RaceSeed:
    """What a chain would give: a block hash nobody could know before the slot."""
    digest = hashlib.sha256(slot.isoformat().encode()).hexdigest()
    return RaceSeed(block=int(slot.timestamp()) // 12, hash=digest)


def _first_public(race_days: dict[date, tuple[Problem, ...]],
                  qualifying: dict[str, tuple[Problem, ...]]) -> dict[str, tuple[date, Problem]]:
    """Each public problem with the day it became public (a qualifying suite on its week's Monday)."""
    first: dict[str, tuple[date, Problem]] = {}
    dated = [(day, problems) for day, problems in race_days.items()]
    dated += [(date.fromisocalendar(int(week[:4]), int(week[6:]), 1), problems)
              for week, problems in qualifying.items()]
    for day, problems in sorted(dated, key=lambda pair: pair[0]):
        for problem in problems:
            first.setdefault(problem.id, (day, problem))
    return first


def _repeats(race_days: dict[date, tuple[Problem, ...]], qualifying: dict[str, tuple[Problem, ...]]) -> int:
    """Race problems directly linked (a shared target product, or request facts alike enough to share a leak
    cluster) to a problem that was public before their race day: what "a burnt cluster repeated" means at
    the time of the draw (links through problems made public later do not count)."""
    first = _first_public(race_days, qualifying)
    ordered = sorted(first.values(), key=lambda pair: pair[1].id)
    days = [day for day, _ in ordered]
    problems = [problem for _, problem in ordered]
    holders: dict[str, list[int]] = {}
    for index, problem in enumerate(problems):
        for target in {t.product_id for t in problem.targets}:
            holders.setdefault(target, []).append(index)
    links = {(a, b) for indices in holders.values() for a in indices for b in indices if a < b}
    links |= set(text_links(problems))
    raced_on = {p.id: day for day, group in race_days.items() for p in group}
    position = {problem.id: index for index, problem in enumerate(problems)}
    repeated = {pid for pid, day in raced_on.items() if days[position[pid]] < day}  # public before its race
    for a, b in links:
        for mine, other in ((a, b), (b, a)):
            day = raced_on.get(problems[mine].id)
            if day is not None and days[other] < day:
                repeated.add(problems[mine].id)
    return len(repeated)


def simulate_year(sources: SourceSchedule, *, days: int, per_category: int, held_out_every: int = 30,
                  held_out_per_category: int = 25, progress: bool = True) -> YearReport:
    sizes = dict.fromkeys(CATEGORIES, per_category)
    plan = SuitePlan(race_per_category=sizes, qualifying_per_category=sizes, race_time=clock_time(16),
                     first_day=FIRST_DAY, burn_days=days)
    engine = create_engine("sqlite://")
    Base.metadata.create_all(engine)
    suites = PublicSuites(sources, plan=plan, seed_at=stand_in_seed, cache=SuiteCache(engine))
    race_days: dict[date, tuple[Problem, ...]] = {}
    qualifying: dict[str, tuple[Problem, ...]] = {}
    held_out: list[HeldOutSuite] = []
    started = time.perf_counter()
    for n in range(days):
        day = FIRST_DAY + timedelta(days=n)
        qualifying[practice_week(day)] = suites.practice_suite(day)
        drawn = suites.race_suite(day)
        assert drawn is not None  # the stand-in seed always exists
        race_days[day] = drawn.problems
        if n % held_out_every == 0:
            burnt = suites.known_targets()
            generator = sources.for_day(day)
            held_out.append(generate_held_out(
                generator, name="study", version=len(held_out) + 1, private_seed="validator-private",
                per_category=dict.fromkeys(CATEGORIES, held_out_per_category), burnt=burnt,
                source_key=generator.key, at=datetime.combine(day, clock_time(), UTC)))
            assert not targets_of(held_out[-1].problems) & burnt
        if progress and (n + 1) % 30 == 0:
            print(f"day {n + 1}/{days}: {sum(map(len, race_days.values()))} race problems, "
                  f"{len(suites.known_targets())} burnt products, {time.perf_counter() - started:.0f} s",
                  file=sys.stderr, flush=True)
    generate_s = time.perf_counter() - started
    started = time.perf_counter()
    repeats = _repeats(race_days, qualifying)
    public = [p for group in (*race_days.values(), *qualifying.values()) for p in group]
    caught = sum(len(compromised(h, public)) for h in held_out)
    wanted = per_category * len(CATEGORIES)
    return YearReport(days_simulated=days, race_problems=sum(map(len, race_days.values())),
                      qualifying_problems=sum(map(len, qualifying.values())),
                      empty_draws=sum(not problems for problems in race_days.values()),
                      short_draws=sum(0 < len(problems) < wanted for problems in race_days.values()),
                      burnt_cluster_repeats=repeats, held_out_versions=len(held_out),
                      held_out_compromised=caught, generate_s=round(generate_s, 1),
                      cluster_s=round(time.perf_counter() - started, 1))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--products", type=int, default=50_000)
    parser.add_argument("--per-category", type=int, default=20)
    parser.add_argument("--cache", type=Path, default=None, help="Where benchmark catalogs are kept")
    args = parser.parse_args(argv)
    configure_logging("console", "WARNING")
    directory = catalog_dir(args.products, 0, args.cache or DEFAULT_CACHE)
    with open_scheduled_sources(directory, ArenaSettings().schedule()) as sources:
        report = simulate_year(sources, days=args.days, per_category=args.per_category)
    figures: dict[str, Any] = {"products": args.products, "per_category": args.per_category, **asdict(report)}
    print(orjson.dumps(figures).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
