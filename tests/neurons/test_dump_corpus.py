"""`dump corpus`: several days of a validator's attempts as one dataset, split by its exposure ledger, so no
leak cluster is in train on one day and held out on another, across a restart that deleted the suite
cache; and an empty or reversed range is refused."""

from __future__ import annotations

import random
import shutil
from collections import defaultdict
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import create_engine
from typer.testing import CliRunner

from arena.storage import Base
from arena.suites import (
    FixedSource,
    PublicSuites,
    SqlExposureLedger,
    SuiteCache,
    SuitePlan,
    cluster_problems,
    generate_held_out,
    targets_of,
)
from neurons.dump import app
from shoppingbench.generator import ProblemGenerator
from shoppingbench.problems.models import Problem
from shoppingbench.sample_world import SampleWorld
from tests.arena.suites.support import seed_at
from trajectories.doubles.synthetic import make_attempt
from trajectories.dumps import SplitRule
from trajectories.store import ProblemEntry, TrajectoryStore

DAYS = (date(2026, 11, 16), date(2026, 11, 17), date(2026, 11, 18))
PLAN = SuitePlan(race_per_category={"product": 3, "shop": 2, "voucher": 2},
                 qualifying_per_category={"product": 1, "shop": 1, "voucher": 1}, race_time=time(16),
                 first_day=DAYS[0])
RULE = SplitRule(held_out_fraction=0.3)
"""The validator's rule for new public clusters (ARENA_DUMP_HELD_OUT_FRACTION)."""


class Validator:
    """What of a validator these tests need: its arena database (the ledger) and a suite cache in a folder
    of its own, both opened again by :meth:`restart`."""

    def __init__(self, home: Path, generator: ProblemGenerator) -> None:
        self.home, self.generator = home, generator
        self.arena_db = f"sqlite:///{home / 'arena.sqlite3'}"
        self.restart()

    def restart(self) -> None:
        cache = self.home / "suite-cache"
        cache.mkdir(parents=True, exist_ok=True)
        engine = create_engine(f"sqlite:///{cache / 'suites.sqlite3'}")
        Base.metadata.create_all(engine)
        self.suites = PublicSuites(FixedSource(self.generator), plan=PLAN, seed_at=seed_at,
                                   cache=SuiteCache(engine))
        self.ledger = SqlExposureLedger.open(self.arena_db, rule=RULE)


def _disguised(problem: Problem, day: date) -> Problem:
    """The same request reworded, with the same answer: the same problem in disguise."""
    return problem.model_copy(update={"id": f"copy-{day}-{problem.id}",
                                      "query": f"{problem.query} (asked again on {day})"})


def _record(store: TrajectoryStore, problems: list[Problem], run_id: str, day: date,
            rng: random.Random) -> dict[str, str]:
    """Attempts as a run stores them: each problem registered with its suite's own cluster ids (returned)."""
    clusters = cluster_problems(problems).cluster_of
    entries = [ProblemEntry.of(p, suite=run_id, leak_cluster=clusters[p.id]) for p in problems]
    store.register_problems(entries)
    start = datetime.combine(day, time(17), UTC).timestamp()
    store.write_attempts([make_attempt(rng, style, entry, run_id=f"{run_id}-{style}", agent_hash=style * 8,
                                       started_at=start + i)
                          for style in ("react", "sub_task") for i, entry in enumerate(entries)])
    return dict(clusters)


def _three_days(tmp_path: Path, generator: ProblemGenerator
                ) -> tuple[Validator, str, dict[str, Problem], dict[str, str]]:
    """Day 1 races; day 2 races, holds out a held-out suite and re-asks day 1's problems in disguise; then
    the validator restarts with its suite cache deleted; day 3 races and re-asks day 1's and the held-out
    suite's problems in disguise. Returns the validator, the store's URL, the disguised copies and the
    cluster ids the store holds."""
    rng = random.Random(7)
    validator = Validator(tmp_path / "home", generator)
    store_url = f"sqlite:///{tmp_path / 'trajectories.sqlite3'}"
    copies: dict[str, Problem] = {}
    stored: dict[str, str] = {}
    first_race: tuple[Problem, ...] = ()
    held_out: tuple[Problem, ...] = ()
    with TrajectoryStore.open(store_url) as store:
        for day in DAYS:
            if day == DAYS[2]:
                shutil.rmtree(validator.home / "suite-cache")
                validator.restart()
            at = datetime.combine(day, time(16), UTC)
            race = validator.suites.race_suite(day)
            assert race is not None
            validator.ledger.expose(race.problems, "race", f"race-{day}", at)
            stored.update(_record(store, list(race.problems), f"race-{day}", day, rng))
            first_race = first_race or race.problems
            if day == DAYS[1]:
                suite = generate_held_out(FixedSource(generator).source, name="study", version=1,
                                          private_seed="private", per_category={"product": 2},
                                          burnt=targets_of(validator.ledger.public_problems()),
                                          source_key=generator.key, at=at)
                validator.ledger.hold_out(suite.problems, "held-out/study/1", at)
                held_out = suite.problems
            if day != DAYS[0]:
                asked = [_disguised(p, day) for p in (*first_race, *held_out)]
                copies.update({p.id: p for p in asked})
                validator.ledger.expose(asked, "qualifying", f"sub-{day}", at)
                stored.update(_record(store, asked, f"qualifying-{day}", day, rng))
    return validator, store_url, copies, stored


