"""The arena database's migrations: they build the schema the models describe, adopt a database the
pre-migration ``create_all`` made with its rows, and refuse what they cannot upgrade; on SQLite and on the
loopback PostgreSQL."""

from __future__ import annotations

import ast
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata, produce_migrations, render_python_code
from alembic.runtime.migration import MigrationContext
from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Integer,
    MetaData,
    Table,
    create_engine,
    insert,
    inspect,
    select,
    text,
)

from arena.migrations import MODEL_MODULES, arena_metadata
from arena.race.store import RaceEventRow
from arena.storage import MIGRATIONS, open_database
from arena.suites.ledger import ExposureRow
from arena.validator.epochs import WeightsEpochs
from trajectories.store import TrajectoryStore
from trajectories.store.migrate import SchemaError, current_revision, head_revision

ROOT = Path(__file__).resolve().parents[2]
AT = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
def arena_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'arena.sqlite3'}"
    url: str = request.getfixturevalue("scratch_postgres_url")
    return url


def _migration_context(connection: Connection) -> MigrationContext:
    return MigrationContext.configure(connection, opts={"version_table": MIGRATIONS.version_table,
                                                        "compare_type": True})


def _what_to_write(engine: Engine) -> str:
    """The revision the models need beyond the migrations' head, as the failure message spells it out."""
    head = MIGRATIONS.head()
    with engine.connect() as connection:
        script = produce_migrations(_migration_context(connection), arena_metadata())
    following = f"{int(head) + 1:04d}"
    assert script.upgrade_ops is not None and script.downgrade_ops is not None
    return (f"The arena's models and its migrations differ. Write the revision: a file "
            f"arena/migrations/versions/{following}_<what_it_adds>.py with revision = {following!r} and "
            f"down_revision = {head!r} (header as in the {head} file), whose upgrade() is\n"
            f"{render_python_code(script.upgrade_ops, render_as_batch=True)}\nand downgrade() is\n"
            f"{render_python_code(script.downgrade_ops, render_as_batch=True)}\n"
            "A model in a new module: add the module to arena.migrations.MODEL_MODULES. "
            "docs/validator.md, 'The arena database', says more.")


def _differences(engine: Engine) -> list[object]:
    with engine.connect() as connection:
        return list(compare_metadata(_migration_context(connection), arena_metadata()))


def test_the_models_and_the_migrations_head_agree(arena_url: str) -> None:
    """A table or column added to a model without a revision fails here, with the revision to write."""
    engine = open_database(arena_url)
    try:
        assert MIGRATIONS.current(engine) == MIGRATIONS.head()
        assert _differences(engine) == [], _what_to_write(engine)
    finally:
        engine.dispose()


def test_an_empty_database_migrates_to_head_and_back(arena_url: str) -> None:
    engine = open_database(arena_url)
    try:
        assert MIGRATIONS.current(engine) == MIGRATIONS.head()
        tables = set(inspect(engine).get_table_names())
        assert {"race_events", "submission_judgements", "weights_epochs", "arena_alembic_version"} <= tables
        assert "alembic_version" not in tables  # the trajectory store's version table stays free
        MIGRATIONS.upgrade(engine)  # up to date: a no-op
        MIGRATIONS.downgrade(engine, "base")
        assert set(inspect(engine).get_table_names()) == {"arena_alembic_version"}
        assert MIGRATIONS.current(engine) is None
    finally:
        engine.dispose()
    open_database(arena_url).dispose()


def test_every_module_declaring_an_arena_table_is_listed() -> None:
    """``arena_metadata()`` alone (a fresh process: nothing else imported) holds every table declared on
    ``arena.storage.Base`` anywhere under arena/."""
    declared = set()
    for path in (ROOT / "arena").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not any(isinstance(n, ast.ImportFrom) and n.module == "arena.storage"
                   and any(a.name == "Base" for a in n.names) for n in tree.body):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(ast.unparse(b) == "Base" for b in node.bases):
                declared |= {ast.literal_eval(s.value) for s in node.body if isinstance(s, ast.Assign)
                             and [ast.unparse(t) for t in s.targets] == ["__tablename__"]}
    script = "from arena.migrations import arena_metadata; print(sorted(arena_metadata().tables))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert set(ast.literal_eval(done.stdout.strip())) == declared, MODEL_MODULES


