"""Does a day of the arena's judged trajectories lift a real pretrained model on held-out problems?

    python -m benchmarks.real_model --model DIR [--convert] [--out DIR] [--device cpu|cuda]
        [--day-problems 20] [--day-agents react,tool_calling] [--held-out-per-category 8]
        [--held-out-seed SEED] [-k 1] [--stages sft[,rejection,kto,dpo]] [--sft-steps 80] [--max-length 4608]
        [--max-tool-chars 1500] [--lora | --full] [--learning-rate 1e-3] [--max-tokens 512] [--workers 4]
        [--attempt-calls 6] [--attempt-timeout-s 3600]
        [--temperature 0] [--world-dir DIR --world-products 3000] [--bootstrap 10000] [--seed 0]
        [--dry-run]

The run, through the production path at every step (:mod:`benchmarks.real_model.phases` holds the phases):

1. **Training day**: the arena's reference agents (``--day-agents``: ``react_llm.py``,
   ``tool_calling_llm.py``) run on the first ``--day-problems`` problems per category of the sample
   world (the configured one, or ``--world-dir``) through the validator's
   :class:`~arena.validator.runs.SuiteRun` (sandbox, verified proxy, grader, judge, structural filter,
   trajectory store), and the day is exported as ``dump export`` writes it, split by the validator's
   split rule. There is no hosted LLM here, so the agents' model is the scripted double
   (``shoppingbench.doubles.scripted_policies.shopping_policy`` served on loopback; ``day_model:
   "scripted double"`` in the output); the judge is the configured one (offline without
   ``ARENA_JUDGE_*``).
2. **Held-out problems**: ``--held-out-per-category`` problems per category from the problem generator
   on a private ``--held-out-seed`` (default: a random one kept in ``OUT/.held-out-seed``), as
   ``validator held-out`` draws them: no target product of a day problem, and any problem in a leak
   cluster with a day problem dropped (twice as many are drawn); written to ``OUT/held-out.jsonl``.
3. **Stages**: the base model (``--model``, a ``worker base-model`` directory; ``--convert`` writes it) is
   evaluated, then each stage of ``--stages`` trains from the previous one on the exported day (as ``worker
   train`` runs it) and is evaluated the same way. ``sft``: the worker's SFT stage on the day's ``agentic``
   successes of the train split, LoRA by default; ``rejection``: k=1 rollouts of the model on the day's
   train problems, SFT on its successes; ``kto``: the day's agentic successes as desirable and its agentic
   failures as undesirable completions (the study's preference step); ``dpo``: the day's successful over
   failed attempts of a problem (``rejection``, ``kto`` and ``dpo`` take the rest of their settings from
   ``configs/*_tiny.yaml`` on CPU, the production configs on CUDA). A stage left with nothing to train on
   passes its model and its evaluation on (``carried_from``). Evaluation is ``worker evaluate``'s
   (``evaluate_checkpoint``): ``k`` samples per held-out problem through the sandbox with the tool-calling
   agent, the model served by ``hf_server`` (``--device cpu``) or, with ``--device cuda``, by vLLM where it
   is installed, every completion capped at ``--max-tokens`` and each attempt at ``--attempt-calls`` model
   calls.

Per stage: pass@1 per category and ``all`` with a 95% bootstrap interval over problems (``mean``,
``low``, ``high``), pass@k for k > 1, the hallucinated-id rate per step, the format-error rate (model
replies the agent could not read, over replies), minutes; for a trained stage its steps, examples,
tokens trained (TRL's ``num_tokens``) and tokens/s, first and last loss. At the top level of the last
line's JSON: ``base_pass_at_1``, ``sft_pass_at_1``, ``sft_lift`` and ``sft_lift_low``, the lower end of the
95% paired bootstrap interval of the SFT model's pass@1 lift over the base (:func:`paired_lift`:
problems resampled with replacement, both models' results for a drawn problem taken together),
``tokens_trained``, ``minutes``, and the machine's speed beside them: ``matmul_gflops_1_thread``,
``load_1m``, ``steal_share``, ``cpu_count``. The same JSON is written to ``OUT/result.json``; the
evaluations (``results.json``, ``attempts.jsonl``, ``scores.json``) are in ``OUT/eval/STAGE``.

``--dry-run`` prints the plan (the sizes, the device's defaults where a flag is not given, and the stages)
as the last line and exits. A ``--model`` directory without a checkpoint exits 2 (unless ``--convert``).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from trajectories.training.serving.defaults import MAX_TOKENS, TEMPERATURE

STAGES = ("sft", "rejection", "kto", "dpo")
CPU_DEFAULTS: dict[str, Any] = {"day_problems": 20, "held_out_per_category": 8, "k": 1, "temperature": 0.0,
                                "sft_steps": 80, "learning_rate": 1e-3, "max_length": 4608,
                                "max_tool_chars": 1500, "max_tokens": 512, "attempt_calls": 6,
                                "attempt_timeout_s": 3600.0, "workers": 4}
"""The CPU study's sizes, which finish in about 79 minutes on an idle 2-core machine (docs/training.md): 24
held-out problems (a base model at 0 needs 4 successes for a lift whose interval clears 0), one greedy
sample each (temperature 0, the tool-calling agent's own), of up to 6 completions of 512 tokens (the day's
assistant turns, rendered by Gemma's tokenizer, are 228 tokens at the median and 544 at the 95th
percentile: a shorter cap cuts the call off the end of a turn it learnt); 80 training steps (1.4 passes
over the day) of one example of up to 4,608 tokens, which holds 40 of the day's 59 conversations whole
(their recommending turn too) with their tool results cut to 1,500 characters; and an hour per attempt,
since a completion served on 2 cores takes up to a minute where the validator allows 300 s an attempt."""
CUDA_DEFAULTS: dict[str, Any] = {"day_problems": 500, "held_out_per_category": 25, "k": 8, "sft_steps": 1000,
                                 "learning_rate": 2e-4, "max_length": 4096, "max_tool_chars": None,
                                 "max_tokens": MAX_TOKENS, "attempt_calls": None, "attempt_timeout_s": None,
                                 "workers": 16, "temperature": TEMPERATURE}
"""A whole day, 75 held-out problems and pass@8 (8 samples at the worker's temperature) on a GPU host,
completions capped as the worker caps them; ``None``: the worker's and the validator's own setting (tool
results cut at ``MAX_TOOL_CHARS``, the validator's call budget and time limit)."""


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
    args = argparse.ArgumentParser(prog="python -m benchmarks.real_model",
                                   description=__doc__.split("\n\n")[0])
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
    args.add_argument("--max-length", type=int, default=None, help="Tokens per training example")
    args.add_argument("--max-tool-chars", type=int, default=None, help=(
        "Tool results cut to this many characters in the training examples"))
    mode = args.add_mutually_exclusive_group()
    mode.add_argument("--lora", dest="lora", action="store_true", default=True, help="LoRA (default)")
    mode.add_argument("--full", dest="lora", action="store_false", help="Full fine-tuning")
    args.add_argument("--learning-rate", type=float, default=None, help=(
        f"cpu {CPU_DEFAULTS['learning_rate']:g} ({CPU_DEFAULTS['sft_steps']} LoRA steps), "
        f"cuda {CUDA_DEFAULTS['learning_rate']:g}"))
    args.add_argument("--max-tokens", type=int, default=None, help="Cap per completion at evaluation")
    args.add_argument("--workers", type=int, default=None, help="Held-out problems run at once")
    args.add_argument("--bootstrap", type=int, default=10_000, help="Bootstrap resamples")
    args.add_argument("--seed", type=int, default=0)
    args.add_argument("--temperature", type=float, default=None, help=(
        f"Sampling temperature at evaluation (cpu {CPU_DEFAULTS['temperature']:g}: one greedy sample; "
        f"cuda {CUDA_DEFAULTS['temperature']:g} for pass@k)"))
    args.add_argument("--attempt-calls", type=int, default=None, help=(
        "Model calls per held-out attempt before the proxy refuses (cuda: ARENA_INFERENCE_ATTEMPT_CALLS)"))
    args.add_argument("--attempt-timeout-s", type=float, default=None, help=(
        "Wall-clock seconds per held-out attempt (cuda: ARENA_SANDBOX_TIMEOUT_S)"))
    args.add_argument("--world-dir", type=Path, default=None, help=(
        "Sample world directory (default: the configured one, ARENA_HOME's)"))
    args.add_argument("--world-products", type=int, default=3_000, help="Products of a --world-dir world")
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
            "held_out_problems": 3 * sizes["held_out_per_category"],
            "held_out_seed": "given" if options.held_out_seed else "random",
            "lora": options.lora, "bootstrap": options.bootstrap,
            "seed": options.seed}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(options: argparse.Namespace, planned: dict[str, Any], out: Path) -> dict[str, Any]:
    """The day, the held-out draw, the base model's evaluation, then each stage trained and evaluated;
    the last line's JSON (also written to ``out/result.json``)."""
    from arena.settings import ArenaSettings
    from benchmarks.real_model import phases
    from benchmarks.real_model.serving import matmul_gflops
    from shoppingbench.sample_world import configured_sample_world, ensure_sample_world

    started, ticks = time.perf_counter(), phases.cpu_ticks()
    figures: dict[str, Any] = {"plan": planned, "matmul_gflops_1_thread": matmul_gflops(),
                               "cpu_count": os.cpu_count(), "day_model": phases.DAY_MODEL}
    settings = ArenaSettings(workers=planned["workers"])
    # --attempt-calls and --attempt-timeout-s bound the evaluated model's attempts, never the day's agents
    limits = {"inference_attempt_calls": planned["attempt_calls"],
              "sandbox_timeout_s": planned["attempt_timeout_s"]}
    held_out_settings = settings.with_changes(**{k: v for k, v in limits.items() if v is not None})
    world = (ensure_sample_world(options.world_dir, products=options.world_products, seed=0, progress=False)
             if options.world_dir is not None else configured_sample_world(settings, progress=False))
    day = phases.build_day(world, settings, planned["day_agents"], planned["day_problems"], out / "day")
    figures["day"] = day.figures
    _say(f"day: {day.figures}")
    problems, figures["held_out"] = phases.draw_held_out(
        world, settings, day.problems, planned["held_out_per_category"],
        phases.private_seed(options.held_out_seed, out), out)
    _say(f"held out: {figures['held_out']}")
    evaluation = phases.Evaluation(problems=problems, catalog=world.catalog_dir, settings=held_out_settings,
                                   out=out, dump=day.dump, k=planned["k"], max_tokens=planned["max_tokens"],
                                   workers=planned["workers"], temperature=planned["temperature"],
                                   device=options.device, resamples=options.bootstrap, seed=options.seed)
    stages = {"base": evaluation.stage(options.model, "base")}
    _say(f"base: {stages['base']}")
    model, previous = options.model, "base"
    for name in planned["stages"]:
        trained = phases.train(name, model, day.dump, out / name, planned, held_out_settings,
                               world.catalog_dir)
        if "final" not in trained:  # nothing to train on: the previous model and its evaluation carry on
            stages[name] = {**stages[previous], "train": trained, "carried_from": previous}
            evaluation.carry(previous, name)
            continue
        model, previous = Path(trained["final"]), name
        stages[name] = {"train": trained, **evaluation.stage(model, name)}
        _say(f"{name}: {stages[name]}")
    figures["stages"] = stages
    scores = {name: evaluation.scores(name) for name in stages}
    figures["base_pass_at_1"] = stages["base"]["pass_at_1"]["all"]["mean"]
    if "sft" in stages:
        figures["sft_pass_at_1"] = stages["sft"]["pass_at_1"]["all"]["mean"]
        ids = [p.id for p in problems]
        lift = paired_lift([scores["base"][i] for i in ids], [scores["sft"][i] for i in ids],
                           resamples=options.bootstrap, seed=options.seed)
        figures["sft_lift"], figures["sft_lift_low"] = lift, lift["low"]
    figures["tokens_trained"] = sum(s["train"].get("tokens_trained", 0) for s in stages.values()
                                    if "train" in s)
    figures |= {"minutes": phases.minutes(started), "load_1m": round(os.getloadavg()[0], 2),
                "steal_share": phases.steal_share(ticks)}
    phases.write_json(out / "result.json", figures)
    return figures


def main(argv: list[str] | None = None) -> None:
    options = parser().parse_args(argv)
    planned = plan(options)
    print(orjson.dumps({"plan": planned}).decode(), flush=True)
    if options.dry_run:
        return
    if not (options.model / "config.json").exists():
        if not options.convert:
            print(f"{options.model} holds no checkpoint: run `worker base-model gemma3-270m --out "
                  f"{options.model}` or pass --convert", file=sys.stderr)
            raise SystemExit(2)
        from trajectories.training.dev.gemma import convert_gemma3_270m

        _say(f"converting into {options.model}: {convert_gemma3_270m(options.model)}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from shoppingbench.logs import configure_logging

    configure_logging()
    if options.out is not None:
        print(orjson.dumps(run(options, planned, options.out)).decode(), flush=True)
        return
    with tempfile.TemporaryDirectory(prefix="real-model-") as scratch:
        print(orjson.dumps(run(options, planned, Path(scratch))).decode(), flush=True)
