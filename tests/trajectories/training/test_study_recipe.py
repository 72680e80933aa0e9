"""The study's released recipe on CPU through the command a researcher runs: `worker pipeline` with the
shipped `pipeline_study_tiny.yaml`, SFT -> reward-weighted rejection sampling -> KTO, and the study's
table: the base model and every stage's checkpoint evaluated through the sandbox on the newest version
of the held-out suite (`validator held-out`), each entered in the registry, the best one named.

A random tiny model solves nothing, so every pass@1 is 0 and the best checkpoint is the base model by
the tie rule; the figures test the machinery, never a model. A rerun retrains and re-evaluates nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from neurons.validator import app as validator
from neurons.worker import app
from shoppingbench.problems.loaders import load_problems
from shoppingbench.sample_world import SampleWorld
from tests.sandbox_support import UID_BASE
from trajectories.doubles.sample_dumps import write_world_dump
from trajectories.training.evaluation.registry import ModelRegistry
from trajectories.training.evaluation.stage_table import TABLE_JSON, TABLE_MARKDOWN, TABLE_PLOT, StageTable

PIPELINE = Path(__file__).parents[3] / "trajectories" / "training" / "configs" / "pipeline_study_tiny.yaml"
ENV = {"ARENA_SANDBOX_UID_BASE": str(UID_BASE), "ARENA_SANDBOX_TIMEOUT_S": "120",
       "ARENA_INFERENCE_ATTEMPT_CALLS": "40"}


@pytest.mark.slow
@pytest.mark.timeout(1800)  # three stages, four evaluations and a rerun on CPU: minutes on a loaded host
def test_the_tiny_study_recipe_writes_the_per_stage_table(small_world: SampleWorld, tmp_path: Path) -> None:
    home = tmp_path / "home"
    made = CliRunner().invoke(validator, ["held-out", "--home", str(home), "--catalog",
                                          str(small_world.catalog_dir), "--per-category", "1"])
    assert made.exit_code == 0, made.output
    suite = home / "held-out" / "study-v1.jsonl"
    held_out = {p.id: p.category for p in load_problems(suite)}
    assert sorted(held_out.values()) == ["product", "shop", "voucher"]
    dump = write_world_dump(tmp_path / "dump", small_world.suite(2), styles=("react", "react"))
    out = tmp_path / "study"
    command = ["pipeline", "--config", str(PIPELINE), "--dump", str(dump), "--catalog",
               str(small_world.catalog_dir), "--out", str(out), "--home", str(home)]
    result = CliRunner().invoke(app, command, env=ENV)
    assert result.exit_code == 0, result.output
    summaries = json.loads(result.output.strip().splitlines()[-1])
    assert [s["stage"] for s in summaries] == ["sft", "rejection", "kto"]
    rejection, kto = summaries[1:]
    assert rejection["attempts_file"] and kto["global_step"] == 2 and kto["final"].endswith("03-kto/final")
    assert kto["desirable"] > 0 and kto["undesirable"] > 0  # the dump's successes and failures at least

    table = StageTable.model_validate_json((out / TABLE_JSON).read_text(encoding="utf-8"))
    assert [(r.stage, r.status) for r in table.rows] == [
        ("base", "evaluated"), ("sft", "evaluated"), ("rejection", "skipped"), ("kto", "evaluated")]
    rejection = table.rows[2]
    assert rejection.carried_from == "sft" and "nothing to fine-tune on" in (rejection.note or "")
    assert table.categories == ["product", "shop", "voucher"] and table.k == 2
    for row in table.rows:
        assert row.problems_source == str(suite) and row.problems == 3
        assert set(row.pass_at_1) == {"product", "shop", "voucher", "all"}
        assert row.pass_at_k is not None and row.step_hallucination_rate is not None
        report = json.loads(Path(row.results or "").read_text(encoding="utf-8"))
        assert {p["problem_id"] for p in report["problems"]} == set(held_out)  # the suite, not the dump
    assert table.best is not None and table.best.stage == "base"  # all 0: a tie goes to the earlier row
    markdown = (out / TABLE_MARKDOWN).read_text(encoding="utf-8")
    assert "| rejection | skipped (= sft) |" in markdown and "| kto |" in markdown
    assert "Best checkpoint: **base**" in markdown
    assert markdown in result.output and (out / TABLE_PLOT).stat().st_size > 0

    registry = ModelRegistry(home / "models" / "registry.sqlite3")
    entries = registry.list()
    assert [e.stage for e in entries] == ["base", "sft", "kto"]
    evaluated = [r for r in table.rows if r.status == "evaluated"]
    assert [e.id for e in entries] == [r.registry_id for r in evaluated]
    assert [e.path for e in entries] == [str(Path(r.model or "").resolve()) for r in evaluated]
    assert rejection.registry_id == table.rows[1].registry_id
    assert entries[1].metrics["all"]["pass_at_1"] == table.rows[1].pass_at_1["all"]

    again = CliRunner().invoke(app, command, env=ENV)
    assert again.exit_code == 0, again.output
    assert json.loads(again.output.strip().splitlines()[-1]) == summaries
    assert len(registry.list()) == len(entries)  # nothing evaluated twice
    assert StageTable.model_validate_json((out / TABLE_JSON).read_text(encoding="utf-8")) == table
    registry.close()
