"""``arena chain register``: an operator registers hotkeys on the embedded chain, so `validator run` and
`miner submit` can be tried offline with wallets btcli made."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.chain import LocalChain
from neurons.chain import EXIT_NO_WALLET, EXIT_NOT_EMBEDDED
from neurons.cli import app
from tests.chain_support import make_wallet


def _arena(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_a_validator_and_a_miner_register_with_their_wallets(tmp_path: Path) -> None:
    wallets = tmp_path / "wallets"
    validator, miner = make_wallet(wallets, "validator"), make_wallet(wallets, "miner")
    home = str(tmp_path / "home")
    code, out = _arena("chain", "register", "--wallet.name", "validator", "--wallet.path", str(wallets),
                       "--validator", "--stake", "1000", "--home", home)
    assert code == 0, out
    code, out = _arena("chain", "register", "--wallet", "miner", "--wallet-path", str(wallets),
                       "--home", home)
    assert code == 0 and "uid 1" in out, out
    # Registering again keeps the uid and sets what is given.
    code, out = _arena("chain", "register", "--wallet.name", "miner", "--wallet.path", str(wallets),
                       "--home", home)
    assert code == 0 and "uid 1" in out, out
    chain = LocalChain(Path(home) / "local-chain.sqlite3")
    try:
        neurons = {n.hotkey: n for n in chain.metagraph().neurons}
        assert neurons[validator.hotkey.ss58_address].validator_permit
        assert neurons[validator.hotkey.ss58_address].coldkey == validator.coldkeypub.ss58_address
        assert not neurons[miner.hotkey.ss58_address].validator_permit
        (weights,) = chain.validator_weights()
        assert (weights.hotkey, weights.stake) == (validator.hotkey.ss58_address, 1000.0)
    finally:
        chain.close()


def test_a_network_is_btclis_and_a_missing_wallet_says_how_to_make_it(tmp_path: Path) -> None:
    code, out = _arena("chain", "register", "--chain", "finney", "--netuid", "7", "--home", str(tmp_path))
    assert code == EXIT_NOT_EMBEDDED and "btcli subnets register --netuid 7" in out, out
    code, out = _arena("chain", "register", "--wallet.name", "nobody", "--wallet.path", str(tmp_path / "w"),
                       "--home", str(tmp_path))
    assert code == EXIT_NO_WALLET, out
    assert "btcli wallet create --wallet nobody --wallet-hotkey default" in out, out
    assert not (tmp_path / "local-chain.sqlite3").exists()  # nothing registered


def test_the_embedded_chains_former_name_still_opens_it_with_a_warning(tmp_path: Path) -> None:
    from arena.chain import EMBEDDED_CHAIN, ChainSettings

    with pytest.warns(FutureWarning, match="now called 'embedded'"):
        old = ChainSettings(home=tmp_path, chain="local")
    assert old.chain == EMBEDDED_CHAIN == ChainSettings(home=tmp_path).chain
    with pytest.warns(FutureWarning):
        code, out = _arena("chain", "register", "--hotkey", "5" + "A" * 47, "--chain", "local",
                           "--home", str(tmp_path))
    assert code == 0 and "uid 0" in out, out
