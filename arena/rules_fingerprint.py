"""The rules fingerprint: one sha256 over every input that changes a validator's suites, scores or weights,
with its parts listed, so two validators (or an operator and a miner) can tell at a glance whether they
run the same rules; and :data:`RULES_VERSION`, the ``version_key`` every ``set_weights`` carries.

The parts are plain JSON values (a long text is shown as its sha256) and the fingerprint hashes them as
canonical JSON (sorted keys, no spaces), so it is the same on every machine for the same settings.
What is hashed and what bumps :data:`RULES_VERSION`: docs/validator.md, "Rules fingerprint and
version_key".
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

import orjson
from pydantic import BaseModel, ConfigDict

from arena.judge.evidence import MIN_REASONING_TOKENS
from arena.judge.prompt import SYSTEM_PROMPT
from arena.judge.score import FULL_CREDIT_QUALITY
from arena.judge.verdict import GATES, QUALITY_LEVELS
from arena.settings import ArenaSettings
from arena.suites.public import SourceSchedule, SuitePlan

RULES_VERSION: Final = 3
"""The project's rules version, sent as ``version_key`` with every ``set_weights``. Bump it with any change
of code that alters suites, scores or weights for the same inputs (an owner pins it as the subnet's
``WeightsVersionKey``, so validators still on older rules are refused).

3: scoring decides as the reference arena's ``ProblemScorer`` does: voucher budgets in float sums, a
malformed or nameless tool call ends its step's answer, an unreadable last step fails the problem, and
the promotion test's resamples are rounded with Python's ``round``."""


class RulesFingerprint(BaseModel):
    """The fingerprint, the rules version it was taken under, and the parts it hashes (name -> value)."""

    model_config = ConfigDict(frozen=True)

    fingerprint: str
    version: int
    parts: dict[str, Any]


def canonical_json(value: Any) -> bytes:
    """``value`` as JSON with sorted keys: the same bytes for equal values on every machine."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def text_digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def generator_keys(settings: ArenaSettings, sources: SourceSchedule) -> dict[str, str]:
    """The key of the generator each entry of the schedule names (version, catalog fingerprint,
    configuration digest and, for versions that word requests with one, the lexicon), by its first day."""
    return {entry.from_day.isoformat(): sources.for_day(entry.from_day).key
            for entry in settings.schedule().entries}


def rules_parts(settings: ArenaSettings, *, plan: SuitePlan, generators: Mapping[str, str]) -> dict[str, Any]:
    """Every input that changes suites, scores or weights, by name, as JSON values: each rule model of the
    settings whole (``ArenaSettings.RULE_MODELS``, so a field added to one is hashed), the suites' plan and
    generators, and the judge's fixed prompt and gates."""
    return {
        **{name: getattr(settings, name).model_dump(mode="json") for name in settings.RULE_MODELS},
        "generators": dict(generators),
        "problem_banks": {day.isoformat(): sha256 for day, sha256 in sorted(settings.problem_banks.items())},
        "race_epoch": plan.first_day.isoformat(),
        "suite_sizes": {"race": dict(plan.race_per_category),
                        "qualifying": dict(plan.qualifying_per_category)},
        "burn_days": plan.burn_days,
        "scoring_profile": settings.scoring_profile,
        "judge_models": list(settings.judge_models),
        "judge_prompt": text_digest(SYSTEM_PROMPT),
        "judge_gates": {"gates": list(GATES), "quality_levels": list(QUALITY_LEVELS),
                        "min_reasoning_tokens": MIN_REASONING_TOKENS,
                        "full_credit_quality": FULL_CREDIT_QUALITY},
    }


def fingerprint_of(parts: Mapping[str, Any], *, version: int = RULES_VERSION) -> RulesFingerprint:
    """The sha256 of the canonical JSON of ``parts`` and ``version``."""
    plain = orjson.loads(canonical_json(dict(parts)))
    digest = hashlib.sha256(canonical_json({"parts": plain, "version": version})).hexdigest()
    return RulesFingerprint(fingerprint=digest, version=version, parts=plain)


def validator_rules(settings: ArenaSettings, *, plan: SuitePlan, sources: SourceSchedule) -> RulesFingerprint:
    """The fingerprint of a validator generating ``plan``'s suites with ``sources`` under ``settings``."""
    return fingerprint_of(rules_parts(settings, plan=plan, generators=generator_keys(settings, sources)))

