"""The copy rule at the submission gate, over real HTTP with real hotkeys on the embedded chain: copies of
another hotkey's earlier commitment (verbatim, renamed, reformatted, extended) are refused naming the
original, the original is the earlier commitment whatever the upload order, and the race engine fed
from the gate's verdicts never qualifies or races a copy."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from bittensor import Wallet

from arena.race import MemoryEventStore, RaceEngine, RaceRules
from arena.validator.ingest import ingest_uploads
from tests.arena.submissions.test_submissions import Net, post
from tests.chain_support import RunningValidator, make_wallet, register, running_validator
from tests.copy_variants import disguised, extended, reformatted, renamed
from tests.fixtures.copy_rewrites import HONEST as VARIANTS

ORIGINAL = VARIANTS["prompt_tuned"]
"""A miner's own agent: the bundled ReAct agent with a prompt, steps and temperature of its own."""
HONEST = VARIANTS["oro_style_agent"]


def verbatim(source: str) -> str:
    return source


COPIES: list[Callable[[str], str]] = [verbatim, renamed, reformatted, extended, disguised]


class Miners(Net):
    """The local chain of :class:`Net` with more registered miners, each committing and uploading."""

    def __init__(self, root: Path, names: tuple[str, ...]) -> None:
        super().__init__(root)
        self.wallets: dict[str, Wallet] = {}
        for name in names:
            self.wallets[name] = make_wallet(root / "wallets", name)
            register(self.chain, self.wallets[name])

    def hotkey(self, name: str) -> str:
        return str(self.wallets[name].hotkey.ss58_address)

    def commit_as(self, name: str, source: str) -> int:
        """Commit ``source``'s hash for ``name``; returns the block."""
        self.commit(source.encode(), self.wallets[name])
        commitment = self.chain.latest_commitment(self.hotkey(name))
        assert commitment is not None
        return commitment.block

    def upload(self, url: str, name: str, source: str) -> tuple[int, dict[str, object]]:
        response = post(url, *self.signed(source.encode(), wallet=self.wallets[name]))
        return response.status_code, response.json()

    def next_block(self) -> None:
        self.clock.advance(timedelta(seconds=13))


@pytest.fixture
def miners(tmp_path: Path) -> Miners:
    return Miners(tmp_path, ("alice", "bob", "carol", "dave"))


@pytest.fixture
def gate(miners: Miners) -> Iterator[RunningValidator]:
    with running_validator(miners.chain, miners.validator, miners.root / "validator",
                           clock=miners.clock) as running:
        yield running


@pytest.mark.parametrize("disguise", COPIES, ids=lambda f: f.__name__)
def test_a_copy_of_an_earlier_commitment_is_refused_naming_the_original(
        miners: Miners, gate: RunningValidator, disguise: Callable[[str], str]) -> None:
    block = miners.commit_as("alice", ORIGINAL)
    assert miners.upload(gate.url, "alice", ORIGINAL)[0] == 201
    miners.next_block()
    copy = disguise(ORIGINAL)
    miners.commit_as("bob", copy)
    status, answer = miners.upload(gate.url, "bob", copy)
    assert status == 409 and answer["error"] == "copy", answer
    original = answer["copy_of"]
    assert isinstance(original, dict)
    assert (original["hotkey"], original["commitment_block"]) == (miners.hotkey("alice"), block)
    assert original["code_hash"] == hashlib.sha256(ORIGINAL.encode()).hexdigest()
    # The statements `extended` adds are never read: live code, they do not count.
    assert (original["similarity"] == 1.0) == (disguise in (verbatim, renamed, extended))
    # The verdict is kept: asked again, the same answer; the cooldown started.
    assert miners.upload(gate.url, "bob", copy) == (409, answer)
    verdicts = {v.hotkey: v for v in gate.gate.verdicts.all()}
    assert verdicts[miners.hotkey("bob")].outcome == "copy"
    assert verdicts[miners.hotkey("bob")].copy_of is not None
    assert verdicts[miners.hotkey("alice")].outcome == "accepted"
    assert miners.upload(gate.url, "alice", ORIGINAL)[0] == 200


def test_an_honest_different_agent_is_accepted(miners: Miners, gate: RunningValidator) -> None:
    miners.commit_as("alice", ORIGINAL)
    assert miners.upload(gate.url, "alice", ORIGINAL)[0] == 201
    miners.commit_as("bob", HONEST)
    status, answer = miners.upload(gate.url, "bob", HONEST)
    assert status == 201, answer


def test_a_hotkey_uploading_its_own_code_again_is_not_a_copy(miners: Miners, gate: RunningValidator) -> None:
    miners.commit_as("alice", ORIGINAL)
    assert miners.upload(gate.url, "alice", ORIGINAL)[0] == 201
    miners.clock.advance(timedelta(hours=13))
    miners.commit_as("alice", renamed(ORIGINAL))
    assert miners.upload(gate.url, "alice", renamed(ORIGINAL))[0] == 201


@pytest.mark.parametrize("copy_uploads_first", [True, False])
def test_in_one_block_the_earlier_commitment_is_the_original_whatever_the_upload_order(
        miners: Miners, gate: RunningValidator, copy_uploads_first: bool) -> None:
    # Carol's hotkey commits first in the block, Dave's copy second (its extrinsic index is higher).
    copy = renamed(ORIGINAL)
    assert miners.commit_as("carol", ORIGINAL) == miners.commit_as("dave", copy)
    race = RaceEngine(MemoryEventStore(), RaceRules(), miners.clock)
    fed: dict[tuple[str, str], datetime] = {}
    uploads = [("carol", ORIGINAL), ("dave", copy)]
    if copy_uploads_first:
        uploads.reverse()
    for name, source in uploads:
        miners.upload(gate.url, name, source)
        ingest_uploads(gate.gate.verdicts.all(), race, fed)
    # Dave's copy, even when it was accepted first, is now a copy of Carol's file.
    status, answer = miners.upload(gate.url, "dave", copy)
    assert status == 409 and answer["copy_of"]["hotkey"] == miners.hotkey("carol")  # type: ignore[index]
    assert miners.upload(gate.url, "carol", ORIGINAL)[0] == 200
    by_hotkey = {s.hotkey: s for s in race.state.submissions.values()}
    assert by_hotkey[miners.hotkey("dave")].status == "copy"
    assert by_hotkey[miners.hotkey("dave")].copy_of is not None
    assert by_hotkey[miners.hotkey("carol")].status == "qualifying"
    assert [s.hotkey for s in race.pending_qualifying()] == [miners.hotkey("carol")]
    # Feeding the verdicts again feeds nothing twice.
    assert ingest_uploads(gate.gate.verdicts.all(), race, fed) == 0
