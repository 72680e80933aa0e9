"""The model registry round trip and the PNG plots."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from trajectories.training.evaluation.evaluate import ProblemResult
from trajectories.training.evaluation.plots import (
    find_log_history,
    history_series,
    plot_history,
    plot_problems,
)
from trajectories.training.evaluation.registry import CheckpointEntry, ModelRegistry, manifest_sha256

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_entries_round_trip_through_the_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "models" / "registry.sqlite3"
    first = ModelRegistry(path).add(CheckpointEntry(path="/runs/sft-1/final", stage="sft",
                                                    data_manifest_sha256="ab" * 32,
                                                    metrics={"all": {"pass_at_1": 0.25}, "k": 4}))
    second = ModelRegistry(path).add(CheckpointEntry(path="/runs/dpo-1/final", stage="dpo"))
    reopened = ModelRegistry(path)
    assert [e.id for e in reopened.list()] == [first.id, second.id]
    assert reopened.get(first.id or 0) == first and first.metrics == {"all": {"pass_at_1": 0.25}, "k": 4}
    assert reopened.list(path="/runs/dpo-1/final") == [second] and second.data_manifest_sha256 is None
    with pytest.raises(KeyError, match="no checkpoint"):
        reopened.get(999)


def test_manifest_hash_is_the_sha256_of_the_manifest_bytes(tiny_dump: Path, tmp_path: Path) -> None:
    manifest = (tiny_dump / "manifest.json").read_bytes()
    assert manifest_sha256(tiny_dump) == hashlib.sha256(manifest).hexdigest()
    with pytest.raises(FileNotFoundError, match=r"manifest\.json"):
        manifest_sha256(tmp_path)


def test_history_plot_is_a_png(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "checkpoint-2").mkdir(parents=True)
    (run / "checkpoint-10").mkdir()
    (run / "final").mkdir()
    old = [{"step": 1, "loss": 11.9}]
    new = [{"step": 1, "loss": 11.9, "reward": 0.1}, {"step": 2, "loss": 11.2, "reward": 0.3},
           {"train_runtime": 3.0, "step": 2}, {"step": 3, "loss": True}]
    (run / "checkpoint-2" / "trainer_state.json").write_text(json.dumps({"log_history": old}))
    (run / "checkpoint-10" / "trainer_state.json").write_text(json.dumps({"log_history": new}))
    history = find_log_history(run / "final")
    assert history == new  # the newest checkpoint by number, not by name
    assert history_series(history) == {"loss": [(1.0, 11.9), (2.0, 11.2)], "reward": [(1.0, 0.1), (2.0, 0.3)]}
    png = plot_history(history, tmp_path / "out" / "history.png", "run").read_bytes()
    assert png.startswith(PNG_SIGNATURE) and len(png) > 1000
    assert find_log_history(tmp_path / "nothing" / "final") is None
    with pytest.raises(ValueError, match="no reward or loss"):
        plot_history([{"step": 1, "learning_rate": 0.1}], tmp_path / "x.png", "run")


def test_problem_plot_is_a_png(tmp_path: Path) -> None:
    results = [ProblemResult(problem_id=f"p{i}", category="product", attempts=4, successes=i, mean_rule=i / 4,
                             steps=8, steps_hallucinated=1, attempts_hallucinated=1, failures=0)
               for i in range(3)]
    png = plot_problems(results, tmp_path / "problems.png", "tiny").read_bytes()
    assert png.startswith(PNG_SIGNATURE) and len(png) > 1000
