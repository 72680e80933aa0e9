"""The race engine: commands in, events out, state rebuilt from the log (SPEC 4).

The validator drives it in a loop::

    engine = RaceEngine(store, rules, clock)          # replays the log, then settles
    engine.submit(hotkey, code_hash, commitment_block=block)   # or with a Rejection, or copy_of=CopyOf
    for s in engine.pending_qualifying(): engine.record_qualifying(s.submission_id, score, winner_score=w)
    if engine.race_due(): engine.start_race(block_hash, draw_suite(block_hash), seed_block=n, tempo=tempo)
    for sid in engine.pending_race_runs(): engine.record_race_result(sid, score, outcomes)
    engine.settle()                                    # publishes code whose embargo has ended

Work is resumable at any point: qualifying and race runs still owed are exactly those without a
result event, a race whose results are all in is finished by ``settle`` (also on start-up), and
nothing recorded is ever run again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Literal

import structlog
from pydantic import BaseModel, ConfigDict

from arena.judge.score import ProblemOutcome
from arena.race.calendar import latest_race_day, race_slot
from arena.race.clock import Clock
from arena.race.events import (
    CodePublished,
    CopyOf,
    QualifyingFinished,
    RaceEvent,
    RaceResultRecorded,
    RaceSkipped,
    RaceStarted,
    Rejection,
    SubmissionAccepted,
    SubmissionCopied,
    SubmissionRejected,
)
from arena.race.rules import (
    RaceRules,
    chain_order,
    decide_race,
    first_commitment_block,
    may_race,
    qualifying_threshold,
)
from arena.race.state import RaceState, Submission, apply, replay, submission_id
from arena.race.store import EventStore
from arena.weights import Finisher, standings_tie_break

log = structlog.get_logger(__name__)


class SubmitOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    status: Literal["accepted", "rejected", "copy", "cooling_down"]
    submission_id: str | None = None
    retry_at: datetime | None = None
    reason: str = ""


class RaceEngine:
    def __init__(self, store: EventStore, rules: RaceRules, clock: Clock) -> None:
        self.store = store
        self.rules = rules
        self.clock = clock
        self.state: RaceState = replay(store.load())
        log.info("race_state_loaded", events=self.state.events, running=bool(self.state.running),
                 winner=self.state.reign.hotkey if self.state.reign else None)
        self.settle()

    def _emit(self, *events: RaceEvent) -> None:
        state = self.state
        for event in events:
            state = apply(state, event)  # validate every event before any is stored
        self.store.append(events, expected=self.state.events)
        self.state = state
        for event in events:
            log.info("race_event", **event.model_dump(mode="json", exclude={"suite_ids", "outcomes"}))

    def submit(self, hotkey: str, code_hash: str, rejection: Rejection | None = None, *,
               commitment_block: int | None = None, copy_of: CopyOf | None = None) -> SubmitOutcome:
        """Accept, reject or record as a copy (``copy_of``) an agent file committed on chain at
        ``commitment_block``, unless the hotkey is still cooling down (no event then).

        A file the hotkey committed before (a re-commitment of the same hash) is recorded at its first
        commitment's block (:func:`~arena.race.rules.first_commitment_block`): its qualifying problems
        are the ones that commitment drew.

        A copy found after its file was accepted (the original was uploaded later but committed earlier)
        marks that submission at once: the cooldown it started already counts.
        """
        now = self.clock.now()
        if copy_of is not None and commitment_block is not None and self._recorded(hotkey, code_hash):
            started = self.state.cooldown_until[hotkey]
            return self._copied(hotkey, code_hash, commitment_block, copy_of, started)
        until = self.state.cooldown_until.get(hotkey)
        if until is not None and now < until:
            return SubmitOutcome(status="cooling_down", retry_at=until,
                                 reason=f"one submission per {self.rules.cooldown}; "
                                        f"next at {until.isoformat()}")
        if copy_of is not None and commitment_block is not None:
            return self._copied(hotkey, code_hash, commitment_block, copy_of, now + self.rules.cooldown)
        if rejection is not None:
            cooldown = (self.rules.security_rejection_cooldown if rejection.kind == "security"
                        else self.rules.cooldown)
            self._emit(SubmissionRejected(at=now, hotkey=hotkey, code_hash=code_hash, kind=rejection.kind,
                                          reason=rejection.reason, cooldown_until=now + cooldown,
                                          findings=rejection.findings))
            return SubmitOutcome(status="rejected", retry_at=now + cooldown, reason=rejection.reason)
        sid = submission_id(hotkey, code_hash, now)
        first = first_commitment_block(self.state.submissions.values(), hotkey, code_hash, commitment_block)
        self._emit(SubmissionAccepted(at=now, submission_id=sid, hotkey=hotkey, code_hash=code_hash,
                                      cooldown_until=now + self.rules.cooldown, commitment_block=first))
        return SubmitOutcome(status="accepted", submission_id=sid, retry_at=now + self.rules.cooldown)

    def _recorded(self, hotkey: str, code_hash: str) -> bool:
        return any(s.hotkey == hotkey and s.code_hash == code_hash and s.status != "rejected"
                   for s in self.state.submissions.values())

    def _copied(self, hotkey: str, code_hash: str, commitment_block: int, copy_of: CopyOf,
                cooldown_until: datetime) -> SubmitOutcome:
        self._emit(SubmissionCopied(at=self.clock.now(), hotkey=hotkey, code_hash=code_hash,
                                    commitment_block=commitment_block, copy_of=copy_of,
                                    cooldown_until=cooldown_until))
        return SubmitOutcome(status="copy", retry_at=cooldown_until,
                             reason=f"a copy of {copy_of.hotkey}'s file committed at block "
                                    f"{copy_of.commitment_block}")

    def pending_qualifying(self) -> list[Submission]:
        return sorted((s for s in self.state.submissions.values() if s.status == "qualifying"),
                      key=lambda s: (s.submitted_at, s.submission_id))

    def record_qualifying(self, submission_id: str, score: float, *,
                          winner_score: float | None = None) -> QualifyingFinished:
        """Record a challenger's score on its qualifying problems and whether it clears the bar.

        ``winner_score`` is the reigning winner's score on those same problems: required while a winner
        reigns (a bar from any other problems could be ratcheted), refused when none does.
        """
        reign = self.state.reign
        if (reign is None) != (winner_score is None):
            raise ValueError("the reigning winner's score on the same problems is required while a winner "
                             "reigns, and only then" + (f" (winner {reign.submission_id})" if reign else ""))
        threshold = qualifying_threshold(winner_score, self.rules)
        event = QualifyingFinished(at=self.clock.now(), submission_id=submission_id, score=score,
                                   threshold=threshold, qualified=score >= threshold,
                                   winner=reign.submission_id if reign else None, winner_score=winner_score)
        self._emit(event)
        return event

    def challengers(self) -> list[Submission]:
        """Qualified submissions waiting for a race, earliest commitment first."""
        qualified = (s for s in self.state.submissions.values() if s.status == "qualified")
        return sorted(qualified, key=chain_order)

    def race_due(self) -> date | None:
        """The day whose race should start now, if any: the latest slot passed and not yet settled.

        Slots missed while the validator was down are not raced late; only the latest one is.
        """
        if self.state.running is not None:
            return None
        day = latest_race_day(self.clock.now(), self.rules.race_time)
        last = self.state.last_settled_day
        return day if last is None or day > last else None

    def start_race(self, seed: str, suite_ids: Sequence[str], *, seed_block: int | None = None,
                   tempo: int = 0, generator: str | None = None) -> RaceStarted | RaceSkipped:
        """Start the due race over ``suite_ids`` (drawn from ``seed``, the hash of block ``seed_block``, by
        the generator whose key is ``generator``), or skip it when no challenger may race.

        Challengers race when they qualified before the slot and, given ``seed_block``, were committed at
        least ``tempo`` blocks before it (:func:`~arena.race.rules.may_race`); the others wait for a later
        race. The reigning winner always defends.
        """
        day = self.race_due()
        if day is None:
            raise RuntimeError("no race is due: check race_due() first")
        now = self.clock.now()
        slot = race_slot(day, self.rules.race_time)
        challengers = [s.submission_id for s in self.challengers() if may_race(s, slot, seed_block, tempo)]
        if not challengers:
            skipped = RaceSkipped(at=now, day=day,
                                  reason="no challenger qualified before the slot and committed in time")
            self._emit(skipped)
            return skipped
        if not suite_ids:
            raise ValueError("a race needs a non-empty hidden suite")
        defender = self.state.reign.submission_id if self.state.reign else None
        entrants = (*([defender] if defender else []), *challengers)
        started = RaceStarted(at=now, race_id=day.isoformat(), day=day, slot=slot, seed=seed,
                              seed_block=seed_block, suite_ids=tuple(suite_ids), generator=generator,
                              entrants=entrants,
                              defender=defender)
        self._emit(started)
        return started

    def skip_race(self, reason: str) -> RaceSkipped:
        """Settle the due race day without a race (e.g. no suite could be made): the next day races again."""
        day = self.race_due()
        if day is None:
            raise RuntimeError("no race is due: check race_due() first")
        skipped = RaceSkipped(at=self.clock.now(), day=day, reason=reason)
        self._emit(skipped)
        return skipped

    def pending_race_runs(self) -> list[str]:
        """Entrants of the running race still owing a result."""
        return list(self.state.running.pending) if self.state.running else []

    def record_race_result(self, submission_id: str, score: float,
                           outcomes: Sequence[ProblemOutcome] = ()) -> None:
        """Record an entrant's race score with its per-problem outcomes in suite order (the promotion
        test pairs them with the defender's); the last result finishes the race."""
        race = self.state.running
        if race is None:
            raise RuntimeError("no race is running")
        self._emit(RaceResultRecorded(at=self.clock.now(), race_id=race.race_id, submission_id=submission_id,
                                      score=score, outcomes=tuple(outcomes)))
        self.settle()

    def settle(self) -> list[RaceEvent]:
        """Make every transition that is due by now: finish a complete race, publish embargoed code."""
        now = self.clock.now()
        events: list[RaceEvent] = []
        race = self.state.running
        if race is not None and not race.pending:
            events.append(decide_race(race, self.state, self.rules, now))
        if events:
            self._emit(*events)
        due = sorted((until, sid) for sid, until in self.state.embargoed.items() if until <= now)
        published = [CodePublished(at=now, submission_id=sid) for _, sid in due]
        if published:
            self._emit(*published)
        return [*events, *published]

    def weights_input(self) -> tuple[list[Finisher], str | None]:
        """The last completed race's finishers and the reigning winner's hotkey, for the weights.

        A hotkey that raced two agents (its reigning one and a new challenger) finishes once, with its
        better-ranked entry; an entrant found to be a copy after it raced carries ``copy_of``.
        """
        race = self.state.last_race
        if race is None or self.state.reign is None:
            return [], None
        best: dict[str, Finisher] = {}
        for position, sid in enumerate(race.standings):
            submission = self.state.submissions[sid]
            copied = submission.copy_of.hotkey if submission.copy_of else None
            tie_break = standings_tie_break(position)  # equal scores keep the race's order
            best.setdefault(submission.hotkey, Finisher(hotkey=submission.hotkey, score=race.results[sid],
                                                        tie_break=tie_break, copy_of=copied))
        return list(best.values()), self.state.reign.hotkey
