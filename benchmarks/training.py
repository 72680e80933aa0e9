"""Every training stage timed with the tiny Qwen3 on CPU: throughput per stage, so regressions show.

    python -m benchmarks.training --tiny [--problems 4] [--steps 4] [--max-length 768] [--stages sft,dpo]

A 3,000-product sample world is built in a scratch directory and its problems (with rewards) go into a
dump with two synthetic ReAct attempts per problem (``write_world_dump``). Each stage then runs from the
tiny model with its ``configs/*_tiny.yaml`` (steps and sequence length from the flags), exactly as
``worker train`` runs it:

- ``sft``: TRL's SFT on the dump's conversations;
- ``rejection``: k=1 rollouts of the tiny model (served on loopback) through the namespace sandbox, then
  the SFT on successes, which a random model never has: only the rollout figures are reported;
- ``teacher``: rollouts of the scripted teacher (the OpenAI-compatible test double), then SFT on its
  successes;
- ``dpo``: pairs of successful and failed attempts of one problem from the dump and the rejection rollouts;
- ``grpo``: Dr. GRPO with multi-turn tool rollouts against the catalog and the teacher's attempts;
- ``rewrite``: ``worker rewrite`` with the scripted rewriting teacher (a test double) over a sample dump of
  ReAct and sub-task attempts: candidates, kept and discarded rewrites (top-level ``rewritten_kept``).

Per stage: wall seconds, the trainer's runtime, the tokens TRL counted (``num_tokens``) and tokens/s over
the runtime, steps and the last loss; for rollouts the attempts, completion tokens generated and their
rate. Then ``stages_evaluated``: the study's per-stage table (:mod:`stage_table`), the tiny base model and
every trained stage's model evaluated on the dump's held-out problems through the sandbox (k=2) as
``worker pipeline`` does, with the rows, the evaluation's wall seconds and the best row. Each line is
printed as it ends; the last line printed is one JSON object of all of them.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from shoppingbench.logs import configure_logging

CONFIGS = Path(__file__).parents[1] / "trajectories" / "training" / "configs"
STAGES = ("sft", "rejection", "teacher", "dpo", "grpo")
EXTRA_STAGES = ("rewrite",)
CHOICES = STAGES + EXTRA_STAGES


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _trained(result: Any) -> dict[str, Any]:
    """Throughput of a finished stage from its trainer's log."""
    history = result.log_history
    runtime = next((e["train_runtime"] for e in reversed(history) if "train_runtime" in e), None)
    tokens = max((e.get("num_tokens", 0) for e in history), default=0)
    losses = [e["loss"] for e in history if "loss" in e]
    return {"steps": result.global_step, "examples": result.train_examples,
            "train_runtime_s": None if runtime is None else round(runtime, 2), "tokens": int(tokens),
            "tokens_per_s": round(tokens / runtime, 1) if runtime else None,
            "last_loss": round(losses[-1], 4) if losses else None}


def _rolled(attempts_file: Path, seconds: float) -> dict[str, Any]:
    """Rollout figures from the stage's attempts: how many, and how fast the model generated."""
    from trajectories.training.stages.rollouts import read_attempts

    records = read_attempts(attempts_file)
    generated = sum(c.completion_tokens or 0 for r in records for c in r.proxy_log if c.kind == "inference")
    return {"attempts": len(records), "successes": sum(r.score.success for r in records),
            "completion_tokens": generated, "rollout_s": round(seconds, 2),
            "completion_tokens_per_s": round(generated / seconds, 1) if seconds else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", required=True,
                        help="Use the tiny CPU Qwen3 (the only mode here; GPUs run the worker itself)")
    parser.add_argument("--problems", type=int, default=4, help="Problems per category in the dump")
    parser.add_argument("--steps", type=int, default=4, help="Optimizer steps per stage")
    parser.add_argument("--max-length", type=int, default=768, help="Tokens per example (not GRPO)")
    parser.add_argument("--stages", default=",".join(CHOICES),
                        help="Comma list of stages to time")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    configure_logging()
    chosen = [s for s in args.stages.split(",") if s]
    unknown = set(chosen) - set(CHOICES)
    if unknown:
        parser.error(f"unknown stages {sorted(unknown)}: choose from {', '.join(CHOICES)}")

    from shoppingbench.sample_world import ensure_sample_world
    from shoppingbench.settings import HarnessSettings
    from trajectories.doubles.sample_dumps import write_world_dump
    from trajectories.training.dev.tiny import save_tiny_model

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-training-") as scratch:
        root = Path(scratch)
        world = ensure_sample_world(root / "world", products=3_000, seed=0, progress=False)
        dump = write_world_dump(root / "dump", world.suite(args.problems), styles=("react", "react"))
        model = save_tiny_model(root / "model")
        # The tiny model talks junk until the proxy's budget ends an attempt; the teacher needs more calls
        settings = HarnessSettings(home=root / "home", inference_attempt_calls=4)
        trained = [name for name in chosen if name in STAGES]
        for name, figures in _time_stages(trained, args, world.catalog_dir, dump, model, settings, root):
            results[name] = figures
            print(f"{name:>9}: {figures}", flush=True)
        results["stages_evaluated"] = _evaluate_stages(model, root, dump, world.catalog_dir, settings)
        print(f"stages_evaluated: {results['stages_evaluated']}", flush=True)
        if "rewrite" in chosen:
            results["rewrite"] = _time_rewrite(root)
            results["rewritten_kept"] = results["rewrite"]["rewritten_kept"]
            print(f"{'rewrite':>9}: {results['rewrite']}", flush=True)
    print(orjson.dumps(results).decode())


