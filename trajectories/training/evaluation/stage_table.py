"""The study's table: the base model and every pipeline stage's checkpoint on the same held-out problems.

One :class:`StageRow` per row (``base``, then each stage as the pipeline ran it), from the stage's
:class:`~trajectories.training.stages.outcome.EvaluationOutcome`: the report the run holds in memory, or for a
finished run (an outcome read back from ``evaluation.json``) the ``results.json`` it names: pass@1 per
category and over all problems, pass@k, the hallucination rates, the registry row. A stage skipped as
empty passed its model on unchanged; its row is marked ``skipped`` and carries the row of the model it
passed on (that model is not evaluated twice). :func:`best_row` names the best checkpoint by
:data:`BEST_CRITERION` rather than assuming the last stage is best (the study shipped its pre-RL model).
:func:`write_table` writes ``stages.json``, ``stages.md`` and ``stages.png``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from matplotlib.figure import Figure
from pydantic import BaseModel, ConfigDict, Field

from trajectories.training.evaluation.evaluate import ALL
from trajectories.training.evaluation.outcome import EvaluationOutcome
from trajectories.training.evaluation.plots import save_figure

TABLE_JSON = "stages.json"
TABLE_MARKDOWN = "stages.md"
TABLE_PLOT = "stages.png"

BEST_CRITERION = ("the highest pass@1 over all held-out problems; ties go to the higher pass@k, then the "
                  "lower step hallucination rate, then the earlier stage (less training, same result)")

RowStatus = Literal["evaluated", "skipped", "not_evaluated"]


class StageRow(BaseModel):
    """One row of the table: a stage (or ``base``) and its model's held-out figures."""

    model_config = ConfigDict(extra="forbid")

    stage: str = Field(description="base, or the stage's name as the pipeline ran it")
    directory: str | None = Field(default=None, description="The stage's output directory (NN-stage)")
    model: str | None = Field(default=None, description="The model evaluated (or carried) for this row")
    status: RowStatus
    note: str | None = Field(default=None, description="Why the stage was skipped or not evaluated")
    carried_from: str | None = Field(default=None, description=(
        "For a skipped stage: the row whose model it passed on (its figures are that row's)"))
    registry_id: int | None = None
    problems_source: str | None = Field(default=None, description="The held-out suite or dump evaluated on")
    k: int | None = None
    problems: int | None = None
    pass_at_1: dict[str, float] = Field(default_factory=dict, description=f"Per category and `{ALL}`")
    pass_at_k: float | None = Field(default=None, description=f"Over `{ALL}` problems")
    step_hallucination_rate: float | None = None
    attempt_hallucination_rate: float | None = None
    results: str | None = None

    @property
    def measured(self) -> bool:
        return self.status != "not_evaluated" and ALL in self.pass_at_1


class StageTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rows: list[StageRow]
    categories: list[str] = Field(description="Problem categories of the pass@1 columns (without `all`)")
    k: int | None
    best: StageRow | None
    criterion: str = BEST_CRITERION


def evaluated_row(stage: str, model: str, evaluation: EvaluationOutcome, *,
                  directory: str | None = None) -> StageRow:
    """The row of a stage whose model was evaluated (``evaluation`` as the pipeline's evaluator returns it,
    or as a finished run's ``evaluation.json`` holds it: then its report is read from ``results``)."""
    report = evaluation.read_report()
    if report is None:
        return StageRow(stage=stage, directory=directory, model=model, status="not_evaluated",
                        note=evaluation.skipped or "no results")
    overall = report.category(ALL)
    return StageRow(
        stage=stage, directory=directory, model=model, status="evaluated", registry_id=evaluation.registry_id,
        problems_source=evaluation.problems_source, k=report.k, problems=overall.problems,
        pass_at_1={c.category: c.pass_at_1 for c in report.categories}, pass_at_k=overall.pass_at_k,
        step_hallucination_rate=overall.step_hallucination_rate,
        attempt_hallucination_rate=overall.attempt_hallucination_rate,
        results=None if evaluation.results is None else str(evaluation.results))


def carried_row(stage: str, carried: StageRow, reason: str, *, directory: str | None = None) -> StageRow:
    """The row of a stage skipped as empty: the figures of the row whose model it passed on."""
    return carried.model_copy(update={"stage": stage, "directory": directory, "status": "skipped",
                                      "note": reason, "carried_from": carried.carried_from or carried.stage})


def skipped_row(stage: str, reason: str, *, model: str | None = None,
                directory: str | None = None) -> StageRow:
    """A stage with no figures: skipped before any model was evaluated, or not evaluated at all."""
    return StageRow(stage=stage, directory=directory, model=model, status="not_evaluated", note=reason)


def _rank(indexed: tuple[int, StageRow]) -> tuple[float, float, float, int]:
    index, row = indexed
    return (-row.pass_at_1[ALL], -(row.pass_at_k or 0.0), row.step_hallucination_rate or 0.0, index)


