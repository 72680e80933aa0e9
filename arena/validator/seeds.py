"""Race seeds every honest validator agrees on and nobody knows before the race slot (SPEC 5).

The seed is derived from the first block at or after the race slot, not from the block at which this
validator happens to start the race, so a late or restarted validator draws the same hidden suite.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Protocol

from arena.chain import LocalChain


class RaceSeeds(Protocol):
    def seed_at(self, slot: datetime) -> str:
        """The seed of the race whose slot is ``slot`` (a time already passed)."""
        ...


def first_block_at_or_after(chain: LocalChain, slot: datetime) -> int:
    low, high = 0, max(chain.block(), 0) + 1
    while low < high:  # block times grow with the block number: binary search
        middle = (low + high) // 2
        if chain.block_time(middle) >= slot:
            high = middle
        else:
            low = middle + 1
    return low


class LocalChainSeeds:
    """The embedded chain has no block hashes: its stand-in is a hash of the subnet and block number."""

    def __init__(self, chain: LocalChain) -> None:
        self.chain = chain

    def seed_at(self, slot: datetime) -> str:
        block = first_block_at_or_after(self.chain, slot)
        return hashlib.sha256(f"local-chain/{self.chain.netuid}/{block}".encode()).hexdigest()
