"""The shared log set-up: one JSON object per line in production, exceptions included."""

from __future__ import annotations

import json

import pytest
import structlog

from shoppingbench.logs import configure_logging


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
