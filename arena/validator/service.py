"""The validator's work loop as one explicit step, ``Validator.tick()``.

Everything it decides is in the race engine's event log, the exposure ledger and the trajectory store,
so a validator killed anywhere and restarted over the same databases owes exactly the work it had not
recorded: qualifying and race runs without a result event, and within a run the attempts not stored.

A tick computes up to ``ValidatorConfig.concurrent_runs`` owed runs at once (``arena.validator.concurrent``)
and records their outcomes from its own thread in the order a sequential tick would, so the race log
does not depend on which run finished first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import structlog
from bittensor import Wallet
from pydantic import BaseModel, ConfigDict
from sqlalchemy import Engine

from arena.chain import Chain, ChainError, Metagraph
from arena.judge import FinalScore, final_score
from arena.race import RaceEngine
from arena.race.events import CopyOf, QualifyingFinished, RaceStarted
from arena.race.rules import qualifying_threshold, upload_deadline
from arena.race.state import RunningRace, Submission
from arena.rules_fingerprint import RULES_VERSION
from arena.submissions.store import FileStore
from arena.suites import ExposureLedger
from arena.suites.public import PublicSuites, RaceSeed, RaceSuite, practice_week
from arena.validator.behaviour import BehaviourCheck, record_copy
from arena.validator.concurrent import Pending, RunPool
from arena.validator.daily_dumps import DailyDumps
from arena.validator.epochs import WeightsEpochs
from arena.validator.ingest import fed_submissions, ingest_uploads, upload_verdicts
from arena.validator.runs import (
    RetriesPending,
    SuiteRun,
    challenger_run,
    defender_run,
    entrant_run,
)
from arena.weights import WeightRules, WeightVector, compute_weights
from shoppingbench.problems.models import Problem
from shoppingbench.sandbox.runner import AgentFile
from trajectories.store import RunEntry

log = structlog.get_logger(__name__)

_QualifyingRuns = tuple[Pending[FinalScore], Pending[FinalScore] | None, Sequence[Problem]]
"""A challenger's qualifying run, the reigning winner's on the same problems (none without one), and them."""


class ValidatorConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    weight_rules: WeightRules = WeightRules()
    version_key: int = RULES_VERSION
    race_retry_deadline: timedelta = timedelta(hours=6)
    """How long after a race starts its runs wait for retries of attempts the inference provider failed
    (and of a judge that failed for most of a run); after it each run records what it has."""
    concurrent_runs: int = 1
    """Owed runs computed at once (``ARENA_CONCURRENT_RUNS``), their sandboxes sharing one slot budget."""


class TickReport(BaseModel):
    """What one tick did (also the validator's last-known status for the API)."""

    block: int
    ingested: int = 0
    qualifying_runs: int = 0
    qualified: list[str] = []
    race_started: str | None = None
    race_results: list[str] = []
    weights_set_at: int | None = None
    copies: list[str] = []
    """Challengers whose qualifying run would have qualified them, refused as copies by behaviour."""
    dumps_exported: list[str] = []


@dataclass
class Validator:
    """One validator: chain and wallet, race engine, ledger, gate verdicts, stored files, suite runner."""

    chain: Chain
    wallet: Wallet
    race: RaceEngine
    ledger: ExposureLedger
    arena_db: Engine
    files: FileStore
    runs: SuiteRun
    suites: PublicSuites
    seed_after: Callable[[int], RaceSeed | None]
    """The first final block after a given block (``ChainSeeds.after_block``): qualifying seeds, asked
    for the last block of a commitment's upload window."""
    config: ValidatorConfig
    dumps: DailyDumps | None = None
    """Writes each finished day's dump (``ARENA_DUMPS_DIR`` set), else nothing is exported."""
    metagraph: Metagraph | None = field(default=None, init=False)
    last_weights: WeightVector | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._fed_at = fed_submissions(self.race.store.load())
        self._weights_epochs = WeightsEpochs(self.arena_db, self.hotkey, self.chain.netuid)
        self._weights_epoch = self._weights_epochs.last()
        self._behaviour = BehaviourCheck(self.files, self.runs)

    @property
    def hotkey(self) -> str:
        return str(self.wallet.hotkey.ss58_address)

    def tick(self) -> TickReport:
        """One pass: sync, ingest, qualify, race, weights. Safe to repeat and to interrupt anywhere."""
        self.metagraph = self.chain.metagraph()
        report = TickReport(block=self.metagraph.block)
        report.ingested = ingest_uploads(upload_verdicts(self.arena_db), self.race, self._fed_at)
        for submission, outcome in self._qualify_pending():
            report.qualifying_runs += 1
            if isinstance(outcome, CopyOf):
                report.copies.append(submission.submission_id)
            elif outcome.qualified:
                report.qualified.append(submission.submission_id)
        self.race.settle()
        report.race_started = self._start_race_if_due()
        running = self.race.state.running
        if running is not None:
            suite = self._running_suite()
            self._expose_race(running.race_id, suite)
            report.race_results = self._race_runs(running, suite)
        report.weights_set_at = self._set_weights_each_tempo(self.metagraph)
        if self.dumps is not None:
            report.dumps_exported = [day.isoformat() for day in self.dumps.export_finished(
                self.race.clock.now(), self.race.state.running)]
        log.info("validator_tick", **report.model_dump())
        return report

    def _race_runs(self, running: RunningRace, suite: Sequence[Problem]) -> list[str]:
        """Run and record each entrant still owing a result; an entrant whose run owes retries waits for a
        later tick until the race's retry deadline, after which it records what it has, loudly."""
        deadline = running.started_at + self.config.race_retry_deadline
        final = self.race.clock.now() >= deadline
        recorded: list[str] = []
        with RunPool(self.config.concurrent_runs) as pool:
            owed = [(submission_id, self._submit(
                        pool, self.race.state.submissions[submission_id],
                        entrant_run(submission_id, running.race_id, running.suite_ids), suite, final=final))
                    for submission_id in self.race.pending_race_runs()]
            # Recorded in the race engine's order, whatever finished first.
            for submission_id, pending in owed:
                if self._record_race_run(running, submission_id, pending, deadline.isoformat()):
                    recorded.append(submission_id)
        return recorded

    def _record_race_run(self, running: RunningRace, submission_id: str, pending: Pending[FinalScore],
                         deadline: str) -> bool:
        """Record an entrant's race result once its run is scored; ``False`` while it owes retries."""
        try:
            result = pending.result()
        except RetriesPending as exc:
            log.warning("race_run_waiting_for_retries", race_id=running.race_id,
                        submission_id=submission_id, problems=list(exc.problem_ids), judge=exc.judge,
                        deadline=deadline)
            return False
        scored = {o.problem_id for o in result.outcomes}
        missing = [pid for pid in running.suite_ids if pid not in scored]
        if missing:
            log.error("race_result_recorded_with_missing_attempts", race_id=running.race_id,
                      submission_id=submission_id, missing=missing, deadline=deadline,
                      hint="the inference provider failed these attempts until the deadline or the "
                           "retry limit: they are not counted against the agent")
        self.race.record_race_result(submission_id, result.score, result.outcomes)
        return True

    def known_answers(self) -> frozenset[str]:
        """The target products of every problem the exposure ledger holds as public, this week's practice
        suite's included: what the upload gate refuses to find written in a file."""
        practice = self.practice_suite()
        self.ledger.expose(practice, "practice", practice_week(self.race.clock.now().date()),
                           self.race.clock.now())
        return self.ledger.known_targets()

    def practice_suite(self) -> tuple[Problem, ...]:
        """This week's public practice suite (it decides nothing: miners try their agents on it)."""
        return self.suites.practice_suite(self.race.clock.now().date())

    def qualifying_suite(self, submission: Submission) -> tuple[Problem, ...] | None:
        """``submission``'s qualifying problems, from the first final block after its commitment's upload
        window (:func:`~arena.race.rules.upload_deadline`); ``None`` while that block is not final (or for
        a submission of a log without its commitment block, which waits until a newer submission of its
        hotkey supersedes it)."""
        if submission.commitment_block is None:
            log.warning("qualifying_seed_unknown", submission_id=submission.submission_id,
                        reason="no commitment block recorded")
            return None
        try:
            seed = self.seed_after(upload_deadline(submission.commitment_block, self.race.rules))
            if seed is None:
                return None
            day = self.chain.block_time(seed.block).date()
        except ChainError as exc:  # a failed read: ask again on the next tick
            log.error("qualifying_seed_unreadable", submission_id=submission.submission_id, error=str(exc))
            return None
        return self.suites.qualifying_suite(submission.hotkey, seed, day)

    def _qualify_pending(self) -> list[tuple[Submission, QualifyingFinished | CopyOf]]:
        """Qualify every pending submission whose problems' seed is final, computing up to
        ``concurrent_runs`` runs at once and recording each outcome in the pending order."""
        with RunPool(self.config.concurrent_runs) as pool:
            owed = [(submission, runs) for submission in self.race.pending_qualifying()
                    if (runs := self._qualifying_runs(pool, submission)) is not None]
            recorded = [(submission, outcome) for submission, runs in owed
                        if (outcome := self._record_qualifying(submission, *runs)) is not None]
        return recorded

    def _qualifying_runs(self, pool: RunPool, submission: Submission) -> _QualifyingRuns | None:
        """Ask for ``submission``'s run on its qualifying problems (returned with them) and, while a winner
        reigns, the winner's on the same problems (the threshold compares like with like), after the
        challenger's, never beside it (neither takes the inference provider or the sandboxes from the
        other); ``None`` while the problems' seed is not final.

        The winner's attempts are stored under a run named by its code, not by the suite, so each
        (winner code, problem) runs once however many challengers, restarts or reigns meet it.
        """
        suite = self.qualifying_suite(submission)
        if suite is None:
            return None
        sid = submission.submission_id
        ids = [p.id for p in suite]
        self.ledger.expose(suite, "qualifying", sid, self.race.clock.now())
        challenger = self._submit(pool, submission, challenger_run(sid, ids), suite)
        reign = self.race.state.reign
        if reign is None:
            return challenger, None, suite
        winner = self.race.state.submissions[reign.submission_id]
        defending = defender_run(winner.submission_id, winner.code_hash, sid)
        return challenger, self._submit(pool, winner, defending, suite, after=challenger), suite

    def _record_qualifying(self, submission: Submission, challenger: Pending[FinalScore],
                           defender: Pending[FinalScore] | None,
                           suite: Sequence[Problem]) -> QualifyingFinished | CopyOf | None:
        """Record the outcome once both runs are scored; ``None`` while either owes retries. A challenger
        that would qualify is first compared in behaviour with the earlier submissions closest to it in
        code, re-run on ``suite`` (``arena.validator.behaviour``): one it acts as is refused as its copy."""
        sid = submission.submission_id
        try:
            score = challenger.result()
            winner_score = defender.result().score if defender is not None else None
            copy_of = (self._behaviour.copy_of(self.race, submission, suite)
                       if score.score >= qualifying_threshold(winner_score, self.race.rules) else None)
        except RetriesPending as exc:  # the provider or the judge failed: a later tick retries
            log.warning("qualifying_waiting_for_retries", submission_id=sid, run_id=exc.run_id,
                        problems=list(exc.problem_ids), judge=exc.judge)
            return None
        if copy_of is not None:
            record_copy(self.arena_db, self.race, submission, copy_of)
            return copy_of
        return self.race.record_qualifying(sid, score.score, winner_score=winner_score)

    def _running_suite(self) -> tuple[Problem, ...]:
        running = self.race.state.running
        assert running is not None
        drawn = self.suites.race_suite(running.day)
        if drawn is not None and running.generator not in (None, drawn.generator):
            raise RuntimeError(f"race {running.race_id} was generated by {running.generator}, but this "
                               f"validator now generates {running.day}'s suite with {drawn.generator}: "
                               "restore the catalog, the generator schedule (ARENA_GENERATOR_SCHEDULE) and "
                               "the problem banks (ARENA_PROBLEM_BANKS) the race began with")
        if drawn is None or tuple(p.id for p in drawn.problems) != running.suite_ids:
            raise RuntimeError(f"race {running.race_id} was started over other problems than this validator "
                               "generates for its day: start it with the catalog and suite settings the race "
                               "began with")
        return drawn.problems

    def _start_race_if_due(self) -> str | None:
        """Generate the due race's suite from its seed and start it; on no seed yet, wait for a later tick.

        A day whose suite cannot be generated is skipped, loudly: no local fallback seed, and the weights
        step still runs.
        """
        day = self.race.race_due()
        if day is None:
            return None
        if day < self.suites.plan.first_day:
            self.race.skip_race(f"before the arena's first race day {self.suites.plan.first_day}")
            return None
        try:
            drawn = self.suites.race_suite(day)
        except ChainError as exc:  # an earlier day's seed could not be read: ask again on the next tick
            log.error("race_seed_unreadable", day=day.isoformat(), error=str(exc))
            return None
        if drawn is None:  # no final block has reached the slot yet
            return None
        return self._start_race(drawn)

    def _start_race(self, drawn: RaceSuite) -> str | None:
        if not drawn.problems:
            log.error("race_suite_empty", day=drawn.day.isoformat(), seed=drawn.seed.hash,
                      hint="the catalog cannot supply unburnt solvable problems: import a larger catalog")
            self.race.skip_race("no problems could be generated from the race seed")
            return None
        started = self.race.start_race(drawn.seed.hash, [p.id for p in drawn.problems],
                                       seed_block=drawn.seed.block, tempo=self.chain.tempo(),
                                       generator=drawn.generator)
        if not isinstance(started, RaceStarted):
            return None
        log.info("race_suite_generated", race_id=started.race_id, seed=drawn.seed.hash,
                 seed_block=drawn.seed.block, generator=drawn.generator, problems=len(drawn.problems))
        # Earlier days' suites (regenerated by a validator that joined late) were raced by others: public.
        for earlier in self.suites.generated_races():
            if earlier.day < drawn.day:
                self.ledger.expose(earlier.problems, "race", f"race/{earlier.day.isoformat()}",
                                   self.race.clock.now())
        self._expose_race(started.race_id, drawn.problems)
        return started.race_id

    def _expose_race(self, race_id: str, suite: Sequence[Problem]) -> None:
        # Also on resume: a crash between the race's start and this write must not leave its clusters unburnt.
        self.ledger.expose(suite, "race", race_id, self.race.clock.now())

    def _submit(self, pool: RunPool, submission: Submission, run: RunEntry, suite: Sequence[Problem], *,
                final: bool = False, after: Pending[FinalScore] | None = None) -> Pending[FinalScore]:
        return pool.submit(run.id, lambda: self._score(submission, run, suite, final=final), after=after)

    def _score(self, submission: Submission, run: RunEntry, suite: Sequence[Problem], *,
               final: bool = False) -> FinalScore:
        path = self.files.path(submission.code_hash)
        if not path.exists():
            # Our gate stores every accepted file before recording it; a missing one is lost storage.
            log.error("agent_file_missing", submission_id=submission.submission_id, path=str(path))
            return final_score(0.0, [])
        return self.runs.score(
            run, agent=AgentFile.read(path),
            hotkey=submission.hotkey, submitted_at=submission.submitted_at.timestamp(), suite=suite,
            final=final)

    def _set_weights_each_tempo(self, metagraph: Metagraph) -> int | None:
        epoch = metagraph.block // self.chain.tempo()
        if epoch == self._weights_epoch:
            return None
        finishers, winner = self.race.weights_input()
        vector = compute_weights(finishers, winner, metagraph.hotkeys, self.config.weight_rules)
        try:
            block = self.chain.set_weights(self.wallet, vector, version_key=self.config.version_key)
        except ChainError as exc:  # e.g. the rate limit: the next tick tries again
            log.warning("weights_not_set", error=str(exc), winner=winner)
            return None
        self._weights_epochs.record(epoch, block)
        self._weights_epoch = epoch
        self.last_weights = vector
        log.info("weights_set", block=block, winner=winner, uids=list(vector.uids),
                 weights=list(vector.weights))
        return block
