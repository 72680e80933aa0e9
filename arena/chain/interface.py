"""The chain as the arena needs it, behind one small Protocol (the local registry implements it)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from bittensor import Wallet

from arena.chain.models import AxonInfo, Commitment, Metagraph, ValidatorWeights
from arena.weights import WeightLimits, WeightVector


class Chain(Protocol):
    """One subnet (``netuid``) on one chain. Writes are signed by the wallet's hotkey."""

    netuid: int

    def block(self) -> int:
        """The current block number."""
        ...

    def finalized_block(self) -> int:
        """The latest block no fork can replace: what every honest validator sees alike."""
        ...

    def block_hash(self, block: int) -> str:
        """The hash of an existing block (at most ``block()``); raises ``ChainError`` otherwise."""
        ...

    def block_time(self, block: int) -> datetime:
        """When an existing block was made (its timestamp); never decreases with the block number."""
        ...

    def block_seconds(self) -> float:
        """The chain's target time between two blocks (12 s on finney)."""
        ...

    def tempo(self) -> int:
        """Blocks per epoch of this subnet."""
        ...

    def metagraph(self) -> Metagraph: ...

    def is_registered(self, hotkey: str) -> bool: ...

    def validator_weights(self) -> tuple[ValidatorWeights, ...]:
        """Every neuron with a validator permit or a weight row, by uid: stake, axon and its latest weights
        (what the chain's consensus sees), read at one block."""
        ...

    def commit(self, wallet: Wallet, data: str) -> Commitment:
        """Store ``data`` as the hotkey's commitment; raises ``ChainError`` if refused."""
        ...

    def latest_commitment(self, hotkey: str) -> Commitment | None: ...

    def serve_axon(self, wallet: Wallet, axon: AxonInfo) -> None:
        """Publish the hotkey's HTTP endpoint."""
        ...

    def weight_limits(self) -> WeightLimits:
        """The subnet's ``MinAllowedWeights`` and ``MaxWeightsLimit``: what a weight row must meet."""
        ...

    def set_weights(self, wallet: Wallet, weights: WeightVector, *, version_key: int) -> int:
        """Set the validator's weights under the rules version ``version_key`` (the chain refuses one below
        the subnet's ``WeightsVersionKey``); returns the block. The vector is first processed against
        :meth:`weight_limits` (``arena.weights.process_weights``: unchanged when it already meets them).
        Raises ``ChainError`` (rate limit, no permit, outdated version, limits no vector can meet)."""
        ...
