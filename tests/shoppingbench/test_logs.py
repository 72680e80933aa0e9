"""The shared log set-up: one JSON object per line in production, exceptions included; human-readable
lines on a terminal by default; a configured log file rotates."""

from __future__ import annotations

import io
import json
import logging
import logging.handlers
import sys
from pathlib import Path

import pytest
import structlog

from shoppingbench.logs import LogFile, configure_logging
from shoppingbench.settings import HarnessSettings


def test_a_json_log_line_carries_the_exception_it_reports(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json")
    try:
        try:
            raise ValueError("the catalog is unreadable")
        except ValueError:
            structlog.get_logger("tick").exception("validator_tick_failed")
        (line,) = capsys.readouterr().err.splitlines()
        record = json.loads(line)
        assert record["event"] == "validator_tick_failed" and record["level"] == "error"
        (raised,) = record["exception"]
        assert raised["exc_type"] == "ValueError" and raised["exc_value"] == "the catalog is unreadable"
        assert raised["frames"][-1]["name"] == "test_a_json_log_line_carries_the_exception_it_reports"
    finally:
        configure_logging("console")


def test_a_configured_log_file_rotates_at_its_size_keeping_its_backups(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "validator.log"
    configure_logging("json", file=LogFile(path=path, max_bytes=400, backups=2))
    try:
        for tick in range(40):
            structlog.get_logger("tick").info("validator_tick", tick=tick, padding="x" * 40)
    finally:
        configure_logging("console")
    rotated = sorted(p.name for p in path.parent.iterdir())
    assert rotated == ["validator.log", "validator.log.1", "validator.log.2"]
    for file in path.parent.iterdir():
        assert file.stat().st_size <= 400
        assert all(json.loads(line)["event"] == "validator_tick" for line in file.read_text().splitlines())
    # The newest lines are in the live file, the oldest kept ones in the last backup; older ones are gone.
    ticks = [json.loads(line)["tick"] for name in ("validator.log.2", "validator.log.1", "validator.log")
             for line in (path.parent / name).read_text().splitlines()]
    assert ticks == sorted(ticks) and ticks[-1] == 39 and ticks[0] > 0


def test_the_settings_name_the_log_file_and_how_it_rotates(tmp_path: Path) -> None:
    assert LogFile.from_settings(HarnessSettings(_env_file=None)) is None
    settings = HarnessSettings(_env_file=None, log_file=tmp_path / "arena.log", log_rotate="daily",
                               log_max_mb=0.5, log_backups=3)
    log_file = LogFile.from_settings(settings)
    assert log_file == LogFile(path=tmp_path / "arena.log", rotate="daily", max_bytes=2**19, backups=3)
    handler = log_file.handler()
    try:
        assert isinstance(handler, logging.handlers.TimedRotatingFileHandler)
        assert (handler.when, handler.utc, handler.backupCount) == ("MIDNIGHT", True, 3)
    finally:
        handler.close()


def test_configuring_again_closes_the_previous_log_file(tmp_path: Path) -> None:
    configure_logging("console", file=LogFile(path=tmp_path / "a.log"))
    (handler,) = [h for h in logging.getLogger().handlers if isinstance(h, logging.FileHandler)]
    configure_logging("console")
    assert handler.stream is None  # closed
    assert not [h for h in logging.getLogger().handlers if isinstance(h, logging.FileHandler)]


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal, as a console's is."""

    def isatty(self) -> bool:
        return True


def _lines_of_auto(stderr: io.StringIO, monkeypatch: pytest.MonkeyPatch, file: LogFile | None = None) -> str:
    monkeypatch.setattr(sys, "stderr", stderr)
    configure_logging("auto", file=file)
    try:
        structlog.get_logger("tick").info("validator_tick", tick=3)
    finally:
        configure_logging("console")
    return stderr.getvalue()


def test_auto_logs_for_people_on_a_terminal_and_json_elsewhere(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    piped = _lines_of_auto(io.StringIO(), monkeypatch)
    assert json.loads(piped) | {"timestamp": None} == {"event": "validator_tick", "tick": 3, "level": "info",
                                                         "timestamp": None}
    on_terminal = _lines_of_auto(_Terminal(), monkeypatch, file=LogFile(path=tmp_path / "validator.log"))
    assert "[info" in on_terminal and "validator_tick" in on_terminal and "tick=3" in on_terminal
    with pytest.raises(json.JSONDecodeError):
        json.loads(on_terminal)
    # The file beside a terminal is no terminal: it keeps JSON lines a log shipper reads.
    assert json.loads((tmp_path / "validator.log").read_text())["event"] == "validator_tick"


def test_auto_is_the_default_and_the_flag_takes_only_known_formats() -> None:
    from typer.testing import CliRunner

    from neurons.dump import app

    assert HarnessSettings(_env_file=None).log_format == "auto"
    refused = CliRunner().invoke(app, ["export", "--day", "2026-12-01", "--out", "x", "--log-format", "yaml"],
                                 env={"COLUMNS": "250"})
    assert refused.exit_code == 2 and "'yaml' is not one of 'auto', 'console', 'json'" in refused.output


def test_opening_a_database_logs_its_upgrades_but_not_alembics_preamble(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from trajectories.store import TrajectoryStore

    configure_logging("json")
    try:
        with TrajectoryStore.open(f"sqlite:///{tmp_path / 'store.sqlite3'}"):
            pass
    finally:
        configure_logging("console")
    lines = capsys.readouterr().err.splitlines()
    events = [json.loads(line)["event"] for line in lines if line.startswith("{")]
    assert any(event.startswith("Running upgrade") for event in events), events
    assert not [e for e in events if e.startswith(("Context impl", "Will assume", "setup plugin"))], events
