"""Build a validator from settings: ``validator_catalog`` (the catalog it serves and generates its suites
over, with the generators of its schedule: ``arena.suites.generators``), ``open_agent_runner`` (what runs
agents: catalog, inference endpoint, grader, sandbox; ``catalog_agent_runner`` over an open catalog, as
``miner test`` runs them too) and ``open_validator`` (one validator: trajectory store, race log,
generated suites), which ``arena.stack`` joins to its submission gate and public API."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import date, datetime, timedelta
from pathlib import Path

import structlog
from bittensor import Wallet

from arena.chain import Chain, ChainError
from arena.chain.btcli import register_command
from arena.judge import Judge
from arena.race import Clock, RaceEngine, SqlEventStore, race_slot
from arena.settings import ArenaSettings
from arena.storage import open_database
from arena.submissions.store import FileStore
from arena.suites import SqlExposureLedger
from arena.suites.public import PublicSuites, SourceSchedule, SuiteCache
from arena.validator.daily_dumps import DailyDumps
from arena.validator.runs import RunAgent, SuiteRun
from arena.validator.seeds import ChainSeeds
from arena.validator.service import Validator, ValidatorConfig
from shoppingbench.catalog_dir import catalog_exists
from shoppingbench.generator.catalog import CatalogDir, opened_catalog_dir
from shoppingbench.grading.grader import Grader
from shoppingbench.problems.models import Problem
from shoppingbench.proxy import InferenceConfig
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import configured_sample_world
from shoppingbench.sandbox.budget import SlotBudget
from shoppingbench.sandbox.runner import (
    AgentFile,
    InferenceProvider,
    SandboxConfig,
    configured_inference,
    iter_attempts,
)
from shoppingbench.search.base import SearchEngine
from trajectories.store import TrajectoryStore

log = structlog.get_logger(__name__)


def agent_files_dir(settings: ArenaSettings) -> Path:
    """Where the submission gate keeps accepted files and the validator reads them."""
    return settings.root / "agents"


def validator_catalog(settings: ArenaSettings, *, progress: bool = False) -> Path:
    """The catalog a validator serves and generates its suites over: ``ARENA_CATALOG_DIR`` (an imported
    ShoppingBench catalog), else the bundled sample world, built on first use."""
    if settings.catalog_dir is not None:
        catalog_dir = settings.catalog_dir.expanduser()
        if not catalog_exists(catalog_dir):
            raise FileNotFoundError(f"no catalog at {catalog_dir}: import one with `arena catalog import "
                                    f"documents.jsonl.gz --catalog-dir {catalog_dir}`, or unset "
                                    "ARENA_CATALOG_DIR to use the bundled sample world")
        return catalog_dir
    return configured_sample_world(settings, progress=progress).catalog_dir


def first_race_day(settings: ArenaSettings, genesis: datetime) -> date:
    """``ARENA_RACE_EPOCH``, else the first day whose race slot comes after the chain's first block."""
    if settings.race_epoch is not None:
        return settings.race_epoch
    day = genesis.date()
    return day if race_slot(day, settings.race_rules.race_time) > genesis else day + timedelta(days=1)


def sandbox_runner(engine: SearchEngine, grader: Grader, *, inference: InferenceConfig,
                   sandbox: SandboxConfig, workers: int, budget: SlotBudget | None = None) -> RunAgent:
    """Each run on up to ``workers`` slots; runs that overlap (``ARENA_CONCURRENT_RUNS``) share
    ``budget``'s sandboxes, so a finishing run's slots go to the next instead of idling."""
    def run(agent: AgentFile, problems: Sequence[Problem], run_id: str) -> Iterator[AttemptRecord]:
        return iter_attempts(agent, problems, engine, grader, inference=inference, sandbox=sandbox,
                             workers=workers, run_id=run_id, budget=budget)
    return run


def shared_provider(endpoint: InferenceConfig, settings: ArenaSettings) -> InferenceConfig:
    """``endpoint`` with the capacity its runs share (``ARENA_INFERENCE_CONCURRENCY``,
    ``ARENA_INFERENCE_TOKENS_IN_FLIGHT``, ``ARENA_INFERENCE_SHARE_WAIT_S``): runs computed at once each get
    an even share of it at the proxy (``shoppingbench.proxy.shares``). A capacity the endpoint states
    itself (a test double) stands."""
    return endpoint.model_copy(update={
        "concurrency": endpoint.concurrency if endpoint.concurrency is not None
        else settings.inference_concurrency,
        "tokens_in_flight": endpoint.tokens_in_flight if endpoint.tokens_in_flight is not None
        else settings.inference_tokens_in_flight,
        "share_wait_s": settings.inference_share_wait_s})