@pytest.fixture(scope="module")
def generator(small_world: SampleWorld) -> Any:
    with ProblemGenerator.open(small_world.catalog_dir) as opened:
        yield opened


def test_a_corpus_of_three_days_never_puts_a_cluster_on_both_sides(
        tmp_path: Path, generator: ProblemGenerator, monkeypatch: pytest.MonkeyPatch) -> None:
    from datasets import load_dataset

    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "home"))  # its arena.sqlite3: the ledger by default
    validator, store_url, copies, stored = _three_days(tmp_path, generator)
    out = tmp_path / "corpus"
    result = CliRunner().invoke(app, ["corpus", "--from", str(DAYS[0]), "--to", str(DAYS[2]), "--out",
                                      str(out), "--store-url", store_url, "--no-progress", "--no-jsonl"])
    assert result.exit_code == 0, result.output
    assert f"{DAYS[0]}..{DAYS[2]}: " in result.output
    assert "by the exposure ledger of sqlite:///" in result.output

    corpus = load_dataset(str(out), cache_dir=str(tmp_path / "hf"))
    rows = {split: corpus[split].to_list() for split in corpus}
    assert {"train", "held_out"} <= set(rows)
    sides: dict[str, set[str]] = defaultdict(set)
    for split, found in rows.items():
        for row in found:
            sides[row["leak_cluster"]].add(split)
    assert all(len(splits) == 1 for splits in sides.values()), "a cluster on both sides"
    placed = validator.ledger.splits().of
    for split, found in rows.items():
        assert {row["split"] for row in found} == {split}
        assert all((row["leak_cluster"], split) == (placed[row["problem_id"]].cluster,
                                                     placed[row["problem_id"]].split) for row in found)
    # The copies asked after their originals are on their originals' side, on every day; the held-out
    # suite's are held out though their own clusters' hash never decided it.
    by_id = {row["problem_id"]: row for found in rows.values() for row in found}
    for copy_id, copy in copies.items():
        original = copy_id.split("-", 4)[4]
        if original in by_id:
            assert by_id[copy_id]["split"] == by_id[original]["split"]
            assert by_id[copy_id]["leak_cluster"] == by_id[original]["leak_cluster"]
        else:
            assert by_id[copy_id]["split"] == "held_out", copy.query
    # Split by the hash of the ids their runs stored, some copies would have crossed to the other side.
    assert any(RULE.split_of(stored[copy_id]) != by_id[copy_id]["split"] for copy_id in copies)
    days = {datetime.fromtimestamp(row["started_at"], UTC).date() for found in rows.values() for row in found}
    assert days == set(DAYS)
    kto = load_dataset(str(out), "kto", cache_dir=str(tmp_path / "hf-kto"))
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    assert {split: kto[split].num_rows for split in kto} == manifest["kto_splits"]
    assert manifest["split_rule"] == {"source": "exposure_ledger"}

    # Each day's own dump says the same of every attempt as the corpus.
    for day in DAYS:
        day_out = tmp_path / f"day-{day}"
        result = CliRunner().invoke(app, ["export", "--day", str(day), "--out", str(day_out), "--store-url",
                                          store_url, "--arena-db-url", validator.arena_db, "--no-progress"])
        assert result.exit_code == 0, result.output
        daily = load_dataset(str(day_out), cache_dir=str(tmp_path / f"hf-{day}"))
        assert all(by_id[row["problem_id"]]["split"] == split for split in daily for row in daily[split])


def test_an_empty_or_reversed_range_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "home"))
    store_url = f"sqlite:///{tmp_path / 'trajectories.sqlite3'}"
    TrajectoryStore.open(store_url).close()
    out = tmp_path / "corpus"
    common = ["--out", str(out), "--store-url", store_url, "--no-progress"]
    empty = CliRunner().invoke(app, ["corpus", "--from", "2026-12-01", "--to", "2026-12-03", *common])
    assert empty.exit_code == 1
    assert "no attempt started in 2026-12-01..2026-12-03" in empty.output and "dump days" in empty.output
    assert not out.exists()
    reversed_range = CliRunner().invoke(app, ["corpus", "--from", "2026-12-03", "--to", "2026-12-01",
                                              *common])
    assert reversed_range.exit_code == 2
    assert "the last day (2026-12-01) comes before the" in " ".join(reversed_range.output.split())
    missing = CliRunner().invoke(app, ["corpus", "--from", "2026-12-01", "--to", "2026-12-01", *common,
                                       "--arena-db-url", f"sqlite:///{tmp_path / 'nowhere.sqlite3'}"])
    assert missing.exit_code == 2 and "no arena database" in missing.output
