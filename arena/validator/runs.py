"""Run one agent over one suite, resumably: record and judge every attempt, then score the run.

The run id is a function of the submission and the suite, so a restarted validator finds the attempts
it already stored (the trajectory store keys attempts by run, agent and problem), runs only the
problems still missing, judges only attempts still without a verdict, and scores the whole suite.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import structlog

from arena.judge import FinalScore, Judge, JudgeInput, JudgeVerdict, suite_score
from arena.suites.clusters import LeakConfig, cluster_problems
from shoppingbench.problems.models import Problem
from shoppingbench.records import AttemptRecord
from shoppingbench.sandbox.runner import AgentFile
from trajectories.recorder import RunRecorder
from trajectories.store import AgentEntry, AttemptKey, RunKind, TrajectoryStore
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


def stored_verdict(verdict: JudgeVerdict) -> StoredVerdict:
    """A judge's verdict as the trajectory store keeps it beside its attempt."""
    return StoredVerdict(model=verdict.judge, quality=verdict.quality, offline=verdict.offline,
                         explanation=verdict.explanation,
                         details={"attempts": verdict.attempts, "models_tried": list(verdict.models_tried),
                                  "echoed_completions": verdict.echoed_completions})


def _arena(verdict: StoredVerdict) -> JudgeVerdict:
    tried = verdict.details.get("models_tried", [])
    return JudgeVerdict(quality=verdict.quality, judge=verdict.model, offline=verdict.offline,
                        explanation=verdict.explanation, attempts=int(verdict.details.get("attempts", 0)),
                        models_tried=tuple(str(m) for m in tried) if isinstance(tried, list) else (),
                        echoed_completions=int(verdict.details.get("echoed_completions", 0)))


@dataclass(frozen=True)
class JudgedRun:
    """Each problem's success and verdict, in suite order, and the structural-filter labels of the attempts
    the call that judged them ran (not those it found already stored)."""

    problem_ids: tuple[str, ...]
    successes: tuple[bool, ...]
    verdicts: tuple[JudgeVerdict, ...]
    labels: Mapping[str, int]

    def score(self) -> FinalScore:
        """The suite's final score, with each problem's outcome."""
        return suite_score(self.successes, self.verdicts, self.problem_ids)


@dataclass(frozen=True)
class SuiteRun:
    """What one run needs besides the agent: where to record, how to run and how to judge. A validator's
    runs name it (``validator``); a miner's local test does not."""

    store: TrajectoryStore
    run_agent: RunAgent
    judge: Judge
    validator: str | None
    leak_config: LeakConfig

    def score(self, *, kind: RunKind, run_id: str, suite_name: str, agent: AgentFile, hotkey: str | None,
              submitted_at: float | None, suite: Sequence[Problem]) -> FinalScore:
        """Run what is missing of ``suite``, judge what is unjudged, and score the whole suite (with each
        problem's outcome, in suite order)."""
        result = self.judged(kind=kind, run_id=run_id, suite_name=suite_name, agent=agent, hotkey=hotkey,
                             submitted_at=submitted_at, suite=suite).score()
        log.info("suite_run_scored", run_id=run_id, kind=kind, success_rate=result.success_rate,
                 mean_quality=result.mean_quality, score=result.score, judges=result.judge_label)
        return result

    def judged(self, *, kind: RunKind, run_id: str, suite_name: str, agent: AgentFile, hotkey: str | None,
               submitted_at: float | None, suite: Sequence[Problem]) -> JudgedRun:
        """Run what is missing of ``suite`` and judge what is unjudged: every problem's success and
        verdict, in suite order."""
        try:
            code: str | None = agent.source.decode("utf-8")
        except UnicodeDecodeError:  # the store keeps only the hash of a file that is not UTF-8 text
            code = None
        recorder = RunRecorder(self.store, run_id=run_id, kind=kind, suite=suite_name,
                               validator=self.validator,
                               agent=AgentEntry(code_hash=agent.sha256, hotkey=hotkey, code=code,
                                                submitted_at=submitted_at),
                               problems=suite,
                               leak_clusters=cluster_problems(suite, self.leak_config).cluster_of)
        stored = {p.id: self.store.get_attempt(AttemptKey(run_id, agent.sha256, p.id)) for p in suite}
        missing = [p for p in suite if stored[p.id] is None]
        log.info("suite_run_started", run_id=run_id, kind=kind, problems=len(suite),
                 resumed=len(suite) - len(missing))
        verdicts: dict[str, JudgeVerdict] = {}
        successes: dict[str, bool] = {}
        if missing:
            for record in self.run_agent(agent, missing, run_id):
                recorder.record(record)
                verdicts[record.problem_id] = self._judge(record)
                successes[record.problem_id] = record.score.success
        for problem_id, attempt in stored.items():
            if attempt is None:
                continue
            successes[problem_id] = attempt.record.score.success
            verdicts[problem_id] = (_arena(attempt.judge) if attempt.judge is not None
                                    else self._judge(attempt.record))
        lost = [p.id for p in suite if p.id not in successes]
        if lost:  # the runner yields every problem or raises; a silent gap must not score as a failure
            raise RuntimeError(f"run {run_id} ended without attempts for {len(lost)} problems: {lost[:3]}")
        recorder.finish()
        return JudgedRun(problem_ids=tuple(p.id for p in suite),
                         successes=tuple(successes[p.id] for p in suite),
                         verdicts=tuple(verdicts[p.id] for p in suite), labels=dict(recorder.labels))

    def _judge(self, record: AttemptRecord) -> JudgeVerdict:
        verdict = self.judge.judge(JudgeInput.from_record(record))
        self.store.set_judge_verdict(AttemptKey.of(record), stored_verdict(verdict))
        return verdict
