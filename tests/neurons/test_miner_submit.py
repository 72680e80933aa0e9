"""``miner submit`` end to end: static analysis, a commitment on the embedded chain, and signed uploads
over loopback HTTP to every validator with a permit, one outcome per validator."""

from __future__ import annotations

import functools
import hashlib
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from bittensor import Wallet
from fastapi import FastAPI
from rich.console import Console
from typer.testing import CliRunner

import arena.chain
from arena.chain import AxonInfo, LocalChain
from arena.race.clock import Clock, ManualClock, SystemClock
from arena.race.rules import RaceRules
from arena.storage import open_database
from arena.submissions import SubmissionGate, submissions_router
from arena.validator.api.precheck import precheck_router
from neurons.miner import app
from neurons.submission import EXIT_CHAIN, EXIT_NOT_COMMITTED, EXIT_NOT_DELIVERED, EXIT_REJECTED, submit_file
from shoppingbench.tools.serving import running_server
from tests.chain_support import RunningValidator, make_wallet, register, running_validator

REPO = Path(__file__).resolve().parents[2]
BASELINE = REPO / "shoppingbench" / "agents" / "scripted_baseline.py"


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _submit(agent: Path, home: Path, wallets: Path, name: str = "miner") -> list[str]:
    return ["submit", str(agent), "--wallet-name", name, "--wallet-path", str(wallets), "--home", str(home),
            "--chain", "local"]


