"""Stage 4 DPO on CPU with the tiny Qwen3: candidates under the leak-cluster guard, rollouts, assistant-only
masks (as tokenized and as the trainer scores them), real TRL steps, checkpoints, resume and reload."""

from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import torch
from peft import AutoPeftModelForCausalLM, LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer

from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from tests.trajectories.training.conftest import HELD_OUT_CLUSTER, WORLD_HELD_OUT_CLUSTER
from trajectories.doubles.sample_dumps import write_sample_dump
from trajectories.doubles.synthetic import make_attempt
from trajectories.store import ProblemEntry
from trajectories.training.data.dpo_pairs import PairFilter, PreferencePair, select_pairs
from trajectories.training.data.tokens import render_messages
from trajectories.training.stages import stage
from trajectories.training.stages.dpo import (
    PAIR_COLUMNS,
    AssistantMaskCollator,
    DPOStageConfig,
    PairTokenizer,
    TokenizedPair,
    build_preference_dataset,
    collect_candidates,
    dpo_trainer,
    run_dpo,
    trainer_arguments,
)

CONFIGS = Path(__file__).parents[3] / "trajectories" / "training" / "configs"
UNCAPPED = PairFilter(max_pairs_per_problem=100, max_tool_chars=400)


@pytest.fixture(scope="module")
def pair_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 problems in 4 clusters, three ReAct (agentic) agents each: successes and failures of one problem."""
    return write_sample_dump(tmp_path_factory.mktemp("pairs") / "dump", styles=("react", "react", "react"),
                             held_out_clusters=frozenset({HELD_OUT_CLUSTER}))


def _rows(dump: Path) -> list[dict[str, Any]]:
    files = sorted((dump / "data").glob("*.parquet"))
    return [row for path in files for row in pq.read_table(path).to_pylist()]


def _config(model: Path | str = "tiny", **updates: Any) -> DPOStageConfig:
    config = DPOStageConfig.load(CONFIGS / "dpo_tiny.yaml")
    trainer = {**config.trainer, **updates.pop("trainer", {})}
    return config.model_copy(update={"model": str(model), "trainer": trainer, **updates})


def _pairs(dumps: list[Path], config: DPOStageConfig) -> list[tuple[str, str, str]]:
    selection = select_pairs(collect_candidates(dumps, config).graded, config.data)
    return [(pair.problem_id, pair.chosen.attempt_id, pair.rejected.attempt_id) for pair in selection.pairs]


def _cross_product(rows: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """Every (problem, success, failure) of one problem's attempts that have steps: the uncapped pairs."""
    wins: defaultdict[str, list[str]] = defaultdict(list)
    losses: defaultdict[str, list[str]] = defaultdict(list)
    for row in rows:
        if row.get("steps_json") == "[]":  # a timed-out attempt: no conversation to train on
            continue
        (wins if row["success"] else losses)[row["problem_id"]].append(row["attempt_id"])
    return {(problem, win, loss) for problem in wins for win in wins[problem] for loss in losses[problem]}


def test_the_shipped_configs_load_and_rollout_paths_are_relative_to_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stage, "cpu_has_bf16", lambda: False)
    production = DPOStageConfig.load(CONFIGS / "dpo.yaml")
    assert production.model == "runs/teacher-1/final" and production.lora.enabled
    assert production.data.chosen_labels == production.data.rejected_labels == {"agentic"}
    arguments = trainer_arguments(production, tmp_path)
    assert arguments.beta == 0.1 and arguments.loss_type == ["sigmoid"] and arguments.max_length == 8192
    assert arguments.gradient_accumulation_steps == 16 and not arguments.remove_unused_columns
    assert not arguments.bf16  # no GPU here, and a CPU without native bf16: the CPU overrides apply
    assert DPOStageConfig.load(CONFIGS / "dpo_tiny.yaml").model == "tiny"
    written = tmp_path / "conf" / "dpo.yaml"
    written.parent.mkdir()
    written.write_text("stage: dpo\nrollouts: [runs/attempts.jsonl, /abs/attempts.jsonl]\n", encoding="utf-8")
    assert DPOStageConfig.load(written).rollouts == [tmp_path / "conf" / "runs" / "attempts.jsonl",
                                                     Path("/abs/attempts.jsonl")]