def _time_rewrite(root: Path) -> dict[str, Any]:
    """``worker rewrite`` with the scripted teacher over a sample dump with sub-task attempts."""
    from shoppingbench.tools.serving import running_server
    from trajectories.doubles.sample_dumps import write_sample_dump
    from trajectories.doubles.scripted_teacher import SCRIPTED_TEACHER_MODEL, create_app
    from trajectories.training.rewrite.run import rewrite_dump
    from trajectories.training.rewrite.teacher import EndpointTeacher

    dump = write_sample_dump(root / "rewrite-dump", problems=12, styles=("react", "sub_task"))
    wall = time.perf_counter()
    with running_server(create_app()) as url:
        summary = rewrite_dump(dump, EndpointTeacher(f"{url}/v1", SCRIPTED_TEACHER_MODEL), progress=False)
    return {"candidates": summary.candidates, "rewritten_kept": summary.rewritten_kept,
            "discarded": sum(summary.discarded.values()), "skipped": sum(summary.skipped.values()),
            "wall_s": round(time.perf_counter() - wall, 2), "peak_rss_mb": _rss_mb()}


def _time_stages(chosen: list[str], args: argparse.Namespace, catalog: Path, dump: Path, model: Path,
                 settings: Any, root: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    from shoppingbench.doubles.scripted_inference import SCRIPTED_MODEL, scripted_inference
    from trajectories.training.pipeline import (
        load_stage_config,
        run_stage,
        with_catalog,
        with_teacher_endpoint,
    )
    from trajectories.training.stages.sampling import sample_stage_data
    from trajectories.training.stages.sampling_config import SamplingStageConfig

    produced: dict[str, Path] = {}
    with scripted_inference(settings) as teacher:
        assert teacher.base_url is not None
        for name in chosen:
            config = load_stage_config(CONFIGS / f"{name}_tiny.yaml")
            config = with_teacher_endpoint(with_catalog(config, catalog), teacher.base_url, SCRIPTED_MODEL)
            trainer = {**config.trainer, "max_steps": args.steps, "save_steps": args.steps}
            updates: dict[str, Any] = {"model": str(model), "trainer": trainer}
            if name != "grpo":  # GRPO's max_length is the rollout's whole context: its config's
                updates["max_length"] = args.max_length
            if name == "dpo" and "rejection" in produced:
                updates["rollouts"] = [produced["rejection"]]
            if name == "grpo" and "teacher" in produced:
                updates["teacher_attempts"] = [produced["teacher"]]
            config = config.model_copy(update=updates)
            stage_settings = (settings.with_changes(inference_attempt_calls=40)
                              if name == "teacher" else settings)
            wall = time.perf_counter()
            figures: dict[str, Any] = {}
            if isinstance(config, SamplingStageConfig):
                sampled = sample_stage_data(config, [dump], root / name, settings=stage_settings,
                                            progress=False)
                produced[name] = sampled.directory / "attempts.jsonl"
                figures.update(_rolled(produced[name], time.perf_counter() - wall))
            if not isinstance(config, SamplingStageConfig) or name == "teacher":
                figures.update(_trained(run_stage(config, [dump], root / name, settings=stage_settings)))
            figures.update(wall_s=round(time.perf_counter() - wall, 2), load_1m=round(os.getloadavg()[0], 2),
                           peak_rss_mb=_rss_mb())
            yield name, figures


def _evaluate_stages(model: Path, root: Path, dump: Path, catalog: Path, settings: Any) -> dict[str, Any]:
    """The per-stage table of the study: the base model, then each stage's ``final`` (stages that trained),
    on the dump's held-out problems, k=2, through the sandbox and the registry, as the pipeline does."""
    from trajectories.training.evaluation.evaluate import held_out_problems
    from trajectories.training.evaluation.held_out import evaluate_checkpoint
    from trajectories.training.evaluation.stage_table import evaluated_row, write_table

    problems = held_out_problems(dump)[:3]
    models = [("base", model), *((name, root / name / "final") for name in STAGES
                                 if (root / name / "final").is_dir())]
    wall = time.perf_counter()
    rows = []
    for stage, directory in models:
        run = evaluate_checkpoint(str(directory), problems, catalog=catalog, out=root / "eval" / stage, k=2,
                                  settings=settings, stage=stage, data_manifest=dump, max_tokens=16,
                                  progress=False)
        rows.append(evaluated_row(stage, str(directory), run.outcome(problems_source=str(dump))))
    table = write_table(rows, root / "eval")
    seconds = round(time.perf_counter() - wall, 2)
    return {"rows": len(rows), "problems": len(problems), "k": 2, "eval_s": seconds,
            "best": None if table.best is None else table.best.stage,
            "table": [{"stage": r.stage, "pass_at_1": r.pass_at_1.get("all"), "pass_at_2": r.pass_at_k,
                       "step_hallucination_rate": r.step_hallucination_rate} for r in rows]}


if __name__ == "__main__":
    main()
