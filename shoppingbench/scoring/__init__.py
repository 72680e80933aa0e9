"""Scoring agent attempts: the one library every caller (miner test, validator, training worker) uses.

``score_attempt`` grades one dialogue against one problem (SPEC 2); ``aggregate`` turns a suite's
attempt scores into the success rate and its companions.
"""

from shoppingbench.scoring.answer import extract_answer, length_score
from shoppingbench.scoring.attempt import AttemptScore, ProductLookup, score_attempt
from shoppingbench.scoring.budget import fits_budget, price_after_voucher
from shoppingbench.scoring.embedder import (
    MINILM_MODEL_NAME,
    CachedEmbedder,
    MiniLMEmbedder,
    TitleEmbedder,
    normalise,
)
from shoppingbench.scoring.format import format_score, is_well_formed, step_format
from shoppingbench.scoring.profiles import (
    ORIGINAL,
    PRODUCTION_STRICT,
    PROFILES,
    REFERENCE_EMBEDDING_MODEL,
    ScoringProfile,
    get_profile,
)
from shoppingbench.scoring.rules import FieldTally, TargetScore, judge_target, sku_attr_hits
from shoppingbench.scoring.suite import CategoryScore, SuiteScore, aggregate

__all__ = [
    "MINILM_MODEL_NAME",
    "ORIGINAL",
    "PRODUCTION_STRICT",
    "PROFILES",
    "REFERENCE_EMBEDDING_MODEL",
    "AttemptScore",
    "CachedEmbedder",
    "CategoryScore",
    "FieldTally",
    "MiniLMEmbedder",
    "ProductLookup",
    "ScoringProfile",
    "SuiteScore",
    "TargetScore",
    "TitleEmbedder",
    "aggregate",
    "extract_answer",
    "fits_budget",
    "format_score",
    "get_profile",
    "is_well_formed",
    "judge_target",
    "length_score",
    "normalise",
    "price_after_voucher",
    "score_attempt",
    "sku_attr_hits",
    "step_format",
]
