"""Preference pairs for DPO: a successful and a failed attempt of the same problem, chosen by a pure rule.

Every candidate is an attempt that already passed the leak-cluster guard (dump ``train`` rows, or rollouts of
guarded train problems). :func:`role_of` says whether it may be a pair's *chosen* side (a success with an
allowed filter label and, if asked, a minimum judge quality) or its *rejected* side (a failure with an
allowed label), or why it is neither. :func:`select_pairs` then pairs, problem by problem in problem-id
order, the ranked chosen with the ranked rejected of that problem only:

- chosen are ranked by judge quality (unjudged last), then rule score, then attempt id; rejected by rule
  score, lowest first (the clearest failures), then attempt id. The ranking never depends on input order.
- pairs are distinct, and a conversation may be reused across pairs, but evenly (:func:`pair_indices`):
  one is used again only once every other conversation of its side has been used as often. The i-th
  chosen meets the i-th rejected first, so the best success meets the clearest failure; a problem with 1
  success and 5 failures gives up to 5 pairs sharing that success.
- at most ``max_pairs_per_problem`` pairs per problem, so a problem with many attempts cannot dominate.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from trajectories.training.data.conversations import Conversation, GradedConversation

Role = Literal["chosen", "rejected"]


class PairFilter(BaseModel):
    """Which attempts may be the chosen and the rejected side of a pair, and how many pairs per problem."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chosen_labels: frozenset[str] = Field(default=frozenset({"agentic"}), description=(
        "Structural-filter labels a successful attempt needs to be chosen"))
    rejected_labels: frozenset[str] = Field(default=frozenset({"agentic"}), description=(
        "Structural-filter labels a failed attempt needs to be rejected (agentic: the failure is the model's "
        "own text, not some Python agent's)"))
    min_chosen_judge_quality: float | None = Field(default=None, ge=0, le=1, description=(
        "Minimum judge quality of a chosen attempt; unjudged attempts (every rollout) fail any minimum"))
    max_pairs_per_problem: int = Field(default=4, ge=1, description="Pairs built from one problem at most")
    max_tool_chars: int = Field(default=4000, ge=16, description=(
        "Tool results longer than this are cut (context only: never trained on)"))


@dataclass(frozen=True)
class PreferencePair:
    problem_id: str
    chosen: Conversation
    rejected: Conversation


@dataclass(frozen=True)
class PairSelection:
    """The pairs and the counts that explain them."""

    pairs: list[PreferencePair]
    dropped: Counter[str]
    """candidates that may be neither side, by reason"""
    chosen: int
    rejected: int
    problems: int
    """problems with at least one eligible candidate"""
    problems_without_success: int
    problems_without_failure: int

    def why_empty(self) -> str:
        """Why no pair could be built, for the refusal message."""
        if self.chosen == 0 and self.rejected == 0:
            return f"no attempt is eligible for either side (dropped: {dict(self.dropped)})"
        if self.chosen == 0:
            return (f"no successful attempt is eligible as chosen ({self.rejected} failed ones are; "
                    f"dropped: {dict(self.dropped)})")
        if self.rejected == 0:
            return (f"no failed attempt is eligible as rejected ({self.chosen} successful ones are; "
                    f"dropped: {dict(self.dropped)})")
        return (f"no problem has both a successful and a failed attempt: {self.problems_without_failure} "
                f"problem(s) have only successes, {self.problems_without_success} only failures")


def role_of(candidate: GradedConversation, rules: PairFilter) -> Role | str:
    """The side ``candidate`` may take in a pair, or why it may take none."""
    if candidate.success:
        if candidate.filter_label not in rules.chosen_labels:
            return f"chosen_label:{candidate.filter_label}"
        minimum = rules.min_chosen_judge_quality
        if minimum is not None and (candidate.judge_quality is None or candidate.judge_quality < minimum):
            return "chosen_judge_quality_below_minimum"
        return "chosen"
    if candidate.filter_label not in rules.rejected_labels:
        return f"rejected_label:{candidate.filter_label}"
    return "rejected"


def pair_indices(chosen: int, rejected: int, cap: int) -> list[tuple[int, int]]:
    """Up to ``cap`` distinct (chosen, rejected) index pairs, spreading the use of each side evenly.

    Pair n is ``(n mod C, (n + n // L) mod R)`` with ``L = lcm(C, R)``: the chosen index cycles, the rejected
    index cycles too and shifts by one after every L pairs, so all C x R pairs appear once each, and in every
    prefix the counts of uses of any two indices of one side differ by at most one.
    """
    if not chosen or not rejected:
        return []
    period = math.lcm(chosen, rejected)
    return [(n % chosen, (n + n // period) % rejected) for n in range(min(cap, chosen * rejected))]


def _chosen_rank(candidate: GradedConversation) -> tuple[float, float, str]:
    quality = -1.0 if candidate.judge_quality is None else candidate.judge_quality
    rule = 0.0 if candidate.rule is None else candidate.rule
    return -quality, -rule, candidate.conversation.attempt_id


def _rejected_rank(candidate: GradedConversation) -> tuple[float, str]:
    return 0.0 if candidate.rule is None else candidate.rule, candidate.conversation.attempt_id


def select_pairs(candidates: Iterable[GradedConversation], rules: PairFilter) -> PairSelection:
    """Pairs of a successful and a failed attempt of the same problem (see the module docstring)."""
    wins: defaultdict[str, list[GradedConversation]] = defaultdict(list)
    losses: defaultdict[str, list[GradedConversation]] = defaultdict(list)
    dropped: Counter[str] = Counter()
    for candidate in candidates:
        role = role_of(candidate, rules)
        if role == "chosen":
            wins[candidate.conversation.problem_id].append(candidate)
        elif role == "rejected":
            losses[candidate.conversation.problem_id].append(candidate)
        else:
            dropped[role] += 1
    problems = sorted(wins.keys() | losses.keys())
    pairs: list[PreferencePair] = []
    for problem_id in problems:
        ranked_wins = sorted(wins.get(problem_id, []), key=_chosen_rank)
        ranked_losses = sorted(losses.get(problem_id, []), key=_rejected_rank)
        pairs.extend(
            PreferencePair(problem_id=problem_id, chosen=ranked_wins[c].conversation,
                           rejected=ranked_losses[r].conversation)
            for c, r in pair_indices(len(ranked_wins), len(ranked_losses), rules.max_pairs_per_problem))
    return PairSelection(
        pairs=pairs, dropped=dropped, chosen=sum(map(len, wins.values())),
        rejected=sum(map(len, losses.values())), problems=len(problems),
        problems_without_success=sum(1 for p in problems if p not in wins),
        problems_without_failure=sum(1 for p in problems if p not in losses))
