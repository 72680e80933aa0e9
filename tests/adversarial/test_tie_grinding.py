"""Same-block tie grinding (issue 22, item 2): two different agents reach equal race scores, and one miner
ground its hotkey (and committed in the same block, or earlier) so that it sorts first. Through the race
engine and the weights: the tie breaks on a hash of the race seed and the hotkey, so the order follows
no hotkey order, changes with the seed, and no hotkey chosen before the seed wins every tie."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, time, timedelta

from arena.race import ManualClock, MemoryEventStore, RaceEngine, RaceRules
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