def _create_all_database(url: str) -> Engine:
    """What ``open_database`` made before migrations, with a few rows: the tables of revision ``0001``,
    which are those ``create_all`` made of the models then, and no version table."""
    engine = create_engine(url)
    MIGRATIONS.upgrade(engine, "0001")
    with engine.begin() as connection:
        connection.execute(text(f"DROP TABLE {MIGRATIONS.version_table}"))
        connection.execute(insert(RaceEventRow).values(seq=0, type="registered", at=AT,
                                                       payload='{"type": "registered"}'))
        connection.execute(insert(ExposureRow).values(problem_id="p-1", kind="race", reference="race-1",
                                                      at=AT))
    WeightsEpochs(engine, "5Val", 1).record(epoch=12, block=4_321)
    return engine


def test_a_database_made_by_create_all_is_adopted_with_its_rows(arena_url: str) -> None:
    _create_all_database(arena_url).dispose()
    engine = open_database(arena_url)
    try:
        assert MIGRATIONS.current(engine) == MIGRATIONS.head()
        assert _differences(engine) == []
        with engine.connect() as connection:
            assert connection.execute(select(RaceEventRow.payload)).scalars().all() \
                == ['{"type": "registered"}']
            assert connection.execute(select(ExposureRow.problem_id)).scalars().all() == ["p-1"]
        assert WeightsEpochs(engine, "5Val", 1).last() == 12
    finally:
        engine.dispose()


def test_tables_an_older_database_lacks_are_created_and_others_left_alone(arena_url: str) -> None:
    """A database of a release that had only the race log, beside a table that is none of the arena's."""
    engine = create_engine(arena_url)
    other = Table("operator_notes", MetaData(), Column("id", Integer, primary_key=True))
    try:
        arena_metadata().tables["race_events"].create(engine)
        other.create(engine)
        with engine.begin() as connection:
            connection.execute(insert(RaceEventRow).values(seq=0, type="registered", at=AT, payload="{}"))
            connection.execute(insert(other).values(id=7))
    finally:
        engine.dispose()
    engine = open_database(arena_url)
    try:
        assert MIGRATIONS.current(engine) == MIGRATIONS.head()
        assert _tables_at_head() <= set(inspect(engine).get_table_names())
        with engine.connect() as connection:
            assert connection.execute(select(RaceEventRow.seq)).scalars().all() == [0]
            assert connection.execute(select(other.c.id)).scalars().all() == [7]
    finally:
        engine.dispose()


def _tables_at_head() -> set[str]:
    """The tables the migrations make (read off a fresh SQLite database)."""
    engine = create_engine("sqlite://")
    try:
        MIGRATIONS.upgrade(engine)
        return set(inspect(engine).get_table_names()) - {MIGRATIONS.version_table}
    finally:
        engine.dispose()


def test_a_table_other_than_the_arenas_is_refused_and_nothing_changes(arena_url: str) -> None:
    engine = create_engine(arena_url)
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE race_events (seq INTEGER PRIMARY KEY, body TEXT)"))
    finally:
        engine.dispose()
    with pytest.raises(SchemaError, match=r"table race_events with columns \['body', 'seq'\]"):
        open_database(arena_url)
    engine = create_engine(arena_url)
    try:
        assert set(inspect(engine).get_table_names()) == {"race_events"}
    finally:
        engine.dispose()


def test_a_database_a_newer_release_upgraded_is_refused(arena_url: str) -> None:
    engine = open_database(arena_url)
    try:
        with engine.begin() as connection:
            connection.execute(text("UPDATE arena_alembic_version SET version_num = '0099'"))
    finally:
        engine.dispose()
    with pytest.raises(SchemaError, match=r"revision '0099', which this code does not know \(its newest is "
                                          rf"'{MIGRATIONS.head()}'\): a newer release upgraded it"):
        open_database(arena_url)


def test_the_trajectory_store_and_the_arena_share_a_database(arena_url: str) -> None:
    engine = open_database(arena_url)
    try:
        with TrajectoryStore.open(arena_url) as store:
            assert store.count_attempts() == 0
        assert MIGRATIONS.current(engine) == MIGRATIONS.head() and current_revision(engine) == head_revision()
    finally:
        engine.dispose()
    open_database(arena_url).dispose()  # the store's tables and version beside the arena's upset nothing
