"""Fixtures of the trajectory store, filter and dump tests: a fresh store on each backend.

``store_url`` runs a test on SQLite (a file in tmp_path) and on the loopback PostgreSQL (a throwaway
database for the session, emptied before each test and dropped at the end).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import OperationalError

from trajectories.store import TrajectoryStore
from trajectories.store.engine import DEFAULT_POSTGRES_SERVER, scratch_postgres_database

BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(scope="session")
def pg_database() -> Iterator[URL]:
    try:
        with scratch_postgres_database(DEFAULT_POSTGRES_SERVER, prefix="arena_test") as url:
            yield url
    except OperationalError as exc:
        raise RuntimeError(f"PostgreSQL is not answering on 127.0.0.1:5432 ({exc.orig}): "
                           "start it with `bash scripts/services.sh`") from exc


def empty_postgres(url: URL) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(text("DROP SCHEMA public CASCADE"))
            connection.execute(text("CREATE SCHEMA public"))
    finally:
        engine.dispose()


def fresh_store_url(backend: str, request: pytest.FixtureRequest, name: str = "store") -> str:
    """An empty database of ``backend`` for this test."""
    if backend == "sqlite":
        tmp = request.getfixturevalue("tmp_path")
        return f"sqlite:///{tmp / f'{name}.sqlite3'}"
    url: URL = request.getfixturevalue("pg_database")
    empty_postgres(url)
    return url.render_as_string(hide_password=False)


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest) -> str:
    return fresh_store_url(request.param, request)


@pytest.fixture
def store(store_url: str) -> Iterator[TrajectoryStore]:
    with TrajectoryStore.open(store_url) as opened:
        yield opened
