"""A miner's local test: an agent file over a suite through a validator's own :class:`SuiteRun` (run kind
``local_test``), so its score cannot drift from a validator's.

The suite is the bundled sample world's, given problem files, freshly generated suites of the qualifying
size (one per seed, by the generator the validators' schedule names for the day) or a week's practice
suite. Every attempt is also appended to a JSONL file as it finishes; the run is scored per category,
per generated suite (what one qualifying run scores) and for the whole suite. A row with no scored attempt
(every attempt the provider failed) is printed ``not scored``, never 0%; each row says how many of its
problems were scored. Each attempt's judge verdict and filter label are listed under the scores and added
to its JSONL line once the run is judged (``arena.validator.attempt_report``); a legend defines the
columns and the fields.
"""

from __future__ import annotations

import secrets
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

import httpx
import orjson
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from arena.judge import FinalScore, final_score
from arena.settings import ArenaSettings
from arena.suites import practice_seed, practice_week
from arena.suites.generators import open_scheduled_sources
from arena.validator.assemble import catalog_agent_runner
from arena.validator.attempt_report import (
    AttemptExplanation,
    attempt_table,
    explain_attempts,
    rewrite_with_explanations,
)
from arena.validator.runs import JudgedRun, RunAgent, SuiteRun
from shoppingbench.evaluation import EvaluationResult, collect, new_run_id
from shoppingbench.problems.loaders import load_problems
from shoppingbench.problems.models import Problem
from shoppingbench.records import AttemptRecord
from shoppingbench.results import first_refusal, results_table
from shoppingbench.sample_world import configured_sample_world
from shoppingbench.sandbox.runner import AgentFile, InferenceProvider
from shoppingbench.search.base import SearchEngine
from trajectories.store import RunEntry, TrajectoryStore

LOCAL_TEST_SUITE = "miner-test"
"""The trajectory store's suite name of a local test's problems."""


class SuiteChoiceError(Exception):
    """The options name no runnable suite (the message says which to give)."""


@dataclass(frozen=True)
class ChosenSuite:
    """The catalog a local test runs over, its problems, and the generated suites they come from (seed ->
    problem ids; empty unless generated)."""

    catalog_dir: Path
    problems: list[Problem]
    generated: dict[str, list[str]]


@dataclass(frozen=True)
class LocalTestResult:
    """Every attempt with the harness's aggregate, the final scores by row name, the attempts'
    structural-filter label counts, and each problem's verdict and label (in suite order)."""

    run_id: str
    evaluation: EvaluationResult
    scores: dict[str, FinalScore]
    labels: Mapping[str, int]
    scored: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Per score row: problems scored, of the row's problems."""
    explanations: Sequence[AttemptExplanation] = ()
    """Per problem of the suite, in its order: the verdict scored and the label the store keeps."""


def generated_seeds(seeds: Sequence[str], count: int) -> list[str]:
    """The generator seeds of generated suites: each seed given, else ``count`` fresh random ones."""
    return [f"generated/{seed}" for seed in seeds or [secrets.token_hex(8) for _ in range(count)]]


def practice_monday(week: str) -> date:
    """The Monday of ISO week ``week``, whose schedule entry makes its practice suite."""
    try:
        return date.fromisoformat(f"{week}-1")
    except ValueError:
        raise SuiteChoiceError(f"--week: {week!r} is not an ISO week such as 2026-W48") from None


def suite_seeds(*, generated: bool, practice: bool, seeds: Sequence[str], count: int, week: str | None,
                today: date) -> tuple[list[str] | None, date]:
    """The generator seeds the options name (``None``: not generated) and the day whose generator makes
    them: ``count`` fresh suites or the given ``seeds``, or the practice suite of ``week`` (default: this
    week) on that week's Monday."""
    if generated and practice:
        raise SuiteChoiceError("--generated and --practice are two kinds of suite: give one")
    if (seeds or count != 1) and not generated:
        raise SuiteChoiceError("--seed and --suites choose generated suites: add --generated")
    if generated:
        return generated_seeds(seeds, count), today
    if practice:
        chosen = week or practice_week(today)
        return [practice_seed(chosen)], practice_monday(chosen)
    return None, today


