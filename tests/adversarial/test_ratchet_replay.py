"""Ratchet replay: the attack log of issue 22. A table cheater qualified at 1.000 on public problems and
won the crown; the threshold used to be 0.95 x the winner's own qualifying score, which locked out every
honest challenger. Replayed into a real validator's race log (the table's file stored as the gate stores
it), an honest ReAct agent then uploads: the winner is re-run on the challenger's own qualifying problems,
where its table holds nothing, and the challenger still qualifies."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path

from arena.race import ManualClock, MemoryEventStore, RaceEngine, RaceRules
from arena.race.events import QualifyingFinished
from arena.validator.runs import RunAgent
from shoppingbench.doubles.cheaters import table_cheater_source
from shoppingbench.generator import ProblemGenerator
from shoppingbench.sample_world import SampleWorld
from tests.adversarial.arena_support import (
    START,
    OneValidator,
    computable_in_advance,
    one_validator,
)
from tests.arena.validator.test_validator import REACT


def replay_the_attack(arena: OneValidator, small_world: SampleWorld) -> str:
    """The table cheater's reign, as the attack log recorded it, in the validator's own race log: accepted
    with its file stored, qualified at 1.000, alone in the race, crowned. Returns its submission id."""
    validator = arena.validator
    source = table_cheater_source(computable_in_advance(small_world, validator))
    code_hash = hashlib.sha256(source).hexdigest()
    validator.files.put(code_hash, source)
    accepted = validator.race.submit(arena.hotkey("tabler"), code_hash, commitment_block=arena.chain.block())
    assert accepted.submission_id is not None
    validator.race.record_qualifying(accepted.submission_id, 1.0)
    arena.clock.advance(timedelta(hours=7))  # 16:00, the race slot
    validator.race.start_race("0x" + "ab" * 32, ["p1", "p2"])
    validator.race.record_race_result(accepted.submission_id, 0.556)
    return accepted.submission_id


def test_an_honest_challenger_of_a_table_winner_still_qualifies(
        tmp_path: Path, small_world: SampleWorld, generator: ProblemGenerator, runner: RunAgent) -> None:
    with one_validator(tmp_path, small_world, generator, runner, ("tabler", "react")) as arena:
        table = replay_the_attack(arena, small_world)
        reign = arena.validator.race.state.reign
        assert reign is not None and reign.submission_id == table
        arena.clock.advance(timedelta(hours=17))  # Friday 09:00: the challenger uploads
        arena.upload("react", REACT)
        arena.past_upload_window()
        report = arena.validator.tick()
        assert report.qualifying_runs == 1
        state = arena.validator.race.state
        (outcome,) = [e for e in arena.validator.race.store.load()
                      if isinstance(e, QualifyingFinished) and e.submission_id != table]
        assert state.submissions[outcome.submission_id].hotkey == arena.hotkey("react")
        assert outcome.score > 0 and outcome.qualified, outcome
        assert outcome.threshold < 0.95  # the table's 1.000 on public problems sets no bar


def test_the_attack_logs_figures_leave_every_honest_challenger_qualifying() -> None:
    """The figures of the attack log through the race engine alone: the table won at 0.556 after
    qualifying at 1.000; ReAct (0.778 on its qualifying run) and a weaker honest agent (0.3) challenge.
    On their own problems the table scores 0, so the bar is the floor, not 0.95."""
    clock = ManualClock(START)
    engine = RaceEngine(MemoryEventStore(), RaceRules(), clock)
    table = engine.submit("tabler", "table-code", commitment_block=1).submission_id
    assert table is not None and engine.record_qualifying(table, 1.0).qualified
    clock.advance(timedelta(hours=7))
    engine.start_race("0x" + "ab" * 32, ["p1", "p2"])
    engine.record_race_result(table, 0.556)
    for hotkey, score in (("react", 0.778), ("honest-but-weak", 0.3)):
        challenger = engine.submit(hotkey, f"{hotkey}-code", commitment_block=9).submission_id
        assert challenger is not None
        outcome = engine.record_qualifying(challenger, score, winner_score=0.0)
        assert outcome.qualified and outcome.threshold == RaceRules().qualify_min_score
