"""``miner test``: static analysis first, then the sandbox over a suite, a score table and a JSONL of every
attempt with its proxy log."""

from __future__ import annotations

from datetime import date, time
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from arena.judge import OFFLINE_JUDGE, QUALITY_LEVELS, JudgeInput, OfflineJudge, suite_score
from arena.judge.verdict import GATES
from arena.storage import Base
from arena.suites import FixedSource, PublicSuites, SuiteCache, SuitePlan
from neurons.miner import EXIT_ALL_CRASHED, EXIT_MISSING_ANSWERS, EXIT_NO_STORE, app
from neurons.submission import EXIT_REJECTED
from shoppingbench.doubles.llm_server import StubReply
from shoppingbench.doubles.llm_server import create_app as create_stub_app
from shoppingbench.doubles.scripted_inference import SCRIPTED_MODEL
from shoppingbench.doubles.scripted_policies import shopping_policy
from shoppingbench.generator import ProblemGenerator
from shoppingbench.problems.models import CATEGORIES
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.tools.serving import running_server
from tests.sandbox_support import UID_BASE
from trajectories.store import StoredAttempt, TrajectoryStore

REPO = Path(__file__).resolve().parents[2]
BASELINE = REPO / "shoppingbench" / "agents" / "scripted_baseline.py"


@pytest.fixture
def suite_files(small_world: SampleWorld, tmp_path: Path) -> list[Path]:
    """Two problems of each of two categories from the small world, as ShoppingBench JSONL files."""
    files = []
    for category in ("product", "shop"):
        lines = (small_world.problems_dir / f"{category}.jsonl").read_text().splitlines()[:2]
        path = tmp_path / f"{category}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        files.append(path)
    return files


@pytest.fixture(autouse=True)
def own_uids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_SANDBOX_UID_BASE", str(UID_BASE))


def _args(agent: Path, small_world: SampleWorld, suite_files: list[Path], tmp_path: Path) -> list[str]:
    suites = [arg for path in suite_files for arg in ("--suite", str(path))]
    return ["test", str(agent), "--catalog", str(small_world.catalog_dir), *suites, "--workers", "2",
            "--home", str(tmp_path / "home"), "--out", str(tmp_path / "out.jsonl")]


def test_miner_test_scores_the_agent_and_writes_every_attempt(
        small_world: SampleWorld, suite_files: list[Path], tmp_path: Path) -> None:
    result = CliRunner().invoke(app, _args(BASELINE, small_world, suite_files, tmp_path))
    assert result.exit_code == 0, result.output
    assert "static analysis passed" in result.output and "all (ASR)" in result.output
    for category in ("product", "shop"):
        assert category in result.output
    records = [AttemptRecord.model_validate(orjson.loads(line))
               for line in (tmp_path / "out.jsonl").read_bytes().splitlines()]
    assert len(records) == 4 and len({r.problem_id for r in records}) == 4
    assert all(r.failure is None and r.steps and r.proxy_log for r in records)
    assert all(c.kind == "search" and c.status == 200 for r in records for c in r.proxy_log)

    # The same attempts are in the trajectory store, labelled, under a finished local-test run.
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'home' / 'trajectories.sqlite3'}") as store:
        stored = store.load(store.attempt_ids())
        with store.snapshot() as connection:
            clusters = dict(connection.execute(text("SELECT id, leak_cluster FROM problems")).all())
    assert sorted(a.record.problem_id for a in stored) == sorted(r.problem_id for r in records)
    assert {a.record.run_id for a in stored} == {records[0].run_id}
    assert all(a.label is not None and a.label.label == "no_llm" for a in stored)
    assert set(clusters) == {r.problem_id for r in records} and all(clusters.values())
    assert "no_llm 4" in result.output


