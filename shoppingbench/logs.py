"""structlog set-up shared by every entry point: human-readable on a console, JSON in production."""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog


class _CurrentStderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes each record to ``sys.stderr`` as it is at that moment, not as it was when logging was set up
    (a command run under a test runner, or any code that swaps ``sys.stderr``, would leave a closed one)."""

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


def configure_logging(fmt: Literal["console", "json"] = "console", level: str = "info") -> None:
    """Route structlog (and stdlib logging, e.g. uvicorn) through one renderer on stderr."""
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    )
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Not cached: a cached logger ignores later reconfiguration (a second command in one process, the
        # tests' structlog.testing.capture_logs); the lookup it saves is negligible at our log rates.
        cache_logger_on_first_use=False,
    )
    handler = _CurrentStderrHandler()
    # JSON lines carry an exception as a structured traceback; without this they said only "exc_info": true.
    exceptions: list[structlog.typing.Processor] = (
        [structlog.processors.dict_tracebacks] if fmt == "json" else [])
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *exceptions, renderer],
        foreign_pre_chain=shared,
    ))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # httpx logs every request at INFO; one line per tool call drowns the events that matter.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, root.level))
