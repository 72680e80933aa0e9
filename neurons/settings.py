"""The researcher's root settings (``worker``, ``dump``), and which root each entry point reads.

Every root is the harness (which declares ``home``) plus the sections it needs; flags > ``ARENA_*``
environment > ``.env`` in the working directory > defaults:

- ``arena`` (demo, world, catalog, tools, lexicon): ``HarnessSettings``; ``arena network-demo`` and
  ``miner test``: ``ArenaSettings`` (harness, store, arena).
- ``miner submit`` / ``miner status`` / ``arena chain register``: ``ChainSettings`` (harness, chain).
- ``validator``: ``neurons.validator_service.ValidatorSettings`` (harness, store, arena, chain, and its
  own).
- ``worker`` and ``dump``: :class:`ResearchSettings` (harness, store), kept here, apart from the
  validator's, so that those commands start without importing the arena and the chain.
"""

from __future__ import annotations

from shoppingbench.settings import HarnessSettings
from trajectories.settings import StoreSettings


class ResearchSettings(HarnessSettings, StoreSettings):
    """The researcher's commands (``worker``, ``dump``): the harness and the trajectory store."""
