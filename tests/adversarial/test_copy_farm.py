"""A copy farm (issue 22, item 2): three hotkeys upload one honest miner's agent, verbatim, renamed and
reformatted, to farm weight. Through the real gate (signed HTTP, the embedded chain), the race engine
fed from its verdicts and the weights: no copy qualifies or races, the original keeps its credit, and
the taper share goes to the honest challengers.

Issue 43, item 3: a six-line rewrite (a conditional expression for an ``if``, a loop for
``bool(a or b or c)``) is still a copy; rewrites of the bundled ReAct agent are copies of it and take
nothing; a squatter uploading the bundled agent first blocks no miner's prompt-tuned variant of it."""

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
from tests.copy_variants import extended, reformatted, renamed
from tests.fixtures.copy_rewrites import HONEST as VARIANTS
from tests.fixtures.copy_rewrites import REACT, REWRITES, apply, rewrite

TUNED_REACT = VARIANTS["prompt_tuned"]
OTHER_TUNED_REACT = VARIANTS["other_prompt_tuned"]

HONEST = {"oro_style": VARIANTS["oro_style_agent"], "tuner": VARIANTS["other_prompt_tuned"]}
FARM = {"bob": ORIGINAL, "carol": renamed(ORIGINAL), "dave": reformatted(ORIGINAL)}
RACE_SCORES = {"alice": 0.6, "oro_style": 0.5, "tuner": 0.4}


@pytest.fixture
def miners(tmp_path: Path) -> Miners:
    return Miners(tmp_path, ("alice", "bob", "carol", "dave", "oro_style", "tuner"))


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
    assert statuses == {"alice": 201, "bob": 409, "carol": 409, "dave": 409, "oro_style": 201, "tuner": 201}
    shares = _race(miners, race)
    assert race.state.last_race is not None
    raced = {race.state.submissions[sid].hotkey for sid in race.state.last_race.entrants}
    assert raced == {miners.hotkey(n) for n in ("alice", "oro_style", "tuner")}
    # Three distinct codes: the winner and the best honest challenger; no copy earns anything.
    assert set(shares) == {"alice", "oro_style"}
    assert shares["oro_style"] == pytest.approx(0.2, abs=1e-4)


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
    assert set(shares) == {"alice", "oro_style"}


def test_a_near_copy_with_statements_added_is_still_a_copy(miners: Miners, gate: RunningValidator) -> None:
    miners.commit_as("alice", ORIGINAL)
    miners.next_block()
    padded = extended(renamed(ORIGINAL), statements=4)
    miners.commit_as("bob", padded)
    assert miners.upload(gate.url, "alice", ORIGINAL)[0] == 201
    status, answer = miners.upload(gate.url, "bob", padded)
    assert status == 409 and answer["copy_of"]["hotkey"] == miners.hotkey("alice")  # type: ignore[index]


# Issue 43, item 3: copies judged by what they keep, the public agents nobody's original.

def _public_react(answer: dict[str, object]) -> bool:
    copied = answer.get("copy_of")
    return isinstance(copied, dict) and copied["hotkey"] == "public:shoppingbench/agents/react_llm.py"


def test_the_six_line_rewrite_of_a_miners_agent_is_refused(miners: Miners, gate: RunningValidator) -> None:
    # An if made a conditional expression, a bool(a or b or c) made a loop: 6 lines of a 100-line file.
    original = TUNED_REACT
    rewritten = apply(original, [*REWRITES["if_to_conditional"], *REWRITES["or_to_loop"]])
    miners.commit_as("alice", original)
    miners.next_block()
    miners.commit_as("bob", rewritten)
    assert miners.upload(gate.url, "alice", original)[0] == 201
    status, answer = miners.upload(gate.url, "bob", rewritten)
    assert status == 409, answer
    assert answer["copy_of"]["hotkey"] == miners.hotkey("alice")  # type: ignore[index]


def test_three_rewrites_of_the_public_agent_take_nothing(miners: Miners, gate: RunningValidator) -> None:
    farm = {"bob": rewrite("six_line_edit"), "carol": rewrite("dead_lines_40"),
            "dave": rewrite("six_line_edit_renamed_reordered")}
    miners.commit_as("alice", TUNED_REACT)
    for name, source in farm.items():
        miners.commit_as(name, source)
    race = RaceEngine(MemoryEventStore(), RaceRules(), miners.clock)
    statuses = {}
    for name, source in [("alice", TUNED_REACT), *farm.items()]:
        status, answer = miners.upload(gate.url, name, source)
        statuses[name] = status
        assert status == 201 or _public_react(answer), answer
        ingest_uploads(gate.gate.verdicts.all(), race, {})
    assert statuses == {"alice": 201, "bob": 409, "carol": 409, "dave": 409}
    raced = {s.hotkey for s in race.pending_qualifying()}
    assert raced == {miners.hotkey("alice")}


def test_a_prompt_tuned_react_is_no_copy_of_whoever_uploaded_react_first(miners: Miners,
                                                                        gate: RunningValidator) -> None:
    # Alice squats the bundled agent; Bob and Carol each tune it (their own prompt, steps, temperature).
    miners.commit_as("alice", REACT)
    miners.next_block()
    miners.commit_as("bob", TUNED_REACT)
    miners.commit_as("carol", OTHER_TUNED_REACT)
    status, answer = miners.upload(gate.url, "alice", REACT)
    assert status == 409 and _public_react(answer), answer
    assert miners.upload(gate.url, "bob", TUNED_REACT)[0] == 201
    assert miners.upload(gate.url, "carol", OTHER_TUNED_REACT)[0] == 201


def test_squatting_the_public_agent_blocks_nobody(miners: Miners, gate: RunningValidator) -> None:
    # The squatter commits the public agent (and a near copy of it) before anyone else.
    miners.commit_as("alice", REACT)
    miners.commit_as("bob", rewrite("renamed_everything"))
    miners.next_block()
    miners.commit_as("carol", TUNED_REACT)
    miners.commit_as("dave", OTHER_TUNED_REACT)
    for name, source in (("alice", REACT), ("bob", rewrite("renamed_everything"))):
        status, answer = miners.upload(gate.url, name, source)
        assert status == 409 and _public_react(answer), answer
    assert miners.upload(gate.url, "carol", TUNED_REACT)[0] == 201
    assert miners.upload(gate.url, "dave", OTHER_TUNED_REACT)[0] == 201
    # A copy of a miner's variant is still that miner's copy.
    miners.commit_as("oro_style", renamed(TUNED_REACT))
    status, answer = miners.upload(gate.url, "oro_style", renamed(TUNED_REACT))
    assert status == 409 and answer["copy_of"]["hotkey"] == miners.hotkey("carol")  # type: ignore[index]
