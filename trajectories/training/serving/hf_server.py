"""An OpenAI-compatible ``/v1/chat/completions`` server over a local Hugging Face causal LM (CPU or GPU).

Production serves checkpoints with vLLM (``--enable-auto-tool-choice --tool-call-parser hermes
--reasoning-parser qwen3``); this is the same interface over transformers' ``generate``, so the verified
proxy's upstream can be either and the evaluation runs the same on a laptop. Messages are rendered with the
tokenizer's chat template (tools included when the request has them; an assistant message's ``reasoning``
reaches the template as ``reasoning_content``, as vLLM hands it on). A request without ``tools`` gets the
generated text as ``content``, tags left in (the ReAct agent parses tagged text itself); a request with
``tools`` gets what vLLM's parsers make of it (:func:`parse_generated`). One model, one generation at a
time (a lock): CPU inference is not concurrent.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
import torch
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from trajectories.training.serving.checkpoints import ADAPTER_CONFIG, load_causal_lm

log = structlog.get_logger(__name__)


class ServingConfig(BaseModel):
    """How the server samples; ``temperature`` overrides every request's (pass@k needs k different
    samples, and the reference ReAct agent always asks for temperature 0)."""

    model_config = ConfigDict(frozen=True)

    served_name: str = Field(min_length=1, description="The `model` name clients must ask for")
    temperature: float | None = Field(default=None, ge=0, description="Forced temperature, if set")
    default_max_tokens: int = Field(default=512, ge=1)
    max_tokens_cap: int = Field(default=4096, ge=1, description="Hard cap on generated tokens per call")


class ChatRequest(BaseModel):
    """The chat-completions fields this server honours; others (``stop``, ``logprobs``...) are ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    temperature: float = Field(default=1.0, ge=0, le=2)
    top_p: float = Field(default=1.0, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    stream: bool = False
    n: int = Field(default=1, ge=1, le=1)


@dataclass
class LocalModel:
    """A loaded model and tokenizer; a directory holding a PEFT adapter is loaded and merged."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase

    @classmethod
    def load(cls, path: Path) -> LocalModel:
        if not (path / "config.json").exists() and not (path / ADAPTER_CONFIG).exists():
            raise FileNotFoundError(f"{path} holds no config.json or {ADAPTER_CONFIG}: pass a saved model "
                                    "directory (e.g. a training run's OUT/final)")
        model, tokenizer = load_causal_lm(path)
        model.eval()  # type: ignore[no-untyped-call]
        log.info("serving.model_loaded", path=str(path), parameters=model.num_parameters())
        return cls(model=model, tokenizer=tokenizer)

    @property
    def context_length(self) -> int:
        return int(getattr(self.model.config, "max_position_embeddings", 4096))


_THINK_START, _THINK_END = "<think>", "</think>"
_TOOL_CALL_START = "<tool_call>"
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)
"""A closed block, or an unclosed last one running to the end (vLLM's hermes parser reads both)."""


@dataclass(frozen=True)
class GeneratedMessage:
    """The assistant message of a tool-calling request, split out of the generated text."""

    content: str | None
    reasoning_content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """``{"id", "type": "function", "function": {"name", "arguments": "<json>"}}`` each."""


def _split_reasoning(text: str) -> tuple[str, str | None]:
    """vLLM's qwen3 reasoning parser: the text before ``</think>`` (a leading ``<think>`` dropped) is
    reasoning, the rest content; without ``</think>`` the model never finished thinking, so it is all
    reasoning."""
    start, found, rest = text.partition(_THINK_START)
    body = rest if found else start
    if _THINK_END not in body:
        return body, None
    reasoning, _, content = body.partition(_THINK_END)
    return reasoning, content or None


def _tool_call(block: Any) -> dict[str, Any]:
    if not isinstance(block, dict) or not isinstance(block.get("name"), str) or "arguments" not in block:
        raise ValueError("a tool call must be a {\"name\": str, \"arguments\": ...} object")
    return {"id": f"chatcmpl-tool-{uuid.uuid4().hex}", "type": "function", "function": {
        "name": block["name"], "arguments": json.dumps(block["arguments"], ensure_ascii=False)}}


def _extract_tool_calls(content: str) -> tuple[list[dict[str, Any]], str | None]:
    """vLLM's hermes parser: every ``<tool_call>`` block must hold ``{"name": str, "arguments": ...}``
    JSON, else nothing is a call and the whole text stays content; the content is what precedes the
    first block."""
    if _TOOL_CALL_START not in content:
        return [], content
    try:
        calls = [_tool_call(json.loads(closed or unclosed))
                 for closed, unclosed in _TOOL_CALL.findall(content)]
    except (ValueError, RecursionError):  # json's errors are ValueErrors too
        return [], content
    return calls, content[:content.find(_TOOL_CALL_START)] or None


def parse_generated(text: str) -> GeneratedMessage:
    """What vLLM with ``--reasoning-parser qwen3 --tool-call-parser hermes`` answers for ``text``, the
    generated completion of a request with ``tools`` (whitespace kept as generated, as vLLM does)."""
    reasoning, content = _split_reasoning(text)
    calls, content = _extract_tool_calls(content) if content is not None else ([], None)
    return GeneratedMessage(content=content, reasoning_content=reasoning, tool_calls=calls)


def _template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as vLLM gives them to the chat template: an assistant message's ``reasoning`` (the
    field recent vLLM reads) as ``reasoning_content`` (the field Qwen3's template reads)."""
    return [{**m, "reasoning_content": m["reasoning"]}
            if m.get("role") == "assistant" and isinstance(m.get("reasoning"), str) else m for m in messages]


def _message(text: str, tools: bool, finished: bool) -> tuple[dict[str, Any], str]:
    """The assistant message and finish reason of one completion."""
    finish = "stop" if finished else "length"
    if not tools:
        return {"role": "assistant", "content": text}, finish
    parsed = parse_generated(text)
    message: dict[str, Any] = {"role": "assistant", "content": parsed.content,
                               "reasoning_content": parsed.reasoning_content}
    if parsed.tool_calls:
        message["tool_calls"] = parsed.tool_calls
        finish = "tool_calls"
    return message, finish


def _error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse(status_code=status,
                        content={"error": {"message": message, "type": kind, "code": status}})


def create_app(local: LocalModel, config: ServingConfig) -> FastAPI:
    """The FastAPI app: ``GET /v1/models`` and ``POST /v1/chat/completions``."""
    app = FastAPI(title="local chat completions")
    lock = threading.Lock()

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        served = {"id": config.served_name, "object": "model", "owned_by": "local"}
        return {"object": "list", "data": [served]}

    @app.post("/v1/chat/completions", response_model=None)
    def chat(request: ChatRequest) -> dict[str, Any] | JSONResponse:
        if request.model is not None and request.model != config.served_name:
            return _error(404, f"model {request.model!r} is not served here; this server has "
                               f"{config.served_name!r}", "not_found_error")
        if request.stream:
            return _error(400, "streaming is not supported")
        # the template accepts schemas or Python functions; requests only ever carry schemas
        tools: list[dict[Any, Any] | Callable[..., Any]] | None = (
            None if request.tools is None else list(request.tools))
        try:
            prompt: Any = local.tokenizer.apply_chat_template(
                _template_messages(request.messages), tools=tools, add_generation_prompt=True, tokenize=True,
                return_dict=True, return_tensors="pt")
        except Exception as exc:  # a malformed conversation from an untrusted agent must not kill the server
            return _error(400, "cannot render the messages with the chat template: "
                               f"{type(exc).__name__}: {exc}")
        input_ids = prompt["input_ids"]
        prompt_tokens = int(input_ids.shape[1])
        wanted = request.max_completion_tokens or request.max_tokens or config.default_max_tokens
        room = local.context_length - prompt_tokens
        if room < 1:
            return _error(400, f"the prompt is {prompt_tokens} tokens; the model's context is "
                               f"{local.context_length}")
        new_tokens = min(wanted, config.max_tokens_cap, room)
        temperature = request.temperature if config.temperature is None else config.temperature
        sampling: dict[str, Any] = ({"do_sample": True, "temperature": temperature, "top_p": request.top_p}
                                    if temperature > 0 else {"do_sample": False})
        with lock:
            if request.seed is not None:
                torch.manual_seed(request.seed)
            started = time.perf_counter()
            with torch.inference_mode():
                output = local.model.generate(  # type: ignore[operator]
                    input_ids=input_ids, attention_mask=prompt["attention_mask"], max_new_tokens=new_tokens,
                    top_k=None, pad_token_id=local.tokenizer.pad_token_id, **sampling)
        generated = output[0, prompt_tokens:].tolist()
        eos = local.tokenizer.eos_token_id
        finished = eos is not None and eos in generated
        text = str(local.tokenizer.decode(generated, skip_special_tokens=True))
        message, finish_reason = _message(text, bool(request.tools), finished)
        log.info("serving.completion", prompt_tokens=prompt_tokens, completion_tokens=len(generated),
                 temperature=temperature, seconds=round(time.perf_counter() - started, 3))
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": config.served_name,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(generated),
                      "total_tokens": prompt_tokens + len(generated)},
        }

    return app
