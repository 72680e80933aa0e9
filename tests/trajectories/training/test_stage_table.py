"""The study's table: rows per stage, the best checkpoint, the files, and the pipeline's bookkeeping of
evaluations (base first, a skipped stage carrying its model's row, nothing evaluated twice on a rerun).

Evaluation reports here are built by hand (a real evaluation of a real checkpoint is the job of
``test_study_recipe.py``), so every figure and every tie is known in advance. The pipeline test trains
for real only where it must: its stages' results are the SFT and skip records a finished pipeline leaves
(``result.json``), so what runs is the pipeline's evaluation path itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from matplotlib.image import imread

from trajectories.training.evaluation.evaluate import ALL, CategoryResult, EvaluationReport
from trajectories.training.evaluation.outcome import EvaluationOutcome
from trajectories.training.evaluation.stage_table import (
    BEST_CRITERION,
    TABLE_JSON,
    TABLE_MARKDOWN,
    TABLE_PLOT,
    StageRow,
    StageTable,
    best_row,
    build_table,
    carried_row,
    evaluated_row,
    markdown,
    write_table,
)
from trajectories.training.pipeline import (
    BASE_DIRECTORY,
    EVALUATION_FILE,
    RESULT_FILE,
    PipelineConfig,
    run_pipeline,
)

CONFIGS = Path(__file__).parents[3] / "trajectories" / "training" / "configs"


def _category(name: str, pass_at_1: float, pass_at_k: float, hallucination: float) -> CategoryResult:
    return CategoryResult(category=name, problems=2, attempts=4, pass_at_1=pass_at_1, pass_at_k=pass_at_k,
                          mean_rule=pass_at_1, step_hallucination_rate=hallucination,
                          attempt_hallucination_rate=min(1.0, 2 * hallucination))


def _report(model: str, product: float, shop: float, pass_at_k: float,
            hallucination: float) -> EvaluationReport:
    """Two categories of two problems each, k=2; `all` is their mean."""
    return EvaluationReport(k=2, model=model, agent_hash="agent", run_ids=["r1", "r2"], problems=[],
                            categories=[_category("product", product, pass_at_k, hallucination),
                                        _category("shop", shop, pass_at_k, hallucination),
                                        _category(ALL, (product + shop) / 2, pass_at_k, hallucination)])


def _evaluation(directory: Path, report: EvaluationReport, registry_id: int) -> EvaluationOutcome:
    """The outcome of an evaluation as a finished run's evaluation.json holds it: the report in its file."""
    directory.mkdir(parents=True, exist_ok=True)
    results = directory / "results.json"
    results.write_text(report.model_dump_json(), encoding="utf-8")
    return EvaluationOutcome(results=results, registry_id=registry_id, problems_source="study-v1.jsonl")


def test_a_row_holds_pass_at_1_per_category_pass_at_k_and_the_hallucination_rates(tmp_path: Path) -> None:
    evaluation = _evaluation(tmp_path, _report("m", 0.5, 0.25, 0.75, 0.1), registry_id=7)
    row = evaluated_row("sft", "runs/01-sft/final", evaluation, directory="01-sft")
    held = evaluation.model_copy(update={"report": _report("m", 0.5, 0.25, 0.75, 0.1), "results": None})
    assert evaluated_row("sft", "runs/01-sft/final", held, directory="01-sft") == row.model_copy(
        update={"results": None})  # the report a run holds in memory: no file read
    assert row.status == "evaluated" and row.registry_id == 7 and row.k == 2 and row.problems == 2
    assert row.pass_at_1 == {"product": 0.5, "shop": 0.25, ALL: 0.375}
    assert row.pass_at_k == 0.75 and row.step_hallucination_rate == 0.1
    assert row.attempt_hallucination_rate == 0.2 and row.problems_source == "study-v1.jsonl"
    skipped = carried_row("rejection", row, "nothing to fine-tune on", directory="02-rejection")
    assert skipped.status == "skipped" and skipped.carried_from == "sft" and skipped.note
    assert skipped.pass_at_1 == row.pass_at_1 and skipped.registry_id == 7  # the same checkpoint's row
    assert carried_row("dpo", skipped, "no pairs").carried_from == "sft"  # carried twice: still sft's
    missing = evaluated_row("base", "m", EvaluationOutcome(skipped="no held-out problem"))
    assert missing.status == "not_evaluated" and missing.note == "no held-out problem"
    assert not missing.measured


def _row(stage: str, pass_at_1: float, pass_at_k: float, hallucination: float) -> StageRow:
    return StageRow(stage=stage, model=stage, status="evaluated", k=2, pass_at_1={ALL: pass_at_1},
                    pass_at_k=pass_at_k, step_hallucination_rate=hallucination)


