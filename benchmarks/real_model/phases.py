"""The phases of ``python -m benchmarks.real_model``: the training day, the held-out draw, one stage's
training and one model's evaluation, each through the production code (:mod:`.benchmark` chains them)."""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

import shoppingbench.agents
from arena.settings import ArenaSettings
from arena.suites import compromised, generate_held_out, targets_of
from arena.validator.local_test import local_suite_run
from arena.validator.runs import run_id_for
from shoppingbench.catalog_dir import open_catalog
from shoppingbench.doubles.scripted_inference import scripted_inference
from shoppingbench.generator import ProblemGenerator
from shoppingbench.problems.models import CATEGORIES, Problem
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.sandbox.runner import AgentFile
from trajectories.dumps import DumpWindow, ExportOptions, export_dump
from trajectories.store import RunEntry, TrajectoryStore

DAY_MODEL = "scripted double"
"""What the day's reference agents talk to: no hosted LLM here, so the scripted shopping policy
(``shoppingbench.doubles.scripted_policies.shopping_policy``) served OpenAI-compatibly on loopback."""
DAY_AGENTS = {"react": "react_llm.py", "tool_calling": "tool_calling_llm.py"}
"""The arena's reference LLM agents a training day may run (``--day-agents``)."""
CONFIGS = Path(__file__).parents[2] / "trajectories" / "training" / "configs"
HELD_OUT_NAME = "real-model"
SUITE_NAME = "real-model-day"


def minutes(since: float) -> float:
    return round((time.perf_counter() - since) / 60, 2)


def agent_file(name: str) -> AgentFile:
    if name not in DAY_AGENTS:
        raise SystemExit(f"--day-agents takes {', '.join(DAY_AGENTS)}; got {name!r}")
    return AgentFile.read(Path(shoppingbench.agents.__file__).resolve().parent / DAY_AGENTS[name])


@dataclass(frozen=True)
class Day:
    problems: list[Problem]
    dump: Path
    figures: dict[str, Any]


def build_day(world: SampleWorld, settings: ArenaSettings, agents: Sequence[str], per_category: int,
              out: Path) -> Day:
    """Every agent of ``agents`` over the world's first ``per_category`` problems of each category through
    the validator's :class:`SuiteRun` (sandbox, verified proxy, grader, judge, structural filter, store),
    the LLM being the scripted double; then the day exported as ``dump export`` writes it."""
    started = time.perf_counter()
    problems = world.suite(per_category)
    ids = [p.id for p in problems]
    out.mkdir(parents=True, exist_ok=True)
    since = datetime.now(UTC) - timedelta(minutes=1)
    labels: Counter[str] = Counter()
    successes: dict[str, int] = {}
    engine = open_catalog(world.catalog_dir)
    try:
        with TrajectoryStore.open(f"sqlite:///{out / 'trajectories.sqlite3'}") as store:
            with local_suite_run(settings, engine, store, inference=scripted_inference) as runs:
                for name in agents:
                    run = RunEntry(id=run_id_for("race", f"{SUITE_NAME}-{name}", ids), kind="race",
                                   suite=SUITE_NAME)
                    judged = runs.judged(run, agent=agent_file(name), hotkey=None,
                                         submitted_at=None, suite=problems, final=True)
                    labels.update(judged.labels)
                    successes[name] = sum(judged.successes)
            until = datetime.now(UTC) + timedelta(minutes=1)
            manifest = export_dump(store, DumpWindow(since, until), out / "dump",
                                   options=ExportOptions(split_rule=settings.dump_split_rule()),
                                   progress=False, overwrite=True)
    finally:
        engine.close()
    from trajectories.training.data.conversations import DataFilter, select_conversations

    trainable = select_conversations([out / "dump"], DataFilter(require_success=True))
    figures = {"problems": len(problems), "agents": list(agents), "model": DAY_MODEL,
               "attempts": len(problems) * len(agents), "successes": successes,
               "labels": dict(labels), "splits": manifest["splits"],
               "train_agentic_successes": len(trainable.conversations), "minutes": minutes(started)}
    return Day(problems=problems, dump=out / "dump", figures=figures)


def draw_held_out(world: SampleWorld, settings: ArenaSettings, day: Sequence[Problem], per_category: int,
                  seed: str, out: Path) -> tuple[list[Problem], dict[str, Any]]:
    """``per_category`` problems of each category from the generator on the private ``seed``: no target
    a day problem has, none in a leak cluster with a day problem (drawn with room to drop those); written
    to ``out/held-out.jsonl``."""
    started = time.perf_counter()
    with ProblemGenerator.open(world.catalog_dir) as generator:
        suite = generate_held_out(generator, name=HELD_OUT_NAME, version=1, private_seed=seed,
                                  per_category=dict.fromkeys(CATEGORIES, 2 * per_category),
                                  burnt=targets_of(day), source_key=generator.key, at=datetime.now(UTC),
                                  leak_config=settings.leak_clusters)
    shared = set(compromised(suite, day, settings.leak_clusters))
    kept = [p for category in CATEGORIES
            for p in [q for q in suite.problems
                      if q.category == category and q.id not in shared][:per_category]]
    file = out / "held-out.jsonl"
    file.parent.mkdir(parents=True, exist_ok=True)
    lines = (orjson.dumps({"id": p.id, "category": p.category, **p.to_shoppingbench()}) for p in kept)
    file.write_bytes(b"".join(line + b"\n" for line in lines))
    return kept, {"problems": len(kept), "per_category": dict(Counter(p.category for p in kept)),
                  "file": str(file),
                  "drawn": len(suite.problems), "dropped_in_a_day_cluster": len(shared),
                  "seed_sha256": suite.seed_digest, "minutes": minutes(started)}


