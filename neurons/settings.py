"""The root settings of each entry point, composed of the packages' sections; ``home`` comes from the harness.

Flags > ``ARENA_*`` environment > ``.env`` in the working directory > defaults, for every root:

- ``arena`` (demo, world, catalog, tools, lexicon): ``HarnessSettings``; ``arena network-demo`` and
  ``miner test``: ``ArenaSettings`` (harness, store, arena).
- ``worker`` and ``dump``: :class:`ResearchSettings` (harness, store).
"""

from __future__ import annotations

from shoppingbench.settings import HarnessSettings
from trajectories.settings import StoreSettings


class ResearchSettings(HarnessSettings, StoreSettings):
    """The researcher's commands (``worker``, ``dump``): the harness and the trajectory store."""
