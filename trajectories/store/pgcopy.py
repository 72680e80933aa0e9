"""New attempts into PostgreSQL by ``COPY`` (binary), the bulk path of ``write_attempts`` there.

An upsert costs the server an executor start per row and the writer a parameter conversion per row;
``COPY ... FROM STDIN (FORMAT BINARY)`` streams the rows (psycopg formats them in C): on rows of
attempts the writer's CPU is 60% less and the server's 30% (``python -m benchmarks.store --pg-server``).
``COPY`` cannot update a row, so it takes only the attempts not stored yet: the batch's keys are
looked up first (one indexed query), the new ones copied and the others upserted, all in the batch's
transaction. Another writer may store one of the new keys between the look-up and the copy (the
validator's recorder writes while a bulk import runs): the copy then fails on the unique key, its
savepoint is rolled back and the caller upserts the whole batch, so the outcome is the upsert's in
every case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from psycopg import errors as pg_errors
from sqlalchemy import Connection, Table
from sqlalchemy.exc import DBAPIError

COLUMN_TYPES = ("SELECT attname, atttypid::int FROM pg_attribute "
                "WHERE attrelid = to_regclass(%(table)s) AND attnum > 0 AND NOT attisdropped")

INTEGER_RANGES = {21: (-2**15, 2**15 - 1), 23: (-2**31, 2**31 - 1), 20: (-2**63, 2**63 - 1)}
"""The values each integer type (by oid: int2, int4, int8) holds. psycopg's binary ``COPY`` wraps a
Python int that does not fit its column around silently (2**40 arrives as 0), where an upsert is
refused by the server."""


def column_types(connection: Connection, table: Table) -> dict[str, int]:
    """The type oid of each column of ``table`` as the server declares it (binary ``COPY`` needs them)."""
    result = connection.exec_driver_sql(COLUMN_TYPES, {"table": table.name})
    return {name: oid for name, oid in result}


def stored_keys(connection: Connection, table: Table, keys: Sequence[str],
                rows: Sequence[Mapping[str, Any]]) -> set[tuple[Any, ...]]:
    """The values of ``keys`` among ``rows`` that ``table`` already holds."""
    columns = ", ".join(keys)
    arrays = ", ".join(f"%({key})s::text[]" for key in keys)
    matches = " AND ".join(f"t.{key} = k.{key}" for key in keys)
    sql = f"SELECT {', '.join(f't.{key}' for key in keys)} FROM {table.name} t " \
          f"JOIN unnest({arrays}) AS k({columns}) ON {matches}"
    result = connection.exec_driver_sql(sql, {key: [row[key] for row in rows] for key in keys})
    return {tuple(found) for found in result}


def _integers_fit(rows: Sequence[Mapping[str, Any]], names: Sequence[str], types: Mapping[str, int]) -> bool:
    ranges = [(name, INTEGER_RANGES[types[name]]) for name in names if types[name] in INTEGER_RANGES]
    return all(low <= value <= high for row in rows for name, (low, high) in ranges
               if isinstance(value := row[name], int))


def copy_rows(connection: Connection, table: Table, rows: Sequence[Mapping[str, Any]],
              types: Mapping[str, int]) -> bool:
    """``COPY`` ``rows`` into ``table`` in a savepoint of the connection's transaction; ``False``
    (nothing copied: upsert them) if one of them is already stored (a unique key taken since it was
    looked up) or holds an integer its column cannot (the upsert then fails as it always did, with the
    server's error, where the copy would store another number). Other database errors raise as
    SQLAlchemy's :class:`~sqlalchemy.exc.DBAPIError`, as from an execution through SQLAlchemy."""
    names = list(rows[0])
    if not _integers_fit(rows, names, types):
        return False
    statement = f"COPY {table.name} ({', '.join(names)}) FROM STDIN (FORMAT BINARY)"
    try:
        with connection.begin_nested():
            cursor = connection.connection.cursor()
            try:
                with cursor.copy(statement) as copy:
                    copy.set_types([types[name] for name in names])
                    for row in rows:
                        copy.write_row([row[name] for name in names])
            finally:
                cursor.close()
    except pg_errors.UniqueViolation:
        return False
    except pg_errors.Error as exc:
        raise DBAPIError.instance(statement, None, exc, pg_errors.Error, dialect=connection.dialect) from exc
    return True
