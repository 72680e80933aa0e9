"""Arena configuration: the judge, suites, race and weights (``ARENA_*``) over the harness and the store.

``ArenaSettings`` composes the arena's own settings with the harness section (which declares ``home``)
and the trajectory store section. As everywhere: CLI flags override environment variables, which override
a ``.env`` file, which overrides these defaults. The rules of the pure modules are nested in it as their
own models (``leak_clusters``, ``race_rules``, ``judge_rules``, ``weight_rules``, with the harness's
``sandbox_limits`` and ``inference_limits``: ``RULE_MODELS``), which declare every default and bound; their
fields keep the flat ``ARENA_*`` names of ``FLAT_NAMES`` (``ARENA_COOLDOWN_HOURS`` ->
``race_rules.cooldown_hours``).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import Field, SecretStr, field_validator

from arena.chain.drand import DEFAULT_RELAYS, DrandBeacon
from arena.judge import FallbackJudge, Judge, JudgeCallConfig, JudgeModel, JudgeRules, LLMJudge, OfflineJudge
from arena.race.calendar import MarginCurve
from arena.race.rules import RaceRules
from arena.suites.bank import QUICKNET_CHAIN_HASH
from arena.suites.clusters import LeakConfig
from arena.suites.generators import BankPins
from arena.suites.ledger import SqlExposureLedger
from arena.suites.public import SuitePlan
from arena.suites.schedule import SHA256_PATTERN, GeneratorSchedule, GeneratorSpec, ScheduleEntry
from arena.weights import WeightRules
from shoppingbench.generator import DEFAULT_VERSION
from shoppingbench.problems.models import CATEGORIES, Category
from shoppingbench.settings import CommaList, FlatNames, HarnessSettings
from trajectories.dumps.splits import SplitRule
from trajectories.settings import StoreSettings


class ArenaSettings(HarnessSettings, StoreSettings):
    RULE_MODELS: ClassVar[tuple[str, ...]] = (
        *HarnessSettings.RULE_MODELS, "leak_clusters", "race_rules", "judge_rules", "weight_rules")
    FLAT_NAMES: ClassVar[FlatNames] = {
        **HarnessSettings.FLAT_NAMES,
        **{f"leak_{name}": ("leak_clusters", name) for name in LeakConfig.model_fields},
        **{name: ("race_rules", name)
           for name in RaceRules.model_fields if name not in ("race_time", "margin")},
        "race_time_utc": ("race_rules", "race_time"),
        **{f"margin_{name}": ("race_rules", "margin", name) for name in MarginCurve.model_fields},
        "judge_max_tokens": ("judge_rules", "max_tokens"),
        **{f"judge_{name}": ("judge_call", name) for name in JudgeCallConfig.model_fields},
        **{name: ("weight_rules", name) for name in WeightRules.model_fields},
    }

    # judge
    judge_base_url: str | None = Field(default=None, description="OpenAI-compatible judge endpoint; "
                                                                 "unset: the offline rules judge")
    judge_models: CommaList = Field(
        default_factory=list, description="Judge models in preference order, comma-separated")
    judge_api_key: SecretStr = SecretStr("not-needed")
    judge_rules: JudgeRules = JudgeRules()
    judge_call: JudgeCallConfig = JudgeCallConfig()
    judge_concurrency: int = Field(default=8, ge=1, description=(
        "Verdicts asked of the judge at once (a remote model: a serial judge caps the attempts per hour)"))
    concurrent_runs: int = Field(default=2, ge=1, description=(
        "Owed runs (qualifying, the defending winner's, race entrants') a validator computes at once; their "
        "sandboxes share ARENA_WORKERS slots, so a finishing run's idle slots go to the next run"))
    inference_concurrency: int | None = Field(default=16, ge=1, description=(
        "Calls the inference provider serves at once, split evenly among the runs computed at once: a run's "
        "calls beyond its share wait at the proxy (docs/runner.md); set it to the provider's capacity"))
    inference_tokens_in_flight: int | None = Field(default=None, ge=1, description=(
        "Tokens the inference provider holds for calls in flight (prompt bound plus max_tokens), split "
        "evenly among the runs computed at once; default: no share of tokens"))
    inference_share_wait_s: float = Field(default=60.0, gt=0, description=(
        "How long a call may wait at the proxy for its run's share of the provider, and how long in all the "
        "calls of one attempt may wait on other runs' load before the attempt is re-run as an outage"))
    # provider outages
    infra_retries: int = Field(default=2, ge=0, description=(
        "Times an attempt the inference provider failed is re-run (and a run whose judge failed for most of "
        "it is judged again) before the run is scored without it"))
    race_retry_deadline_hours: float = Field(default=6.0, ge=0, description=(
        "Hours after a race starts during which its runs wait for those retries"))
    # leak clusters and suites
    leak_clusters: LeakConfig = LeakConfig()
    catalog_dir: Path | None = Field(default=None, description="The catalog races are generated over and "
                                                               "agents search (`arena catalog import`); "
                                                               "default: the bundled sample world")
    race_suite_per_category: int = Field(
        default=50, ge=1, description="150 race problems: the promotion test then sees a lead of about 0.1 "
                                      "(benchmarks/promotion.py; docs/arena-rules.md)")
    qualifying_suite_per_category: int = Field(default=20, ge=1)
    race_epoch: date | None = Field(
        default=None, description="The arena's first race day, shared by every validator of the subnet; "
                                  "default: the first slot after the chain's first block")
    race_burn_days: int = Field(default=365, ge=1, description="Days a public suite's target products stay "
                                                               "out of race suites")
    generator_schedule: list[ScheduleEntry] = Field(
        default_factory=list, description="The generator in force from each race day, as JSON: "
        '[{"from_day": "YYYY-MM-DD", "version": "sbgen-1", "config": {...}, "lexicon_sha256": "..."}, ...], '
        "strictly ordered, the first entry also covering every earlier day; the same on every validator of "
        "the subnet (docs/validator.md); default: the current version with its defaults for every day")
    problem_banks: dict[date, Annotated[str, Field(pattern=SHA256_PATTERN)]] = Field(
        default_factory=dict, description="Race days drawn from a sealed problem bank, as JSON "
        '{"YYYY-MM-DD": "<sha256 of the sealed file>", ...}; each file in <catalog>/banks/<sha256>.json; the '
        "same on every validator of the subnet (docs/validity.md, docs/validator.md); default: none")
    drand_relays: CommaList = Field(
        default_factory=lambda: list(DEFAULT_RELAYS), description="drand HTTP relays that give the round "
        "signatures opening problem banks, comma-separated, tried in order")
    held_out_seed: SecretStr | None = Field(
        default=None, description="Private seed of held-out suites; default: made once under ARENA_HOME")
    dump_held_out_fraction: float = Field(default=0.1, ge=0, le=1, description=(
        "Share of new public leak clusters the exposure ledger holds out of the dumps' train split (by hash "
        "of the cluster id); a cluster's side, once decided, never changes"))
    # race
    race_rules: RaceRules = RaceRules()
    submission_clock_skew_s: float = Field(
        default=30.0, gt=0, le=600, description="How far a signed upload's nonce may be from the validator's "
                                                "clock, ahead or behind (miners' clocks are seconds apart)")
    # weights
    weight_rules: WeightRules = WeightRules()
    database_url: str | None = Field(default=None, description="SQLAlchemy URL of the race log and exposure "
                                                               "ledger; default: SQLite under ARENA_HOME")
    # agreement with the other validators (docs/validator.md)
    peer_weight_tolerance: float = Field(
        default=0.02, ge=0, le=1, description="Largest difference of one uid's weight share at which another "
                                              "validator's weights still agree with ours")
    peer_check_blocks: int = Field(default=0, ge=0, description="Blocks between two looks at the other "
                                                                "validators; 0: once per tempo")
    peer_timeout_s: float = Field(default=3.0, gt=0, le=60,
                                  description="How long a peer's GET /rules may take")

    @field_validator("generator_schedule")
    @classmethod
    def _schedule_ordered(cls, value: list[ScheduleEntry]) -> list[ScheduleEntry]:
        if value:
            GeneratorSchedule(entries=tuple(value))
        return value

    def judge(self) -> Judge:
        """The LLM judge with the offline fallback when an endpoint and models are set, else offline."""
        if not (self.judge_base_url and self.judge_models):
            return OfflineJudge()
        models = [JudgeModel(name=m, base_url=self.judge_base_url, api_key=self.judge_api_key)
                  for m in self.judge_models]
        return FallbackJudge(LLMJudge(models, self.judge_call, rules=self.judge_rules))

    def dump_split_rule(self) -> SplitRule:
        """The side of a cluster a public problem starts in the exposure ledger."""
        return SplitRule(held_out_fraction=self.dump_held_out_fraction)

    def exposure_ledger(self) -> SqlExposureLedger:
        """The exposure ledger in the arena database."""
        return SqlExposureLedger.open(self.arena_database_url(), self.leak_clusters, self.dump_split_rule())

    def race_suite_sizes(self) -> dict[Category, int]:
        return dict.fromkeys(CATEGORIES, self.race_suite_per_category)

    def qualifying_suite_sizes(self) -> dict[Category, int]:
        return dict.fromkeys(CATEGORIES, self.qualifying_suite_per_category)

    def suite_plan(self, first_day: date) -> SuitePlan:
        return SuitePlan(race_per_category=self.race_suite_sizes(),
                         qualifying_per_category=self.qualifying_suite_sizes(),
                         race_time=self.race_rules.race_time, first_day=first_day,
                         burn_days=self.race_burn_days, leak=self.leak_clusters)

    def schedule(self) -> GeneratorSchedule:
        """The generator schedule: the configured entries, else the current version for every day."""
        if not self.generator_schedule:
            return GeneratorSchedule.single(GeneratorSpec(version=DEFAULT_VERSION))
        return GeneratorSchedule(entries=tuple(self.generator_schedule))

    def bank_pins(self) -> BankPins | None:
        """The pinned problem banks with a drand client for their rounds, or ``None`` when none is pinned."""
        if not self.problem_banks:
            return None
        return BankPins(pins=dict(self.problem_banks), race_time=self.race_rules.race_time,
                        signatures=DrandBeacon(QUICKNET_CHAIN_HASH, self.drand_relays))

    def arena_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.root / 'arena.sqlite3'}"
