"""``python -m benchmarks.real_model`` end to end at tiny size: a training day of the reference agents (the
scripted model double as their LLM) through the validator's suite run and the exporter, held-out problems
on a private seed, the tiny random Gemma 3 evaluated through the sandbox, trained by the worker's SFT stage
on the day's agentic successes, evaluated again; a rejection stage with nothing to keep carries the SFT
model on, and KTO trains from it on the day's successes and failures. The tiny model is random: the figures
are checked against the records, not for lift."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest

from arena.suites import targets_of
from arena.suites.clusters import cluster_problems
from benchmarks.real_model import benchmark as real_model
from benchmarks.real_model.phases import bootstrap_mean
from shoppingbench.problems.loaders import load_problems
from shoppingbench.problems.models import CATEGORIES
from shoppingbench.sample_world import SampleWorld
from tests.sandbox_support import SLOT_UIDS, UID_BASE, leftover_processes
from trajectories.training.dev.gemma import save_tiny_gemma
from trajectories.training.evaluation.evaluate import EvaluationReport
from trajectories.training.evaluation.registry import ModelRegistry

GROUPS = {*CATEGORIES, "all"}


@pytest.fixture(scope="module")
def finished(small_world: SampleWorld, tmp_path_factory: pytest.TempPathFactory,
             ) -> tuple[dict[str, Any], Path]:
    """The run's last printed line, parsed, and its working directory."""
    root = tmp_path_factory.mktemp("real-model")
    model = save_tiny_gemma(root / "tiny-gemma")
    out = root / "out"
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as env, contextlib.redirect_stdout(printed):
        env.setenv("ARENA_HOME", str(root / "home"))
        env.setenv("ARENA_SANDBOX_UID_BASE", str(UID_BASE))
        env.setenv("ARENA_SANDBOX_TIMEOUT_S", "90")
        real_model.main(["--model", str(model), "--out", str(out), "--world-dir", str(small_world.world_dir),
                         "--day-problems", "2", "--held-out-per-category", "1", "--sft-steps", "2",
                         "--max-tokens", "16", "--attempt-calls", "3", "--attempt-timeout-s", "90",
                         "--workers", "2", "--bootstrap", "200", "--held-out-seed", "private",
                         "--stages", "sft,rejection,kto"])
    assert leftover_processes(SLOT_UIDS) == [], "a sandbox process outlived the run"
    result: dict[str, Any] = orjson.loads(printed.getvalue().strip().splitlines()[-1])
    assert result == orjson.loads((out / "result.json").read_bytes())
    return result, out


def test_the_last_line_is_the_result_with_every_figure(finished: tuple[dict[str, Any], Path]) -> None:
    result, _ = finished
    assert result["day_model"] == "scripted double"
    assert result["plan"]["stages"] == ["sft", "rejection", "kto"]
    assert set(result["stages"]) == {"base", "sft", "rejection", "kto"}
    for name, stage in result["stages"].items():
        assert set(stage["pass_at_1"]) == GROUPS, name
        for interval in stage["pass_at_1"].values():
            assert 0 <= interval["low"] <= interval["mean"] <= interval["high"] <= 1
        assert stage["attempts"] == 3 and 0 <= stage["format_error_rate"] <= 1
        assert set(stage["step_hallucination_rate"]) == GROUPS
    assert result["base_pass_at_1"] == result["stages"]["base"]["pass_at_1"]["all"]["mean"]
    assert result["sft_pass_at_1"] == result["stages"]["sft"]["pass_at_1"]["all"]["mean"]
    lift = result["sft_lift"]
    assert lift["lift"] == pytest.approx(result["sft_pass_at_1"] - result["base_pass_at_1"])
    assert result["sft_lift_low"] == lift["low"] <= lift["lift"] <= lift["high"]
    stages = result["stages"]
    trained = [stages[stage]["train"].get("tokens_trained", 0) for stage in ("sft", "rejection", "kto")]
    assert result["tokens_trained"] == sum(trained) and trained[0] > 0 and trained[1] == 0
    assert result["minutes"] > 0 and result["matmul_gflops_1_thread"] > 0 and result["load_1m"] >= 0


