"""The network demo's table cheater: every public problem's answers in its file, masked with a hash of the
query so no scan of the file can see them (it passes the gate on purpose). On public problems it scores;
on a race suite generated from a seed after its upload it has nothing to look up and scores 0. That is
the defence static analysis cannot be: the answers do not exist before the race."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoppingbench.doubles.cheaters import table_cheater_source
from shoppingbench.generator import ProblemGenerator
from shoppingbench.problems.loaders import load_problems
from shoppingbench.problems.models import CATEGORIES, Problem
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.submission_check import check_agent
from tests.sandbox_support import run_agent

PER_CATEGORY = 3
RACE_SEED = "0x5eed-of-a-block-finalized-after-the-upload"


@pytest.fixture(scope="module")
def bank(small_world: SampleWorld) -> list[Problem]:
    """Every public problem of the world (the demo's cheater also adds the week's practice suite)."""
    return [p for c in CATEGORIES for p in load_problems(small_world.problems_dir / f"{c}.jsonl", c)]


@pytest.fixture(scope="module")
def cheater(bank: list[Problem], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("table") / "table_cheater.py"
    path.write_bytes(table_cheater_source(bank))
    return path


@pytest.fixture(scope="module")
def race(small_world: SampleWorld, cheater: Path, small_engine: BM25SearchEngine) -> list[AttemptRecord]:
    with ProblemGenerator.open(small_world.catalog_dir) as generator:
        suite = generator.generate(RACE_SEED, dict.fromkeys(CATEGORIES, PER_CATEGORY))
    assert len(suite) == PER_CATEGORY * len(CATEGORIES)
    return run_agent(cheater, suite, small_engine, workers=2)


def test_the_table_is_real_it_passes_the_gate_and_answers_public_problems(
        bank: list[Problem], cheater: Path, small_engine: BM25SearchEngine) -> None:
    answers = {t.product_id for p in bank for t in p.targets}
    assert check_agent(cheater.read_bytes(), known_product_ids=answers).ok
    public = [next(p for p in bank if p.category == c) for c in CATEGORIES]
    assert all(r.score.success for r in run_agent(cheater, public, small_engine))


@pytest.mark.parametrize("index", range(PER_CATEGORY * len(CATEGORIES)))
def test_a_race_problem_generated_after_the_upload_scores_nothing(race: list[AttemptRecord],
                                                                  index: int) -> None:
    record = race[index]
    assert not record.score.success and record.score.rule == 0 and record.score.gt == 0, record.score
