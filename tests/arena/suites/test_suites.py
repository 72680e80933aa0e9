"""Public suites generated from chain seeds, held-out suites from private seeds, and the exposure ledger
(SPEC 5), over the real problem generator and the small sample world's catalog."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from typer.testing import CliRunner

from arena.storage import Base
from arena.suites import (
    FixedSource,
    HeldOutSuite,
    PublicSuites,
    RaceSeed,
    SqlExposureLedger,
    SuiteCache,
    SuitePlan,
    compromised,
    generate_held_out,
    practice_week,
    qualifying_seed,
    targets_of,
)
from benchmarks.suite_year import simulate_year
from neurons import validator as validator_cli
from shoppingbench.generator import ProblemGenerator
from shoppingbench.problems.held_out import latest_held_out
from shoppingbench.problems.loaders import load_problems
from shoppingbench.problems.models import CATEGORIES, Category, Problem
from shoppingbench.sample_world import SampleWorld

AT = datetime(2026, 11, 22, 12, tzinfo=UTC)
FIRST_DAY = date(2026, 11, 16)  # a Monday
SIZES: dict[Category, int] = {"product": 2, "shop": 1, "voucher": 1}
PLAN = SuitePlan(race_per_category=SIZES, qualifying_per_category=SIZES, race_time=time(16),
                 first_day=FIRST_DAY)


@pytest.fixture(scope="module")
def generator(small_world: SampleWorld) -> Iterator[ProblemGenerator]:
    with ProblemGenerator.open(small_world.catalog_dir) as opened:
        yield opened


def block_hashes(salt: str = "") -> dict[datetime, RaceSeed]:
    """Stand-in block hashes for the slots of the first month (a chain's answer once the slot has passed)."""
    slots = [datetime.combine(FIRST_DAY + timedelta(days=n), time(16), UTC) for n in range(31)]
    return {slot: RaceSeed(block=1000 + n, hash=hashlib.sha256(f"{salt}{slot}".encode()).hexdigest())
            for n, slot in enumerate(slots)}


class CountingSource:
    """The real generator, counting its calls (a cache hit must not generate)."""

    def __init__(self, generator: ProblemGenerator) -> None:
        self.generator = generator
        self.key = generator.key
        self.calls = 0

    def generate(self, seed: str, per_category: Mapping[Category, int], *,
                 exclude_products: AbstractSet[str] = frozenset()) -> list[Problem]:
        self.calls += 1
        return self.generator.generate(seed, per_category, exclude_products=exclude_products)


def public_suites(generator: ProblemGenerator | CountingSource, database: Path, *,
                  seeds: dict[datetime, RaceSeed], final_until: date | None = None,
                  plan: SuitePlan = PLAN) -> PublicSuites:
    """Suites over ``database``'s cache; slots after ``final_until`` have no final block yet."""
    engine = create_engine(f"sqlite:///{database}")
    Base.metadata.create_all(engine)

    def seed_at(slot: datetime) -> RaceSeed | None:
        return None if final_until is not None and slot.date() > final_until else seeds[slot]

    return PublicSuites(FixedSource(generator), plan=plan, seed_at=seed_at, cache=SuiteCache(engine))


def ids(problems: tuple[Problem, ...]) -> list[str]:
    return [p.id for p in problems]


def test_race_suites_depend_on_the_seeds_catalog_and_plan_only(generator: ProblemGenerator,
                                                                tmp_path: Path) -> None:
    seeds = block_hashes()
    mine = public_suites(generator, tmp_path / "a.sqlite3", seeds=seeds)
    theirs = public_suites(generator, tmp_path / "b.sqlite3", seeds=seeds)
    # One validator drew every day, the other starts at day 5 with an empty cache: the same suite.
    for n in range(5):
        assert mine.race_suite(FIRST_DAY + timedelta(days=n)) is not None
    day = FIRST_DAY + timedelta(days=4)
    drawn, again = mine.race_suite(day), theirs.race_suite(day)
    assert drawn is not None and again is not None and drawn == again
    assert drawn.seed == seeds[datetime.combine(day, time(16), UTC)]
    assert [p.category for p in drawn.problems] == ["product", "product", "shop", "voucher"]
    other_chain = public_suites(generator, tmp_path / "c.sqlite3", seeds=block_hashes("fork"))
    other = other_chain.race_suite(day)
    assert other is not None and ids(other.problems) != ids(drawn.problems)
    bigger = public_suites(generator, tmp_path / "d.sqlite3", seeds=seeds,
                           plan=PLAN.model_copy(update={"burn_days": 3}))
    # another configuration, other suites and another cache key
    assert bigger.plan.digest(generator.key) != mine.plan.digest(generator.key)


def test_a_race_suite_burns_nothing_public_and_its_own_targets_for_later_races(
        generator: ProblemGenerator, tmp_path: Path) -> None:
    suites = public_suites(generator, tmp_path / "a.sqlite3", seeds=block_hashes())
    burnt: set[str] = set()
    for n in range(14):
        day = FIRST_DAY + timedelta(days=n)
        qualifying = targets_of(suites.practice_suite(day))
        drawn = suites.race_suite(day)
        assert drawn is not None and len(drawn.problems) == sum(SIZES.values())
        targets = targets_of(drawn.problems)
        assert not targets & burnt and not targets & qualifying
        burnt |= targets | qualifying
    assert suites.known_targets() == burnt
    # The practice suite is public and the same for a whole ISO week.
    assert suites.practice_suite(FIRST_DAY) == suites.practice_suite(FIRST_DAY + timedelta(days=6))
    assert suites.practice_suite(FIRST_DAY) != suites.practice_suite(FIRST_DAY + timedelta(days=7))
    assert practice_week(FIRST_DAY) == "2026-W47"


def test_qualifying_problems_depend_on_the_block_after_the_commitment_the_hotkey_and_the_generator(
        generator: ProblemGenerator, tmp_path: Path) -> None:
    after = RaceSeed(block=1201, hash=hashlib.sha256(b"block 1201").hexdigest())
    mine = public_suites(generator, tmp_path / "a.sqlite3", seeds=block_hashes())
    problems = mine.qualifying_suite("alice", after, FIRST_DAY)
    assert [p.category for p in problems] == ["product", "product", "shop", "voucher"]
    # A validator that joins late, with an empty cache, generates the same problems from chain data alone.
    late = public_suites(generator, tmp_path / "b.sqlite3", seeds=block_hashes())
    assert late.qualifying_suite("alice", after, FIRST_DAY) == problems
    # Another hotkey committing in the same block, or another block, gets other problems.
    assert ids(mine.qualifying_suite("bob", after, FIRST_DAY)) != ids(problems)
    other = RaceSeed(block=1202, hash=hashlib.sha256(b"block 1202").hexdigest())
    assert ids(mine.qualifying_suite("alice", other, FIRST_DAY)) != ids(problems)
    # No target of the practice suites a table could carry (this week's and last week's); they are known
    # targets for the gate from now on.
    carried = targets_of([*mine.practice_suite(FIRST_DAY), *mine.practice_suite(FIRST_DAY - timedelta(7))])
    assert not targets_of(problems) & carried
    assert targets_of(problems) <= mine.known_targets()
    assert qualifying_seed("alice", after.hash, generator.key) != qualifying_seed("alice", after.hash, "v2")


def test_no_race_suite_before_its_seed_or_the_first_day(generator: ProblemGenerator, tmp_path: Path) -> None:
    suites = public_suites(generator, tmp_path / "a.sqlite3", seeds=block_hashes(),
                           final_until=FIRST_DAY + timedelta(days=1))
    assert suites.race_suite(FIRST_DAY + timedelta(days=1)) is not None
    assert suites.race_suite(FIRST_DAY + timedelta(days=2)) is None  # no final block at the slot yet
    with pytest.raises(ValueError, match="before the arena's first race day"):
        suites.race_suite(FIRST_DAY - timedelta(days=1))


def test_a_restart_reads_generated_suites_from_the_cache(generator: ProblemGenerator, tmp_path: Path) -> None:
    seeds = block_hashes()
    counting = CountingSource(generator)
    first = public_suites(counting, tmp_path / "a.sqlite3", seeds=seeds)
    day = FIRST_DAY + timedelta(days=3)
    drawn = first.race_suite(day)
    made = counting.calls
    assert made == 4 + 1  # four race days and the week's qualifying suite
    restarted = public_suites(counting, tmp_path / "a.sqlite3", seeds=seeds)
    assert restarted.race_suite(day) == drawn and counting.calls == made


def test_held_out_suites_avoid_burnt_products_and_report_compromise(generator: ProblemGenerator,
                                                                     tmp_path: Path) -> None:
    suites = public_suites(generator, tmp_path / "a.sqlite3", seeds=block_hashes())
    for n in range(3):
        suites.race_suite(FIRST_DAY + timedelta(days=n))
    burnt = suites.known_targets()
    sizes = dict.fromkeys(CATEGORIES, 2)
    held = generate_held_out(generator, name="study", version=1, private_seed="only-mine", per_category=sizes,
                             burnt=burnt, source_key=generator.key, at=AT)
    assert len(held.problems) == 6 and not targets_of(held.problems) & burnt
    assert set(held.leak_clusters) == {p.id for p in held.problems}
    assert held.seed_digest == hashlib.sha256(b"only-mine").hexdigest()  # the seed itself is never stored
    again = generate_held_out(generator, name="study", version=1, private_seed="only-mine",
                              per_category=sizes, burnt=burnt, source_key=generator.key, at=AT)
    assert again == held
    assert generate_held_out(generator, name="study", version=1, private_seed="someone-elses",
                             per_category=sizes, burnt=burnt, source_key=generator.key, at=AT) != held

    path = held.save(tmp_path / "held-out")
    assert HeldOutSuite.load(path) == held and path.name == "study-v1.jsonl"
    assert load_problems(path) == list(held.problems)  # plain ShoppingBench JSONL for the worker
    assert latest_held_out(tmp_path / "held-out", "study") == path
    held.model_copy(update={"version": 2}).save(tmp_path / "held-out")
    assert latest_held_out(tmp_path / "held-out", "study") == tmp_path / "held-out" / "study-v2.jsonl"
    assert latest_held_out(tmp_path / "held-out", "other") is None

    public = [*suites.practice_suite(FIRST_DAY)]
    assert compromised(held, public) == []
    victim = held.problems[0]
    leaked = Problem(category="product", query="a request that shares nothing but the answer",
                     targets=[victim.targets[0]])
    assert compromised(held, [*public, leaked]) == [victim.id]


def test_a_simulated_year_of_draws_never_repeats_a_burnt_cluster(generator: ProblemGenerator) -> None:
    """The validator's own draws for 365 days (qualifying each week, a race each day, a held-out version
    each month) over the 3,000-product world: never an empty draw, never a burnt cluster raced again."""
    report = simulate_year(FixedSource(generator), days=365, per_category=1, held_out_per_category=1,
                           progress=False)
    assert report.days_simulated == 365 and report.race_problems == 365 * 3
    assert report.empty_draws == 0 and report.short_draws == 0
    assert report.burnt_cluster_repeats == 0
    assert report.held_out_versions == 13


def test_validator_held_out_makes_versions_away_from_public_suites_and_checks_them(
        small_world: SampleWorld, tmp_path: Path) -> None:
    home = tmp_path / "home"
    common = ["held-out", "--home", str(home), "--catalog", str(small_world.catalog_dir)]
    made = CliRunner().invoke(validator_cli.app, [*common, "--per-category", "2"])
    assert made.exit_code == 0, made.output
    first = home / "held-out" / "study-v1.jsonl"
    held = HeldOutSuite.load(first)
    assert len(held.problems) == 6 and str(first) in made.output
    seed = home / "held-out" / ".private-seed"
    assert seed.stat().st_mode & 0o777 == 0o600 and held.seed_digest == hashlib.sha256(
        seed.read_text().strip().encode()).hexdigest()
    assert CliRunner().invoke(validator_cli.app, [*common, "--check"]).exit_code == 0

    # A public problem (as the validator records every suite it makes public) catches one held-out problem.
    victim = held.problems[0]
    leaked = Problem(category="product", query="anything at all", targets=[victim.targets[0]])
    ledger = SqlExposureLedger.open(f"sqlite:///{home / 'arena.sqlite3'}")
    ledger.expose([leaked], "race", "race-2026-11-20", AT)
    assert ledger.splits().of[leaked.id].split == "held_out", "it fell into a held-out cluster: held out"
    ledger.engine.dispose()
    checked = CliRunner().invoke(validator_cli.app, [*common, "--check"])
    assert checked.exit_code == 3 and victim.id in checked.output
    again = CliRunner().invoke(validator_cli.app, [*common, "--per-category", "2"])
    assert again.exit_code == 0, again.output
    second = HeldOutSuite.load(home / "held-out" / "study-v2.jsonl")
    assert second.version == 2 and victim.targets[0].product_id not in targets_of(second.problems)
