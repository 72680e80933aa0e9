"""The site's shared helpers (``arena.validator.api.site``): SVG charts are pure, escaped and readable
from the DOM; pagination and cache headers behave as the URL contract says; pages are autoescaped."""

from __future__ import annotations

from datetime import date, timedelta
from xml.etree import ElementTree

from fastapi import FastAPI, Request, Response
from fastapi.testclient import TestClient
from pydantic import BaseModel

from arena.validator.api.site.charts import Segment, Series, bar_chart, day_ticks, line_chart, reign_bar
from arena.validator.api.site.pages import PAGES, duration, score
from arena.validator.api.site.paging import MAX_PAGE_SIZE, Page, PageDep, cached_json, paginate

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert("x")</script>&'


def parse(svg: str) -> ElementTree.Element:
    return ElementTree.fromstring(svg)  # well-formed XML, or this raises


def test_line_chart_draws_one_path_per_series_with_its_values_and_escapes_names() -> None:
    days = [date(2026, 11, 1) + timedelta(days=n) for n in range(5)]
    winner = Series(HOSTILE, [(d.toordinal(), 0.2 + 0.1 * n) for n, d in enumerate(days)])
    field = Series("field", [(d.toordinal(), 0.1) for d in days])
    svg = line_chart([winner, field], title="Race scores", x_ticks=day_ticks(days))
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    paths = parse(svg).findall(f".//{SVG}path")
    assert [p.get("data-series") for p in paths] == [HOSTILE, "field"]
    assert paths[0].get("data-values", "").split()[-1] == f"{days[-1].toordinal()}:0.6000"
    assert len(parse(svg).findall(f".//{SVG}circle")) == 10


def test_an_empty_chart_renders_its_frame_and_says_no_data() -> None:
    for svg in (
        line_chart([], title="t"),
        line_chart([Series("a", [])], title="t"),
        bar_chart([], title="t"),
        reign_bar([], start=date(2026, 1, 1), end=date(2026, 1, 31), title="t"),
    ):
        tree = parse(svg)
        assert not tree.findall(f".//{SVG}path") and "no data" in svg
        assert not [r for r in tree.iter(f"{SVG}rect") if r.get("class") in ("bar", "reign")]


def test_a_single_point_and_a_flat_line_still_have_a_scale() -> None:
    svg = line_chart([Series("only", [(1.0, 0.5)])], title="t", y_range=None)
    assert "nan" not in svg.lower() and "inf" not in svg.lower()
    assert parse(svg).find(f".//{SVG}path") is not None


def test_bar_chart_scales_to_the_largest_bar() -> None:
    svg = bar_chart([("product", 4), ("shop", 2), (HOSTILE, 0)], title="Attempts")
    bars = [r for r in parse(svg).iter(f"{SVG}rect") if r.get("class") == "bar"]
    heights = [float(r.get("height", "0")) for r in bars]
    assert heights[0] == 2 * heights[1] and heights[2] == 0
    assert bars[2].get("data-label") == HOSTILE and "<script>" not in svg


def test_reign_bar_clips_segments_to_the_range_and_keeps_one_colour_per_holder() -> None:
    start, end = date(2026, 9, 1), date(2026, 11, 29)
    segments = [
        Segment("alice", date(2026, 8, 1), date(2026, 9, 10), href="/submissions/a/page"),
        Segment("bob", date(2026, 9, 11), date(2026, 10, 1)),
        Segment("alice", date(2026, 10, 2), date(2026, 12, 31)),
        Segment("gone", date(2026, 1, 1), date(2026, 2, 1)),
    ]
    svg = reign_bar(segments, start=start, end=end, title="Reign")
    rects = [r for r in parse(svg).iter(f"{SVG}rect") if r.get("class") == "reign"]
    assert [(r.get("data-label"), r.get("data-start"), r.get("data-end")) for r in rects] == [
        ("alice", "2026-09-01", "2026-09-10"),
        ("bob", "2026-09-11", "2026-10-01"),
        ("alice", "2026-10-02", "2026-11-29"),
    ]
    assert rects[0].get("fill") == rects[2].get("fill") != rects[1].get("fill")
    total = sum(float(r.get("width", "0")) for r in rects)
    plot = next(r for r in parse(svg).iter(f"{SVG}rect") if r.get("class") == "plot")
    assert abs(total - float(plot.get("width", "0"))) < 0.5  # the three cover the whole range
    assert 'href="/submissions/a/page"' in svg


class Item(BaseModel):
    n: int


def _app() -> FastAPI:
    app = FastAPI()

    @app.get("/items", response_model=Page[Item])
    def items(request: Request, paging: PageDep) -> Response:
        return cached_json(request, paginate([Item(n=n) for n in range(120)], paging), max_age=30)

    return app


def test_pagination_cuts_pages_and_refuses_out_of_range_sizes() -> None:
    client = TestClient(_app())
    first = client.get("/items").json()
    assert (first["page"], first["page_size"], first["total"], len(first["items"])) == (1, 50, 120, 50)
    last = client.get("/items", params={"page": 3, "page_size": 50}).json()
    assert [i["n"] for i in last["items"]] == list(range(100, 120))
    assert client.get("/items", params={"page": 9}).json()["items"] == []
    assert client.get("/items", params={"page_size": MAX_PAGE_SIZE + 1}).status_code == 422
    assert client.get("/items", params={"page": 0}).status_code == 422
    schema = client.get("/openapi.json").json()
    assert {p["name"] for p in schema["paths"]["/items"]["get"]["parameters"]} == {"page", "page_size"}


def test_cache_headers_and_a_304_for_a_known_etag() -> None:
    client = TestClient(_app())
    answer = client.get("/items")
    assert answer.headers["cache-control"] == "public, max-age=30"
    etag = answer.headers["etag"]
    again = client.get("/items", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert client.get("/items", params={"page": 2}, headers={"If-None-Match": etag}).status_code == 200


def test_pages_are_autoescaped_and_the_filters_format() -> None:
    assert "&lt;script&gt;" in PAGES.from_string("{{ x }}").render(x=HOSTILE)
    assert (score(None), score(0.12345), score(1, 2)) == ("-", "0.1235", "1.00")
    assert duration(timedelta(days=2, hours=3, minutes=4, seconds=59)) == "2d 03h 04m"
    assert (duration(timedelta(minutes=75)), duration(timedelta(seconds=5)), duration(None)) == (
        "1h 15m",
        "0m",
        "-",
    )


def test_a_fixed_x_range_places_points_within_it() -> None:
    svg = line_chart([Series("s", [(10.0, 0.5)])], title="t", x_range=(0.0, 10.0))
    circle = parse(svg).find(f".//{SVG}circle")
    plot = next(r for r in parse(svg).iter(f"{SVG}rect") if r.get("class") == "plot")
    assert circle is not None
    right_edge = float(plot.get("x", "0")) + float(plot.get("width", "0"))
    assert float(circle.get("cx", "0")) == right_edge  # the last day of the window is the right edge
