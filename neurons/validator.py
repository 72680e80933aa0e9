"""``validator``: the validator service. Wiring only; the work is in ``arena.validator``.

``validator run`` logs the rules fingerprint it runs, ticks the work loop (sync the metagraph, ingest
uploads, qualifying and race runs, weights each tempo) every ``--tick-seconds`` and serves the public API,
the leaderboard, ``/rules``, ``/metrics`` and ``/health`` on ``--api-host:--api-port``, with
``POST /submissions`` for miners' uploads. ``validator peers`` shows how far this validator agrees with
the others on the subnet (their weights on chain, their ``/rules``), as ``validator run`` checks it every
tempo.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
import structlog
import typer
from bittensor import Wallet
from pydantic import Field
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from arena.chain import AxonInfo, Chain, ChainError, ChainSection, open_chain
from arena.race import SystemClock
from arena.rules_fingerprint import RulesFingerprint, validator_rules
from arena.settings import ArenaSettings
from arena.stack import ValidatorStack, open_validator_stack
from arena.suites import ScheduleError
from arena.suites.generators import open_scheduled_sources
from arena.validator import (
    ChainSeeds,
    first_race_day,
    open_agent_runner,
    require_registration,
    validator_catalog,
)
from arena.validator.agreement import AgreementReport
from arena.validator.held_out import check_held_out, create_held_out, held_out_dir
from arena.validator.peers import check_peers, peer_table
from neurons import options
from shoppingbench.doubles.scripted_inference import scripted_inference
from shoppingbench.logs import LogFile, configure_logging
from shoppingbench.problems.held_out import DEFAULT_NAME
from shoppingbench.problems.models import CATEGORIES
from shoppingbench.sandbox.runner import InferenceProvider, configured_inference
from shoppingbench.tools.serving import running_server

app = typer.Typer(help="Run a shopping-arena validator: races, scoring, weights, public API.",
                  no_args_is_help=True)
log = structlog.get_logger(__name__)

EXIT_DISAGREE = 3
EXIT_CHAIN = 5
EXIT_SCHEDULE = 6

RaceEpochOption = Annotated[datetime | None, typer.Option(
    formats=["%Y-%m-%d"], help="The arena's first race day, the same for every validator of the subnet "
                               "(ARENA_RACE_EPOCH; default: the first slot after the chain's first block)")]
WalletNameOption = Annotated[str | None, typer.Option(*options.WALLET_NAME_FLAGS,
                                                      help="Wallet name (ARENA_WALLET_NAME)")]
WalletHotkeyOption = Annotated[str | None, typer.Option(*options.WALLET_HOTKEY_FLAGS,
                                                        help="Hotkey name (ARENA_WALLET_HOTKEY)")]
WalletPathOption = Annotated[Path | None, typer.Option(*options.WALLET_PATH_FLAGS,
                                                       help="Wallets directory (ARENA_WALLET_PATH)")]
ScheduleOption = Annotated[str | None, typer.Option(
    help="The generator schedule as JSON, the same on every validator of the subnet "
         '(ARENA_GENERATOR_SCHEDULE; e.g. \'[{"from_day": "2026-11-16", "version": "sbgen-1"}]\'; '
         "default: the current generator for every day; docs/validator.md)")]


def parse_schedule(text: str | None) -> Any:
    """The ``--generator-schedule`` flag's JSON, or ``None`` when it is not given."""
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise typer.BadParameter(f"not JSON: {exc}", param_hint="--generator-schedule") from None


class ValidatorSettings(ArenaSettings, ChainSection):
    """The validator's root: the arena (harness, store) with the chain section, the wallet, the work loop
    and the public API. Flags > ``ARENA_*`` environment > ``.env`` > defaults."""

    log_format: Literal["console", "json"] = "json"
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
    with open_scheduled_sources(catalog_dir, settings.schedule(), settings.bank_pins()) as sources, \
            open_agent_runner(settings, catalog_dir, inference=inference) as run_agent, \
            open_validator_stack(settings, chain=chain, wallet=wallet, clock=clock, sources=sources,
                                 run_agent=run_agent) as stack:
        log.info("validator_rules", fingerprint=stack.rules.fingerprint, version=stack.rules.version,
                 parts=stack.rules.parts)
        yield stack


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


@app.callback()
def _commands() -> None:
    """Run a shopping-arena validator: races, scoring, weights, public API."""


