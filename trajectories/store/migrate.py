"""Schema migrations through Alembic's API: no ``alembic.ini``, works from an installed package.

:class:`Migrations` serves every database of the project that Alembic keeps: the trajectory store
(:data:`STORE`, below) and the arena database (``arena.storage``). Each has its own revisions, its own
version table (two of them may share one database) and its own lock; the environment of each
(``migrations/env.py``) calls :meth:`Migrations.run_environment`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from alembic import command, context
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, MetaData, engine_from_config, pool, text


class SchemaError(RuntimeError):
    """A database whose schema this code cannot bring to its head (newer than the code, or tables that are
    not what a revision expects)."""


@dataclass(frozen=True)
class Migrations:
    """The Alembic revisions at ``script_location`` (``package:folder``) of one database."""

    script_location: str
    what: str
    """The database, as messages name it (``the trajectory store``)."""
    lock_id: int
    """PostgreSQL serialises concurrent upgrades (two validators starting at once) on this advisory lock."""
    version_table: str = "alembic_version"

    def config(self) -> Config:
        config = Config()
        config.set_main_option("script_location", self.script_location)
        return config

    def head(self) -> str:
        head = ScriptDirectory.from_config(self.config()).get_current_head()
        if head is None:
            raise RuntimeError(f"no migrations found at {self.script_location}: the package is incomplete")
        return head

    def current(self, engine: Engine) -> str | None:
        with engine.connect() as connection:
            return MigrationContext.configure(connection, opts={"version_table": self.version_table}) \
                .get_current_revision()

    def upgrade(self, engine: Engine, revision: str = "head") -> None:
        """Bring the database to ``revision`` (default: the newest). Safe to call on an up-to-date one;
        :class:`SchemaError` for a database at a revision this code does not know (a newer release's)."""
        self._check_known(engine)
        self._run(engine, command.upgrade, revision)

    def downgrade(self, engine: Engine, revision: str) -> None:
        self._check_known(engine)
        self._run(engine, command.downgrade, revision)

    def _check_known(self, engine: Engine) -> None:
        found = self.current(engine)
        known = {script.revision for script in ScriptDirectory.from_config(self.config()).walk_revisions()}
        if found is not None and found not in known:
            raise SchemaError(
                f"{self.what} at {engine.url.render_as_string(hide_password=True)} is at schema revision "
                f"{found!r}, which this code does not know (its newest is {self.head()!r}): a newer release "
                "upgraded it. Run that release, or point this one at another database")

    def _run(self, engine: Engine, step: Callable[[Config, str], None], revision: str) -> None:
        config = self.config()
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            step(config, revision)

    def run_environment(self, metadata: MetaData) -> None:
        """The body of ``env.py``: migrate on the connection :meth:`upgrade` hands over (or one made from
        the ``sqlalchemy.url`` of an ``alembic`` command line), ``metadata`` being the models'."""
        if context.is_offline_mode():
            raise SystemExit(f"{self.what} has no offline (SQL script) migrations; run them on a database")
        config = context.config
        connection = config.attributes.get("connection")
        if connection is not None:
            self._migrate(connection, metadata)
            return
        engine = engine_from_config(config.get_section(config.config_ini_section, {}), prefix="sqlalchemy.",
                                    poolclass=pool.NullPool)
        with engine.connect() as opened:
            self._migrate(opened, metadata)

    def _migrate(self, connection: Connection, metadata: MetaData) -> None:
        context.configure(connection=connection, target_metadata=metadata, version_table=self.version_table,
                          render_as_batch=connection.dialect.name == "sqlite", compare_type=True)
        with context.begin_transaction():
            if connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": self.lock_id})
            elif connection.dialect.name == "sqlite":
                # SQLite's equivalent: the database's write lock before the version is read, so a second
                # process waits (busy timeout) and then finds the schema at head instead of creating it again.
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            context.run_migrations()


STORE = Migrations("trajectories.store:migrations", "the trajectory store", lock_id=0x5A7A_0006)
"""The trajectory store's revisions (``trajectories/store/migrations``)."""


def head_revision() -> str:
    return STORE.head()


def current_revision(engine: Engine) -> str | None:
    return STORE.current(engine)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the trajectory store to ``revision`` (default: the newest)."""
    STORE.upgrade(engine, revision)


def downgrade(engine: Engine, revision: str) -> None:
    STORE.downgrade(engine, revision)
