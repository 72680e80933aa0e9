"""Which chain a neuron talks to (``ARENA_CHAIN``, ``ARENA_NETUID``, ``ARENA_CHAIN_DB``).

``ChainSection`` is the chain section, mixed into the root settings of every entry point that talks to
the chain, which hands it the data root; ``ChainSettings`` is the root of commands that need nothing else.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Final, Protocol

from pydantic import BaseModel, Field, field_validator

from arena.chain.interface import Chain
from arena.chain.local import LocalChain
from arena.chain.subtensor import SubtensorChain
from arena.race.clock import Clock
from shoppingbench.settings import HarnessSettings, Rooted


class ChainRoot(Rooted, Protocol):
    """Root settings carrying the chain section."""

    chain: str
    netuid: int
    chain_db: Path | None

    def local_chain_path(self) -> Path: ...


EMBEDDED_CHAIN: Final = "embedded"
"""The chain kept in a SQLite file under the data root (``LocalChain``), for trials and tests."""
OLD_EMBEDDED_NAME: Final = "local"
"""The embedded chain's former name, still accepted: the SDK and btcli call a subtensor node on this
machine ``local``, so the name misled."""


class ChainSection(BaseModel):
    """The chain section of a root settings object."""

    chain: str = Field(default=EMBEDDED_CHAIN, description=(
        "embedded (a chain in a SQLite file under the data root, for trials; `local` is its former name), or "
        "a Bittensor network: finney, test, or a ws:// / wss:// endpoint (a subtensor node on this machine: "
        "ws://127.0.0.1:9944)"))
    netuid: int = Field(default=1, ge=0, le=65_535, description="The subnet")
    chain_db: Path | None = Field(default=None, description="The local chain's SQLite file "
                                                            "(default $ARENA_HOME/local-chain.sqlite3)")

    @field_validator("chain")
    @classmethod
    def _embedded_by_its_former_name(cls, value: str) -> str:
        if value == OLD_EMBEDDED_NAME:
            warnings.warn(f"chain {OLD_EMBEDDED_NAME!r} is now called {EMBEDDED_CHAIN!r} (the embedded "
                          "chain); a subtensor node on this machine is ws://127.0.0.1:9944 "
                          "(--subtensor.network local)", FutureWarning, stacklevel=2)
            return EMBEDDED_CHAIN
        return value

    def local_chain_path(self: ChainRoot) -> Path:
        return (self.chain_db or self.root / "local-chain.sqlite3").expanduser()


class ChainSettings(HarnessSettings, ChainSection):
    """The root of commands that only talk to the chain: the harness and the chain section.
    Flags > ``ARENA_*`` environment > ``.env`` > defaults."""


def open_chain(settings: ChainRoot, *, clock: Clock | None = None) -> Chain:
    """The configured chain: the embedded one (``clock`` drives its blocks), else the Bittensor network
    (connected on first use)."""
    if settings.chain == EMBEDDED_CHAIN:
        return LocalChain(settings.local_chain_path(), netuid=settings.netuid, clock=clock)
    return SubtensorChain(settings.chain, settings.netuid)
