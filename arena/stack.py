"""One validator with its public face: the validator ``arena.validator.assemble`` opens, its submission
gate and its public API (``arena.validator.api``), as ``validator run`` and the local network demo serve
them, with the rules fingerprint of its settings, suite plan and generators (``arena.rules_fingerprint``)
handed to the API, and the watch on the other validators (``arena.validator.peers``). Above both the
service and its API, so neither imports the other's assembly."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import structlog
from bittensor import Wallet
from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from arena.chain import Chain
from arena.race import Clock
from arena.rules_fingerprint import RulesFingerprint, validator_rules
from arena.settings import ArenaSettings
from arena.submissions import SubmissionGate
from arena.suites.public import SourceSchedule
from arena.validator.api import ArenaView, TickMetrics, create_app
from arena.validator.api.views.peer_metrics import PeerCollector
from arena.validator.assemble import agent_files_dir, open_validator
from arena.validator.peers import PeerWatch
from arena.validator.runs import RunAgent
from arena.validator.service import Validator
from trajectories.store import TrajectoryStore

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ValidatorStack:
    """One validator and its public API (with ``POST /submissions``), the loop's metrics, the rules
    fingerprint the API serves and the watch on the other validators (its gauges in the API's metrics)."""

    validator: Validator
    api: FastAPI
    metrics: TickMetrics
    rules: RulesFingerprint
    peers: PeerWatch


@contextmanager
def open_validator_stack(settings: ArenaSettings, *, chain: Chain, wallet: Wallet, clock: Clock,
                         sources: SourceSchedule, run_agent: RunAgent, nonce_clock: Clock | None = None,
                         warnings: Sequence[str] = ()) -> Iterator[ValidatorStack]:
    """A validator over the stores under ``settings`` (its trajectory store from ``ARENA_STORE_URL`` or
    ``$ARENA_HOME``), its gate checking uploads against the answers of every suite it generated.
    ``nonce_clock``: what the gate measures signatures' nonces on (default ``clock``; the network demo,
    whose ``clock`` is a manual one, gives the real time, on which miners sign). ``warnings``: what the
    operator and the API's readers must know about how this validator races (logged now, served on
    ``/rules``)."""
    for warning in warnings:
        log.warning("validator_race_warning", warning=warning)
    hotkey = str(wallet.hotkey.ss58_address)
    with ExitStack() as stack:
        store = TrajectoryStore.open(settings.trajectory_store_url())
        stack.callback(store.close)
        validator = open_validator(settings=settings, chain=chain, wallet=wallet, clock=clock,
                                   sources=sources, run_agent=run_agent, store=store)
        stack.callback(validator.arena_db.dispose)
        gate = SubmissionGate(chain=chain, validator_hotkey=hotkey, engine=validator.arena_db,
                              files_dir=agent_files_dir(settings), rules=settings.race_rules, clock=clock,
                              known_product_ids=validator.known_answers,
                              clock_skew_s=settings.submission_clock_skew_s, nonce_clock=nonce_clock)
        registry = CollectorRegistry()
        rules = validator_rules(settings, plan=validator.suites.plan, sources=sources)
        view = ArenaView(events=validator.race.store, store=store, files=validator.files, clock=clock,
                         rules=rules, race_rules=settings.race_rules,
                         dumps_dir=settings.dumps_root(), warnings=tuple(warnings))
        api = create_app(view, gate=gate, registry=registry)
        peers = PeerWatch(chain=chain, hotkey=hotkey, rules=rules, tolerance=settings.peer_weight_tolerance,
                          timeout_s=settings.peer_timeout_s, check_blocks=settings.peer_check_blocks)
        registry.register(PeerCollector(lambda: peers.last))
        yield ValidatorStack(validator=validator, api=api, metrics=TickMetrics(registry), rules=rules,
                             peers=peers)
