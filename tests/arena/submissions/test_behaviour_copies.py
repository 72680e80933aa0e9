"""The behaviour side of the copy rule as pure functions (``arena.submissions.behaviour``): which earlier
files a challenger is re-run against (the floor sits between the measured honest pairs and the near copies
the code rule lets through), and the verdict from traces, ties to the earlier commitment."""

from __future__ import annotations

from arena.race.events import CopyOf
from arena.submissions.behaviour import (
    BEHAVIOUR_FLOOR,
    BEHAVIOUR_SUSPECTS,
    behaviour_copy,
    behaviour_suspects,
)
from arena.submissions.copies import (
    COPY_THRESHOLD,
    ProblemTrace,
    bundled_agents,
    code_features,
    normalised_arguments,
    public_union,
)
from shoppingbench.doubles.demo_miners import BAIT_PARSER
from tests.fixtures.copy_rewrites import HONEST, REACT, UNDER_THRESHOLD, apply, measure, tuned_react

MEASURED = measure()
PUBLIC = public_union(bundled_agents())
TUNED = tuned_react()
NEAR_COPY = apply(TUNED, UNDER_THRESHOLD)


def test_the_floor_sits_between_honest_pairs_and_the_near_copy_under_the_code_threshold() -> None:
    assert max(MEASURED.honest_variants.values()) < BEHAVIOUR_FLOOR <= MEASURED.under_threshold
    assert MEASURED.under_threshold < COPY_THRESHOLD  # the code rule alone lets it through


def test_suspects_are_the_closest_above_the_floor_in_chain_order() -> None:
    near = code_features(NEAR_COPY)
    earlier = [("bait", code_features(BAIT_PARSER)), ("public_react", code_features(REACT)),
               ("tuned", code_features(TUNED)), ("other", code_features(HONEST["other_prompt_tuned"]))]
    assert behaviour_suspects(near, earlier, PUBLIC) == ["tuned"]
    # Bounded: the closest kept (equal ones: the earlier), returned in chain order.
    copies = [(f"copy{i}", code_features(TUNED)) for i in range(3)]
    assert behaviour_suspects(near, [*copies, ("near", near)], PUBLIC, limit=2) == ["copy0", "near"]
    assert len(behaviour_suspects(near, [*copies, ("near", near)], PUBLIC)) == BEHAVIOUR_SUSPECTS


def _trace(problem: str, queries: list[str], success: bool) -> ProblemTrace:
    return ProblemTrace(problem_id=problem, success=success,
                        calls=tuple(("find_product", normalised_arguments({"q": q})) for q in queries))


def _original(hotkey: str, block: int) -> CopyOf:
    return CopyOf(hotkey=hotkey, code_hash=hotkey * 8, commitment_block=block, similarity=0.0,
                  basis="behaviour", submission_id=f"sid-{hotkey}")


def test_the_verdict_names_the_earliest_original_it_acts_as_with_the_similarity() -> None:
    later = [_trace("p1", ["red mug", "mug"], True), _trace("p2", ["lamp"], False)]
    different = [_trace("p1", ["blue kettle"], False), _trace("p2", ["sofa", "couch"], True)]
    assert behaviour_copy(later, [(_original("alice", 5), different)]) is None
    found = behaviour_copy(later, [(_original("alice", 5), different), (_original("bob", 6), later),
                                   (_original("carol", 7), later)])
    assert found is not None and found.submission_id == "sid-bob" and found.similarity == 1.0
    assert found.basis == "behaviour" and found.summary().startswith("copy of sid-bob (behaviour:")
    # No problem in common: nothing to compare, no verdict.
    assert behaviour_copy(later, [(_original("bob", 6), [_trace("p9", ["lamp"], False)])]) is None
