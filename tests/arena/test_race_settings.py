"""ARENA_* settings build the arena's rules (race, weights, judge, leak clusters, suites): each rule is a
nested model whose fields keep their flat names."""

from __future__ import annotations

from datetime import date, time, timedelta
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from arena.judge import FallbackJudge, OfflineJudge
from arena.settings import ArenaSettings
from neurons.validator_service import ValidatorSettings
from shoppingbench.settings import HarnessSettings


def test_defaults_need_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env
    monkeypatch.setenv("ARENA_HOME", str(tmp_path))
    settings = ArenaSettings()
    assert isinstance(settings.judge(), OfflineJudge)
    rules = settings.race_rules
    assert rules.cooldown == timedelta(hours=12) and rules.race_time == time(16)
    assert rules.qualify_ratio == 0.95
    assert (rules.promotion_resamples, rules.promotion_confidence) == (2000, 0.95)
    assert settings.weight_rules.winner_share == 0.6
    assert settings.arena_database_url() == f"sqlite:///{tmp_path / 'arena.sqlite3'}"
    assert settings.race_suite_sizes() == {"product": 50, "shop": 50, "voucher": 50}


def test_environment_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for key, value in {"JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "JUDGE_MODELS": "model-a, model-b",
                       "RACE_TIME_UTC": "09:30", "COOLDOWN_HOURS": "6", "MARGIN_HALF_LIFE_DAYS": "3",
                       "WINNER_SHARE": "0.5", "BURN_UID": "7", "LEAK_SAME_REWARD_JACCARD": "0.7",
                       "RACE_EPOCH": "2026-12-01", "RACE_BURN_DAYS": "90", "DATABASE_URL": "postgresql+psycopg://x@h/db",
                       "PROMOTION_RESAMPLES": "500", "PROMOTION_CONFIDENCE": "0.9"}.items():
        monkeypatch.setenv(f"ARENA_{key}", value)
    settings = ArenaSettings()
    judge = settings.judge()
    assert isinstance(judge, FallbackJudge)
    assert [m.name for m in judge.primary.models] == ["model-a", "model-b"]
    rules = settings.race_rules
    assert rules.race_time == time(9, 30) and rules.cooldown == timedelta(hours=6)
    assert rules.margin.half_life_days == 3
    assert (rules.promotion_resamples, rules.promotion_confidence) == (500, 0.9)
    assert settings.weight_rules.burn_uid == 7 and settings.weight_rules.winner_share == 0.5
    assert settings.leak_clusters.same_reward_jaccard == 0.7
    plan = settings.suite_plan(settings.race_epoch or date.min)
    assert plan.first_day == date(2026, 12, 1) and plan.burn_days == 90 and plan.race_time == time(9, 30)
    assert settings.arena_database_url() == "postgresql+psycopg://x@h/db"


def test_inconsistent_settings_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARENA_WINNER_SHARE", "0.9")
    monkeypatch.setenv("ARENA_TAPER_SHARE", "0.2")
    with pytest.raises(ValueError, match="exceed"):
        ArenaSettings()
    monkeypatch.setenv("ARENA_LEAK_LSH_THRESHOLD", "0.99")
    with pytest.raises(ValueError, match="lsh_threshold"):
        ArenaSettings()


def leaf_paths(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """The paths of the plain fields of ``model``, into its nested models."""
    paths: set[tuple[str, ...]] = set()
    for name, info in model.model_fields.items():
        nested = info.annotation
        if isinstance(nested, type) and issubclass(nested, BaseModel):
            paths |= leaf_paths(nested, (*prefix, name))
        else:
            paths.add((*prefix, name))
    return paths


@pytest.mark.parametrize("root", [HarnessSettings, ArenaSettings, ValidatorSettings],
                         ids=lambda root: root.__name__)
def test_every_field_of_every_nested_model_has_exactly_one_flat_name(root: type[HarnessSettings]) -> None:
    nested = {name for name, info in root.model_fields.items()
              if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)}
    assert set(root.RULE_MODELS) <= nested
    paths = list(root.FLAT_NAMES.values())
    assert len(paths) == len(set(paths))  # no field has two flat names
    expected = {path for name in nested for path in leaf_paths(root.model_fields[name].annotation, (name,))}
    assert set(paths) == expected
    assert not set(root.FLAT_NAMES) & set(root.model_fields)  # a flat name never shadows a field


