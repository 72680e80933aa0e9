"""TEST DOUBLE of the ``vllm`` command line (vLLM needs a GPU; here it is not installed).

What it mimics of ``vllm serve`` (vLLM 0.31, the ``gpu`` extra's pin), as the training worker uses it:

- the command line: ``vllm serve MODEL`` (or ``--model MODEL``) with the flags the worker and its configs
  pass (``--served-model-name``, ``--host``, ``--port``, ``--enable-auto-tool-choice``,
  ``--tool-call-parser``, ``--reasoning-parser``, ``--max-model-len``, ``--gpu-memory-utilization``,
  ``--tensor-parallel-size``/``-tp``, ``--dtype``, ``--seed``, ``--max-num-seqs``); like vLLM's argparse
  it refuses an unknown flag (exit 2, ``unrecognized arguments``), and ``vllm --version`` prints a version;
- the OpenAI-compatible server: ``GET /v1/models``, ``POST /v1/chat/completions`` and ``GET /health``,
  served by the project's transformers server (:mod:`trajectories.training.serving.hf_server`), whose
  tool-call and reasoning parsing is vLLM's ``hermes`` and ``qwen3`` parsers' (the only ones this double
  accepts);
- vLLM's refusals: a request with ``tools`` (auto tool choice) to a server started without
  ``--enable-auto-tool-choice`` is a 400 with vLLM's message; a prompt over ``--max-model-len`` is a 400.

``FAKE_VLLM_ARGV`` names a file that receives the argv as JSON; ``FAKE_VLLM_FAIL=1`` makes it print an
error and exit 1 during startup, as vLLM does on a model it cannot load.

    python -m tests.fake_vllm serve MODEL --served-model-name NAME --host 127.0.0.1 --port 8000 ...
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import uvicorn
from fastapi import Request, Response
from fastapi.responses import JSONResponse

VERSION = "0.31.0"
AUTO_TOOL_CHOICE_ERROR = ('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
                          "to be set")


def parser() -> argparse.ArgumentParser:
    """The part of vLLM's ``serve`` command line the worker uses; anything else is refused, as vLLM does."""
    cli = argparse.ArgumentParser(prog="vllm")
    cli.add_argument("--version", action="version", version=VERSION)
    commands = cli.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", prog="vllm serve")
    serve.add_argument("model_tag", nargs="?")
    serve.add_argument("--model")
    serve.add_argument("--served-model-name", nargs="+")
    serve.add_argument("--host", default=None)
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--enable-auto-tool-choice", action="store_true")
    serve.add_argument("--tool-call-parser", choices=["hermes"])
    serve.add_argument("--reasoning-parser", choices=["qwen3"])
    serve.add_argument("--max-model-len", type=int)
    serve.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    serve.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    serve.add_argument("--dtype", default="auto", choices=["auto", "half", "float16", "bfloat16", "float",
                                                           "float32"])
    serve.add_argument("--seed", type=int)
    serve.add_argument("--max-num-seqs", type=int)
    return cli


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    model = args.model_tag or args.model
    if model is None:
        print("vllm serve: error: a model is required (positional or --model)", file=sys.stderr)
        return 2
    if record := os.environ.get("FAKE_VLLM_ARGV"):
        Path(record).write_text(json.dumps(argv), encoding="utf-8")
    if os.environ.get("FAKE_VLLM_FAIL") == "1":
        print(f"ValueError: cannot load {model}: unsupported architecture", file=sys.stderr)
        return 1
    if args.enable_auto_tool_choice and args.tool_call_parser is None:
        print("TypeError: --enable-auto-tool-choice requires --tool-call-parser", file=sys.stderr)
        return 1
    from trajectories.training.serving.hf_server import LocalModel, ServingConfig, create_app

    local = LocalModel.load(Path(model))
    if args.max_model_len is not None:
        local.model.config.max_position_embeddings = args.max_model_len
    name = (args.served_model_name or [model])[0]
    app = create_app(local, ServingConfig(served_name=name))

    @app.get("/health")
    def health() -> Response:
        return Response(status_code=200)

    @app.middleware("http")
    async def auto_tool_choice(request: Request, call_next: Callable[[Request], Awaitable[Response]]
                               ) -> Response:
        if request.url.path == "/v1/chat/completions" and not args.enable_auto_tool_choice:
            try:
                body = json.loads(await request.body() or b"{}")
            except json.JSONDecodeError:
                body = {}
            if isinstance(body, dict) and body.get("tools") and body.get("tool_choice", "auto") == "auto":
                return JSONResponse({"object": "error", "message": AUTO_TOOL_CHOICE_ERROR,
                                     "type": "BadRequestError", "param": None, "code": 400}, status_code=400)
        return await call_next(request)

    print(f"fake vllm {VERSION} serving {model} as {name} with {vars(args)}", flush=True)
    uvicorn.run(app, host=args.host or "0.0.0.0", port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