def test_miner_submit_commits_and_uploads_to_every_permitted_validator(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, wallets = tmp_path / "home", tmp_path / "wallets"
    # One stopped clock for the test's chain, the validator and the CLI's own chain: the retry lands in
    # the commitment's upload window however long the machine takes.
    clock = ManualClock(datetime(2026, 11, 16, 9, 0, tzinfo=UTC))
    monkeypatch.setattr(arena.chain, "open_chain", functools.partial(arena.chain.open_chain, clock=clock))
    chain = LocalChain(home / "local-chain.sqlite3", clock=clock)
    validator, miner = make_wallet(wallets, "validator"), make_wallet(wallets, "miner")
    register(chain, validator, validator_permit=True)
    register(chain, miner)
    # A neuron without a permit publishes an endpoint too, but is no place to upload to.
    bystander = make_wallet(wallets, "bystander")
    register(chain, bystander)
    chain.serve_axon(bystander, AxonInfo(ip="127.0.0.1", port=_free_port()))
    # An original file: the bundled baseline itself is a public agent, refused as a copy of it.
    agent = _variant(tmp_path, "mine", "return [x, x + 1]")
    digest = hashlib.sha256(agent.read_bytes()).hexdigest()

    # Requests are signed on the real clock (the CLI's nonces), so the validator checks them on it.
    with running_validator(chain, validator, tmp_path / "validator", clock=clock,
                           nonce_clock=SystemClock()) as running:
        result = CliRunner().invoke(app, _submit(agent, home, wallets))
        assert result.exit_code == 0, result.output
        assert f"committed sha256 {digest[:16]}" in result.output
        assert running.url.removeprefix("http://") in result.output and "accepted" in result.output
        assert bystander.hotkey.ss58_address not in result.output
        assert running.gate.files.path(digest).read_bytes() == agent.read_bytes()
        commitment = chain.latest_commitment(miner.hotkey.ss58_address)
        assert commitment is not None and commitment.data == digest

        # A second validator whose endpoint is down: the retry reuses the commitment, the running
        # validator says it already has the file, the other one is reported unreachable.
        dead = make_wallet(wallets, "dead-validator")
        register(chain, dead, validator_permit=True)
        chain.serve_axon(dead, AxonInfo(ip="127.0.0.1", port=_free_port()))
        retry = CliRunner().invoke(app, _submit(agent, home, wallets))
        assert retry.exit_code == EXIT_NOT_DELIVERED, retry.output
        assert f"already committed at block {commitment.block}" in retry.output
        assert "already accepted" in retry.output and "unreachable" in retry.output
        assert chain.latest_commitment(miner.hotkey.ss58_address) == commitment


def test_miner_submit_refuses_before_touching_the_chain(tmp_path: Path) -> None:
    home, wallets = tmp_path / "home", tmp_path / "wallets"
    chain = LocalChain(home / "local-chain.sqlite3")
    miner = make_wallet(wallets, "miner")
    register(chain, miner)
    hostile = tmp_path / "hostile.py"
    hostile.write_text("import socket\n\ndef agent_main(problem):\n    return []\n")
    result = CliRunner().invoke(app, _submit(hostile, home, wallets))
    assert result.exit_code == EXIT_REJECTED, result.output
    assert "nothing committed" in result.output
    assert chain.latest_commitment(miner.hotkey.ss58_address) is None

    make_wallet(wallets, "stranger")
    unregistered = CliRunner().invoke(app, _submit(BASELINE, home, wallets, name="stranger"))
    assert unregistered.exit_code == EXIT_CHAIN and "not registered" in unregistered.output
    missing = CliRunner().invoke(app, _submit(BASELINE, home, wallets, name="nobody"))
    assert missing.exit_code == EXIT_CHAIN and "does not exist" in missing.output


@contextmanager
def checking_validator(chain: LocalChain, wallet: Wallet, home: Path,
                       clock: Clock) -> Iterator[RunningValidator]:
    """A validator serving both the upload and the pre-check routes on loopback, its axon published."""
    home.mkdir(parents=True, exist_ok=True)
    engine = open_database(f"sqlite:///{home / 'arena.sqlite3'}")
    gate = SubmissionGate(chain=chain, validator_hotkey=wallet.hotkey.ss58_address, engine=engine,
                          files_dir=home / "agents", rules=RaceRules(), clock=clock,
                          nonce_clock=SystemClock())
    app = FastAPI()
    app.include_router(submissions_router(gate))
    app.include_router(precheck_router(gate))
    try:
        with running_server(app) as url:
            address = urlsplit(url)
            assert address.hostname is not None and address.port is not None
            chain.serve_axon(wallet, AxonInfo(ip=address.hostname, port=address.port))
            yield RunningValidator(wallet=wallet, gate=gate, url=url)
    finally:
        engine.dispose()


def _variant(tmp_path: Path, name: str, body: str) -> Path:
    """An agent file of its own (no public agent's copy): ``body`` is its helper's return statement."""
    path = tmp_path / f"{name}.py"
    path.write_text(f"def _{name}_helper(x):\n    {body}\n\n\n"
                    f"def agent_main(problem):\n    query = problem.get('query', '')\n"
                    f"    words = [w for w in query.split() if len(w) > 2]\n"
                    f"    extra = _{name}_helper(len(words))\n"
                    f"    return [{{'role': 'assistant', 'content': ' '.join(words), 'extra': extra}}]\n")
    return path


def test_a_refusal_before_the_commitment_costs_no_cooldown_and_recommit_renews_a_too_early_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    clock = ManualClock(datetime(2026, 11, 16, 9, 0, tzinfo=UTC))
    chain = LocalChain(tmp_path / "chain.sqlite3", clock=clock)
    wallets = tmp_path / "wallets"
    first, second, miner = (make_wallet(wallets, n) for n in ("first", "second", "miner"))
    for wallet in (first, second):
        register(chain, wallet, validator_permit=True)
    register(chain, miner)
    one = _variant(tmp_path, "one", "return [x, x * 2, 'first variant']")
    two = _variant(tmp_path, "two", "return {'second': x, 'other': [x] * 3}")
    two_sha = hashlib.sha256(two.read_bytes()).hexdigest()

    def submit(agent: Path, *, recommit: bool = False) -> tuple[int, str]:
        console = Console(record=True, width=250)
        code = submit_file(console, agent, lambda: (miner, chain), timeout=30, recommit=recommit)
        return code, console.export_text()

    with checking_validator(chain, first, tmp_path / "v1", clock):
        code, _ = submit(one)  # only the first validator is up: it holds agent one
        assert code == 0
    clock.advance(timedelta(hours=1))
    with checking_validator(chain, first, tmp_path / "v1", clock), \
            checking_validator(chain, second, tmp_path / "v2", clock):
        committed = chain.latest_commitment(miner.hotkey.ss58_address)
        # Agent two an hour later: the second validator would accept it, the first is inside the cooldown.
        code, output = submit(two)
        assert code == EXIT_NOT_COMMITTED, output
        assert "nothing committed" in output and "cooldown" in output
        assert "at or after 2026-11-16T21:00:00+00:00" in output
        assert "would accept" in output and "would refuse" in output
        assert chain.latest_commitment(miner.hotkey.ss58_address) == committed  # no cooldown spent

        # A commitment made too early anyway (by hand): no retry can upload it, and the pre-check says so.
        chain.commit(miner, two_sha)
        code, output = submit(two)
        assert code == EXIT_NOT_COMMITTED and "--recommit` at or after 2026-11-16T21:00" in output, output
        clock.advance(timedelta(hours=12))
        code, output = submit(two)
        assert code == EXIT_NOT_COMMITTED and "run `miner submit --recommit`" in output, output
        code, output = submit(two, recommit=True)
        assert code == 0, output
        renewed = chain.latest_commitment(miner.hotkey.ss58_address)
        assert renewed is not None and renewed.data == two_sha and renewed.time >= clock.now() - timedelta(
            seconds=12)
        assert "committed sha256" in output and output.count("accepted") >= 2


def test_a_commitment_left_past_its_upload_window_is_renewed_by_recommit(tmp_path: Path) -> None:
    clock = ManualClock(datetime(2026, 11, 16, 9, 0, tzinfo=UTC))
    chain = LocalChain(tmp_path / "chain.sqlite3", clock=clock)
    wallets = tmp_path / "wallets"
    first, miner = make_wallet(wallets, "first"), make_wallet(wallets, "miner")
    register(chain, first, validator_permit=True)
    register(chain, miner)
    agent = _variant(tmp_path, "late", "return [x] * 4 + ['late variant']")
    sha = hashlib.sha256(agent.read_bytes()).hexdigest()

    def submit(*, recommit: bool = False, ask_first: bool = True) -> tuple[int, str]:
        console = Console(record=True, width=250)
        code = submit_file(console, agent, lambda: (miner, chain), timeout=30, recommit=recommit,
                           ask_first=ask_first)
        return code, console.export_text()

    chain.commit(miner, sha)  # committed, then the upload never happened (the miner's run was cut short)
    late = chain.latest_commitment(miner.hotkey.ss58_address)
    assert late is not None
    window = RaceRules().upload_window_blocks
    clock.advance(timedelta(seconds=chain.block_seconds()) * (window + 1))
    with checking_validator(chain, first, tmp_path / "v1", clock):
        code, output = submit(ask_first=False)  # straight to the upload: the gate refuses it
        assert code == EXIT_NOT_DELIVERED and "upload_window_closed" in output, output
        assert "`miner submit --recommit`" in output
        code, output = submit()  # the pre-check says so before anything is uploaded
        assert code == EXIT_NOT_COMMITTED and "nothing committed" in output, output
        assert f"until block {late.block + window}" in output and "run `miner submit --recommit`" in output
        assert f"upload window ended at block {late.block + window}" in output  # the pre-check's table
        assert chain.latest_commitment(miner.hotkey.ss58_address) == late
        code, output = submit(recommit=True)  # a new commitment, uploaded at once
        assert code == 0 and "committed sha256" in output and "accepted" in output, output
        renewed = chain.latest_commitment(miner.hotkey.ss58_address)
        assert renewed is not None and renewed.data == sha and renewed.block > late.block + window


def test_a_file_a_validator_rejects_is_never_committed(tmp_path: Path) -> None:
    clock = ManualClock(datetime(2026, 11, 16, 9, 0, tzinfo=UTC))
    chain = LocalChain(tmp_path / "chain.sqlite3", clock=clock)
    wallets = tmp_path / "wallets"
    first, miner, other = (make_wallet(wallets, n) for n in ("first", "miner", "other"))
    register(chain, first, validator_permit=True)
    register(chain, miner)
    register(chain, other)
    original = _variant(tmp_path, "original", "return sorted(set([x, x + 1, x * 7, x - 3]))[::-1]")
    with checking_validator(chain, first, tmp_path / "v1", clock):
        assert submit_file(Console(), original, lambda: (other, chain), timeout=30) == 0
        clock.advance(timedelta(minutes=5))
        console = Console(record=True, width=250)
        code = submit_file(console, original, lambda: (miner, chain), timeout=30)  # another hotkey's file
        output = console.export_text()
        assert code == EXIT_NOT_COMMITTED and "copy" in output and "nothing committed" in output, output
        assert chain.latest_commitment(miner.hotkey.ss58_address) is None
