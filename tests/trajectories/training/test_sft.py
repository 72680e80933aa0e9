"""Stage 1 SFT on CPU with the tiny Qwen3: a few real TRL steps, checkpoints, reload and resume."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
import trl.trainer.utils
from peft import AutoPeftModelForCausalLM
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl.trainer.utils import add_fused_lm_head

from trajectories.training.stages import stage
from trajectories.training.stages.sft import (
    SFTStageConfig,
    labelled_positions_only_on_cpu,
    run_sft,
    trainer_arguments,
)

TINY_CONFIG = Path(__file__).parents[3] / "trajectories" / "training" / "configs" / "sft_tiny.yaml"


def _config(model_dir: Path, **trainer: Any) -> SFTStageConfig:
    config = SFTStageConfig.load(TINY_CONFIG)
    return config.model_copy(update={"model": str(model_dir), "trainer": {**config.trainer, **trainer}})


def _losses_and_norms(history: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    steps = [entry for entry in history if "loss" in entry]
    return [entry["loss"] for entry in steps], [entry["grad_norm"] for entry in steps]


def test_the_shipped_configs_load_and_their_trainer_arguments_are_valid(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stage, "cpu_has_bf16", lambda: False)
    production = SFTStageConfig.load(TINY_CONFIG.with_name("sft.yaml"))
    assert production.model == "Qwen/Qwen3-4B" and production.lora.enabled
    assert production.data.labels == {"agentic"} and production.data.require_success
    arguments = trainer_arguments(production, tmp_path)
    assert arguments.gradient_accumulation_steps == 16 and arguments.max_length == 8192
    assert not arguments.bf16  # no GPU here, and a CPU without native bf16: the CPU overrides apply
    assert SFTStageConfig.load(TINY_CONFIG).model == "tiny"


def test_bf16_trains_on_a_cpu_only_where_it_computes_bf16_and_the_config_asks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    production = SFTStageConfig.load(TINY_CONFIG.with_name("sft.yaml"))
    assert production.trainer["bf16"]
    tiny = SFTStageConfig.load(TINY_CONFIG)
    monkeypatch.setattr(stage, "cpu_has_bf16", lambda: True)
    assert trainer_arguments(production, tmp_path).bf16 and not trainer_arguments(tiny, tmp_path).bf16
    monkeypatch.setattr(stage, "cpu_has_bf16", lambda: False)
    assert not trainer_arguments(production, tmp_path).bf16


def test_the_lm_head_projects_only_the_labelled_positions_on_cpu_and_the_loss_is_unchanged(
        tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    add_fused_lm_head(model)
    ids = torch.randint(0, model.config.vocab_size, (1, 48), generator=torch.Generator().manual_seed(0))
    labels = ids.clone()
    labels[:, :36] = -100  # the prompt: only the last 12 tokens (an assistant turn) carry labels
    rows: list[int] = []
    real = trl.trainer.utils._ChunkedLogProbFunction

    class Recorded:
        @staticmethod
        def apply(hidden: torch.Tensor, *rest: Any) -> Any:
            rows.append(hidden.shape[0])
            return real.apply(hidden, *rest)

    monkeypatch.setattr(trl.trainer.utils, "_ChunkedLogProbFunction", Recorded)
    with torch.no_grad():
        every = model(input_ids=ids, labels=labels, fused_lm_head=True).loss
        with labelled_positions_only_on_cpu():
            labelled = model(input_ids=ids, labels=labels, fused_lm_head=True).loss
        after = model(input_ids=ids, labels=labels, fused_lm_head=True).loss
    assert rows == [47, 12, 47]  # next-token positions: all of them, the 12 labelled ones, all again after
    assert torch.allclose(every, labelled, atol=1e-5) and torch.equal(every, after)


def test_lora_sft_trains_checkpoints_and_reloads(tiny_dump: Path, tiny_model_dir: Path,
                                                 tmp_path: Path) -> None:
    result = run_sft(_config(tiny_model_dir), [tiny_dump], tmp_path / "run")
    assert result.global_step == 4 and result.resumed_from is None and result.train_examples == 9
    losses, norms = _losses_and_norms(result.log_history)
    assert len(losses) == 4 and all(math.isfinite(loss) and loss > 0 for loss in losses)
    assert all(math.isfinite(norm) and norm > 0 for norm in norms)
    assert {p.name for p in (tmp_path / "run").glob("checkpoint-*")} == {"checkpoint-2", "checkpoint-4"}
    assert (result.final_dir / "adapter_config.json").exists()
    model = AutoPeftModelForCausalLM.from_pretrained(result.final_dir)
    tokenizer = AutoTokenizer.from_pretrained(result.final_dir)
    ids = tokenizer("<|im_start|>assistant\n<think>", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    assert logits.shape == (1, ids.shape[1], 151936) and torch.isfinite(logits).all()
    trained = [p for n, p in model.named_parameters() if "lora_B" in n]
    assert trained and any(p.abs().sum() > 0 for p in trained)  # LoRA B starts at zero: training moved it


def test_full_fine_tuning_changes_the_weights(tiny_dump: Path, tiny_model_dir: Path, tmp_path: Path) -> None:
    config = _config(tiny_model_dir, max_steps=2, save_steps=2)
    config = config.model_copy(update={"lora": config.lora.model_copy(update={"enabled": False})})
    result = run_sft(config, [tiny_dump], tmp_path / "full")
    before = AutoModelForCausalLM.from_pretrained(tiny_model_dir).state_dict()
    after = AutoModelForCausalLM.from_pretrained(result.final_dir).state_dict()
    assert before.keys() == after.keys()
    changed = [name for name in before if not torch.equal(before[name], after[name])]
    assert "model.layers.0.self_attn.q_proj.weight" in changed


def test_a_run_resumes_from_its_last_checkpoint(tiny_dump: Path, tiny_model_dir: Path,
                                                tmp_path: Path) -> None:
    out = tmp_path / "resumable"
    first = run_sft(_config(tiny_model_dir, max_steps=2), [tiny_dump], out)
    assert first.global_step == 2 and (out / "checkpoint-2").is_dir()
    second = run_sft(_config(tiny_model_dir, max_steps=3), [tiny_dump], out)
    assert second.resumed_from == out / "checkpoint-2" and second.global_step == 3
    logged_steps = [entry["step"] for entry in second.log_history if "loss" in entry]
    assert logged_steps == [1, 2, 3]  # steps 1-2 come from the checkpoint's state, 3 was trained now
    # without resume, a run starts over (resuming from checkpoint-3 would report step 3)
    fresh = run_sft(_config(tiny_model_dir, max_steps=1), [tiny_dump], out, resume=False)
    assert fresh.resumed_from is None and fresh.global_step == 1