def test_miner_test_judges_and_scores_as_a_validators_qualifying_run(
        small_world: SampleWorld, suite_files: list[Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ARENA_JUDGE_BASE_URL", "ARENA_JUDGE_MODELS"):
        monkeypatch.delenv(name, raising=False)  # the settings' judge is then the offline rules
    result = CliRunner().invoke(app, _args(BASELINE, small_world, suite_files, tmp_path))
    assert result.exit_code == 0, result.output

    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'home' / 'trajectories.sqlite3'}") as store:
        stored = sorted(store.load(store.attempt_ids()), key=lambda a: a.record.problem_id)
    # Every attempt carries its verdict in the store, as a validator's run records it.
    assert all(a.judge is not None and a.judge.model == OFFLINE_JUDGE for a in stored)
    verdicts = [OfflineJudge().judge(JudgeInput.from_record(a.record)) for a in stored]
    assert [a.judge.quality for a in stored if a.judge] == [v.quality for v in verdicts]
    expected = suite_score([a.record.score.success for a in stored], verdicts,
                           [a.record.problem_id for a in stored])
    assert expected.coefficient < 1  # the baseline never reasons: the coefficient cuts its score
    table = result.output[result.output.index(f"final score (judge: {expected.judge_label})"):]
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in table.splitlines()
             if line.startswith("│")]
    rows = {row[0]: row[1:] for row in cells if row[0] in ("product", "shop", "all")}
    assert set(rows) == {"product", "shop", "all"}
    assert rows["all"] == [f"{len(stored)}/{len(stored)}", f"{expected.success_rate:.1%}",
                           f"{expected.mean_quality:.3f}", f"{expected.coefficient:.4f}",
                           f"{expected.score:.2%}"]


def test_a_rejected_agent_never_runs(small_world: SampleWorld, suite_files: list[Path],
                                     tmp_path: Path) -> None:
    agent = tmp_path / "sneaky.py"
    agent.write_text("import subprocess\n\ndef agent_main(problem):\n    subprocess.run(['id'])\n"
                     "    return []\n")
    result = CliRunner().invoke(app, _args(agent, small_world, suite_files, tmp_path))
    assert result.exit_code == EXIT_REJECTED, result.output
    assert "rejected" in result.output and "line 1" in result.output
    assert not (tmp_path / "out.jsonl").exists()


