"""Build a ``Validator`` from settings and the pieces that differ between a test and a deployment
(the chain, the clock, the problem bank, how agents are run)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from bittensor import Wallet

from arena.chain import Chain
from arena.judge import Judge
from arena.race import Clock, RaceEngine, SqlEventStore
from arena.settings import ArenaSettings
from arena.storage import open_database
from arena.submissions.store import FileStore
from arena.suites import ProblemBank, Provenance, SqlExposureLedger, SuiteRotation, cluster_problems
from arena.validator.runs import RunAgent, SuiteRun
from arena.validator.seeds import RaceSeeds
from arena.validator.service import Validator, ValidatorConfig
from shoppingbench.evaluation import Grader
from shoppingbench.problems.models import Problem
from shoppingbench.proxy import InferenceConfig
from shoppingbench.records import AttemptRecord
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig, iter_attempts
from shoppingbench.search.base import SearchEngine
from trajectories.store import TrajectoryStore


def agent_files_dir(settings: ArenaSettings) -> Path:
    """Where the submission gate keeps accepted files and the validator reads them."""
    return settings.root / "agents"


def sandbox_runner(engine: SearchEngine, grader: Grader, *, inference: InferenceConfig,
                   sandbox: SandboxConfig, workers: int) -> RunAgent:
    def run(agent: AgentFile, problems: Sequence[Problem], run_id: str) -> Iterator[AttemptRecord]:
        return iter_attempts(agent, problems, engine, grader, inference=inference, sandbox=sandbox,
                             workers=workers, run_id=run_id)
    return run


def open_validator(*, settings: ArenaSettings, chain: Chain, wallet: Wallet, clock: Clock,
                   bank: Sequence[Problem], bank_source: str, run_agent: RunAgent, seeds: RaceSeeds,
                   store: TrajectoryStore, judge: Judge | None = None) -> Validator:
    """A validator over the arena database and trajectory store named by ``settings`` (created on first
    use, resumed after that)."""
    arena_db = open_database(settings.arena_database_url())
    problems = ProblemBank()
    problems.add(bank, Provenance(source=bank_source, added_at=clock.now()))
    ordered = problems.problems()
    clusters = cluster_problems(ordered, settings.leak_config())
    race = RaceEngine(SqlEventStore(arena_db), settings.race_rules(), clock)
    runs = SuiteRun(store=store, run_agent=run_agent, judge=judge or settings.judge(),
                    validator=str(wallet.hotkey.ss58_address), leak_clusters=clusters.cluster_of)
    config = ValidatorConfig(bank_version=problems.version,
                             qualifying_per_category=settings.qualifying_suite_sizes(),
                             race_per_category=settings.race_suite_sizes(),
                             weight_rules=settings.weight_rules())
    return Validator(chain=chain, wallet=wallet, race=race, ledger=SqlExposureLedger(arena_db),
                     arena_db=arena_db, files=FileStore(agent_files_dir(settings)), runs=runs, bank=ordered,
                     clusters=clusters,
                     rotation=SuiteRotation(ordered, clusters, settings.rotation_config()), seeds=seeds,
                     config=config)
