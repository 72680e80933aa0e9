"""Does a day of the arena's judged trajectories lift a real pretrained model on held-out problems? (skeleton)

    python -m benchmarks.real_model --model DIR [--convert] [--out DIR] [--device cpu|cuda]
        [--day-problems 100] [--day-agents react,tool_calling] [--held-out-per-category 20]
        [--held-out-seed SEED] [-k 1] [--stages sft] [--sft-steps 200] [--max-length 4096]
        [--lora | --full] [--learning-rate 2e-4] [--max-tokens 512] [--workers 4]
        [--bootstrap 10000] [--seed 0] [--dry-run]

The plan, through the production path at every step:

1. **Training day**: the arena's reference agents (``--day-agents``) run on ``--day-problems`` problems per
   category of the sample world through the validator's sandbox, verified proxy, scorer, judge, structural
   filter and store, and the day is exported (``dump export``); SFT trains on its ``agentic`` successes.
2. **Held-out problems**: ``--held-out-per-category`` problems per category drawn with a private
   ``--held-out-seed``, none in a leak cluster of the training day.
3. **Stages**: the base model (``--model``, a ``worker base-model`` directory; ``--convert`` writes it) is
   evaluated, then each stage of ``--stages`` trains from the previous one and is evaluated the same way
   (``sft``; then ``rejection`` and ``dpo`` if asked): ``k`` samples per problem through the sandbox with the
   tool-calling agent, the model served by ``hf_server`` (``--device cpu``) or vLLM (``--device cuda``).

Per stage: pass@1 per category and overall with a 95% bootstrap interval over problems, pass@k for k > 1,
the format-error and hallucinated-id rates per step, tokens trained and tokens/s, minutes. At the top level
of the last line's JSON: ``base_pass_at_1``, ``sft_pass_at_1`` and ``sft_lift_low``, the lower end of the
95% paired bootstrap interval of the SFT model's pass@1 lift over the base (:func:`paired_lift`:
problems resampled with replacement, both models' results for a drawn problem taken together).

``--dry-run`` prints the plan (the sizes, the device's defaults where a flag is not given, and the stages)
as the last line and exits. The run itself is not implemented yet: without ``--dry-run`` the command exits
2 after printing the plan.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

STAGES = ("sft", "rejection", "dpo")
CPU_DEFAULTS: dict[str, Any] = {"day_problems": 100, "held_out_per_category": 20, "k": 1, "sft_steps": 200,
                                "max_tokens": 512, "workers": 4}
"""Sizes meant to finish in under 90 minutes on an idle 2-core machine."""
CUDA_DEFAULTS: dict[str, Any] = {"day_problems": 500, "held_out_per_category": 25, "k": 8, "sft_steps": 1000,
                                 "max_tokens": 4096, "workers": 16}
"""A whole day, 75 held-out problems and pass@8 on a GPU host."""


def paired_lift(base: Sequence[float], trained: Sequence[float], *, resamples: int = 10_000, seed: int = 0,
                level: float = 0.95) -> dict[str, float]:
    """The mean lift of ``trained`` over ``base`` (per-problem pass@1, the same problems in the same order)
    and its ``level`` bootstrap interval, problems resampled with replacement and paired."""
    if len(base) != len(trained) or not base:
        raise ValueError("paired_lift needs the two models' results on the same, non-empty problem list")
    diffs = [t - b for b, t in zip(base, trained, strict=True)]
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    low = means[int(tail * (resamples - 1))]
    high = means[int((1 - tail) * (resamples - 1))]
    return {"lift": sum(diffs) / n, "low": low, "high": high}


def parser() -> argparse.ArgumentParser:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--model", type=Path, required=True, help="A `worker base-model` checkpoint directory")
    args.add_argument("--convert", action="store_true", help="Write --model first if it is missing")
    args.add_argument("--out", type=Path, default=None, help="Working directory (default: a temporary one)")
    args.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help=(
        "cpu: hf_server and the CPU defaults; cuda: vLLM and the GPU defaults"))
    args.add_argument("--day-problems", type=int, default=None, help="Training-day problems per category")
    args.add_argument("--day-agents", default="react,tool_calling", help="Reference agents of the day")
    args.add_argument("--held-out-per-category", type=int, default=None)
    args.add_argument("--held-out-seed", default=None, help="Private seed of the held-out draw")
    args.add_argument("-k", type=int, default=None, help="Samples per held-out problem")
    args.add_argument("--stages", default="sft", help=f"Comma list of {', '.join(STAGES)}")
    args.add_argument("--sft-steps", type=int, default=None)
    args.add_argument("--max-length", type=int, default=4096, help="Tokens per training example")
    mode = args.add_mutually_exclusive_group()
    mode.add_argument("--lora", dest="lora", action="store_true", default=True, help="LoRA (default)")
    mode.add_argument("--full", dest="lora", action="store_false", help="Full fine-tuning")
    args.add_argument("--learning-rate", type=float, default=2e-4)
    args.add_argument("--max-tokens", type=int, default=None, help="Cap per completion at evaluation")
    args.add_argument("--workers", type=int, default=None, help="Held-out problems run at once")
    args.add_argument("--bootstrap", type=int, default=10_000, help="Bootstrap resamples")
    args.add_argument("--seed", type=int, default=0)
    args.add_argument("--dry-run", action="store_true", help="Print the plan and exit")
    return args


def plan(options: argparse.Namespace) -> dict[str, Any]:
    """The sizes the run uses: the flags, the device's defaults where a flag is not given."""
    defaults = CUDA_DEFAULTS if options.device == "cuda" else CPU_DEFAULTS
    stages = [s for s in options.stages.split(",") if s]
    unknown = sorted(set(stages) - set(STAGES))
    if unknown or not stages:
        raise SystemExit(f"--stages takes a comma list of {', '.join(STAGES)}; got {options.stages!r}")
    sizes = {name: getattr(options, name) if getattr(options, name) is not None else value
             for name, value in defaults.items()}
    return {"model": str(options.model), "device": options.device, "stages": stages,
            "day_agents": [a for a in options.day_agents.split(",") if a], **sizes,
            "held_out_problems": 3 * sizes["held_out_per_category"], "held_out_seed": options.held_out_seed,
            "max_length": options.max_length,
            "lora": options.lora, "learning_rate": options.learning_rate, "bootstrap": options.bootstrap,
            "seed": options.seed}


def main(argv: list[str] | None = None) -> None:
    options = parser().parse_args(argv)
    planned = plan(options)
    print(orjson.dumps({"plan": planned}).decode())
    if not options.dry_run:
        raise SystemExit(2)


if __name__ == "__main__":
    main()
