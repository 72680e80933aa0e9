"""Race and qualifying seeds every honest validator agrees on and nobody knows in advance (SPEC 4, 5).

A race's seed is the hash of the first final block at or after the race slot, not of the block at which
this validator happens to start the race, so a late or restarted validator generates the same hidden suite.
A submission's qualifying seed is the hash of the first final block after its commitment's upload window
(:func:`arena.race.rules.upload_deadline`): it does not exist while the file can still change or still be
uploaded, so nobody uploads knowing his draw. There is no fallback: a seed the chain cannot give yet is asked
for again on a later tick, never made up locally.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from datetime import datetime, timedelta

import structlog

from arena.chain import Chain
from arena.suites.public import RaceSeed

log = structlog.get_logger(__name__)

_PREDICTIONS = 4
"""How many times the search re-predicts the slot's block from the block time before it gallops."""


def first_block_at_or_after(time_of: Callable[[int], datetime], slot: datetime, head: int,
                            block_seconds: float) -> int | None:
    """The first block among ``0..head`` whose time is at or after ``slot``; ``None`` when ``head`` is
    still before it. ``time_of`` must not decrease with the block number.

    Each ``time_of`` may be a network read, so the search starts where the block time predicts the slot,
    predicting again from each prediction's own time (missed slots make a chain fall behind its nominal
    rate, so one prediction from far away can miss by many blocks), brackets the answer with steps that
    double away from there, then bisects: a few reads when the predictions are close, never more than
    about twice a plain bisection.
    """
    time_at = functools.cache(time_of)
    if time_at(head) < slot:
        return None
    interval = timedelta(seconds=block_seconds)
    guess = head
    for _ in range(_PREDICTIONS):
        predicted = min(head, max(0, guess - math.floor((time_at(guess) - slot) / interval)))
        if predicted == guess:
            break
        guess = predicted
    step = 1
    if time_at(guess) >= slot:
        high, low = guess, guess - step
        while low >= 0 and time_at(low) >= slot:
            high, step = low, step * 2
            low = high - step
        low = max(low, -1)  # -1: the slot comes before every block
    else:
        low, high = guess, guess + step
        while high < head and time_at(high) < slot:
            low, step = high, step * 2
            high = low + step
        high = min(high, head)
    while high - low > 1:  # time_at(low) < slot <= time_at(high)
        middle = (low + high) // 2
        if time_at(middle) >= slot:
            high = middle
        else:
            low = middle
    return high


class ChainSeeds:
    """Race seeds read from ``chain``; a found seed is kept (it can no longer change)."""

    def __init__(self, chain: Chain) -> None:
        self.chain = chain
        self._found: dict[datetime, RaceSeed] = {}
        self._after: dict[int, RaceSeed] = {}

    def seed_at(self, slot: datetime) -> RaceSeed | None:
        """The seed of the race whose slot is ``slot`` with its block, or ``None`` while no final block has
        reached the slot yet (ask again on a later tick)."""
        if slot in self._found:
            return self._found[slot]
        finalized = self.chain.finalized_block()
        block = first_block_at_or_after(self.chain.block_time, slot, finalized, self.chain.block_seconds())
        if block is None:
            log.info("race_seed_pending", slot=slot.isoformat(), finalized_block=finalized)
            return None
        seed = RaceSeed(block=block, hash=self.chain.block_hash(block))
        self._found[slot] = seed
        log.info("race_seed_found", slot=slot.isoformat(), block=block, seed=seed.hash)
        return seed

    def after_block(self, block: int) -> RaceSeed | None:
        """The first final block after ``block`` (the end of a commitment's upload window) with its hash,
        or ``None`` while that block is not final yet (ask again on a later tick)."""
        if block in self._after:
            return self._after[block]
        finalized = self.chain.finalized_block()
        if block + 1 > finalized:
            log.info("qualifying_seed_pending", commitment_block=block, finalized_block=finalized)
            return None
        seed = RaceSeed(block=block + 1, hash=self.chain.block_hash(block + 1))
        self._after[block] = seed
        return seed

    def genesis_time(self) -> datetime:
        """When the chain began: no race slot before it has a seed."""
        return self.chain.block_time(0)
