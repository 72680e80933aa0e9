"""The btcli commands our error messages tell a user to run, in the flags of the btcli the SDK installs.

bittensor's own ``btcli`` (the ``bittensor`` package's entry point) names a wallet ``--wallet``, its hotkey
``--wallet-hotkey`` and its folder ``--wallet-path``; it refuses the SDK's dotted ``--wallet.name``. Every
message that names a btcli command builds it here, and ``tests/arena/chain/test_btcli.py`` runs each one
through the installed btcli (with ``--help``, which parses every flag first) so a flag it would refuse
cannot reach a user.
"""

from __future__ import annotations

import shlex

WALLET = "WALLET"
HOTKEY = "HOTKEY"


def _wallet_flags(wallet_name: str, hotkey_name: str, wallet_path: str | None) -> list[str]:
    flags = ["--wallet", wallet_name, "--wallet-hotkey", hotkey_name]
    return flags + (["--wallet-path", wallet_path] if wallet_path else [])


def register_command(netuid: int, wallet_name: str = WALLET, hotkey_name: str = HOTKEY, *,
                     network: str | None = None, wallet_path: str | None = None) -> str:
    """``btcli subnets register`` for this hotkey on subnet ``netuid`` (of ``network``, if named)."""
    words = ["btcli", "subnets", "register", "--netuid", str(netuid),
             *_wallet_flags(wallet_name, hotkey_name, wallet_path)]
    return shlex.join(words + (["--network", network] if network else []))


def wallet_create_command(wallet_name: str = WALLET, hotkey_name: str = HOTKEY, *,
                          wallet_path: str | None = None) -> str:
    """``btcli wallet create`` making this wallet's coldkey and hotkey."""
    return shlex.join(["btcli", "wallet", "create", *_wallet_flags(wallet_name, hotkey_name, wallet_path)])
