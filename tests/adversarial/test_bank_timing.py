"""Bank timing: a hostile miner reads a sealed problem bank the moment its drand round is emitted, writes
an agent for its problems and commits it, hoping to enter the race drawn from that bank. A race admits
challengers committed at least ``tempo`` blocks before its seed block (the first block at or after the
slot); at a tempo of 100 blocks (20 minutes) a bank opening 30 minutes before the slot left 10 minutes for
that. A bank may not open before its race slot: every entrant of the race was committed before the slot,
so before the bank's round, whatever the tempo."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import pytest

from arena.chain import LocalChain
from arena.race import ManualClock
from arena.race.calendar import race_slot
from arena.race.rules import may_race
from arena.race.state import Submission
from arena.suites.bank import BankError, check_reveal, round_at, round_time
from arena.validator.seeds import ChainSeeds
from tests.chain_support import make_wallet, register

DAY = date(2026, 12, 1)
SLOT = race_slot(DAY, time(16, 0))
TEMPO = 100


def _entrant(block: int) -> Submission:
    return Submission(submission_id="s", hotkey="h", code_hash="c", submitted_at=SLOT - timedelta(hours=1),
                      commitment_block=block, status="qualified", qualified_at=SLOT - timedelta(minutes=1))


def _commit_once_open(tmp_path: Path, reveal_round: int) -> bool:
    """On a chain of 12 s blocks with a tempo of 100, a miner commits as soon as ``reveal_round`` is
    emitted; whether that commitment may enter the slot's race."""
    clock = ManualClock(SLOT - timedelta(hours=2))
    chain = LocalChain(tmp_path / f"chain-{reveal_round}.sqlite3", clock=clock, tempo=TEMPO)
    try:
        miner = make_wallet(tmp_path / "wallets", f"miner-{reveal_round}", seed="miner")
        register(chain, miner)
        clock.advance(round_time(reveal_round) - clock.now() + timedelta(seconds=1))
        committed = chain.commit(miner, "ab" * 32)
        assert committed.time >= round_time(reveal_round)
        clock.advance(max(SLOT, clock.now()) - clock.now() + timedelta(minutes=1))
        seed = ChainSeeds(chain).seed_at(SLOT)
        assert seed is not None and chain.tempo() == TEMPO
        return may_race(_entrant(committed.block), SLOT, seed.block, chain.tempo())
    finally:
        chain.close()


def test_a_bank_opening_before_its_slot_is_refused(tmp_path: Path) -> None:
    early = round_at(SLOT - timedelta(minutes=30))
    # What the attack needed: a commitment made once that round was emitted enters the race...
    assert _commit_once_open(tmp_path, early)
    # ... so no validator accepts a bank sealed to it, nor to any round before the slot.
    for minutes in (30, 10, 1):
        with pytest.raises(BankError, match="before its race slot"):
            check_reveal(round_at(SLOT - timedelta(minutes=minutes)), SLOT)


def test_no_commitment_made_once_an_accepted_bank_opens_enters_its_race(tmp_path: Path) -> None:
    for reveal_round in (round_at(SLOT), round_at(SLOT + timedelta(minutes=5))):
        check_reveal(reveal_round, SLOT)  # accepted
        assert not _commit_once_open(tmp_path, reveal_round)


def test_a_slot_between_drand_rounds_opens_with_the_next_round() -> None:
    slot = datetime(2026, 12, 1, 16, 0, 1, tzinfo=UTC)
    assert round_time(round_at(slot)) >= slot
    check_reveal(round_at(slot), slot)
    with pytest.raises(BankError):
        check_reveal(round_at(slot) - 1, slot)
