"""The KTO stage on CPU with the tiny Qwen3: unpaired desirable and undesirable completions of the dumps and
of rollout records under the leak-cluster guard, kept rollouts weighted by reward, real TRL steps and a
saved adapter."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from tests.trajectories.training.conftest import WORLD_HELD_OUT_CLUSTER
from trajectories.doubles.synthetic import make_attempt
from trajectories.store import ProblemEntry
from trajectories.training.data.problems import dump_problems
from trajectories.training.data.weighting import RewardWeighting, repeats, sample_reward
from trajectories.training.pipeline import load_stage_config
from trajectories.training.stages.kto import KTOData, KTOStageConfig, collect_examples, run_kto
from trajectories.training.stages.stage import NothingToTrain

CONFIGS = Path(__file__).parents[3] / "trajectories" / "training" / "configs"


def _config(model: Path | str = "tiny", **updates: Any) -> KTOStageConfig:
    config = KTOStageConfig.load(CONFIGS / "kto_tiny.yaml")
    return config.model_copy(update={"model": str(model), **updates})


def _rollouts(world: SampleWorld, path: Path, samples: int = 4) -> list[AttemptRecord]:
    """``samples`` synthetic ReAct attempts (successes and failures) of every problem of the world dump."""
    rng = random.Random(11)
    records = [make_attempt(random.Random(rng.random()), "react",
                            ProblemEntry.of(problem, suite="world-sample", leak_cluster=f"cluster-{i:05d}"),
                            run_id=f"rejection-s{sample}", agent_hash="b" * 64, started_at=2.0e9 + sample)
               for sample in range(samples) for i, problem in enumerate(world.suite(2))]
    path.write_text("".join(record.model_dump_json() + "\n" for record in records), encoding="utf-8")
    return records


def _train_rows(dump: Path) -> list[dict[str, Any]]:
    files = sorted((dump / "data").glob("*.parquet"))
    rows = [row for path in files for row in pq.read_table(path).to_pylist()]
    return [row for row in rows if row["split"] == "train" and row["messages"]]


def test_the_shipped_configs_load_and_a_batch_the_kl_term_cannot_use_is_refused(tmp_path: Path) -> None:
    production = load_stage_config(CONFIGS / "kto.yaml")
    assert isinstance(production, KTOStageConfig) and production.data.weighting.mode == "reward"
    assert production.trainer["per_device_train_batch_size"] >= 2 and production.lora.enabled
    bad = tmp_path / "kto.yaml"
    bad.write_text("stage: kto\ntrainer: {per_device_train_batch_size: 1}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="per_device_train_batch_size to 2 or more"):
        load_stage_config(bad)
    bad.write_text("stage: kto\ntrainer: {max_length: 512}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="stage's max_length"):
        load_stage_config(bad)
    unpaired = tmp_path / "apo.yaml"  # the loss without a KL term takes a batch of one
    unpaired.write_text("stage: kto\ntrainer: {loss_type: apo_zero_unpaired, "
                        "per_device_train_batch_size: 1}\n", encoding="utf-8")
    assert load_stage_config(unpaired).stage == "kto"


def test_kept_rollouts_are_desirable_by_reward_and_rejected_ones_undesirable(
        world_dump: Path, small_world: SampleWorld, tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    records = _rollouts(small_world, path)
    clusters = dump_problems([world_dump], "train").clusters
    usable = [r for r in records if r.problem_id in clusters and r.steps]
    kept = [r for r in usable if r.score.success]
    rejected = [r for r in usable if not r.score.success]
    assert kept and rejected and len(usable) < len(records)  # the held-out problem's samples are left out
    rows = _train_rows(world_dump)
    config = _config(rollouts=[path])
    examples = collect_examples([world_dump], config)
    copies = repeats([sample_reward(r.score) for r in kept], config.data.weighting)
    assert examples.kept_rollouts == len(kept) and sum(copies) > len(kept)  # rewards differ: copies too
    assert examples.desirable == sum(copies) + sum(1 for row in rows if row["success"])
    assert examples.undesirable == len(rejected) + sum(1 for row in rows if not row["success"])
    assert [label for _, label in examples.examples].count(True) == examples.desirable
    outcome = {f"{r.run_id}/{r.problem_id}": r.score.success for r in usable}
    outcome.update({row["attempt_id"]: row["success"] for row in rows})
    assert all(outcome[conversation.attempt_id] == label for conversation, label in examples.examples)
    assert WORLD_HELD_OUT_CLUSTER not in {conversation.leak_cluster for conversation, _ in examples.examples}
    assert collect_examples([world_dump], config).examples == examples.examples  # deterministic (seeded)
    assert {label for _, label in examples.examples[:4]} == {True, False}  # batches mix both kinds

    uniform = _config(rollouts=[path], data=KTOData(weighting=RewardWeighting(mode="uniform")))
    assert collect_examples([world_dump], uniform).desirable == examples.desirable - sum(copies) + len(kept)
    rollouts_only = _config(rollouts=[path], data=KTOData(from_dumps=False))
    assert collect_examples([world_dump], rollouts_only).undesirable == len(rejected)


def test_lora_kto_trains_two_steps_and_saves_its_adapter(world_dump: Path, small_world: SampleWorld,
                                                     tiny_model_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    _rollouts(small_world, path, samples=2)
    out = tmp_path / "kto"
    result = run_kto(_config(tiny_model_dir, rollouts=[path]), [world_dump], out)
    assert result.stage == "kto" and result.global_step == 2 and result.resumed_from is None
    assert result.extra["desirable"] > 0 and result.extra["undesirable"] > 0
    assert result.train_examples == result.extra["desirable"] + result.extra["undesirable"]
    assert result.extra["truncated"] == result.train_examples  # 1,024 tokens: every trajectory is cut
    steps = [entry for entry in result.log_history if "loss" in entry]
    assert [entry["step"] for entry in steps] == [1, 2] and all(math.isfinite(e["loss"]) for e in steps)
    assert all("kl" in entry for entry in steps)  # the KL estimate of mismatched pairs in each batch
    assert steps[1]["rewards/margins"] != 0  # the policy left the reference on the second step
    assert (result.final_dir / "adapter_config.json").exists() and (out / "checkpoint-2").is_dir()


def test_without_an_example_the_stage_refuses_and_says_why(world_dump: Path, tmp_path: Path) -> None:
    nothing = KTOData(desirable_labels=frozenset({"no_llm"}), undesirable_labels=frozenset({"no_llm"}))
    with pytest.raises(NothingToTrain, match="no KTO example"):
        run_kto(_config(data=nothing), [world_dump], tmp_path / "kto")
    assert not (tmp_path / "kto" / "base").exists()  # refused before a model was built
