"""The `worker` command line: one SFT step from a dump through the real stage code."""

from __future__ import annotations

from pathlib import Path

import orjson
import yaml
from typer.testing import CliRunner

from neurons.worker import app
from tests.training.test_sft import TINY_CONFIG


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
    result = CliRunner().invoke(app, ["train", "--config", str(config), "--dump", str(tiny_dump),
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code != 0 and "stage" in str(result.exception or result.output)


def test_help_names_the_commands() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0 and "train" in result.output and "tiny-model" in result.output