def _generated_suites(settings: ArenaSettings, catalog_dir: Path, seeds: Sequence[str],
                      day: date) -> dict[str, list[Problem]]:
    """One suite of the qualifying size per generator seed, generated as validators generate theirs: by
    the generator their schedule names for ``day``."""
    with open_scheduled_sources(catalog_dir, settings.schedule()) as sources:
        source = sources.for_day(day)
        return {seed: source.generate(seed, settings.qualifying_suite_sizes()) for seed in seeds}


def _load_suite(files: Sequence[Path]) -> list[Problem]:
    return [problem for path in files for problem in load_problems(path)]


def choose_suite(settings: ArenaSettings, *, catalog: Path | None, suite_files: Sequence[Path],
                 seeds: Sequence[str] | None, day: date, progress: bool) -> ChosenSuite:
    """The catalog and problems to run: one generated suite per seed when ``seeds`` are given, else the
    given problem files over ``catalog``, else the settings' sample world and its suite."""
    if seeds is not None:
        if suite_files:
            raise SuiteChoiceError("--generated and --practice generate their suites: drop --suite")
        catalog_dir = catalog or configured_sample_world(settings, progress=progress).catalog_dir
        suites = _generated_suites(settings, catalog_dir, seeds, day)
        return ChosenSuite(catalog_dir, [p for suite in suites.values() for p in suite],
                           {seed: [p.id for p in suite] for seed, suite in suites.items()})
    if catalog is None:
        world = configured_sample_world(settings, progress=progress)
        catalog_dir = world.catalog_dir
        suite = _load_suite(suite_files) if suite_files else world.suite(settings.suite_per_category)
    elif suite_files:
        catalog_dir, suite = catalog, _load_suite(suite_files)
    else:
        raise SuiteChoiceError("a custom --catalog needs the problems that go with it: pass --suite FILE")
    if not suite:
        raise SuiteChoiceError("the suite is empty")
    return ChosenSuite(catalog_dir, suite, {})


def missing_answers(engine: SearchEngine, suite: Sequence[Problem]) -> tuple[list[str], list[str]]:
    """The answer ids of ``suite`` absent from the catalog, and the problems that have any."""
    answers = sorted({target.product_id for problem in suite for target in problem.targets})
    found = engine.get_products(answers)
    missing = [product_id for product_id in answers if product_id not in found]
    absent = set(missing)
    return missing, [p.id for p in suite if any(t.product_id in absent for t in p.targets)]


@contextmanager
def throwaway_store() -> Iterator[TrajectoryStore]:
    """The store of a local test that keeps nothing: a scratch SQLite file, deleted when the block ends."""
    with tempfile.TemporaryDirectory(prefix="local-test-") as scratch, \
            TrajectoryStore.open(f"sqlite:///{scratch}/trajectories.sqlite3") as store:
        yield store


@contextmanager
def local_suite_run(settings: ArenaSettings, engine: SearchEngine, store: TrajectoryStore, *,
                    inference: InferenceProvider) -> Iterator[SuiteRun]:
    """A validator's suite run over the open catalog ``engine``, recording into ``store``, judged by the
    settings' judge, for no validator, calling the endpoint ``inference`` opens."""
    with catalog_agent_runner(settings, engine, inference=inference) as run_agent:
        yield SuiteRun(store=store, run_agent=run_agent, judge=settings.judge(), validator=None,
                       leak_config=settings.leak_clusters, judge_concurrency=settings.judge_concurrency)


