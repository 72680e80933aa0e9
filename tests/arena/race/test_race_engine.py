"""The race engine end to end: qualify, race, promote or defend, embargo, publish, restart."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from arena.judge import ProblemOutcome
from arena.race import (
    EVENT_ADAPTER,
    ManualClock,
    MarginCurve,
    MemoryEventStore,
    RaceEngine,
    RaceRules,
    Rejection,
    SqlEventStore,
    replay,
)
from arena.race.events import (
    CopyOf,
    QualifyingFinished,
    RaceFinished,
    RaceResultRecorded,
    RaceSkipped,
    RaceStarted,
)
from arena.race.rules import qualifying_threshold
from arena.race.state import InvalidEvent, apply
from arena.storage import ConcurrentWriterError, open_database
from arena.weights import WeightRules, race_shares, ranking, seeded_tie_break
from shoppingbench.submission_check import check_agent

T0 = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)  # a Wednesday morning; races at 16:00 UTC
RULES = RaceRules(race_time=time(16), qualify_ratio=0.95, qualify_min_score=0.01,
                  margin=MarginCurve(initial=0.05, floor=0.01, half_life_days=7))


def until_race(clock: ManualClock) -> None:
    """Move to the next 16:00 UTC slot."""
    now = clock.now()
    slot = datetime.combine(now.date(), time(16), tzinfo=UTC)
    clock.advance((slot if slot > now else slot + timedelta(days=1)) - now)


def race(engine: RaceEngine, scores: dict[str, float], seed: str = "0xblock") -> RaceStarted:
    assert engine.race_due() is not None
    started = engine.start_race(seed, ["p1", "p2", "p3"])
    assert isinstance(started, RaceStarted)
    for sid in engine.pending_race_runs():
        engine.record_race_result(sid, scores[engine.state.submissions[sid].hotkey])
    return started


def enter(engine: RaceEngine, clock: ManualClock, hotkey: str, qualifying: float,
          block: int | None = None, *, winner_score: float = 0.0) -> str:
    """A submission qualifying with ``qualifying``; while a winner reigns, it scored ``winner_score`` on the
    same problems."""
    outcome = engine.submit(hotkey, f"code-of-{hotkey}-{clock.now().isoformat()}", commitment_block=block)
    assert outcome.status == "accepted" and outcome.submission_id
    engine.record_qualifying(outcome.submission_id, qualifying,
                             winner_score=None if engine.state.reign is None else winner_score)
    clock.advance(timedelta(minutes=5))
    return outcome.submission_id


def test_first_race_crowns_the_best_and_embargoes_until_the_next_weekday() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    a = enter(engine, clock, "alice", 0.6)
    b = enter(engine, clock, "bob", 0.7)
    until_race(clock)
    started = race(engine, {"alice": 0.55, "bob": 0.5})
    assert started.entrants == (a, b) and started.defender is None and started.day == date(2026, 11, 18)
    state = engine.state
    assert state.reign is not None and state.reign.submission_id == a
    assert state.last_race is not None and state.last_race.standings == (a, b)
    assert state.embargoed == {a: datetime(2026, 11, 19, tzinfo=UTC)}
    clock.advance(timedelta(hours=7, minutes=59))  # 23:59 on race day: still embargoed
    assert engine.settle() == [] and a not in engine.state.published
    clock.advance(timedelta(minutes=1))
    assert [e.type for e in engine.settle()] == ["code_published"]
    assert engine.state.published == {a: datetime(2026, 11, 19, tzinfo=UTC)}
    finishers, winner = engine.weights_input()
    assert winner == "alice" and sorted(f.hotkey for f in finishers) == ["alice", "bob"]


def test_the_threshold_is_the_winners_score_on_the_challengers_own_problems() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    alice = enter(engine, clock, "alice", 1.0)  # e.g. a table of public problems: it never sets a bar
    until_race(clock)
    race(engine, {"alice": 0.6})
    low = engine.submit("carol", "c").submission_id
    assert low
    result = engine.record_qualifying(low, 0.569, winner_score=0.6)
    assert result.threshold == pytest.approx(0.57) and not result.qualified
    assert (result.winner, result.winner_score) == (alice, 0.6)
    dave = engine.submit("dave", "d").submission_id
    assert dave and engine.record_qualifying(dave, 0.57, winner_score=0.6).qualified
    erin = engine.submit("erin", "e").submission_id or ""
    assert engine.record_qualifying(erin, 0.2, winner_score=0.0).threshold == RULES.qualify_min_score
    frank = engine.submit("frank", "f").submission_id or ""
    assert engine.record_qualifying(frank, 0.0, winner_score=0.0).qualified is False


@pytest.mark.parametrize(("winner_score", "threshold"), [
    (None, 0.01),  # nobody reigns: the floor alone
    (0.0, 0.01),  # a table winner on fresh problems
    (0.005, 0.01),
    (0.6, 0.57),
    (1.0, 0.95),
])
def test_the_threshold_is_the_ratio_of_the_winners_score_on_the_same_problems_or_the_floor(
        winner_score: float | None, threshold: float) -> None:
    assert qualifying_threshold(winner_score, RULES) == pytest.approx(threshold)


def test_the_winners_score_on_the_same_problems_is_required_while_it_reigns_and_only_then() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    bob = engine.submit("bob", "b").submission_id or ""
    with pytest.raises(ValueError, match="only then"):
        engine.record_qualifying(bob, 0.5, winner_score=0.4)
    assert engine.record_qualifying(bob, 0.5).threshold == RULES.qualify_min_score
    until_race(clock)
    race(engine, {"bob": 0.5})
    carol = engine.submit("carol", "c").submission_id or ""
    with pytest.raises(ValueError, match="required while a winner reigns"):
        engine.record_qualifying(carol, 0.9)
    assert engine.state.submissions[carol].status == "qualifying"  # nothing was recorded
    forged = QualifyingFinished(at=clock.now(), submission_id=carol, score=0.9, threshold=0.01,
                                qualified=True, winner=carol, winner_score=0.0)
    with pytest.raises(InvalidEvent, match="not the reigning winner"):
        apply(engine.state, forged)  # a log whose bar came from anyone but the reigning winner is corrupt


@pytest.mark.parametrize(("challenger", "promoted"), [(0.65, True), (0.646, False), (0.6, False)])
def test_promotion_needs_the_margin(challenger: float, promoted: bool) -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    a = enter(engine, clock, "alice", 0.8)
    until_race(clock)
    race(engine, {"alice": 0.6})
    b = enter(engine, clock, "bob", 0.8)
    until_race(clock)  # the next day: margin 0.01 + 0.04 * 2^(-1/7) = 0.04623
    race(engine, {"alice": 0.6, "bob": challenger})
    last = engine.state.last_race
    assert last is not None and last.required_margin == pytest.approx(0.04623, abs=1e-5)
    assert engine.state.reign is not None
    assert engine.state.reign.submission_id == (b if promoted else a)
    assert last.promoted is promoted


def test_the_margin_shrinks_as_the_reign_ages() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    enter(engine, clock, "alice", 0.8)
    until_race(clock)
    race(engine, {"alice": 0.6})
    clock.advance(timedelta(days=60))  # races skipped meanwhile cost nothing
    b = enter(engine, clock, "bob", 0.8)
    until_race(clock)
    race(engine, {"alice": 0.6, "bob": 0.62})
    assert engine.state.reign is not None and engine.state.reign.submission_id == b


def tied_race(seed: str, hotkeys: tuple[str, ...]) -> tuple[RaceEngine, dict[str, str]]:
    """A first race of ``hotkeys`` (committed in that block order) all scoring 0.5, seeded ``seed``."""
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    ids = {hotkey: enter(engine, clock, hotkey, 0.5, block=100 + i) for i, hotkey in enumerate(hotkeys)}
    until_race(clock)
    race(engine, dict.fromkeys(hotkeys, 0.5), seed=seed)
    return engine, ids


def test_ties_break_on_a_hash_of_the_seed_and_hotkey_not_on_hotkey_or_commitment_order() -> None:
    hotkeys = ("amy", "bea", "cid", "dan", "eve")
    orders = set()
    for seed in (f"0xseed{i}" for i in range(8)):
        engine, ids = tied_race(seed, hotkeys)
        assert engine.state.last_race is not None
        expected = sorted(hotkeys, key=lambda h: seeded_tie_break(seed, h))
        assert engine.state.last_race.standings == tuple(ids[h] for h in expected)
        assert engine.state.reign is not None and engine.state.reign.hotkey == expected[0]
        finishers, _ = engine.weights_input()
        assert [f.hotkey for f in ranking(finishers)] == expected
        orders.add(tuple(expected))
    assert len(orders) > 1  # the order moves with the seed, so it cannot always be hotkey order


def test_among_equal_challengers_the_seed_picks_the_one_promoted_whatever_the_hotkey() -> None:
    # Renaming the hotkeys (a miner choosing keys that sort first) does not choose the promoted one:
    # with this seed, the key that sorts last wins.
    seed = next(f"0x{i:x}" for i in range(1000)
                if seeded_tie_break(f"0x{i:x}", "zzz") < seeded_tie_break(f"0x{i:x}", "aaa"))
    engine, ids = tied_race(seed, ("aaa", "zzz"))
    assert engine.state.reign is not None and engine.state.reign.submission_id == ids["zzz"]


def test_a_day_without_challengers_is_skipped_once() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    until_race(clock)
    assert isinstance(engine.start_race("seed", ["p1"]), RaceSkipped)
    assert engine.race_due() is None
    with pytest.raises(RuntimeError, match="no race is due"):
        engine.start_race("seed", ["p1"])


def test_a_new_submission_supersedes_the_waiting_one() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    old = enter(engine, clock, "alice", 0.5)
    clock.advance(timedelta(hours=12))
    new = engine.submit("alice", "v2").submission_id
    assert engine.state.submissions[old].status == "superseded" and new
    until_race(clock)
    assert isinstance(engine.start_race("seed", ["p"]), RaceSkipped)  # new one has not qualified yet


def test_qualifiers_arriving_mid_race_wait_for_the_next() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    a = enter(engine, clock, "alice", 0.5)
    until_race(clock)
    engine.start_race("seed", ["p1"])
    late = enter(engine, clock, "bob", 0.9)
    engine.record_race_result(a, 0.4)
    assert engine.state.submissions[late].status == "qualified"
    until_race(clock)
    started = engine.start_race("seed2", ["p2"])
    assert isinstance(started, RaceStarted) and started.entrants == (a, late)


def test_restart_in_any_state_resumes_without_rerunning_work(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'race.sqlite3'}"
    clock = ManualClock(T0)
    engine = RaceEngine(SqlEventStore.open(url), RULES, clock)
    a = enter(engine, clock, "alice", 0.6)
    b = engine.submit("bob", "b").submission_id
    assert b
    restarted = RaceEngine(SqlEventStore.open(url), RULES, clock)
    assert [s.submission_id for s in restarted.pending_qualifying()] == [b]  # alice's is done
    restarted.record_qualifying(b, 0.7)  # no winner reigns yet
    until_race(clock)
    restarted.start_race("seed", ["p1", "p2"])
    restarted.record_race_result(a, 0.5)
    again = RaceEngine(SqlEventStore.open(url), RULES, clock)
    assert again.pending_race_runs() == [b] and again.race_due() is None
    # Results all in but the process died before finishing: start-up settles it.
    assert again.state.running is not None
    result = RaceResultRecorded(at=clock.now(), race_id=again.state.running.race_id, submission_id=b,
                                score=0.9)
    SqlEventStore.open(url).append([result], expected=again.state.events)
    final = RaceEngine(SqlEventStore.open(url), RULES, clock)
    assert final.state.running is None and final.state.reign is not None
    assert final.state.reign.submission_id == b
    assert final.state == replay(SqlEventStore.open(url).load())


def test_a_race_keeps_the_key_of_the_generator_that_made_its_suite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'race.sqlite3'}"
    clock = ManualClock(T0)
    engine = RaceEngine(SqlEventStore.open(url), RULES, clock)
    alice = enter(engine, clock, "alice", 0.6)
    until_race(clock)
    key = "sbgen-2/catalog/config"
    started = engine.start_race("seed", ["p1"], generator=key)
    assert isinstance(started, RaceStarted)
    restarted = RaceEngine(SqlEventStore.open(url), RULES, clock)
    assert restarted.state.running is not None and restarted.state.running.generator == key
    restarted.record_race_result(alice, 0.5)
    restarted.settle()
    assert restarted.state.last_race is not None and restarted.state.last_race.generator == key
    # A log written before races recorded their generator still replays, without one.
    older = started.model_dump(mode="json", exclude={"generator"})
    parsed = EVENT_ADAPTER.validate_json(json.dumps(older))
    assert isinstance(parsed, RaceStarted) and parsed.generator is None


def test_two_writers_on_one_log_are_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'race.sqlite3'}"
    clock = ManualClock(T0)
    first = RaceEngine(SqlEventStore.open(url), RULES, clock)
    second = RaceEngine(SqlEventStore.open(url), RULES, clock)
    first.submit("alice", "a")
    with pytest.raises(ConcurrentWriterError):
        second.submit("bob", "b")
    memory = MemoryEventStore()
    RaceEngine(memory, RULES, clock).submit("x", "y")
    with pytest.raises(ConcurrentWriterError):
        memory.append([], expected=0)


def test_a_corrupt_log_is_refused() -> None:
    clock = ManualClock(T0)
    store = MemoryEventStore()
    finished = RaceFinished(at=T0, race_id="2026-11-18", standings=("x",), winner="x", promoted=True,
                            required_margin=0.0, embargo_until=T0)
    store.append([finished], expected=0)
    with pytest.raises(InvalidEvent, match="not running"):
        RaceEngine(store, RULES, clock)


def test_events_round_trip_through_json() -> None:
    clock = ManualClock(T0)
    store = MemoryEventStore()
    engine = RaceEngine(store, RULES, clock)
    enter(engine, clock, "alice", 0.6)
    until_race(clock)
    race(engine, {"alice": 0.6})
    for event in store.load():
        assert EVENT_ADAPTER.validate_json(EVENT_ADAPTER.dump_json(event)) == event


def test_rejections_keep_their_findings_and_logs_written_before_findings_still_replay(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    store = SqlEventStore.open(f"sqlite:///{tmp_path / 'arena.sqlite3'}")
    engine = RaceEngine(store, RULES, clock)
    report = check_agent(b"import subprocess\n\ndef agent_main(problem):\n    return []\n")
    rejection = Rejection.from_report(report)
    assert rejection is not None
    engine.submit("mallory", report.sha256, rejection)
    # A rejection as logs held it before findings were recorded (the payload has no "findings" key).
    old = {"type": "submission_rejected", "at": "2026-11-18T09:00:00Z", "hotkey": "eve",
           "code_hash": "ab" * 32, "kind": "integrity", "reason": "static analysis refused the file",
           "cooldown_until": "2026-11-18T21:00:00Z"}
    with store.engine.begin() as connection:
        connection.execute(text("INSERT INTO race_events (seq, type, at, payload) VALUES (1, :t, :at, :p)"),
                           {"t": old["type"], "at": T0, "p": json.dumps(old)})
    assert store.count() == 2 and store.load(start=1)[0].hotkey == "eve"  # type: ignore[union-attr]

    state = RaceEngine(store, RULES, clock).state
    rejected = {s.hotkey: s for s in state.submissions.values()}
    assert {s.status for s in rejected.values()} == {"rejected"} and not engine.pending_qualifying()
    mallory = rejected["mallory"].rejection
    assert mallory is not None and mallory.kind == "security"
    assert [f.rule for f in mallory.findings] == [f.rule for f in report.findings]
    assert mallory.findings[0].line == 1 and mallory.findings[0].rule in mallory.reason
    eve = rejected["eve"].rejection
    assert eve is not None and (eve.kind, eve.reason, eve.findings) == (
        "integrity", "static analysis refused the file", ())
    assert state.cooldown_until["eve"] == T0 + timedelta(hours=12)


def test_postgres_log_replays_the_same_state(scratch_postgres_url: str) -> None:
    clock = ManualClock(T0)
    store = SqlEventStore.open(scratch_postgres_url)
    engine = RaceEngine(store, RULES, clock)
    enter(engine, clock, "alice", 0.6)
    enter(engine, clock, "bob", 0.7)
    until_race(clock)
    race(engine, {"alice": 0.5, "bob": 0.7})
    clock.advance(timedelta(days=1))
    engine.settle()
    reopened = RaceEngine(SqlEventStore.open(scratch_postgres_url), RULES, clock)
    assert reopened.state == engine.state and reopened.state.published
    with store.engine.connect() as connection:
        types = connection.execute(text("SELECT type FROM race_events ORDER BY seq")).scalars().all()
    assert types[-1] == "code_published" and "race_finished" in types
    assert open_database(scratch_postgres_url).dialect.name == "postgresql"


def decided_outcomes(successes: str) -> tuple[ProblemOutcome, ...]:
    return tuple(ProblemOutcome(problem_id=f"q{i}", success=c == "1", quality=0.9)
                 for i, c in enumerate(successes))


def race_on_outcomes(engine: RaceEngine, successes: dict[str, str], without_outcomes: str = "") -> None:
    """Race over problems q0..qn; each hotkey scores its success rate (quality 0.9) and records its
    outcomes, but for the hotkey ``without_outcomes`` (a result from before outcomes were kept)."""
    suite = [f"q{i}" for i in range(len(next(iter(successes.values()))))]
    started = engine.start_race("0xrace", suite)
    assert isinstance(started, RaceStarted)
    for sid in engine.pending_race_runs():
        hotkey = engine.state.submissions[sid].hotkey
        record = successes[hotkey]
        engine.record_race_result(sid, record.count("1") / len(record),
                                  decided_outcomes(record) if hotkey != without_outcomes else ())


NOISE = ("1" * 24 + "1" * 12 + "0" * 9 + "0" * 15,  # 36/60 against 33/60: a 0.05 lead, from 21 split problems
         "1" * 24 + "0" * 12 + "1" * 9 + "0" * 15)


def reigning(engine: RaceEngine, clock: ManualClock) -> str:
    """Alice wins the first race and defends from the next day on (margin 0.0462 then)."""
    alice = enter(engine, clock, "alice", 0.8, block=1)
    until_race(clock)
    race(engine, {"alice": 0.5})
    return alice


def test_a_lead_above_the_margin_made_of_noise_keeps_the_winner() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    alice = reigning(engine, clock)
    enter(engine, clock, "bob", 0.8, block=50)
    until_race(clock)
    race_on_outcomes(engine, {"bob": NOISE[0], "alice": NOISE[1]})
    last = engine.state.last_race
    assert last is not None and not last.promoted and last.winner == alice
    assert last.required_margin < 0.05 and last.lead_lower_bound is not None and last.lead_lower_bound < 0
    finished = engine.store.load()[-1]  # the log says why
    assert isinstance(finished, RaceFinished) and finished.lead_lower_bound == last.lead_lower_bound


def test_a_large_consistent_lead_is_promoted() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    reigning(engine, clock)
    bob = enter(engine, clock, "bob", 0.8, block=50)
    until_race(clock)
    race_on_outcomes(engine, {"bob": "1" * 45 + "0" * 15,  # 45/60 against 27/60
                              "alice": "1" * 25 + "0" * 20 + "1" * 2 + "0" * 13})
    last = engine.state.last_race
    assert last is not None and last.promoted and last.winner == bob
    assert last.lead_lower_bound is not None and last.lead_lower_bound > 0.15


def test_without_the_defenders_outcomes_the_margin_alone_decides() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    reigning(engine, clock)
    bob = enter(engine, clock, "bob", 0.8, block=50)
    until_race(clock)
    race_on_outcomes(engine, {"bob": NOISE[0], "alice": NOISE[1]}, without_outcomes="alice")
    last = engine.state.last_race
    assert last is not None and last.promoted and last.winner == bob and last.lead_lower_bound is None


def test_entrants_were_committed_a_tempo_before_the_seed_block_and_the_defender_always_races() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    alice = enter(engine, clock, "alice", 0.8)  # committed at an unknown block (an old log)
    until_race(clock)
    race(engine, {"alice": 0.6})
    in_time = enter(engine, clock, "bob", 0.8, block=900)
    a_block_late = enter(engine, clock, "carol", 0.8, block=901)
    unknown = enter(engine, clock, "dave", 0.8)
    until_race(clock)
    started = engine.start_race("0xseed", ["p1"], seed_block=1_000, tempo=100)
    assert isinstance(started, RaceStarted) and started.seed_block == 1_000
    assert started.entrants == (alice, in_time) and started.defender == alice
    for sid in engine.pending_race_runs():
        engine.record_race_result(sid, 0.5)
    assert [s.submission_id for s in engine.challengers()] == [a_block_late, unknown]  # they wait
    until_race(clock)
    later = engine.start_race("0xseed2", ["p2"], seed_block=2_000, tempo=100)
    assert isinstance(later, RaceStarted) and later.entrants == (alice, a_block_late)
    assert engine.state.submissions[unknown].status == "qualified"  # never races on a chain-seeded race


def test_a_challenger_qualified_after_the_slot_waits_for_the_next_race() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    late = engine.submit("bob", "b", commitment_block=10).submission_id
    assert late
    until_race(clock)
    clock.advance(timedelta(minutes=5))  # the validator was busy: qualifying ends after the slot
    engine.record_qualifying(late, 0.7)
    skipped = engine.start_race("0xseed", ["p1"], seed_block=400, tempo=100)
    assert isinstance(skipped, RaceSkipped) and engine.state.submissions[late].status == "qualified"
    until_race(clock)
    started = engine.start_race("0xseed2", ["p1"], seed_block=8_000, tempo=100)
    assert isinstance(started, RaceStarted) and started.entrants == (late,)


def test_logs_written_before_blocks_outcomes_and_bounds_still_replay() -> None:
    day = "2026-11-18"
    payloads = [
        {"type": "submission_accepted", "at": "2026-11-18T09:00:00Z", "submission_id": "s1", "hotkey": "ann",
         "code_hash": "c1", "cooldown_until": "2026-11-18T21:00:00Z"},
        {"type": "qualifying_finished", "at": "2026-11-18T09:05:00Z", "submission_id": "s1", "score": 0.5,
         "threshold": 0.01, "qualified": True},
        {"type": "race_started", "at": "2026-11-18T16:00:00Z", "race_id": day, "day": day,
         "slot": "2026-11-18T16:00:00Z", "seed": "0x1", "suite_ids": ["p1"], "entrants": ["s1"],
         "defender": None},
        {"type": "race_result_recorded", "at": "2026-11-18T16:10:00Z", "race_id": day, "submission_id": "s1",
         "score": 0.5},
        {"type": "race_finished", "at": "2026-11-18T16:10:00Z", "race_id": day, "standings": ["s1"],
         "winner": "s1", "promoted": True, "required_margin": 0.0, "embargo_until": "2026-11-19T00:00:00Z"},
    ]
    state = replay(EVENT_ADAPTER.validate_python(p) for p in payloads)
    submission = state.submissions["s1"]
    assert submission.commitment_block is None and submission.status == "raced"
    assert submission.qualified_at == datetime(2026, 11, 18, 9, 5, tzinfo=UTC)
    assert state.last_race is not None and state.last_race.lead_lower_bound is None
    assert state.reign is not None and state.reign.submission_id == "s1"


def test_an_entrant_found_to_be_a_copy_while_racing_is_passed_over_and_earns_nothing() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RULES, clock)
    enter(engine, clock, "alice", 0.8, block=1)
    until_race(clock)
    race(engine, {"alice": 0.5})
    copycat = enter(engine, clock, "mallory", 0.8, block=90)
    honest = enter(engine, clock, "bob", 0.8, block=95)
    until_race(clock)
    assert engine.race_due() is not None
    engine.start_race("0xblock2", ["p1", "p2", "p3"])
    # The original of mallory's file (committed earlier, uploaded late) reaches the gate mid-race.
    original = CopyOf(hotkey="carol", code_hash="c" * 64, commitment_block=80, similarity=1.0)
    assert engine.submit("mallory", engine.state.submissions[copycat].code_hash, commitment_block=90,
                         copy_of=original).status == "copy"
    assert engine.state.submissions[copycat].status == "racing"
    for sid, score in ((copycat, 0.95), (honest, 0.9)):
        engine.record_race_result(sid, score)
    engine.record_race_result(engine.state.reign.submission_id, 0.5)  # type: ignore[union-attr]
    assert engine.state.reign is not None and engine.state.reign.submission_id == honest
    finishers, winner = engine.weights_input()
    shares = race_shares(finishers, winner, WeightRules())
    assert "mallory" not in shares and winner == "bob"
