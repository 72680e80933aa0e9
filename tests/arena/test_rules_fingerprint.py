"""The rules fingerprint changes with every input that changes suites, scores or weights, one at a time,
and with nothing else; two validators with the same settings get the same one."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

import orjson
import pytest

from arena.race.rules import RaceRules
from arena.rules_fingerprint import (
    RULES_VERSION,
    RulesFingerprint,
    fingerprint_of,
    generator_keys,
    rules_parts,
)
from arena.settings import ArenaSettings
from arena.suites.public import FixedSource
from shoppingbench.problems.models import Category, Problem

EPOCH = date(2026, 11, 16)
GENERATORS = {"0001-01-01": "sbgen-2/catalog-abc/config-def/lexicon-123"}
BASE: dict[str, Any] = {"home": "/nowhere"}


def fingerprint(settings: dict[str, Any], *, epoch: date = EPOCH,
                generators: Mapping[str, str] = GENERATORS) -> RulesFingerprint:
    config = ArenaSettings(**{**BASE, **settings})
    return fingerprint_of(rules_parts(config, plan=config.suite_plan(epoch), generators=generators))


CHANGES: list[tuple[str, dict[str, Any]]] = [
    ("race_suite_sizes", {"race_suite_per_category": 49}),
    ("qualifying_suite_sizes", {"qualifying_suite_per_category": 21}),
    ("burn_days", {"race_burn_days": 300}),
    ("race_slot", {"race_time_utc": "17:00"}),
    ("leak_clusters", {"leak_same_reward_jaccard": 0.8}),
    ("cooldown", {"cooldown_hours": 6}),
    ("qualify_ratio", {"qualify_ratio": 0.9}),
    ("qualify_min_score", {"qualify_min_score": 0.02}),
    ("margin", {"margin_initial": 0.06}),
    ("promotion_test", {"promotion_resamples": 3000}),
    ("scoring_profile", {"scoring_profile": "original"}),
    ("judge_models", {"judge_models": "model-a,model-b"}),
    ("judge_max_tokens", {"judge_max_tokens": 1024}),
    ("weight_rules", {"winner_share": 0.5}),
    ("burn_uid", {"burn_uid": 3}),
    ("sandbox_timeout", {"sandbox_timeout_s": 120}),
    ("sandbox_memory", {"sandbox_memory_mb": 1024}),
    ("sandbox_cpu", {"sandbox_cpu_s": 60}),
    ("inference_models", {"inference_models": "qwen"}),
    ("inference_budget", {"inference_attempt_calls": 50}),
]
UNRELATED: list[tuple[str, dict[str, Any]]] = [
    ("home", {"home": "/elsewhere"}),
    ("api_keys", {"judge_api_key": "secret", "inference_api_key": "other"}),
    ("workers", {"workers": 9}),
    ("logs", {"log_format": "json", "log_level": "debug"}),
    ("store", {"database_url": "sqlite:////tmp/x.sqlite3"}),
    ("judge_retries", {"judge_timeout_s": 5, "judge_max_rounds": 5, "judge_concurrency": 2}),
    ("sandbox_backend_details", {"sandbox_uid_base": 62000, "sandbox_docker_image": "other:1"}),
    ("clock_skew", {"submission_clock_skew_s": 60}),
    ("peers", {"peer_weight_tolerance": 0.1, "peer_check_blocks": 10, "peer_timeout_s": 1}),
]


@pytest.mark.parametrize(("name", "change"), CHANGES, ids=[name for name, _ in CHANGES])
def test_each_input_that_changes_the_rules_changes_the_fingerprint(name: str, change: dict[str, Any]) -> None:
    before, after = fingerprint({}), fingerprint(change)
    assert after.fingerprint != before.fingerprint
    changed = {part for part in before.parts if before.parts[part] != after.parts[part]}
    assert len(changed) == 1, changed  # and its part says which


@pytest.mark.parametrize(("name", "change"), UNRELATED, ids=[name for name, _ in UNRELATED])
def test_settings_that_change_no_outcome_leave_the_fingerprint(name: str, change: dict[str, Any]) -> None:
    assert fingerprint(change) == fingerprint({})


def test_the_epoch_and_the_generators_are_parts() -> None:
    base = fingerprint({})
    later = fingerprint({}, epoch=date(2026, 11, 17))
    upgraded = fingerprint({}, generators={**GENERATORS, "2026-12-01": "sbgen-3/catalog-abc/config-def"})
    other_catalog = fingerprint({}, generators={"0001-01-01": "sbgen-2/catalog-xyz/config-def/lexicon-123"})
    assert len({base.fingerprint, later.fingerprint, upgraded.fingerprint, other_catalog.fingerprint}) == 4
    assert later.parts["race_epoch"] == "2026-11-17"
    assert upgraded.parts["generators"]["2026-12-01"] == "sbgen-3/catalog-abc/config-def"


def test_the_upload_window_is_a_race_rule_of_the_fingerprint() -> None:
    """It decides which block draws a submission's qualifying problems: validators must share it."""
    assert fingerprint({}).parts["race_rules"]["upload_window_blocks"] == RaceRules().upload_window_blocks


def test_the_rules_version_is_hashed_too() -> None:
    parts = fingerprint({}).parts
    assert fingerprint_of(parts, version=RULES_VERSION + 1).fingerprint != fingerprint_of(parts).fingerprint


def test_two_validators_with_the_same_settings_agree_whatever_the_order_of_their_parts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_JUDGE_MODELS", "model-a,model-b")
    first, second = fingerprint({}), fingerprint({})
    assert first == second and first.version == RULES_VERSION
    assert fingerprint_of(dict(reversed(list(first.parts.items())))) == first
    assert len(first.fingerprint) == 64 and int(first.fingerprint, 16) >= 0
    assert orjson.loads(first.model_dump_json())["parts"]["judge_models"] == ["model-a", "model-b"]
    assert first.parts["judge_prompt"].startswith("sha256:")


class KeyedSource:
    def __init__(self, key: str) -> None:
        self.key = key

    def generate(self, seed: str, per_category: Mapping[Category, int], *,
                 exclude_products: Any = frozenset()) -> list[Problem]:
        return []


def test_generator_keys_name_the_key_in_force_from_each_schedule_entry() -> None:
    settings = ArenaSettings(home="/nowhere")
    assert generator_keys(settings, FixedSource(KeyedSource("sbgen-2/abc"))) == {"0001-01-01": "sbgen-2/abc"}