def private_seed(given: str | None, out: Path) -> str:
    """``--held-out-seed``, else one made once and kept (mode 0600) in the working directory."""
    if given:
        return given
    path = out / ".held-out-seed"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(os.urandom(32).hex())
    return path.read_text().strip()


def bootstrap_mean(values: Sequence[float], *, resamples: int, seed: int, level: float = 0.95,
                   ) -> dict[str, float]:
    """The mean of ``values`` and its ``level`` bootstrap interval, values resampled with replacement."""
    if not values:
        raise ValueError("no values to bootstrap")
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    return {"mean": sum(values) / n, "low": means[int(tail * (resamples - 1))],
            "high": means[int((1 - tail) * (resamples - 1))]}


def per_problem_pass_at_1(report: Any) -> dict[str, float]:
    """Problem id -> successes / k from an :class:`EvaluationReport`."""
    return {p.problem_id: p.successes / p.attempts for p in report.problems}


def format_errors(records: Sequence[AttemptRecord]) -> dict[str, Any]:
    """Model replies the agent could not read (neither a call nor text for the user, so no step came of
    them) over the replies it got."""
    replies = sum(1 for r in records for c in r.proxy_log if c.kind == "inference" and c.status == 200)
    steps = sum(len(r.steps) for r in records)
    unreadable = sum(max(0, sum(1 for c in r.proxy_log if c.kind == "inference" and c.status == 200)
                            - len(r.steps)) for r in records)
    return {"model_replies": replies, "steps": steps, "unreadable_replies": unreadable,
            "format_error_rate": unreadable / replies if replies else 0.0}


def stage_figures(run: Any, problems: Sequence[Problem], *, resamples: int, seed: int) -> dict[str, Any]:
    """Per category and overall: pass@1 with its bootstrap interval, pass@k, the hallucinated-id rate per
    step; the format-error rate over the stage's attempts."""
    report = run.report
    scores = per_problem_pass_at_1(report)
    pass_at_1: dict[str, dict[str, float]] = {}
    for category in [*CATEGORIES, "all"]:
        values = [scores[p.id] for p in problems if category in ("all", p.category)]
        if values:
            pass_at_1[category] = bootstrap_mean(values, resamples=resamples, seed=seed)
    records = [AttemptRecord.model_validate_json(line)
               for line in (run.results.parent / "attempts.jsonl").read_bytes().splitlines() if line]
    at_k = ({f"pass_at_{report.k}": {c.category: c.pass_at_k for c in report.categories}}
            if report.k > 1 else {})
    return {"pass_at_1": pass_at_1, **at_k,
            "step_hallucination_rate": {c.category: c.step_hallucination_rate for c in report.categories},
            **format_errors(records), "attempts": len(records), "results": str(run.results)}


def trained_figures(result: Any) -> dict[str, Any]:
    """Steps, examples, tokens TRL counted and tokens/s, first and last loss of a finished stage (its
    ``StageResult.outcome()``, with the runtime and first loss of its log)."""
    outcome = result.outcome()
    history: list[Mapping[str, Any]] = result.log_history
    runtime = next((e["train_runtime"] for e in reversed(history) if "train_runtime" in e), None)
    tokens = outcome.tokens_trained or 0
    first_loss = next((e["loss"] for e in history if "loss" in e), None)
    return {"steps": outcome.global_step, "examples": outcome.examples, "tokens_trained": tokens,
            "train_runtime_s": None if runtime is None else round(runtime, 1),
            "tokens_per_s": round(tokens / runtime, 1) if runtime else None,
            "first_loss": None if first_loss is None else round(first_loss, 4),
            "last_loss": None if outcome.last_loss is None else round(outcome.last_loss, 4),
            "final": str(outcome.final)}


