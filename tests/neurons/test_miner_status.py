"""``miner status``: every permitted validator's real public API (``arena.validator.api``) served on
loopback over a race log driven by the real race engine, found through the embedded chain's metagraph."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from bittensor import Wallet
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from typer.testing import CliRunner

from arena.chain import AxonInfo, LocalChain
from arena.race import ManualClock, MemoryEventStore, RaceEngine, RaceRules, Rejection
from arena.race.calendar import MarginCurve
from arena.race.events import CopyOf, RaceStarted
from arena.submissions.store import FileStore
from arena.validator.api import ArenaView, create_app
from neurons.miner import EXIT_NO_ANSWER, app
from shoppingbench.submission_check import check_agent
from shoppingbench.tools.serving import running_server
from tests.chain_support import make_wallet, register
from trajectories.store import TrajectoryStore

T0 = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)  # a Wednesday; races at 16:00 UTC
RULES = RaceRules(race_time=time(16), qualify_ratio=0.95, qualify_min_score=0.01,
                  margin=MarginCurve(initial=0.05, floor=0.01, half_life_days=7))


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")


@contextmanager
def serve(chain: LocalChain, wallet: Wallet, api: FastAPI) -> Iterator[str]:
    """``api`` on loopback, published as ``wallet``'s axon."""
    with running_server(api) as url:
        address = urlsplit(url)
        assert address.hostname is not None and address.port is not None
        chain.serve_axon(wallet, AxonInfo(ip=address.hostname, port=address.port))
        yield url


def raced_log(clock: ManualClock, miner: str, rival: str) -> tuple[MemoryEventStore, dict[str, str]]:
    """The miner wins a race against a rival (its code under embargo), then submits a second agent."""
    events = MemoryEventStore()
    engine = RaceEngine(events, RULES, clock)
    ids = {}
    for name, hotkey, score in (("first", miner, 0.6), ("rival", rival, 0.7)):
        outcome = engine.submit(hotkey, f"code-{name}")
        assert outcome.submission_id is not None
        engine.record_qualifying(outcome.submission_id, score)
        ids[name] = outcome.submission_id
        clock.advance(timedelta(minutes=5))
    clock.advance(datetime.combine(clock.now().date(), time(16), tzinfo=UTC) - clock.now())
    started = engine.start_race("0xseed", ["p1", "p2"])
    assert isinstance(started, RaceStarted)
    ids["race"] = started.race_id
    engine.record_race_result(ids["first"], 0.55)
    engine.record_race_result(ids["rival"], 0.5)
    clock.advance(timedelta(hours=6))  # past the 12 h cooldown, before the embargo ends at midnight
    second = engine.submit(miner, "code-second")
    assert second.submission_id is not None
    ids["second"] = second.submission_id
    return events, ids


