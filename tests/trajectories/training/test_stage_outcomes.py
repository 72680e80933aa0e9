"""A stage's trainer arguments checked against its TRL config class when the YAML is read; the stage and
evaluation outcomes as the pipeline keeps them (and as older runs wrote them); the pipeline's evaluation
step choosing its held-out problems; the shared sampling defaults."""

from __future__ import annotations

import inspect
import json
import shutil
from pathlib import Path

import pytest
import yaml

from neurons import worker
from shoppingbench.problems.held_out import HELD_OUT_DIR
from shoppingbench.problems.loaders import load_problems
from shoppingbench.sample_world import SampleWorld
from shoppingbench.settings import HarnessSettings
from trajectories.training.evaluation.evaluator import HeldOutEvaluator
from trajectories.training.evaluation.held_out import evaluate_checkpoint
from trajectories.training.evaluation.outcome import EvaluationOutcome
from trajectories.training.pipeline import PipelineEvaluation, load_stage_config
from trajectories.training.serving.defaults import MAX_TOKENS, SAMPLES_PER_PROBLEM, TEMPERATURE, WORKERS
from trajectories.training.serving.hf_server import ServingConfig
from trajectories.training.stages.outcome import StageOutcome
from trajectories.training.stages.sampling_config import RolloutSettings, ServingSettings

CONFIGS = Path(__file__).parents[3] / "trajectories" / "training" / "configs"


def _with_trainer(tmp_path: Path, shipped: str, **trainer: object) -> Path:
    raw = yaml.safe_load((CONFIGS / shipped).read_text(encoding="utf-8"))
    raw["trainer"] = {**raw.get("trainer", {}), **trainer}
    path = tmp_path / shipped
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


@pytest.mark.parametrize(("shipped", "stage", "trainer_class"), [
    ("sft_tiny.yaml", "sft", "SFTConfig"), ("rejection_tiny.yaml", "rejection", "SFTConfig"),
    ("dpo_tiny.yaml", "dpo", "DPOConfig"), ("kto_tiny.yaml", "kto", "KTOConfig"),
    ("grpo_tiny.yaml", "grpo", "GRPOConfig")])
def test_a_misspelt_or_mistyped_trainer_argument_fails_at_load_naming_the_stage_and_key(
        tmp_path: Path, shipped: str, stage: str, trainer_class: str) -> None:
    with pytest.raises(ValueError, match=rf"stage {stage}: trainer\.learning_rat is not an argument of "
                                         rf"{trainer_class}"):
        load_stage_config(_with_trainer(tmp_path, shipped, learning_rat=1e-4))
    with pytest.raises(ValueError, match=rf"stage {stage}: trainer\.max_steps = 'many' does not fit "
                                         rf"{trainer_class}\.max_steps"):
        load_stage_config(_with_trainer(tmp_path, shipped, max_steps="many"))
    # YAML reads 1e-5 as a string; TRL takes it as the float it means, and so does the check
    assert load_stage_config(_with_trainer(tmp_path, shipped, learning_rate="1e-5")).stage == stage


def test_a_trainer_argument_only_one_stage_has_is_refused_elsewhere(tmp_path: Path) -> None:
    assert load_stage_config(_with_trainer(tmp_path, "dpo_tiny.yaml", beta=0.2)).trainer["beta"] == 0.2
    with pytest.raises(ValueError, match=r"stage sft: trainer\.beta is not an argument of SFTConfig"):
        load_stage_config(_with_trainer(tmp_path, "sft_tiny.yaml", beta=0.2))
    with pytest.raises(ValueError, match=r"stage grpo: trainer\.num_generations = 'four' does not fit"):
        load_stage_config(_with_trainer(tmp_path, "grpo_tiny.yaml", num_generations="four"))


