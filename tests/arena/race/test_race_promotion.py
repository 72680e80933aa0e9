"""The promotion test as pure functions: a paired bootstrap bound every validator computes alike."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.judge import QUALITY_LEVELS, JudgeVerdict, ProblemOutcome, suite_score
from arena.race.promotion import (
    bootstrap_generator,
    clears,
    lead_lower_bound,
    outcome_arrays,
    resampled_scores,
)

RESAMPLES = 2000
CONFIDENCE = 0.95


def outcomes(successes: str, qualities: list[float] | None = None) -> tuple[ProblemOutcome, ...]:
    """``"1101"``: problems p0..p3, succeeded where 1; quality 0.9 unless given per problem."""
    levels = qualities or [0.9] * len(successes)
    return tuple(ProblemOutcome(problem_id=f"p{i}", success=c == "1", quality=q)
                 for i, (c, q) in enumerate(zip(successes, levels, strict=True)))


def pair(both: int, challenger_only: int, defender_only: int, neither: int) -> tuple[str, str]:
    """A challenger's and a defender's successes over the same problems, by agreement."""
    return ("1" * both + "1" * challenger_only + "0" * defender_only + "0" * neither,
            "1" * both + "0" * challenger_only + "1" * defender_only + "0" * neither)


def bound(challenger: tuple[ProblemOutcome, ...], defender: tuple[ProblemOutcome, ...],
          seed: str = "0xseed") -> float | None:
    return lead_lower_bound(challenger, defender, seed, resamples=RESAMPLES, confidence=CONFIDENCE)


def test_identical_inputs_give_the_identical_bound() -> None:
    mine, theirs = pair(24, 12, 9, 15)
    first = bound(outcomes(mine), outcomes(theirs))
    assert first is not None
    assert bound(outcomes(mine), outcomes(theirs)) == first  # a second validator, fresh objects
    # Pinned: a NumPy or platform that drew other indices would split the validators' decisions.
    assert first == pytest.approx(round(-4 / 60, 4), abs=1e-12)  # scores are rounded to 4 decimals


def test_a_large_consistent_lead_clears_the_bound() -> None:
    mine, theirs = pair(25, 20, 2, 13)  # 45/60 against 27/60
    lower = bound(outcomes(mine), outcomes(theirs))
    assert lower is not None and lower > 0.15
    assert clears(0.3, 0.05, lower)


def test_a_lead_above_the_margin_made_of_noise_does_not_promote() -> None:
    # 36/60 against 33/60: a 0.05 lead beats a fresh reign's margin, but the agents disagree on 21
    # problems and split them 12 to 9, which two runs of the same agent do about a third of the time.
    mine, theirs = pair(24, 12, 9, 15)
    lower = bound(outcomes(mine), outcomes(theirs))
    assert lower is not None and lower < 0
    assert clears(0.05, 0.046, None) and not clears(0.05, 0.046, lower)


def test_two_extra_successes_on_otherwise_identical_runs_do_not_promote() -> None:
    # The lead never goes below zero on any resample, yet one resample in eight draws neither problem.
    mine, theirs = pair(30, 2, 0, 28)
    assert bound(outcomes(mine), outcomes(theirs)) == 0.0
    assert not clears(2 / 60, 0.01, 0.0)


def test_quality_counts_through_the_coefficient() -> None:
    # Same successes; the challenger reasons (0.9), the defender does not (0.1, coefficient 0.3875).
    successes = "1" * 30 + "0" * 30
    lower = bound(outcomes(successes), outcomes(successes, [0.1] * 60))
    assert lower is not None and lower > 0.2


def test_no_bound_without_paired_outcomes() -> None:
    mine, theirs = pair(24, 12, 9, 15)
    assert bound(outcomes(mine), ()) is None  # e.g. a result from a log written before outcomes
    assert bound((), outcomes(theirs)) is None
    assert bound(outcomes(mine)[1:], outcomes(theirs)[:-1]) is None  # not the same problems
    assert clears(0.05, 0.01, None) and not clears(0.01, 0.01, None)


def test_a_resample_scores_as_the_arena_does() -> None:
    qualities = [QUALITY_LEVELS[i % 5] for i in range(40)]
    run = outcomes("1101" * 10, qualities)
    verdicts = [JudgeVerdict(quality=q, judge="model-a", offline=False, explanation="-", attempts=1)
                for q in qualities]
    arena = suite_score([o.success for o in run], verdicts, [o.problem_id for o in run])
    identity = np.arange(len(run), dtype=np.int64).reshape(1, -1)
    assert arena.outcomes == run
    assert resampled_scores(*outcome_arrays(run), identity)[0] == pytest.approx(arena.score, abs=1e-12)


def test_a_resample_rounds_a_half_as_the_published_score_does() -> None:
    """Four verdicts averaging 0.45: the coefficient 0.69375 is stored a hair under the half, so the
    reference's ``round`` publishes 0.6937 (``np.round`` would give 0.6938); the resample agrees."""
    qualities = [0.3, 0.5, 0.5, 0.5]
    run = outcomes("1111", qualities)
    verdicts = [JudgeVerdict(quality=q, judge="model-a", offline=False, explanation="-", attempts=1)
                for q in qualities]
    arena = suite_score([o.success for o in run], verdicts, [o.problem_id for o in run])
    identity = np.arange(len(run), dtype=np.int64).reshape(1, -1)
    assert arena.score == 0.6937
    assert resampled_scores(*outcome_arrays(run), identity)[0] == arena.score


runs = st.lists(st.tuples(st.booleans(), st.sampled_from(QUALITY_LEVELS)), min_size=1, max_size=40)


def as_outcomes(run: list[tuple[bool, float]]) -> tuple[ProblemOutcome, ...]:
    return tuple(ProblemOutcome(problem_id=f"p{i}", success=s, quality=q) for i, (s, q) in enumerate(run))


@given(runs, st.text(max_size=8))
@settings(max_examples=50, deadline=None)
def test_an_agent_never_leads_itself(run: list[tuple[bool, float]], seed: str) -> None:
    assert bound(as_outcomes(run), as_outcomes(run), seed) == 0.0


@given(st.data(), runs, st.text(max_size=8))
@settings(max_examples=50, deadline=None)
def test_one_more_challenger_success_never_lowers_the_bound(data: st.DataObject,
                                                            run: list[tuple[bool, float]], seed: str) -> None:
    defender = as_outcomes(data.draw(st.lists(st.tuples(st.booleans(), st.sampled_from(QUALITY_LEVELS)),
                                              min_size=len(run), max_size=len(run))))
    failed = [i for i, (success, _) in enumerate(run) if not success]
    if not failed:
        return
    better = list(run)
    flip = data.draw(st.sampled_from(failed))
    better[flip] = (True, run[flip][1])
    before, after = bound(as_outcomes(run), defender, seed), bound(as_outcomes(better), defender, seed)
    assert before is not None and after is not None and -1 <= before <= after <= 1


def test_the_generator_is_the_race_seeds() -> None:
    first, again = bootstrap_generator("0xabc"), bootstrap_generator("0xabc")
    assert (first.random_raw(8) == again.random_raw(8)).all()
    # Pinned words: every validator, whatever its NumPy version or platform, must draw these.
    assert [int(w) for w in bootstrap_generator("0xabc").random_raw(3)] == [
        4479882789620650837, 3196270435694508796, 399395498418065976]
    assert (bootstrap_generator("0xabd").random_raw(8) != bootstrap_generator("0xabc").random_raw(8)).any()
