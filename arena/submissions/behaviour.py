"""The copy rule on behaviour (SPEC 4), as pure functions: which earlier submissions a challenger is run
against, and whether it acts as one of them.

The code rule (``arena.submissions.copies``) misses a copy rewritten just enough to fall under
``COPY_THRESHOLD`` (a conditional expression for an ``if``, a few phrases of the prompt swapped). Such a
file still does what its original does. So once a challenger's qualifying run would qualify it, the
validator re-runs the earlier submissions of other hotkeys whose code is closest to it
(:func:`behaviour_suspects`: at or above ``BEHAVIOUR_FLOOR``, at most ``BEHAVIOUR_SUSPECTS`` of them) on
the challenger's own qualifying problems, and refuses the challenger as a copy of the first of them,
in chain order, that it acts as (:func:`behaviour_copy`). Code both took from a public agent counts for
neither side of the code similarity, so a variant of a public agent is compared with miners' files only,
and a public agent is never run as an original.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypeVar

from arena.race.events import CopyOf
from arena.submissions.copies import (
    BEHAVIOUR_COPY_THRESHOLD,
    CodeFeatures,
    ProblemTrace,
    acts_as_copy,
    behaviour_similarity,
    code_similarity,
)

BEHAVIOUR_FLOOR: Final = 0.62
"""Code similarity (less the public agents' code) at or above which an earlier submission is re-run on a
challenger's problems: above the closest honest miners' pair measured (0.604, two agents written from one
template) and well under ``COPY_THRESHOLD``, where rewrites of a miner's agent that the code rule lets
through begin (``tests/fixtures/copy_rewrites``, docs/arena-rules.md)."""
BEHAVIOUR_SUSPECTS: Final = 2
"""Earlier submissions re-run per challenger at most: the cost of the check is two qualifying runs, and
only for a challenger that would qualify."""

K = TypeVar("K")


def behaviour_suspects(challenger: CodeFeatures, earlier: Sequence[tuple[K, CodeFeatures]],
                       public: CodeFeatures | None, *, floor: float = BEHAVIOUR_FLOOR,
                       limit: int = BEHAVIOUR_SUSPECTS) -> list[K]:
    """The earlier submissions (``earlier``: other hotkeys' files committed before the challenger, in
    chain order, with their features) to re-run on the challenger's problems: the ``limit`` most
    code-similar to it at or above ``floor``, compared on what each added to the public agents
    (``public``), equal similarities to the earlier commitment; returned in chain order."""
    scored = [(code_similarity(challenger, features, public), position)
              for position, (_, features) in enumerate(earlier)]
    near = sorted(((score, position) for score, position in scored if score >= floor),
                  key=lambda pair: (-pair[0], pair[1]))[:limit]
    return [earlier[position][0] for position in sorted(position for _, position in near)]


def behaviour_copy(later: Sequence[ProblemTrace], originals: Sequence[tuple[CopyOf, Sequence[ProblemTrace]]],
                   threshold: float = BEHAVIOUR_COPY_THRESHOLD) -> CopyOf | None:
    """The original the later submission acts as (:func:`~arena.submissions.copies.acts_as_copy`) on the
    problems both ran, with the behaviour similarity: ``originals`` in chain order, each with its traces on
    the later one's qualifying problems, so near-identical behaviour goes to the earlier commitment;
    ``None`` when it acts as none of them."""
    for original, traces in originals:
        if acts_as_copy(later, traces, threshold):
            similarity = behaviour_similarity(later, traces)
            assert similarity is not None  # acts_as_copy found problems in common
            return original.model_copy(update={"basis": "behaviour", "similarity": round(similarity, 6)})
    return None