def _observed(run_agent: RunAgent, on_attempt: Callable[[AttemptRecord], None], progress: bool) -> RunAgent:
    """``run_agent`` handing each record to ``on_attempt`` as it finishes, with a progress bar."""
    def run(agent: AgentFile, problems: Sequence[Problem], run_id: str) -> Iterator[AttemptRecord]:
        columns = (TextColumn("[bold]running"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, disable=not progress, transient=True) as bar:
            task = bar.add_task("running", total=len(problems))
            for record in run_agent(agent, problems, run_id):
                on_attempt(record)
                bar.advance(task)
                yield record
    return run


def run_local_test(runs: SuiteRun, agent: AgentFile, chosen: ChosenSuite, *, out: Path,
                   progress: bool) -> LocalTestResult:
    """Run, record and judge ``agent`` over the chosen suite as a validator's run does (a fresh run id,
    kind ``local_test``), appending every attempt to the JSONL file ``out`` as it finishes, then adding
    each line's verdict and filter label once the run is judged."""
    run_id = new_run_id()
    attempts: list[AttemptRecord] = []
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as handle:
        def keep(record: AttemptRecord) -> None:
            # One line per attempt as soon as it is graded, so an interrupted run keeps what it finished.
            handle.write(orjson.dumps(record.model_dump(mode="json")) + b"\n")
            handle.flush()
            attempts.append(record)

        observed = replace(runs, run_agent=_observed(runs.run_agent, keep, progress))
        judged = observed.judged(RunEntry(id=run_id, kind="local_test", suite=LOCAL_TEST_SUITE), agent=agent,
                                 hotkey=None, submitted_at=None, suite=chosen.problems, final=True)
    explanations = explain_attempts(judged, chosen.problems, runs.store, run_id=run_id,
                                    agent_hash=agent.sha256)
    rewrite_with_explanations(out, explanations)
    evaluation = collect(attempts, chosen.problems, run_id=run_id, progress=False)
    return LocalTestResult(run_id=run_id, evaluation=evaluation,
                           scores=final_scores(judged, chosen.problems, chosen.generated),
                           labels=judged.labels,
                           scored=scored_counts(judged, chosen.problems, chosen.generated),
                           explanations=explanations)


def probe_inference(base_url: str, api_key: str, *, timeout: float = 5.0) -> str | None:
    """Why the OpenAI-compatible endpoint at ``base_url`` cannot serve a run (``None``: it answers).

    ``GET /models``: any HTTP answer but a server error counts as up (some servers do not list models)."""
    try:
        response = httpx.get(base_url.rstrip("/") + "/models", timeout=timeout,
                             headers={"Authorization": f"Bearer {api_key}"})
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if response.status_code >= 500:
        return f"HTTP {response.status_code} on GET /models"
    if response.status_code in (401, 403):
        return f"HTTP {response.status_code} on GET /models: check ARENA_INFERENCE_API_KEY"
    return None


def all_crashed(result: LocalTestResult) -> bool:
    """Every attempt of the run crashed (and there was one)."""
    attempts = result.evaluation.attempts
    return bool(attempts) and all(a.failure is not None and a.failure.kind == "crash" for a in attempts)


def scored_counts(judged: JudgedRun, suite: Sequence[Problem],
                  generated: Mapping[str, Sequence[str]]) -> dict[str, tuple[int, int]]:
    """Per row of :func:`final_scores`: how many of its problems were scored, of how many."""
    kept = set(judged.problem_ids)
    rows: dict[str, Sequence[str]] = {}
    for category in sorted({p.category for p in suite}):
        rows[category] = [p.id for p in suite if p.category == category]
    for seed, ids in generated.items():
        rows[f"suite {seed}"] = ids
    rows["all"] = [p.id for p in suite]
    return {name: (sum(i in kept for i in ids), len(ids)) for name, ids in rows.items()}


def final_scores(judged: JudgedRun, suite: Sequence[Problem],
                 generated: Mapping[str, Sequence[str]]) -> dict[str, FinalScore]:
    """Per category, per generated suite (what one qualifying run scores) and for all problems (``all``,
    the run's own score): the success rate, the mean judge quality, the quality coefficient and the final
    score, as a validator computes them."""
    outcomes = dict(zip(judged.problem_ids, zip(judged.successes, judged.verdicts, strict=True), strict=True))

    def scored(ids: Sequence[str]) -> JudgedRun:  # attempts the provider failed are not scored
        kept = [i for i in ids if i in outcomes]
        return JudgedRun(problem_ids=tuple(kept), successes=tuple(outcomes[i][0] for i in kept),
                         verdicts=tuple(outcomes[i][1] for i in kept), labels={})

    scores: dict[str, FinalScore] = {}
    for category in sorted({p.category for p in suite}):
        run = scored([p.id for p in suite if p.category == category])
        scores[category] = final_score(sum(run.successes) / max(1, len(run.successes)), run.verdicts)
    for seed, ids in generated.items():
        scores[f"suite {seed}"] = scored(ids).score()
    scores["all"] = judged.score()
    return scores


def print_result(console: Console, agent_name: str, result: LocalTestResult, out: Path, *,
                 recorded_in: TrajectoryStore | None) -> None:
    """The harness's table, the final scores, each attempt's verdict and filter label, the first proxy
    refusal, the failures by kind, where the attempts were written and, when they were recorded, the run
    and its labels in the store."""
    attempts = result.evaluation.attempts
    console.print(results_table(result.evaluation, f"{agent_name} on {len(attempts)} problems"))
    console.print(final_score_table(result.scores, result.scored))
    table, omitted = attempt_table(result.explanations, out, width=console.width)
    console.print(table)
    if omitted is not None:
        console.print(omitted, highlight=False, markup=False)
    for entry in LEGEND:
        console.print(entry, highlight=False, markup=False)
    refusal = first_refusal(result.evaluation)
    if refusal is not None:
        console.print(f"[red]first proxy refusal[/red]: {refusal.status} on {refusal.path}: "
                      f"{escape(refusal.error or '')}", highlight=False)
    failures = Counter(attempt.failure.kind for attempt in attempts if attempt.failure is not None)
    if failures:
        console.print("failed attempts: " + ", ".join(f"{kind} {n}" for kind, n in sorted(failures.items())))
    crashed = next((a for a in attempts if a.failure is not None and a.failure.kind == "crash"), None)
    if crashed is not None:
        console.print(f"[red]first crash[/red] ({crashed.problem_id}): {escape(crashed.failure.reason)}"
                      if crashed.failure else "", highlight=False)
        if crashed.stderr_tail.strip():
            console.print(crashed.stderr_tail.rstrip(), markup=False, highlight=False)
    console.print(f"dialogues, proxy logs and scores: {out}")
    if recorded_in is not None:
        labels = ", ".join(f"{label} {n}" for label, n in sorted(result.labels.items()))
        console.print(f"trajectory store: run {result.run_id} ({labels}) in {recorded_in.engine.url!r}")


LEGEND = (
    'success: problems whose answer meets every constraint of the query (rule 1, and for shop and voucher'
    " one shop or the voucher's budget); in the final score every recommended id must also have been "
    "returned to the agent's own tool calls.",
    "gt: problems where every target's exact ground-truth product was recommended (another product "
    'meeting every constraint also succeeds).',
    "mean rule: how far the recommended products meet the query's constraints, 0 to 1, averaged over "
    'problems.',
    "mean quality: the judge's reasoning quality per attempt (0.1 no LLM reasoning, 0.3 thinking never "
    'analyses tool results, 0.5 no specific datum cited, 0.7 no explicit comparison, 0.9 all of them).',
    'coefficient: 0.3 + quality x 0.7/0.8 below quality 0.8, else 1; final score = success x coefficient.',
    "scored: problems scored of the row's (attempts the inference provider failed are not scored).",
    "quality, gate, judge reason (per attempt): the judge's level, the first gate the attempt failed (1 "
    "to 4, as under mean quality) or passed, and the judge's explanation (shortened; whole in the JSONL).",
    "filter, filter reasons: the structural filter's label (agentic: the model emitted the tool calls "
    'that ran and the answer; sub_task: code issued them, the LLM only picked or narrated; no_llm: no '
    'inference call was answered) and why (shortened; whole in the JSONL).',
    'JSONL: one line per attempt as it finishes (the attempt record); once the run is judged each line '
    'also has verdict {quality, failed_gate (1-4, null: passed), gate, reason, judge, offline} and filter'
    ' {label, reasons, filter}, null when the attempt was not scored or not labelled.',
)
"""What the columns of the tables and the JSONL fields mean, printed under the tables: one entry each,
wrapped to the console's width."""


def final_score_table(scores: Mapping[str, FinalScore],
                      scored: Mapping[str, tuple[int, int]] | None = None) -> Table:
    """One row per score: success, mean quality, coefficient and final score, and with ``scored`` the
    problems scored of the row's (a row with none scored says so instead of a 0%); the judge in the
    title."""
    table = Table(title=f"final score (judge: {scores['all'].judge_label})")
    columns = ("category", "scored", "success", "mean quality", "coefficient", "final score")
    for column in columns if scored is not None else (c for c in columns if c != "scored"):
        table.add_column(column, justify="left" if column == "category" else "right")
    for name, score in scores.items():
        counts = [] if scored is None else [f"{scored[name][0]}/{scored[name][1]}" if name in scored else ""]
        if scored is not None and name in scored and scored[name][0] == 0:
            table.add_row(name, *counts, "not scored", "-", "-", "-")
            continue
        table.add_row(name, *counts, f"{score.success_rate:.1%}", f"{score.mean_quality:.3f}",
                      f"{score.coefficient:.4f}", f"{score.score:.2%}")
    return table
