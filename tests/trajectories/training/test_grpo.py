"""Stage 5 on CPU: GRPO with the Dr. GRPO loss, the tiny Qwen3 rolling out multi-turn tool calls against the
real environment (small world catalog, real scorer), teacher plans from hand-built teacher attempts.

A random tiny model almost never emits a tool call, and a group whose rollouts all score the same has zero
advantage and zero gradient. So the model is first fitted on hand-made first turns of two kinds, a search
(``find_product``) and a recommendation without one (``recommend_product``), until it writes parseable
calls of both kinds: its rollouts then differ in what they call, and so in their rewards.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from peft import AutoPeftModelForCausalLM
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl.chat_template_utils import qwen3_training_chat_template

from shoppingbench.dialogue import ToolCall, create_dialogue_step
from shoppingbench.grading.grader import Grader
from shoppingbench.problems.models import Problem
from shoppingbench.sample_world import SampleWorld
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.settings import HarnessSettings
from tests.trajectories.training.tools_support import trl_tools
from trajectories.training.data.conversations import Conversation
from trajectories.training.data.problems import dump_problems
from trajectories.training.data.tokens import IGNORE_INDEX, tokenize_conversation
from trajectories.training.data.tools import SYSTEM_PROMPT
from trajectories.training.stages import stage
from trajectories.training.stages.environment import ShoppingContext, ShoppingEnvironment
from trajectories.training.stages.grpo import (
    ShoppingGRPOTrainer,
    grpo_dataset,
    prompt,
    prompt_token_ids,
    read_teacher_plans,
    run_grpo,
    trainer_arguments,
)
from trajectories.training.stages.grpo_config import GRPOStageConfig
from trajectories.training.stages.rewards import ToolStep, parse_plan
from trajectories.training.stages.stage import NothingToTrain

CONFIGS = Path(__file__).parents[3] / "trajectories" / "training" / "configs"
FIT_STEPS = 100
ROLLOUT_PROBLEMS = 1
"""GRPO rolls out on the first train problem only, the one the model is fitted on and the teacher solved
(every rollout's sequence, prompt included, goes through the 151,936-wide head on CPU: rollouts are dear)."""
ROLLOUTS = {"num_generations": 4, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 1}
"""One group of 4 rollouts per step: with the tiny config's 2, both rollouts make the same kind of call
(so score the same and give no gradient) about a third of the time."""
SEARCH = {"q": "capybara"}
"""The fitted search: a word of the small world's catalog with a few hits (a short tool result)."""
UNSEEN = {"product_ids": "1250048547"}
"""The fitted recommendation: a real product, but named before any search showed it (a hallucination)."""


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> HarnessSettings:
    """A harness home of its own, so the title-embedding cache is the test's."""
    return HarnessSettings(home=tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def train_problems(world_dump: Path) -> list[Problem]:
    return dump_problems([world_dump], "train").problems


@pytest.fixture(scope="module")
def environment(small_engine: BM25SearchEngine, settings: HarnessSettings) -> ShoppingEnvironment:
    return ShoppingEnvironment(ShoppingContext(small_engine, Grader.from_settings(small_engine.get_products,
                                                                                 settings)))


@pytest.fixture(scope="module")
def teacher_attempts(train_problems: list[Problem], environment: ShoppingEnvironment,
                     tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A successful teacher attempt (search, recommend the targets, terminate) for the first problem only."""
    path = tmp_path_factory.mktemp("teacher") / "attempts.jsonl"
    lines = []
    for problem in train_problems[:1]:
        answer = ",".join(target.product_id for target in problem.targets)
        calls = [ToolCall(name="find_product", parameters={"q": problem.targets[0].title[0]}),
                 ToolCall(name="recommend_product", parameters={"product_ids": answer}),
                 ToolCall(name="terminate", parameters={"status": "success"})]
        steps = [create_dialogue_step(i, problem.query, think="plan", tool_calls=[call])
                 for i, call in enumerate(calls)]
        record = environment.grader.record(run_id="teacher", agent_hash="teacher", problem=problem,
                                           steps=steps, failure=None, started_at=0.0, finished_at=1.0)
        assert record.score.success, "the teacher's answer is the problem's targets"
        lines.append(record.model_dump_json())
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _first_turn(problem: Problem, name: str, arguments: dict[str, str]) -> Conversation:
    """A first turn as the SFT data holds it (the tools listed as ``TOOL_SCHEMAS``, as GRPO's prompts)."""
    call = {"type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    turn = {"role": "assistant", "content": "", "tool_calls": [call]}
    messages: list[dict[str, Any]] = [*prompt(problem), turn]
    return Conversation(attempt_id=name, problem_id=problem.id, leak_cluster="", messages=messages)


def _fit(model_dir: Path, conversations: list[Conversation], out: Path) -> Path:
    """Full fine-tuning on the conversations' assistant tokens. The lm head runs on those ~30 positions only:
    SFTTrainer would compute Qwen3's 151,936 logits at all ~700 positions, most of them the tool schemas."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    examples = [example for c in conversations if (example := tokenize_conversation(tokenizer, c, 4096))]
    width = max(len(e.input_ids) for e in examples)
    pad = tokenizer.pad_token_id
    ids = torch.tensor([e.input_ids + [pad] * (width - len(e.input_ids)) for e in examples])
    attention = (torch.arange(width) < torch.tensor([[len(e.input_ids)] for e in examples])).long()
    labels = torch.tensor([e.labels + [IGNORE_INDEX] * (width - len(e.labels)) for e in examples])[:, 1:]
    trained = labels != IGNORE_INDEX
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    torch.manual_seed(0)
    for _ in range(FIT_STEPS):
        hidden = model.model(input_ids=ids, attention_mask=attention).last_hidden_state[:, :-1]
        loss = torch.nn.functional.cross_entropy(model.lm_head(hidden[trained]), labels[trained])
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
    assert loss.item() < 0.2, f"the fit did not converge (loss {loss.item():.2f})"
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def tool_calling_model(tiny_model_dir: Path, train_problems: list[Problem],
                       tmp_path_factory: pytest.TempPathFactory) -> Path:
    conversations = [_first_turn(problem, name, arguments)
                     for problem in train_problems[:ROLLOUT_PROBLEMS]
                     for name, arguments in (("find_product", SEARCH), ("recommend_product", UNSEEN))]
    return _fit(tiny_model_dir, conversations, tmp_path_factory.mktemp("fitted"))


def _config(**changes: Any) -> GRPOStageConfig:
    config = GRPOStageConfig.load(CONFIGS / "grpo_tiny.yaml")
    trainer = {**config.trainer, **changes.pop("trainer", {})}
    return config.model_copy(update={**changes, "trainer": trainer})


def test_the_shipped_configs_load_and_enforce_dr_grpo(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stage, "cpu_has_bf16", lambda: False)
    production = GRPOStageConfig.load(CONFIGS / "grpo.yaml")
    arguments = trainer_arguments(production, tmp_path)
    assert arguments.loss_type == "dr_grpo" and arguments.scale_rewards == "none"
    assert arguments.reward_weights == [production.rewards.outcome, production.rewards.teacher,
                                        production.rewards.hallucination]
    assert arguments.num_generations == 8 and arguments.max_tool_calling_iterations == 12
    assert not arguments.use_vllm and not arguments.bf16  # no GPU, no native bf16: the CPU overrides apply
    assert arguments.vllm_max_model_length == production.max_length
    tiny = GRPOStageConfig.load(CONFIGS / "grpo_tiny.yaml")
    assert tiny.model == "tiny" and trainer_arguments(tiny, tmp_path).num_generations == 2
    for trainer in ({"loss_type": "grpo"}, {"scale_rewards": "group"}, {"reward_weights": [1, 1, 1]}):
        with pytest.raises(ValueError, match=r"Dr\. GRPO|rewards:"):
            GRPOStageConfig.model_validate({"trainer": trainer})


def test_teacher_attempts_are_taken_relative_to_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "stage.yaml").write_text("stage: grpo\nteacher_attempts: [runs/attempts.jsonl, /abs.jsonl]\n")
    config = GRPOStageConfig.load(tmp_path / "stage.yaml")
    assert config.teacher_attempts == [tmp_path / "runs" / "attempts.jsonl", Path("/abs.jsonl")]
    with pytest.raises(FileNotFoundError, match="teacher attempts not found"):
        read_teacher_plans(config.teacher_attempts)


def test_the_dataset_holds_each_guarded_problem_with_its_teacher_plan(
        train_problems: list[Problem], teacher_attempts: Path, small_world: SampleWorld) -> None:
    plans = read_teacher_plans([teacher_attempts])
    assert set(plans) == {train_problems[0].id}
    plan = plans[train_problems[0].id]
    assert [step.name for step in plan] == ["find_product", "recommend_product", "terminate"]
    dataset = grpo_dataset(train_problems, plans)
    assert len(dataset) == len(train_problems) == len(small_world.suite(2)) - 1  # one cluster is held out
    for row, problem in zip(dataset, train_problems, strict=True):
        assert row["prompt"] == [{"role": "system", "content": SYSTEM_PROMPT},
                                 {"role": "user", "content": problem.query}]
        assert Problem.model_validate_json(row["problem"]) == problem and row["problem_id"] == problem.id
    assert parse_plan(dataset[0]["teacher_plan"]) == [ToolStep(s.name, s.arguments)
                                                      for s in plans[train_problems[0].id]]
    assert [row["teacher_plan"] is None for row in dataset] == [False] + [True] * (len(dataset) - 1)


def test_a_run_without_problems_a_catalog_or_room_for_the_completion_is_refused(
        world_dump: Path, tiny_model_dir: Path, small_world: SampleWorld, settings: HarnessSettings,
        tmp_path: Path) -> None:
    clusters = tmp_path / "held_out.txt"
    clusters.write_text("\n".join(f"cluster-{i:05d}" for i in range(10)))
    with pytest.raises(NothingToTrain, match="nothing to roll out on"):
        run_grpo(_config(held_out_clusters_file=clusters), [world_dump], tmp_path / "a", settings=settings)
    with pytest.raises(ValueError, match="no catalog"):
        run_grpo(_config(), [world_dump], tmp_path / "b", settings=settings)
    cramped = _config(model=str(tiny_model_dir), catalog=small_world.catalog_dir, max_length=600)
    with pytest.raises(ValueError, match="exceeds max_length 600"):
        run_grpo(cramped, [world_dump], tmp_path / "c", settings=settings)
    assert not (tmp_path / "c" / "final").exists()


@pytest.fixture(scope="module")
def grpo_runs(tool_calling_model: Path, world_dump: Path, small_world: SampleWorld, teacher_attempts: Path,
              settings: HarnessSettings, tmp_path_factory: pytest.TempPathFactory,
              ) -> Iterator[tuple[Path, Any, Any]]:
    """One GRPO step, then a second run of the same directory resuming it for step 2."""
    out = tmp_path_factory.mktemp("grpo") / "run"
    changes: dict[str, Any] = {"model": str(tool_calling_model), "catalog": small_world.catalog_dir,
                               "teacher_attempts": [teacher_attempts], "max_problems": ROLLOUT_PROBLEMS}
    first = run_grpo(_config(**changes, trainer={**ROLLOUTS, "max_steps": 1}), [world_dump], out,
                     settings=settings)
    second = run_grpo(_config(**changes, trainer={**ROLLOUTS, "max_steps": 2}), [world_dump], out,
                      settings=settings)
    yield out, first, second


def _steps(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in history if "loss" in entry]


def test_grpo_rolls_out_tool_calls_against_the_environment_and_learns_from_varied_rewards(
        grpo_runs: tuple[Path, Any, Any]) -> None:
    _, first, second = grpo_runs
    steps = _steps(second.log_history)
    assert [entry["step"] for entry in steps] == [1, 2]
    assert all(math.isfinite(entry["loss"]) for entry in steps)
    for entry in steps:
        for name in ("outcome_reward", "teacher_reward", "hallucination_reward"):
            assert math.isfinite(entry[f"rewards/{name}/mean"])
        assert entry["tools/call_frequency"] > 0, "the rollouts called tools"
        assert entry["tools/failure_frequency"] < 1, "some calls ran in the environment"
    # the environment's episodes: recommendations before any search are counted as hallucinated
    assert any(entry["hallucinations/ids"] > 0 for entry in steps)
    assert all(entry["rewards/hallucination_reward/mean"] <= 0 for entry in steps)
    varied = [entry for entry in steps if entry["frac_reward_zero_std"] < 1]
    assert varied, "some group's rollouts scored differently"
    assert all(entry["grad_norm"] > 0 for entry in varied)
    assert first.extra["problems"] == ROLLOUT_PROBLEMS and first.extra["with_teacher_plan"] == 1


def test_grpo_checkpoints_reload_and_a_run_resumes(grpo_runs: tuple[Path, Any, Any]) -> None:
    out, first, second = grpo_runs
    assert first.global_step == 1 and first.resumed_from is None
    assert second.resumed_from == out / "checkpoint-1" and second.global_step == 2
    assert {p.name for p in out.glob("checkpoint-*")} == {"checkpoint-1", "checkpoint-2"}
    assert (second.final_dir / "adapter_config.json").exists()
    model = AutoPeftModelForCausalLM.from_pretrained(second.final_dir)
    tokenizer = AutoTokenizer.from_pretrained(second.final_dir)
    ids = tokenizer("<|im_start|>assistant\n<tool_call>", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    assert logits.shape == (1, ids.shape[1], 151936) and torch.isfinite(logits).all()
    trained = [p for n, p in model.named_parameters() if "lora_B" in n]
    assert any(p.abs().sum() > 0 for p in trained), "GRPO moved the adapter (LoRA B starts at zero)"


def test_grpo_prompts_are_the_sft_prompts(tiny_model_dir: Path, train_problems: list[Problem],
                                          environment: ShoppingEnvironment) -> None:
    """The prompt GRPO generates from is, token for token, the start of an SFT example of the same problem
    (the tools listed as TOOL_SCHEMAS, not TRL's rendering of the environment's methods)."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    problem = train_problems[0]
    sft = tokenize_conversation(tokenizer, _first_turn(problem, "find_product", SEARCH), 4096)
    assert sft is not None
    trainer_state = SimpleNamespace(_tokenizer=tokenizer, chat_template=qwen3_training_chat_template,
                                    chat_template_kwargs={})
    (ids,), images, fields = ShoppingGRPOTrainer._tokenize_prompts(trainer_state, [prompt(problem)])  # type: ignore[arg-type]
    assert images is None and fields == {}
    assert ids == prompt_token_ids(tokenizer, prompt(problem)) == sft.input_ids[:len(ids)]
    assert str(tokenizer.decode(ids)).endswith("<|im_start|>assistant\n")
    assert all(label == IGNORE_INDEX for label in sft.labels[:len(ids)])  # the prompt is never trained on
    methods = tokenizer.apply_chat_template(prompt(problem), tools=list(trl_tools(environment)),
                                            add_generation_prompt=True, tokenize=True, return_dict=False)
    assert methods != ids  # what TRL alone would have rendered


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a real Dr. GRPO step of multi-turn rollouts on CPU
def test_the_study_mode_trains_on_the_per_step_teacher_match_alone(
        tool_calling_model: Path, world_dump: Path, small_world: SampleWorld, teacher_attempts: Path,
        settings: HarnessSettings, tmp_path: Path) -> None:
    """grpo_study_tiny.yaml: one Dr. GRPO step whose only reward is the study's teacher tool match; only the
    problem with a teacher plan is rolled out on, however many train problems there are."""
    study = GRPOStageConfig.load(CONFIGS / "grpo_study_tiny.yaml")
    assert study.rewards.mode == "study_teacher_match"
    assert trainer_arguments(study, tmp_path).reward_weights == [1.0]
    production = GRPOStageConfig.load(CONFIGS / "grpo_study.yaml")
    assert production.rewards.mode == "study_teacher_match" and production.trainer["max_steps"] == 20
    assert production.model != "tiny" and trainer_arguments(production, tmp_path).loss_type == "dr_grpo"
    trainer = {**study.trainer, **ROLLOUTS, "max_steps": 1}
    config = study.model_copy(update={"model": str(tool_calling_model), "catalog": small_world.catalog_dir,
                                      "teacher_attempts": [teacher_attempts], "max_problems": None,
                                      "trainer": trainer})
    result = run_grpo(config, [world_dump], tmp_path / "run", settings=settings)
    assert result.extra["problems"] == 1 and result.extra["reward_mode"] == "study_teacher_match"
    (step,) = _steps(result.log_history)
    rewards = {key for key in step if key.startswith("rewards/")}
    assert rewards == {"rewards/study_teacher_reward/mean", "rewards/study_teacher_reward/std"}
    assert 0 <= step["rewards/study_teacher_reward/mean"] <= 1 and step["reward"] == pytest.approx(
        step["rewards/study_teacher_reward/mean"])  # weight 1, nothing else added
    assert 0 <= step["teacher/step_match"] <= 1
    assert "hallucinations/ids" in step and "outcome/success" in step  # watched, not rewarded
    assert math.isfinite(step["loss"]) and step["tools/call_frequency"] > 0
    if step["frac_reward_zero_std"] < 1:  # the group's rollouts matched the teacher differently
        assert step["grad_norm"] > 0
    with pytest.raises(NothingToTrain, match="study_teacher_match needs teacher plans"):
        run_grpo(config.model_copy(update={"teacher_attempts": []}), [world_dump], tmp_path / "none",
                 settings=settings)
