"""Property-based: no sequence of submissions, runs, restarts and clock moves breaks the race's rules."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from arena.judge import ProblemOutcome
from arena.race import ManualClock, MarginCurve, MemoryEventStore, RaceEngine, RaceRules, Rejection
from arena.race.calendar import embargo_until, race_slot
from arena.race.events import (
    CodePublished,
    QualifyingFinished,
    RaceEvent,
    RaceFinished,
    RaceStarted,
    SubmissionAccepted,
    SubmissionRejected,
)
from arena.race.promotion import lead_lower_bound
from arena.race.rules import qualifying_threshold
from arena.race.state import RaceState, apply

RULES = RaceRules(race_time=time(16), qualify_ratio=0.95, qualify_min_score=0.05,
                  margin=MarginCurve(initial=0.1, floor=0.02, half_life_days=3))
HOTKEYS = st.sampled_from(["ann", "ben", "cat", "dan"])
SCORES = st.sampled_from([0.0, 0.2, 0.5, 0.55, 0.6, 0.62, 0.7, 0.9, 1.0])
BLOCKS = st.one_of(st.none(), st.integers(0, 3_000))
SUITE = ("p1", "p2", "p3", "p4")
TEMPO = 100
OUTCOME = {p: st.builds(ProblemOutcome, problem_id=st.just(p), success=st.booleans(),
                        quality=st.sampled_from([0.1, 0.9])) for p in SUITE}
OUTCOMES = st.one_of(st.just(()), st.tuples(*(OUTCOME[p] for p in SUITE)))  # () as in logs before outcomes


class RaceMachine(RuleBasedStateMachine):
    @initialize(start=st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2028, 12, 31)))
    def begin(self, start: datetime) -> None:
        self.clock = ManualClock(start.replace(tzinfo=UTC))
        self.store = MemoryEventStore()
        self.engine = RaceEngine(self.store, RULES, self.clock)
        self.checked = RaceState()

    @rule(hotkey=HOTKEYS, code=st.integers(0, 3),
          rejection=st.sampled_from([None, None, None, "security", "integrity"]), block=BLOCKS)
    def submit(self, hotkey: str, code: int, rejection: str | None, block: int | None) -> None:
        refusal = Rejection(kind=rejection, reason="static analysis") if rejection else None  # type: ignore[arg-type]
        self.engine.submit(hotkey, f"code-{code}", refusal, commitment_block=block)

    @rule(hours=st.integers(0, 80), minutes=st.integers(0, 59))
    def wait(self, hours: int, minutes: int) -> None:
        self.clock.advance(timedelta(hours=hours, minutes=minutes))
        self.engine.settle()

    def winner_score(self, data: st.DataObject) -> float | None:
        """The reigning winner's score on a challenger's qualifying problems (none without a winner)."""
        return None if self.engine.state.reign is None else data.draw(SCORES)

    @precondition(lambda self: bool(self.engine.pending_qualifying()))
    @rule(data=st.data(), score=SCORES)
    def qualify(self, data: st.DataObject, score: float) -> None:
        pending = data.draw(st.sampled_from(self.engine.pending_qualifying()))
        self.engine.record_qualifying(pending.submission_id, score, winner_score=self.winner_score(data))

    @precondition(lambda self: self.engine.race_due() is not None)
    @rule(seed=st.text("0123456789abcdef", min_size=4, max_size=8), seed_block=BLOCKS)
    def start_race(self, seed: str, seed_block: int | None) -> None:
        day = self.engine.race_due()
        assert day is not None
        slot = race_slot(day, RULES.race_time)
        # Exactly the qualifiers of before the slot committed a tempo before the seed block race.
        waiting = {s.submission_id for s in self.engine.challengers()
                   if s.qualified_at is not None and s.qualified_at < slot
                   and (seed_block is None
                        or (s.commitment_block is not None and s.commitment_block <= seed_block - TEMPO))}
        started = self.engine.start_race(seed, SUITE, seed_block=seed_block, tempo=TEMPO)
        if isinstance(started, RaceStarted):
            assert set(started.entrants) - {started.defender} == waiting
            assert started.defender == (self.engine.state.reign.submission_id if self.engine.state.reign
                                        else None)
        else:
            assert not waiting

    @precondition(lambda self: bool(self.engine.pending_race_runs()))
    @rule(data=st.data(), score=SCORES, outcomes=OUTCOMES)
    def race_result(self, data: st.DataObject, score: float, outcomes: tuple[ProblemOutcome, ...]) -> None:
        self.engine.record_race_result(data.draw(st.sampled_from(self.engine.pending_race_runs())), score,
                                       outcomes)

    @rule(data=st.data())
    def a_whole_day(self, data: st.DataObject) -> None:
        """Everyone tries to submit, every pending agent qualifies or not, the day's race runs."""
        for hotkey in ("ann", "ben", "cat", "dan"):
            self.engine.submit(hotkey, f"code-{data.draw(st.integers(0, 3))}")
        for pending in self.engine.pending_qualifying():
            self.engine.record_qualifying(pending.submission_id, data.draw(SCORES),
                                          winner_score=self.winner_score(data))
        now = self.clock.now()
        slot = datetime.combine(now.date(), RULES.race_time, tzinfo=UTC)
        self.clock.advance((slot if slot > now else slot + timedelta(days=1)) - now)
        self.engine.settle()
        if self.engine.race_due() is not None:
            self.start_race("feed", None)
        for sid in self.engine.pending_race_runs():
            self.engine.record_race_result(sid, data.draw(SCORES), data.draw(OUTCOMES))

    @rule()
    def restart(self) -> None:
        before = self.engine.state
        pending = (self.engine.pending_qualifying(), self.engine.pending_race_runs())
        self.engine = RaceEngine(self.store, RULES, self.clock)
        assert self.engine.state == before  # nothing was due that settle() had not done
        assert (self.engine.pending_qualifying(), self.engine.pending_race_runs()) == pending

    @invariant()
    def every_rule_holds_along_the_log(self) -> None:
        """Walks the events appended since the last check, from the state they were appended to."""
        events = self.store.load()
        for event in events[self.checked.events:]:
            self.check_event(self.checked, event)
            self.checked = apply(self.checked, event)
        assert self.checked == self.engine.state  # replaying the log rebuilds the state

    def check_event(self, state: RaceState, event: RaceEvent) -> None:
        match event:
            case SubmissionAccepted() | SubmissionRejected():
                until = state.cooldown_until.get(event.hotkey)
                assert until is None or event.at >= until
                wanted = (RULES.security_rejection_cooldown
                          if isinstance(event, SubmissionRejected) and event.kind == "security"
                          else RULES.cooldown)
                assert event.cooldown_until == event.at + wanted
            case QualifyingFinished():
                assert event.winner == (state.reign.submission_id if state.reign else None)
                assert (event.winner_score is None) == (state.reign is None)
                assert event.threshold == qualifying_threshold(event.winner_score, RULES)
                assert event.qualified == (event.score >= event.threshold)
            case RaceFinished():
                race = state.running
                assert race is not None
                scores = race.results
                assert [scores[s] for s in event.standings] == sorted(scores.values(), reverse=True)
                if race.defender is not None and state.reign is not None:
                    margin = RULES.margin.margin(race.slot - state.reign.since)
                    assert event.required_margin == margin
                    best = next(s for s in event.standings if s != race.defender)
                    assert scores[best] == max(scores[s] for s in race.entrants if s != race.defender)
                    paired = race.outcomes.get(best, ()), race.outcomes.get(race.defender, ())
                    bound = lead_lower_bound(*paired, race.seed, resamples=RULES.promotion_resamples,
                                             confidence=RULES.promotion_confidence)
                    assert event.lead_lower_bound == bound
                    # Never promotes without beating the margin and the bound, always when both are beaten.
                    beaten = scores[best] - scores[race.defender] > margin
                    assert event.promoted == (beaten and (bound is None or bound > 0))
                if event.promoted:
                    assert event.embargo_until == embargo_until(race.day)
            case CodePublished():
                until = state.embargoed[event.submission_id]
                assert event.at >= until and until.weekday() < 5  # never published early
            case _:
                pass

    @invariant()
    def no_qualifier_is_lost(self) -> None:
        state = self.engine.state
        for submission in state.submissions.values():
            if submission.status in ("racing", "raced"):
                assert submission.races
            if submission.status == "superseded":
                latest = state.latest_of(submission.hotkey)
                assert latest is not None and latest.submitted_at > submission.submitted_at
        if state.running is not None:
            for sid in state.running.entrants:
                assert state.submissions[sid].status == "racing"

    @invariant()
    def settled_embargoes_are_due_later(self) -> None:
        # Every clock move above is followed by settle(), as in the validator's loop.
        now = self.clock.now()
        assert all(until > now for until in self.engine.state.embargoed.values())


TestRaceMachine = RaceMachine.TestCase
TestRaceMachine.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
