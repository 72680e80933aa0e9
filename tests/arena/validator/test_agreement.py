"""The agreement rule as a pure function: weight rows and peers' rules in, the report the gauges, the warning
and ``validator peers`` show out."""

from __future__ import annotations

from typing import Any

import pytest

from arena.chain import AxonInfo, ValidatorWeights, weight_shares
from arena.rules_fingerprint import RULES_VERSION, fingerprint_of
from arena.validator.agreement import (
    MAX_PART_NAME,
    MAX_PART_NAMES,
    PeerRules,
    agreement,
    differing_parts,
    weight_distance,
)

PARTS: dict[str, Any] = {"judge_models": ["judge-a"], "burn_days": 365,
                         "suite_sizes": {"race": {"search": 50}, "qualifying": 20}}
OURS = fingerprint_of(PARTS)


def row(uid: int, weights: dict[int, float], *, stake: float = 1.0, permit: bool = True,
        axon: bool = True) -> ValidatorWeights:
    return ValidatorWeights(uid=uid, hotkey=f"hk{uid}", stake=stake, validator_permit=permit,
                            axon=AxonInfo(ip="10.0.0.1", port=8000 + uid) if axon else None, weights=weights)


def report(rows: list[ValidatorWeights], peer_rules: dict[str, PeerRules] | None = None, **kw: Any) -> Any:
    return agreement(block=700, hotkey="hk0", rules=OURS, rows=rows, peer_rules=peer_rules or {}, **kw)


def test_weight_shares_normalize_a_u16_row_and_drop_zeros() -> None:
    shares = weight_shares([(3, 65_535), (1, 21_845), (2, 0)])
    assert shares == {1: pytest.approx(0.25), 3: pytest.approx(0.75)}
    assert weight_shares([]) == {} and weight_shares([(1, 0)]) == {}


def test_weight_distance_is_the_largest_difference_of_one_uid_over_unequal_uid_sets() -> None:
    assert weight_distance({0: 0.5, 1: 0.5}, {0: 0.5, 1: 0.5}) == 0
    assert weight_distance({0: 1.0}, {0: 0.4, 7: 0.6}) == pytest.approx(0.6)  # uid 7 missing counts 0
    assert weight_distance({}, {}) == 0


def test_no_peers_means_nothing_compared() -> None:
    result = report([row(0, {0: 1.0})])
    assert result.peers == () and result.compared == 0
    assert result.stake_share is None and result.max_disagreement is None and result.disagreements() == []
    assert report([]).own_weights is False


def test_share_of_stake_that_agrees_within_the_tolerance() -> None:
    ours = {0: 0.2, 3: 0.8}
    rows = [row(0, ours, stake=5), row(1, {0: 0.2, 3: 0.8}, stake=30), row(2, {0: 0.21, 3: 0.79}, stake=10),
            row(4, {0: 0.2, 3: 0.4, 5: 0.4}, stake=60), row(5, {}, stake=1_000),  # no weights: not compared
            row(6, {0: 1.0}, stake=500, permit=False)]  # lost its permit: not a peer
    result = report(rows, tolerance=0.02)
    assert [p.uid for p in result.peers] == [1, 2, 4, 5] and result.compared == 3
    assert result.weighted_by == "stake" and result.stake_share == pytest.approx(40 / 100)
    assert [p.agrees for p in result.peers] == [True, True, False, None]
    assert result.max_disagreement == pytest.approx(0.4) and result.max_disagreement_hotkey == "hk4"
    assert result.disagreements() == ["hk4 (uid 4): weights differ by 0.400 (tolerance 0.02)"]
    # A tighter tolerance turns the near match into a disagreement.
    assert report(rows, tolerance=0.005).stake_share == pytest.approx(30 / 100)


def test_zero_stake_counts_every_compared_peer_the_same() -> None:
    rows = [row(0, {0: 1.0}, stake=0), row(1, {0: 1.0}, stake=0), row(2, {1: 1.0}, stake=0),
            row(3, {0: 1.0}, stake=0)]
    result = report(rows)
    assert result.weighted_by == "count" and result.stake_share == pytest.approx(2 / 3)


def test_without_own_weights_nothing_is_compared_but_rules_still_are() -> None:
    result = report([row(0, {}), row(1, {0: 1.0})], {"hk1": PeerRules(rules=OURS)})
    assert result.own_weights is False and result.compared == 0 and result.stake_share is None
    assert result.peers[0].distance is None and result.peers[0].rules == "match"


def test_rules_match_differ_part_by_part_or_are_unknown() -> None:
    theirs = fingerprint_of({**PARTS, "judge_models": ["judge-b"],
                             "suite_sizes": {"race": {"search": 10}, "qualifying": 20}})
    rows = [row(0, {0: 1.0}), row(1, {0: 1.0}), row(2, {0: 1.0}), row(3, {0: 1.0}, axon=False),
            row(4, {0: 1.0})]
    seen = {"hk1": PeerRules(rules=OURS), "hk2": PeerRules(rules=theirs),
            "hk3": PeerRules(error="no axon served")}
    result = report(rows, seen)
    assert [p.rules for p in result.peers] == ["match", "differs", "unknown", "unknown"]
    assert result.peers[1].differing_parts == ("judge_models", "suite_sizes.race.search")
    assert result.peers[2].rules_error == "no axon served" and result.peers[3].rules_error is None
    assert result.other_fingerprints == 1 and result.unknown_rules == 2 and result.stake_share == 1.0
    assert result.disagreements() == ["hk2 (uid 2): judge_models differs, suite_sizes.race.search differs"]


def test_differing_parts_name_version_missing_parts_and_stay_bounded() -> None:
    older = fingerprint_of(PARTS, version=RULES_VERSION - 1)
    assert differing_parts(OURS, older) == ("version",)
    fewer = fingerprint_of({k: v for k, v in PARTS.items() if k != "burn_days"})
    assert differing_parts(OURS, fewer) == ("burn_days",)
    noisy = fingerprint_of({**PARTS, **{f"{'x' * 100}{n:03}": n for n in range(50)}})
    names = differing_parts(OURS, noisy)
    assert len(names) == MAX_PART_NAMES and all(len(name) <= MAX_PART_NAME for name in names)
    hostile = fingerprint_of({**PARTS, "judge\x1b[2J\nmodels": 1})
    assert differing_parts(OURS, hostile) == ("judge?[2J?models",)
