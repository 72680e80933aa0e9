"""Qualifying table: a hostile miner carries the masked answers of every problem it can compute before its
upload (the world's public bank and every suite the validator generates from a public seed), views each
answer id first so the proxy log shows it returned, and uploads through the real gate's verdict store. The
validator generates its qualifying problems from the first final block after the commitment, so the table
holds none of them: it qualifies no more (before, it qualified on the public weekly suite at 1.0)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.race.events import QualifyingFinished
from arena.validator.demo import table_cheater_source
from arena.validator.runs import RunAgent
from shoppingbench.generator import ProblemGenerator
from shoppingbench.sample_world import SampleWorld
from shoppingbench.submission_check import check_agent
from tests.adversarial.arena_support import after_a_block, computable_in_advance, one_validator
from tests.test_validator import serving_runner


@pytest.fixture(scope="module")
def runner(small_world: SampleWorld) -> Iterator[RunAgent]:
    with serving_runner(small_world.catalog_dir) as run_agent:
        yield run_agent


@pytest.fixture(scope="module")
def generator(small_world: SampleWorld) -> Iterator[ProblemGenerator]:
    with ProblemGenerator.open(small_world.catalog_dir) as opened:
        yield opened


def test_a_table_of_every_problem_computable_in_advance_fails_qualifying(
        tmp_path: Path, small_world: SampleWorld, generator: ProblemGenerator, runner: RunAgent) -> None:
    with one_validator(tmp_path, small_world, generator, runner, ("tabler",)) as arena:
        carried = computable_in_advance(small_world, arena.validator)
        source = table_cheater_source(carried)
        # The table is invisible to the gate: no answer id of any suite is written in the file.
        assert check_agent(source, known_product_ids=arena.validator.known_answers()).ok
        arena.upload("tabler", source)
        after_a_block(arena.clock)
        report = arena.validator.tick()
        assert report.qualifying_runs == 1
        (finished,) = [e for e in arena.validator.race.store.load() if isinstance(e, QualifyingFinished)]
        assert finished.score == 0.0 and not finished.qualified
        assert report.qualified == []
        (submission,) = arena.validator.race.state.submissions.values()
        assert submission.status == "not_qualified"
