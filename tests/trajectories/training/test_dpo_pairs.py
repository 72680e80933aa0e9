"""The pure DPO pair rule: same problem only, success over failure, ranked, capped, deterministic."""

from __future__ import annotations

import itertools
import random

import pytest

from trajectories.training.data.conversations import Conversation, GradedConversation
from trajectories.training.data.dpo_pairs import PairFilter, pair_indices, role_of, select_pairs


def _attempt(attempt_id: str, problem_id: str, *, success: bool, rule: float | None = None,
             judge_quality: float | None = None, label: str = "agentic") -> GradedConversation:
    conversation = Conversation(attempt_id=attempt_id, problem_id=problem_id, leak_cluster="cluster-00000",
                                messages=[{"role": "user", "content": problem_id}])
    return GradedConversation(conversation=conversation, success=success,
                              rule=(1.0 if success else 0.0) if rule is None else rule,
                              judge_quality=judge_quality, filter_label=label)


@pytest.mark.parametrize(("chosen", "rejected"), list(itertools.product(range(7), repeat=2)))
def test_pair_indices_are_distinct_and_spread_each_side_evenly(chosen: int, rejected: int) -> None:
    every = pair_indices(chosen, rejected, cap=100)
    assert sorted(every) == sorted(itertools.product(range(chosen), range(rejected)))  # all, each once
    smaller = min(chosen, rejected)
    assert every[:smaller] == [(i, i) for i in range(smaller)]  # the i-th best meets the i-th clearest
    for end in range(1, len(every) + 1):
        for side, size in ((0, chosen), (1, rejected)):
            uses = [sum(1 for pair in every[:end] if pair[side] == index) for index in range(size)]
            assert max(uses) - min(uses) <= 1  # reused only once all of its side were used as often
    for cap in range(1, 8):
        assert pair_indices(chosen, rejected, cap) == every[:cap]


def test_roles_follow_success_labels_and_judge_minimum() -> None:
    rules = PairFilter(min_chosen_judge_quality=0.5)
    assert role_of(_attempt("a", "p", success=True, judge_quality=0.7), rules) == "chosen"
    assert role_of(_attempt("a", "p", success=True, judge_quality=0.3), rules) == \
        "chosen_judge_quality_below_minimum"
    assert role_of(_attempt("a", "p", success=True), rules) == "chosen_judge_quality_below_minimum"
    assert role_of(_attempt("a", "p", success=True, judge_quality=0.9, label="sub_task"), rules) == \
        "chosen_label:sub_task"
    assert role_of(_attempt("a", "p", success=False), rules) == "rejected"  # no judge minimum for failures
    assert role_of(_attempt("a", "p", success=False, label="no_llm"), rules) == "rejected_label:no_llm"
    lenient = PairFilter(rejected_labels=frozenset({"agentic", "sub_task"}))
    assert role_of(_attempt("a", "p", success=False, label="sub_task"), lenient) == "rejected"
    assert role_of(_attempt("a", "p", success=True, label="sub_task"), lenient) == "chosen_label:sub_task"


def test_pairs_stay_within_a_problem_rank_and_cap_deterministically() -> None:
    candidates = [
        _attempt("p1-win-low", "p1", success=True, judge_quality=0.2),
        _attempt("p1-win-high", "p1", success=True, judge_quality=0.9),
        _attempt("p1-win-unjudged", "p1", success=True),
        _attempt("p1-near-miss", "p1", success=False, rule=0.8),
        _attempt("p1-clear-fail", "p1", success=False, rule=0.1),
        _attempt("p2-win", "p2", success=True),
        _attempt("p2-fail-a", "p2", success=False, rule=0.5),
        _attempt("p2-fail-b", "p2", success=False, rule=0.5),
        _attempt("p2-fail-c", "p2", success=False, rule=0.5),
        _attempt("p3-win", "p3", success=True),  # no failure: no pair
        _attempt("p4-fail", "p4", success=False),  # no success: no pair
        _attempt("p4-sub-task-win", "p4", success=True, label="sub_task"),
    ]
    selection = select_pairs(candidates, PairFilter(max_pairs_per_problem=3))
    pairs = [(p.problem_id, p.chosen.attempt_id, p.rejected.attempt_id) for p in selection.pairs]
    assert pairs == [
        # p1: 3 chosen x 2 rejected: best with clearest, then the next ones; a failure is reused last
        ("p1", "p1-win-high", "p1-clear-fail"), ("p1", "p1-win-low", "p1-near-miss"),
        ("p1", "p1-win-unjudged", "p1-clear-fail"),
        # p2: the one success is reused against every failure (ties broken by attempt id)
        ("p2", "p2-win", "p2-fail-a"), ("p2", "p2-win", "p2-fail-b"), ("p2", "p2-win", "p2-fail-c")]
    assert all(p.chosen.problem_id == p.rejected.problem_id == p.problem_id for p in selection.pairs)
    assert (selection.chosen, selection.rejected, selection.problems) == (5, 6, 4)
    assert (selection.problems_without_failure, selection.problems_without_success) == (1, 1)
    assert selection.dropped == {"chosen_label:sub_task": 1}
    for seed in range(5):  # the order candidates arrive in never changes the pairs
        shuffled = candidates[:]
        random.Random(seed).shuffle(shuffled)
        again = select_pairs(shuffled, PairFilter(max_pairs_per_problem=3)).pairs
        assert [(p.problem_id, p.chosen.attempt_id, p.rejected.attempt_id) for p in again] == pairs
    capped = select_pairs(candidates, PairFilter(max_pairs_per_problem=1)).pairs
    assert [(p.chosen.attempt_id, p.rejected.attempt_id) for p in capped] == [
        ("p1-win-high", "p1-clear-fail"), ("p2-win", "p2-fail-a")]


def test_an_empty_selection_says_why() -> None:
    win, other_win = _attempt("a", "p1", success=True), _attempt("b", "p2", success=True)
    only_wins = select_pairs([win, other_win], PairFilter())
    assert not only_wins.pairs and "no failed attempt is eligible" in only_wins.why_empty()
    only_losses = select_pairs([_attempt("a", "p1", success=False)], PairFilter())
    assert "no successful attempt is eligible" in only_losses.why_empty()
    apart = select_pairs([win, _attempt("b", "p2", success=False)], PairFilter())
    assert not apart.pairs
    assert apart.why_empty() == ("no problem has both a successful and a failed attempt: 1 problem(s) have "
                                 "only successes, 1 only failures")
    wrong_labels = select_pairs([_attempt("a", "p1", success=True, label="sub_task")], PairFilter())
    assert "no attempt is eligible for either side" in wrong_labels.why_empty()
    assert "chosen_label:sub_task" in wrong_labels.why_empty()
