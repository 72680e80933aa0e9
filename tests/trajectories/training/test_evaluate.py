"""Held-out evaluation end to end: the tiny Qwen3 served on loopback, the ReAct reference agent in the
namespace sandbox behind the verified proxy, the real scorer, pass@k, hallucination counts and the CLI.

The tiny model is random, so its answers are junk: these tests check that every number is computed
from the records and agrees with them, not that the model succeeds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from neurons.worker import app
from shoppingbench.grading.grader import Grader
from shoppingbench.problems.models import Problem, RewardTarget, Voucher
from shoppingbench.proxy.budgets import InferenceBudgets
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.sandbox.limits import SandboxLimits
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig
from shoppingbench.scoring import PRODUCTION_STRICT, CachedEmbedder, MiniLMEmbedder
from shoppingbench.search.engine import BM25SearchEngine
from tests.sandbox_support import SLOT_UIDS, UID_BASE, leftover_processes
from trajectories.doubles.sample_dumps import SAMPLE_DAY
from trajectories.doubles.synthetic import synthetic_day
from trajectories.dumps import DumpWindow, ExportOptions, SplitRule, export_dump
from trajectories.store import ProblemEntry, TrajectoryStore
from trajectories.training.evaluation.evaluate import (
    ALL,
    REACT_AGENT,
    EvaluationReport,
    evaluate,
    held_out_problems,
)
from trajectories.training.evaluation.hallucinations import count_hallucinations
from trajectories.training.evaluation.passk import pass_at_k
from trajectories.training.evaluation.registry import ModelRegistry, manifest_sha256
from trajectories.training.serving.backends import local_inference

K = 2
MAX_TOKENS = 16
"""Junk from a random model costs as much per token as sense: keep completions short on CPU."""
CALLS = 4
"""Completions per attempt before the proxy's budget answers 429 (the agent then stops)."""


@pytest.fixture(scope="module")
def evaluated(tiny_model_dir: Path, small_world: SampleWorld, small_engine: BM25SearchEngine,
              tmp_path_factory: pytest.TempPathFactory,
              ) -> Iterator[tuple[list[Problem], EvaluationReport, list[AttemptRecord]]]:
    problems = small_world.suite(1)  # one product, one shop, one voucher problem
    cache = tmp_path_factory.mktemp("embeddings") / "titles.sqlite3"
    grader = Grader(small_engine.get_products, CachedEmbedder(MiniLMEmbedder(), cache), PRODUCTION_STRICT)
    sandbox = SandboxConfig(limits=SandboxLimits(timeout_s=90, startup_timeout_s=60), uid_base=UID_BASE)
    with local_inference(tiny_model_dir, temperature=1.0, max_tokens=MAX_TOKENS,
                         served_name="tiny") as served:
        # The proxy's per-attempt budget ends each attempt after CALLS completions, as a validator's would
        inference = served.model_copy(update={"budgets": InferenceBudgets(attempt_calls=CALLS)})
        report, records = evaluate(AgentFile.read(REACT_AGENT), problems, small_engine, grader,
                                   inference=inference, sandbox=sandbox, k=K, model="tiny", workers=2,
                                   progress=False)
    yield problems, report, records
    assert leftover_processes(SLOT_UIDS) == [], "a sandbox process outlived the evaluation"


def test_every_problem_runs_k_times_through_the_sandbox_and_the_served_model(
        evaluated: tuple[list[Problem], EvaluationReport, list[AttemptRecord]]) -> None:
    problems, report, records = evaluated
    assert sorted(r.problem_id for r in records) == sorted([p.id for p in problems] * K)
    assert len(set(report.run_ids)) == K and {r.run_id for r in records} == set(report.run_ids)
    for record in records:
        inference = [c for c in record.proxy_log if c.kind == "inference"]
        answered = [c for c in inference if c.status == 200]
        assert 1 <= len(answered) <= CALLS, "the agent reached the served model through the verified proxy"
        assert all(c.model == "tiny" and 0 < (c.completion_tokens or 0) <= MAX_TOKENS for c in answered)
        assert all(c.status == 429 for c in inference if c not in answered)
        assert len(record.steps) <= CALLS
        assert record.score.problem_id == record.problem_id and record.score.profile == PRODUCTION_STRICT.name


