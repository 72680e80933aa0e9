"""Every documented ``ARENA_*`` name is read by the root settings of the entry points, as is ``.env``."""

from __future__ import annotations

import os
import re
from datetime import date, time
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from arena.chain import ChainSettings
from arena.settings import ArenaSettings
from arena.suites.schedule import ScheduleEntry
from neurons.settings import ResearchSettings
from neurons.validator_service import ValidatorSettings
from shoppingbench.settings import HarnessSettings

REPO = Path(__file__).resolve().parents[2]
ROOTS: tuple[type[HarnessSettings], ...] = (HarnessSettings, ArenaSettings, ChainSettings, ResearchSettings,
                                            ValidatorSettings)
# Documented, but read elsewhere: the teacher's key is named by a training config (``api_key_env``); the
# site's browser tests write the README's screenshots when ARENA_UPDATE_SCREENSHOTS=1 (a test switch).
NOT_SETTINGS = {"ARENA_TEACHER_API_KEY", "ARENA_UPDATE_SCREENSHOTS",
                # read by the worker's serving process only (hf_server), beside its ServingConfig
                "ARENA_SERVING_DTYPE", "ARENA_SERVING_THREADS"}
SCHEDULE = '[{"from_day": "2026-11-16", "version": "sbgen-1"}]'
# name: (value in the environment, the value the settings then hold), none of them a default
SAMPLES: dict[str, tuple[str, Any]] = {
    "ARENA_HOME": ("/srv/arena", Path("/srv/arena")),
    "ARENA_WORLD_PRODUCTS": ("1000", 1000),
    "ARENA_WORLD_SEED": ("3", 3),
    "ARENA_SUITE_PER_CATEGORY": ("2", 2),
    "ARENA_SCORING_PROFILE": ("original", "original"),
    "ARENA_WORKERS": ("2", 2),
    "ARENA_LLM_BASE_URL": ("http://llm:8000/v1", "http://llm:8000/v1"),
    "ARENA_LLM_API_KEY": ("llm-key", SecretStr("llm-key")),
    "ARENA_LLM_MODEL": ("rewriter", "rewriter"),
    "ARENA_LOG_FORMAT": ("console", "console"),
    "ARENA_LOG_LEVEL": ("debug", "debug"),
    "ARENA_LOG_FILE": ("/var/log/arena.log", Path("/var/log/arena.log")),
    "ARENA_LOG_ROTATE": ("daily", "daily"),
    "ARENA_LOG_MAX_MB": ("20", 20.0),
    "ARENA_LOG_BACKUPS": ("5", 5),
    "ARENA_SANDBOX": ("docker", "docker"),
    "ARENA_SANDBOX_TIMEOUT_S": ("90", 90.0),
    "ARENA_SANDBOX_UID_BASE": ("70000", 70_000),
    "ARENA_SANDBOX_DOCKER_IMAGE": ("sandbox:1", "sandbox:1"),
    "ARENA_SANDBOX_CPU_S": ("40", 40.0),
    "ARENA_SANDBOX_MEMORY_MB": ("1024", 1024),
    "ARENA_SANDBOX_PROCESSES": ("64", 64),
    "ARENA_SANDBOX_OUTPUT_KB": ("512", 512),
    "ARENA_SANDBOX_RESULT_MB": ("8", 8),
    "ARENA_SANDBOX_TMP_MB": ("32", 32),
    "ARENA_TOOLS_HOST": ("127.0.0.2", "127.0.0.2"),
    "ARENA_TOOLS_PORT": ("8123", 8123),
    "ARENA_INFERENCE_BASE_URL": ("http://vllm:8000/v1", "http://vllm:8000/v1"),
    "ARENA_INFERENCE_API_KEY": ("inference-key", SecretStr("inference-key")),
    "ARENA_INFERENCE_MODELS": ("model-a,model-b", ["model-a", "model-b"]),
    "ARENA_INFERENCE_MAX_TOKENS": ("512", 512),
    "ARENA_INFERENCE_ATTEMPT_CALLS": ("7", 7),
    "ARENA_INFERENCE_ATTEMPT_TOKENS": ("9000", 9000),
    "ARENA_INFERENCE_ATTEMPT_IN_FLIGHT": ("2", 2),
    "ARENA_INFERENCE_RUN_CALLS": ("70", 70),
    "ARENA_INFERENCE_RUN_TOKENS": ("90000", 90_000),
    "ARENA_INFERENCE_CONCURRENCY": ("4", 4),
    "ARENA_INFERENCE_TOKENS_IN_FLIGHT": ("50000", 50_000),
    "ARENA_INFERENCE_SHARE_WAIT_S": ("30", 30.0),
    "ARENA_STORE_URL": ("postgresql+psycopg://u@db:5432/store", "postgresql+psycopg://u@db:5432/store"),
    "ARENA_DUMPS_DIR": ("/srv/dumps", Path("/srv/dumps")),
    "ARENA_CHAIN": ("finney", "finney"),
    "ARENA_NETUID": ("5", 5),
    "ARENA_CHAIN_DB": ("/srv/chain.sqlite3", Path("/srv/chain.sqlite3")),
    "ARENA_JUDGE_BASE_URL": ("http://judge:8000/v1", "http://judge:8000/v1"),
    "ARENA_JUDGE_MODELS": ("judge-a, judge-b", ["judge-a", "judge-b"]),
    "ARENA_JUDGE_API_KEY": ("judge-key", SecretStr("judge-key")),
    "ARENA_JUDGE_TIMEOUT_S": ("20", 20.0),
    "ARENA_JUDGE_MAX_ROUNDS": ("2", 2),
    "ARENA_JUDGE_BACKOFF_BASE_S": ("0.5", 0.5),
    "ARENA_JUDGE_BACKOFF_CAP_S": ("10", 10.0),
    "ARENA_JUDGE_MAX_TOKENS": ("1024", 1024),
    "ARENA_JUDGE_BENCH_S": ("0", 0.0),
    "ARENA_JUDGE_CONCURRENCY": ("3", 3),
    "ARENA_CONCURRENT_RUNS": ("3", 3),
    "ARENA_INFRA_RETRIES": ("3", 3),
    "ARENA_RACE_RETRY_DEADLINE_HOURS": ("1.5", 1.5),
    "ARENA_LEAK_SAME_REWARD_JACCARD": ("0.8", 0.8),
    "ARENA_LEAK_ANY_REWARD_JACCARD": ("0.9", 0.9),
    "ARENA_LEAK_LSH_THRESHOLD": ("0.5", 0.5),
    "ARENA_LEAK_NUM_PERM": ("64", 64),
    "ARENA_LEAK_MIN_SHARED_TARGETS": ("2", 2),
    "ARENA_CATALOG_DIR": ("/srv/catalog", Path("/srv/catalog")),
    "ARENA_RACE_SUITE_PER_CATEGORY": ("10", 10),
    "ARENA_QUALIFYING_SUITE_PER_CATEGORY": ("5", 5),
    "ARENA_RACE_EPOCH": ("2026-12-01", date(2026, 12, 1)),
    "ARENA_RACE_BURN_DAYS": ("90", 90),
    "ARENA_GENERATOR_SCHEDULE": (SCHEDULE, [ScheduleEntry(from_day=date(2026, 11, 16), version="sbgen-1")]),
    "ARENA_PROBLEM_BANKS": ('{"2026-12-01": "' + "ab" * 32 + '"}', {date(2026, 12, 1): "ab" * 32}),
    "ARENA_DRAND_RELAYS": ("https://relay-a, https://relay-b", ["https://relay-a", "https://relay-b"]),
    "ARENA_HELD_OUT_SEED": ("private", SecretStr("private")),
    "ARENA_DUMP_HELD_OUT_FRACTION": ("0.25", 0.25),
    "ARENA_RACE_TIME_UTC": ("09:30", time(9, 30)),
    "ARENA_COOLDOWN_HOURS": ("6", 6.0),
    "ARENA_SECURITY_REJECTION_COOLDOWN_HOURS": ("2", 2.0),
    "ARENA_UPLOAD_WINDOW_BLOCKS": ("20", 20),
    "ARENA_SUBMISSION_CLOCK_SKEW_S": ("60", 60.0),
    "ARENA_QUALIFY_RATIO": ("0.9", 0.9),
    "ARENA_QUALIFY_MIN_SCORE": ("0.02", 0.02),
    "ARENA_MARGIN_INITIAL": ("0.1", 0.1),
    "ARENA_MARGIN_FLOOR": ("0.02", 0.02),
    "ARENA_MARGIN_HALF_LIFE_DAYS": ("3", 3.0),
    "ARENA_PROMOTION_RESAMPLES": ("500", 500),
    "ARENA_PROMOTION_CONFIDENCE": ("0.9", 0.9),
    "ARENA_WINNER_SHARE": ("0.5", 0.5),
    "ARENA_TAPER_SHARE": ("0.3", 0.3),
    "ARENA_BURN_UID": ("7", 7),
    "ARENA_DATABASE_URL": ("postgresql+psycopg://u@db:5432/arena", "postgresql+psycopg://u@db:5432/arena"),
    "ARENA_PEER_WEIGHT_TOLERANCE": ("0.05", 0.05),
    "ARENA_PEER_CHECK_BLOCKS": ("100", 100),
    "ARENA_PEER_TIMEOUT_S": ("1.5", 1.5),
    "ARENA_WALLET_NAME": ("operator", "operator"),
    "ARENA_WALLET_HOTKEY": ("hot", "hot"),
    "ARENA_WALLET_PATH": ("/wallets", Path("/wallets")),
    "ARENA_TICK_SECONDS": ("30", 30.0),
    "ARENA_API_HOST": ("127.0.0.1", "127.0.0.1"),
    "ARENA_API_PORT": ("9000", 9000),
    "ARENA_EXTERNAL_IP": ("203.0.113.7", "203.0.113.7"),
}


