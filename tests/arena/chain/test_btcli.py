"""Every btcli command our messages name parses in the btcli the SDK installs (bittensor's own entry point):
run with ``--help``, which click answers only once every other flag of the line is known."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena.chain.btcli import register_command, wallet_create_command

BTCLI = Path(sys.executable).with_name("btcli")
ENV = {"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": "/tmp"}


@pytest.mark.parametrize("command", [
    register_command(7),
    register_command(7, "miner", "default", network="finney", wallet_path="/tmp/wallets"),
    wallet_create_command("validator", "default"),
    wallet_create_command("validator", "default", wallet_path="/tmp/wallets"),
])
def test_the_installed_btcli_accepts_every_flag_we_print(command: str) -> None:
    btcli = str(BTCLI) if BTCLI.exists() else shutil.which("btcli")
    assert btcli is not None, "bittensor installs btcli beside the interpreter"
    words = shlex.split(command)
    assert words[0] == "btcli"
    done = subprocess.run([btcli, *words[1:], "--help"], capture_output=True, text=True, timeout=120,
                          env=ENV)
    assert done.returncode == 0, (command, done.stdout[-1500:], done.stderr[-1500:])


def test_the_sdks_dotted_wallet_flags_are_what_btcli_refuses() -> None:
    """Why the commands are spelled as they are: this btcli refuses ``--wallet.name``."""
    btcli = str(BTCLI) if BTCLI.exists() else shutil.which("btcli")
    assert btcli is not None
    done = subprocess.run([btcli, "wallet", "create", "--wallet.name", "v", "--help"], capture_output=True,
                          text=True, timeout=120, env=ENV)
    assert done.returncode != 0 and "No such option" in done.stdout + done.stderr
