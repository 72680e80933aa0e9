"""The validator service behind the ``validator`` commands: its settings, its wiring from them and its
work loop. The command line (``neurons.validator``) imports this module only to run a command, so that
``--help`` answers without loading the chain, the SDK or the models.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import structlog
from bittensor import Wallet
from pydantic import Field
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from arena.chain import EMBEDDED_CHAIN, Chain, ChainSection, open_chain
from arena.race import SystemClock
from arena.rules_fingerprint import RulesFingerprint, validator_rules
from arena.settings import ArenaSettings
from arena.stack import ValidatorStack, open_validator_stack
from arena.suites.bank import lexicon_race_warning
from arena.suites.generators import open_scheduled_sources
from arena.validator import (
    ChainSeeds,
    first_race_day,
    open_agent_runner,
    require_registration,
    validator_catalog,
)
from arena.validator.agreement import AgreementReport
from arena.validator.peers import peer_table
from shoppingbench.generator.catalog import CatalogDir
from shoppingbench.sandbox.runner import InferenceProvider, configured_inference

log = structlog.get_logger(__name__)


class ValidatorSettings(ArenaSettings, ChainSection):
    """The validator's root: the arena (harness, store) with the chain section, the wallet, the work loop
    and the public API. Flags > ``ARENA_*`` environment > ``.env`` > defaults."""

    wallet_name: str = Field(default="validator", description="bittensor wallet name")
    wallet_hotkey: str = Field(default="default", description="hotkey of the wallet")
    wallet_path: Path = Field(default=Path("~/.bittensor/wallets"), description="wallets directory")
    tick_seconds: float = Field(default=60.0, gt=0, description="Pause between two ticks of the work loop")
    api_host: str = Field(default="0.0.0.0", description="Interface the public API listens on")
    api_port: int = Field(default=8090, ge=0, le=65_535, description="Port of the public API (0: any free)")
    external_ip: str | None = Field(default=None, description="Address published as this validator's axon "
                                                               "(unset: not published)")


def load_wallet(settings: ValidatorSettings) -> Wallet:
    """The validator's wallet, its hotkey loaded now so that a missing key file stops the start."""
    wallet = Wallet(settings.wallet_name, settings.wallet_hotkey, path=str(settings.wallet_path.expanduser()))
    log.info("validator_wallet", hotkey=wallet.hotkey.ss58_address, network=settings.chain,
             netuid=settings.netuid)
    return wallet


@contextmanager
def open_service(settings: ValidatorSettings, wallet: Wallet, *,
                 inference: InferenceProvider = configured_inference) -> Iterator[ValidatorStack]:
    """Everything ``validator run`` runs, opened from ``settings`` and closed on exit."""
    clock = SystemClock()
    chain = open_chain(settings, clock=clock)
    require_registration(chain, str(wallet.hotkey.ss58_address))
    catalog_dir = validator_catalog(settings, progress=sys.stderr.isatty())
    log.info("validator_catalog", catalog_dir=str(catalog_dir))
    # One opened catalog: the generators and the agents' runs share its engine, fingerprint and writer.
    with CatalogDir(catalog_dir) as catalog, \
            open_scheduled_sources(catalog, settings.schedule(), settings.bank_pins()) as sources, \
            open_agent_runner(settings, catalog, inference=inference) as run_agent, \
            open_validator_stack(settings, chain=chain, wallet=wallet, clock=clock, sources=sources,
                                 run_agent=run_agent, warnings=race_warnings(settings)) as stack:
        log.info("validator_rules", fingerprint=stack.rules.fingerprint, version=stack.rules.version,
                 parts=stack.rules.parts)
        yield stack


def race_warnings(settings: ValidatorSettings) -> list[str]:
    """What the validator logs at start and serves on ``/rules`` about how it races: racing the lexicon
    writer's wording on a real network (:func:`arena.suites.bank.lexicon_race_warning`)."""
    warning = lexicon_race_warning(real_network=settings.chain != EMBEDDED_CHAIN,
                                   banks_pinned=bool(settings.problem_banks))
    return [warning] if warning else []


def tick_forever(service: ValidatorStack, tick_seconds: float, *, once: bool = False) -> None:
    """Tick until interrupted; a failed tick is logged and retried on the next one (the work is resumable)."""
    while True:
        try:
            report = service.validator.tick()
            service.metrics.observe(report)
            service.peers.tick(report.block)  # agreement with the other validators, once per tempo
        except Exception:  # one bad tick must not stop the validator; everything it did is recorded
            service.metrics.failures.inc()
            log.exception("validator_tick_failed")
            if once:
                raise
        if once:
            return
        time.sleep(tick_seconds)


def settings_rules(settings: ValidatorSettings, chain: Chain) -> RulesFingerprint:
    """The rules fingerprint ``validator run`` computes and serves for ``settings`` on ``chain``."""
    catalog_dir = validator_catalog(settings, progress=sys.stderr.isatty())
    plan = settings.suite_plan(first_race_day(settings, ChainSeeds(chain).genesis_time()))
    with open_scheduled_sources(catalog_dir, settings.schedule()) as sources:
        return validator_rules(settings, plan=plan, sources=sources)


def print_peers(console: Console, report: AgreementReport) -> None:
    """The report as ``validator peers`` prints it: a summary, then one row per other validator."""
    console.print(f"validator {report.hotkey} at block {report.block}, rules {report.fingerprint[:16]}…",
                  markup=False)
    if report.stake_share is None:
        why = "this validator has no weights on chain yet" if not report.own_weights else \
            "no other validator has weights on chain"
        console.print(f"weights: nothing to compare ({why})", markup=False)
    else:
        console.print(f"weights: {report.stake_share:.1%} of the compared peers' {report.weighted_by} agree "
                      f"within {report.tolerance:g}; largest difference {report.max_disagreement:.3f} "
                      f"({report.max_disagreement_hotkey})", markup=False)
    console.print(f"rules: {report.other_fingerprints} peer(s) with another fingerprint, "
                  f"{report.unknown_rules} unknown", markup=False)
    table = Table(title="other validators")
    for column in ("hotkey", "uid", "stake", "weights", "rules"):
        table.add_column(column, overflow="fold")
    for row in peer_table(report):
        table.add_row(*(escape(row[column]) for column in ("hotkey", "uid", "stake", "weights", "rules")))
    console.print(table)
