"""The generator schedule (SPEC 5): which generator makes each day's suites, checked at start-up; a
validator that joins late across a generator upgrade arriving at the same suites and burnt clusters as one
that ran through it; and validators naming another upgrade day told they disagree. Over the real generator
and the small sample world's catalog, a local chain and real SQLite stores."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from arena.chain import LocalChain
from arena.race import ManualClock
from arena.settings import ArenaSettings
from arena.suites import (
    GeneratorSchedule,
    GeneratorSpec,
    PublicSuites,
    ScheduleEntry,
    ScheduleError,
    SuitePlan,
    cluster_problems,
)
from arena.suites.generators import LEXICON_ARCHIVE, LEXICON_FILE, check_schedule, open_scheduled_sources
from arena.suites.schedule import require_known_versions
from arena.validator import Validator
from arena.validator.assemble import open_validator
from neurons import validator as validator_cli
from shoppingbench.generator import DEFAULT_VERSION, KNOWN_VERSIONS, CatalogDir, ProblemGenerator
from shoppingbench.generator.writer.lexicon import SAMPLE_LEXICON_FILE, canonical_bytes, load_lexicon
from shoppingbench.problems.models import Category, Problem
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.sandbox.runner import AgentFile
from tests.arena.suites.support import Validators, suite_bytes
from tests.chain_support import make_wallet, register
from trajectories.store import TrajectoryStore

UPGRADE = date(2026, 11, 19)  # day D, a Thursday: the practice week of D-2..D+1 starts on Monday the 16th
FIRST_DAY = UPGRADE - timedelta(days=2)
SIZES: dict[Category, int] = {"product": 2, "shop": 1, "voucher": 1}
PLAN = SuitePlan(race_per_category=SIZES, qualifying_per_category=SIZES, race_time=time(16),
                 first_day=FIRST_DAY)
DAYS = [FIRST_DAY + timedelta(days=n) for n in range(4)]  # D-2, D-1, D, D+1

SPEC_ONE: dict[str, Any] = {"version": KNOWN_VERSIONS[0]}
# The upgrade: a newer version when this code has one, else the same version with other constraints per item.
SPEC_TWO: dict[str, Any] = ({"version": KNOWN_VERSIONS[-1]} if len(KNOWN_VERSIONS) > 1 else
                            {"version": DEFAULT_VERSION,
                             "config": {"item_constraints": [1, 2], "product_constraints": [2, 3],
                                        "voucher_items": [2, 3]}})


def schedule(upgrade: date) -> GeneratorSchedule:
    return GeneratorSchedule(entries=(ScheduleEntry(from_day=FIRST_DAY, **SPEC_ONE),
                                      ScheduleEntry(from_day=upgrade, **SPEC_TWO)))


@pytest.fixture
def suites_of(small_world: SampleWorld, tmp_path: Path) -> Iterator[Any]:
    """Opens a validator's public suites: its schedule's generators over the catalog, its own empty cache."""
    with ExitStack() as stack:
        validators = Validators(stack, tmp_path, PLAN)
        yield lambda name, upgrade: validators.open(
            name, open_scheduled_sources(small_world.catalog_dir, schedule(upgrade)))


def race_bytes(suites: PublicSuites, day: date) -> bytes:
    drawn = suites.race_suite(day)
    assert drawn is not None
    return suite_bytes(drawn.problems)


def public_problems(suites: PublicSuites) -> list[Problem]:
    drawn = [suites.race_suite(day) for day in DAYS]
    return [*(p for suite in drawn if suite is not None for p in suite.problems),
            *suites.practice_suite(FIRST_DAY)]


# (a) the pure schedule


def test_each_day_gets_the_spec_in_force_from_its_entry_and_the_first_entry_covers_the_past() -> None:
    plan = schedule(UPGRADE)
    one, two = GeneratorSpec(**SPEC_ONE), GeneratorSpec(**SPEC_TWO)
    assert plan.spec_for(FIRST_DAY - timedelta(days=400)) == one  # before the first entry's own day
    assert plan.spec_for(UPGRADE - timedelta(days=1)) == one
    assert plan.spec_for(UPGRADE) == two and plan.spec_for(UPGRADE + timedelta(days=900)) == two
    assert plan.specs() == (one, two)
    # The practice suite of a week keeps its Monday's generator all week, through a mid-week upgrade.
    assert plan.spec_for_week("2026-W47") == one and plan.spec_for_week("2026-W48") == two
    assert GeneratorSchedule.single(one).spec_for(date(1999, 1, 1)) == one


@pytest.mark.parametrize("second_day", [FIRST_DAY, FIRST_DAY - timedelta(days=1)])
def test_entries_must_be_strictly_ordered_by_day(second_day: date) -> None:
    with pytest.raises(ValidationError, match=f"strictly ordered by from_day: {second_day}"):
        schedule(second_day)


def test_a_version_the_code_does_not_know_is_named_with_the_ones_it_knows() -> None:
    plan = GeneratorSchedule(entries=(ScheduleEntry(from_day=FIRST_DAY, **SPEC_ONE),
                                      ScheduleEntry(from_day=UPGRADE, version="sbgen-99")))
    with pytest.raises(ScheduleError,
                       match=f"from {UPGRADE} names version 'sbgen-99'.*knows {', '.join(KNOWN_VERSIONS)}"):
        require_known_versions(plan, KNOWN_VERSIONS)
    require_known_versions(schedule(UPGRADE), KNOWN_VERSIONS)


def test_the_generator_opens_the_versions_it_knows_and_names_them_for_any_other(
        small_world: SampleWorld) -> None:
    with ProblemGenerator.open(small_world.catalog_dir, version=DEFAULT_VERSION) as generator:
        assert generator.key.startswith(f"{DEFAULT_VERSION}/")
    with pytest.raises(ValueError, match=f"version 'sbgen-99'; known: {', '.join(KNOWN_VERSIONS)}"):
        ProblemGenerator.open(small_world.catalog_dir, version="sbgen-99")


def test_configuration_overrides_the_generator_refuses_stop_the_start(tmp_path: Path) -> None:
    plan = GeneratorSchedule(entries=(ScheduleEntry(from_day=UPGRADE, version=DEFAULT_VERSION,
                                                    config={"shop_items": [1, 2], "shop_size": 3}),))
    with pytest.raises(ScheduleError, match=f"entry from {UPGRADE} .*refuses: shop_size: Extra inputs"):
        check_schedule(CatalogDir(tmp_path), plan)
    plan = GeneratorSchedule(entries=(ScheduleEntry(from_day=UPGRADE, version=DEFAULT_VERSION,
                                                    config={"shop_items": [1, 2]}),))
    with pytest.raises(ScheduleError,
                       match="refuses: config: Value error, a problem of one shop needs at least 2"):
        check_schedule(CatalogDir(tmp_path), plan)


def test_a_pinned_lexicon_is_found_by_its_sha256_else_the_start_stops_naming_what_differs(
        tmp_path: Path) -> None:
    shipped = load_lexicon(SAMPLE_LEXICON_FILE)
    current = canonical_bytes(shipped)
    older = canonical_bytes(shipped.model_copy(update={"catalog_products": shipped.catalog_products + 1}))
    (tmp_path / LEXICON_FILE).write_bytes(current)
    pin_current, pin_older = (hashlib.sha256(text).hexdigest() for text in (current, older))
    plan = GeneratorSchedule(entries=(
        ScheduleEntry(from_day=FIRST_DAY, version=DEFAULT_VERSION, lexicon_sha256=pin_older),
        ScheduleEntry(from_day=UPGRADE, version=DEFAULT_VERSION, lexicon_sha256=pin_current)))
    archived = tmp_path / LEXICON_ARCHIVE / f"{pin_older}.json"
    with pytest.raises(ScheduleError, match=f"from {FIRST_DAY} .*pins lexicon sha256 {pin_older}, but "
                                            f".*{LEXICON_FILE} has sha256 {pin_current}.*to {archived}"):
        check_schedule(CatalogDir(tmp_path), plan)
    archived.parent.mkdir()
    archived.write_bytes(older + b" ")  # the archive holds other bytes under the pinned name
    altered = hashlib.sha256(older + b" ").hexdigest()
    with pytest.raises(ScheduleError, match=f"{archived} has sha256 {altered}"):
        check_schedule(CatalogDir(tmp_path), plan)
    archived.write_bytes(older)
    assert set(check_schedule(CatalogDir(tmp_path), plan)) == {spec.label() for spec in plan.specs()}


def test_the_schedule_comes_from_the_environment_like_every_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = [{"from_day": str(FIRST_DAY), **SPEC_ONE}, {"from_day": str(UPGRADE), **SPEC_TWO}]
    monkeypatch.setenv("ARENA_GENERATOR_SCHEDULE", orjson.dumps(entries).decode())
    assert ArenaSettings().schedule() == schedule(UPGRADE)
    monkeypatch.setenv("ARENA_GENERATOR_SCHEDULE", orjson.dumps(entries[::-1]).decode())
    with pytest.raises(ValidationError, match="strictly ordered"):
        ArenaSettings()
    monkeypatch.delenv("ARENA_GENERATOR_SCHEDULE")
    assert ArenaSettings().schedule() == GeneratorSchedule.single(GeneratorSpec(version=DEFAULT_VERSION))


def test_validator_held_out_refuses_a_schedule_naming_an_unknown_version(small_world: SampleWorld,
                                                                         tmp_path: Path) -> None:
    entries = orjson.dumps([{"from_day": "2026-01-05", "version": "sbgen-99"}]).decode()
    result = CliRunner().invoke(validator_cli.app, [
        "held-out", "--home", str(tmp_path), "--catalog", str(small_world.catalog_dir),
        "--generator-schedule", entries])
    assert result.exit_code == validator_cli.EXIT_SCHEDULE
    assert "names version 'sbgen-99', which this code does not know" in result.output
    assert not (tmp_path / "held-out" / "study-v1.jsonl").exists()


# (b) a late-joining validator across a version change, (c) a validator with another upgrade day


def test_a_validator_joining_after_an_upgrade_replays_each_day_with_its_generator(suites_of: Any) -> None:
    """A races D-2 and D-1 with spec 1, D and D+1 with spec 2, a day at a time; B starts on D+1 with an
    empty store and the same schedule, and regenerates the whole history: every suite, and so every target
    burnt and every leak cluster, is byte for byte A's."""
    early = suites_of("a", UPGRADE)
    for day in DAYS:
        assert early.race_suite(day) is not None
    late = suites_of("b", UPGRADE)
    assert late.race_suite(DAYS[-1]) is not None
    for day in DAYS:
        assert race_bytes(late, day) == race_bytes(early, day)
        mine, theirs = early.race_suite(day), late.race_suite(day)
        assert mine is not None and theirs is not None and mine.generator == theirs.generator
    assert suite_bytes(late.practice_suite(FIRST_DAY)) == suite_bytes(early.practice_suite(FIRST_DAY))
    assert late.known_targets() == early.known_targets()
    clusters = [cluster_problems(public_problems(suites)).cluster_of for suites in (early, late)]
    assert clusters[0] == clusters[1]
    before, after = early.race_suite(UPGRADE - timedelta(days=1)), early.race_suite(UPGRADE)
    assert before is not None and after is not None and before.generator != after.generator


