"""The `dump` command: migrate, label and export through the CLI, with clear errors."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from neurons.dump import app
from tests.trajectories.records import T0
from trajectories.doubles.synthetic import make_attempt, make_problems
from trajectories.store import TrajectoryStore
from trajectories.store.migrate import head_revision

runner = CliRunner()
DAY = "2026-09-21"  # T0 falls on it


def _invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.output


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No arena database under this home: these stores are split by the hash rule, whatever the machine
    holds under the default home."""
    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "home"))


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cli.sqlite3'}"


def _fill(url: str) -> None:
    rng = random.Random(2)
    problems = make_problems(rng, 9, per_cluster=3)
    with TrajectoryStore.open(url) as store:
        store.register_problems(problems)
        store.write_attempts([make_attempt(rng, style, p, run_id=f"run-{style}", agent_hash=style * 8,
                                           started_at=T0 + i)
                              for style in ("react", "sub_task", "scripted") for i, p in enumerate(problems)])


def test_migrate_label_export(sqlite_url: str, tmp_path: Path) -> None:
    code, output = _invoke("migrate", "--store-url", sqlite_url)
    assert code == 0, output
    assert f"store schema: empty -> {head_revision()}" in output
    _fill(sqlite_url)

    code, output = _invoke("label", "--store-url", sqlite_url, "--day", DAY, "--no-progress")
    assert code == 0, output
    assert 'labelled 27 attempts: {"agentic":9,"no_llm":9,"sub_task":9}' in output
    code, output = _invoke("label", "--store-url", sqlite_url, "--no-progress")
    assert "labelled 0 attempts" in output

    held_out = tmp_path / "held-out.txt"
    held_out.write_text("# clusters of the published held-out set\ncluster-00001\n\n")
    out = tmp_path / "dump"
    code, output = _invoke("export", "--store-url", sqlite_url, "--day", DAY, "--out", str(out),
                           "--held-out-fraction", "0", "--held-out-clusters", str(held_out), "--no-jsonl")
    assert code == 0, output
    assert f"{DAY}: 27 attempts -> {out}" in output
    assert "by hash of the cluster id (no arena database, so no exposure ledger)" in output
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    assert manifest["splits"] == {"train": 18, "held_out": 9}
    assert manifest["split_rule"]["held_out_clusters"] == 1
    held = pq.read_table(out / "data" / "held_out-00000.parquet").to_pylist()
    assert {r["leak_cluster"] for r in held} == {"cluster-00001"}
    assert not list(out.rglob("*.jsonl.gz"))

    code, output = _invoke("export", "--store-url", sqlite_url, "--day", DAY, "--out", str(out))
    assert code == 2 and "--overwrite" in output


def test_windows_and_thresholds_from_the_command_line(sqlite_url: str, tmp_path: Path) -> None:
    _fill(sqlite_url)
    thresholds = tmp_path / "filter.json"
    thresholds.write_text('{"min_executed_calls": 1000}')
    out = tmp_path / "window"
    code, output = _invoke("export", "--store-url", sqlite_url, "--since", "2026-09-21T14:13:25",
                           "--until", "2026-09-21T14:13:28+00:00", "--out", str(out), "--filter-config",
                           str(thresholds), "--no-progress")
    assert code == 0, output
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    assert manifest["window"]["since"] == "2026-09-21T14:13:25Z"
    assert manifest["stats"]["attempts"] == 9  # T0 + 5, 6, 7 for each of the three agents
    assert manifest["stats"]["counts"]["label"] == {"no_llm": 3, "sub_task": 6}, "none is agentic with 1000"


def test_the_store_url_comes_from_the_environment(sqlite_url: str, tmp_path: Path) -> None:
    _fill(sqlite_url)
    code, output = _invoke("export", "--day", DAY, "--out", str(tmp_path / "env"),
                           env={"ARENA_STORE_URL": sqlite_url})
    assert code == 0, output
    assert "27 attempts" in output


def test_without_out_a_day_goes_to_the_dumps_folder_the_site_serves(sqlite_url: str, tmp_path: Path) -> None:
    _fill(sqlite_url)
    dumps = tmp_path / "dumps"
    code, output = _invoke("export", "--day", DAY, "--no-progress",
                           env={"ARENA_STORE_URL": sqlite_url, "ARENA_DUMPS_DIR": str(dumps)})
    assert code == 0, output
    assert f"{DAY}: 27 attempts -> {dumps / DAY}" in output
    assert (dumps / DAY / "manifest.json").is_file()


@pytest.mark.parametrize(("args", "message"), [
    (["--day", DAY, "--since", "2026-09-21"], "either --day or --since/--until"),
    (["--since", "2026-09-21"], "both --since and --until"),
    (["--since", "yesterday", "--until", "2026-09-22"], "not an ISO 8601 time"),
    (["--since", "2026-09-22", "--until", "2026-09-21"], "before it starts"),
    (["--day", "21/09/2026"], "Invalid value"),
])
def test_bad_windows_are_refused(sqlite_url: str, tmp_path: Path, args: list[str], message: str) -> None:
    _fill(sqlite_url)
    code, output = _invoke("export", "--store-url", sqlite_url, "--out", str(tmp_path / "x"), *args)
    assert code == 2
    assert message in " ".join(output.split())


def test_an_unmigrated_store_is_refused_with_the_fix(sqlite_url: str, tmp_path: Path) -> None:
    code, output = _invoke("export", "--store-url", sqlite_url, "--day", DAY, "--out", str(tmp_path / "x"))
    assert code == 2
    assert "run `dump migrate`" in output


def test_days_lists_the_stored_days_with_counts_by_label(sqlite_url: str, tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    env = {"ARENA_STORE_URL": sqlite_url, "ARENA_DUMPS_DIR": str(dumps)}
    _invoke("migrate", "--store-url", sqlite_url)
    code, output = _invoke("days", env=env)
    assert code == 0 and "the store holds no attempt" in output
    _fill(sqlite_url)
    code, output = _invoke("days", env=env)
    assert code == 0, output
    assert f"{DAY} 27 attempts unlabelled 27" in " ".join(output.split())
    _invoke("label", "--day", DAY, "--no-progress", env=env)
    _invoke("export", "--day", DAY, "--no-progress", env=env)
    listed = runner.invoke(app, ["days", "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    # stdout holds the listing alone (the log lines go to stderr, JSON too when it is no terminal).
    assert [orjson.loads(line) for line in listed.stdout.splitlines()] == [
        {"day": DAY, "attempts": 27, "labels": {"agentic": 9, "no_llm": 9, "sub_task": 9}, "exported": True}]


def test_exporting_an_empty_day_says_so_and_writes_nothing(sqlite_url: str, tmp_path: Path) -> None:
    _fill(sqlite_url)
    out = tmp_path / "empty"
    code, output = _invoke("export", "--store-url", sqlite_url, "--day", "2026-09-22", "--out", str(out),
                           "--no-progress")
    assert code == 1
    assert "no attempt started in 2026-09-22" in output and "dump days" in output
    assert not out.exists()
