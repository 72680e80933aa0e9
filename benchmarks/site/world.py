"""The site benchmark's world: days of synthetic attempts with the race history they would have made.

Each day has ``AGENTS`` agent slots working through the day's problems (``trajectories.doubles.synthetic``,
as ``benchmarks.store`` generates them). Every slot is a new submission of its hotkey, except slot 0 while
a winner reigns: the defender, running its own code. The first two thirds of the day's problems are the
qualifying problems (each new submission's qualifying run, on its own copy of them: suite
``qualifying-<submission id>``), the last third the race suite (``race-<day>``). As the
attempts stream into the store, the qualifying scores are tallied; once every qualifying attempt is in,
the best qualified submissions become the race's entrants and their remaining attempts go to their race
run (the others' stay in their qualifying run). The race log then gets, per day, the accepted uploads,
one rejected upload with its findings, the qualifying outcomes, the race with its per-problem outcomes,
its result (a promotion when the best challenger beats the defender by the margin) and the publication
of winners' code whose embargo ended. Run ids and suite names are the validator's own
(``arena.validator.runs``), so pages find attempts as they would on a real validator.
"""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from arena.judge.score import ProblemOutcome
from arena.judge.verdict import OFFLINE_JUDGE, QUALITY_LEVELS
from arena.judge.verdict import JudgeVerdict as ArenaVerdict
from arena.race.events import (
    CodePublished,
    QualifyingFinished,
    RaceEvent,
    RaceFinished,
    RaceResultRecorded,
    RaceSkipped,
    RaceStarted,
    SubmissionAccepted,
    SubmissionRejected,
)
from arena.race.state import submission_id
from arena.validator.runs import (
    defender_run_id,
    qualifying_suite_name,
    race_suite_name,
    run_id_for,
    stored_verdict,
)
from shoppingbench.records import AttemptRecord
from shoppingbench.submission_check.models import Finding
from trajectories.doubles.synthetic import STYLES, SyntheticAgent, SyntheticDay, make_problems
from trajectories.filter import FilterVerdict
from trajectories.filter.label import label_attempt
from trajectories.store.entries import AgentEntry, AttemptWrite, ProblemEntry, RunEntry

DAY0 = datetime(2026, 10, 1, tzinfo=UTC)
AGENTS = 60
RACERS = 10
THRESHOLD = 0.4
MARGIN = 0.02
EMBARGO = timedelta(days=3)
VALIDATOR = "5SiteBenchValidator"


@dataclass(frozen=True)
class Entrant:
    """One agent slot of a day: who runs, under which submission."""

    slot: int
    hotkey: str
    code: str
    submission_id: str
    submitted_at: datetime
    defender: bool = False

    @property
    def code_hash(self) -> str:
        return hashlib.sha256(self.code.encode()).hexdigest()


@dataclass
class Reigning:
    entrant: Entrant
    embargo_until: datetime


@dataclass
class History:
    """What carries from one day to the next: the reign, embargoes awaiting publication, the log length."""

    reign: Reigning | None = None
    embargoed: dict[str, datetime] = field(default_factory=dict)
    winners: dict[str, Entrant] = field(default_factory=dict)


def _code(hotkey: str, day: int, style: str) -> str:
    return (
        f"# site benchmark agent of {hotkey}, day {day}, {style} style\n\n"
        "def agent_main(problem):\n    return []\n"
    )


