"""The rules fingerprint changes with every input that changes suites, scores or weights, one at a time,
and with nothing else; two validators with the same settings get the same one. Every setting of every
entry point is classified: a field of a rule model (hashed whole), hashed in a part of its own, hashed as
the generator keys, or operational."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

import orjson
import pytest

from arena.chain import ChainSettings
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
from neurons.settings import ResearchSettings
from neurons.validator_service import ValidatorSettings
from shoppingbench.problems.models import Category, Problem
from shoppingbench.settings import HarnessSettings

EPOCH = date(2026, 11, 16)
GENERATORS = {"0001-01-01": "sbgen-2/catalog-abc/config-def/lexicon-123"}
BASE: dict[str, Any] = {"home": "/nowhere", "_env_file": None}


def fingerprint(settings: dict[str, Any], *, epoch: date = EPOCH,
                generators: Mapping[str, str] = GENERATORS) -> RulesFingerprint:
    """The fingerprint of a validator whose settings are ``settings`` over ``BASE`` (the widest root, so
    every setting of every entry point can be changed)."""
    config = ValidatorSettings(**{**BASE, **settings})
    return fingerprint_of(rules_parts(config, plan=config.suite_plan(config.race_epoch or epoch),
                                      generators=generators))


# One other valid value for each flat name of a rule model's field: a field added to a rule model needs
# one here (test_every_field_of_every_rule_model_has_a_change).
RULE_CHANGES: dict[str, Any] = {
    "sandbox_timeout_s": 120, "sandbox_cpu_s": 60, "sandbox_memory_mb": 1024, "sandbox_processes": 64,
    "sandbox_output_kb": 512, "sandbox_result_mb": 8, "sandbox_tmp_mb": 32,
    "inference_models": "qwen", "inference_max_tokens": 1024, "inference_attempt_calls": 50,
    "inference_attempt_tokens": 9000, "inference_attempt_in_flight": 2, "inference_run_calls": 70,
    "inference_run_tokens": 90_000,
    "leak_same_reward_jaccard": 0.8, "leak_any_reward_jaccard": 0.9, "leak_lsh_threshold": 0.5,
    "leak_num_perm": 64, "leak_min_shared_targets": 2,
    "cooldown_hours": 6, "security_rejection_cooldown_hours": 2, "upload_window_blocks": 20,
    "qualify_ratio": 0.9, "qualify_min_score": 0.02, "race_time_utc": "17:00", "margin_initial": 0.06,
    "margin_floor": 0.02, "margin_half_life_days": 3, "promotion_resamples": 3000,
    "promotion_confidence": 0.9,
    "judge_max_tokens": 1024,
    "winner_share": 0.5, "taper_share": 0.3, "burn_uid": 3,
}
# Settings outside the rule models hashed in a part of their own: setting -> (part, another value).
HASHED_SETTINGS: dict[str, tuple[str, Any]] = {
    "scoring_profile": ("scoring_profile", "original"),
    "judge_models": ("judge_models", "model-a,model-b"),
    "race_suite_per_category": ("suite_sizes", 49),
    "qualifying_suite_per_category": ("suite_sizes", 21),
    "race_burn_days": ("burn_days", 300),
    "race_epoch": ("race_epoch", "2026-11-17"),
    "problem_banks": ("problem_banks", {"2026-12-01": "ab" * 32}),
}
# Settings that choose the generators or the catalog they draw from: hashed as the generator keys (version,
# configuration, catalog fingerprint: generator_keys), which the validator computes from its sources.
HASHED_AS_GENERATOR_KEYS = {"generator_schedule", "catalog_dir", "world_products", "world_seed"}
# Operational settings: where things are, how fast, how often, how patient, what is logged. None of them
# changes a suite, a score or a weight, so validators may differ in them: setting -> another value.
OPERATIONAL: dict[str, Any] = {
    "home": "/elsewhere", "dumps_dir": "/srv/dumps", "store_url": "sqlite:////tmp/store.sqlite3",
    "database_url": "sqlite:////tmp/x.sqlite3", "chain_db": "/srv/chain.sqlite3",
    "suite_per_category": 3,  # the demo suite of `arena demo` and `miner test`, never a validator's
    "tools_host": "127.0.0.2", "tools_port": 8123, "workers": 9, "concurrent_runs": 3,
    "llm_api_key": "secret", "judge_api_key": "secret", "inference_api_key": "other",
    # reword the sample world's bundled problems (`arena demo`, `miner test`), not its catalog
    "llm_base_url": "http://llm:8000/v1", "llm_model": "rewriter",
    "log_format": "json", "log_level": "debug", "log_file": "/tmp/arena.log", "log_rotate": "daily",
    "log_max_mb": 20, "log_backups": 5,
    "sandbox": "docker", "sandbox_uid_base": 62_000, "sandbox_docker_image": "other:1",  # same limits
    "inference_base_url": "http://127.0.0.1:9/v1", "inference_concurrency": 4,
    "inference_tokens_in_flight": 50_000, "inference_share_wait_s": 30,
    "judge_base_url": "http://127.0.0.1:9/v1", "judge_concurrency": 2,
    "judge_call": {"timeout_s": 5, "max_rounds": 5, "backoff_base_s": 0.5, "backoff_cap_s": 10, "bench_s": 0},
    "infra_retries": 3, "race_retry_deadline_hours": 1.5,  # outages: re-runs of what the provider failed
    "drand_relays": "https://relay-a",  # where the same round signatures are fetched
    "held_out_seed": "private",  # every validator's held-out suites are its own
    "dump_held_out_fraction": 0.25,  # the dumps' train split, not a suite
    "submission_clock_skew_s": 60,  # how far a signed upload's clock may be off
    "peer_weight_tolerance": 0.1, "peer_check_blocks": 10, "peer_timeout_s": 1,
    "chain": "finney", "netuid": 5, "wallet_name": "operator", "wallet_hotkey": "hot",
    "wallet_path": "/wallets",
    "tick_seconds": 30, "api_host": "127.0.0.1", "api_port": 9000, "external_ip": "203.0.113.7",
}
ROOTS: tuple[type[HarnessSettings], ...] = (HarnessSettings, ArenaSettings, ChainSettings, ResearchSettings,
                                            ValidatorSettings)


@pytest.mark.parametrize("root", ROOTS, ids=lambda root: root.__name__)
def test_every_setting_is_a_rule_model_hashed_or_operational(root: type[HarnessSettings]) -> None:
    """A new setting fails here until it is put in a rule model or classified above."""
    rule_models = set(ValidatorSettings.RULE_MODELS)
    groups = [rule_models, set(HASHED_SETTINGS), HASHED_AS_GENERATOR_KEYS, set(OPERATIONAL)]
    assert sum(len(group) for group in groups) == len(set().union(*groups))  # each setting in one group
    unclassified = set(root.model_fields) - set().union(*groups)
    assert not unclassified, sorted(unclassified)
    assert set(root.RULE_MODELS) <= set(root.model_fields)


def test_every_field_of_every_rule_model_has_a_change() -> None:
    rule_models = set(ValidatorSettings.RULE_MODELS)
    assert set(RULE_CHANGES) == {flat for flat, path in ValidatorSettings.FLAT_NAMES.items()
                                 if path[0] in rule_models}


@pytest.mark.parametrize("flat", RULE_CHANGES)
def test_each_field_of_each_rule_model_changes_the_fingerprint_in_its_part(flat: str) -> None:
    before, after = fingerprint({}), fingerprint({flat: RULE_CHANGES[flat]})
    assert after.fingerprint != before.fingerprint
    changed = {part for part in before.parts if before.parts[part] != after.parts[part]}
    assert changed == {ValidatorSettings.FLAT_NAMES[flat][0]}


@pytest.mark.parametrize("setting", HASHED_SETTINGS)
def test_each_hashed_setting_changes_the_fingerprint_in_its_part(setting: str) -> None:
    part, value = HASHED_SETTINGS[setting]
    before, after = fingerprint({}), fingerprint({setting: value})
    assert after.fingerprint != before.fingerprint
    assert {name for name in before.parts if before.parts[name] != after.parts[name]} == {part}


@pytest.mark.parametrize("setting", OPERATIONAL)
def test_operational_settings_leave_the_fingerprint(setting: str) -> None:
    changed = ValidatorSettings(**{**BASE, setting: OPERATIONAL[setting]})
    assert getattr(changed, setting) != getattr(ValidatorSettings(**BASE), setting)  # a real change
    assert fingerprint({setting: OPERATIONAL[setting]}) == fingerprint({})


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
    scheduled = ArenaSettings(home="/nowhere", generator_schedule=[
        {"from_day": "2026-11-16", "version": "sbgen-1"}, {"from_day": "2026-12-01", "version": "sbgen-2"}])
    keys = generator_keys(scheduled, FixedSource(KeyedSource("sbgen-2/abc")))
    assert set(keys) == {"2026-11-16", "2026-12-01"}
