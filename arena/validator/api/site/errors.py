"""Error answers a person can read: a browser asking for a page that does not exist, or one that failed,
gets the site's layout with the status and the reason and links back; API clients (anything not asking
for ``text/html``) keep FastAPI's JSON ``{"detail": ...}``."""

from __future__ import annotations

from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler, request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import PlainTextResponse, Response
from starlette.exceptions import HTTPException

from arena.validator.api.site.pages import page


def wants_html(request: Request) -> bool:
    """A browser's request for a page: it accepts HTML (API clients send ``*/*`` or JSON)."""
    return "text/html" in request.headers.get("accept", "")


def html_errors(app: FastAPI) -> None:
    """Answer ``app``'s HTTP errors with the site's error page where a browser asks for a page."""

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        if not wants_html(request):
            return await http_exception_handler(request, exc)
        detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).description
        return page(request, "error.html", status_code=exc.status_code, status=exc.status_code,
                    reason=HTTPStatus(exc.status_code).phrase, detail=detail)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        if not wants_html(request):
            return await request_validation_exception_handler(request, exc)
        where = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}"
                          for e in exc.errors())
        return page(request, "error.html", status_code=422, status=422, reason="Unprocessable Content",
                    detail=f"This address is not one the site answers: {where}")

    @app.exception_handler(Exception)
    async def failed(request: Request, exc: Exception) -> Response:
        # Starlette logs and re-raises the exception after this answer; only the answer changes.
        if not wants_html(request):
            return PlainTextResponse("Internal Server Error", status_code=500)
        return page(request, "error.html", status_code=500, status=500, reason="Internal Server Error",
                    detail="The validator failed answering this page; its log says why.")
