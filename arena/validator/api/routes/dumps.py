"""``GET /dumps``: the dumps index page (``templates/dumps.html``); ``GET /api/dumps`` and
``GET /api/dumps/{day}``: the same as JSON (``views/dumps.py``); ``GET /dumps/{day}/{path}``: a file of
that day's dump (only those its manifest lists, its card and the manifest)."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from markupsafe import Markup

from arena.validator.api.site.charts import bar_chart
from arena.validator.api.site.pages import page
from arena.validator.api.site.paging import (
    IMMUTABLE_MAX_AGE,
    MAX_PAGE,
    Page,
    PageDep,
    PageParams,
    cache_control,
    cached_json,
    paged,
)
from arena.validator.api.views.dumps import (
    DumpDay,
    DumpDetail,
    detail,
    dump_days,
    manifest,
    servable,
    summary,
)
from arena.validator.api.views.view import ArenaView, ViewDep

DAYS_PER_PAGE = 10
"""Days the index page shows at once, newest first (``?page=`` for older ones)."""

router = APIRouter()


def _details(view: ArenaView, days: list[date], base_url: str) -> list[DumpDetail]:
    root = view.dumps_dir
    assert root is not None or not days
    found = []
    for day in days:
        loaded = manifest(root / day.isoformat()) if root is not None else None
        if loaded is not None:
            found.append(detail(day, loaded, base_url))
    return found


def _charts(day: DumpDetail) -> dict[str, Markup]:
    everything = day.scores.get("all")
    if everything is None:
        return {}
    bins = len(everything.rule_histogram)
    return {
        "rule": bar_chart(
            [(f"{n / bins:.1f}", v) for n, v in enumerate(everything.rule_histogram)],
            title=f"Rule score distribution, {day.day}",
            width=460,
            height=180,
        ),
        "quality": bar_chart(
            sorted(everything.judge_quality.items()),
            title=f"Judge quality levels, {day.day}",
            width=300,
            height=180,
        ),
    }


@router.get("/dumps", response_class=HTMLResponse)
def dumps_page(
    request: Request, view: ViewDep, number: Annotated[int, Query(alias="page", ge=1, le=MAX_PAGE)] = 1
) -> Response:
    days = dump_days(view.dumps_dir)
    shown = PageParams(page=number, page_size=DAYS_PER_PAGE)
    details = _details(view, days[shown.offset : shown.offset + shown.limit], str(request.base_url))
    return page(
        request,
        "dumps.html",
        days=[(d, _charts(d)) for d in details],
        total=len(days),
        paging=shown,
        pages=max(1, -(-len(days) // DAYS_PER_PAGE)),
    )


@router.get("/api/dumps", response_model=Page[DumpDay])
def dumps_api(request: Request, view: ViewDep, paging: PageDep) -> Response:
    """Every exported day (newest first) with its counts, success rate and size."""
    days = dump_days(view.dumps_dir)
    cut = days[paging.offset : paging.offset + paging.limit]
    root = view.dumps_dir
    items = [
        summary(d, loaded)
        for d in cut
        if root is not None and (loaded := manifest(root / d.isoformat())) is not None
    ]
    return cached_json(request, paged(items, paging, total=len(days)))


@router.get("/api/dumps/{day}", response_model=DumpDetail)
def dump_api(request: Request, view: ViewDep, day: date) -> Response:
    """One day: the manifest's figures (counts per category, label and split; score distributions), the
    files with sizes and sha256, and the ``load_dataset`` line."""
    found = _details(view, [day], str(request.base_url)) if day in dump_days(view.dumps_dir) else []
    if not found:
        raise HTTPException(404, f"no dump of {day}")
    return cached_json(request, found[0], max_age=IMMUTABLE_MAX_AGE)


@router.get("/dumps/{day}/{path:path}")
@router.head("/dumps/{day}/{path:path}", include_in_schema=False)
def dump_file(view: ViewDep, day: date, path: str) -> FileResponse:
    """A file of the day's dump, as ``dump export`` wrote it."""
    target = servable(view.dumps_dir, day, path)
    if target is None:
        raise HTTPException(404, f"{path} is not a file of the {day} dump")
    media = "text/markdown; charset=utf-8" if path.endswith(".md") else None
    return FileResponse(target, media_type=media, headers={"Cache-Control": cache_control(IMMUTABLE_MAX_AGE)})