def documented_names() -> set[str]:
    """The ``ARENA_*`` names README.md and docs/*.md give (a trailing ``_`` names a family: skipped)."""
    texts = [path.read_text() for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]]
    return {name for text in texts for name in re.findall(r"ARENA_[A-Z_]+", text) if not name.endswith("_")}


def field(name: str) -> str:
    """The setting an ``ARENA_*`` name sets: a field of the root, or the flat name of a nested one."""
    return name.removeprefix("ARENA_").lower()


def names(root: type[HarnessSettings]) -> set[str]:
    return {*root.model_fields, *root.FLAT_NAMES}


def read(settings: HarnessSettings, name: str) -> Any:
    """The value of the setting ``name``, down its nested path when it is a flat name."""
    value: Any = settings
    for key in type(settings).FLAT_NAMES.get(name, (name,)):
        value = getattr(value, key)
    return value


@pytest.fixture
def clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No ``ARENA_*`` variable from outside, and a working directory without a ``.env``."""
    for name in os.environ:
        if name.startswith("ARENA_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_documented_name_is_a_setting_of_an_entry_point() -> None:
    documented = documented_names() - NOT_SETTINGS
    assert documented and documented <= set(SAMPLES), sorted(documented - set(SAMPLES))
    assert {field(name) for name in SAMPLES} <= set().union(*(names(root) for root in ROOTS))
    defaults = {name: read(ValidatorSettings.model_construct(), field(name)) for name in SAMPLES}
    assert all(defaults[name] != value for name, (_, value) in SAMPLES.items())


@pytest.mark.parametrize("root", ROOTS, ids=lambda root: root.__name__)
def test_each_root_reads_the_documented_names_of_its_sections(root: type[HarnessSettings], clean: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for name, (text, _) in SAMPLES.items():
        monkeypatch.setenv(name, text)
    settings = root()
    mine = {name: value for name, (_, value) in SAMPLES.items() if field(name) in names(root)}
    assert mine and {name: read(settings, field(name)) for name in mine} == mine
    assert settings.home == Path("/srv/arena")


@pytest.mark.parametrize("root", ROOTS, ids=lambda root: root.__name__)
def test_a_dotenv_in_the_working_directory_is_read_below_the_environment_and_flags(
        root: type[HarnessSettings], clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (clean / ".env").write_text("ARENA_HOME=/from/dotenv\nARENA_WORKERS=3\nARENA_STORE_URL=sqlite:///dotenv\n"
                                "ARENA_NETUID=9\nARENA_RACE_TIME_UTC=08:15\nARENA_WALLET_NAME=dotenv\n")
    expected = {"home": Path("/from/dotenv"), "workers": 3, "store_url": "sqlite:///dotenv", "netuid": 9,
                "race_time_utc": time(8, 15), "wallet_name": "dotenv"}
    settings = root()
    mine = {key: value for key, value in expected.items() if key in names(root)}
    assert {key: read(settings, key) for key in mine} == mine
    monkeypatch.setenv("ARENA_WORKERS", "5")
    assert root().workers == 5
    assert root(workers=6).workers == 6