@dataclass
class Day:
    """One day of the world: its problems, entrants and the attempts' tallies as they stream."""

    index: int
    attempts: int
    history: History
    start: datetime = field(init=False)
    qualifying: list[ProblemEntry] = field(init=False)
    race: list[ProblemEntry] = field(init=False)
    entrants: list[Entrant] = field(init=False)
    racers: list[int] | None = None
    threshold: float = THRESHOLD
    qualifying_score: dict[int, float] = field(default_factory=dict)
    tallies: dict[tuple[int, bool], list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    outcomes: dict[int, list[ProblemOutcome]] = field(default_factory=lambda: defaultdict(list))
    own_ids: dict[tuple[str, int], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.start = DAY0 + timedelta(days=self.index)
        per_agent = max(2, -(-self.attempts // AGENTS))
        race = max(1, per_agent // 3)
        rng = random.Random(self.index)
        label = self.start.date().isoformat()
        self.qualifying = make_problems(rng, per_agent - race, suite=f"qualifying-{label}")
        self.race = make_problems(rng, race, suite=f"race-{label}")
        self.entrants = []
        for slot in range(AGENTS):
            reign = self.history.reign
            if slot == 0 and reign is not None:
                self.entrants.append(Entrant(**{**reign.entrant.__dict__, "slot": 0, "defender": True}))
                continue
            hotkey = f"5SiteHotkey{slot:04d}"
            at = self.start - timedelta(hours=2) + timedelta(seconds=slot)
            code = _code(hotkey, self.index, STYLES[slot % 3])
            sha = hashlib.sha256(code.encode()).hexdigest()
            self.entrants.append(
                Entrant(
                    slot=slot,
                    hotkey=hotkey,
                    code=code,
                    submission_id=submission_id(hotkey, sha, at),
                    submitted_at=at,
                )
            )

    @property
    def race_id(self) -> str:
        return self.start.date().isoformat()

    def own(self, problem: ProblemEntry, entrant: Entrant) -> ProblemEntry:
        """The entrant's copy of ``problem`` in its own qualifying suite (each submission qualifies on
        problems of its own, ``qualifying-<submission id>``)."""
        key = hashlib.sha256(f"{problem.id}/{entrant.submission_id}".encode()).hexdigest()[:16]
        return problem.model_copy(update={"id": key, "suite": qualifying_suite_name(entrant.submission_id)})

    def qualifying_run(self, entrant: Entrant) -> str:
        if entrant.defender:
            return defender_run_id(entrant.code_hash)
        return run_id_for(
            "qualifying", entrant.submission_id, [self.own(p, entrant).id for p in self.qualifying]
        )

    def race_run(self, entrant: Entrant) -> str:
        return run_id_for("race", entrant.submission_id, [p.id for p in self.race])

    def synthetic(self) -> SyntheticDay:
        agents = [SyntheticAgent(style=STYLES[e.slot % 3], entry=self.agent_entry(e)) for e in self.entrants]
        return SyntheticDay(
            day_start=self.start.timestamp(),
            problems=[*self.qualifying, *self.race],
            agents=agents,
            seed=self.index,
        )

    def agent_entry(self, entrant: Entrant) -> AgentEntry:
        return AgentEntry(
            code_hash=entrant.code_hash,
            hotkey=entrant.hotkey,
            code=entrant.code,
            submitted_at=entrant.submitted_at.timestamp(),
        )

    def runs(self) -> list[RunEntry]:
        runs = [
            RunEntry(
                id=self.qualifying_run(e),
                kind="qualifying",
                submission_id=e.submission_id,
                role="defender" if e.defender else "challenger",
                validator=VALIDATOR,
                suite=qualifying_suite_name(e.submission_id),
                started_at=self.start.timestamp(),
            )
            for e in self.entrants
        ]
        for slot in self.racers or []:
            entrant = self.entrants[slot]
            runs.append(
                RunEntry(
                    id=self.race_run(entrant),
                    kind="race",
                    submission_id=entrant.submission_id,
                    race_id=self.race_id,
                    role="entrant",
                    validator=VALIDATOR,
                    suite=race_suite_name(self.race_id),
                    started_at=(self.start + timedelta(hours=12)).timestamp(),
                )
            )
        return runs

    def _decide_racers(self) -> None:
        for entrant in self.entrants:
            done, won = self.tallies[(entrant.slot, False)]
            self.qualifying_score[entrant.slot] = won / done if done else 0.0
        threshold = THRESHOLD
        if self.history.reign is not None:
            threshold = max(THRESHOLD, self.qualifying_score[0])
        qualified = sorted(
            (
                s
                for s, score in self.qualifying_score.items()
                if not self.entrants[s].defender and score >= threshold
            ),
            key=lambda s: (-self.qualifying_score[s], s),
        )
        challengers = qualified[:RACERS]
        self.threshold = threshold
        self.racers = ([0] if self.history.reign is not None and challengers else []) + challengers

    def writes(self) -> Iterator[AttemptWrite]:
        """The day's attempts, run ids assigned as the race log would, with judge verdicts and labels."""
        labels: dict[int, FilterVerdict] = {}
        self.own_ids = {(p.id, e.slot): self.own(p, e).id for p in problems(self) for e in self.entrants}
        rng = random.Random(f"verdicts-{self.index}")
        boundary = len(self.qualifying) * AGENTS
        for n, record in enumerate(self.synthetic().attempts(self.attempts)):
            slot, racing = n % AGENTS, n >= boundary
            if racing and self.racers is None:
                self._decide_racers()
            entrant = self.entrants[slot]
            in_race = racing and slot in (self.racers or [])
            run = self.race_run(entrant) if in_race else self.qualifying_run(entrant)
            if not in_race:
                own = self.own_ids[(record.problem_id, slot)]
                record = record.model_copy(
                    update={"problem_id": own, "score": record.score.model_copy(update={"problem_id": own})}
                )
            tally = self.tallies[(slot, in_race)]
            tally[0] += 1
            tally[1] += int(record.score.success)
            quality = _quality(rng, record)
            if in_race:
                self.outcomes[slot].append(
                    ProblemOutcome(
                        problem_id=record.problem_id, success=record.score.success, quality=quality
                    )
                )
            label = labels.get(id(record.steps))
            if label is None:
                label = labels[id(record.steps)] = label_attempt(
                    record.proxy_log, record.steps, query=record.query
                )
            yield AttemptWrite(
                record=record.model_copy(update={"run_id": run}),
                label=label,
                judge=stored_verdict(_verdict(quality)),
            )
        if self.racers is None:
            self._decide_racers()

    def events(self, *, rejected: bool = True) -> list[RaceEvent]:
        """The race log of the day, once its attempts are written."""
        events: list[RaceEvent] = []
        for sid, until in sorted(self.history.embargoed.items()):
            if until <= self.start:
                events.append(CodePublished(at=self.start, submission_id=sid))
                del self.history.embargoed[sid]
        for e in self.entrants:
            if not e.defender:
                events.append(
                    SubmissionAccepted(
                        at=e.submitted_at,
                        submission_id=e.submission_id,
                        hotkey=e.hotkey,
                        code_hash=e.code_hash,
                        cooldown_until=e.submitted_at + timedelta(days=1),
                        commitment_block=1000 * self.index + e.slot,
                    )
                )
        if rejected:
            events.append(_rejection(self.start, self.index))
        reign = self.history.reign
        at = self.start + timedelta(hours=6)
        for e in self.entrants:
            if not e.defender:
                score = self.qualifying_score[e.slot]
                events.append(
                    QualifyingFinished(
                        at=at,
                        submission_id=e.submission_id,
                        score=score,
                        threshold=self.threshold,
                        qualified=score >= self.threshold,
                        winner=reign.entrant.submission_id if reign else None,
                        winner_score=self.qualifying_score[0] if reign else None,
                    )
                )
        events.extend(self._race_events())
        return events

    def _race_events(self) -> list[RaceEvent]:
        reign, racers = self.history.reign, self.racers or []
        slot_at = self.start + timedelta(hours=12)
        if not racers:
            return [RaceSkipped(at=slot_at, day=self.start.date(), reason="no qualified challenger")]
        ids = [self.entrants[s].submission_id for s in racers]
        events: list[RaceEvent] = [
            RaceStarted(
                at=slot_at,
                race_id=self.race_id,
                day=self.start.date(),
                slot=slot_at,
                seed=f"seed-{self.index}",
                suite_ids=tuple(p.id for p in self.race),
                generator="sbgen-2",
                entrants=tuple(ids),
                defender=reign.entrant.submission_id if reign else None,
            )
        ]
        scores: dict[int, float] = {}
        for n, slot in enumerate(racers):
            done, won = self.tallies[(slot, True)]
            scores[slot] = won / done if done else 0.0
            events.append(
                RaceResultRecorded(
                    at=slot_at + timedelta(minutes=10 * (n + 1)),
                    race_id=self.race_id,
                    submission_id=ids[n],
                    score=scores[slot],
                    outcomes=tuple(self.outcomes[slot]),
                )
            )
        ranked = sorted(racers, key=lambda s: (-scores[s], s))
        best = next(s for s in ranked if not self.entrants[s].defender)
        promoted = reign is None or scores[best] > scores[0] + MARGIN
        finished = self.start + timedelta(hours=20)
        embargo = finished + EMBARGO if promoted else None
        winner = self.entrants[best] if promoted else reign.entrant  # type: ignore[union-attr]
        if promoted:
            assert embargo is not None
            self.history.reign = Reigning(entrant=winner, embargo_until=embargo)
            self.history.embargoed[winner.submission_id] = embargo
            self.history.winners[winner.submission_id] = winner
        events.append(
            RaceFinished(
                at=finished,
                race_id=self.race_id,
                standings=tuple(self.entrants[s].submission_id for s in ranked),
                winner=winner.submission_id,
                promoted=promoted,
                required_margin=MARGIN,
                lead_lower_bound=None if reign is None else scores[best] - scores[0] - 0.05,
                embargo_until=embargo,
            )
        )
        return events


def _quality(rng: random.Random, record: AttemptRecord) -> float:
    if record.failure is not None:
        return QUALITY_LEVELS[0]
    if record.score.success:
        return rng.choice(QUALITY_LEVELS[3:])
    return rng.choice(QUALITY_LEVELS[:4])


def _verdict(quality: float) -> ArenaVerdict:
    gate = QUALITY_LEVELS.index(quality) + 1
    why = "every gate passed" if gate == len(QUALITY_LEVELS) else f"stopped at gate {gate}"
    return ArenaVerdict(quality=quality, judge=OFFLINE_JUDGE, offline=True, explanation=why, attempts=0)


def _rejection(start: datetime, index: int) -> SubmissionRejected:
    hotkey = f"5SiteRejected{index:04d}"
    code = f"import subprocess  # day {index}\nsubprocess.run(['curl', 'http://example.com'])\n"
    findings = (
        Finding(rule="process", line=2, category="security", message="starts a process"),
        Finding(rule="network", line=2, category="security", message="opens a network connection"),
    )
    return SubmissionRejected(
        at=start - timedelta(hours=1),
        hotkey=hotkey,
        code_hash=hashlib.sha256(code.encode()).hexdigest(),
        kind="security",
        reason="; ".join(f"{f.rule} (line {f.line}): {f.message}" for f in findings),
        cooldown_until=start + timedelta(hours=11),
        findings=findings,
    )


def problems(day: Day) -> list[ProblemEntry]:
    """The day's drawn problems: the qualifying problems and the race suite."""
    return [*day.qualifying, *day.race]


def registered_problems(day: Day) -> list[ProblemEntry]:
    """What the store registers: the race suite, and every entrant's own copy of each drawn problem
    (those its qualifying run holds)."""
    return [*day.race, *(day.own(p, e) for e in day.entrants for p in problems(day))]


def agent_entries(day: Day) -> list[AgentEntry]:
    return [day.agent_entry(e) for e in day.entrants]