def test_pass_at_k_and_hallucinations_agree_with_the_records(
        evaluated: tuple[list[Problem], EvaluationReport, list[AttemptRecord]]) -> None:
    problems, report, records = evaluated
    assert [p.problem_id for p in report.problems] == [p.id for p in problems]
    for result in report.problems:
        mine = [r for r in records if r.problem_id == result.problem_id]
        counts = [count_hallucinations(r.steps, r.proxy_log) for r in mine]
        assert result.attempts == K and result.successes == sum(r.score.success for r in mine)
        assert result.mean_rule == pytest.approx(sum(r.score.rule for r in mine) / K)
        assert result.steps == sum(len(r.steps) for r in mine)
        assert result.steps_hallucinated == sum(c.steps_hallucinated for c in counts)
        assert result.failures == sum(r.failure is not None for r in mine)
    assert [c.category for c in report.categories] == [*sorted({p.category for p in problems}), ALL]
    for category in report.categories:
        members = [p for p in report.problems if category.category in (ALL, p.category)]
        assert category.problems == len(members) and category.attempts == K * len(members)
        assert category.pass_at_1 == pytest.approx(sum(p.successes / K for p in members) / len(members))
        assert category.pass_at_k == pytest.approx(
            sum(pass_at_k(K, p.successes, K) for p in members) / len(members))
        steps = sum(p.steps for p in members)
        assert category.step_hallucination_rate == pytest.approx(
            sum(p.steps_hallucinated for p in members) / steps if steps else 0.0)
        assert 0 <= category.pass_at_1 <= category.pass_at_k <= 1


