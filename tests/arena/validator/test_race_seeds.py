"""The search behind race seeds (``arena.validator.seeds.first_block_at_or_after``): the first block at or
after a race slot, over block times with missed slots and jitter, in few reads; and qualifying seeds (the
first final block after a commitment) read from the embedded chain, asked again while not final."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from arena.chain import LocalChain
from arena.race import ManualClock
from arena.validator.seeds import ChainSeeds, first_block_at_or_after

T0 = datetime(2026, 11, 19, 16, 0, tzinfo=UTC)


class Reads:
    """Block times of a chain, counting how many distinct blocks the search asked for."""

    def __init__(self, times: list[datetime]) -> None:
        self.times = times
        self.asked: set[int] = set()

    def __call__(self, block: int) -> datetime:
        assert 0 <= block < len(self.times), f"asked for block {block}, which does not exist"
        self.asked.add(block)
        return self.times[block]


# Mostly one 12 s slot, sometimes a little jitter, sometimes missed slots or a stalled chain.
GAPS = st.lists(st.sampled_from([12] * 12 + [11, 13, 24, 36, 60, 600]), min_size=0, max_size=500)


@settings(max_examples=150, deadline=None)
@given(gaps=GAPS, offset=st.integers(min_value=-60, max_value=8_000))
def test_finds_the_first_block_at_or_after_the_slot_in_few_reads(gaps: list[int], offset: int) -> None:
    times = [T0]
    for gap in gaps:
        times.append(times[-1] + timedelta(seconds=gap))
    slot = T0 + timedelta(seconds=offset)
    reads = Reads(times)
    expected = next((n for n, t in enumerate(times) if t >= slot), None)
    assert first_block_at_or_after(reads, slot, len(times) - 1, 12.0) == expected
    bisection = math.ceil(math.log2(len(times) + 1))
    assert len(reads.asked) <= 2 * bisection + 6


def test_on_regular_blocks_three_reads_find_the_slot_among_millions() -> None:
    head = 6_000_000
    asked: list[int] = []

    def time_of(block: int) -> datetime:
        asked.append(block)
        return T0 + timedelta(seconds=12 * block)

    slot = T0 + timedelta(seconds=12 * 4_321_000 + 5)
    assert first_block_at_or_after(time_of, slot, head, 12.0) == 4_321_001
    assert len(set(asked)) <= 3
    assert first_block_at_or_after(time_of, T0 + timedelta(seconds=12 * head + 1), head, 12.0) is None
    assert first_block_at_or_after(time_of, T0 - timedelta(days=1), head, 12.0) == 0


class FinalityLag(LocalChain):
    """The embedded chain with finality ``lag`` blocks behind the head, as on a real network."""

    lag = 2

    def finalized_block(self) -> int:
        return max(0, self.block() - self.lag)


def test_a_qualifying_seed_is_the_first_final_block_after_the_commitment_and_waits_for_it(
        tmp_path: Path) -> None:
    clock = ManualClock(T0)
    chain = FinalityLag(tmp_path / "chain.sqlite3", clock=clock)
    clock.advance(timedelta(seconds=12 * 50))
    commitment = chain.block()  # the block the miner's commitment landed in
    seeds = ChainSeeds(chain)
    clock.advance(timedelta(seconds=12 * 2))  # block commitment + 1 exists, but is not final yet
    assert chain.block() == commitment + 2 and seeds.after_block(commitment) is None
    clock.advance(timedelta(seconds=12))
    seed = seeds.after_block(commitment)
    assert seed is not None and seed.block == commitment + 1 and seed.hash == chain.block_hash(commitment + 1)
    # A validator started later (or restarted) reads the same block, however far the chain has moved on.
    clock.advance(timedelta(days=3))
    assert ChainSeeds(chain).after_block(commitment) == seed
    assert seeds.after_block(commitment + 1) != seed
