"""Two validators on one local chain, each a real stack (race log, trajectory store, API under uvicorn on
loopback, its axon published): each reads the other's weights from the chain and its rules from its
``/rules``, exports the agreement in ``/metrics`` and warns once, naming the part that differs."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from structlog.testing import capture_logs

from arena.chain import AxonInfo, LocalChain
from arena.chain.subtensor import SubtensorChain
from arena.race import ManualClock
from arena.settings import ArenaSettings
from arena.stack import ValidatorStack, open_validator_stack
from arena.suites import FixedSource
from arena.suites.public import SourceSchedule
from arena.validator.peers import MAX_RULES_BYTES, PeerWatch, fetch_peer_rules
from arena.weights import WeightVector
from shoppingbench.tools.serving import running_server
from tests.arena.validator.test_validator_api import KeyedSource, no_runs
from tests.chain_support import make_wallet, register
from tests.fake_substrate import FakeSubstrate

T0 = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)
TEMPO = 360
SHARED: dict[str, Any] = {"race_epoch": date(2026, 12, 1), "judge_models": "judge-a"}


@contextmanager
def validators(tmp_path: Path, *changes: dict[str, Any],
               sources: SourceSchedule | None = None) -> Iterator[tuple[LocalChain, list[ValidatorStack]]]:
    """One validator per ``changes`` (its settings over :data:`SHARED`), all registered with a permit,
    serving their API on loopback as their axon, and each having set its (burn-only) weights; their
    generators are ``sources`` (default: one that makes nothing, under a key of its own)."""
    clock = ManualClock(T0)
    chain = LocalChain(tmp_path / "chain.sqlite3", clock=clock, tempo=TEMPO)
    owner = make_wallet(tmp_path / "wallets", "owner", seed="owner")
    register(chain, owner)  # uid 0, the burn uid
    stacks = []
    with ExitStack() as stack:
        stack.callback(chain.close)
        for n, change in enumerate(changes):
            wallet = make_wallet(tmp_path / "wallets", f"validator-{n}", seed=f"validator-{n}")
            register(chain, wallet, validator_permit=True)
            settings = ArenaSettings(**{"home": tmp_path / f"v{n}", **SHARED, **change})
            opened = stack.enter_context(open_validator_stack(
                settings, chain=chain, wallet=wallet, clock=clock,
                sources=sources or FixedSource(KeyedSource()), run_agent=no_runs))
            url = stack.enter_context(running_server(opened.api))
            address = urlsplit(url)
            assert address.hostname is not None and address.port is not None
            chain.serve_axon(wallet, AxonInfo(ip=address.hostname, port=address.port))
            stacks.append(opened)
        for opened in stacks:
            assert opened.validator.tick().weights_set_at is not None
        yield chain, stacks


def metrics(stack: ValidatorStack) -> str:
    with running_server(stack.api) as url:
        return httpx.get(f"{url}/metrics").text


def test_identical_settings_agree_fully_and_warn_nothing(tmp_path: Path) -> None:
    with validators(tmp_path, {}, {}) as (chain, (first, second)):
        assert first.rules.fingerprint == second.rules.fingerprint
        assert "arena_peer_agreement_stake_share" not in metrics(first)  # nothing before the first check
        with capture_logs() as logs:
            report = first.peers.tick(chain.block())
        assert report is not None and first.peers.last == report
        assert report.stake_share == 1.0 and report.weighted_by == "count" and report.compared == 1
        assert report.max_disagreement == 0 and report.max_disagreement_hotkey == second.validator.hotkey
        (peer,) = report.peers
        assert peer.hotkey == second.validator.hotkey and peer.rules == "match" and peer.agrees
        assert not [entry for entry in logs if entry["log_level"] == "warning"]
        text = metrics(first)
        assert 'arena_peer_agreement_stake_share{weighted_by="count"} 1.0' in text
        assert f'arena_peer_max_disagreement{{hotkey="{second.validator.hotkey}"}} 0.0' in text
        assert "arena_peers_other_fingerprint 0.0" in text
        peer_info = f'arena_peer_rules_info{{hotkey="{second.validator.hotkey}",status="match",uid="2"}} 1.0'
        assert peer_info in text


def test_one_changed_setting_is_named_in_one_warning_and_in_the_gauges(tmp_path: Path) -> None:
    with validators(tmp_path, {}, {"judge_models": "judge-b"}) as (chain, (first, second)):
        with capture_logs() as logs:
            report = first.peers.tick(chain.block())
        assert report is not None and report.other_fingerprints == 1
        (peer,) = report.peers
        assert peer.rules == "differs" and peer.differing_parts == ("judge_models",)
        assert peer.fingerprint == second.rules.fingerprint
        # The weights still agree: no race has run, both burn everything.
        assert report.stake_share == 1.0
        (warning,) = [entry for entry in logs if entry["log_level"] == "warning"]
        assert warning["event"] == "peers_disagree"
        assert warning["disagreements"] == [f"{second.validator.hotkey} (uid 2): judge_models differs"]
        text = metrics(first)
        assert "arena_peers_other_fingerprint 1.0" in text
        assert f'arena_peer_rules_info{{hotkey="{second.validator.hotkey}",status="differs",uid="2"}}' in text

        # The other side sees the same difference.
        other = second.peers.tick(chain.block())
        assert other is not None and other.peers[0].differing_parts == ("judge_models",)


def test_weights_beyond_the_tolerance_by_stake_and_a_silent_peer_is_unknown(tmp_path: Path) -> None:
    with validators(tmp_path, {}, {}) as (chain, (first, second)):
        # A third validator, with most of the stake, sets other weights and serves an axon nobody answers on.
        third = make_wallet(tmp_path / "wallets", "validator-3", seed="validator-3")
        register(chain, third, validator_permit=True)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            closed_port = probe.getsockname()[1]
        chain.serve_axon(third, AxonInfo(ip="127.0.0.1", port=closed_port))
        chain.set_weights(third, WeightVector(uids=(0, 1), weights=(65_535, 65_535)), version_key=1)
        for stack, stake in ((first, 10.0), (second, 30.0)):
            chain.set_stake(stack.validator.hotkey, stake)
        chain.set_stake(third.hotkey.ss58_address, 60.0)
        with capture_logs() as logs:
            report = first.peers.tick(chain.block())
        assert report is not None and report.weighted_by == "stake"
        assert report.stake_share == pytest.approx(30 / 90)
        assert report.max_disagreement == pytest.approx(0.5)
        assert report.max_disagreement_hotkey == third.hotkey.ss58_address
        silent = report.peers[-1]
        assert silent.rules == "unknown" and silent.rules_error == "GET /rules failed: ConnectError"
        (warning,) = [entry for entry in logs if entry["log_level"] == "warning"]
        assert warning["disagreements"] == [f"{third.hotkey.ss58_address} (uid 3): weights differ by 0.500 "
                                            "(tolerance 0.02)"]
        text = metrics(first)
        assert 'arena_peer_agreement_stake_share{weighted_by="stake"} 0.333' in text
        assert "arena_peers_unknown_rules 1.0" in text


def test_the_watch_looks_once_per_tempo_or_per_configured_blocks(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BTCLI_TOKEN_SYMBOLS_CACHE", str(tmp_path / "symbols.json"))
    with validators(tmp_path, {}, {}) as (chain, (first, _)):
        watch = first.peers
        assert watch.tick(10) is not None and watch.tick(TEMPO - 1) is None
        assert watch.tick(TEMPO) is not None and watch.tick(2 * TEMPO - 1) is None
        every_50 = PeerWatch(chain=chain, hotkey=watch.hotkey, rules=watch.rules, check_blocks=50)
        assert every_50.tick(10) is not None and every_50.tick(49) is None and every_50.tick(50) is not None

    # A chain that cannot answer (here: the subnet is gone) is logged and asked again, never raised.
    gone = SubtensorChain("test", 99, substrate=FakeSubstrate())  # type: ignore[arg-type]
    watch = PeerWatch(chain=gone, hotkey="me", rules=watch.rules, check_blocks=50)
    with capture_logs() as logs:
        assert watch.tick(100) is None and watch.last is None
    assert [entry["event"] for entry in logs] == ["peers_unreadable"]
    assert "subnet 99 does not exist" in logs[0]["error"]
    gone.close()


async def drip() -> AsyncIterator[bytes]:
    """A ``/rules`` answer a byte at a time, each a quarter second after the last (2.5 s in all)."""
    for _ in range(10):
        await asyncio.sleep(0.25)
        yield b" "


def test_a_peer_answering_too_much_too_slowly_or_not_rules_is_unknown(tmp_path: Path) -> None:
    huge, slow, wrong = FastAPI(), FastAPI(), FastAPI()
    huge.get("/rules")(lambda: {"fingerprint": "x" * (MAX_RULES_BYTES + 1), "version": 1, "parts": {}})
    slow.get("/rules")(lambda: StreamingResponse(drip()))
    wrong.get("/rules")(lambda: {"hello": "world"})
    with validators(tmp_path, {}) as (chain, _), running_server(huge) as huge_url, \
            running_server(slow) as slow_url, running_server(wrong) as wrong_url:
        rows = []
        for n, url in enumerate((huge_url, slow_url, wrong_url), start=5):
            wallet = make_wallet(tmp_path / "wallets", f"odd-{n}", seed=f"odd-{n}")
            register(chain, wallet, validator_permit=True)
            address = urlsplit(url)
            assert address.hostname is not None and address.port is not None
            chain.serve_axon(wallet, AxonInfo(ip=address.hostname, port=address.port))
            rows.append(wallet.hotkey.ss58_address)
        # Each read of the slow peer is well within the timeout; the whole answer is not.
        seen = fetch_peer_rules(chain.validator_weights(), "nobody", timeout_s=1.0)
        assert seen[rows[0]].error == f"GET /rules answered more than {MAX_RULES_BYTES} bytes"
        assert seen[rows[1]].error == "GET /rules took longer than 1 s"
        assert seen[rows[2]].error == "GET /rules answered something other than a rules fingerprint"