def test_a_validator_naming_another_upgrade_day_is_told_it_disagrees(suites_of: Any) -> None:
    """C names the upgrade from D+1: on D it generates with spec 1 where A used spec 2. The generator key
    recorded with its suite (and published with the race it starts) differs from A's, and so does the
    suite; the days before the upgrade still agree."""
    honest, other = suites_of("a", UPGRADE), suites_of("c", UPGRADE + timedelta(days=1))
    for day in DAYS[:2]:
        assert race_bytes(other, day) == race_bytes(honest, day)
    mine, theirs = honest.race_suite(UPGRADE), other.race_suite(UPGRADE)
    assert mine is not None and theirs is not None
    assert mine.generator != theirs.generator and theirs.generator.startswith(f"{KNOWN_VERSIONS[0]}/")
    assert suite_bytes(mine.problems) != suite_bytes(theirs.problems)
    assert [p.id for p in mine.problems] != [p.id for p in theirs.problems]  # the race ids they publish


def crashing_runner(agent: AgentFile, problems: Sequence[Problem], run_id: str) -> Iterator[AttemptRecord]:
    """Agents that never finish: the validator process dies in the middle of the race."""
    raise RuntimeError(f"killed during {run_id}")


def test_a_validator_restarted_with_another_upgrade_day_refuses_the_race_it_was_running(
        small_world: SampleWorld, tmp_path: Path) -> None:
    """A validator that races day D with spec 2, dies mid-race and comes back naming the upgrade from D+1
    would run D's race on other problems: it refuses, naming both generator keys; with the announced
    schedule restored it goes on with the race."""
    clock = ManualClock(datetime(2026, 11, 19, 9, tzinfo=UTC))  # day D, 09:00: the chain starts now
    chain = LocalChain(tmp_path / "chain.sqlite3", clock=clock, tempo=100, weights_rate_limit=50)
    wallets = {name: make_wallet(tmp_path / "wallets", name) for name in ("owner", "validator", "alice")}
    for name, wallet in wallets.items():
        register(chain, wallet, validator_permit=name == "validator")
    settings = ArenaSettings(home=tmp_path / "home", qualifying_suite_per_category=1,
                             race_suite_per_category=1)
    with ExitStack() as stack:
        def validator_naming(upgrade: date) -> Validator:
            sources = stack.enter_context(open_scheduled_sources(small_world.catalog_dir, schedule(upgrade)))
            store = TrajectoryStore.open(f"sqlite:///{tmp_path / 'home' / 'trajectories.sqlite3'}")
            stack.callback(store.close)
            validator = open_validator(settings=settings, chain=chain, wallet=wallets["validator"],
                                       clock=clock, sources=sources, run_agent=crashing_runner, store=store)
            stack.callback(validator.arena_db.dispose)
            return validator

        first = validator_naming(UPGRADE)
        first.tick()  # yesterday's slot, before the first race day, is skipped
        agent = b"print('an agent')\n"
        first.files.put(hashlib.sha256(agent).hexdigest(), agent)
        entered = first.race.submit(wallets["alice"].hotkey.ss58_address, hashlib.sha256(agent).hexdigest(),
                                    commitment_block=chain.block())
        assert entered.submission_id is not None
        first.race.record_qualifying(entered.submission_id, 0.5)
        clock.advance(timedelta(hours=7, minutes=5))
        with pytest.raises(RuntimeError, match="killed during race-"):
            first.tick()
        running, drawn = first.race.state.running, first.suites.race_suite(UPGRADE)
        assert running is not None and drawn is not None and running.generator == drawn.generator
        other = validator_naming(UPGRADE + timedelta(days=1))
        other_drawn = other.suites.race_suite(UPGRADE)
        assert other_drawn is not None and other_drawn.generator != running.generator
        with pytest.raises(RuntimeError, match=re.escape(
                f"race {running.race_id} was generated by {running.generator}, but this validator now "
                f"generates {UPGRADE}'s suite with {other_drawn.generator}")):
            other.tick()
        with pytest.raises(RuntimeError, match="killed during race-"):
            validator_naming(UPGRADE).tick()
