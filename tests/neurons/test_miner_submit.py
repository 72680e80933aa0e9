"""``miner submit`` end to end: static analysis, a commitment on the embedded chain, and signed uploads
over loopback HTTP to every validator with a permit, one outcome per validator."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.chain import AxonInfo, LocalChain
from neurons.miner import app
from neurons.submission import EXIT_CHAIN, EXIT_NOT_DELIVERED, EXIT_REJECTED
from tests.chain_support import make_wallet, register, running_validator

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


def test_miner_submit_commits_and_uploads_to_every_permitted_validator(tmp_path: Path) -> None:
    home, wallets = tmp_path / "home", tmp_path / "wallets"
    chain = LocalChain(home / "local-chain.sqlite3")
    validator, miner = make_wallet(wallets, "validator"), make_wallet(wallets, "miner")
    register(chain, validator, validator_permit=True)
    register(chain, miner)
    # A neuron without a permit publishes an endpoint too, but is no place to upload to.
    bystander = make_wallet(wallets, "bystander")
    register(chain, bystander)
    chain.serve_axon(bystander, AxonInfo(ip="127.0.0.1", port=_free_port()))
    digest = hashlib.sha256(BASELINE.read_bytes()).hexdigest()

    with running_validator(chain, validator, tmp_path / "validator") as running:
        result = CliRunner().invoke(app, _submit(BASELINE, home, wallets))
        assert result.exit_code == 0, result.output
        assert f"committed sha256 {digest[:16]}" in result.output
        assert running.url.removeprefix("http://") in result.output and "accepted" in result.output
        assert bystander.hotkey.ss58_address not in result.output
        assert running.gate.files.path(digest).read_bytes() == BASELINE.read_bytes()
        commitment = chain.latest_commitment(miner.hotkey.ss58_address)
        assert commitment is not None and commitment.data == digest

        # A second validator whose endpoint is down: the retry reuses the commitment, the running
        # validator says it already has the file, the other one is reported unreachable.
        dead = make_wallet(wallets, "dead-validator")
        register(chain, dead, validator_permit=True)
        chain.serve_axon(dead, AxonInfo(ip="127.0.0.1", port=_free_port()))
        retry = CliRunner().invoke(app, _submit(BASELINE, home, wallets))
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
