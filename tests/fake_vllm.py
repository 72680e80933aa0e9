"""TEST DOUBLE of the ``vllm serve`` command (vLLM needs a GPU and is not installed here).

It accepts the part of vLLM's command line the training worker uses (``serve MODEL --served-model-name
NAME --host H --port P`` plus flags, which it records), and serves the model directory over the same
OpenAI-compatible protocol with the project's transformers server (:mod:`trajectories.training.serving`),
adding vLLM's ``GET /health``. ``FAKE_VLLM_ARGV`` names a file that receives the argv as JSON;
``FAKE_VLLM_FAIL=1`` makes it print an error and exit 1 during startup, as vLLM does on a bad model.

    python -m tests.fake_vllm serve MODEL --served-model-name NAME --host 127.0.0.1 --port 8000 ...
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import uvicorn


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="vllm")
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("model")
    parser.add_argument("--served-model-name", required=True)
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8000)
    known, flags = parser.parse_known_args(argv)
    if record := os.environ.get("FAKE_VLLM_ARGV"):
        Path(record).write_text(json.dumps(argv), encoding="utf-8")
    if os.environ.get("FAKE_VLLM_FAIL") == "1":
        print(f"ValueError: cannot load {known.model}: unsupported architecture", file=sys.stderr)
        return 1
    from trajectories.training.serving import LocalModel, ServingConfig, create_app

    app = create_app(LocalModel.load(Path(known.model)), ServingConfig(served_name=known.served_model_name))

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    print(f"fake vllm serving {known.model} as {known.served_model_name} with {flags}", flush=True)
    uvicorn.run(app, host=known.host, port=known.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
