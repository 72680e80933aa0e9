"""Run an in-process agent over a suite and score every attempt with the one shared scorer.

This path trusts the agent (it runs in this process): it exists for the bundled reference agents and
for debugging. It has no per-problem timeout, since a thread cannot be stopped; miner code is only
ever run through the sandboxed runner, which enforces limits, produces the same steps and feeds the
same scorer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

import structlog
from pydantic import BaseModel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from shoppingbench.problems.models import Problem
from shoppingbench.scoring import (
    AttemptScore,
    ProductLookup,
    ScoringProfile,
    SuiteScore,
    TitleEmbedder,
    aggregate,
    score_attempt,
)
from shoppingbench.scoring.dialogue import as_steps

log = structlog.get_logger(__name__)

AgentMain = Callable[[dict[str, Any]], list[dict[str, Any]]]


class Attempt(BaseModel):
    """One agent x problem: what the agent said and how it scored."""

    problem_id: str
    steps: list[Any]
    score: AttemptScore


class EvaluationResult(BaseModel):
    attempts: list[Attempt]
    suite: SuiteScore


def _attempt(agent: AgentMain, problem: Problem, products: ProductLookup, embedder: TitleEmbedder,
             profile: ScoringProfile) -> Attempt:
    try:
        steps = agent(problem.public_view())
    except Exception as exc:  # an agent crash is a recorded failure of this problem, not of the run
        log.warning("agent_crashed", problem_id=problem.id, error=repr(exc))
        return Attempt(problem_id=problem.id, steps=[],
                       score=AttemptScore.failure(problem, f"agent raised {type(exc).__name__}: {exc}",
                                                  profile))
    # Record exactly what the scorer reads as steps.
    return Attempt(problem_id=problem.id, steps=list(as_steps(steps)),
                   score=score_attempt(problem, steps, products, embedder, profile))


def evaluate(agent: AgentMain, suite: Sequence[Problem], products: ProductLookup, embedder: TitleEmbedder,
             profile: ScoringProfile, *, workers: int = 4, progress: bool = True) -> EvaluationResult:
    """Run ``agent`` on every problem (``workers`` at a time) and aggregate over the whole suite.

    An agent's crash is that problem's recorded failure; a scoring error (e.g. the catalog is down)
    aborts the run at once rather than grading the rest against a broken catalog.
    """
    attempts: dict[str, Attempt] = {}
    columns = (TextColumn("[bold]evaluating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, disable=not progress, transient=True) as bar, \
            ThreadPoolExecutor(max_workers=workers) as pool:
        task = bar.add_task("evaluating", total=len(suite))
        futures = [pool.submit(_attempt, agent, p, products, embedder, profile) for p in suite]
        try:
            for future in as_completed(futures):
                attempt = future.result()
                attempts[attempt.problem_id] = attempt
                bar.advance(task)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    ordered = [attempts[p.id] for p in suite if p.id in attempts]
    suite_score = aggregate([a.score for a in ordered], suite)
    log.info("suite_evaluated", problems=len(suite), success_rate=suite_score.success_rate)
    return EvaluationResult(attempts=ordered, suite=suite_score)