def test_the_best_checkpoint_is_chosen_by_the_documented_criterion_not_by_position() -> None:
    base, sft, dpo, grpo = (_row("base", 0.1, 0.2, 0.3), _row("sft", 0.5, 0.6, 0.2),
                            _row("dpo", 0.5, 0.7, 0.2), _row("grpo", 0.4, 0.9, 0.0))
    assert best_row([base, sft, dpo, grpo]) is dpo  # pass@1 ties with sft, pass@k breaks it; grpo is last
    cleaner = _row("dpo", 0.5, 0.6, 0.1)
    assert best_row([base, sft, cleaner, grpo]) is cleaner  # pass@1 and pass@k tie: fewer hallucinations
    twin = _row("dpo", 0.5, 0.6, 0.2)
    assert best_row([base, sft, twin, grpo]) is sft  # a full tie: the earlier stage
    carried = carried_row("rejection", _row("teacher", 0.9, 0.9, 0.0), "empty")
    assert best_row([sft, carried]) is sft  # a skipped row is never the best itself
    assert best_row([StageRow(stage="base", status="not_evaluated")]) is None
    assert "pass@1" in BEST_CRITERION and "earlier stage" in BEST_CRITERION


def test_the_table_files_are_the_json_markdown_and_plot_of_every_row(tmp_path: Path) -> None:
    base = evaluated_row("base", "base-model", _evaluation(tmp_path / "b", _report("b", 0, 0, 0, 0.5), 1))
    sft_report = _report("s", 0.5, 0.25, 0.5, 0.25)
    sft = evaluated_row("sft", "sft-model", _evaluation(tmp_path / "s", sft_report, 2))
    rows = [base, sft, carried_row("rejection", sft, "nothing to fine-tune on")]
    table = write_table(rows, tmp_path / "out", title="tiny")
    assert table.best is not None and table.best.stage == "sft" and table.k == 2
    assert table.categories == ["product", "shop"]
    assert StageTable.model_validate_json((tmp_path / "out" / TABLE_JSON).read_text()) == table
    text = (tmp_path / "out" / TABLE_MARKDOWN).read_text(encoding="utf-8")
    assert text == markdown(table, title="tiny")
    lines = text.splitlines()
    header = lines.index("| stage | status | pass@1 product | pass@1 shop | pass@1 all | pass@2 all | "
                         "halluc. steps | halluc. attempts | registry id |")
    assert lines[header + 2] == "| base | evaluated | 0.0% | 0.0% | 0.0% | 0.0% | 50.0% | 100.0% | 1 |"
    assert lines[header + 3] == "| sft | evaluated | 50.0% | 25.0% | 37.5% | 50.0% | 25.0% | 50.0% | 2 |"
    assert lines[header + 4] == ("| rejection | skipped (= sft) | 50.0% | 25.0% | 37.5% | 50.0% | 25.0% | "
                                 "50.0% | 2 |")
    assert "Best checkpoint: **sft** (sft-model)" in text and "study-v1.jsonl" in text
    assert "- rejection: nothing to fine-tune on" in text
    image = imread(tmp_path / "out" / TABLE_PLOT)
    assert image.shape[0] > 100 and image.shape[1] > 400  # a real PNG, as wide as the rows need
    assert build_table([]).best is None


def _finished_stage(directory: Path, summary: dict[str, Any]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / RESULT_FILE).write_text(json.dumps(summary), encoding="utf-8")


