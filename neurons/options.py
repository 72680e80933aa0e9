"""The command-line options several commands share, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

HomeOption = Annotated[Path | None, typer.Option(
    "--home", help="Data root (worlds, catalogs, results, stores). Default: $ARENA_HOME or "
                   "~/.shopping-arena")]
LogFormatOption = Annotated[str | None, typer.Option(
    "--log-format", help="console or json (default: $ARENA_LOG_FORMAT or console)")]

WalletNameOption = Annotated[str, typer.Option("--wallet-name", help="Wallet (coldkey) name")]
WalletHotkeyOption = Annotated[str, typer.Option("--wallet-hotkey", help="Hotkey name in that wallet")]
WalletPathOption = Annotated[Path, typer.Option("--wallet-path", file_okay=False, help="Wallets directory")]
ChainOption = Annotated[str | None, typer.Option(
    "--chain", help="local (the embedded chain under the data root) or a Bittensor network "
                    "(default $ARENA_CHAIN, local)")]
NetuidOption = Annotated[int | None, typer.Option("--netuid", min=0,
                                                  help="Subnet (default $ARENA_NETUID, 1)")]
