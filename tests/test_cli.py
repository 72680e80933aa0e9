"""The `arena` command as people run it: real subprocesses, a throwaway data root, offline model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

ARENA = [sys.executable, "-m", "neurons.cli"]


def _run(args: list[str], home: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ARENA_HOME": str(home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "ARENA_LOG_FORMAT": "json"}
    return subprocess.run([*ARENA, *args], env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=Path(__file__).resolve().parents[1], check=False)


def test_demo_builds_the_world_once_and_scores_every_problem(tmp_path: Path) -> None:
    first = _run(["demo", "--products", "1500", "--per-category", "3", "--workers", "2"], tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    for label in ("product", "shop", "voucher", "all (ASR)"):
        assert label in first.stdout
    assert "sample_world_generating" in first.stderr
    (results,) = (tmp_path / "results").glob("demo-*.jsonl")
    attempts = [orjson.loads(line) for line in results.read_bytes().splitlines()]
    assert len(attempts) == 9
    assert {a["score"]["category"] for a in attempts} == {"product", "shop", "voucher"}
    assert all(a["steps"] and a["score"]["error"] is None for a in attempts)

    again = _run(["demo", "--products", "1500", "--per-category", "3"], tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "sample_world_reused" in again.stderr and "sample_world_generating" not in again.stderr


def test_catalog_import_reports_bad_lines_and_strict_stops(tmp_path: Path) -> None:
    good = orjson.dumps({"id": "1", "contents": "red mug", "product": {
        "product_id": "1", "shop_id": "9", "title": "Red Mug", "price": 10.0}}).decode()
    source = tmp_path / "documents.jsonl"
    source.write_text(f"{good}\n{{not json\n")
    lenient = _run(["catalog", "import", str(source), "--catalog-dir", str(tmp_path / "c1")], tmp_path)
    assert lenient.returncode == 0, lenient.stderr[-2000:]
    assert "imported 1 of 2 lines (1 bad)" in lenient.stdout
    assert "line 2:" in lenient.stderr

    strict = _run(["catalog", "import", str(source), "--catalog-dir", str(tmp_path / "c2"), "--strict"],
                  tmp_path)
    assert strict.returncode == 2
    assert "line 2" in strict.stderr


def test_serving_a_missing_catalog_says_how_to_build_one(tmp_path: Path) -> None:
    result = _run(["tools", "serve", "--catalog-dir", str(tmp_path / "nothing")], tmp_path)
    assert result.returncode == 2
    assert "arena catalog import" in result.stderr