@contextmanager
def catalog_agent_runner(settings: ArenaSettings, engine: SearchEngine, *,
                         inference: InferenceProvider = configured_inference) -> Iterator[RunAgent]:
    """Agents run over the open catalog ``engine`` in the configured sandbox, graded by the production
    grader, calling the endpoint ``inference`` opens (the configured one; an entry point may inject a test
    double) while the block runs."""
    with inference(settings) as opened:
        endpoint = shared_provider(opened, settings)
        grader = Grader.from_settings(engine.get_products, settings)
        # ARENA_WORKERS caps the host's sandboxes across every run at once, not per run.
        yield sandbox_runner(engine, grader, inference=endpoint,
                             sandbox=SandboxConfig.from_settings(settings), workers=settings.workers,
                             budget=SlotBudget(settings.workers))


@contextmanager
def open_agent_runner(settings: ArenaSettings, catalog: CatalogDir | Path, *,
                      inference: InferenceProvider = configured_inference) -> Iterator[RunAgent]:
    """:func:`catalog_agent_runner` over ``catalog``'s engine while the block runs: a directory opened
    here and closed after it, a :class:`CatalogDir` shared with the caller (e.g. with the generators)."""
    with ExitStack() as stack:
        opened = stack.enter_context(opened_catalog_dir(catalog))
        yield stack.enter_context(catalog_agent_runner(settings, opened.engine, inference=inference))


def open_validator(*, settings: ArenaSettings, chain: Chain, wallet: Wallet, clock: Clock,
                   sources: SourceSchedule, run_agent: RunAgent, store: TrajectoryStore,
                   judge: Judge | None = None) -> Validator:
    """A validator over the arena database and trajectory store named by ``settings`` (created on first
    use, resumed after that), generating each day's suites with the generator ``sources`` names for the day,
from ``chain``'s race seeds."""
    arena_db = open_database(settings.arena_database_url())
    seeds = ChainSeeds(chain)
    plan = settings.suite_plan(first_race_day(settings, seeds.genesis_time()))
    suites = PublicSuites(sources, plan=plan, seed_at=seeds.seed_at, cache=SuiteCache(arena_db))
    race = RaceEngine(SqlEventStore(arena_db), settings.race_rules, clock)
    ledger = SqlExposureLedger(arena_db, settings.leak_clusters, settings.dump_split_rule())
    runs = SuiteRun(store=store, run_agent=run_agent, judge=judge or settings.judge(),
                    validator=str(wallet.hotkey.ss58_address), leak_config=settings.leak_clusters,
                    infra_retries=settings.infra_retries, judge_concurrency=settings.judge_concurrency,
                    ledger_clusters=ledger.clusters_of)
    # Only an operator who names the dumps folder has the validator export: the default folder is for
    # `dump export` by hand.
    dumps = (DailyDumps(store=store, splits=ledger.splits, root=settings.dumps_dir.expanduser())
             if settings.dumps_dir is not None else None)
    return Validator(chain=chain, wallet=wallet, race=race, ledger=ledger,
                     arena_db=arena_db, files=FileStore(agent_files_dir(settings)), runs=runs, suites=suites,
                     seed_after=seeds.after_block,
                     config=ValidatorConfig(
                         weight_rules=settings.weight_rules,
                         race_retry_deadline=timedelta(hours=settings.race_retry_deadline_hours),
                         concurrent_runs=settings.concurrent_runs),
                     dumps=dumps)


def require_registration(chain: Chain, hotkey: str) -> None:
    """Refuse to start a validator the chain does not know; warn when it cannot set weights yet."""
    neuron = chain.metagraph().neuron(hotkey)
    if neuron is None:
        raise ChainError(f"the validator's hotkey {hotkey} is not registered on subnet {chain.netuid}: "
                         f"register it first (on a Bittensor network: `{register_command(chain.netuid)}` "
                         f"with this wallet's names), or check --wallet-name/--wallet-hotkey")
    if not neuron.validator_permit:
        log.warning("validator_without_permit", uid=neuron.uid, hotkey=hotkey,
                    hint="the chain refuses weights without a validator permit: stake to this hotkey; "
                         "the validator still ingests, races and serves its API meanwhile")
