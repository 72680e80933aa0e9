"""An OpenAI-compatible ``/v1/chat/completions`` server over a local Hugging Face causal LM (CPU or GPU).

Production serves checkpoints with vLLM (``--enable-auto-tool-choice --tool-call-parser hermes
--reasoning-parser qwen3``); this is the same interface over transformers' ``generate``, so the verified
proxy's upstream can be either and the evaluation runs the same on a laptop. Messages are rendered with the
tokenizer's chat template (tools included when the request has them; an assistant message's ``reasoning``
reaches the template as ``reasoning_content``, as vLLM hands it on). A request without ``tools`` gets the
generated text as ``content``, tags left in (the ReAct agent parses tagged text itself); a request with
``tools`` gets what vLLM's parsers make of it (:func:`parse_generated`).

One model, one ``generate`` call at a time; requests that arrive while one runs are batched
(:class:`_Batcher`): up to ``max_batch`` of them with the same sampling settings and no ``seed`` go through
one left-padded ``generate``, each cut at its own ``max_tokens`` and first stop token. A decode step reads
every weight once whatever the batch, so on CPU concurrent agents get several times the tokens per second
of one (``benchmarks/real_model/serving.py``). Agents answered together send their next turn moments
apart: after a batch of several requests the next one waits up to ``gather_s`` for them, so they stay
together; so does the first request after the model sat idle (agents starting together). A lone client
waits only then. A request with a ``seed`` runs alone, so the seed repeats its sample. Generation runs in
bfloat16 on a CPU that computes it natively (:func:`serving_dtype`) and on one intra-op thread
(``ServingConfig.threads``).
"""

from __future__ import annotations

import json
import os
import queue
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
from trajectories.training.serving.defaults import MAX_TOKENS
from trajectories.training.serving.devices import cpu_has_bf16

log = structlog.get_logger(__name__)


class ServingConfig(BaseModel):
    """How the server samples; ``temperature`` overrides every request's (pass@k needs k different
    samples, and the reference ReAct agent always asks for temperature 0)."""

    model_config = ConfigDict(frozen=True)

    served_name: str = Field(min_length=1, description="The `model` name clients must ask for")
    temperature: float | None = Field(default=None, ge=0, description="Forced temperature, if set")
    max_tokens_cap: int = Field(default=MAX_TOKENS, ge=1, description=(
        "Hard cap on generated tokens per call, and what a request that names no max_tokens gets"))
    max_batch: int = Field(default=4, ge=1, description=(
        "Concurrent requests generated together in one batch (1: one at a time)"))
    gather_s: float = Field(default=0.5, ge=0, description=(
        "After a batch of several requests, how long the next batch waits for more (from the end of the "
        "last one)"))
    threads: int = Field(default_factory=lambda: int(os.environ.get("ARENA_SERVING_THREADS", "1")), ge=0,
                         description=(
        "torch intra-op threads while generating (0: torch's default), set around each generate call and "
        "restored after. One thread, because two on a 2-core machine shared with the sandboxed agents, the "
        "proxy and the scorer stall on each other (benchmarks/real_model/serving.py); "
        "ARENA_SERVING_THREADS overrides"))


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


def serving_dtype(model: PreTrainedModel) -> torch.dtype:
    """The dtype a model is served in: bfloat16 on a CPU that computes it natively (a float32 checkpoint's
    prompt is read about 5 times faster there, each new token about 1.3 times), else the checkpoint's own;
    ``ARENA_SERVING_DTYPE`` (``float32``, ``bfloat16``, ...) overrides."""
    forced = os.environ.get("ARENA_SERVING_DTYPE")
    if forced:
        chosen = getattr(torch, forced, None)
        if not isinstance(chosen, torch.dtype):
            raise ValueError(f"ARENA_SERVING_DTYPE={forced!r} is not a torch dtype")
        return chosen
    on_cpu = next(model.parameters()).device.type == "cpu"
    if on_cpu and model.dtype == torch.float32 and cpu_has_bf16():
        return torch.bfloat16
    return model.dtype


