"""Which chain a neuron talks to (``ARENA_CHAIN``, ``ARENA_NETUID``, ``ARENA_CHAIN_DB``).

``ChainSection`` is the chain section, mixed into the root settings of every entry point that talks to
the chain, which hands it the data root; ``ChainSettings`` is the root of commands that need nothing else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, Field

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


class ChainSection(BaseModel):
    """The chain section of a root settings object."""

    chain: str = Field(default="local", description="local (the embedded registry), or a Bittensor network: "
                                                    "finney, test, or a ws:// / wss:// endpoint (a "
                                                    "subtensor node on this machine: ws://127.0.0.1:9944)")
    netuid: int = Field(default=1, ge=0, le=65_535, description="The subnet")
    chain_db: Path | None = Field(default=None, description="The local chain's SQLite file "
                                                            "(default $ARENA_HOME/local-chain.sqlite3)")

    def local_chain_path(self: ChainRoot) -> Path:
        return (self.chain_db or self.root / "local-chain.sqlite3").expanduser()


class ChainSettings(HarnessSettings, ChainSection):
    """The root of commands that only talk to the chain: the harness and the chain section.
    Flags > ``ARENA_*`` environment > ``.env`` > defaults."""


def open_chain(settings: ChainRoot, *, clock: Clock | None = None) -> Chain:
    """The configured chain: the embedded one for ``local`` (``clock`` drives its blocks), else the
    Bittensor network (connected on first use)."""
    if settings.chain == "local":
        return LocalChain(settings.local_chain_path(), netuid=settings.netuid, clock=clock)
    return SubtensorChain(settings.chain, settings.netuid)
