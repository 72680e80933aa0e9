"""Stage 1 (SFT) timing with the tiny Qwen3 on CPU: dataset building and training throughput.

    python -m benchmarks.training --tiny [--problems 30] [--steps 8] [--max-length 768]

A sample dump (``trajectories.training.sample``: ReAct and sub-task agents on every problem) is
written, then timed phase by phase: ``select`` (reading the dump, filtering, building conversations),
``tokenize`` (chat template and assistant masks) and ``train`` (``run_sft`` with the tiny config and
LoRA: TRL steps, checkpoints, final save; it tokenizes again, so ``train`` includes that too). Every
phase reports wall seconds, this process's CPU seconds and the 1-minute load average. Tokens/s counts
the tokens TRL fed to the model (its ``num_tokens``) over the trainer's runtime. The last line printed
is one JSON object.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from shoppingbench.logs import configure_logging

TINY_CONFIG = Path(__file__).parents[1] / "trajectories" / "training" / "configs" / "sft_tiny.yaml"


@contextmanager
def _phase(name: str, results: dict[str, Any]) -> Iterator[None]:
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    results[name] = {"wall_s": round(time.perf_counter() - wall, 2),
                     "cpu_s": round(time.process_time() - cpu, 2), "load_1m": round(os.getloadavg()[0], 2)}
    print(f"{name:>9}: {results[name]}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", required=True,
                        help="Use the tiny CPU Qwen3 (the only mode here; GPUs run the worker itself)")
    parser.add_argument("--problems", type=int, default=30,
                        help="Problems in the sample dump (3 per cluster)")
    parser.add_argument("--steps", type=int, default=8, help="Optimizer steps")
    parser.add_argument("--max-length", type=int, default=768, help="Tokens per example")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    configure_logging()

    from transformers import AutoTokenizer

    from trajectories.training.conversations import select_conversations
    from trajectories.training.sample import write_sample_dump
    from trajectories.training.sft import SFTStageConfig, run_sft
    from trajectories.training.tiny import save_tiny_model
    from trajectories.training.tokens import build_dataset

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-training-") as scratch:
        root = Path(scratch)
        dump = write_sample_dump(root / "dump", problems=args.problems)
        model_dir = save_tiny_model(root / "model")
        config = SFTStageConfig.load(TINY_CONFIG)
        config = config.model_copy(update={
            "model": str(model_dir), "max_length": args.max_length,
            "trainer": {**config.trainer, "max_steps": args.steps, "save_steps": args.steps}})
        with _phase("select", results):
            selection = select_conversations([dump], config.data)
        with _phase("tokenize", results):
            dataset = build_dataset(AutoTokenizer.from_pretrained(model_dir), selection.conversations,
                                    config.max_length)
        with _phase("train", results):
            trained = run_sft(config, [dump], root / "run")
    final = trained.log_history[-1]
    tokens = max(entry.get("num_tokens", 0) for entry in trained.log_history)
    summary = {
        "conversations": len(selection.conversations), "examples": len(dataset), "steps": trained.global_step,
        "select_s": results["select"]["wall_s"], "tokenize_s": results["tokenize"]["wall_s"],
        "train_s": results["train"]["wall_s"], "train_runtime_s": round(final["train_runtime"], 2),
        "tokens": tokens, "tokens_per_s": round(tokens / final["train_runtime"], 1),
        "last_loss": next(e["loss"] for e in reversed(trained.log_history) if "loss" in e),
        "load_1m": results["train"]["load_1m"],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    print(orjson.dumps(summary).decode())


if __name__ == "__main__":
    main()
