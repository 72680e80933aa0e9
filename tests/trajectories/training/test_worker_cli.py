"""The `worker` command line through the real stage code: train, rollouts, watch, exit codes, help."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
import yaml
from typer.testing import CliRunner

from neurons.worker import app
from shoppingbench.catalog.store import ProductStore
from shoppingbench.sample_world import SampleWorld
from shoppingbench.search.engine import BM25SearchEngine
from tests.sandbox_support import UID_BASE
from tests.trajectories.training.test_sft import TINY_CONFIG

CONFIGS = TINY_CONFIG.parent


def test_train_runs_a_stage_and_prints_a_json_summary(tiny_dump: Path, tmp_path: Path) -> None:
    """The shipped tiny config (``model: tiny``: the model is built into OUT/base), cut to one step."""
    raw = yaml.safe_load(TINY_CONFIG.read_text(encoding="utf-8"))
    raw["trainer"].update(max_steps=1, save_steps=1)
    config = tmp_path / "sft.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["train", "--stage", "sft", "--config", str(config),
                                      "--dump", str(tiny_dump), "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = orjson.loads(result.output.strip().splitlines()[-1])
    assert summary["global_step"] == 1 and summary["examples"] == 9 and summary["resumed_from"] is None
    assert summary["last_loss"] > 0 and Path(summary["final"]) == out / "final"
    assert (out / "final" / "adapter_model.safetensors").exists() and (out / "checkpoint-1").is_dir()
    assert (out / "base" / "config.json").exists()


def test_train_refuses_a_config_of_another_stage(tmp_path: Path, tiny_dump: Path) -> None:
    config = tmp_path / "dpo.yaml"
    config.write_text("stage: dpo\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["train", "--config", str(config), "--stage", "sft", "--dump",
                                      str(tiny_dump), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "describes stage 'dpo', not 'sft'" in result.output


def test_a_stage_with_nothing_to_train_on_exits_4_and_says_why(tmp_path: Path, tiny_dump: Path) -> None:
    """DPO wants a success and a failure of one problem, both agentic; in the sample dump every problem's
    only agentic attempt is its ReAct one."""
    config = tmp_path / "dpo.yaml"
    config.write_text("stage: dpo\nmodel: tiny\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["train", "--config", str(config), "--dump", str(tiny_dump),
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 4 and "nothing to train on" in result.output
    assert not (tmp_path / "out" / "base").exists()  # refused before any model was built


def test_rollouts_runs_only_the_rollout_phase_of_a_sampling_stage(
        world_dump: Path, small_world: SampleWorld, tmp_path: Path) -> None:
    """What a multi-GPU launch is prepared with: the teacher's rollouts on one process, no training."""
    out = tmp_path / "teacher"
    env = {"ARENA_SANDBOX_UID_BASE": str(UID_BASE), "ARENA_INFERENCE_ATTEMPT_CALLS": "40"}
    result = CliRunner().invoke(app, [
        "rollouts", "--config", str(CONFIGS / "teacher_tiny.yaml"), "--dump", str(world_dump),
        "--catalog", str(small_world.catalog_dir), "--out", str(out), "--scripted-teacher",
        "--home", str(tmp_path / "home")], env=env)
    assert result.exit_code == 0, result.output
    summary = orjson.loads(result.output.strip().splitlines()[-1])
    assert summary["attempts"] == 4 and summary["kept"] > 0
    assert (out / "rollouts" / "attempts.jsonl").exists() and not (out / "final").exists()
    refused = CliRunner().invoke(app, ["rollouts", "--config", str(TINY_CONFIG), "--dump", str(world_dump),
                                       "--out", str(tmp_path / "sft")])
    assert refused.exit_code == 2 and "rollouts are for rejection and teacher stages" in refused.output


def test_watch_once_trains_the_newest_day_of_a_dumps_root(tiny_dump: Path, tmp_path: Path) -> None:
    """A dumps root with one complete day: one look trains the pipeline on it and records the day."""
    root = tmp_path / "dumps"
    shutil.copytree(tiny_dump, root / "2026-11-21")
    raw = yaml.safe_load(TINY_CONFIG.read_text(encoding="utf-8"))
    raw["trainer"].update(max_steps=1, save_steps=1)
    (tmp_path / "sft.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(yaml.safe_dump({"stages": ["sft.yaml"], "evaluation": {"after": "none"}}),
                        encoding="utf-8")
    out = tmp_path / "daily"
    arguments = ["watch", "--config", str(pipeline), "--dumps-root", str(root), "--out", str(out), "--once"]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, result.output
    assert (out / "2026-11-21" / "01-sft" / "final" / "adapter_config.json").exists()
    assert orjson.loads((out / "watch-state.json").read_bytes())["trained"] == {
        "2026-11-21": str(out / "2026-11-21")}
    assert CliRunner().invoke(app, arguments).exit_code == 0  # nothing new: nothing trained again
    assert len(list(out.glob("*/01-sft/checkpoint-*"))) == 1


def test_pipeline_opens_its_catalog_once_for_the_rollouts_and_the_evaluation(
        small_world: SampleWorld, world_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rejection sampling then the base model's held-out evaluation, on one search engine."""
    opened: list[Path] = []
    real_init = BM25SearchEngine.__init__

    def counting_init(engine: BM25SearchEngine, index_dir: Path, store: ProductStore) -> None:
        opened.append(Path(index_dir))
        real_init(engine, index_dir, store)

    monkeypatch.setattr(BM25SearchEngine, "__init__", counting_init)
    shutil.copy(CONFIGS / "rejection_tiny.yaml", tmp_path / "rejection.yaml")
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(yaml.safe_dump({"stages": ["rejection.yaml"], "evaluation": {
        "base": True, "after": "every", "k": 1, "max_problems": 1, "max_tokens": 16}}), encoding="utf-8")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "pipeline", "--config", str(pipeline), "--dump", str(world_dump), "--out", str(out), "--catalog",
        str(small_world.catalog_dir), "--home", str(tmp_path / "home")],
        env={"ARENA_SANDBOX_UID_BASE": str(UID_BASE), "ARENA_SANDBOX_TIMEOUT_S": "90",
             "ARENA_INFERENCE_ATTEMPT_CALLS": "2"})
    assert result.exit_code == 0, result.output
    (rejection,) = orjson.loads(result.output.strip().splitlines()[-1])
    assert "nothing to fine-tune on" in rejection["skipped"] and rejection["attempts_file"]
    assert (out / "00-base" / "evaluation.json").exists()  # the base model was evaluated
    assert opened == [small_world.catalog_dir / "index"]


def test_help_names_the_commands() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("train", "rollouts", "pipeline", "watch", "evaluate", "tiny-model"):
        assert command in result.output
