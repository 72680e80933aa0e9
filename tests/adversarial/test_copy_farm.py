"""A copy farm (issue 22, item 2): three hotkeys upload one honest miner's agent, verbatim, renamed and
reformatted, to farm weight. Through the real gate (signed HTTP, the embedded chain), the race engine
fed from its verdicts and the weights: no copy qualifies or races, the original keeps its credit, and
the taper share goes to the honest challengers."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

import pytest

from arena.race import MemoryEventStore, RaceEngine, RaceRules
from arena.validator.ingest import ingest_uploads
from arena.weights import WeightRules, compute_weights
from tests.arena.submissions.test_submission_copies import ORIGINAL, Miners
from tests.chain_support import RunningValidator, running_validator
from tests.copy_variants import REPO, extended, reformatted, renamed

HONEST = {name: (REPO / "shoppingbench" / "agents" / f"{name}.py").read_text()
          for name in ("tool_calling_llm", "sub_task")}
FARM = {"bob": ORIGINAL, "carol": renamed(ORIGINAL), "dave": reformatted(ORIGINAL)}
RACE_SCORES = {"alice": 0.6, "tool_calling_llm": 0.5, "sub_task": 0.4}


@pytest.fixture
def miners(tmp_path: Path) -> Miners:
    return Miners(tmp_path, ("alice", "bob", "carol", "dave", "tool_calling_llm", "sub_task"))


@pytest.fixture
def gate(miners: Miners) -> Iterator[RunningValidator]:
    with running_validator(miners.chain, miners.validator, miners.root / "validator",
                           clock=miners.clock) as running:
        yield running


def _next_race_slot(miners: Miners) -> None:
    now = miners.clock.now()
    slot = datetime.combine(now.date(), time(16), tzinfo=UTC)
    miners.clock.advance((slot if slot > now else slot + timedelta(days=1)) - now)


def _race(miners: Miners, race: RaceEngine) -> dict[str, float]:
    """Qualify everything waiting (all pass), race at the next slot (scores by miner name, ``RACE_SCORES``
    or 0.55, above the honest challengers); the weights' shares by miner name, the burn left out."""
    names = {miners.hotkey(name): name for name in miners.wallets}
    for submission in race.pending_qualifying():
        race.record_qualifying(submission.submission_id, 0.9)
    _next_race_slot(miners)
    race.start_race("0x" + "ab" * 32, ["p1", "p2"])
    for sid in race.pending_race_runs():
        name = names[race.state.submissions[sid].hotkey]
        race.record_race_result(sid, RACE_SCORES.get(name, 0.55))
    finishers, winner = race.weights_input()
    metagraph = ["burn", *names]
    vector = compute_weights(finishers, winner, metagraph, WeightRules())
    total = sum(vector.weights)
    weights = zip(vector.uids, vector.weights, strict=True)
    return {names[metagraph[uid]]: weight / total for uid, weight in weights if uid != 0}


def _upload_all(miners: Miners, gate: RunningValidator, order: list[tuple[str, str]],
                race: RaceEngine) -> dict[str, int]:
    statuses = {}
    fed: dict[tuple[str, str], datetime] = {}
    for name, source in order:
        statuses[name] = miners.upload(gate.url, name, source)[0]
        ingest_uploads(gate.gate.verdicts.all(), race, fed)
    return statuses


def test_a_copy_farm_neither_races_nor_takes_the_taper(miners: Miners, gate: RunningValidator) -> None:
    miners.commit_as("alice", ORIGINAL)
    miners.next_block()
    for name, source in {**FARM, **HONEST}.items():
        miners.commit_as(name, source)
    race = RaceEngine(MemoryEventStore(), RaceRules(), miners.clock)
    statuses = _upload_all(miners, gate, [("alice", ORIGINAL), *FARM.items(), *HONEST.items()], race)
    assert statuses == {"alice": 201, "bob": 409, "carol": 409, "dave": 409, "tool_calling_llm": 201,
                        "sub_task": 201}
    shares = _race(miners, race)
    assert race.state.last_race is not None
    raced = {race.state.submissions[sid].hotkey for sid in race.state.last_race.entrants}
    assert raced == {miners.hotkey(n) for n in ("alice", "tool_calling_llm", "sub_task")}
    # Three distinct codes: the winner and the best honest challenger; no copy earns anything.
    assert set(shares) == {"alice", "tool_calling_llm"}
    assert shares["tool_calling_llm"] == pytest.approx(0.2, abs=1e-4)


def test_a_farm_uploading_before_the_original_loses_its_acceptance(miners: Miners,
                                                                   gate: RunningValidator) -> None:
    # Alice commits first in the block; the farm commits in the same block and uploads first.
    blocks = {miners.commit_as(name, source) for name, source in [("alice", ORIGINAL), *FARM.items()]}
    assert len(blocks) == 1
    for name, source in HONEST.items():
        miners.commit_as(name, source)
    race = RaceEngine(MemoryEventStore(), RaceRules(), miners.clock)
    statuses = _upload_all(miners, gate, [*FARM.items(), ("alice", ORIGINAL), *HONEST.items()], race)
    assert statuses["bob"] == 201 and statuses["alice"] == 201  # bob was first in; then alice's came
    copies = {s.hotkey: s.copy_of for s in race.state.submissions.values() if s.status == "copy"}
    assert set(copies) == {miners.hotkey(n) for n in FARM}
    assert {c.hotkey for c in copies.values() if c is not None} == {miners.hotkey("alice")}
    shares = _race(miners, race)
    assert set(shares) == {"alice", "tool_calling_llm"}


def test_a_near_copy_with_statements_added_is_still_a_copy(miners: Miners, gate: RunningValidator) -> None:
    miners.commit_as("alice", ORIGINAL)
    miners.next_block()
    padded = extended(renamed(ORIGINAL), statements=4)
    miners.commit_as("bob", padded)
    assert miners.upload(gate.url, "alice", ORIGINAL)[0] == 201
    status, answer = miners.upload(gate.url, "bob", padded)
    assert status == 409 and answer["copy_of"]["hotkey"] == miners.hotkey("alice")  # type: ignore[index]