def test_a_result_json_of_an_older_run_reads_into_the_outcome_and_keeps_its_keys() -> None:
    written = {"stage": "grpo", "final": "run/05-grpo/final", "global_step": 2, "examples": 3,
               "last_loss": 0.5, "resumed_from": None, "problems": 3, "with_teacher_plan": 1,
               "reward_mode": "default", "skipped": {"no_reward": 2}}
    outcome = StageOutcome.model_validate_json(json.dumps(written))
    assert outcome.skipped is None and outcome.final == Path("run/05-grpo/final")  # GRPO trained
    assert outcome.details == {"problems": 3, "with_teacher_plan": 1, "reward_mode": "default",
                               "problems_skipped": {"no_reward": 2}}
    dumped = outcome.model_dump(mode="json")
    assert dumped["problems"] == 3 and dumped["final"] == "run/05-grpo/final" and "details" not in dumped
    assert StageOutcome.model_validate(dumped) == outcome
    skipped = StageOutcome.model_validate({"stage": "rejection", "skipped": "nothing to fine-tune on",
                                           "final": None, "attempts_file": "run/02/rollouts/attempts.jsonl"})
    assert skipped.final is None and skipped.attempts_file == Path("run/02/rollouts/attempts.jsonl")


def test_an_evaluation_json_keys_pass_at_k_by_its_k_and_never_writes_the_report() -> None:
    written = {"results": "run/eval/results.json", "plot": "run/eval/plot.png", "registry_id": 3,
               "pass_at_1": 0.25, "pass_at_4": 0.5, "step_hallucination_rate": 0.0, "problems_source": "s"}
    outcome = EvaluationOutcome.model_validate(written)
    assert outcome.k == 4 and outcome.pass_at_k == 0.5 and outcome.skipped is None
    assert outcome.model_dump(mode="json", exclude_none=True) == written
    assert EvaluationOutcome(skipped="no problem").read_report() is None


def test_the_evaluation_step_takes_the_newest_held_out_suite_else_the_dumps_split(
        small_world: SampleWorld, world_dump: Path, tmp_path: Path) -> None:
    settings = HarnessSettings(home=tmp_path / "home")
    step = HeldOutEvaluator(dumps=[world_dump], catalog=small_world.catalog_dir, settings=settings, k=1,
                            max_problems=None, temperature=TEMPERATURE, max_tokens=MAX_TOKENS)
    problems, source, _ = step.problems()
    assert problems and source == f"held_out split of {world_dump}"
    suites = settings.root / HELD_OUT_DIR
    suites.mkdir(parents=True)
    shutil.copy(small_world.problems_dir / "shop.jsonl", suites / "study-v1.jsonl")
    shutil.copy(small_world.problems_dir / "voucher.jsonl", suites / "study-v2.jsonl")
    problems, source, _ = step.problems()
    assert source == str(suites / "study-v2.jsonl")
    assert [p.id for p in problems] == [p.id for p in load_problems(suites / "study-v2.jsonl")]
    nowhere = HeldOutEvaluator(dumps=[tmp_path / "no-dump"], catalog=small_world.catalog_dir,
                               settings=HarnessSettings(home=tmp_path / "empty"), k=1, max_problems=None,
                               temperature=TEMPERATURE, max_tokens=MAX_TOKENS)
    skipped = nowhere(tmp_path / "model", "sft", tmp_path / "eval")
    assert skipped.skipped and str(tmp_path / "no-dump") in skipped.skipped and skipped.results is None
    assert not (tmp_path / "eval").exists()  # nothing was served or written


def test_every_sampling_setting_has_one_default() -> None:
    evaluation, serving, rollouts = PipelineEvaluation(), ServingSettings(), RolloutSettings()
    assert evaluation.max_tokens == serving.max_tokens == ServingConfig(served_name="m").max_tokens_cap
    assert evaluation.max_tokens == MAX_TOKENS
    assert evaluation.temperature == serving.temperature == TEMPERATURE
    assert evaluation.k == rollouts.samples_per_problem == SAMPLES_PER_PROBLEM and rollouts.workers == WORKERS
    checkpoint = inspect.signature(evaluate_checkpoint).parameters
    command = inspect.signature(worker.evaluate).parameters
    for name, value in (("max_tokens", MAX_TOKENS), ("temperature", TEMPERATURE), ("workers", WORKERS)):
        assert checkpoint[name].default == command[name].default == value, name
    assert command["k"].default == SAMPLES_PER_PROBLEM