def best_row(rows: Sequence[StageRow]) -> StageRow | None:
    """The best evaluated checkpoint by :data:`BEST_CRITERION` (skipped rows carry another row's model and
    are never chosen themselves); None when nothing was evaluated."""
    candidates = [(i, row) for i, row in enumerate(rows) if row.status == "evaluated" and row.measured]
    if not candidates:
        return None
    return min(candidates, key=_rank)[1]


def build_table(rows: Sequence[StageRow]) -> StageTable:
    categories = sorted({name for row in rows for name in row.pass_at_1} - {ALL})
    ks = {row.k for row in rows if row.k is not None}
    return StageTable(rows=list(rows), categories=categories, k=ks.pop() if len(ks) == 1 else None,
                      best=best_row(rows))


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def markdown(table: StageTable, *, title: str | None = None) -> str:
    """The table as GitHub Markdown: one row per stage, percentages to one decimal."""
    k = "k" if table.k is None else str(table.k)
    header = ["stage", "status", *(f"pass@1 {name}" for name in table.categories), "pass@1 all",
              f"pass@{k} all", "halluc. steps", "halluc. attempts", "registry id"]
    lines = [f"## {title}", ""] if title else []
    rule = ["---"] + ["---:"] * (len(header) - 1)
    lines += ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    for row in table.rows:
        status = row.status if row.carried_from is None else f"skipped (= {row.carried_from})"
        cells = [row.stage, status, *(_cell(row.pass_at_1.get(name)) for name in table.categories),
                 _cell(row.pass_at_1.get(ALL)), _cell(row.pass_at_k), _cell(row.step_hallucination_rate),
                 _cell(row.attempt_hallucination_rate),
                 "-" if row.registry_id is None else str(row.registry_id)]
        lines.append("| " + " | ".join(cells) + " |")
    sources = sorted({row.problems_source for row in table.rows if row.problems_source})
    problems = sorted({row.problems for row in table.rows if row.problems is not None})
    lines.append("")
    lines.append(f"Held-out problems: {', '.join(map(str, problems)) or '-'} from "
                 f"{', '.join(sources) or 'unknown'}; k = {k} samples per problem.")
    if table.best is not None:
        lines.append(f"Best checkpoint: **{table.best.stage}** ({table.best.model}), chosen by "
                     f"{table.criterion}.")
    notes = [f"{row.stage}: {row.note}" for row in table.rows if row.note]
    if notes:
        lines.append("")
        lines.extend(f"- {note}" for note in notes)
    return "\n".join(lines) + "\n"


def plot_stages(table: StageTable, out: Path, title: str) -> Path:
    """The study's figure: pass@1 per category, pass@1 and pass@k over all problems (left) and the step
    hallucination rate (right) per stage, in pipeline order; rows without figures are left empty."""
    rows = table.rows
    positions = list(range(len(rows)))
    labels = [row.stage if row.carried_from is None else f"{row.stage}\n(= {row.carried_from})"
              for row in rows]
    figure = Figure(figsize=(max(8.0, 1.4 * len(rows) + 3), 4.5), dpi=100)
    scores, hallucinations = figure.subplots(1, 2, gridspec_kw={"width_ratios": [3, 1.4]})
    k = "k" if table.k is None else str(table.k)
    series = [(f"pass@1 {name}", [row.pass_at_1.get(name) for row in rows], ":") for name in table.categories]
    series.append(("pass@1 all", [row.pass_at_1.get("all") for row in rows], "-"))
    series.append((f"pass@{k} all", [row.pass_at_k for row in rows], "--"))
    for label, values, style in series:
        points = [(p, v) for p, v in zip(positions, values, strict=True) if v is not None]
        scores.plot([p for p, _ in points], [v for _, v in points], linestyle=style, marker="o", label=label)
    scores.set_xticks(positions, labels, fontsize=8)
    scores.set_ylim(0, 1.05)
    scores.set_ylabel("share of held-out problems")
    scores.legend(fontsize=7)
    scores.set_title(title, fontsize=9)
    rates = [row.step_hallucination_rate or 0.0 for row in rows]
    hallucinations.bar(positions, rates, color="tab:red")
    hallucinations.set_xticks(positions, [row.stage for row in rows], rotation=90, fontsize=8)
    hallucinations.set_ylim(0, max([*rates, 0.05]) * 1.1)
    hallucinations.set_title("steps naming an unseen product id", fontsize=9)
    return save_figure(figure, out)


def write_table(rows: Sequence[StageRow], out: Path, *, title: str | None = None) -> StageTable:
    """``stages.json``, ``stages.md`` and (when a row was measured) ``stages.png`` in ``out``."""
    table = build_table(rows)
    out.mkdir(parents=True, exist_ok=True)
    (out / TABLE_JSON).write_text(table.model_dump_json(indent=2), encoding="utf-8")
    (out / TABLE_MARKDOWN).write_text(markdown(table, title=title), encoding="utf-8")
    if any(row.measured for row in table.rows):
        plot_stages(table, out / TABLE_PLOT, title or "held-out evaluation per stage")
    return table
