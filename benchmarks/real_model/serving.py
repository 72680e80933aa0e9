"""Generation throughput of the real base model (Gemma 3 270M, converted) on CPU, raw and through the server.

    python -m benchmarks.real_model.serving --model DIR [--convert] [--new-tokens 64] [--concurrency 4]
        [--requests 8] [--dtypes float32,bfloat16] [--threads 1] [--no-server]

``DIR`` is a checkpoint written by ``worker base-model gemma3-270m --out DIR`` (``--convert`` writes it
first when it is missing; needs ``pip install '.[real-model]'``). The prompt is the tool-calling agent's
first request (``SYSTEM_PROMPT``, the four ``TOOL_SCHEMAS`` and a query, rendered with the checkpoint's
chat template), the prompt every held-out attempt starts with.

- ``load_s``: ``LocalModel.load(DIR)`` (what the server does at start);
- per dtype (``--dtypes``) and batch size (1 and ``--concurrency``): ``model.generate`` of exactly
  ``--new-tokens`` greedy tokens (KV cache on, ``torch.inference_mode``): ``prefill_s`` (one new token),
  ``decode_tokens_per_s`` (the tokens after the first, over the time after prefill) and ``tokens_per_s``
  (all generated tokens of the batch over the whole call);
- ``server``: the OpenAI-compatible server (``trajectories.training.serving.hf_server``) in the dtype it
  chose (``serving_dtype``: bfloat16 on a CPU with AVX512-BF16 or AMX; ``ARENA_SERVING_DTYPE``
  overrides), batching up to ``--concurrency`` requests, answering chat completions with ``tools``
  (temperature 1, at most ``--new-tokens`` each): ``--requests`` / 2 from one client, then ``--requests``
  from ``--concurrency`` clients at once; completion tokens per wall second, and the batch sizes the
  server formed.

The machine is shared: ``matmul_gflops_1_thread`` (a fixed float32 matmul on one thread, best of 5),
``load_1m`` and ``steal_share`` say how fast it was. The last line printed is one JSON object with
``tokens_per_s_batch_1`` and ``tokens_per_s_concurrent`` (the server's), ``concurrency``, ``load_s``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import orjson
import torch

from shoppingbench.agent_sdk import SYSTEM_PROMPT, TOOL_SCHEMAS
from shoppingbench.tools.serving import running_server
from trajectories.training.serving.hf_server import LocalModel, ServingConfig, create_app

QUERY = ("I need a stainless steel water bottle under 20 dollars, 750 ml or more, from a shop that ships "
         "for free; show me the best one.")


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _cpu_ticks() -> tuple[int, int] | None:
    """The machine's (stolen, all) CPU ticks so far, or None off Linux."""
    try:
        fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def matmul_gflops(size: int = 512, repeats: int = 5) -> float:
    """Float32 matmul GFLOP/s on one thread, best of ``repeats``: the machine's speed at this work."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = torch.randn(size, size), torch.randn(size, size)
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(10):
                torch.mm(a, b)
            best = min(best, time.perf_counter() - start)
    finally:
        torch.set_num_threads(threads)
    return round(10 * 2 * size ** 3 / best / 1e9, 1)


def messages() -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": QUERY}]


def prompt_ids(local: LocalModel) -> torch.Tensor:
    tools: Any = list(TOOL_SCHEMAS)
    rendered: Any = local.tokenizer.apply_chat_template(messages(), tools=tools, add_generation_prompt=True,
                                                        tokenize=True, return_dict=True, return_tensors="pt")
    ids: torch.Tensor = rendered["input_ids"]
    return ids


def generate_rate(local: LocalModel, ids: torch.Tensor, new_tokens: int, batch: int) -> dict[str, Any]:
    """Exactly ``new_tokens`` greedy tokens for ``batch`` copies of the prompt."""
    inputs = ids.repeat(batch, 1)
    mask = torch.ones_like(inputs)

    def run(tokens: int) -> float:
        start = time.perf_counter()
        with torch.inference_mode():
            local.model.generate(  # type: ignore[operator]
                input_ids=inputs, attention_mask=mask, max_new_tokens=tokens, min_new_tokens=tokens,
                do_sample=False, top_k=None, pad_token_id=local.tokenizer.pad_token_id)
        return time.perf_counter() - start

    prefill = run(1)
    total = run(new_tokens)
    decode = max(total - prefill, 1e-9)
    return {"batch": batch, "prompt_tokens": int(ids.shape[1]), "new_tokens": new_tokens,
            "prefill_s": round(prefill, 2), "total_s": round(total, 2),
            "decode_tokens_per_s": round(batch * (new_tokens - 1) / decode, 2),
            "tokens_per_s": round(batch * new_tokens / total, 2)}


def served_rate(url: str, *, clients: int, requests: int, new_tokens: int) -> dict[str, Any]:
    """``requests`` tool-calling chat completions from ``clients`` concurrent clients."""
    body = {"model": "real", "messages": messages(), "tools": TOOL_SCHEMAS, "max_tokens": new_tokens,
            "temperature": 1.0}

    def ask(_: int) -> int:
        answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=3600)
        answer.raise_for_status()
        return int(answer.json()["usage"]["completion_tokens"])

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        tokens = list(pool.map(ask, range(requests)))
    wall = time.perf_counter() - start
    return {"clients": clients, "requests": requests, "completion_tokens": sum(tokens),
            "wall_s": round(wall, 2), "tokens_per_s": round(sum(tokens) / wall, 2)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.real_model.serving",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="Converted checkpoint directory")
    parser.add_argument("--convert", action="store_true", help="Write --model first if it is missing")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--requests", type=int, default=8, help="Server requests per client count")
    parser.add_argument("--dtypes", default="float32,bfloat16", help="Raw generate in these dtypes")
    parser.add_argument("--threads", type=int, default=1, help=(
        "torch intra-op threads, raw and served (0: torch's default; the server's default is 1)"))
    parser.add_argument("--no-server", action="store_true", help="Raw generate only")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if not (args.model / "config.json").exists():
        if not args.convert:
            raise SystemExit(f"{args.model} holds no checkpoint: run `worker base-model gemma3-270m --out "
                             f"{args.model}` or pass --convert")
        from trajectories.training.dev.gemma import convert_gemma3_270m

        _say(f"converting into {args.model}: {convert_gemma3_270m(args.model)}")
    figures: dict[str, Any] = {"matmul_gflops_1_thread": matmul_gflops(), "threads": torch.get_num_threads()}
    ticks = _cpu_ticks()
    start = time.perf_counter()
    local = LocalModel.load(args.model)
    figures["load_s"] = round(time.perf_counter() - start, 2)
    figures["serving_dtype"] = str(next(local.model.parameters()).dtype).removeprefix("torch.")
    _say(f"loaded in {figures['load_s']} s ({figures['serving_dtype']})")
    ids = prompt_ids(local)
    raw: dict[str, list[dict[str, Any]]] = {}
    served_dtype = next(local.model.parameters()).dtype
    for name in [d for d in args.dtypes.split(",") if d]:
        local.model.to(getattr(torch, name))
        raw[name] = []
        for batch in sorted({1, args.concurrency}):
            row = generate_rate(local, ids, args.new_tokens, batch)
            raw[name].append(row)
            _say(f"  generate {name} batch {batch}: {row}")
    local.model.to(served_dtype)  # type: ignore[arg-type]
    figures["generate"] = raw
    if not args.no_server:
        batches: list[int] = []
        model: Any = local.model
        plain_generate = model.generate

        def counted(**kwargs: Any) -> Any:
            batches.append(int(kwargs["input_ids"].shape[0]))
            return plain_generate(**kwargs)

        model.generate = counted
        config = ServingConfig(served_name="real", max_tokens_cap=args.new_tokens, threads=args.threads,
                               max_batch=args.concurrency)
        with running_server(create_app(local, config)) as url:
            one = served_rate(url, clients=1, requests=max(2, args.requests // 2), new_tokens=args.new_tokens)
            _say(f"  server, 1 client: {one}")
            batches.clear()
            many = served_rate(url, clients=args.concurrency, requests=args.requests,
                               new_tokens=args.new_tokens)
            many["batches"] = list(batches)
            _say(f"  server, {args.concurrency} clients: {many}")
        figures["server"] = {"1": one, str(args.concurrency): many}
        figures["tokens_per_s_batch_1"] = one["tokens_per_s"]
        figures["tokens_per_s_concurrent"] = many["tokens_per_s"]
    figures["concurrency"] = args.concurrency
    figures["load_1m"] = round(os.getloadavg()[0], 2)
    if ticks is not None and (after := _cpu_ticks()) is not None and after[1] > ticks[1]:
        figures["steal_share"] = round((after[0] - ticks[0]) / (after[1] - ticks[1]), 3)
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