def test_the_pipeline_evaluates_base_and_each_stage_once_and_names_the_best(
        tiny_model_dir: Path, world_dump: Path, tmp_path: Path) -> None:
    """sft -> dpo (skipped as empty: carries sft's row) -> sft, after a crash between two evaluations."""
    (tmp_path / "recipe").mkdir()
    for name in ("sft_tiny.yaml", "dpo_tiny.yaml"):
        (tmp_path / "recipe" / name).write_text((CONFIGS / name).read_text(encoding="utf-8"))
    raw = yaml.safe_load((CONFIGS / "sft_tiny.yaml").read_text(encoding="utf-8"))
    (tmp_path / "recipe" / "first.yaml").write_text(yaml.safe_dump({**raw, "model": str(tiny_model_dir)}))
    (tmp_path / "recipe" / "pipeline.yaml").write_text(yaml.safe_dump({
        "stages": ["first.yaml", "dpo_tiny.yaml", "sft_tiny.yaml"],
        "evaluation": {"base": True, "after": "every", "k": 2}}))
    pipeline = PipelineConfig.load(tmp_path / "recipe" / "pipeline.yaml")
    out = tmp_path / "run"
    first, second = out / "01-sft" / "final", out / "03-sft" / "final"
    # The stages as a finished run leaves them: what is measured here is the evaluation around them
    _finished_stage(out / "01-sft", {"stage": "sft", "final": str(first)})
    _finished_stage(out / "02-dpo", {"stage": "dpo", "skipped": "no pairs", "final": str(first)})
    _finished_stage(out / "03-sft", {"stage": "sft", "final": str(second)})
    figures = {"base": (0.0, 0.0, 0.0, 0.4), "sft": (0.5, 0.5, 0.75, 0.2)}
    evaluated: list[tuple[Path, str]] = []

    def evaluate(model: Path, stage: str, eval_out: Path) -> EvaluationOutcome:
        evaluated.append((model, stage))
        if len(evaluated) == 3 and crash[0]:
            raise RuntimeError("preempted")
        return _evaluation(eval_out, _report(str(model), *figures[stage]), registry_id=len(evaluated))

    crash = [True]
    with pytest.raises(RuntimeError, match="preempted"):
        run_pipeline(pipeline, [world_dump], out, evaluate=evaluate)
    assert evaluated == [(tiny_model_dir, "base"), (first, "sft"), (second, "sft")]
    assert (out / BASE_DIRECTORY / EVALUATION_FILE).exists()
    assert not (out / "03-sft" / EVALUATION_FILE).exists()

    crash[0] = False
    summaries = run_pipeline(pipeline, [world_dump], out, evaluate=evaluate)
    assert [model for model, _ in evaluated] == [tiny_model_dir, first, second, second]  # the missing one
    assert summaries[1].evaluation is None and summaries[2].evaluation is not None
    assert summaries[2].evaluation.registry_id == 4
    table = StageTable.model_validate_json((out / TABLE_JSON).read_text(encoding="utf-8"))
    assert [(r.stage, r.status, r.carried_from) for r in table.rows] == [
        ("base", "evaluated", None), ("sft", "evaluated", None), ("dpo", "skipped", "sft"),
        ("sft", "evaluated", None)]
    assert [r.registry_id for r in table.rows] == [1, 2, 2, 4]
    assert [r.directory for r in table.rows] == [BASE_DIRECTORY, "01-sft", "02-dpo", "03-sft"]
    assert table.best is not None and table.best.model == str(first)  # tied with 03-sft: the earlier one
    assert (out / TABLE_MARKDOWN).exists() and (out / TABLE_PLOT).exists()

    again = run_pipeline(pipeline, [world_dump], out, evaluate=evaluate)
    assert len(evaluated) == 4 and again == summaries  # nothing evaluated twice
    assert StageTable.model_validate_json((out / TABLE_JSON).read_text(encoding="utf-8")) == table


def test_an_evaluation_skipped_for_want_of_problems_is_tried_again_on_the_next_run(
        tiny_model_dir: Path, world_dump: Path, tmp_path: Path) -> None:
    raw = yaml.safe_load((CONFIGS / "sft_tiny.yaml").read_text(encoding="utf-8"))
    (tmp_path / "first.yaml").write_text(yaml.safe_dump({**raw, "model": str(tiny_model_dir)}))
    (tmp_path / "pipeline.yaml").write_text(yaml.safe_dump({"stages": ["first.yaml"],
                                                            "evaluation": {"after": "every"}}))
    pipeline = PipelineConfig.load(tmp_path / "pipeline.yaml")
    out = tmp_path / "run"
    _finished_stage(out / "01-sft", {"stage": "sft", "final": str(out / "01-sft" / "final")})
    suites: list[str] = []

    def evaluate(model: Path, stage: str, eval_out: Path) -> EvaluationOutcome:
        if not suites:
            return EvaluationOutcome(skipped="no held-out problem yet")
        return _evaluation(eval_out, _report(str(model), 0.5, 0.5, 0.5, 0.0), registry_id=1)

    (summary,) = run_pipeline(pipeline, [world_dump], out, evaluate=evaluate)
    assert summary.evaluation == EvaluationOutcome(skipped="no held-out problem yet")
    assert not (out / "01-sft" / EVALUATION_FILE).exists() and not (out / TABLE_JSON).exists()
    suites.append("study-v1")  # `validator held-out` made one since
    (summary,) = run_pipeline(pipeline, [world_dump], out, evaluate=evaluate)
    assert summary.evaluation is not None and summary.evaluation.registry_id == 1
    assert (out / "01-sft" / EVALUATION_FILE).exists()
    table = StageTable.model_validate_json((out / TABLE_JSON).read_text(encoding="utf-8"))
    assert [(r.stage, r.status) for r in table.rows] == [("sft", "evaluated")]
