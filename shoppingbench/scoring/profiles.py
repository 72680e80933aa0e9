"""Named scoring profiles: the knobs that differ between the arena and the original benchmark (SPEC 2)."""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

REFERENCE_EMBEDDING_MODEL: Final = "Qwen/Qwen3-Embedding-0.6B"
"""The model behind the reference arena's precomputed ``reward_title_embeddings`` (1024-d).

Both the original ShoppingBench ``rewards/orm.py`` and the reference arena's ``rewards/orm.py`` load
this model, and the arena's suite files carry its vectors.
"""


class ScoringProfile(BaseModel):
    """How strict the title check is, and which model precomputed title vectors must come from."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    title_threshold: float = Field(gt=0, le=1)
    """A title hits when cosine similarity is >= this (SPEC 2: "reaches the threshold")."""
    reference_embedding_model: str = REFERENCE_EMBEDDING_MODEL
    """Precomputed target-title vectors are used only when the embedder's name equals this."""
    production_answers: bool = False
    """Read the answer as the reference arena's production scorer (``ProblemScorer``) does: only a string
    ``product_ids`` answers (a JSON list or a bare number answers nothing) and empty entries are dropped
    (``a,,b,c`` is ``a, b, c``). Otherwise as the original benchmark: an empty entry keeps its position."""
    production_failures: bool = False
    """Fail the whole attempt (every grade 0) where the reference arena's production scoring raises: a
    first step that is not an object, a last step its ``length_reward`` cannot read (see
    :func:`shoppingbench.scoring.answer.production_scorer_fails`). Otherwise such a step only costs its
    share of the format and length credit."""
    production_format: bool = False
    """Grade format as the reference arena's production scorer: each step's ``message`` rendered into
    tags, not its ``content``; a timestamp counts only as a positive JSON number (see
    :mod:`shoppingbench.scoring.format`). Otherwise ``content``, and a non-blank string timestamp counts."""


PRODUCTION_STRICT: Final = ScoringProfile(name="production-strict", title_threshold=0.7,
                                          production_answers=True, production_failures=True,
                                          production_format=True)
"""The arena's scoring (reference arena ``orm.py``: ``sim >= 0.7``; its ``ProblemScorer``'s answers); the
default."""

ORIGINAL: Final = ScoringProfile(name="original", title_threshold=0.5)
"""The published benchmark's scoring (ShoppingBench ``orm.py``: ``sim >= 0.5``)."""

PROFILES: Final[dict[str, ScoringProfile]] = {p.name: p for p in (PRODUCTION_STRICT, ORIGINAL)}


def get_profile(name: str) -> ScoringProfile:
    """The named profile; ``ValueError`` lists the known names otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown scoring profile {name!r}; known: {', '.join(PROFILES)}") from None