def test_worker_evaluate_writes_results_registry_and_plot(tiny_model_dir: Path, small_world: SampleWorld,
                                                          tiny_dump: Path, tmp_path: Path) -> None:
    """One problem, k=1, through the command (the tiny model dir); the problems are the newest held-out
    suite under the home, as `validator held-out` leaves it, since no --problems or --dump is given."""
    problems_file = tmp_path / "home" / "held-out" / "study-v2.jsonl"
    problems_file.parent.mkdir(parents=True)
    (problems_file.parent / "study-v1.jsonl").write_text("not even JSON\n")
    problems_file.write_text(
        (small_world.problems_dir / "product.jsonl").read_text(encoding="utf-8").splitlines()[0] + "\n",
        encoding="utf-8")
    out = tmp_path / "eval"
    registry = tmp_path / "registry.sqlite3"
    result = CliRunner().invoke(app, [
        "evaluate", "--model", str(tiny_model_dir),
        "--catalog", str(small_world.catalog_dir), "-k", "1", "--out", str(out), "--registry", str(registry),
        "--stage", "base", "--data-manifest", str(tiny_dump), "--max-tokens", str(MAX_TOKENS),
        "--workers", "1", "--home", str(tmp_path / "home")],
        env={"ARENA_SANDBOX_UID_BASE": str(UID_BASE), "ARENA_SANDBOX_TIMEOUT_S": "90",
             "ARENA_INFERENCE_ATTEMPT_CALLS": str(CALLS)})
    assert result.exit_code == 0, result.output
    assert f"held-out suite: {problems_file}" in result.output and "pass@1" in result.output
    saved = EvaluationReport.model_validate_json((out / "results.json").read_bytes())
    assert saved.k == 1 and len(saved.problems) == 1 and saved.category(ALL).attempts == 1
    lines = (out / "attempts.jsonl").read_bytes().splitlines()
    (attempt,) = [AttemptRecord.model_validate_json(line) for line in lines]
    assert sum(c.status == 200 for c in attempt.proxy_log if c.kind == "inference") <= CALLS
    png = (out / "plot.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000
    (entry,) = ModelRegistry(registry).list()
    assert entry.path == str(tiny_model_dir.resolve()) and entry.stage == "base"
    assert entry.data_manifest_sha256 == manifest_sha256(tiny_dump)
    assert entry.metrics["all"]["pass_at_1"] == saved.category(ALL).pass_at_1
    assert json.loads(result.output.strip().splitlines()[-1])["registry_id"] == entry.id


def _dump_with_rewards(out: Path) -> tuple[Path, dict[str, Problem]]:
    """A synthetic day (6 problems in 2 clusters, cluster-00001 held out) whose problems, but the last,
    are registered with a reward, exported through the real store and exporter."""
    start = datetime.combine(SAMPLE_DAY, datetime.min.time(), tzinfo=UTC).timestamp()
    day = synthetic_day(day_start=start, problems=6, agents=1, seed=3, styles=("react",))
    voucher = Voucher(voucher_type="platform", threshold=0, discount_type="fixed", face_value=1, budget=100)
    rewarded = {e.id: Problem(id=e.id, category=e.category, query=e.query,
                              targets=[RewardTarget(product_id=f"target-{e.id}", title=["a title"])],
                              voucher=voucher if e.category == "voucher" else None)
                for e in day.problems[:-1]}
    with TrajectoryStore.open(f"sqlite:///{out.parent / 'store.sqlite3'}") as store:
        store.register_problems(day.problems)
        store.register_problems([ProblemEntry.of(p, leak_cluster=e.leak_cluster)
                                 for e in day.problems if (p := rewarded.get(e.id)) is not None])
        for agent in day.agents:
            store.register_agent(agent.entry)
        store.write_attempts(day.attempts(6))
        options = ExportOptions(jsonl=False, split_rule=SplitRule(
            held_out_fraction=0.0, held_out_clusters=frozenset({"cluster-00001"})))
        export_dump(store, DumpWindow.day(SAMPLE_DAY), out, options=options, progress=False)
    held_out = {e.id for e in day.problems if e.leak_cluster == "cluster-00001"}
    return out, {pid: p for pid, p in rewarded.items() if pid in held_out}


def test_held_out_problems_come_from_the_dumps_held_out_split(tmp_path: Path) -> None:
    dump, expected = _dump_with_rewards(tmp_path / "dump")
    problems = held_out_problems(dump)
    # cluster-00001 holds the last 3 problems; the last of all has no reward and is skipped
    assert len(expected) == 2 and {p.id: p for p in problems} == expected


def test_a_dump_whose_held_out_problems_have_no_reward_is_refused(tiny_dump: Path) -> None:
    with pytest.raises(ValueError, match="no problem with a reward"):
        held_out_problems(tiny_dump)


def test_a_dump_without_a_held_out_split_is_refused(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    with pytest.raises(FileNotFoundError, match="held_out"):
        held_out_problems(tmp_path)


def test_worker_evaluate_needs_one_problem_source(tiny_dump: Path, small_world: SampleWorld,
                                                  tmp_path: Path) -> None:
    common = ["evaluate", "--model", str(tmp_path), "--catalog", str(small_world.catalog_dir),
              "--out", str(tmp_path / "out"), "--home", str(tmp_path / "home")]
    neither = CliRunner().invoke(app, common)
    assert neither.exit_code == 2 and "no held-out suite" in neither.output
    problems = tmp_path / "p.jsonl"
    problems.write_text("")
    both = CliRunner().invoke(app, [*common, "--dump", str(tiny_dump), "--problems", str(problems)])
    assert both.exit_code == 2 and "not both" in both.output
    no_rewards = CliRunner().invoke(app, [*common, "--dump", str(tiny_dump)])
    assert no_rewards.exit_code == 1 and "no problem with a reward" in no_rewards.output
