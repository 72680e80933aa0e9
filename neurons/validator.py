"""``validator``: the validator service's commands. Flags only: the settings, wiring and loop are in
``neurons.validator_service`` and the work in ``arena.validator``, imported when a command runs, so that
``--help`` answers without loading the chain, the SDK or the models.

``validator run`` logs the rules fingerprint it runs, ticks the work loop (sync the metagraph, ingest
uploads, qualifying and race runs, weights each tempo) every ``--tick-seconds`` and serves the public API,
the leaderboard, ``/rules``, ``/metrics`` and ``/health`` on ``--api-host:--api-port``, with
``POST /submissions`` for miners' uploads. ``validator peers`` shows how far this validator agrees with
the others on the subnet (their weights on chain, their ``/rules``), as ``validator run`` checks it every
tempo.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from neurons import options
from shoppingbench.problems.held_out import DEFAULT_NAME

app = typer.Typer(help="Run a shopping-arena validator: races, scoring, weights, public API.",
                  no_args_is_help=True)

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


@app.callback()
def _commands() -> None:
    """Run a shopping-arena validator: races, scoring, weights, public API."""


@app.command("run")
def run(
    home: options.HomeOption = None,
    chain: options.ChainOption = None,
    network: options.NetworkOption = None,
    chain_endpoint: options.ChainEndpointOption = None,
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
    # Imported here, as in every command, so that `--help` answers without loading the chain or the SDK.
    from arena.chain import AxonInfo, ChainError
    from arena.suites import ScheduleError
    from neurons.validator_service import ValidatorSettings, load_wallet, log, open_service, tick_forever
    from shoppingbench.doubles.scripted_inference import scripted_inference
    from shoppingbench.logs import LogFile, configure_logging
    from shoppingbench.sandbox.runner import configured_inference
    from shoppingbench.tools.serving import running_server

    overrides: dict[str, Any] = {"home": home, "chain": options.chosen_chain(chain, network, chain_endpoint),
                                 "netuid": netuid, "catalog_dir": catalog_dir,
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
        from arena.chain.btcli import wallet_create_command

        typer.echo(f"error: cannot load the validator's hotkey: {exc}: create the wallet "
                   f"(`{wallet_create_command(settings.wallet_name, settings.wallet_hotkey)}`) or pass "
                   "--wallet-name, --wallet-hotkey and --wallet-path", err=True)
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
    import sys

    from arena.settings import ArenaSettings
    from arena.suites import ScheduleError
    from arena.suites.generators import open_scheduled_sources
    from arena.validator import validator_catalog
    from arena.validator.held_out import check_held_out, create_held_out, held_out_dir
    from shoppingbench.logs import LogFile, configure_logging
    from shoppingbench.problems.models import CATEGORIES

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


@app.command("peers")
def peers(
    home: options.HomeOption = None,
    chain: options.ChainOption = None,
    network: options.NetworkOption = None,
    chain_endpoint: options.ChainEndpointOption = None,
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
    from rich.console import Console

    from arena.chain import ChainError, open_chain
    from arena.suites import ScheduleError
    from arena.validator.peers import check_peers
    from neurons.validator_service import ValidatorSettings, load_wallet, print_peers, settings_rules
    from shoppingbench.logs import configure_logging

    overrides: dict[str, Any] = {"home": home, "chain": options.chosen_chain(chain, network, chain_endpoint),
                                 "netuid": netuid, "catalog_dir": catalog_dir,
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
