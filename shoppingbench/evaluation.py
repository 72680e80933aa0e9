"""Running an agent over a suite in-process, and collecting a stream of attempt records into a result.

Every record is made by :class:`shoppingbench.grading.grader.Grader`, the one path the sandboxed runner
(``shoppingbench.sandbox``) also takes, so a dialogue gets the same score and record whichever ran it.
:func:`collect` turns a stream of records into the suite's result, with a progress bar and a
per-attempt callback for callers that persist each one.

The in-process evaluator trusts the agent (it runs in this process): it exists for the bundled
reference agents and for debugging. It has no per-problem timeout, since a thread cannot be stopped;
miner code is only ever run through the sandboxed runner.
"""

from __future__ import annotations

import hashlib
import inspect
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import Any

import structlog
from pydantic import BaseModel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from shoppingbench.grading.grader import Grader
from shoppingbench.problems.models import Problem
from shoppingbench.records import AttemptFailure, AttemptRecord
from shoppingbench.scoring import ProductLookup, ScoringProfile, SuiteScore, TitleEmbedder, aggregate

log = structlog.get_logger(__name__)

AgentMain = Callable[[dict[str, Any]], list[dict[str, Any]]]
OnAttempt = Callable[[AttemptRecord], None]


class EvaluationResult(BaseModel):
    run_id: str
    attempts: list[AttemptRecord]
    suite: SuiteScore


def new_run_id() -> str:
    return uuid.uuid4().hex


def collect(records: Iterable[AttemptRecord], suite: Sequence[Problem], *, run_id: str,
            progress: bool = True, on_attempt: OnAttempt | None = None,
            label: str = "evaluating") -> EvaluationResult:
    """Consume ``records`` as they finish (calling ``on_attempt`` on each) and aggregate in suite order.

    The whole suite is the denominator: a problem without a record counts as a failure.
    """
    by_problem: dict[str, AttemptRecord] = {}
    columns = (TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, disable=not progress, transient=True) as bar:
        task = bar.add_task(label, total=len(suite))
        for record in records:
            if on_attempt is not None:
                on_attempt(record)
            by_problem[record.problem_id] = record
            bar.advance(task)
    ordered = [by_problem[p.id] for p in suite if p.id in by_problem]
    suite_score = aggregate([a.score for a in ordered], suite)
    log.info("suite_evaluated", run_id=run_id, problems=len(suite), success_rate=suite_score.success_rate)
    return EvaluationResult(run_id=run_id, attempts=ordered, suite=suite_score)


def _source_hash(agent: Callable[..., Any]) -> str:
    try:
        with open(inspect.getfile(agent), "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except (TypeError, OSError):
        return ""


def _in_process_attempt(agent: AgentMain, problem: Problem, grader: Grader, run_id: str,
                        agent_hash: str) -> AttemptRecord:
    started_at = time.time()
    failure: AttemptFailure | None = None
    steps: object = []
    try:
        steps = agent(problem.public_view())
    except Exception as exc:  # an agent crash is a recorded failure of this problem, not of the run
        log.warning("agent_crashed", problem_id=problem.id, error=repr(exc))
        failure = AttemptFailure(kind="crash", reason=f"agent raised {type(exc).__name__}: {exc}")
    return grader.record(run_id=run_id, agent_hash=agent_hash, problem=problem, steps=steps, failure=failure,
                         started_at=started_at, finished_at=time.time())


def iter_in_process(agent: AgentMain, suite: Sequence[Problem], grader: Grader, *, run_id: str,
                    workers: int = 4, agent_hash: str | None = None) -> Iterator[AttemptRecord]:
    """Run ``agent`` in threads on every problem and yield each record as it finishes.

    A scoring error (e.g. the catalog is down) aborts the run: no problem starts after it (whatever the
    threads' timing), and the error is raised rather than the rest graded against a broken catalog.
    """
    digest = _source_hash(agent) if agent_hash is None else agent_hash
    failed = threading.Event()

    def attempt(problem: Problem) -> AttemptRecord | None:
        if failed.is_set():
            return None
        try:
            return _in_process_attempt(agent, problem, grader, run_id, digest)
        except BaseException:
            failed.set()
            raise

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures: list[Future[AttemptRecord | None]] = [pool.submit(attempt, p) for p in suite]
        try:
            for future in as_completed(futures):
                record = future.result()
                if record is not None:
                    yield record
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def evaluate(agent: AgentMain, suite: Sequence[Problem], products: ProductLookup, embedder: TitleEmbedder,
             profile: ScoringProfile, *, workers: int = 4, progress: bool = True,
             on_attempt: OnAttempt | None = None) -> EvaluationResult:
    """Run a trusted in-process ``agent`` on every problem (``workers`` at a time) and aggregate."""
    run_id = new_run_id()
    grader = Grader(products, embedder, profile)
    records = iter_in_process(agent, suite, grader, run_id=run_id, workers=workers)
    return collect(records, suite, run_id=run_id, progress=progress, on_attempt=on_attempt)
