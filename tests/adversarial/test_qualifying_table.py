"""Qualifying table: a hostile miner carries the masked answers of every problem it can compute before its
upload (the world's public bank and every suite the validator generates from a public seed), views each
answer id first so the proxy log shows it returned, and uploads through the real gate's verdict store. The
validator generates its qualifying problems from the first final block after the commitment, so the table
holds none of them: it qualifies no more (before, it qualified on the public weekly suite at 1.0)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from arena.race.events import QualifyingFinished
from arena.validator.runs import RunAgent
from shoppingbench.doubles.cheaters import table_cheater_source
from shoppingbench.generator import ProblemGenerator
from shoppingbench.sample_world import SampleWorld
from shoppingbench.submission_check import check_agent
from tests.adversarial.arena_support import computable_in_advance, one_validator
from tests.arena.validator.test_validator import REACT


def test_a_table_of_every_problem_computable_in_advance_fails_qualifying(
        tmp_path: Path, small_world: SampleWorld, generator: ProblemGenerator, runner: RunAgent) -> None:
    with one_validator(tmp_path, small_world, generator, runner, ("tabler",)) as arena:
        carried = computable_in_advance(small_world, arena.validator)
        source = table_cheater_source(carried)
        # The table is invisible to the gate: no answer id of any suite is written in the file.
        assert check_agent(source, known_product_ids=arena.validator.known_answers()).ok
        arena.upload("tabler", source)
        arena.past_upload_window()
        report = arena.validator.tick()
        assert report.qualifying_runs == 1
        (finished,) = [e for e in arena.validator.race.store.load() if isinstance(e, QualifyingFinished)]
        assert finished.score == 0.0 and not finished.qualified
        assert report.qualified == []
        (submission,) = arena.validator.race.state.submissions.values()
        assert submission.status == "not_qualified"


def test_a_table_of_the_qualifying_problems_published_so_far_fails_qualifying(
        tmp_path: Path, small_world: SampleWorld, generator: ProblemGenerator, runner: RunAgent) -> None:
    """An honest agent qualifies first and its problems are published; the tabler adds them to its table
    (with everything else computable in advance): its own problems are none of them."""
    with one_validator(tmp_path, small_world, generator, runner, ("honest", "tabler")) as arena:
        arena.upload("honest", REACT)
        arena.past_upload_window()
        assert arena.validator.tick().qualifying_runs == 1
        arena.clock.advance(timedelta(minutes=5))
        published = computable_in_advance(small_world, arena.validator)  # the honest run's problems included
        (honest,) = arena.validator.race.state.submissions.values()
        store = arena.validator.runs.store
        ran = {attempt.record.problem_id for attempt in store.load(store.attempt_ids())}
        assert ran and ran <= {p.id for p in published}  # the table holds every problem run so far
        arena.upload("tabler", table_cheater_source(published))
        arena.past_upload_window()
        assert arena.validator.tick().qualified == []
        (tabler,) = [e for e in arena.validator.race.store.load()
                     if isinstance(e, QualifyingFinished) and e.submission_id != honest.submission_id]
        assert tabler.score == 0.0 and not tabler.qualified