def test_pairs_are_a_success_over_a_failure_of_one_guarded_train_problem(pair_dump: Path) -> None:
    rows = _rows(pair_dump)
    held_out = [row for row in rows if row["split"] == "held_out"]
    assert _cross_product(held_out), "the held-out split must hold pairs for the guard to matter"
    train = [row for row in rows if row["split"] == "train"]
    assert {row["filter_label"] for row in train} == {"agentic"}
    expected = _cross_product(train)
    uncapped = _pairs([pair_dump], _config(data=UNCAPPED))
    assert expected and set(uncapped) == expected and len(uncapped) == len(expected)
    assert _pairs([pair_dump], _config(data=UNCAPPED)) == uncapped  # deterministic
    capped = _pairs([pair_dump], _config())
    per_problem = Counter(problem for problem, _, _ in capped)
    assert set(capped) <= expected and max(per_problem.values()) == 2 == _config().data.max_pairs_per_problem


def test_no_held_out_cluster_ever_reaches_a_pair(pair_dump: Path, tmp_path: Path) -> None:
    cluster_of = {row["attempt_id"]: row["leak_cluster"] for row in _rows(pair_dump)}
    everything = _pairs([pair_dump], _config(data=UNCAPPED))
    listed_cluster = cluster_of[everything[0][1]]
    listed = tmp_path / "held_out.txt"
    listed.write_text(f"# published held-out set\n{listed_cluster}\n", encoding="utf-8")
    guarded = _pairs([pair_dump], _config(data=UNCAPPED, held_out_clusters_file=listed))
    assert guarded and {cluster_of[chosen] for _, chosen, _ in guarded}.isdisjoint(
        {listed_cluster, HELD_OUT_CLUSTER})
    assert set(guarded) == {pair for pair in everything if cluster_of[pair[1]] != listed_cluster}
    # another day's dump whose split rule put the held-out cluster (with its pairs) on the train side
    other = tmp_path / "other"
    (other / "data").mkdir(parents=True)
    table = pq.read_table(next((pair_dump / "data").glob("held_out-*.parquet")))
    relabelled = table.set_column(table.schema.get_field_index("split"), "split",
                                  [["train"] * table.num_rows])
    pq.write_table(relabelled, other / "data" / "train-00000.parquet")
    config = _config(data=UNCAPPED)
    candidates = collect_candidates([pair_dump, other], config)
    assert candidates.dropped["held_out_cluster"] == table.num_rows
    assert set(_pairs([pair_dump, other], config)) == set(everything)


def _rollouts(world: SampleWorld, path: Path, samples: int) -> list[AttemptRecord]:
    """``samples`` synthetic ReAct attempts of every problem of the world dump (held-out one included)."""
    rng = random.Random(3)
    records = [make_attempt(random.Random(rng.random()), "react",
                            ProblemEntry.of(problem, suite="world-sample", leak_cluster=f"cluster-{i:05d}"),
                            run_id=f"rollout-s{sample}", agent_hash="a" * 64, started_at=1.0e9 + sample)
               for sample in range(samples) for i, problem in enumerate(world.suite(2))]
    path.write_text("".join(record.model_dump_json() + "\n" for record in records) + "not a record\n",
                    encoding="utf-8")
    return records