@dataclass(frozen=True)
class Evaluation:
    """How every stage's model is evaluated: ``worker evaluate``'s path (:func:`evaluate_checkpoint`: the
    model served by ``hf_server`` on CPU, the tool-calling agent in the sandbox, ``k`` samples per
    held-out problem), the figures of each stage kept for the paired lift."""

    problems: list[Problem]
    catalog: Path
    settings: ArenaSettings
    out: Path
    dump: Path
    k: int
    max_tokens: int
    workers: int
    temperature: float
    device: str
    resamples: int
    seed: int

    def stage(self, model: Path, name: str) -> dict[str, Any]:
        from trajectories.training.evaluation.held_out import evaluate_checkpoint

        started = time.perf_counter()
        run = evaluate_checkpoint(str(model), self.problems, catalog=self.catalog,
                                  out=self.out / "eval" / name, k=self.k, settings=self.settings,
                                  stage=name, data_manifest=self.dump,
                                  registry=self.out / "registry.sqlite3", temperature=self.temperature,
                                  max_tokens=self.max_tokens, workers=self.workers, progress=False,
                                  serving="hf" if self.device == "cpu" else "auto")
        figures = stage_figures(run, self.problems, resamples=self.resamples, seed=self.seed)
        write_json(self.out / "eval" / name / "scores.json", per_problem_pass_at_1(run.report))
        return {"model": str(model), **figures, "minutes": minutes(started)}

    def carry(self, previous: str, name: str) -> None:
        """Stage ``name`` trained nothing: its scores are ``previous``'s."""
        write_json(self.out / "eval" / name / "scores.json", self.scores(previous))

    def scores(self, name: str) -> dict[str, float]:
        loaded: dict[str, float] = orjson.loads((self.out / "eval" / name / "scores.json").read_bytes())
        return loaded


def _trainer(planned: Mapping[str, Any], steps: int) -> dict[str, Any]:
    # bf16 as the shipped configs ask: on CPU it applies only where the CPU computes it natively
    return {"max_steps": steps, "per_device_train_batch_size": 1, "learning_rate": planned["learning_rate"],
            "bf16": True, "logging_steps": 1, "save_steps": steps, "save_total_limit": 1,
            "seed": planned["seed"], "dataloader_num_workers": 0}


def stage_config(name: str, model: Path, planned: Mapping[str, Any], catalog: Path) -> Any:
    """The stage's config: SFT on the day's agentic successes; rejection sampling (k=1 rollouts of the
    model on the day's train problems, SFT on its successes), KTO (the day's agentic successes desirable,
    its agentic failures undesirable) and DPO (the day's successful over failed attempts of a problem)
    from the shipped ``*_tiny.yaml`` (CPU) or production config, the sizes ours."""
    from trajectories.training.data.conversations import DataFilter
    from trajectories.training.pipeline import load_stage_config, with_catalog
    from trajectories.training.stages.sft import SFTStageConfig
    from trajectories.training.stages.stage import LoraSettings

    lora = LoraSettings(enabled=planned["lora"])
    common = {"model": str(model), "max_length": planned["max_length"], "lora": lora,
              "trainer": _trainer(planned, planned["sft_steps"])}
    cut = {"max_tool_chars": planned["max_tool_chars"]} if planned["max_tool_chars"] else {}
    config: Any
    if name == "sft":
        agentic_successes = DataFilter(labels=frozenset({"agentic"}), require_success=True)
        config = SFTStageConfig(data=agentic_successes, **common)
    else:
        config = load_stage_config(CONFIGS / f"{name}{'_tiny' if planned['device'] == 'cpu' else ''}.yaml")
        trainer = {**config.trainer, **common.pop("trainer")}
        if name == "kto":  # KTO's KL term compares completions within a batch: TRL refuses a batch of one
            batch = config.trainer.get("per_device_train_batch_size", 2)
            trainer["per_device_train_batch_size"] = max(2, batch)
        config = config.model_copy(update={**common, "trainer": trainer})
    data = getattr(config, "data", None)  # rejection samples its own conversations: nothing to cut
    if cut and data is not None and "max_tool_chars" in type(data).model_fields:
        config = config.model_copy(update={"data": data.model_copy(update=cut)})
    if name == "rejection":
        rollouts = config.rollouts
        serving = rollouts.serving.model_copy(update={"max_tokens": planned["max_tokens"]})
        config = with_catalog(config.model_copy(update={"rollouts": rollouts.model_copy(update={
            "samples_per_problem": 1, "max_problems": None, "workers": planned["workers"],
            "serving": serving})}), catalog)
    return config


def train(name: str, model: Path, dump: Path, out: Path, planned: Mapping[str, Any], settings: ArenaSettings,
          catalog: Path) -> dict[str, Any]:
    """One stage from ``model`` on the day's dump (as ``worker train`` runs it); a stage left with nothing
    to train on passes ``model`` on, as the pipeline does."""
    from trajectories.training.pipeline import run_stage
    from trajectories.training.stages.stage import NothingToTrain

    started = time.perf_counter()
    try:
        result = run_stage(stage_config(name, model, planned, catalog), [dump], out, settings=settings)
    except NothingToTrain as exc:
        return {"skipped": str(exc), "minutes": minutes(started)}
    return {**trained_figures(result), "minutes": minutes(started)}


def cpu_ticks() -> tuple[int, int] | None:
    """The machine's (stolen, all) CPU ticks so far, or None off Linux."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def steal_share(before: tuple[int, int] | None) -> float | None:
    after = cpu_ticks()
    if before is None or after is None or after[1] == before[1]:
        return None
    return round((after[0] - before[0]) / (after[1] - before[1]), 3)


def write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2))
