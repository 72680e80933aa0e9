"""The chain behind one interface: metagraph, commitments, axons, weights, block clock.

``LocalChain`` is the embedded default (a persistent registry with real sr25519 signatures);
``SubtensorChain`` is a Bittensor network through the SDK.
"""

from arena.chain.interface import Chain
from arena.chain.local import LocalChain
from arena.chain.models import (
    AxonInfo,
    ChainError,
    Commitment,
    Metagraph,
    Neuron,
    ValidatorWeights,
    weight_shares,
)
from arena.chain.settings import EMBEDDED_CHAIN, ChainSection, ChainSettings, open_chain
from arena.chain.subtensor import SubtensorChain

__all__ = ["EMBEDDED_CHAIN", "AxonInfo", "Chain", "ChainError", "ChainSection", "ChainSettings", "Commitment",
           "LocalChain", "Metagraph", "Neuron", "SubtensorChain", "ValidatorWeights", "open_chain",
           "weight_shares"]
