"""The site's pages: one Jinja2 environment over the package's ``templates/`` (autoescaped, so text from
submissions and trajectories always shows as text) and :func:`page`, which renders a template into an
HTML response with cache headers.

Every page extends ``templates/base.html`` (the layout, the navigation and ``/static/site.css``, served
from :data:`STATIC_DIR` by ``app.py``). Filters for the templates: ``score`` (a float to 4 places, ``-``
for none), ``percent``, ``duration`` (a ``timedelta`` as ``2d 03h 04m``), ``utc`` (a datetime as
``2026-11-20 16:00 UTC``) and ``key`` (a hotkey or hash shortened, the full value on hover and click).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from arena.validator.api.site.paging import LIVE_MAX_AGE, cached_body

STATIC_DIR: Final = Path(__file__).resolve().parents[1] / "static"
"""The site's stylesheet (and any other static file), mounted at ``/static``."""


def score(value: float | None, places: int = 4) -> str:
    return "-" if value is None else f"{value:.{places}f}"


def percent(value: float | None, places: int = 0) -> str:
    return "-" if value is None else f"{100 * value:.{places}f}%"


def duration(value: timedelta | None) -> str:
    """``2d 03h 04m`` (``0m`` for anything under a minute, ``-`` for none or negative)."""
    if value is None or value < timedelta(0):
        return "-"
    minutes = int(value.total_seconds()) // 60
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h {minutes:02d}m"
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m"


def utc(value: datetime | None) -> str:
    return "-" if value is None else f"{value:%Y-%m-%d %H:%M} UTC"


_KEY: Final = re.compile(r"[0-9A-Za-z]{40,}")
"""What :func:`key` shortens: an ss58 address (48 characters) or a hex hash (64)."""


def key(value: str | None) -> Markup:
    """A hotkey or hash as the page shows it: ``5F9Z1p…GTqn3``, the full value on hover (``title``) and,
    one click away, as text to copy (a ``<details>``: no script); anything else (text a miner chose,
    which must show whole) as it is, escaped."""
    if value is None:
        return Markup("-")
    if not _KEY.fullmatch(value):
        return escape(value)
    return Markup('<details class="key"><summary title="{0}">{1}…{2}</summary><code>{0}</code></details>'
                  ).format(value, value[:6], value[-5:])


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("arena.validator.api"),
        undefined=StrictUndefined,
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(score=score, percent=percent, duration=duration, utc=utc, key=key)
    return env


PAGES: Final = _environment()
"""The API package's ``templates/`` folder, every page autoescaped."""


def render(name: str, **context: Any) -> str:
    """Template ``name`` rendered with ``context``."""
    return PAGES.get_template(name).render(**context)


def page(
    request: Request, name: str, *, max_age: int = LIVE_MAX_AGE, status_code: int = 200, **context: Any
) -> Response:
    """Template ``name`` as an HTML page with ``Cache-Control``/``ETag`` (304 when unchanged); the
    template sees ``request_path`` (for the navigation) besides ``context``."""
    body = render(name, request_path=request.url.path, **context).encode()
    if status_code != 200:
        return HTMLResponse(body, status_code=status_code)
    return cached_body(request, body, media_type="text/html; charset=utf-8", max_age=max_age)
