"""A copy farm (issue 22, item 2): three hotkeys upload one honest miner's agent, verbatim, renamed and
reformatted, to farm weight. Through the real gate (signed HTTP, the embedded chain), the race engine
fed from its verdicts and the weights: no copy qualifies or races, the original keeps its credit, and
the taper share goes to the honest challengers.

Issue 43, item 3: a six-line rewrite (a conditional expression for an ``if``, a loop for
``bool(a or b or c)``) is still a copy; rewrites of the bundled ReAct agent are copies of it and take
nothing; a squatter uploading the bundled agent first blocks no miner's prompt-tuned variant of it; a
near copy brought just under the code threshold is refused by what it does (the validator re-runs the
original on its qualifying problems) and takes no taper slot."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

import pytest

from arena.race import ManualClock, MemoryEventStore, RaceEngine, RaceRules
from arena.race.events import CopyOf
from arena.storage import open_database
from arena.validator.behaviour import record_copy
from arena.validator.ingest import ingest_uploads
from arena.validator.runs import RunAgent
from arena.weights import WeightRules, compute_weights
from shoppingbench.generator import ProblemGenerator
from shoppingbench.sample_world import SampleWorld
from tests.adversarial.arena_support import one_validator
from tests.arena.submissions.test_submission_copies import ORIGINAL, Miners
from tests.chain_support import RunningValidator, running_validator
from tests.copy_variants import extended, reformatted, renamed
from tests.fixtures.copy_rewrites import HONEST as VARIANTS
from tests.fixtures.copy_rewrites import REACT, REWRITES, UNDER_THRESHOLD, apply, rewrite, tuned_react

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


def _next_race_slot(clock: ManualClock) -> None:
    now = clock.now()
    slot = datetime.combine(now.date(), time(16), tzinfo=UTC)
    clock.advance((slot if slot > now else slot + timedelta(days=1)) - now)


def _race(miners: Miners, race: RaceEngine) -> dict[str, float]:
    """Qualify everything waiting (all pass), race at the next slot (scores by miner name, ``RACE_SCORES``
    or 0.55, above the honest challengers); the weights' shares by miner name, the burn left out."""
    names = {miners.hotkey(name): name for name in miners.wallets}
    for submission in race.pending_qualifying():
        race.record_qualifying(submission.submission_id, 0.9)
    _next_race_slot(miners.clock)
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


# Issue 43, item 3: copies judged by what they do.

def test_a_near_copy_under_the_code_threshold_takes_no_taper(
        tmp_path: Path, small_world: SampleWorld, generator: ProblemGenerator, runner: RunAgent) -> None:
    """Bob rewrites Alice's agent just under the code threshold (both six-line edits, six phrases of her
    prompt swapped): the gate accepts it, but once its qualifying run would qualify it the validator
    re-runs Alice's agent on Bob's problems, finds it acts the same and refuses it. Only Alice and an
    honest agent of its own race; Bob takes no taper slot."""
    tuned = tuned_react()
    near_copy = apply(tuned, UNDER_THRESHOLD)
    with one_validator(tmp_path, small_world, generator, runner, ("alice", "bob", "carol")) as arena:
        validator = arena.validator
        arena.upload("alice", tuned.encode())
        arena.past_upload_window()
        arena.upload("bob", near_copy.encode())
        arena.upload("carol", HONEST["oro_style"].encode())
        arena.past_upload_window()
        validator.tick()
        bob = validator.race.state.latest_of(arena.hotkey("bob"))
        assert bob is not None and bob.status == "copy" and bob.copy_of is not None
        assert (bob.copy_of.basis, bob.copy_of.hotkey) == ("behaviour", arena.hotkey("alice"))
        _next_race_slot(arena.clock)
        validator.tick()
        last = validator.race.state.last_race
        assert last is not None
        assert {validator.race.state.submissions[sid].hotkey for sid in last.entrants} == {
            arena.hotkey("alice"), arena.hotkey("carol")}
        finishers, _ = validator.race.weights_input()
        assert arena.hotkey("bob") not in {f.hotkey for f in finishers}


def test_a_copy_found_by_behaviour_is_answered_as_one_by_the_gate(miners: Miners,
                                                                 gate: RunningValidator) -> None:
    """The gate lets the near copy in (its code similarity is under the threshold); once the validator has
    found it a copy by behaviour, its re-upload is refused naming the original, and the race engine fed
    from the gate's verdicts is not fed it again."""
    tuned = tuned_react()
    near_copy = apply(tuned, UNDER_THRESHOLD)
    miners.commit_as("alice", tuned)
    miners.next_block()
    miners.commit_as("bob", near_copy)
    race = RaceEngine(MemoryEventStore(), RaceRules(), miners.clock)
    assert miners.upload(gate.url, "alice", tuned)[0] == 201
    assert miners.upload(gate.url, "bob", near_copy)[0] == 201
    fed: dict[tuple[str, str], datetime] = {}
    ingest_uploads(gate.gate.verdicts.all(), race, fed)
    alice = race.state.latest_of(miners.hotkey("alice"))
    bob = race.state.latest_of(miners.hotkey("bob"))
    assert alice is not None and bob is not None and alice.commitment_block is not None
    original = CopyOf(hotkey=alice.hotkey, code_hash=alice.code_hash, commitment_block=alice.commitment_block,
                      similarity=1.0, basis="behaviour", submission_id=alice.submission_id)
    engine = open_database(f"sqlite:///{miners.root / 'validator' / 'arena.sqlite3'}")
    try:
        record_copy(engine, race, bob, original)
    finally:
        engine.dispose()
    assert race.state.submissions[bob.submission_id].copy_of == original
    status, answer = miners.upload(gate.url, "bob", near_copy)
    assert status == 409 and answer["copy_of"]["basis"] == "behaviour", answer  # type: ignore[index]
    events = race.state.events
    assert ingest_uploads(gate.gate.verdicts.all(), race, fed) == 0 and race.state.events == events