def test_flat_and_nested_environment_names_set_the_rule_models(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for key, value in {"LEAK_NUM_PERM": "64", "SECURITY_REJECTION_COOLDOWN_HOURS": "2",
                       "UPLOAD_WINDOW_BLOCKS": "20", "MARGIN_FLOOR": "0.02", "TAPER_SHARE": "0.3",
                       "JUDGE_MAX_TOKENS": "1024", "JUDGE_BENCH_S": "0", "SANDBOX_TMP_MB": "32",
                       "INFERENCE_MODELS": "qwen, llama", "INFERENCE_RUN_TOKENS": "9000",
                       "RACE_RULES__QUALIFY_RATIO": "0.9", "WEIGHT_RULES__BURN_UID": "5"}.items():
        monkeypatch.setenv(f"ARENA_{key}", value)
    settings = ArenaSettings()
    assert settings.leak_clusters.num_perm == 64
    rules = settings.race_rules
    assert rules.security_rejection_cooldown == timedelta(hours=2) and rules.upload_window_blocks == 20
    assert rules.margin.floor == 0.02 and rules.qualify_ratio == 0.9
    assert (settings.weight_rules.taper_share, settings.weight_rules.burn_uid) == (0.3, 5)
    assert settings.judge_rules.max_tokens == 1024 and settings.judge_call.bench_s == 0
    assert settings.sandbox_limits.tmp_mb == 32 and settings.allowed_models() == ["qwen", "llama"]
    assert settings.inference_limits.budgets.run_tokens == 9000


def test_a_flat_name_keeps_the_priority_of_where_it_is_given(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("ARENA_COOLDOWN_HOURS=3\nARENA_WINNER_SHARE=0.4\nARENA_SANDBOX_CPU_S=30\n")
    monkeypatch.setenv("ARENA_COOLDOWN_HOURS", "6")
    settings = ArenaSettings(sandbox_cpu_s=40)
    assert settings.race_rules.cooldown_hours == 6  # the environment over .env
    assert settings.weight_rules.winner_share == 0.4  # .env over the default
    assert settings.sandbox_limits.cpu_s == 40  # a flag (keyword) over .env
    assert ArenaSettings(cooldown_hours=8).race_rules.cooldown_hours == 8  # a flag over the environment


def test_flat_keywords_set_the_rule_models_over_their_nested_values(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = ArenaSettings(leak_min_shared_targets=2, margin_initial=0.1, judge_timeout_s=5,
                             inference_attempt_calls=7)
    assert settings.leak_clusters.min_shared_targets == 2 and settings.race_rules.margin.initial == 0.1
    assert settings.judge_call.timeout_s == 5 and settings.inference_limits.budgets.attempt_calls == 7
    # how `arena network-demo --vary` changes one setting of a validator
    varied = settings.with_changes(promotion_resamples="500")
    assert varied.race_rules.promotion_resamples == 500 and varied.race_rules.margin.initial == 0.1
    with pytest.raises(ValidationError, match=r"race_rules\.promotion_resamples"):
        settings.with_changes(promotion_resamples=5)


def test_an_invalid_flat_value_is_refused_naming_its_field(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARENA_LEAK_NUM_PERM", "8")
    with pytest.raises(ValidationError, match=r"leak_clusters\.num_perm\n.*greater than or equal to 16"):
        ArenaSettings()
    with pytest.raises(ValidationError, match=r"race_rules\.cooldown_hours\n.*greater than 0"):
        ArenaSettings(leak_num_perm=64, cooldown_hours=0)
