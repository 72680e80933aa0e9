"""ARENA_* settings build the arena's rules (race, weights, judge, leak clusters, suites)."""

from __future__ import annotations

from datetime import date, time, timedelta
from pathlib import Path

import pytest

from arena.judge import FallbackJudge, OfflineJudge
from arena.settings import ArenaSettings


def test_defaults_need_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env
    monkeypatch.setenv("ARENA_HOME", str(tmp_path))
    settings = ArenaSettings()
    assert isinstance(settings.judge(), OfflineJudge)
    rules = settings.race_rules()
    assert rules.cooldown == timedelta(hours=12) and rules.race_time == time(16)
    assert rules.qualify_ratio == 0.95
    assert (rules.promotion_resamples, rules.promotion_confidence) == (2000, 0.95)
    assert settings.weight_rules().winner_share == 0.6
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
    rules = settings.race_rules()
    assert rules.race_time == time(9, 30) and rules.cooldown == timedelta(hours=6)
    assert rules.margin.half_life_days == 3
    assert (rules.promotion_resamples, rules.promotion_confidence) == (500, 0.9)
    assert settings.weight_rules().burn_uid == 7 and settings.weight_rules().winner_share == 0.5
    assert settings.leak_config().same_reward_jaccard == 0.7
    plan = settings.suite_plan(settings.race_epoch or date.min)
    assert plan.first_day == date(2026, 12, 1) and plan.burn_days == 90 and plan.race_time == time(9, 30)
    assert settings.arena_database_url() == "postgresql+psycopg://x@h/db"


def test_inconsistent_settings_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARENA_WINNER_SHARE", "0.9")
    monkeypatch.setenv("ARENA_TAPER_SHARE", "0.2")
    with pytest.raises(ValueError, match="exceed"):
        ArenaSettings().weight_rules()
    monkeypatch.setenv("ARENA_LEAK_LSH_THRESHOLD", "0.99")
    with pytest.raises(ValueError, match="lsh_threshold"):
        ArenaSettings().leak_config()
