"""structlog set-up shared by every entry point: human-readable on a terminal, JSON otherwise.

``auto`` (the default format) renders lines for people when stderr is a terminal and as JSON objects when
it is not (a pipe, a file, systemd's journal, a container's log), as the tools an operator already runs do.

Lines go to stderr and, when a log file is configured (``ARENA_LOG_FILE``), also to that file through a
stdlib rotating handler: by size (``ARENA_LOG_ROTATE=size``, ``ARENA_LOG_MAX_MB``) or at midnight UTC
(``daily``), keeping ``ARENA_LOG_BACKUPS`` rotated files, so a validator left running for months does not
fill its disk.
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import structlog

from shoppingbench.settings import HarnessSettings, LogFormat


class _CurrentStderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes each record to ``sys.stderr`` as it is at that moment, not as it was when logging was set up
    (a command run under a test runner, or any code that swaps ``sys.stderr``, would leave a closed one)."""

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


@dataclass(frozen=True)
class LogFile:
    """A log file and how it rotates: at ``max_bytes`` (``size``) or at midnight UTC (``daily``), keeping
    ``backups`` rotated files (``path.1``, ... by size; ``path.YYYY-MM-DD`` daily)."""

    path: Path
    rotate: Literal["size", "daily"] = "size"
    max_bytes: int = 100 * 2**20
    backups: int = 10

    @classmethod
    def from_settings(cls, settings: HarnessSettings) -> LogFile | None:
        """The configured log file (``ARENA_LOG_FILE`` and its rotation), or ``None`` for stderr only."""
        if settings.log_file is None:
            return None
        return cls(path=settings.log_file.expanduser(), rotate=settings.log_rotate,
                   max_bytes=max(1, int(settings.log_max_mb * 2**20)), backups=settings.log_backups)

    def handler(self) -> logging.Handler:
        """The stdlib handler that writes and rotates the file (its folder created first)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.rotate == "daily":
            return logging.handlers.TimedRotatingFileHandler(self.path, when="midnight", utc=True,
                                                             backupCount=self.backups, encoding="utf-8")
        return logging.handlers.RotatingFileHandler(self.path, maxBytes=self.max_bytes,
                                                    backupCount=self.backups, encoding="utf-8")


def resolved_format(fmt: LogFormat, *, terminal: bool) -> Literal["console", "json"]:
    """What ``fmt`` renders as: ``auto`` is ``console`` on a terminal and ``json`` elsewhere."""
    if fmt == "auto":
        return "console" if terminal else "json"
    return fmt


def configure_logging(fmt: LogFormat = "auto", level: str = "info", *,
                      file: LogFile | None = None) -> None:
    """Route structlog (and stdlib logging, e.g. uvicorn) through one renderer on stderr and, given a
    ``file``, into that rotating file too: the same format, except that ``auto`` writes JSON to the file
    (a file is no terminal) whatever stderr is."""
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
    stderr = _CurrentStderrHandler()
    stderr.setFormatter(_formatter(resolved_format(fmt, terminal=sys.stderr.isatty()), shared))
    handlers: list[logging.Handler] = [stderr]
    if file is not None:
        handlers.append(file.handler())
        handlers[-1].setFormatter(_formatter(resolved_format(fmt, terminal=False), shared))
    root = logging.getLogger()
    for old in root.handlers:
        if old not in handlers:
            old.close()  # a reconfiguration must not leave the previous log file open
    root.handlers[:] = handlers
    root.setLevel(level.upper())
    # httpx logs every request at INFO; one line per tool call drowns the events that matter. Alembic logs
    # each of its plugins at INFO on every database opened (its "Running upgrade" lines stay).
    for chatty in ("httpx", "alembic.runtime.plugins"):
        logging.getLogger(chatty).setLevel(max(logging.WARNING, root.level))
    migration = logging.getLogger("alembic.runtime.migration")
    if not any(isinstance(f, _AlembicPreamble) for f in migration.filters):
        migration.addFilter(_AlembicPreamble())


class _AlembicPreamble(logging.Filter):
    """Drops the two lines Alembic logs each time it opens a database (which dialect, whether DDL is
    transactional), keeping the upgrades it runs."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(("Context impl ", "Will assume "))


def _formatter(fmt: Literal["console", "json"],
               shared: list[structlog.typing.Processor]) -> structlog.stdlib.ProcessorFormatter:
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    )
    # JSON lines carry an exception as a structured traceback; without this they said only "exc_info": true.
    exceptions: list[structlog.typing.Processor] = (
        [structlog.processors.dict_tracebacks] if fmt == "json" else [])
    return structlog.stdlib.ProcessorFormatter(
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *exceptions, renderer],
        foreign_pre_chain=shared,
    )
