"""Same-block tie grinding (issue 22, item 2): two different agents reach equal race scores, and one miner
ground its hotkey (and committed in the same block, or earlier) so that it sorts first. Through the race
engine and the weights: the tie breaks on a hash of the race seed and the hotkey, so the order follows
no hotkey order, changes with the seed, and no hotkey chosen before the seed wins every tie.

Issue 43, item 3: near-identical agents (equal outcomes on every problem, e.g. an agent and its copy with
dead lines added) tie to the earlier commitment on every seed; the weights follow the race's order."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, time, timedelta

from arena.judge.score import ProblemOutcome
from arena.race import ManualClock, MemoryEventStore, RaceEngine, RaceRules
from arena.race.rules import alike_on_every_problem, earlier_among_twins
from arena.weights import WeightRules, compute_weights

START = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)
SEEDS = tuple("0x" + hashlib.sha256(f"block {n}".encode()).hexdigest() for n in range(40))
"""Hashes of 40 future blocks: nobody knows them when the hotkeys are chosen and the code committed."""
HONEST = "5HonestMinerHotkey"
GROUND = tuple(f"5{'0' * (i + 1)}GroundHotkey{i}" for i in range(8))
"""Hotkeys a grinder made to sort before the honest one (in any hotkey order)."""


def _tied_race(seed: str, first: str, second: str, *, first_block: int, second_block: int) -> RaceEngine:
    """A first race of two different agents that score 0.5 each, seeded ``seed``."""
    clock = ManualClock(START)
    engine = RaceEngine(MemoryEventStore(), RaceRules(race_time=time(16)), clock)
    for hotkey, block in ((first, first_block), (second, second_block)):
        outcome = engine.submit(hotkey, f"code-of-{hotkey}", commitment_block=block)
        assert outcome.submission_id is not None
        engine.record_qualifying(outcome.submission_id, 0.5)
    clock.advance(timedelta(hours=7))  # to the 16:00 slot
    engine.start_race(seed, ["p1", "p2", "p3"])
    for sid in engine.pending_race_runs():
        engine.record_race_result(sid, 0.5)
    return engine


def _winner(engine: RaceEngine) -> str:
    assert engine.state.reign is not None
    return engine.state.reign.hotkey


def test_a_ground_hotkey_committed_first_does_not_win_the_tie_on_every_seed() -> None:
    for ground in GROUND:
        assert ground < HONEST
        wins = sum(_winner(_tied_race(seed, ground, HONEST, first_block=100, second_block=100)) == ground
                   for seed in SEEDS)
        # A fair coin over 40 seeds: never all, never none (hotkey or block order would give 40 or 0).
        assert 8 <= wins <= 32, (ground, wins)


def test_an_earlier_commitment_does_not_win_the_tie_either_and_the_weights_follow_the_race() -> None:
    winners = set()
    for seed in SEEDS[:12]:
        engine = _tied_race(seed, GROUND[0], HONEST, first_block=90, second_block=100)
        winners.add(_winner(engine))
        finishers, winner = engine.weights_input()
        vector = compute_weights(finishers, winner, ["burn", GROUND[0], HONEST], WeightRules())
        weights = dict(zip(vector.uids, vector.weights, strict=True))
        assert weights[1 if _winner(engine) == GROUND[0] else 2] == max(weights.values())
    assert winners == {GROUND[0], HONEST}


def test_the_order_of_equal_scores_changes_with_the_seed() -> None:
    winners = {_winner(_tied_race(seed, GROUND[0], HONEST, first_block=100, second_block=100))
               for seed in SEEDS}
    assert winners == {GROUND[0], HONEST}


# Issue 43, item 3: a near-identical agent (the ReAct agent with 40 dead lines) ties its model on every
# problem; the tie goes to the earlier commitment, never to the seeded coin.

TWIN_OUTCOMES = tuple(ProblemOutcome(problem_id=f"p{i}", success=i % 2 == 0, quality=0.5 + i / 10)
                      for i in range(1, 4))


def _twin_race(seed: str, *, earlier: str, later: str, later_outcomes: tuple[ProblemOutcome, ...]
               ) -> RaceEngine:
    clock = ManualClock(START)
    engine = RaceEngine(MemoryEventStore(), RaceRules(race_time=time(16)), clock)
    for hotkey, block in ((later, 120), (earlier, 100)):
        outcome = engine.submit(hotkey, f"code-of-{hotkey}", commitment_block=block)
        assert outcome.submission_id is not None
        engine.record_qualifying(outcome.submission_id, 0.5)
    clock.advance(timedelta(hours=7))
    engine.start_race(seed, ["p1", "p2", "p3"])
    for sid in engine.pending_race_runs():
        hotkey = engine.state.submissions[sid].hotkey
        engine.record_race_result(sid, 0.5, TWIN_OUTCOMES if hotkey == earlier else later_outcomes)
    return engine


def test_a_twin_tied_on_every_problem_never_takes_the_crown_from_the_earlier_commitment() -> None:
    for seed in SEEDS:
        engine = _twin_race(seed, earlier=HONEST, later=GROUND[0], later_outcomes=TWIN_OUTCOMES)
        assert _winner(engine) == HONEST, seed
        finishers, winner = engine.weights_input()
        vector = compute_weights(finishers, winner, ["burn", GROUND[0], HONEST], WeightRules())
        weights = dict(zip(vector.uids, vector.weights, strict=True))
        assert weights[2] == max(weights.values())


def test_equal_scores_from_different_outcomes_still_break_on_the_seed() -> None:
    different = tuple(o.model_copy(update={"success": not o.success}) for o in TWIN_OUTCOMES)
    winners = {_winner(_twin_race(seed, earlier=HONEST, later=GROUND[0], later_outcomes=different))
               for seed in SEEDS}
    assert winners == {GROUND[0], HONEST}


def test_twins_move_to_their_best_members_place_in_commitment_order() -> None:
    scores = {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.4}
    family = {"a": 2, "c": 2, "b": 1, "d": 2}  # a, c (and d, at another score) act alike
    blocks = {"a": 30, "b": 10, "c": 20, "d": 5}
    ordered = earlier_among_twins(["a", "b", "c", "d"], scores, lambda x, y: family[x] == family[y],
                                  lambda sid: (blocks[sid],))
    assert ordered == ("c", "a", "b", "d")
    same = (ProblemOutcome(problem_id="p1", success=True, quality=0.5),)
    assert alike_on_every_problem(same, same) and not alike_on_every_problem((), ())