def test_status_shows_each_agent_state_scores_and_embargo_per_permitted_validator(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    chain = LocalChain(tmp_path / "home" / "local-chain.sqlite3", clock=clock)
    wallets = tmp_path / "wallets"
    validator, miner, rival = (make_wallet(wallets, name) for name in ("validator", "miner", "rival"))
    register(chain, validator, validator_permit=True)
    register(chain, miner)
    register(chain, rival)
    events, ids = raced_log(clock, miner.hotkey.ss58_address, rival.hotkey.ss58_address)
    store = TrajectoryStore.open(f"sqlite:///{tmp_path / 'trajectories.sqlite3'}")
    view = ArenaView(events=events, store=store, files=FileStore(tmp_path / "agents"), clock=clock)
    # A neuron without a permit that publishes an endpoint is not asked.
    bystander = make_wallet(wallets, "bystander")
    register(chain, bystander)

    with serve(chain, validator, create_app(view)) as url, \
            serve(chain, bystander, create_app(view)) as bystander_url:
        result = CliRunner().invoke(app, ["status", "--wallet-name", "miner", "--wallet-path", str(wallets),
                                          "--chain", "local", "--home", str(tmp_path / "home")])
    store.close()
    assert result.exit_code == 0, result.output
    assert url.removeprefix("http://") in result.output
    assert bystander_url.removeprefix("http://") not in result.output
    lines = {sid: next(line for line in result.output.splitlines() if sid in line)
             for sid in (ids["first"], ids["second"])}
    assert "raced" in lines[ids["first"]] and "0.6000" in lines[ids["first"]]
    assert f"0.5500 ({ids['race']})" in lines[ids["first"]] and "until 2026-11-19" in lines[ids["first"]]
    assert "qualifying" in lines[ids["second"]] and "0.5500" not in lines[ids["second"]]
    assert ids["rival"] not in result.output  # only this hotkey's agents


def test_an_unreachable_or_hostile_validator_is_reported_and_the_others_still_shown(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    chain = LocalChain(tmp_path / "home" / "local-chain.sqlite3", clock=clock)
    wallets = tmp_path / "wallets"
    honest, hostile, dead, miner = (make_wallet(wallets, name)
                                    for name in ("honest", "hostile", "dead", "miner"))
    for wallet in (honest, hostile, dead):
        register(chain, wallet, validator_permit=True)
    register(chain, miner)
    events, ids = raced_log(clock, miner.hotkey.ss58_address, "5Rival")
    store = TrajectoryStore.open(f"sqlite:///{tmp_path / 'trajectories.sqlite3'}")
    view = ArenaView(events=events, store=store, files=FileStore(tmp_path / "agents"), clock=clock)
    garbage = FastAPI()

    @garbage.get("/{path:path}")
    def anything(path: str) -> PlainTextResponse:
        return PlainTextResponse('[{"submission_id": "[bold]x", "hotkey": 1}]')

    with running_server(FastAPI()) as gone:
        port = urlsplit(gone).port
    assert port is not None  # that server is closed now: the dead validator's endpoint refuses connections
    chain.serve_axon(dead, AxonInfo(ip="127.0.0.1", port=port))
    with serve(chain, honest, create_app(view)), serve(chain, hostile, garbage):
        result = CliRunner().invoke(app, ["status", "--hotkey", miner.hotkey.ss58_address, "--chain", "local",
                                          "--home", str(tmp_path / "home"), "--timeout", "5"])
    store.close()
    assert result.exit_code == EXIT_NO_ANSWER, result.output
    assert ids["first"] in result.output and ids["second"] in result.output
    assert "malformed answer" in result.output and "unreachable" in result.output


def test_status_says_why_a_validator_rejected_the_file(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    chain = LocalChain(tmp_path / "home" / "local-chain.sqlite3", clock=clock)
    wallets = tmp_path / "wallets"
    validator, miner = make_wallet(wallets, "validator"), make_wallet(wallets, "miner")
    register(chain, validator, validator_permit=True)
    register(chain, miner)
    events = MemoryEventStore()
    report = check_agent(b"import socket\n\ndef agent_main(problem):\n    return []\n")
    engine = RaceEngine(events, RULES, clock)
    engine.submit(miner.hotkey.ss58_address, report.sha256, Rejection.from_report(report))
    (submission_id,) = engine.state.submissions
    store = TrajectoryStore.open(f"sqlite:///{tmp_path / 'trajectories.sqlite3'}")
    view = ArenaView(events=events, store=store, files=FileStore(tmp_path / "agents"), clock=clock)
    with serve(chain, validator, create_app(view)):
        result = CliRunner().invoke(app, ["status", "--wallet-name", "miner", "--wallet-path", str(wallets),
                                          "--chain", "local", "--home", str(tmp_path / "home")])
    store.close()
    assert result.exit_code == 0, result.output
    (finding,) = report.findings
    row = next(line for line in result.output.splitlines() if submission_id in line)
    assert "rejected" in row
    assert f"security: {finding.rule} (line {finding.line})" in row


def test_status_names_the_original_of_a_copy(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    chain = LocalChain(tmp_path / "home" / "local-chain.sqlite3", clock=clock)
    wallets = tmp_path / "wallets"
    validator, miner = make_wallet(wallets, "validator"), make_wallet(wallets, "miner")
    register(chain, validator, validator_permit=True)
    register(chain, miner)
    events = MemoryEventStore()
    engine = RaceEngine(events, RULES, clock)
    original = CopyOf(hotkey="5OriginalMinerHotkey", code_hash="ab" * 32, commitment_block=41,
                      similarity=0.93)
    outcome = engine.submit(miner.hotkey.ss58_address, "cd" * 32, commitment_block=57, copy_of=original)
    assert outcome.status == "copy"
    (submission_id,) = engine.state.submissions
    store = TrajectoryStore.open(f"sqlite:///{tmp_path / 'trajectories.sqlite3'}")
    view = ArenaView(events=events, store=store, files=FileStore(tmp_path / "agents"), clock=clock)
    with serve(chain, validator, create_app(view)):
        result = CliRunner().invoke(app, ["status", "--wallet-name", "miner", "--wallet-path", str(wallets),
                                          "--chain", "local", "--home", str(tmp_path / "home")])
    store.close()
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if submission_id in line)
    assert "copy" in row
    assert ("copy of 5OriginalMinerHotkey's abababababab (block 41, similarity 0.93): no race, no weight"
            in row)
