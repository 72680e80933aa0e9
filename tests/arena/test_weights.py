"""Weights: deterministic, byte-identical, shares as configured (SPEC 4)."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.weights import (
    U16_MAX,
    Finisher,
    WeightLimits,
    WeightRules,
    WeightVector,
    compute_weights,
    limits_violation,
    process_weights,
    race_shares,
    ranking,
    seeded_tie_break,
    weight_vector,
)

RULES = WeightRules(winner_share=0.6, taper_share=0.2, burn_uid=0)
SEED = "0xseed"


def finisher(hotkey: str, score: float, copy_of: str | None = None, seed: str = SEED) -> Finisher:
    return Finisher(hotkey=hotkey, score=score, tie_break=seeded_tie_break(seed, hotkey), copy_of=copy_of)

hotkeys = st.lists(st.text("abcdefgh", min_size=1, max_size=4), min_size=1, max_size=12, unique=True)


@st.composite
def races(draw: st.DrawFn) -> tuple[list[Finisher], str, list[str]]:
    keys = draw(hotkeys)
    seed = draw(st.text("0123456789abcdef", min_size=1, max_size=8))
    scores = st.sampled_from([0.0, 0.25, 0.5, 0.5, 0.75, 1.0])
    finishers = [finisher(k, draw(scores), seed=seed) for k in keys]
    winner = draw(st.sampled_from(keys))
    extra = draw(st.lists(st.text("xyz", min_size=1, max_size=3), max_size=5, unique=True))
    metagraph = ["burn", *draw(st.permutations([*keys, *extra]))]
    return finishers, winner, metagraph


@given(races(), st.randoms())
@settings(max_examples=200, deadline=None)  # no dependence on machine speed
def test_same_results_same_bytes_in_any_order(race: tuple[list[Finisher], str, list[str]],
                                              rnd: random.Random) -> None:
    finishers, winner, metagraph = race
    shuffled = list(finishers)
    rnd.shuffle(shuffled)
    first = compute_weights(finishers, winner, metagraph, RULES)
    assert compute_weights(shuffled, winner, metagraph, RULES).to_bytes() == first.to_bytes()
    assert max(first.weights) == U16_MAX and list(first.uids) == sorted(set(first.uids))


@given(races())
@settings(max_examples=200, deadline=None)  # no dependence on machine speed
def test_shares_sum_and_shape(race: tuple[list[Finisher], str, list[str]]) -> None:
    finishers, winner, _ = race
    shares = race_shares(finishers, winner, RULES)
    assert shares[winner] == Fraction(3, 5)
    others = [f.hotkey for f in ranking(finishers) if f.hotkey != winner]
    paid = [h for h in others if h in shares]
    assert paid == others[:math.ceil(len(finishers) / 2) - 1]  # the top half, in ranking order
    taper = [shares[h] for h in paid]
    assert taper == sorted(taper, reverse=True) and len(set(taper)) == len(taper)
    assert sum(taper, Fraction(0)) == (Fraction(1, 5) if paid else 0)
    assert sum(shares.values(), Fraction(0)) <= 1


@given(races(), st.data())
@settings(max_examples=200, deadline=None)  # no dependence on machine speed
def test_deregistered_hotkeys_burn_without_moving_the_winner(race: tuple[list[Finisher], str, list[str]],
                                                              data: st.DataObject) -> None:
    finishers, winner, metagraph = race
    gone = set(data.draw(st.lists(st.sampled_from([f.hotkey for f in finishers if f.hotkey != winner] or
                                                  [winner]), max_size=4)) or [])
    gone.discard(winner)
    reduced = [h if h not in gone else f"replaced-{i}" for i, h in enumerate(metagraph)]
    full = compute_weights(finishers, winner, metagraph, RULES)
    cut = compute_weights(finishers, winner, reduced, RULES)
    for vector in (full, cut):
        weights = dict(zip(vector.uids, vector.weights, strict=True))
        assert weights[metagraph.index(winner)] / sum(weights.values()) == pytest.approx(0.6, abs=1e-4)
    cut_uids = {reduced[uid] for uid in cut.uids}
    assert not cut_uids & gone


def test_before_the_first_race_everything_burns() -> None:
    vector = compute_weights([], None, ["owner", "a", "b"], WeightRules(burn_uid=0))
    assert (vector.uids, vector.weights) == ((0,), (U16_MAX,))
    assert compute_weights([], None, ["a", "owner"], WeightRules(burn_uid=1)).uids == (1,)


def test_a_worked_example() -> None:
    finishers = [finisher(h, s) for h, s in [("w", 0.5), ("a", 0.9), ("b", 0.7), ("c", 0.7), ("d", 0.1)]]
    shares = race_shares(finishers, "w", RULES)
    # 5 finishers: top half is 3, so the winner plus the best two others; taper 2:1 over 0.2.
    assert seeded_tie_break(SEED, "b") < seeded_tie_break(SEED, "c")  # b wins the tie with c on this seed
    assert shares == {"w": Fraction(3, 5), "a": Fraction(2, 15), "b": Fraction(1, 15)}
    vector = weight_vector(shares, ["burn", "w", "a", "b", "c", "d"], 0)
    assert vector.uids == (0, 1, 2, 3) and vector.weights == (21845, 65535, 14563, 7282)  # burn 0.2


def test_equal_scores_rank_by_the_seeded_tie_break_which_changes_with_the_seed() -> None:
    hotkeys = ["a", "b", "c", "d"]
    orders = set()
    for seed in ("s1", "s2", "s3", "s4", "s5"):
        ranked = [f.hotkey for f in ranking([finisher("e", 0.8, seed=seed),
                                             *(finisher(h, 0.7, seed=seed) for h in hotkeys)])]
        assert ranked[0] == "e"  # a better score always ranks first
        assert ranked[1:] == sorted(hotkeys, key=lambda h: seeded_tie_break(seed, h))
        orders.add(tuple(ranked[1:]))
    assert len(orders) > 1


def test_the_taper_is_over_distinct_code_copies_take_no_slot() -> None:
    honest = [finisher("w", 0.9), finisher("h1", 0.5), finisher("h2", 0.4), finisher("h3", 0.3)]
    farm = [finisher(f"copy{i}", 0.8, copy_of="w") for i in range(3)]
    shares = race_shares([*honest, *farm], "w", RULES)
    # Four distinct codes: the winner and the best other share the top half; the copies are not counted.
    assert shares == {"w": Fraction(3, 5), "h1": Fraction(1, 5)}
    assert race_shares(honest, "w", RULES) == shares


def test_bad_inputs_are_refused() -> None:
    one = finisher("a", 1.0)
    with pytest.raises(ValueError, match="twice"):
        race_shares([one, one], "a", RULES)
    with pytest.raises(ValueError, match="burn uid"):
        compute_weights([one], "a", ["a"], WeightRules(burn_uid=3))
    with pytest.raises(ValueError, match="two uids"):
        compute_weights([one], "a", ["x", "a", "a"], RULES)
    with pytest.raises(ValueError, match="exceed"):
        WeightRules(winner_share=0.9, taper_share=0.2)
    with pytest.raises(ValueError):
        finisher("a", float("nan"))
    with pytest.raises(ValueError):
        Finisher(hotkey="a", score=0.5, tie_break="a")


def _share(vector: WeightVector, uid: int) -> float:
    return dict(zip(vector.uids, vector.weights, strict=True)).get(uid, 0) / sum(vector.weights)


def test_a_vector_within_the_subnet_limits_is_sent_unchanged() -> None:
    finishers = [finisher(h, s) for h, s in [("w", 0.5), ("a", 0.9), ("b", 0.7), ("c", 0.7), ("d", 0.1)]]
    vector = compute_weights(finishers, "w", ["burn", "w", "a", "b", "c", "d"], RULES)
    for limits in (WeightLimits(), WeightLimits(min_allowed_weights=4, max_weight_limit=39_322)):
        assert process_weights(vector, limits, n_uids=6) is vector


def test_a_cap_below_the_winner_share_clips_it_and_spreads_the_rest_in_proportion() -> None:
    finishers = [finisher(h, s) for h, s in [("w", 0.5), ("a", 0.9), ("b", 0.7), ("c", 0.7), ("d", 0.1)]]
    vector = compute_weights(finishers, "w", ["burn", "w", "a", "b", "c", "d"], RULES)
    limits = WeightLimits(max_weight_limit=19_661)  # 30%: below the winner's 60%
    assert limits_violation(vector, limits, n_uids=6) is not None  # the chain would refuse the race's vector
    processed = process_weights(vector, limits, n_uids=6)
    assert limits_violation(processed, limits, n_uids=6) is None
    assert processed.uids == vector.uids
    # The winner and the burn uid (0.2) are both cut to the cap; a (2/15) and b (1/15) keep their 2:1.
    assert _share(processed, 1) == pytest.approx(0.3, abs=1e-4)
    assert _share(processed, 0) == pytest.approx(0.3, abs=1e-4)
    assert _share(processed, 2) == pytest.approx(2 * _share(processed, 3), rel=1e-3)
    assert max(processed.weights) * U16_MAX <= limits.max_weight_limit * sum(processed.weights)


def test_fewer_weights_than_the_subnet_minimum_pad_every_uid_as_the_sdk_does() -> None:
    vector = compute_weights([finisher("w", 0.9)], "w", ["burn", "w", "x", "y", "z"], RULES)
    assert vector.uids == (0, 1)  # the winner and the burn
    limits = WeightLimits(min_allowed_weights=4)
    assert "WeightVecLengthIsLow" in (limits_violation(vector, limits, n_uids=5) or "")
    processed = process_weights(vector, limits, n_uids=5)
    assert processed.uids == (0, 1, 2, 3, 4) and limits_violation(processed, limits, n_uids=5) is None
    assert _share(processed, 1) == pytest.approx(0.6, abs=1e-4) and 0 < _share(processed, 4) < 1e-4
    # Before the first race everything burns: one weight, padded and capped alike.
    burn_only = compute_weights([], None, ["burn", "w", "x"], RULES)
    capped = process_weights(burn_only, WeightLimits(min_allowed_weights=2, max_weight_limit=32_768),
                             n_uids=3)
    assert capped.uids == (0, 1, 2) and _share(capped, 0) == pytest.approx(0.5, abs=1e-4)


def test_a_self_weight_is_exempt_and_an_impossible_cap_is_refused() -> None:
    own = WeightVector(uids=(2,), weights=(U16_MAX,))
    tight = WeightLimits(min_allowed_weights=8, max_weight_limit=100)
    assert process_weights(own, tight, n_uids=10, self_uid=2) is own
    with pytest.raises(ValueError, match="no weights meet a cap"):
        process_weights(own, tight, n_uids=10)  # 100/65535 of the row on each of 10 uids cannot sum to 1


@given(races(), st.integers(1, 12), st.integers(1_000, U16_MAX))
@settings(max_examples=200, deadline=None)  # no dependence on machine speed
def test_processed_weights_always_meet_the_limits(race: tuple[list[Finisher], str, list[str]],
                                                   minimum: int, cap: int) -> None:
    finishers, winner, metagraph = race
    vector = compute_weights(finishers, winner, metagraph, RULES)
    limits = WeightLimits(min_allowed_weights=minimum, max_weight_limit=cap)
    n_uids = len(metagraph)
    if n_uids * cap < U16_MAX:
        return
    processed = process_weights(vector, limits, n_uids=n_uids)
    assert limits_violation(processed, limits, n_uids=n_uids) is None
    # Clipping and padding keep the order: the winner still holds the largest weight.
    assert dict(zip(processed.uids, processed.weights, strict=True))[metagraph.index(winner)] == U16_MAX
