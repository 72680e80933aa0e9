"""Fixtures of the arena's tests: a throwaway PostgreSQL database for the race log, the submissions store
and the suites' exposure ledger."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.exc import OperationalError

from trajectories.store.engine import DEFAULT_POSTGRES_SERVER, scratch_postgres_database


@pytest.fixture
def scratch_postgres_url() -> Iterator[str]:
    """A throwaway database on the loopback PostgreSQL (``scripts/services.sh``), dropped after the test."""
    try:
        with scratch_postgres_database(DEFAULT_POSTGRES_SERVER, prefix="arena_test") as url:
            yield url.render_as_string(hide_password=False)
    except OperationalError as exc:
        raise RuntimeError(f"PostgreSQL is not answering on 127.0.0.1:5432 ({exc.orig}): "
                           "start it with `bash scripts/services.sh`") from exc
