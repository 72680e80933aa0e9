"""Held-out evaluation of a checkpoint through the validator's path: sandbox, verified proxy, one scorer.

The agent (default: the ReAct reference agent) runs ``k`` times over every held-out problem with
``run_suite``; each run is graded by the same :class:`Grader` the validator uses. Per category we
report pass@1 (the ASR of one sample) and pass@k (unbiased estimator, :mod:`passk`), the mean rule
score, and how often the agent named product ids no verified search had shown it (hallucination,
:mod:`hallucinations`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import structlog
from pydantic import BaseModel, Field
from rich.table import Table

import shoppingbench.agents
from shoppingbench.grading.grader import Grader
from shoppingbench.problems.models import Problem
from shoppingbench.proxy.inference import InferenceConfig
from shoppingbench.records import AttemptRecord
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig, run_suite
from shoppingbench.search.base import SearchEngine
from trajectories.training.data.problems import dump_problems
from trajectories.training.evaluation.hallucinations import count_hallucinations
from trajectories.training.evaluation.passk import pass_at_k

log = structlog.get_logger(__name__)

REACT_AGENT = Path(shoppingbench.agents.__file__).resolve().parent / "react_llm.py"
"""The ReAct reference agent, which drives the model with tagged text."""

DEFAULT_AGENT = Path(shoppingbench.agents.__file__).resolve().parent / "tool_calling_llm.py"
"""The agent evaluation and rollouts run unless told otherwise: the tool-calling reference agent, whose
prompts render as the training conversations do (OpenAI tools protocol, Qwen3's tool format)."""

ALL = "all"


class ProblemResult(BaseModel):
    problem_id: str
    category: str
    attempts: int = Field(ge=1, description="k: missing attempts count as failures")
    successes: int = Field(ge=0)
    mean_rule: float
    steps: int = Field(ge=0)
    steps_hallucinated: int = Field(ge=0)
    attempts_hallucinated: int = Field(ge=0)
    failures: int = Field(ge=0, description="Attempts that crashed, timed out or were cut")


class CategoryResult(BaseModel):
    category: str
    problems: int
    attempts: int
    pass_at_1: float = Field(description="ASR of one sample: mean over problems of successes / k")
    pass_at_k: float = Field(description="Unbiased pass@k, mean over problems")
    mean_rule: float
    step_hallucination_rate: float = Field(description="Steps naming an unseen id / all steps")
    attempt_hallucination_rate: float = Field(description="Attempts with such a step / attempts")


class EvaluationReport(BaseModel):
    k: int
    model: str
    agent_hash: str
    run_ids: list[str]
    categories: list[CategoryResult] = Field(description=f"Per category, then `{ALL}`")
    problems: list[ProblemResult]

    def category(self, name: str) -> CategoryResult:
        return next(c for c in self.categories if c.category == name)


def _problem_result(problem: Problem, records: list[AttemptRecord], k: int) -> ProblemResult:
    counts = [count_hallucinations(r.steps, r.proxy_log) for r in records]
    return ProblemResult(
        problem_id=problem.id, category=problem.category, attempts=k,
        successes=sum(1 for r in records if r.score.success),
        mean_rule=sum(r.score.rule for r in records) / k,
        steps=sum(c.steps for c in counts), steps_hallucinated=sum(c.steps_hallucinated for c in counts),
        attempts_hallucinated=sum(1 for c in counts if c.ids_hallucinated),
        failures=sum(1 for r in records if r.failure is not None) + k - len(records))


def _category_result(name: str, problems: list[ProblemResult], k: int) -> CategoryResult:
    steps = sum(p.steps for p in problems)
    attempts = sum(p.attempts for p in problems)
    return CategoryResult(
        category=name, problems=len(problems), attempts=attempts,
        pass_at_1=sum(pass_at_k(p.attempts, p.successes, 1) for p in problems) / len(problems),
        pass_at_k=sum(pass_at_k(p.attempts, p.successes, k) for p in problems) / len(problems),
        mean_rule=sum(p.mean_rule for p in problems) / len(problems),
        step_hallucination_rate=sum(p.steps_hallucinated for p in problems) / steps if steps else 0.0,
        attempt_hallucination_rate=sum(p.attempts_hallucinated for p in problems) / attempts)


def summarise(problems: Sequence[Problem], records: Sequence[AttemptRecord], k: int, *, model: str,
              agent_hash: str, run_ids: list[str]) -> EvaluationReport:
    """Aggregate ``k`` attempts per problem (a missing or extra-problem record is a failure / ignored)."""
    if not problems:
        raise ValueError("no problems to evaluate")
    by_problem: dict[str, list[AttemptRecord]] = defaultdict(list)
    for record in records:
        by_problem[record.problem_id].append(record)
    results = [_problem_result(p, by_problem[p.id][:k], k) for p in problems]
    by_category: dict[str, list[ProblemResult]] = defaultdict(list)
    for result in results:
        by_category[result.category].append(result)
    categories = [_category_result(name, by_category[name], k) for name in sorted(by_category)]
    categories.append(_category_result(ALL, results, k))
    return EvaluationReport(k=k, model=model, agent_hash=agent_hash, run_ids=run_ids,
                            categories=categories, problems=results)


def evaluate(agent: AgentFile, problems: Sequence[Problem], engine: SearchEngine, grader: Grader, *,
             inference: InferenceConfig, sandbox: SandboxConfig, k: int, model: str, workers: int = 2,
             progress: bool = True, on_attempt: Callable[[AttemptRecord], None] | None = None,
             ) -> tuple[EvaluationReport, list[AttemptRecord]]:
    """Run ``agent`` ``k`` times over ``problems`` (one ``run_suite`` per sample) and summarise."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    records: list[AttemptRecord] = []
    run_ids: list[str] = []
    for sample in range(k):
        result = run_suite(agent, problems, engine, grader, inference=inference, sandbox=sandbox,
                           workers=workers, progress=progress, on_attempt=on_attempt)
        run_ids.append(result.run_id)
        records.extend(result.attempts)
        log.info("evaluation.sample_done", sample=sample + 1, k=k, run_id=result.run_id,
                 successes=sum(1 for r in result.attempts if r.score.success))
    report = summarise(problems, records, k, model=model, agent_hash=agent.sha256, run_ids=run_ids)
    return report, records


def held_out_problems(dump: Path) -> list[Problem]:
    """The distinct problems of a dump's ``held_out`` split, with their rewards (rows without one skipped)."""
    found = dump_problems([dump], "held_out")
    if not found.problems:
        raise ValueError(f"{dump}'s held_out split has no problem with a reward")
    return found.problems


def results_table(report: EvaluationReport) -> Table:
    table = Table(title=f"{report.model}: held-out evaluation, k={report.k}")
    for column in ("category", "problems", "attempts", "pass@1 (ASR)", f"pass@{report.k}", "mean rule",
                   "halluc. steps", "halluc. attempts"):
        table.add_column(column, justify="left" if column == "category" else "right")
    for c in report.categories:
        if c.category == ALL:
            table.add_section()
        table.add_row(c.category, str(c.problems), str(c.attempts), f"{c.pass_at_1:.3f}",
                      f"{c.pass_at_k:.3f}", f"{c.mean_rule:.3f}", f"{c.step_hallucination_rate:.3f}",
                      f"{c.attempt_hallucination_rate:.3f}")
    return table
