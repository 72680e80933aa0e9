"""Held-out evaluation of a checkpoint through the validator's path: sandbox, verified proxy, one scorer.

The agent (default: the ReAct reference agent) runs ``k`` times over every held-out problem with
``run_suite``; each run is graded by the same :class:`Grader` the validator uses. Per category we
report pass@1 (the ASR of one sample) and pass@k (unbiased estimator, :mod:`passk`), the mean rule
score, and how often the agent named product ids no verified search had shown it (hallucination).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import structlog
from pydantic import BaseModel, Field
from rich.table import Table

import shoppingbench.agents
from shoppingbench.dialogue import DialogueStep
from shoppingbench.evaluation import Grader
from shoppingbench.problems.models import Problem
from shoppingbench.proxy.inference import InferenceConfig
from shoppingbench.records import AttemptRecord, ProxyCall
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig, run_suite
from shoppingbench.search.base import SearchEngine
from trajectories.training.data.problems import dump_problems
from trajectories.training.evaluation.passk import pass_at_k

log = structlog.get_logger(__name__)

REACT_AGENT = Path(shoppingbench.agents.__file__).resolve().parent / "react_llm.py"
"""The ReAct reference agent, which drives the model with tagged text."""

DEFAULT_AGENT = Path(shoppingbench.agents.__file__).resolve().parent / "tool_calling_llm.py"
"""The agent evaluation and rollouts run unless told otherwise: the tool-calling reference agent, whose
prompts render as the training conversations do (OpenAI tools protocol, Qwen3's tool format)."""

ID_TOOLS = frozenset({"view_product_information", "recommend_product"})
"""Tools whose ``product_ids`` must come from an earlier search."""

ALL = "all"


class Hallucinations(BaseModel):
    """Product ids an attempt named (viewed or recommended) that no earlier verified search returned."""

    steps: int = Field(ge=0, description="Dialogue steps of the attempt")
    steps_hallucinated: int = Field(ge=0, description="Steps naming at least one unseen id")
    ids_checked: int = Field(ge=0)
    ids_hallucinated: int = Field(ge=0)
    per_step: list[int] = Field(default_factory=list, description="Unseen ids named in each step")


def named_product_ids(value: Any) -> list[str]:
    """The ids a ``product_ids`` argument names, however it was sent."""
    # The tools take one id, a comma-separated string, or a list (the agent SDK accepts all three)
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [str(item).strip() for item in value if isinstance(item, str | int) and str(item).strip()]
    return []


def _parse_step(raw: Any) -> DialogueStep | None:
    try:
        return DialogueStep.model_validate(raw)
    except Exception:  # untrusted steps: malformed or absurdly nested ones simply name no ids
        return None


def _verified_searches(proxy_log: Sequence[ProxyCall]) -> Iterator[list[str]]:
    for call in sorted(proxy_log, key=lambda c: c.seq):
        if call.kind == "search" and call.path.endswith("/find_product") and call.status == 200:
            yield list(call.product_ids)


def count_unseen_ids(steps: Iterable[Sequence[tuple[str, Mapping[str, Any]]]],
                     searches: Iterator[list[str]]) -> Hallucinations:
    """The counting rule on its own: ``steps`` are each step's ``(tool name, parameters)`` calls in order, and
    every ``find_product`` call reveals the next ids of ``searches`` (what that search really returned);
    every id a ``view_product_information`` or ``recommend_product`` call names that no earlier search
    revealed counts as hallucinated. Shared by the proxy-log check below and GRPO's in-process episodes."""
    seen: set[str] = set()
    per_step: list[int] = []
    checked = 0
    for calls in steps:
        unseen = 0
        for name, parameters in calls:
            if name == "find_product":
                seen.update(next(searches, []))
            elif name in ID_TOOLS:
                ids = named_product_ids(parameters.get("product_ids"))
                checked += len(ids)
                unseen += sum(1 for product_id in ids if product_id not in seen)
        per_step.append(unseen)
    return Hallucinations(steps=len(per_step), steps_hallucinated=sum(1 for n in per_step if n),
                          ids_checked=checked, ids_hallucinated=sum(per_step), per_step=per_step)


def count_hallucinations(steps: Sequence[Any], proxy_log: Sequence[ProxyCall]) -> Hallucinations:
    """Walk the steps in order; a ``find_product`` call reveals the ids its matching verified proxy
    call returned (the n-th search of the steps is the n-th successful search in the log; the step's
    own claimed result is never trusted), and every id a ``view_product_information`` or
    ``recommend_product`` call names that was not revealed before counts as hallucinated."""
    parsed = (_parse_step(raw) for raw in steps)
    calls = ([(call.name, call.parameters) for call in step.completion.message.tool_call]
             if step is not None else [] for step in parsed)
    return count_unseen_ids(calls, _verified_searches(proxy_log))


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
