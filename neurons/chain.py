"""``arena chain``: the operator's actions on the embedded chain, so a validator can be tried offline.

On a Bittensor network these are btcli's (``btcli subnets register``, ``btcli stake add``); the embedded
chain (``--chain embedded``, a SQLite file under the data root) has no extrinsics, so its registry is set
here, with the wallets btcli made (``btcli wallet create``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from neurons import options

if TYPE_CHECKING:
    from arena.chain import ChainSettings

app = typer.Typer(no_args_is_help=True, help="Register hotkeys on the embedded chain (offline trials).")

EXIT_NOT_EMBEDDED = 2
EXIT_NO_WALLET = 5


def chain_settings(**overrides: Any) -> ChainSettings:
    """The root settings of the commands that only talk to the chain (flags given as ``overrides``; a
    ``None`` is a flag not given), with logging configured from them."""
    from arena.chain import ChainSettings
    from shoppingbench.logs import LogFile, configure_logging

    settings = ChainSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings.log_format, settings.log_level, file=LogFile.from_settings(settings))
    return settings


def _keys(wallet_name: str, wallet_hotkey: str, wallet_path: Path, hotkey: str | None,
          coldkey: str | None) -> tuple[str, str]:
    """The (hotkey, coldkey) addresses to register: given, or read from the wallet's public key files."""
    if hotkey is not None:
        return hotkey, coldkey or hotkey
    from bittensor import Wallet

    from arena.chain.btcli import wallet_create_command

    wallet = Wallet(wallet_name, wallet_hotkey, path=str(wallet_path.expanduser()))
    try:
        return wallet.hotkey.ss58_address, (coldkey or wallet.coldkeypub.ss58_address)
    except Exception as exc:  # the SDK raises its own KeyFileError and OS errors alike
        typer.echo(f"error: cannot read wallet {wallet_name!r} hotkey {wallet_hotkey!r} under {wallet_path}: "
                   f"{exc}. Create it with `{wallet_create_command(wallet_name, wallet_hotkey)}`, or pass "
                   "--hotkey SS58", err=True)
        raise typer.Exit(EXIT_NO_WALLET) from exc


@app.command("register")
def register(
    wallet_name: options.WalletNameOption = "default",
    wallet_hotkey: options.WalletHotkeyOption = "default",
    wallet_path: options.WalletPathOption = Path("~/.bittensor/wallets"),
    hotkey: Annotated[str | None, typer.Option(
        "--hotkey", help="An ss58 address to register instead of the wallet's hotkey")] = None,
    coldkey: Annotated[str | None, typer.Option(
        "--coldkey", help="Its owner's ss58 address (default: the wallet's coldkey, or the hotkey)")] = None,
    validator: Annotated[bool, typer.Option(
        "--validator", help="Give it a validator permit (it may set weights and receive uploads)")] = False,
    stake: Annotated[float | None, typer.Option(
        "--stake", min=0, help="Set its stake (alpha), as `btcli stake add` would on a network")] = None,
    chain: options.ChainOption = None,
    netuid: options.NetuidOption = None,
    home: options.HomeOption = None,
    log_format: options.LogFormatOption = None,
) -> None:
    """Register a hotkey on the embedded chain (a uid; with --validator a permit; --stake its stake).

    The same chain file `validator run` and `miner submit` open with `--chain embedded` (default
    $ARENA_HOME/local-chain.sqlite3, or $ARENA_CHAIN_DB). Registering again keeps the uid and sets the
    permit and stake given. On a Bittensor network use btcli instead (exit 2 says which command).
    """
    from arena.chain import EMBEDDED_CHAIN, LocalChain
    from arena.chain.btcli import register_command

    settings = chain_settings(home=home, chain=chain, netuid=netuid, log_format=log_format)
    if settings.chain != EMBEDDED_CHAIN:
        command = register_command(settings.netuid, wallet_name, wallet_hotkey, network=settings.chain)
        typer.echo(f"error: `arena chain register` writes the embedded chain only; on {settings.chain} "
                   f"register with `{command}`", err=True)
        raise typer.Exit(EXIT_NOT_EMBEDDED)
    address, owner = _keys(wallet_name, wallet_hotkey, wallet_path, hotkey, coldkey)
    local = LocalChain(settings.local_chain_path(), netuid=settings.netuid)
    try:
        uid = local.register(address, owner, validator_permit=validator)
        if stake is not None:
            local.set_stake(address, stake)
    finally:
        local.close()
    staked = "" if stake is None else f", stake {stake:g}"
    Console().print(f"registered {address} as uid {uid} on subnet {settings.netuid} of the embedded chain "
                    f"{settings.local_chain_path()} (validator permit: {'yes' if validator else 'no'}"
                    f"{staked})", markup=False, soft_wrap=True)
