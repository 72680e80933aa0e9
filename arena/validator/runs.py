"""Run one agent over one suite, resumably: record every attempt, then label and judge them against the
run's static text (who decided: ``trajectories.filter.decided``), then score the run.

Each run is registered with what it is (``trajectories.store.RunEntry``: its kind, submission, race and
role), built here once (:func:`challenger_run`, :func:`defender_run`, :func:`entrant_run`); readers use
those fields, never the id. The run id is a function of the submission and the suite, so a restarted
validator finds the attempts it already stored (the trajectory store keys attempts by run, agent and
problem), runs only the problems still missing, judges only attempts still without a verdict, and
scores the whole suite.

An attempt the inference provider failed (``AttemptRecord.infra_failed``, decided by
``shoppingbench.grading.outages``) is re-run up to ``infra_retries`` times; still failed after them, it
is scored as the agent's failure. Only a deadline passing before its retries leaves it out of the score.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import structlog

from arena.judge import FinalScore, Judge, JudgeInput, JudgeVerdict, final_score, suite_score
from arena.suites.clusters import LeakConfig, cluster_problems
from arena.validator.judging import ConcurrentJudging
from shoppingbench.problems.models import Problem
from shoppingbench.records import AttemptRecord
from shoppingbench.sandbox.runner import AgentFile
from trajectories.filter.decided import carry_run_steering
from trajectories.recorder import RunRecorder
from trajectories.store import AgentEntry, AttemptKey, RunEntry, RunKind, StoredAttempt, TrajectoryStore
from trajectories.store import JudgeVerdict as StoredVerdict

log = structlog.get_logger(__name__)

RunAgent = Callable[[AgentFile, Sequence[Problem], str], Iterator[AttemptRecord]]
"""Runs an agent over problems under a run id, yielding each graded record as it finishes
(``shoppingbench.sandbox.runner.iter_attempts`` with the validator's engine, grader and sandbox)."""


def run_id_for(kind: RunKind, submission_id: str, suite_ids: Sequence[str]) -> str:
    """Deterministic: the same submission on the same suite is the same run, before and after a restart."""
    digest = hashlib.sha256("\n".join([kind, submission_id, *suite_ids]).encode()).hexdigest()
    return f"{kind}-{submission_id}-{digest[:12]}"


def qualifying_suite_name(submission_id: str) -> str:
    """The trajectory store's suite name of a submission's qualifying problems (also its defender's runs
    on them): what ``GET /qualifying/<submission id>`` publishes once the run is scored."""
    return f"qualifying-{submission_id}"


def defender_run_id(code_hash: str) -> str:
    """The run holding a reigning winner's attempts on challengers' qualifying problems: named by its code
    only, so every (winner code, problem) is run once and found again by later challengers and restarts."""
    return f"qualifying-defender-{code_hash[:32]}"


def race_suite_name(race_id: str) -> str:
    """The trajectory store's suite name of a race's problems."""
    return f"race-{race_id}"


def challenger_run(submission_id: str, suite_ids: Sequence[str]) -> RunEntry:
    """A submission's run on its own qualifying problems ``suite_ids``."""
    return RunEntry(id=run_id_for("qualifying", submission_id, suite_ids), kind="qualifying",
                    submission_id=submission_id, role="challenger",
                    suite=qualifying_suite_name(submission_id))


def defender_run(winner_id: str, code_hash: str, challenger_id: str) -> RunEntry:
    """The reigning winner's (``winner_id``, code ``code_hash``) run on challenger ``challenger_id``'s
    qualifying problems: :func:`defender_run_id`, one run for all the challengers it meets."""
    return RunEntry(id=defender_run_id(code_hash), kind="qualifying", submission_id=winner_id,
                    role="defender", suite=qualifying_suite_name(challenger_id))


def entrant_run(submission_id: str, race_id: str, suite_ids: Sequence[str]) -> RunEntry:
    """A submission's run in race ``race_id`` over its problems ``suite_ids``."""
    return RunEntry(id=run_id_for("race", submission_id, suite_ids), kind="race", submission_id=submission_id,
                    race_id=race_id, role="entrant", suite=race_suite_name(race_id))


def stored_verdict(verdict: JudgeVerdict, *, judge_retries: int = 0) -> StoredVerdict:
    """A judge's verdict as the trajectory store keeps it beside its attempt (``judge_retries``: how many
    times the attempt was judged again because the judge failed for most of its run)."""
    return StoredVerdict(model=verdict.judge, quality=verdict.quality, offline=verdict.offline,
                         explanation=verdict.explanation, gates_passed=verdict.gates_passed,
                         details={"attempts": verdict.attempts, "models_tried": list(verdict.models_tried),
                                  "echoed_completions": verdict.echoed_completions,
                                  "steered_completions": verdict.steered_completions,
                                  "failed_calls": verdict.failed_calls, "judge_retries": judge_retries})


def _arena(verdict: StoredVerdict) -> JudgeVerdict:
    tried = verdict.details.get("models_tried", [])
    return JudgeVerdict(quality=verdict.quality, judge=verdict.model, offline=verdict.offline,
                        explanation=verdict.explanation, attempts=int(verdict.details.get("attempts", 0)),
                        failed_calls=int(verdict.details.get("failed_calls", 0)),
                        models_tried=tuple(str(m) for m in tried) if isinstance(tried, list) else (),
                        echoed_completions=int(verdict.details.get("echoed_completions", 0)),
                        steered_completions=int(verdict.details.get("steered_completions", 0)))


JUDGE_FAILURE_MIN_CALLS: Final = 3
"""A run's judge has failed when more than half of at least this many judge calls failed (the reference
arena's rule)."""


def judge_failed(verdicts: Iterable[JudgeVerdict]) -> bool:
    """More than half of at least :data:`JUDGE_FAILURE_MIN_CALLS` judge-model calls of these verdicts
    failed (provider errors, refusals, unparseable answers, counted after the judge's own retries)."""
    listed = list(verdicts)
    calls = sum(v.attempts for v in listed)
    return calls >= JUDGE_FAILURE_MIN_CALLS and 2 * sum(v.failed_calls for v in listed) > calls


class RetriesPending(RuntimeError):
    """The run is not scored yet: some attempts failed for the inference provider and may be re-run (an
    attempt still failed once its retries are spent is scored as the agent's failure), or the judge failed
    for most of the run and may be asked again. Score it again later (a later tick)."""

    def __init__(self, run_id: str, problem_ids: Sequence[str], judge: bool) -> None:
        what = [f"{len(problem_ids)} attempts the inference provider failed"] if problem_ids else []
        what += ["a judge that failed for most of the run"] if judge else []
        super().__init__(f"run {run_id} owes retries: {' and '.join(what)}")
        self.run_id = run_id
        self.problem_ids = tuple(problem_ids)
        self.judge = judge


@dataclass(frozen=True)
class JudgedRun:
    """Each scored problem's success and verdict, in suite order, and the structural-filter labels of the
    attempts the call that judged them ran (not those it found already stored). ``provider_failed``:
    scored problems whose attempt the inference provider failed on every try (retries spent): failures
    of the agent, judged as any other. ``missing``: problems left out of the score because the provider
    failed their attempts and a deadline passed before their retries: neither a success nor a failure."""

    problem_ids: tuple[str, ...]
    successes: tuple[bool, ...]
    verdicts: tuple[JudgeVerdict, ...]
    labels: Mapping[str, int]
    missing: tuple[str, ...] = ()
    provider_failed: tuple[str, ...] = ()

    def score(self) -> FinalScore:
        """The final score over the scored problems, with each one's outcome (0 when none was scored)."""
        if not self.problem_ids:
            return final_score(0.0, [])
        return suite_score(self.successes, self.verdicts, self.problem_ids)


@dataclass
class _Progress:
    """What one call of :meth:`SuiteRun.judged` knows about each problem so far."""

    records: dict[str, AttemptRecord]
    verdicts: dict[str, JudgeVerdict]
    judge_retries: dict[str, int]


@dataclass(frozen=True)
class SuiteRun:
    """What one run needs besides the agent: where to record, how to run and how to judge. A validator's
    runs name it (``validator``); a miner's local test does not. ``infra_retries``: how many times an
    attempt the inference provider failed is re-run (and a run whose judge failed for most of it is
    judged again) before the run is scored without it. ``judge_concurrency``: verdicts asked at once
    (``ARENA_JUDGE_CONCURRENCY``)."""

    store: TrajectoryStore
    run_agent: RunAgent
    judge: Judge
    validator: str | None
    leak_config: LeakConfig
    infra_retries: int = 2
    judge_concurrency: int = 8
    ledger_clusters: Callable[[Sequence[str]], Mapping[str, str]] | None = None
    """A validator's exposure ledger (:meth:`~arena.suites.ledger.SqlExposureLedger.clusters_of`): the
    cluster each placed problem has on every day, which its attempts record. Without one (a miner's
    local test), or for a problem the ledger has not placed, the suite's own clusters."""

    def clusters(self, suite: Sequence[Problem]) -> dict[str, str]:
        """The leak cluster each problem of ``suite`` is recorded with."""
        placed = dict(self.ledger_clusters([p.id for p in suite])) if self.ledger_clusters else {}
        unplaced = [p for p in suite if p.id not in placed]
        if unplaced and self.ledger_clusters is not None:
            log.warning("suite_problems_not_in_ledger", problems=len(unplaced), first=unplaced[0].id,
                        hint="their attempts record the suite's own clusters; the dumps place them")
        return placed | (dict(cluster_problems(unplaced, self.leak_config).cluster_of) if unplaced else {})

    def score(self, run: RunEntry, *, agent: AgentFile, hotkey: str | None, submitted_at: float | None,
              suite: Sequence[Problem], final: bool = False) -> FinalScore:
        """Run what is missing of ``suite`` under ``run`` (whose suite names the problems), judge what is
        unjudged, and score the whole suite (with each problem's outcome, in suite order). Raises
        :class:`RetriesPending` while retries are owed, unless ``final`` (a deadline passed): then it
        scores what it has and says loudly what is missing."""
        judged = self.judged(run, agent=agent, hotkey=hotkey, submitted_at=submitted_at, suite=suite,
                             final=final)
        result = judged.score()
        log.info("suite_run_scored", run_id=run.id, kind=run.kind, success_rate=result.success_rate,
                 mean_quality=result.mean_quality, score=result.score, judges=result.judge_label,
                 missing=len(judged.missing))
        return result

    def judged(self, run: RunEntry, *, agent: AgentFile, hotkey: str | None, submitted_at: float | None,
               suite: Sequence[Problem], final: bool = False) -> JudgedRun:
        """Run what is missing of ``suite`` (and re-run attempts the provider failed, retries allowing) and
        judge what is unjudged: every scored problem's success and verdict, in suite order."""
        try:
            code: str | None = agent.source.decode("utf-8")
        except UnicodeDecodeError:  # the store keeps only the hash of a file that is not UTF-8 text
            code = None
        run_id, kind = run.id, run.kind
        recorder = RunRecorder(self.store, run.model_copy(update={"validator": self.validator}),
                               agent=AgentEntry(code_hash=agent.sha256, hotkey=hotkey, code=code,
                                                submitted_at=submitted_at),
                               problems=suite,
                               leak_clusters=self.clusters(suite))
        stored = {p.id: self.store.get_attempt(AttemptKey(run_id, agent.sha256, p.id)) for p in suite}
        missing = [p for p in suite if stored[p.id] is None or self._retry_owed(stored[p.id])]
        log.info("suite_run_started", run_id=run_id, kind=kind, problems=len(suite),
                 resumed=len(suite) - len(missing),
                 retried=sum(stored[p.id] is not None for p in missing))
        progress = self._stored_progress(stored, {p.id for p in missing})

        def keep(record: AttemptRecord, verdict: JudgeVerdict) -> None:
            self._store_verdict(record, verdict)
            progress.verdicts[record.problem_id] = verdict

        for record in self.run_agent(agent, missing, run_id) if missing else ():
            previous = stored[record.problem_id]
            if previous is not None:  # the re-run of an attempt the provider failed
                record = record.model_copy(update={"infra_retries": previous.record.infra_retries + 1})
            recorder.record(record)
            progress.records[record.problem_id] = record
        lost = [p.id for p in suite if p.id not in progress.records]
        if lost:  # the runner yields every problem or raises; a silent gap must not score as a failure
            raise RuntimeError(f"run {run_id} ended without attempts for {len(lost)} problems: {lost[:3]}")
        if final or not any(self._retry_owed_record(r) for r in progress.records.values()):
            # Who decided is read against the run's static text, known only once every attempt is in
            # (re-runs the provider owes included): labels are taken again and the judges read the
            # steered requests.
            carry_run_steering(progress.records.values())
            for record in progress.records.values():
                recorder.relabel(record)
            self._judge_again_if_failed(progress)  # stored records too: judged only once steering is known
            with ConcurrentJudging(self.judge, keep, self.judge_concurrency) as judging:
                for problem_id, record in progress.records.items():
                    if not record.infra_failed and problem_id not in progress.verdicts:
                        judging.ask(record)
        return self._settle(run_id, suite, progress, recorder, final=final)

    def _retry_owed(self, attempt: StoredAttempt | None) -> bool:
        return attempt is not None and self._retry_owed_record(attempt.record)

    def _retry_owed_record(self, record: AttemptRecord) -> bool:
        return record.infra_failed and record.infra_retries < self.infra_retries

    @staticmethod
    def _stored_progress(stored: Mapping[str, StoredAttempt | None], rerun: set[str]) -> _Progress:
        progress = _Progress(records={}, verdicts={}, judge_retries={})
        for problem_id, attempt in stored.items():
            if attempt is None or problem_id in rerun:
                continue
            progress.records[problem_id] = attempt.record
            if attempt.judge is not None and not attempt.record.infra_failed:
                progress.verdicts[problem_id] = _arena(attempt.judge)
                progress.judge_retries[problem_id] = int(attempt.judge.details.get("judge_retries", 0))
        return progress

    def _judge_again_if_failed(self, progress: _Progress) -> None:
        """When the stored verdicts say the judge failed for most of the run, ask it again for every
        verdict it failed (retries allowing): the run is retried, not scored offline."""
        if not judge_failed(progress.verdicts.values()):
            return
        for problem_id, verdict in list(progress.verdicts.items()):
            retries = progress.judge_retries.get(problem_id, 0)
            if verdict.offline and verdict.failed_calls and retries < self.infra_retries:
                record = progress.records[problem_id]
                progress.verdicts[problem_id] = self._store_verdict(
                    record, self.judge.judge(JudgeInput.from_record(record)), judge_retries=retries + 1)
                progress.judge_retries[problem_id] = retries + 1

    def _settle(self, run_id: str, suite: Sequence[Problem], progress: _Progress, recorder: RunRecorder, *,
                final: bool) -> JudgedRun:
        infra = [p.id for p in suite if progress.records[p.id].infra_failed]
        owed = [pid for pid in infra if progress.records[pid].infra_retries < self.infra_retries]
        judge_down = judge_failed(progress.verdicts.values())
        judge_owed = judge_down and any(
            v.offline and v.failed_calls and progress.judge_retries.get(pid, 0) < self.infra_retries
            for pid, v in progress.verdicts.items())
        if (owed or judge_owed) and not final:
            log.warning("suite_run_retries_pending", run_id=run_id, provider_failed=owed,
                        judge_failed=judge_owed)
            raise RetriesPending(run_id, owed, judge_owed)
        spent = [pid for pid in infra if pid not in owed]
        if owed:
            log.error("suite_run_recorded_with_missing_attempts", run_id=run_id, missing=owed,
                      reason="deadline passed",
                      hint="the inference provider failed these attempts and the deadline passed before "
                           "their retries: they count neither as successes nor as failures; check the "
                           "provider (arena_provider_errors in /metrics)")
        if spent:
            log.warning("suite_run_counted_provider_failures", run_id=run_id, failed=spent,
                        hint="the inference provider failed these attempts on every try: they count as "
                             "the agent's failures")
            for pid in spent:
                progress.verdicts.setdefault(pid, self._verdict_of_spent(progress.records[pid]))
        if judge_down:
            log.error("suite_run_scored_with_failing_judge", run_id=run_id,
                      reason="deadline passed" if judge_owed else "retries spent",
                      hint="the judge failed for most of the run: its failed verdicts are the offline rules'")
        recorder.finish()
        scored = [p.id for p in suite if p.id not in owed]
        return JudgedRun(problem_ids=tuple(scored),
                         successes=tuple(progress.records[pid].score.success for pid in scored),
                         verdicts=tuple(progress.verdicts[pid] for pid in scored),
                         labels=dict(recorder.labels), missing=tuple(owed), provider_failed=tuple(spent))

    def _verdict_of_spent(self, record: AttemptRecord) -> JudgeVerdict:
        """The verdict of an attempt the provider failed on every try, now scored as a failure: the one
        stored with it when an earlier scoring judged it, else the judge's, stored."""
        stored = self.store.get_attempt(AttemptKey.of(record))
        if stored is not None and stored.judge is not None \
                and stored.record.infra_retries == record.infra_retries:
            return _arena(stored.judge)
        return self._store_verdict(record, self.judge.judge(JudgeInput.from_record(record)))

    def _store_verdict(self, record: AttemptRecord, verdict: JudgeVerdict, *,
                       judge_retries: int = 0) -> JudgeVerdict:
        self.store.set_judge_verdict(AttemptKey.of(record),
                                     stored_verdict(verdict, judge_retries=judge_retries))
        return verdict
