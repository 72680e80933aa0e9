"""The dumps index (``GET /dumps``, ``/api/dumps``, ``/api/dumps/{day}``, the files under
``/dumps/{day}/``) over the network demo's days exported by ``dump export``, served by the validator API
under uvicorn on loopback: the manifest's figures, the files with their checksums, the
``load_dataset`` line read by ``datasets`` itself from this server, and the page in headless Chromium."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fastapi.testclient import TestClient

from arena.race import ManualClock, MemoryEventStore
from arena.submissions.store import FileStore
from arena.validator.api import ArenaView, create_app
from tests.arena.validator.site_support import BrowserPage, DemoSite, screenshot
from trajectories.store import TrajectoryStore


def _manifest(site: DemoSite, day: str) -> dict[str, Any]:
    assert site.dumps is not None
    loaded: dict[str, Any] = orjson.loads((site.dumps / day / "manifest.json").read_bytes())
    return loaded


def _days(site: DemoSite) -> list[str]:
    assert site.dumps is not None
    return sorted((p.name for p in site.dumps.iterdir() if (p / "manifest.json").is_file()), reverse=True)


def test_the_api_lists_every_exported_day_with_its_manifest_figures(
    demo_site: DemoSite, site_url: str
) -> None:
    days = _days(demo_site)
    assert days, "the demo exported no day"
    with httpx.Client(base_url=site_url) as http:
        listed = http.get("/api/dumps")
        assert listed.headers["cache-control"] == "public, max-age=30" and listed.headers["etag"]
        body = listed.json()
        assert [d["day"] for d in body["items"]] == days and body["total"] == len(days)
        assert (
            http.get("/api/dumps", params={"page": 2, "page_size": 1}).json()["items"] == (body["items"][1:2])
        )
        day = days[0]
        manifest = _manifest(demo_site, day)
        one = http.get(f"/api/dumps/{day}")
        assert one.headers["cache-control"] == "public, max-age=86400"
        detail = one.json()
        counts = manifest["stats"]["counts"]
        assert detail["attempts"] == manifest["stats"]["attempts"] > 0
        assert (detail["categories"], detail["labels"], detail["splits"]) == (
            counts["category"],
            counts["label"],
            manifest["splits"],
        )
        assert detail["category_labels"] == counts["category_label"]
        everything = manifest["stats"]["scores"]["all"]
        assert detail["scores"]["all"]["rule_histogram"] == everything["rule_histogram"]["counts"]
        assert detail["scores"]["all"]["judge_quality"] == everything["judge_quality"]
        assert {f["path"]: f["sha256"] for f in detail["file_list"]} == {
            path: f["sha256"] for path, f in manifest["files"].items()
        }
        assert http.get("/api/dumps/2001-01-01").status_code == 404
        assert http.get("/api/dumps/not-a-day").status_code == 422
        schema = http.get("/openapi.json").json()["paths"]
        assert {"/api/dumps", "/api/dumps/{day}"} <= set(schema)


def test_the_files_are_served_as_exported_and_nothing_else_is(demo_site: DemoSite, site_url: str) -> None:
    day = _days(demo_site)[0]
    manifest = _manifest(demo_site, day)
    with httpx.Client(base_url=site_url) as http:
        for path, meta in manifest["files"].items():
            got = http.get(f"/dumps/{day}/{path}")
            assert got.status_code == 200 and hashlib.sha256(got.content).hexdigest() == meta["sha256"]
            assert got.headers["cache-control"] == "public, max-age=86400"
        assert http.head(f"/dumps/{day}/manifest.json").status_code == 200
        assert "load_dataset" in http.get(f"/dumps/{day}/README.md").text
        for bad in (
            "../arena.sqlite3",
            "data/../../arena.sqlite3",
            "%2e%2e/%2e%2e/arena.sqlite3",
            "data",
            "nothing.parquet",
        ):
            answer = http.get(f"/dumps/{day}/{bad}", follow_redirects=True)
            assert answer.status_code in (404, 422) and b"SQLite format" not in answer.content, bad


def test_the_load_dataset_line_reads_the_day_from_this_server(
    demo_site: DemoSite, site_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    datasets = pytest.importorskip("datasets")  # a dev dependency: present wherever the suite runs
    # The suite runs with the Hub offline (scripts/test.sh), which in `datasets` also refuses plain http
    # URLs; this line reaches only the validator's loopback server.
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    day = _days(demo_site)[0]
    line = httpx.get(f"{site_url}/api/dumps/{day}").json()["load_dataset"]
    assert line.startswith('load_dataset("parquet", data_files={') and site_url in line

    def load_dataset(*args: Any, **kwargs: Any) -> Any:
        return datasets.load_dataset(*args, **kwargs, cache_dir=str(tmp_path / "hf-cache"))

    loaded = eval(line, {"load_dataset": load_dataset})  # the exact line the page shows
    assert {split: len(rows) for split, rows in loaded.items()} == _manifest(demo_site, day)["splits"]


def test_no_dumps_folder_says_so_and_text_from_a_manifest_is_escaped(tmp_path: Path) -> None:
    store = TrajectoryStore.open(f"sqlite:///{tmp_path / 'trajectories.sqlite3'}")
    clock = ManualClock(datetime(2026, 11, 20, tzinfo=UTC))
    view = ArenaView(
        events=MemoryEventStore(), store=store, files=FileStore(tmp_path / "agents"), clock=clock
    )
    client = TestClient(create_app(view))
    assert 'id="no-dumps"' in client.get("/dumps").text
    assert client.get("/api/dumps").json() == {"items": [], "page": 1, "page_size": 50, "total": 0}
    folder = tmp_path / "dumps" / "2026-11-19"
    folder.mkdir(parents=True)
    hostile = "<script>alert(1)</script>"
    scores = {
        "attempts": 1,
        "success_rate": 1.0,
        "mean_gt": 1.0,
        "mean_rule": 1.0,
        "mean_format": 1.0,
        "mean_length": 1.0,
        "rule_histogram": {"bins": 2, "counts": [0, 1]},
        "judge_quality": {hostile: 1},
    }
    counts = {
        "category": {hostile: 1},
        "label": {hostile: 1},
        "split": {"train": 1},
        "split_label": {"train": {hostile: 1}},
        "category_label": {hostile: {hostile: 1}},
    }
    (folder / "manifest.json").write_bytes(
        orjson.dumps(
            {
                "schema_version": 3,
                "window": {"label": "2026-11-19"},
                "split_rule": {},
                "splits": {"train": 1},
                "agents": {"agents": 1, "code_published": 0},
                "files": {},
                "stats": {"attempts": 1, "counts": counts, "scores": {"all": scores}},
            }
        )
    )
    view.dumps_dir = tmp_path / "dumps"
    page = client.get("/dumps").text
    assert hostile not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    store.close()


@pytest.mark.browser
def test_the_dumps_index_in_chromium(
    demo_site: DemoSite, site_url: str, browser_page: BrowserPage, screenshots_tmp: Path
) -> None:
    days = _days(demo_site)
    browser_page.open(site_url + "/dumps")
    page = browser_page.page
    articles = page.locator("article.dump")
    assert articles.evaluate_all("els => els.map(e => e.id)") == [f"day-{d}" for d in days]
    first = articles.first
    manifest = _manifest(demo_site, days[0])
    bars = first.locator("svg.bar-chart rect.bar")
    values = [float(v) for v in bars.evaluate_all("rs => rs.map(r => r.dataset.value)")]
    assert sum(values) == 2 * manifest["stats"]["attempts"]  # the rule histogram and the quality levels
    assert max(bars.evaluate_all("rs => rs.map(r => r.getBoundingClientRect().height)")) > 0
    links = first.locator("table.files a").evaluate_all("as => as.map(a => a.pathname)")
    assert links == [f"/dumps/{days[0]}/{path}" for path in sorted(manifest["files"])]
    code = first.locator("pre.load-dataset").inner_text()
    assert "from datasets import load_dataset" in code and f"{site_url}/dumps/{days[0]}/data/" in code
    assert page.locator('header nav a[aria-current="page"]').inner_text() == "Dumps"
    browser_page.requests.assert_loopback_only()
    screenshot(page, "dumps", screenshots_tmp)
