"""The gate's cheap first look at a request (headers, nonce window) and its seen-nonce store under many
threads at once, on SQLite and on the loopback PostgreSQL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from bittensor import http_auth
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.race.clock import ManualClock
from arena.storage import SQLITE_BUSY_TIMEOUT_MS, open_database
from arena.submissions.models import RefusalCode, SubmissionRefused
from arena.submissions.screen import screen_headers
from arena.submissions.store import SqlNonceStore, _NonceRow

NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)
NOW_NS = int(NOW.timestamp() * 1e9)
SIGNED = {http_auth.HEADER_VERSION: "1", http_auth.HEADER_HOTKEY: "5Hotkey",
          http_auth.HEADER_NONCE: str(NOW_NS), http_auth.HEADER_SIGNATURE: "0x" + "ab" * 64}


def screened(**changes: str | None) -> str:
    headers = {k: v for k, v in {**SIGNED, **changes}.items() if v is not None}
    return screen_headers(headers, now_ns=NOW_NS, clock_skew_s=30)


def refusal(**changes: str | None) -> SubmissionRefused:
    with pytest.raises(SubmissionRefused) as raised:
        screened(**changes)
    return raised.value


def test_well_formed_headers_name_the_claimed_hotkey_in_any_case() -> None:
    assert screened() == "5Hotkey"
    lowered = {k.lower(): v for k, v in SIGNED.items()}
    assert screen_headers(lowered, now_ns=NOW_NS, clock_skew_s=30) == "5Hotkey"


@pytest.mark.parametrize("changes", [
    {http_auth.HEADER_HOTKEY: None}, {http_auth.HEADER_VERSION: None}, {http_auth.HEADER_SIGNATURE: ""},
    {http_auth.HEADER_NONCE: "12e9"}, {http_auth.HEADER_NONCE: "-5"}, {http_auth.HEADER_NONCE: "١٢٣"},
    {http_auth.HEADER_SIGNATURE: "0x" + "ab" * 63}, {http_auth.HEADER_SIGNATURE: "0x" + "zz" * 64},
    {http_auth.HEADER_SIGNATURE: "0x" + "a b " * 32},
])
def test_malformed_headers_are_refused_before_any_work(changes: dict[str, str | None]) -> None:
    assert refusal(**changes).code == RefusalCode.MALFORMED_AUTH


@pytest.mark.parametrize("offset_s", [-30, -25, 0, 25, 30])
def test_nonces_within_the_window_pass_either_way(offset_s: int) -> None:
    assert screened(**{http_auth.HEADER_NONCE: str(NOW_NS + offset_s * 10**9)}) == "5Hotkey"


@pytest.mark.parametrize("offset_s", [-40, -30.001, 30.001, 40])
def test_nonces_beyond_the_window_are_stale(offset_s: float) -> None:
    stale = refusal(**{http_auth.HEADER_NONCE: str(NOW_NS + int(offset_s * 1e9))})
    assert stale.code == RefusalCode.STALE and "30s either way" in stale.detail




@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'arena.sqlite3'}"
    url: str = request.getfixturevalue("scratch_postgres_url")
    return url


def test_many_threads_each_nonce_accepted_exactly_once(database_url: str) -> None:
    store = SqlNonceStore(open_database(database_url), ManualClock(NOW), retention=60)
    distinct = [("5Miner", NOW_NS + i) for i in range(200)]
    same = [("5Miner", NOW_NS - 1)] * 50
    with ThreadPoolExecutor(max_workers=40) as pool:
        outcomes = list(pool.map(lambda pair: store.check_and_store(*pair), distinct + same))
    assert outcomes[:200] == [True] * 200 and outcomes[200:].count(True) == 1


def test_nonces_older_than_the_retention_are_pruned(database_url: str) -> None:
    clock = ManualClock(NOW)
    engine = open_database(database_url)
    store = SqlNonceStore(engine, clock, retention=60)
    assert store.check_and_store("5Miner", NOW_NS) and not store.check_and_store("5Miner", NOW_NS)
    clock.advance(timedelta(seconds=61))
    assert store.check_and_store("5Other", NOW_NS + 61 * 10**9)
    with Session(engine) as session:
        assert session.scalar(select(func.count()).select_from(_NonceRow)) == 1


def test_the_sqlite_arena_database_waits_for_writers_instead_of_failing(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path / 'arena.sqlite3'}")
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == SQLITE_BUSY_TIMEOUT_MS