@app.command("run")
def run(
    home: options.HomeOption = None,
    chain: options.ChainOption = None,
    netuid: options.NetuidOption = None,
    catalog_dir: Annotated[Path | None, typer.Option(
        "--catalog", help="Catalog directory from `arena catalog import` that suites are generated over and "
                          "agents search (ARENA_CATALOG_DIR; default: the bundled sample world)")] = None,
    race_epoch: RaceEpochOption = None,
    wallet_name: WalletNameOption = None,
    wallet_hotkey: WalletHotkeyOption = None,
    wallet_path: WalletPathOption = None,
    tick_seconds: Annotated[float | None, typer.Option(help="Tick pause (ARENA_TICK_SECONDS)")] = None,
    api_host: Annotated[str | None, typer.Option(help="API interface (ARENA_API_HOST)")] = None,
    api_port: Annotated[int | None, typer.Option(help="API port, 0 for any (ARENA_API_PORT)")] = None,
    external_ip: Annotated[str | None, typer.Option(
        help="Publish this address with the API port as the axon (ARENA_EXTERNAL_IP)")] = None,
    generator_schedule: ScheduleOption = None,
    once: Annotated[bool, typer.Option("--once", help="One tick, then exit (cron, tests)")] = False,
    scripted_llm: Annotated[bool, typer.Option(
        "--scripted-llm", help="Agents' LLM is the bundled scripted shopping policy (a test double): "
                               "for demos without an inference endpoint")] = False,
) -> None:
    """Run the validator: work loop plus public API (leaderboard at /, /health, /metrics, /docs)."""
    overrides: dict[str, Any] = {"home": home, "chain": chain, "netuid": netuid, "catalog_dir": catalog_dir,
                                 "race_epoch": race_epoch.date() if race_epoch else None,
                                 "wallet_name": wallet_name,
                                 "wallet_hotkey": wallet_hotkey, "wallet_path": wallet_path,
                                 "tick_seconds": tick_seconds, "api_host": api_host, "api_port": api_port,
                                 "external_ip": external_ip,
                                 "generator_schedule": parse_schedule(generator_schedule)}
    settings = ValidatorSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings.log_format, settings.log_level, file=LogFile.from_settings(settings))
    try:
        wallet = load_wallet(settings)
    except OSError as exc:
        typer.echo(f"error: cannot load the validator's hotkey: {exc}: create the wallet (`btcli wallet "
                   "create`) or pass --wallet-name, --wallet-hotkey and --wallet-path", err=True)
        raise typer.Exit(EXIT_CHAIN) from exc
    try:
        inference = scripted_inference if scripted_llm else configured_inference
        with open_service(settings, wallet, inference=inference) as service:
            if once:
                tick_forever(service, settings.tick_seconds, once=True)
                return
            with running_server(service.api, host=settings.api_host, port=settings.api_port) as url:
                if settings.external_ip:
                    port = int(url.rsplit(":", 1)[1])
                    service.validator.chain.serve_axon(service.validator.wallet,
                                                       AxonInfo(ip=settings.external_ip, port=port))
                log.info("validator_api_serving", url=url, hotkey=service.validator.hotkey)
                tick_forever(service, settings.tick_seconds)
    except ChainError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_CHAIN) from exc
    except ScheduleError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_SCHEDULE) from exc