def test_a_suite_whose_answers_are_not_in_the_catalog_stops_unless_allowed(
        small_world: SampleWorld, suite_files: list[Path], tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.jsonl"
    line = orjson.loads(suite_files[0].read_text().splitlines()[0])
    line["reward"]["product_id"] = "no-such-product-42"
    foreign.write_bytes(orjson.dumps(line) + b"\n")
    args = _args(BASELINE, small_world, [*suite_files, foreign], tmp_path)

    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == EXIT_MISSING_ANSWERS, refused.output
    said = " ".join(refused.output.split())  # whatever the console's width wrapped
    assert "1 answer ids of 1 of the 5 problems are not in the catalog" in said
    assert "no-such-product-42" in said and "--allow-missing-answers" in said
    assert not (tmp_path / "out.jsonl").exists()

    allowed = CliRunner().invoke(app, [*args, "--allow-missing-answers", "--no-store"])
    assert allowed.exit_code == 0, allowed.output
    assert "not in the catalog" in allowed.output
    assert len((tmp_path / "out.jsonl").read_bytes().splitlines()) == 5


def test_a_custom_catalog_needs_its_suite(small_world: SampleWorld, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["test", str(BASELINE), "--catalog", str(small_world.catalog_dir),
                                      "--home", str(tmp_path)])
    assert result.exit_code != 0 and "--suite" in result.output


def test_an_unreachable_store_stops_before_running_with_a_hint(
        small_world: SampleWorld, suite_files: list[Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_STORE_URL", "postgresql+psycopg://nobody@127.0.0.1:1/none")
    result = CliRunner().invoke(app, _args(BASELINE, small_world, suite_files, tmp_path))
    assert result.exit_code == EXIT_NO_STORE, result.output
    assert "--no-store" in result.output
    assert not (tmp_path / "out.jsonl").exists() or not (tmp_path / "out.jsonl").read_bytes()


def test_scripted_llm_runs_an_llm_agent_end_to_end_and_its_trajectories_count_as_agentic(
        small_world: SampleWorld, suite_files: list[Path], tmp_path: Path) -> None:
    react = REPO / "shoppingbench" / "agents" / "react_llm.py"
    result = CliRunner().invoke(app, [*_args(react, small_world, suite_files, tmp_path), "--scripted-llm"])
    assert result.exit_code == 0, result.output
    assert "test double" in result.output
    records = [AttemptRecord.model_validate(orjson.loads(line))
               for line in (tmp_path / "out.jsonl").read_bytes().splitlines()]
    assert len(records) == 4 and all(r.failure is None for r in records)
    inference = [c for r in records for c in r.proxy_log if c.kind == "inference"]
    assert inference and all(c.status == 200 and c.model == SCRIPTED_MODEL for c in inference)
    assert any(r.score.success for r in records)
    assert "agentic 4" in result.output


TEMPLATE = REPO / "tests" / "fixtures" / "agents" / "oro_template_agent.py"


@pytest.mark.parametrize("models", [[], ["deepseek-ai/DeepSeek-V3.2-TEE"]], ids=["scripted-name", "--model"])
def test_an_agent_in_the_reference_templates_style_scores_under_scripted_llm(
        models: list[str], small_world: SampleWorld, suite_files: list[Path], tmp_path: Path) -> None:
    """It asks for the model in SANDBOX_MODEL, imports ujson and sends filter values the reference server
    ignores: it runs, is answered under the model it named, and scores."""
    model_args = [arg for model in models for arg in ("--model", model)]
    result = CliRunner().invoke(app, [*_args(TEMPLATE, small_world, suite_files, tmp_path), "--scripted-llm",
                                      *model_args])
    assert result.exit_code == 0, result.output
    records = [AttemptRecord.model_validate(orjson.loads(line))
               for line in (tmp_path / "out.jsonl").read_bytes().splitlines()]
    assert all(r.failure is None for r in records), [r.failure for r in records]
    inference = [c for r in records for c in r.proxy_log if c.kind == "inference"]
    assert inference and {c.model for c in inference} == {models[0] if models else SCRIPTED_MODEL}
    searches = [c for r in records for c in r.proxy_log if c.path == "/search/find_product"]
    assert searches and all(c.status == 200 and c.params["sort"] == "relevance" for c in searches)
    assert sum(r.score.success for r in records) > 0
    assert "first proxy refusal" not in result.output


def test_proxy_refusals_are_counted_in_the_table_with_the_first_message(
        small_world: SampleWorld, suite_files: list[Path], tmp_path: Path) -> None:
    agent = tmp_path / "wrong_model.py"
    agent.write_text("from src.agent.proxy_client import ProxyClient\n\n\ndef agent_main(problem):\n"
                     "    ProxyClient(max_retries=1).post('/inference/chat/completions', json_data={\n"
                     "        'model': 'some-other-model',\n"
                     "        'messages': [{'role': 'user', 'content': 'hi'}]})\n"
                     "    return []\n")
    with running_server(create_stub_app(shopping_policy)) as url:
        result = CliRunner(env={"COLUMNS": "200"}).invoke(app, [
            *_args(agent, small_world, suite_files, tmp_path), "--inference-url", f"{url}/v1",
            "--model", "allowed-model"])
    assert result.exit_code == 0, result.output
    refused = [line for line in result.output.splitlines() if "all (ASR)" in line]
    assert refused and refused[0].rstrip(" │").split()[-1] == "4", result.output
    assert "first proxy refusal: 403 on /inference/chat/completions: model 'some-other-model' is not " \
           "allowed; allowed: allowed-model" in result.output


def test_scripted_llm_and_an_endpoint_are_exclusive(small_world: SampleWorld, suite_files: list[Path],
                                                    tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*_args(BASELINE, small_world, suite_files, tmp_path), "--scripted-llm",
                                      "--inference-url", "http://127.0.0.1:9/v1"])
    assert result.exit_code == 2 and "--scripted-llm" in result.output


def _records(out: Path) -> list[AttemptRecord]:
    return [AttemptRecord.model_validate(orjson.loads(line)) for line in out.read_bytes().splitlines()]


def _ran(out: Path) -> list[str]:
    return [record.problem_id for record in _records(out)]


def test_miner_test_practice_runs_the_validators_practice_suite_of_a_week(
        small_world: SampleWorld, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_QUALIFYING_SUITE_PER_CATEGORY", "1")
    result = CliRunner().invoke(app, [
        "test", str(BASELINE), "--practice", "--week", "2026-W48",
        "--catalog", str(small_world.catalog_dir), "--workers", "2", "--home", str(tmp_path / "home"),
        "--out", str(tmp_path / "out.jsonl"), "--no-store"])
    assert result.exit_code == 0, result.output
    ran = set(_ran(tmp_path / "out.jsonl"))
    engine = create_engine("sqlite://")
    Base.metadata.create_all(engine)
    sizes = dict.fromkeys(CATEGORIES, 1)
    plan = SuitePlan(race_per_category=sizes, qualifying_per_category=sizes, race_time=time(16),
                     first_day=date(2026, 11, 1))
    with ProblemGenerator.open(small_world.catalog_dir) as generator:
        validators = PublicSuites(FixedSource(generator), plan=plan, seed_at=lambda slot: None,
                                  cache=SuiteCache(engine))
        week = validators.practice_suite(date(2026, 11, 26))  # a Thursday of 2026-W48
    assert ran == {p.id for p in week} and len(ran) == 3
    bad = CliRunner().invoke(app, ["test", str(BASELINE), "--practice", "--week", "week 48",
                                   "--catalog", str(small_world.catalog_dir), "--home", str(tmp_path / "h")])
    assert bad.exit_code == 2 and "ISO week" in bad.output


def test_miner_test_generated_runs_fresh_suites_of_the_qualifying_size_each_scored_as_qualifying_is(
        small_world: SampleWorld, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_QUALIFYING_SUITE_PER_CATEGORY", "1")
    common = ["--catalog", str(small_world.catalog_dir), "--workers", "2", "--home", str(tmp_path / "home"),
              "--no-store"]
    seeded = CliRunner().invoke(app, ["test", str(BASELINE), "--generated", "--seed", "a", "--seed", "b",
                                      *common, "--out", str(tmp_path / "seeded.jsonl")],
                                env={"COLUMNS": "200"})
    assert seeded.exit_code == 0, seeded.output
    with ProblemGenerator.open(small_world.catalog_dir) as generator:
        sizes = dict.fromkeys(CATEGORIES, 1)
        suites = {seed: generator.generate(f"generated/{seed}", sizes) for seed in "ab"}
    ran = _ran(tmp_path / "seeded.jsonl")
    assert sorted(ran) == sorted(p.id for suite in suites.values() for p in suite) and len(ran) == 6
    records = {r.problem_id: r for r in _records(tmp_path / "seeded.jsonl")}
    for seed, suite in suites.items():  # one row per suite, its final score as a qualifying run's
        row = next(line for line in seeded.output.splitlines() if f"suite generated/{seed}" in line)
        scored = suite_score([records[p.id].score.success for p in suite],
                             [OfflineJudge().judge(JudgeInput.from_record(records[p.id])) for p in suite],
                             [p.id for p in suite])
        assert row.rstrip(" │|").endswith(f"{scored.score:.2%}"), row
    fresh = [CliRunner().invoke(app, ["test", str(BASELINE), "--generated", *common,
                                      "--out", str(tmp_path / f"fresh{n}.jsonl")]) for n in range(2)]
    assert all(r.exit_code == 0 for r in fresh), fresh[0].output
    first, second = (set(_ran(tmp_path / f"fresh{n}.jsonl")) for n in range(2))
    assert len(first) == 3 and first != second  # a random seed each time
    both = CliRunner().invoke(app, ["test", str(BASELINE), "--generated", "--practice", *common])
    assert both.exit_code == 2
    stray = CliRunner().invoke(app, ["test", str(BASELINE), "--seed", "a", *common])
    assert stray.exit_code == 2 and "--generated" in stray.output


def test_a_row_with_no_scored_attempt_says_so_and_the_all_row_counts_what_was_scored() -> None:
    from rich.console import Console as RichConsole

    from arena.judge import final_score
    from arena.validator.local_test import final_score_table

    scores = {"product": final_score(1.0, []), "shop": final_score(0.0, []), "voucher": final_score(0.0, []),
              "all": final_score(1.0, [])}
    scored = {"product": (1, 2), "shop": (0, 2), "voucher": (0, 2), "all": (1, 6)}
    console = RichConsole(record=True, width=200)
    console.print(final_score_table(scores, scored))
    text = console.export_text()
    shop = next(line for line in text.splitlines() if "shop" in line)
    everything = next(line for line in text.splitlines() if " all " in line)
    assert "not scored" in shop and "0.0%" not in shop and "0/2" in shop
    assert "1/6" in everything and "100.0%" in everything


def test_miner_test_stops_when_the_inference_endpoint_is_down(tmp_path: Path) -> None:
    from typer.testing import CliRunner as Runner

    from arena.validator.local_test import probe_inference
    from neurons.miner import EXIT_ENDPOINT_DOWN
    from neurons.miner import app as miner_app

    assert probe_inference("http://127.0.0.1:1/v1", "key") is not None
    agent = tmp_path / "agent.py"
    agent.write_text("def agent_main(problem):\n    return []\n")
    result = Runner().invoke(miner_app, ["test", str(agent), "--inference-url", "http://127.0.0.1:1/v1",
                                         "--home", str(tmp_path / "home"), "--no-store",
                                         "--per-category", "1"])
    assert result.exit_code == EXIT_ENDPOINT_DOWN, result.output
    assert "does not answer" in result.output and "--scripted-llm" in result.output



def _crashing(on: str | None = None) -> str:
    """An agent raising two frames deep: on every problem, or only on the one asking ``on``."""
    condition = "" if on is None else f"    if problem['query'] != {on!r}:\n        return []\n"
    return (f"def _parse(problem):\n{condition}    raise ValueError('cannot read the query')\n\n\n"
            "def agent_main(problem):\n    return _parse(problem)\n")


def test_an_agent_whose_every_attempt_crashed_exits_10_with_the_traceback_on_the_console(
        small_world: SampleWorld, suite_files: list[Path], tmp_path: Path) -> None:
    agent = tmp_path / "crashing.py"
    agent.write_text(_crashing())
    result = CliRunner().invoke(app, _args(agent, small_world, suite_files, tmp_path), env={"COLUMNS": "200"})
    assert result.exit_code == EXIT_ALL_CRASHED, result.output
    records = _records(tmp_path / "out.jsonl")
    assert len(records) == 4 and all(r.failure is not None and r.failure.kind == "crash" for r in records)
    assert "failed attempts: crash 4" in result.output
    assert result.output.index("first crash (") < result.output.index("Traceback (most recent call last):")
    # The traceback itself, frame by frame, not only the JSONL's stderr_tail.
    shown = result.output[result.output.index("Traceback (most recent call last):"):]
    assert shown.index("line 6, in agent_main") \
        < shown.index("line 2, in _parse") < shown.index("ValueError: cannot read the query")
    assert shown.index("ValueError: cannot read the query") < shown.index("every attempt crashed: fix")
    assert str(tmp_path / "out.jsonl") in shown


def test_a_crash_of_some_attempts_is_shown_and_exits_0(
        small_world: SampleWorld, suite_files: list[Path], tmp_path: Path) -> None:
    shop = orjson.loads(suite_files[1].read_text().splitlines()[0])["query"]
    agent = tmp_path / "partly.py"
    agent.write_text(_crashing(on=shop))
    result = CliRunner().invoke(app, _args(agent, small_world, suite_files, tmp_path), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    (crashed,) = [r for r in _records(tmp_path / "out.jsonl") if r.failure is not None]
    assert crashed.query == shop and crashed.failure is not None and crashed.failure.kind == "crash"
    assert "failed attempts: crash 1" in result.output
    assert f"first crash ({crashed.problem_id})" in result.output
    assert "line 4, in _parse" in result.output and "every attempt crashed" not in result.output


def test_without_an_llm_endpoint_it_warns_and_the_attempts_are_labelled_no_llm(
        small_world: SampleWorld, suite_files: list[Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARENA_INFERENCE_BASE_URL", raising=False)
    react = REPO / "shoppingbench" / "agents" / "react_llm.py"
    result = CliRunner().invoke(app, _args(react, small_world, suite_files, tmp_path), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    warning = result.output.index("warning: no LLM is configured")
    assert warning < result.output.index("all (ASR)")  # before anything runs
    assert "--scripted-llm" in result.output[warning:warning + 400]
    records = _records(tmp_path / "out.jsonl")
    answered = [c for r in records for c in r.proxy_log if c.kind == "inference" and c.status == 200]
    assert len(records) == 4 and answered == [] and all(r.failure is None for r in records)
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'home' / 'trajectories.sqlite3'}") as store:
        stored = store.load(store.attempt_ids())
    assert len(stored) == 4 and all(a.label is not None and a.label.label == "no_llm" for a in stored)
    assert "no_llm 4" in result.output


def test_a_syntax_error_is_reported_with_its_line(small_world: SampleWorld, suite_files: list[Path],
                                                   tmp_path: Path) -> None:
    agent = tmp_path / "unfinished.py"
    agent.write_text("def agent_main(problem):\n    steps = [\n    return steps\n")
    result = CliRunner().invoke(app, _args(agent, small_world, suite_files, tmp_path))
    assert result.exit_code == EXIT_REJECTED, result.output
    assert "  syntax error at line 2: '[' was never closed" in result.output
    assert "[security] syntax" not in result.output
    assert not (tmp_path / "out.jsonl").exists()


REACT = REPO / "shoppingbench" / "agents" / "react_llm.py"
WIDE = {"COLUMNS": "400"}
"""A console wide enough that no cell of the per-attempt table wraps."""


def _attempt_rows(output: str) -> dict[str, list[str]]:
    """The per-attempt table's rows by problem id: category, success, quality, gate, judge reason, filter,
    filter reasons."""
    table = output[output.index("each attempt: the judge's verdict"):output.index("success: problems whose")]
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in table.splitlines()
             if line.startswith("│")]
    return {row[0]: row[1:] for row in cells if row[0] != "problem"}


def _explained_lines(out: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in out.read_bytes().splitlines()]


def _stored_by_problem(tmp_path: Path) -> dict[str, StoredAttempt]:
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'home' / 'trajectories.sqlite3'}") as store:
        return {a.record.problem_id: a for a in store.load(store.attempt_ids())}


def test_each_attempt_is_explained_on_the_console_and_in_the_jsonl_as_the_store_recorded_it(
        small_world: SampleWorld, suite_files: list[Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripted LLM (a test double for a hosted model) drives the ReAct agent; the offline judge."""
    for name in ("ARENA_JUDGE_BASE_URL", "ARENA_JUDGE_MODELS"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner(env=WIDE).invoke(app, [*_args(REACT, small_world, suite_files, tmp_path),
                                              "--scripted-llm"])
    assert result.exit_code == 0, result.output
    stored = _stored_by_problem(tmp_path)
    lines = _explained_lines(tmp_path / "out.jsonl")
    assert sorted(line["problem_id"] for line in lines) == sorted(stored) and len(stored) == 4
    rows = _attempt_rows(result.output)
    assert set(rows) == set(stored)
    for line in lines:
        attempt = stored[line["problem_id"]]
        assert attempt.judge is not None and attempt.label is not None
        verdict, label = line["verdict"], line["filter"]
        level = QUALITY_LEVELS.index(attempt.judge.quality) + 1
        gate = None if level > len(GATES) else level
        expected_gate = "passed" if gate is None else f"{gate}: {GATES[gate - 1]}"
        assert verdict == {"quality": attempt.judge.quality, "failed_gate": gate,
                           "gate": expected_gate, "reason": attempt.judge.explanation,
                           "judge": attempt.judge.model, "offline": attempt.judge.offline}
        assert label == {"label": attempt.label.label, "reasons": attempt.label.reasons,
                         "filter": attempt.label.filter}
        category, success, quality, gate_cell, reason, filter_label, filter_reasons = rows[line["problem_id"]]
        assert (category, success, quality) == (attempt.record.category,
                                                "yes" if attempt.record.score.success else "no",
                                                f"{attempt.judge.quality:.1f}")
        assert (gate_cell, filter_label) == (expected_gate, attempt.label.label)
        assert attempt.judge.explanation.startswith(reason.removesuffix("..."))
        assert "; ".join(attempt.label.reasons).startswith(filter_reasons.removesuffix("..."))
    assert {line["filter"]["label"] for line in lines} == {"agentic"}
    assert "failed_gate (1-4, null: passed)" in result.output  # the legend names the JSONL's fields


def test_a_judge_verdict_that_fails_a_gate_shows_the_gate_and_the_judges_reason(
        small_world: SampleWorld, suite_files: list[Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge model is a stub endpoint (a test double for a hosted judge) answering gate 2 failed."""
    reason = "the thinking restates the query and never weighs what the search returned"
    answer = orjson.dumps({"reasoning_quality": 0.3, "explanation": reason}).decode()
    with running_server(create_stub_app(lambda body: StubReply(content=answer))) as url:
        monkeypatch.setenv("ARENA_JUDGE_BASE_URL", f"{url}/v1")
        monkeypatch.setenv("ARENA_JUDGE_MODELS", "judge-double")
        result = CliRunner(env=WIDE).invoke(app, [*_args(REACT, small_world, suite_files, tmp_path),
                                                  "--scripted-llm"])
    assert result.exit_code == 0, result.output
    gate = f"2: {GATES[1]}"
    rows = _attempt_rows(result.output)
    assert len(rows) == 4 and all(row[2:5] == ["0.3", gate, reason] for row in rows.values()), rows
    lines = _explained_lines(tmp_path / "out.jsonl")
    assert all(line["verdict"] == {"quality": 0.3, "failed_gate": 2, "gate": gate, "reason": reason,
                                   "judge": "judge-double", "offline": False} for line in lines)
    stored = _stored_by_problem(tmp_path)
    assert all(a.judge is not None and a.judge.explanation == reason for a in stored.values())
