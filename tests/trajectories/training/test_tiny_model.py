"""The tiny Qwen3: the real Qwen3 vocabulary offline, loadable through the Auto classes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from trajectories.training.dev.tiny import QWEN3_VOCAB_SIZE


def test_the_tokenizer_has_qwen3_ids(tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert len(tokenizer) == 151669
    assert tokenizer("Hello world,")["input_ids"] == [9707, 1879, 11]
    assert tokenizer("12")["input_ids"] == [16, 17]  # Qwen splits numbers into single digits
    expected = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645, "<tool_call>": 151657,
                "</tool_call>": 151658, "<tool_response>": 151665, "</tool_response>": 151666,
                "<think>": 151667, "</think>": 151668}
    assert {token: tokenizer.convert_tokens_to_ids(token) for token in expected} == expected
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    text = "<think>\nok\n</think>\n\n<tool_call>\n{}\n</tool_call>"
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text


def test_the_chat_template_renders_tools_and_opens_the_assistant_turn(tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tools: list[Any] = [{"type": "function",
                         "function": {"name": "terminate", "parameters": {"type": "object"}}}]
    prompt: Any = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tools=tools,
                                                tokenize=False, add_generation_prompt=True)
    assert isinstance(prompt, str)
    assert '<tools>\n{"type": "function", "function": {"name": "terminate"' in prompt
    assert prompt.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


def test_the_model_loads_and_runs(tiny_model_dir: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert model.config.model_type == "qwen3" and model.config.vocab_size == QWEN3_VOCAB_SIZE
    assert sum(p.numel() for p in model.parameters()) < 12_000_000
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([[151644, 872, 198]])).logits
    assert logits.shape == (1, 3, QWEN3_VOCAB_SIZE) and torch.isfinite(logits).all()
