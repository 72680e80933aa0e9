"""The whole recipe on CPU through the command a researcher runs: `worker pipeline` with the shipped
`pipeline_tiny.yaml`, all five stages and the held-out evaluation, on a dump of real small-world problems.

SFT trains on the dump; rejection sampling rolls the tiny model out through the namespace sandbox and,
as a random model solves nothing, is recorded as skipped; the teacher stage rolls out the scripted
shopping policy (the OpenAI-compatible test double standing in for a hosted teacher) and fine-tunes on
its successes; DPO pairs the dump's successes with its and the rejection rollouts' failures; GRPO rolls
out against the catalog with the teacher's plans; the final model is evaluated on the held-out problem
and entered in the registry.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from typer.testing import CliRunner

from neurons.worker import app
from shoppingbench.sample_world import SampleWorld
from tests.sandbox_support import UID_BASE
from trajectories.doubles.sample_dumps import write_world_dump
from trajectories.training.data.problems import dump_problems
from trajectories.training.evaluation.registry import ModelRegistry
from trajectories.training.stages.rollouts import read_attempts

PIPELINE = Path(__file__).parents[3] / "trajectories" / "training" / "configs" / "pipeline_tiny.yaml"


def test_the_tiny_recipe_runs_every_stage_and_the_evaluation(small_world: SampleWorld,
                                                             tmp_path: Path) -> None:
    # Two ReAct attempts per problem: some problems get a success and a failure, which DPO pairs
    dump = write_world_dump(tmp_path / "dump", small_world.suite(2), styles=("react", "react"))
    out = tmp_path / "recipe"
    result = CliRunner().invoke(app, [
        "pipeline", "--config", str(PIPELINE), "--dump", str(dump), "--catalog", str(small_world.catalog_dir),
        "--out", str(out), "--scripted-teacher", "--home", str(tmp_path / "home")],
        env={"ARENA_SANDBOX_UID_BASE": str(UID_BASE), "ARENA_SANDBOX_TIMEOUT_S": "120",
             "ARENA_INFERENCE_ATTEMPT_CALLS": "40"})
    assert result.exit_code == 0, result.output
    sft, rejection, teacher, dpo, grpo = json.loads(result.output.strip().splitlines()[-1])
    assert [s["stage"] for s in (sft, rejection, teacher, dpo, grpo)] == [
        "sft", "rejection", "teacher", "dpo", "grpo"]

    assert sft["global_step"] == 4 and math.isfinite(sft["last_loss"])
    assert "nothing to fine-tune on" in rejection["skipped"] and rejection["final"] == sft["final"]
    assert teacher["rollouts"]["kept"] > 0 and teacher["global_step"] == 2
    assert dpo["pairs"] > 0 and math.isfinite(dpo["last_loss"])
    assert grpo["with_teacher_plan"] > 0 and grpo["global_step"] == 2 and math.isfinite(grpo["last_loss"])
    for summary in (sft, teacher, dpo, grpo):
        assert (Path(summary["final"]) / "adapter_config.json").exists()
    # Only the first stage built the tiny model: every later one started from the previous final
    assert [p.parent.parent.name for p in out.glob("*/base/config.json")] == ["01-sft"]

    held_out = {p.id for p in dump_problems([dump], "held_out").problems}
    for stage in ("02-rejection", "03-teacher"):
        rolled = read_attempts(out / stage / "rollouts" / "attempts.jsonl")
        assert rolled and not {r.problem_id for r in rolled} & held_out

    evaluation = grpo["evaluation"]
    report = json.loads(Path(evaluation["results"]).read_text(encoding="utf-8"))
    assert {p["problem_id"] for p in report["problems"]} == held_out and report["k"] == 2
    assert 0 <= evaluation["pass_at_1"] <= evaluation["pass_at_2"] <= 1
    (entry,) = ModelRegistry(tmp_path / "home" / "models" / "registry.sqlite3").list()
    assert entry.id == evaluation["registry_id"] and entry.stage == "grpo"
    assert entry.path == str(Path(grpo["final"]).resolve()) and entry.data_manifest_sha256