def test_rollout_records_of_guarded_train_problems_give_pairs(world_dump: Path, small_world: SampleWorld,
                                                              tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    records = _rollouts(small_world, path, samples=4)
    config = _config(data=UNCAPPED, rollouts=[path, path])  # listed twice: each record counts once
    candidates = collect_candidates([world_dump], config)
    held_out_problem = small_world.suite(2)[0].id  # cluster-00000, held out by the world dump
    usable = [r for r in records if r.problem_id != held_out_problem and r.steps]
    assert candidates.from_rollouts == len(usable) and 0 < len(usable) < len(records)
    assert candidates.dropped["rollout:not_a_train_problem"] == 2 * 4
    assert candidates.dropped["rollout:duplicate"] == len(usable)
    rollout_ids = {f"{r.run_id}/{r.problem_id}": r for r in usable}
    graded = {g.conversation.attempt_id: g for g in candidates.graded}
    assert all(graded[attempt].filter_label == "agentic" for attempt in rollout_ids)  # labelled from the log
    rows = [row for row in _rows(world_dump) if row["split"] == "train"]
    outcomes = [{"problem_id": r.problem_id, "attempt_id": f"{r.run_id}/{r.problem_id}",
                 "success": r.score.success} for r in usable] + rows
    pairs = _pairs([world_dump], config)
    assert set(pairs) == _cross_product(outcomes) and len(pairs) == len(set(pairs))
    assert any(chosen in rollout_ids and rejected in rollout_ids for _, chosen, rejected in pairs)
    assert WORLD_HELD_OUT_CLUSTER not in {graded[chosen].conversation.leak_cluster for _, chosen, _ in pairs}


def _check_side(tokenizer: Any, conversation_messages: list[dict[str, Any]], ids: list[int],
                mask: list[int]) -> None:
    """The masked-in text of one side is exactly its assistant turns."""
    trained = tokenizer.decode([token for token, keep in zip(ids, mask, strict=True) if keep])
    ignored = tokenizer.decode([token for token, keep in zip(ids, mask, strict=True) if not keep])
    assistants = [m for m in conversation_messages if m["role"] == "assistant"]
    tools = [m for m in conversation_messages if m["role"] == "tool"]
    assert tools and trained.count("<|im_end|>") == len(assistants)
    assert trained.count("<tool_call>") == sum(len(m["tool_calls"]) for m in assistants)
    assert all(m["reasoning_content"] in trained for m in assistants)
    assert all(m["content"][:40] not in trained and m["content"][:40] in ignored for m in tools)
    assert "<tool_response>" not in trained and "<|im_start|>" not in trained
    assert ignored.count("<tool_response>") == len(tools)


def test_masks_keep_only_assistant_tokens_after_a_shared_prompt(pair_dump: Path,
                                                                tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    pair = select_pairs(collect_candidates([pair_dump], _config()).graded, _config().data).pairs[0]
    tokenized = PairTokenizer(tokenizer, max_length=100_000)(pair)
    assert isinstance(tokenized, TokenizedPair) and not tokenized.truncated
    prompt = tokenizer.decode(tokenized.prompt_ids)
    assert prompt.startswith("<|im_start|>system\n") and prompt.endswith(
        pair.chosen.messages[1]["content"] + "<|im_end|>\n")
    for conversation, ids, mask in ((pair.chosen, tokenized.chosen_ids, tokenized.chosen_mask),
                                    (pair.rejected, tokenized.rejected_ids, tokenized.rejected_mask)):
        # the prompt is a true prefix: prompt + completion is the whole conversation as rendered
        assert tokenized.prompt_ids + ids == render_messages(tokenizer, conversation.messages,
                                                             conversation.tools).input_ids
        _check_side(tokenizer, conversation.messages, ids, mask)
    # the collator hands exactly these masks to the trainer, after the prompt, chosen rows first
    row = {column: getattr(tokenized, column) for column in PAIR_COLUMNS}
    cut = len(tokenized.prompt_ids) + 150  # room for the start of each side only
    short = PairTokenizer(tokenizer, max_length=cut)(pair)
    assert isinstance(short, TokenizedPair) and short.truncated
    assert len(short.prompt_ids) + max(len(short.chosen_ids), len(short.rejected_ids)) <= cut
    short_row = {column: getattr(short, column) for column in row}
    batch = AssistantMaskCollator(pad_token_id=tokenizer.pad_token_id)([row, short_row])
    prompt_zeros = [0] * len(tokenized.prompt_ids)
    expected = [prompt_zeros + tokenized.chosen_mask, prompt_zeros + short.chosen_mask,
                prompt_zeros + tokenized.rejected_mask, prompt_zeros + short.rejected_mask]
    width = batch["input_ids"].shape[1]
    for index, mask in enumerate(expected):
        assert batch["completion_mask"][index].tolist() == mask + [0] * (width - len(mask))
    assert bool((batch["completion_mask"] <= batch["attention_mask"]).all())
    # a prompt that is not the other side's prefix, and a prompt longer than max_length, are refused
    other_query = dataclasses.replace(pair.rejected, attempt_id="other", messages=[
        pair.rejected.messages[0], {"role": "user", "content": "another query"}, *pair.rejected.messages[2:]])
    mismatched = dataclasses.replace(pair, rejected=other_query)
    assert PairTokenizer(tokenizer, 100_000)(mismatched) == "prompt_mismatch"
    assert PairTokenizer(tokenizer, 64)(pair) == "prompt_over_max_length"


def _previous_stage(tiny_model_dir: Path, out: Path) -> Path:
    """A previous stage's result: a LoRA adapter whose merged weights differ from its base model's."""
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    adapter = get_peft_model(base, LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False))
    adapter.save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(out)
    return out


def test_full_fine_tuning_scores_exactly_the_assistant_tokens_against_its_starting_weights(
        pair_dump: Path, tiny_model_dir: Path, tmp_path: Path) -> None:
    """From a previous stage's adapter (merged on load): every weight trains, the reference is the merged
    model (not the base model the adapter names), and the log-probability DPO takes for a side is the sum
    over its assistant tokens only, tool results left out."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    pair = select_pairs(collect_candidates([pair_dump], _config()).graded, _config().data).pairs[0]
    whole = PairTokenizer(tokenizer, max_length=100_000)(pair)
    assert isinstance(whole, TokenizedPair)
    # the first tool result starts within the prompt and the first 230 tokens of each side
    config = _config(_previous_stage(tiny_model_dir, tmp_path / "previous"),
                     max_length=len(whole.prompt_ids) + 230)
    config = config.model_copy(update={"lora": config.lora.model_copy(update={"enabled": False})})
    model, tokenizer = stage.load_stage_model(config, tmp_path)
    pairs = select_pairs(collect_candidates([pair_dump], config).graded, config.data).pairs
    data = build_preference_dataset(tokenizer, pairs[:1], config.max_length)
    trainer = dpo_trainer(config, model, tokenizer, data.dataset, tmp_path / "run")
    batch = next(iter(trainer.get_train_dataloader()))
    first = data.dataset[0]
    prompt_length, chosen_length = len(first["prompt_ids"]), len(first["chosen_ids"])
    assert batch["completion_mask"][0, :prompt_length + chosen_length].tolist() == \
        [0] * prompt_length + first["chosen_mask"]
    trainer.model.train()
    loss = trainer.compute_loss(trainer.model, batch)
    assert loss.item() == pytest.approx(math.log(2), abs=1e-6)  # policy and reference agree at the start
    loss.backward()
    weight = trainer.model.get_parameter("model.layers.0.self_attn.q_proj.weight")
    assert weight.grad is not None and weight.grad.abs().sum() > 0
    trainer.log({})
    logged = trainer.state.log_history[-1]["logps/chosen"]
    ids = batch["input_ids"][:1]
    with torch.no_grad():
        logits = trainer.model(input_ids=ids, attention_mask=batch["attention_mask"][:1]).logits
    per_token = torch.log_softmax(logits[0, :-1].float(), dim=-1).gather(1, ids[0, 1:, None])[:, 0]
    assistant = batch["completion_mask"][0, 1:].bool()
    whole_completion = torch.zeros_like(assistant)
    whole_completion[prompt_length - 1:prompt_length - 1 + chosen_length] = True
    assert logged == pytest.approx(per_token[assistant].sum().item(), rel=1e-4)
    assert abs(logged - per_token[whole_completion].sum().item()) > 100  # tool results would weigh in


def _steps(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in history if "loss" in entry]


def test_lora_dpo_trains_checkpoints_resumes_and_reloads(pair_dump: Path, tiny_model_dir: Path,
                                                        tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_dpo(_config(tiny_model_dir, trainer={"max_steps": 1}), [pair_dump], out)
    assert result.stage == "dpo" and result.global_step == 1 and result.resumed_from is None
    assert result.train_examples == result.extra["pairs"] == len(_pairs([pair_dump], _config()))
    assert result.extra["truncated_pairs"] == result.extra["pairs"]  # 640 tokens: every side is cut
    (first,) = _steps(result.log_history)
    # the adapter starts at zero, so the policy is the reference (the adapter disabled): loss ln 2
    assert first["loss"] == pytest.approx(math.log(2), abs=1e-6) and first["grad_norm"] > 0
    assert first["rewards/chosen"] == first["rewards/rejected"] == first["rewards/margins"] == 0
    assert math.isfinite(first["logps/chosen"]) and math.isfinite(first["logps/rejected"])
    assert (out / "checkpoint-1").is_dir() and (result.final_dir / "adapter_config.json").exists()
    model = AutoPeftModelForCausalLM.from_pretrained(result.final_dir)
    ids = AutoTokenizer.from_pretrained(result.final_dir)("<|im_start|>assistant\n<think>",
                                                          return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    assert logits.shape == (1, ids.shape[1], 151936) and torch.isfinite(logits).all()
    assert any(p.abs().sum() > 0 for n, p in model.named_parameters() if "lora_B" in n)
    # the shipped tiny config trains 2 steps: the run continues from checkpoint-1 with step 2 only
    resumed = run_dpo(_config(tiny_model_dir), [pair_dump], out)
    assert resumed.resumed_from == out / "checkpoint-1" and resumed.global_step == 2
    steps = _steps(resumed.log_history)
    assert [s["step"] for s in steps] == [1, 2]  # step 1 comes from the checkpoint's state
    second = steps[1]
    assert math.isfinite(second["loss"]) and second["grad_norm"] > 0
    assert second["rewards/chosen"] != 0 and second["rewards/rejected"] != 0  # the policy left the reference
    assert {p.name for p in out.glob("checkpoint-*")} == {"checkpoint-1", "checkpoint-2"}


def test_without_a_pair_the_stage_refuses_and_says_why(tiny_dump: Path, pair_dump: Path,
                                                       tmp_path: Path) -> None:
    """Refusals come before any model is loaded (``model`` does not even exist here)."""
    missing_model = tmp_path / "no-model"
    # one ReAct (agentic) and one sub-task agent per problem: never two agentic attempts of one problem
    with pytest.raises(stage.NothingToTrain, match="no problem has both a successful and a failed attempt"):
        run_dpo(_config(missing_model), [tiny_dump], tmp_path / "a")
    only_sub_task_failures = _config(missing_model, data=PairFilter(rejected_labels=frozenset({"sub_task"})))
    with pytest.raises(stage.NothingToTrain, match="no failed attempt is eligible as rejected"):
        run_dpo(only_sub_task_failures, [pair_dump], tmp_path / "b")
    every_cluster = tmp_path / "held_out.txt"
    every_cluster.write_text("".join(f"cluster-{i:05d}\n" for i in range(4)), encoding="utf-8")
    with pytest.raises(stage.NothingToTrain, match="held_out_cluster"):
        run_dpo(_config(missing_model, held_out_clusters_file=every_cluster), [pair_dump], tmp_path / "c")
    with pytest.raises(FileNotFoundError, match="rollouts file"):
        run_dpo(_config(missing_model, rollouts=[tmp_path / "absent.jsonl"]), [pair_dump], tmp_path / "d")


def test_pairs_whose_sides_have_no_assistant_token_within_max_length_are_refused(
        pair_dump: Path, tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    pairs: list[PreferencePair] = select_pairs(collect_candidates([pair_dump], _config()).graded,
                                               _config().data).pairs
    prompt = len(render_messages(tokenizer, pairs[0].chosen.messages[:2], pairs[0].chosen.tools).input_ids)
    # room for the assistant header only: no token the model generates is left on either side
    with pytest.raises(stage.NothingToTrain, match="no_assistant_tokens_within_max_length"):
        build_preference_dataset(tokenizer, pairs[:1], prompt + 3)
