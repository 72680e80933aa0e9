"""The site benchmark in quick mode: a tiny world on SQLite and PostgreSQL, served by the validator API
under uvicorn, every figure present and no request failed; a second run reuses the built world."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks.site import benchmark as site
from benchmarks.site.build import WorldSpec

KEYS = {"page_p95_ms", "pages", "missing", "concurrent_p95_ms", "errors", "concurrent_requests", "clients"}


def _run(home: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[dict[str, Any], str]:
    site.main(["--quick", "--home", str(home), *flags])
    out = capsys.readouterr()
    result: dict[str, Any] = orjson.loads(out.out.strip().splitlines()[-1])
    return result, out.err


def test_quick_run_reports_every_figure_on_both_backends_and_reuses_its_world(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result, first = _run(tmp_path, capsys, "--requests", "4", "--clients", "20", "--client-requests", "2")
    assert "reusing" not in first
    postgresql = result["postgresql"]
    for figures in (result, postgresql):
        assert set(figures) >= KEYS
        assert figures["errors"] == 0
        assert figures["concurrent_requests"] == 40
        pages = figures["pages"]
        assert set(pages) == {"leaderboard", "submission", "attempt", "dumps"}
        assert pages["leaderboard"]["status"] == 200, "the leaderboard exists on every build"
        measured = [p["p95_ms"] for p in pages.values() if p["status"] != "missing"]
        assert figures["page_p95_ms"] == max(measured)
        assert figures["missing"] == sorted(n for n, p in pages.items() if p["status"] == "missing")
    assert result["attempts"] == 3 * 360

    built = tmp_path / "bench" / "site" / WorldSpec(days=3, attempts_per_day=360).key
    stamp = (built / "built.json").stat().st_mtime_ns
    again, second = _run(
        tmp_path,
        capsys,
        "--backends",
        "sqlite",
        "--requests",
        "2",
        "--clients",
        "4",
        "--client-requests",
        "1",
    )
    assert "reusing the built world" in second
    assert (built / "built.json").stat().st_mtime_ns == stamp
    assert again["errors"] == 0 and "postgresql" not in again
