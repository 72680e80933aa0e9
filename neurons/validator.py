"""``validator``: the validator service. Wiring only; the work is in ``arena.validator``.

``validator run`` ticks the work loop (sync the metagraph, ingest uploads, qualifying and race runs,
weights each tempo) every ``--tick-seconds`` and serves the public API, the leaderboard, ``/metrics``
and ``/health`` on ``--api-host:--api-port``, with ``POST /submissions`` for miners' uploads.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import structlog
import typer
from bittensor import Wallet
from fastapi import FastAPI
from prometheus_client import CollectorRegistry
from pydantic import Field

from arena.chain import AxonInfo, ChainError, ChainSettings, LocalChain, open_chain
from arena.race import SystemClock
from arena.settings import ArenaSettings
from arena.submissions import SubmissionGate
from arena.validator import LocalChainSeeds, Validator, agent_files_dir, open_validator, sandbox_runner
from arena.validator.api import ArenaView, TickMetrics, create_app
from neurons.demo import sample_world
from shoppingbench.catalog.build import open_catalog
from shoppingbench.evaluation import Grader
from shoppingbench.logs import configure_logging
from shoppingbench.problems.loaders import load_problems
from shoppingbench.problems.models import CATEGORIES
from shoppingbench.sandbox.runner import SandboxConfig, run_inference
from shoppingbench.tools.serving import running_server
from trajectories.settings import StoreSettings
from trajectories.store import TrajectoryStore

app = typer.Typer(help="Run a shopping-arena validator: races, scoring, weights, public API.",
                  no_args_is_help=True)
log = structlog.get_logger(__name__)

EXIT_CHAIN = 5


class ValidatorSettings(ArenaSettings, ChainSettings):
    """Flags > ``ARENA_*`` environment > ``.env`` > defaults."""

    log_format: Literal["console", "json"] = "json"
    wallet_name: str = Field(default="validator", description="bittensor wallet name")
    wallet_hotkey: str = Field(default="default", description="hotkey of the wallet")
    wallet_path: Path = Field(default=Path("~/.bittensor/wallets"), description="wallets directory")
    tick_seconds: float = Field(default=60.0, gt=0, description="Pause between two ticks of the work loop")
    api_host: str = Field(default="0.0.0.0", description="Interface the public API listens on")
    api_port: int = Field(default=8090, ge=0, le=65_535, description="Port of the public API (0: any free)")
    external_ip: str | None = Field(default=None, description="Address published as this validator's axon "
                                                               "(unset: not published)")


@dataclass
class Service:
    validator: Validator
    api: FastAPI
    metrics: TickMetrics



@contextmanager
def open_service(settings: ValidatorSettings, *, scripted_llm: bool = False) -> Iterator[Service]:
    """Everything ``validator run`` runs, opened from ``settings`` and closed on exit."""
    clock = SystemClock()
    chain = open_chain(settings, clock=clock)
    if not isinstance(chain, LocalChain):
        raise ChainError(f"race seeds from block hashes are only implemented for the local chain, not "
                         f"{settings.chain!r}: run with ARENA_CHAIN=local")
    wallet = Wallet(settings.wallet_name, settings.wallet_hotkey, path=str(settings.wallet_path.expanduser()))
    world = sample_world(settings)
    bank = [p for c in CATEGORIES for p in load_problems(world.problems_dir / f"{c}.jsonl", c)]
    with ExitStack() as stack:
        engine = open_catalog(world.catalog_dir)
        stack.callback(engine.close)
        store = TrajectoryStore.open(StoreSettings(home=settings.home).url())
        stack.callback(store.close)
        inference = stack.enter_context(run_inference(settings, scripted=scripted_llm))
        grader = Grader.from_settings(engine.get_products, settings)
        runner = sandbox_runner(engine, grader, inference=inference,
                                sandbox=SandboxConfig.from_settings(settings), workers=settings.workers)
        validator = open_validator(settings=settings, chain=chain, wallet=wallet, clock=clock, bank=bank,
                                   bank_source=f"sample-world:{settings.world_products}:seed{settings.world_seed}",
                                   run_agent=runner, seeds=LocalChainSeeds(chain), store=store)
        answers = frozenset(t.product_id for p in bank for t in p.targets)
        gate = SubmissionGate(chain=chain, validator_hotkey=validator.hotkey, engine=validator.arena_db,
                              files_dir=agent_files_dir(settings), rules=settings.race_rules(), clock=clock,
                              known_product_ids=lambda: answers)
        registry = CollectorRegistry()
        view = ArenaView(events=validator.race.store, store=store, files=validator.files, clock=clock)
        api = create_app(view, gate=gate, registry=registry)
        yield Service(validator=validator, api=api, metrics=TickMetrics(registry))


def tick_forever(service: Service, tick_seconds: float, *, once: bool = False) -> None:
    """Tick until interrupted; a failed tick is logged and retried on the next one (the work is resumable)."""
    while True:
        try:
            service.metrics.observe(service.validator.tick())
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
    home: Annotated[Path | None, typer.Option(help="Arena home: databases, agents (ARENA_HOME)")] = None,
    chain: Annotated[str | None, typer.Option(help="local, finney, test, ws(s):// (ARENA_CHAIN)")] = None,
    wallet_name: Annotated[str | None, typer.Option(help="Wallet name (ARENA_WALLET_NAME)")] = None,
    wallet_hotkey: Annotated[str | None, typer.Option(help="Hotkey name (ARENA_WALLET_HOTKEY)")] = None,
    wallet_path: Annotated[Path | None, typer.Option(help="Wallets directory (ARENA_WALLET_PATH)")] = None,
    tick_seconds: Annotated[float | None, typer.Option(help="Tick pause (ARENA_TICK_SECONDS)")] = None,
    api_host: Annotated[str | None, typer.Option(help="API interface (ARENA_API_HOST)")] = None,
    api_port: Annotated[int | None, typer.Option(help="API port, 0 for any (ARENA_API_PORT)")] = None,
    external_ip: Annotated[str | None, typer.Option(
        help="Publish this address with the API port as the axon (ARENA_EXTERNAL_IP)")] = None,
    once: Annotated[bool, typer.Option("--once", help="One tick, then exit (cron, tests)")] = False,
    scripted_llm: Annotated[bool, typer.Option(
        "--scripted-llm", help="Agents' LLM is the bundled scripted shopping policy (a test double): "
                               "for demos without an inference endpoint")] = False,
) -> None:
    """Run the validator: work loop plus public API (leaderboard at /, /health, /metrics, /docs)."""
    overrides: dict[str, Any] = {"home": home, "chain": chain, "wallet_name": wallet_name,
                                 "wallet_hotkey": wallet_hotkey, "wallet_path": wallet_path,
                                 "tick_seconds": tick_seconds, "api_host": api_host, "api_port": api_port,
                                 "external_ip": external_ip}
    settings = ValidatorSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings.log_format, settings.log_level)
    try:
        with open_service(settings, scripted_llm=scripted_llm) as service:
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


def main() -> None:
    app()


if __name__ == "__main__":
    main()
