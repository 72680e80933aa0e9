"""Chain reads for a hot path (the submission gate answers every upload with them), cached.

The metagraph is read at most once per ``max_age`` (about one block: the chain changes no faster). A
hotkey's commitment is kept for as long too, but a caller can ask for a fresh read, which the gate does
before refusing anything because of a commitment: a miner who just committed is never refused on what
the chain said a moment before.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog

from arena.chain.interface import Chain
from arena.chain.models import Commitment, Metagraph
from arena.race.clock import Clock

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class CommitmentRead:
    commitment: Commitment | None
    cached: bool  # from an earlier read, not from the chain just now


class CachedReads:
    """``chain``'s metagraph and commitments, each re-read once older than ``max_age`` by ``clock``."""

    def __init__(self, chain: Chain, clock: Clock, max_age: timedelta) -> None:
        self.chain = chain
        self.max_age = max_age
        self._clock = clock
        self._lock = threading.Lock()  # the gate answers uploads on several threads
        self._metagraph: tuple[datetime, Metagraph] | None = None
        self._commitments: dict[str, tuple[datetime, Commitment | None]] = {}

    def _young(self, read_at: datetime, now: datetime) -> bool:
        return read_at <= now < read_at + self.max_age

    def metagraph(self) -> Metagraph:
        with self._lock:
            now = self._clock.now()
            if self._metagraph is None or not self._young(self._metagraph[0], now):
                self._metagraph = (now, self.chain.metagraph())
                log.debug("chain_metagraph_read", block=self._metagraph[1].block)
            return self._metagraph[1]

    def is_registered(self, hotkey: str) -> bool:
        return self.metagraph().neuron(hotkey) is not None

    def registered_if_known(self, hotkey: str) -> bool | None:
        """Whether the kept metagraph registers ``hotkey``, without waiting: ``None`` when no young
        metagraph is kept or another thread is reading the chain (for an event loop, which must not block)."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            kept = self._metagraph
            if kept is None or not self._young(kept[0], self._clock.now()):
                return None
            return kept[1].neuron(hotkey) is not None
        finally:
            self._lock.release()

    def latest_commitment(self, hotkey: str, *, fresh: bool = False) -> CommitmentRead:
        """The hotkey's latest commitment: the kept one unless ``fresh`` or too old."""
        with self._lock:
            now = self._clock.now()
            kept = self._commitments.get(hotkey)
            if kept is not None and not fresh and self._young(kept[0], now):
                return CommitmentRead(kept[1], cached=True)
            commitment = self.chain.latest_commitment(hotkey)
            self._commitments[hotkey] = (now, commitment)
            return CommitmentRead(commitment, cached=False)