@dataclass
class LocalModel:
    """A loaded model and tokenizer; a directory holding a PEFT adapter is loaded and merged."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase

    @classmethod
    def load(cls, path: Path, dtype: torch.dtype | None = None) -> LocalModel:
        """``path`` loaded for inference in ``dtype`` (default :func:`serving_dtype`)."""
        if not (path / "config.json").exists() and not (path / ADAPTER_CONFIG).exists():
            raise FileNotFoundError(f"{path} holds no config.json or {ADAPTER_CONFIG}: pass a saved model "
                                    "directory (e.g. a training run's OUT/final)")
        model, tokenizer = load_causal_lm(path)
        chosen = serving_dtype(model) if dtype is None else dtype
        if chosen != model.dtype:
            model.to(chosen)  # type: ignore[arg-type]
        model.eval()  # type: ignore[no-untyped-call]
        log.info("serving.model_loaded", path=str(path), parameters=model.num_parameters(),
                 dtype=str(chosen).removeprefix("torch."))
        return cls(model=model, tokenizer=tokenizer)

    @property
    def context_length(self) -> int:
        return int(getattr(self.model.config, "max_position_embeddings", 4096))

    @property
    def stop_ids(self) -> frozenset[int]:
        """The tokens generation stops on: the generation config's ``eos_token_id`` (one or a list, e.g.
        Gemma's ``<end_of_turn>`` and ``<eos>``) and the tokenizer's ``eos_token_id``."""
        configured = getattr(self.model.generation_config, "eos_token_id", None)
        ids = configured if isinstance(configured, list) else [configured]
        return frozenset(int(i) for i in [*ids, self.tokenizer.eos_token_id] if i is not None)


@dataclass
class _Job:
    """One request's generation: its prompt, how many tokens at most, how to sample; ``output`` is set
    (the generated ids, cut after the first stop token) before ``done``."""

    prompt: list[int]
    new_tokens: int
    sampling: tuple[tuple[str, Any], ...]
    seed: int | None
    queued_at: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    output: list[int] | None = None
    batch: int = 0
    """How many requests were generated together with this one (itself included)."""
    error: BaseException | None = None


class _Batcher:
    """Runs every generation on one thread; jobs queued while a batch runs form the next batch (same
    sampling settings, no seed, at most ``max_batch``), left-padded into one ``generate`` call; after a
    batch of several, or when the first job found the model idle for ``COLD_S``, jobs arriving within
    ``gather_s`` join too. The thread starts with the first job and ends after ``IDLE_S`` without one (a
    server that stops leaves none)."""

    IDLE_S = 30.0
    COLD_S = 5.0

    def __init__(self, local: LocalModel, max_batch: int, threads: int = 0, gather_s: float = 0.0) -> None:
        self._local = local
        self._max_batch = max_batch
        self._threads = threads
        self._gather_s = gather_s
        self._last_size, self._last_end = 0, 0.0
        self._queue: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._held: list[_Job] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def generate(self, job: _Job) -> list[int]:
        with self._lock:
            self._queue.put(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="hf-server-generate", daemon=True)
                self._thread.start()
        job.done.wait()
        if job.error is not None:
            raise job.error
        assert job.output is not None
        return job.output

    def _first(self) -> _Job | None:
        if self._held:
            return self._held.pop(0)
        try:
            return self._queue.get(timeout=self.IDLE_S)
        except queue.Empty:
            with self._lock:
                if self._queue.empty():
                    self._thread = None
                    return None
            return self._queue.get()

    def _next_batch(self) -> list[_Job] | None:
        first = self._first()
        if first is None:
            return None
        batch = [first]
        if first.seed is not None:
            return batch
        waiting, self._held = self._held, []
        cold = first.queued_at - self._last_end > self.COLD_S
        gather = self._gather_s if self._last_size > 1 or cold else 0.0
        deadline = max(first.queued_at, self._last_end) + gather
        while True:
            for job in waiting + self._drain():
                if len(batch) < self._max_batch and job.seed is None and job.sampling == first.sampling:
                    batch.append(job)
                else:
                    self._held.append(job)
            waiting = []
            left = deadline - time.monotonic()
            if len(batch) >= self._max_batch or self._held or left <= 0:
                return batch
            try:  # agents that were answered together come back within moments of each other
                waiting = [self._queue.get(timeout=left)]
            except queue.Empty:
                return batch

    def _drain(self) -> list[_Job]:
        jobs: list[_Job] = []
        while True:
            try:
                jobs.append(self._queue.get_nowait())
            except queue.Empty:
                return jobs

    def _run(self) -> None:
        while (batch := self._next_batch()) is not None:
            try:
                outputs = self._generate(batch)
            except BaseException as exc:  # the request fails, the server goes on
                for job in batch:
                    job.error = exc
                    job.done.set()
                continue
            self._last_size, self._last_end = len(batch), time.monotonic()
            for job, output in zip(batch, outputs, strict=True):
                job.output, job.batch = output, len(batch)
                job.done.set()

    def _generate(self, batch: list[_Job]) -> list[list[int]]:
        tokenizer, stops = self._local.tokenizer, self._local.stop_ids
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(stops)
        width = max(len(job.prompt) for job in batch)
        input_ids = torch.tensor([[pad] * (width - len(job.prompt)) + job.prompt for job in batch])
        attention_mask = torch.tensor([[0] * (width - len(job.prompt)) + [1] * len(job.prompt)
                                       for job in batch])
        if batch[0].seed is not None:
            torch.manual_seed(batch[0].seed)
        previous = torch.get_num_threads()
        if self._threads and self._threads != previous:
            torch.set_num_threads(self._threads)
        try:
            with torch.inference_mode():
                output = self._local.model.generate(  # type: ignore[operator]
                    input_ids=input_ids, attention_mask=attention_mask,
                    max_new_tokens=max(job.new_tokens for job in batch), top_k=None, pad_token_id=pad,
                    **dict(batch[0].sampling))
        finally:
            if torch.get_num_threads() != previous:
                torch.set_num_threads(previous)
        results = []
        for row, job in zip(output[:, width:].tolist(), batch, strict=True):
            row = row[:job.new_tokens]
            end = next((n for n, token in enumerate(row) if token in stops), None)
            results.append(row if end is None else row[:end + 1])
        return results


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
    batcher = _Batcher(local, config.max_batch, config.threads, config.gather_s)

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
        wanted = request.max_completion_tokens or request.max_tokens or config.max_tokens_cap
        room = local.context_length - prompt_tokens
        if room < 1:
            return _error(400, f"the prompt is {prompt_tokens} tokens; the model's context is "
                               f"{local.context_length}")
        new_tokens = min(wanted, config.max_tokens_cap, room)
        temperature = request.temperature if config.temperature is None else config.temperature
        sampling: dict[str, Any] = ({"do_sample": True, "temperature": temperature, "top_p": request.top_p}
                                    if temperature > 0 else {"do_sample": False})
        started = time.perf_counter()
        job = _Job(prompt=input_ids[0].tolist(), new_tokens=new_tokens,
                   sampling=tuple(sorted(sampling.items())), seed=request.seed)
        generated = batcher.generate(job)
        finished = bool(generated) and generated[-1] in local.stop_ids
        text = str(local.tokenizer.decode(generated, skip_special_tokens=True))
        message, finish_reason = _message(text, bool(request.tools), finished)
        log.info("serving.completion", prompt_tokens=prompt_tokens, completion_tokens=len(generated),
                 temperature=temperature, batch=job.batch, seconds=round(time.perf_counter() - started, 3))
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": config.served_name,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(generated),
                      "total_tokens": prompt_tokens + len(generated)},
        }

    return app