@app.command("held-out")
def held_out(
    home: options.HomeOption = None,
    catalog_dir: Annotated[Path | None, typer.Option(
        "--catalog", help="The validator's catalog (ARENA_CATALOG_DIR; default: the bundled sample world)",
    )] = None,
    name: Annotated[str, typer.Option(help="Which held-out suite")] = DEFAULT_NAME,
    per_category: Annotated[int, typer.Option(min=1, help="Problems per category of a new version")] = 25,
    check: Annotated[bool, typer.Option("--check", help=(
        "Only report which problems of the latest version a public suite has caught since (exit 3 if any)"
    ))] = False,
    generator_schedule: ScheduleOption = None,
) -> None:
    """Make the next version of a held-out suite for research, or check the latest one.

    A version is generated from this validator's private seed (ARENA_HELD_OUT_SEED, else one made once
    under ARENA_HOME/held-out), away from every product its public suites burnt, and is never raced or
    exported: `worker evaluate` uses the newest version by default. 25 per category is the study's
    75-problem held-out partition. It is generated with the generator the schedule names for today.
    """
    overrides: dict[str, Any] = {"home": home, "catalog_dir": catalog_dir,
                                 "generator_schedule": parse_schedule(generator_schedule)}
    settings = ArenaSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings.log_format, settings.log_level, file=LogFile.from_settings(settings))
    if check:
        found = check_held_out(settings, name)
        if found is None:
            typer.echo(f"no held-out suite {name!r} under {held_out_dir(settings)}: make one with "
                       f"`validator held-out --name {name}`", err=True)
            raise typer.Exit(1)
        path, caught = found
        typer.echo(f"{path}: {len(caught)} problem(s) share a leak cluster with a public one"
                   + (f": {', '.join(caught)}; run `validator held-out --name {name}` for a new version"
                      if caught else ""))
        raise typer.Exit(3 if caught else 0)
    catalog = validator_catalog(settings, progress=sys.stderr.isatty())
    now = datetime.now(UTC)
    try:
        with open_scheduled_sources(catalog, settings.schedule()) as sources:
            path = create_held_out(settings, sources.for_day(now.date()), name=name, at=now,
                                   per_category=dict.fromkeys(CATEGORIES, per_category))
    except ScheduleError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_SCHEDULE) from exc
    typer.echo(f"held-out suite {path} (problems, ShoppingBench JSONL) and {path.with_suffix('.json')}")


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


@app.command("peers")
def peers(
    home: options.HomeOption = None,
    chain: options.ChainOption = None,
    netuid: options.NetuidOption = None,
    catalog_dir: Annotated[Path | None, typer.Option(
        "--catalog", help="The validator's catalog (ARENA_CATALOG_DIR; default: the bundled sample world)",
    )] = None,
    race_epoch: RaceEpochOption = None,
    wallet_name: WalletNameOption = None,
    wallet_hotkey: WalletHotkeyOption = None,
    wallet_path: WalletPathOption = None,
    hotkey: Annotated[str | None, typer.Option(
        "--hotkey", help="SS58 address of the validator to compare instead of the wallet's hotkey")] = None,
    generator_schedule: ScheduleOption = None,
    tolerance: Annotated[float | None, typer.Option(
        min=0, max=1, help="Largest difference of one uid's weight share that still agrees "
                           "(ARENA_PEER_WEIGHT_TOLERANCE)")] = None,
    timeout: Annotated[float | None, typer.Option(
        min=0.1, help="Seconds a peer's GET /rules may take (ARENA_PEER_TIMEOUT_S)")] = None,
    as_json: options.JsonOption = False,
) -> None:
    """Show how far this validator agrees with the other validators of the subnet.

    Reads every validator's weights and stake from the chain and each peer's GET /rules from its axon,
    and compares them with this validator's weights on chain and the rules its settings give (the same
    settings as `validator run`): the share of the peers' stake whose weights match within the tolerance,
    the largest difference, and per peer whether its rules fingerprint matches, which parts differ, or is
    unknown (no axon, no answer). Exit code 3: something disagrees; 5: wallet, catalog or chain problem.
    """
    overrides: dict[str, Any] = {"home": home, "chain": chain, "netuid": netuid, "catalog_dir": catalog_dir,
                                 "race_epoch": race_epoch.date() if race_epoch else None,
                                 "wallet_name": wallet_name, "wallet_hotkey": wallet_hotkey,
                                 "wallet_path": wallet_path, "peer_weight_tolerance": tolerance,
                                 "peer_timeout_s": timeout,
                                 "generator_schedule": parse_schedule(generator_schedule)}
    settings = ValidatorSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings.log_format, settings.log_level)
    try:
        address = hotkey or str(load_wallet(settings).hotkey.ss58_address)
        opened = open_chain(settings)
        report = check_peers(opened, hotkey=address, rules=settings_rules(settings, opened),
                             block=opened.block(), tolerance=settings.peer_weight_tolerance,
                             timeout_s=settings.peer_timeout_s)
    except (ChainError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_CHAIN) from exc
    except ScheduleError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_SCHEDULE) from exc
    if as_json:
        typer.echo(report.model_dump_json())
    else:
        print_peers(Console(), report)
    if report.disagreements():
        raise typer.Exit(EXIT_DISAGREE)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