def test_the_day_runs_both_reference_agents_and_sft_trains_on_its_agentic_successes(
        finished: tuple[dict[str, Any], Path], small_world: SampleWorld) -> None:
    result, out = finished
    day = result["day"]
    assert day["problems"] == 6 and day["attempts"] == 12
    assert set(day["successes"]) == {"react", "tool_calling"}
    assert sum(day["labels"].values()) == 12 and sum(day["splits"].values()) == 12
    assert (out / "day" / "dump" / "manifest.json").exists()
    rows = [row for file in sorted((out / "day" / "dump" / "data").glob("*.parquet"))
            for row in pq.read_table(file, columns=["n_inference_calls", "success"]).to_pylist()]
    assert len(rows) == 12 and sum(r["success"] for r in rows) == sum(day["successes"].values())
    assert max(r["n_inference_calls"] for r in rows) > 3, "--attempt-calls budgets the evaluation only"
    sft = result["stages"]["sft"]
    assert sft["train"]["steps"] == 2 and sft["train"]["examples"] == day["train_agentic_successes"] > 0
    assert sft["model"] == sft["train"]["final"] and (Path(sft["model"]) / "adapter_config.json").exists()
    rejection = result["stages"]["rejection"]  # the random model succeeds nowhere: nothing to keep
    assert "nothing to fine-tune on" in rejection["train"]["skipped"] and rejection["carried_from"] == "sft"
    assert rejection["pass_at_1"] == sft["pass_at_1"]
    kto = result["stages"]["kto"]  # the study's preference step, from the SFT model on the day's attempts
    assert kto["train"]["steps"] == 2 and kto["train"]["tokens_trained"] > 0 and "carried_from" not in kto
    assert (Path(kto["model"]) / "adapter_config.json").exists() and kto["attempts"] == 3
    entries = ModelRegistry(out / "registry.sqlite3").list()
    assert [e.stage for e in entries] == ["base", "sft", "kto"]
    assert entries[1].path == str(Path(sft["model"]).resolve())


def test_the_held_out_problems_are_new_and_scored_from_the_records(
        finished: tuple[dict[str, Any], Path], small_world: SampleWorld) -> None:
    result, out = finished
    assert result["held_out"]["per_category"] == dict.fromkeys(CATEGORIES, 1)
    day = small_world.suite(2)
    for name in ("base", "sft"):
        report = EvaluationReport.model_validate_json((out / "eval" / name / "results.json").read_bytes())
        scores = orjson.loads((out / "eval" / name / "scores.json").read_bytes())
        assert scores == {p.problem_id: p.successes / p.attempts for p in report.problems}
        figures = result["stages"][name]["pass_at_1"]
        assert figures["all"]["mean"] == pytest.approx(report.category("all").pass_at_1)
        for category in CATEGORIES:
            assert figures[category]["mean"] == pytest.approx(report.category(category).pass_at_1)
    held_out = load_problems(Path(result["held_out"]["file"]))
    assert {p.id for p in held_out} == set(scores) and len(held_out) == 3
    assert not {p.id for p in held_out} & {p.id for p in day}
    assert not targets_of(held_out) & targets_of(day)
    # No held-out problem in a leak cluster of the day: the clusters of both, drawn together.
    clusters = cluster_problems([*day, *held_out]).cluster_of
    assert not {clusters[p.id] for p in held_out} & {clusters[p.id] for p in day}


def test_the_bootstrap_interval_brackets_the_mean() -> None:
    spread = bootstrap_mean([0.0, 1.0] * 10, resamples=500, seed=1)
    assert spread["mean"] == 0.5 and 0 < spread["low"] < 0.5 < spread["high"] < 1
    assert bootstrap_mean([1.0] * 5, resamples=100, seed=1) == {"mean": 1.0, "low": 1.0, "high": 1.0}
    with pytest.raises(ValueError):
        bootstrap_mean([], resamples=10, seed=0)


def test_a_missing_model_is_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stopped:
        real_model.main(["--model", str(tmp_path / "none"), "--out", str(tmp_path / "out")])
    assert stopped.value.code == 2 and not (tmp_path / "out").exists()
