"""One held-out evaluation of a checkpoint, start to finish: serve it, run the agent k times per problem
through the sandbox, write the results, plot them and enter the checkpoint in the model registry.

``worker evaluate``, the pipeline's evaluation step and ``worker watch`` all call
:func:`evaluate_checkpoint`; :mod:`evaluate` holds the measuring itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from shoppingbench.grading.grader import Grader
from shoppingbench.problems.models import Problem
from shoppingbench.records import AttemptRecord
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig, inference_config
from shoppingbench.settings import HarnessSettings
from trajectories.training.data.catalog import Catalog, opened_catalog
from trajectories.training.evaluation import evaluate as evaluation
from trajectories.training.evaluation.outcome import EvaluationOutcome
from trajectories.training.evaluation.plots import (
    find_log_history,
    history_series,
    plot_history,
    plot_problems,
)
from trajectories.training.evaluation.registry import CheckpointEntry, ModelRegistry, manifest_sha256
from trajectories.training.serving.backends import served_checkpoint
from trajectories.training.serving.defaults import MAX_TOKENS, TEMPERATURE, WORKERS
from trajectories.training.serving.vllm_server import ServingBackend


@dataclass(frozen=True)
class HeldOutRun:
    report: evaluation.EvaluationReport
    results: Path
    plot: Path
    registry_id: int

    def outcome(self, problems_source: str | None = None) -> EvaluationOutcome:
        """The run's record, its report held in memory (``worker evaluate`` prints it as JSON)."""
        overall = self.report.category(evaluation.ALL)
        return EvaluationOutcome(results=self.results, plot=self.plot, registry_id=self.registry_id,
                                 problems_source=problems_source, k=self.report.k,
                                 pass_at_1=overall.pass_at_1, pass_at_k=overall.pass_at_k,
                                 step_hallucination_rate=overall.step_hallucination_rate, report=self.report)


def evaluate_checkpoint(model: str, problems: Sequence[Problem], *, catalog: Catalog, out: Path, k: int,
                        settings: HarnessSettings, stage: str = "base", data_manifest: Path | None = None,
                        registry: Path | None = None, agent: Path | None = None,
                        inference_url: str | None = None, temperature: float = TEMPERATURE,
                        max_tokens: int = MAX_TOKENS, workers: int = WORKERS, progress: bool = True,
                        serving: ServingBackend = "auto", vllm_args: Sequence[str] = ()) -> HeldOutRun:
    """Evaluate ``model`` (a saved directory served on loopback, or with ``inference_url`` the model name
    at that endpoint) on ``problems`` of ``catalog`` (a directory, or the run's open catalog); writes
    ``results.json``, ``attempts.jsonl`` and ``plot.png`` to ``out`` and adds a registry row (default
    ``$ARENA_HOME/models/registry.sqlite3``). A saved directory is served on ``serving``
    (:mod:`trajectories.training.serving.backends`: ``auto`` is vLLM on a host with CUDA and vLLM, else
    transformers)."""
    model_dir = None if inference_url else Path(model).resolve()
    # Key and budgets per attempt and run as the validator sets them (ARENA_INFERENCE_*)
    proxy_inference = inference_config(settings)
    served = (nullcontext(proxy_inference.model_copy(update={
                  "base_url": inference_url, "models": [model], "max_tokens": max_tokens,
                  "forced_params": {"temperature": temperature}}))
              if inference_url else
              served_checkpoint(Path(model), backend=serving, out=out, temperature=temperature,
                                max_tokens=max_tokens, budgets=proxy_inference.budgets, vllm_args=vllm_args))
    out.mkdir(parents=True, exist_ok=True)
    with (opened_catalog(catalog) as engine, served as inference,
          (out / "attempts.jsonl").open("wb") as attempts):
        def keep(record: AttemptRecord) -> None:
            attempts.write(record.model_dump_json().encode() + b"\n")

        report, _ = evaluation.evaluate(
            AgentFile.read(agent or evaluation.DEFAULT_AGENT), problems, engine,
            Grader.from_settings(engine.get_products, settings), inference=inference,
            sandbox=SandboxConfig.from_settings(settings), k=k, model=model, workers=workers,
            progress=progress, on_attempt=keep)
    results = out / "results.json"
    results.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    history = find_log_history(model_dir) if model_dir is not None else None
    plot = (plot_history(history, out / "plot.png", f"{model}: training log")
            if history is not None and history_series(history) else
            plot_problems(report.problems, out / "plot.png", f"{model}: held-out problems, k={k}"))
    entries = ModelRegistry(registry or settings.root / "models" / "registry.sqlite3")
    try:
        entry = entries.add(CheckpointEntry(
            path=str(model_dir) if model_dir is not None else model, stage=stage,
            data_manifest_sha256=manifest_sha256(data_manifest) if data_manifest is not None else None,
            metrics={c.category: c.model_dump(exclude={"category"}) for c in report.categories} | {"k": k}))
    finally:
        entries.close()
    assert entry.id is not None  # set by the registry on insert
    return HeldOutRun(report=report, results=results, plot=plot, registry_id=entry.id)
