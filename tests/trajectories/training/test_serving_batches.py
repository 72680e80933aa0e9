"""The server batches requests that arrive while a generation runs, and each answer is what it would have
been alone; the serving dtype rule."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch

from shoppingbench.tools.serving import running_server
from trajectories.training.serving import hf_server
from trajectories.training.serving.hf_server import LocalModel, ServingConfig, create_app

MESSAGES = [{"role": "system", "content": "You are a shopping assistant."},
            {"role": "user", "content": "Find me a red kettle."}]


def _ask(url: str, content: str, max_tokens: int, **extra: Any) -> dict[str, Any]:
    body = {"messages": [MESSAGES[0], {"role": "user", "content": content}], "max_tokens": max_tokens,
            "temperature": 0, **extra}
    answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=120)
    assert answer.status_code == 200, answer.text
    reply: dict[str, Any] = answer.json()
    return reply


def test_requests_queued_behind_a_generation_run_as_one_batch(tiny_model_dir: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    local = LocalModel.load(tiny_model_dir, dtype=torch.float32)
    model: Any = local.model
    real_generate = model.generate
    gate, sizes = threading.Event(), []

    def gated(**kwargs: Any) -> Any:
        sizes.append(int(kwargs["input_ids"].shape[0]))
        if len(sizes) == 1:
            gate.wait(60)  # the first generation runs until the others are queued behind it
        return real_generate(**kwargs)

    monkeypatch.setattr(model, "generate", gated)
    queries = [("Find me a red kettle.", 4), ("A blue mug, please", 2), ("Cheapest toaster", 7),
               ("Show me shoes under 50 in size 42", 5)]
    with running_server(create_app(local, ServingConfig(served_name="tiny", max_batch=4))) as url:
        with ThreadPoolExecutor(max_workers=4) as pool:
            first = pool.submit(_ask, url, *queries[0])
            while not sizes:
                time.sleep(0.01)
            rest = [pool.submit(_ask, url, *query) for query in queries[1:]]
            time.sleep(1.0)  # the three requests reach the queue
            gate.set()
            batched = [first.result(), *(future.result() for future in rest)]
        alone = [_ask(url, *query) for query in queries]
    assert sizes[:2] == [1, 3] and sizes[2:] == [1, 1, 1, 1]
    for (_, cap), together, single in zip(queries, batched, alone, strict=True):
        assert together["choices"][0]["message"] == single["choices"][0]["message"]
        assert together["usage"] == single["usage"] and together["usage"]["completion_tokens"] <= cap


def test_a_seeded_request_is_never_batched(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = LocalModel.load(tiny_model_dir, dtype=torch.float32)
    model: Any = local.model
    real_generate, sizes = model.generate, []

    def counted(**kwargs: Any) -> Any:
        sizes.append(int(kwargs["input_ids"].shape[0]))
        time.sleep(0.3)
        return real_generate(**kwargs)

    monkeypatch.setattr(model, "generate", counted)
    with (running_server(create_app(local, ServingConfig(served_name="tiny"))) as url,
          ThreadPoolExecutor(max_workers=3) as pool):
        replies = list(pool.map(lambda n: _ask(url, "Find me a red kettle.", 4, temperature=1.0, seed=7),
                                range(3)))
    assert sizes == [1, 1, 1]
    assert len({r["choices"][0]["message"]["content"] for r in replies}) == 1  # the seed repeats the sample


def test_the_serving_dtype(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARENA_SERVING_DTYPE", raising=False)
    monkeypatch.setattr(hf_server, "cpu_has_bf16", lambda: True)
    assert LocalModel.load(tiny_model_dir).model.dtype == torch.bfloat16
    monkeypatch.setattr(hf_server, "cpu_has_bf16", lambda: False)
    assert LocalModel.load(tiny_model_dir).model.dtype == torch.float32
    monkeypatch.setenv("ARENA_SERVING_DTYPE", "bfloat16")
    assert LocalModel.load(tiny_model_dir).model.dtype == torch.bfloat16
    monkeypatch.setenv("ARENA_SERVING_DTYPE", "kettle")
    with pytest.raises(ValueError, match="ARENA_SERVING_DTYPE"):
        LocalModel.load(tiny_model_dir)
