"""The trajectory store: register problems, agents and runs; write, read, annotate and sum up attempts.

Writes are idempotent. An attempt is identified by (run, agent, problem): writing it again updates
the one row. A re-write with the same content keeps the judge verdict and filter label already
stored unless it brings its own; a re-write with different content replaces them (they judged the
old content). Registrations never erase a known value with an unknown (``None``) one.

``write_attempts`` commits in batches, one transaction each; every attempt is one row, so a crash
leaves each attempt either fully written or absent. Problems, agents and runs an attempt refers to
are created on the fly (with what the record says) when nobody registered them first, so no attempt
is ever lost for want of its context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import structlog
from sqlalchemy import (
    Connection,
    Engine,
    Insert,
    Integer,
    Row,
    Table,
    bindparam,
    case,
    cast,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL

from shoppingbench.records import AttemptRecord
from trajectories.filter import FilterVerdict
from trajectories.store import blobs, pgcopy
from trajectories.store.engine import make_engine
from trajectories.store.entries import (
    AgentEntry,
    AttemptKey,
    AttemptWrite,
    CategoryScore,
    JudgeVerdict,
    ProblemEntry,
    RunEntry,
    RunKind,
    StoredAttempt,
)
from trajectories.store.ingest import batches, write_batches
from trajectories.store.migrate import current_revision, head_revision, upgrade
from trajectories.store.rows import (
    DERIVED_COLUMNS,
    decode_attempt,
    judge_columns,
    label_columns,
)
from trajectories.store.schema import AGENTS, ATTEMPTS, PROBLEMS, RUNS

log = structlog.get_logger(__name__)

DEFAULT_BATCH = 200
ROWS_PER_STATEMENT = 250
"""Attempts per multi-row upsert (SQLite): 37 columns each stays far below SQLite's 32,766 parameters a
statement."""
UPSERTS_KEPT = 8
"""Compiled upsert statements kept, by row count and columns (a bulk write on SQLite uses two: full
batches and the last)."""
COPY_MIN_ROWS = 16
"""Fewest new attempts a batch sends by ``COPY`` on PostgreSQL (``pgcopy.py``): below it (the recorder's
attempt at a time) the key look-up's round trip costs more than the copy saves, and they are upserted."""
KEY_COLUMNS = ("run_id", "agent_hash", "problem_id")
CONTEXT_ATTEMPT_COLUMNS = [ATTEMPTS.c[name] for name in (
    "id", "run_id", "agent_hash", "problem_id", "started_at", "finished_at", "success", "answer_verified",
    "reference_success", "gt", "rule",
    "format", "length", "failure_kind", "n_steps", "n_proxy_calls", "n_inference_calls", "completion_tokens",
    "header", "payload", "steps_size", "proxy_log_size", "judge_model", "judge_quality", "judge_gates_passed",
    "judge_json",
    "filter_label", "filter_json", "echoed_completions", "infra_failed")]
"""The attempt columns :meth:`TrajectoryStore.attempts_in_context` reads: all but ``content_hash``."""
CONTEXT_COLUMNS = [
    PROBLEMS.c.version.label("problem_version"), PROBLEMS.c.suite.label("problem_suite"),
    PROBLEMS.c.leak_cluster, PROBLEMS.c.reward_json, RUNS.c.kind.label("run_kind"), RUNS.c.validator,
    RUNS.c.suite.label("run_suite"), AGENTS.c.hotkey]
"""An attempt's problem, run and agent, as :meth:`TrajectoryStore.attempts_in_context` names them."""


class StoreError(RuntimeError):
    """The store cannot be used as it is (e.g. its schema is older than this code)."""


def _text(value: str) -> str:
    """Text any backend stores: PostgreSQL refuses NUL characters, both refuse lone surrogates."""
    return value.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")



@dataclass(frozen=True)
class _CompiledUpsert:
    """The upsert of ``count`` attempt rows with the columns ``names``, compiled once for the store's
    driver and run as its SQL: SQLAlchemy would compile it and convert every row's values again on each
    execution."""

    sql: str
    slots: tuple[tuple[int, str], ...]
    """(row, column) of each positional parameter of ``sql``, in order (SQLite's driver); empty for a
    driver of named parameters (psycopg), which takes one dict a row."""
    processors: Mapping[str, Callable[[Any], Any]]
    """The columns' bind conversions, as SQLAlchemy would apply them."""

    @classmethod
    def compile(cls, store: TrajectoryStore, count: int, names: tuple[str, ...]) -> _CompiledUpsert:
        def bind(name: str, row: int) -> str:
            return name if count == 1 else f"{name}_{row}"

        binds = {bind(name, i): (i, name) for i in range(count) for name in names}
        values = [{name: bindparam(bind(name, i), type_=ATTEMPTS.c[name].type) for name in names}
                  for i in range(count)]
        dialect = store.engine.dialect
        statement = store._build_attempt_upsert(store._insert(ATTEMPTS).values(values))
        compiled = statement.compile(dialect=dialect)
        if compiled.positional and compiled.positiontup is None:
            raise StoreError(f"cannot order the parameters of {dialect.name}'s upsert")
        if not compiled.positional and count != 1:
            raise StoreError(f"multi-row upserts expect a positional driver, not {dialect.name}'s")
        processors = {name: processor for name in names
                      if (processor := ATTEMPTS.c[name].type.dialect_impl(dialect).bind_processor(dialect))
                      is not None}
        slots = tuple(binds[b] for b in compiled.positiontup) if compiled.positiontup is not None else ()
        return cls(sql=compiled.string, slots=slots, processors=processors)

    def parameters(self, rows: list[dict[str, Any]]) -> tuple[Any, ...]:
        """The parameters of one execution of ``rows`` (positional drivers)."""
        return tuple(self._bound(name, rows[i][name]) for i, name in self.slots)

    def named(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One dict of parameters a row (named drivers: an execution a row)."""
        if not self.processors:
            return rows
        return [row | {name: self._bound(name, row[name]) for name in self.processors} for row in rows]

    def _bound(self, name: str, value: Any) -> Any:
        processor = self.processors.get(name)
        return value if processor is None or value is None else processor(value)


class TrajectoryStore:
    """The store on one database (SQLite file or PostgreSQL)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._dialect = sqlite if engine.dialect.name == "sqlite" else postgresql
        self._attempt_upserts: dict[tuple[int, tuple[str, ...]], _CompiledUpsert] = {}
        self._attempt_types: dict[str, int] | None = None

    @classmethod
    def open(cls, url: str | URL, *, migrate: bool = True) -> TrajectoryStore:
        """Open the store at ``url``, first bringing its schema up to date unless ``migrate`` is off."""
        engine = make_engine(url)
        if migrate:
            upgrade(engine)
        elif (found := current_revision(engine)) != (head := head_revision()):
            engine.dispose()
            raise StoreError(f"the store's schema is at revision {found}, this code needs {head}: "
                             "run `dump migrate` (or open it with migrate=True)")
        return cls(engine)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> TrajectoryStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- registration -------------------------------------------------------------------------------

    def _insert(self, table: Table) -> Any:
        return self._dialect.insert(table)

    def _upsert(self, connection: Connection, table: Table, rows: list[dict[str, Any]], keys: Sequence[str],
                ) -> None:
        """Insert rows, or fill in the known values of existing ones."""
        if not rows:
            return
        statement = self._insert(table)
        known = {c.name: func.coalesce(statement.excluded[c.name], table.c[c.name])
                 for c in table.columns if c.name not in keys}
        connection.execute(statement.on_conflict_do_update(index_elements=list(keys), set_=known), rows)

    def register_problems(self, entries: Iterable[ProblemEntry]) -> int:
        rows = [{"id": e.id, "version": e.version, "category": e.category, "query": _text(e.query),
                 "suite": e.suite, "leak_cluster": e.leak_cluster,
                 "reward_json": None if e.reward is None else blobs.dumps(e.reward).decode()}
                for e in entries]
        with self.engine.begin() as connection:
            for batch in batches(rows, 1000):
                self._upsert(connection, PROBLEMS, batch, ["id"])
        return len(rows)

    def suite_problems(self, suite: str) -> list[ProblemEntry]:
        """The problems registered under ``suite`` (with their rewards), by id."""
        query = select(PROBLEMS).where(PROBLEMS.c.suite == suite).order_by(PROBLEMS.c.id)
        with self.engine.connect() as connection:
            return [ProblemEntry(id=row.id, category=row.category, query=row.query, version=row.version,
                                 suite=row.suite, leak_cluster=row.leak_cluster,
                                 reward=None if row.reward_json is None else blobs.loads(row.reward_json))
                    for row in connection.execute(query)]

    def register_agent(self, entry: AgentEntry) -> None:
        with self.engine.begin() as connection:
            self._upsert(connection, AGENTS, [entry.model_dump()], ["code_hash"])

    def register_run(self, entry: RunEntry) -> None:
        with self.engine.begin() as connection:
            self._upsert(connection, RUNS, [entry.model_dump()], ["id"])

    def finish_run(self, run_id: str, finished_at: float) -> None:
        with self.engine.begin() as connection:
            connection.execute(update(RUNS).where(RUNS.c.id == run_id).values(finished_at=finished_at))

    # -- attempts -----------------------------------------------------------------------------------

    def _build_attempt_upsert(self, statement: Any) -> Insert:
        new = statement.excluded
        same_content = ATTEMPTS.c.content_hash == new.content_hash
        values: dict[str, Any] = {c.name: new[c.name] for c in ATTEMPTS.columns
                                  if c.name not in (*KEY_COLUMNS, "id", *DERIVED_COLUMNS)}
        for name in DERIVED_COLUMNS:
            values[name] = case((same_content, func.coalesce(new[name], ATTEMPTS.c[name])), else_=new[name])
        upsert: Insert = statement.on_conflict_do_update(index_elements=list(KEY_COLUMNS), set_=values)
        return upsert

    def _store_batch(self, writes: list[AttemptWrite], encoded: list[dict[str, Any]]) -> None:
        # Last write wins within a batch: PostgreSQL refuses to upsert one row twice in a statement.
        by_key = {AttemptKey.of(w.record): row for w, row in zip(writes, encoded, strict=True)}
        records = [w.record for w in writes]
        problems = {r.problem_id: {"id": r.problem_id, "version": 1, "category": r.category,
                                   "query": _text(r.query)} for r in records}
        agents = {r.agent_hash: {"code_hash": r.agent_hash} for r in records}
        runs = {r.run_id: {"id": r.run_id} for r in records}
        with self.engine.begin() as connection:
            for table, rows in ((PROBLEMS, problems), (AGENTS, agents), (RUNS, runs)):
                connection.execute(self._insert(table).on_conflict_do_nothing(), list(rows.values()))
            self._upsert_attempts(connection, by_key)

    def _upsert_attempts(self, connection: Connection, by_key: dict[AttemptKey, dict[str, Any]]) -> None:
        """The attempts' rows, with a statement compiled once (:class:`_CompiledUpsert`) and run as the
        driver's SQL. On SQLite as multi-row upserts: one statement (one step of the database) for many
        rows. SQLAlchemy sends an upsert of many rows row by row (its "insertmanyvalues" batching skips
        ON CONFLICT statements), and on SQLite each row then released and took back the GIL, which the
        encoding threads held: the writer waited for it row after row. PostgreSQL takes the one-row
        upsert for every row: psycopg pipelines it (one wait for the batch) and prepares it once, where a
        statement of thousands of parameters is parsed again by psycopg and planned again by the server
        on every execution (measured: 4x the writer's time); run as the driver's SQL it costs the writer
        about 15% less CPU than through SQLAlchemy (0.11 -> 0.095 ms an attempt). A batch of at least
        ``COPY_MIN_ROWS`` new attempts goes there by ``COPY`` instead (:meth:`_copy_new`)."""
        rows = list(by_key.values())
        names = tuple(rows[0])
        if self.engine.dialect.name != "sqlite":
            if len(rows) >= COPY_MIN_ROWS:
                rows = self._copy_new(connection, by_key)
            if rows:
                upsert = self._compiled_upsert(1, names)
                connection.exec_driver_sql(upsert.sql, upsert.named(rows))
            return
        for start in range(0, len(rows), ROWS_PER_STATEMENT):
            chunk = rows[start:start + ROWS_PER_STATEMENT]
            upsert = self._compiled_upsert(len(chunk), names)
            connection.exec_driver_sql(upsert.sql, upsert.parameters(chunk))

    def _copy_new(self, connection: Connection, by_key: dict[AttemptKey, dict[str, Any]],
                  ) -> list[dict[str, Any]]:
        """Copy the rows of attempts not stored yet (PostgreSQL, ``pgcopy.py``); returns the rows left to
        upsert: the stored ones, or all if the copy declined them (another writer stored one of the new
        ones meanwhile, or a value does not fit its column)."""
        rows = list(by_key.values())
        stored = pgcopy.stored_keys(connection, ATTEMPTS, KEY_COLUMNS, rows)  # tuples equal to AttemptKeys
        new = [row for key, row in by_key.items() if key not in stored]
        if len(new) < COPY_MIN_ROWS:
            return rows
        if self._attempt_types is None:
            self._attempt_types = pgcopy.column_types(connection, ATTEMPTS)
        if not pgcopy.copy_rows(connection, ATTEMPTS, new, self._attempt_types):
            log.info("attempts_upserted_not_copied", attempts=len(new))
            return rows
        return [row for key, row in by_key.items() if key in stored]

    def _compiled_upsert(self, count: int, names: tuple[str, ...]) -> _CompiledUpsert:
        key = (count, names)
        found = self._attempt_upserts.get(key)
        if found is None:
            if len(self._attempt_upserts) >= UPSERTS_KEPT:
                self._attempt_upserts.pop(next(iter(self._attempt_upserts)))
            found = self._attempt_upserts[key] = _CompiledUpsert.compile(self, count, names)
        return found

    def write_attempts(self, items: Iterable[AttemptRecord | AttemptWrite], *,
                       batch_size: int = DEFAULT_BATCH) -> int:
        """Store attempts, ``batch_size`` per transaction; returns how many were written.

        Attempts are encoded (JSON, compression, the echo measure: ``ingest.py``) while the previous
        batch is being committed. If ``items`` raises, a record cannot be encoded or the database
        fails, the batches committed before stay and the failing one is rolled back as a whole.
        """
        writes = (i if isinstance(i, AttemptWrite) else AttemptWrite(record=i) for i in items)
        written = write_batches(self._store_batch, writes, batch_size)
        log.debug("attempts_written", total=written)
        return written

    def write_attempt(self, item: AttemptRecord | AttemptWrite) -> None:
        self.write_attempts([item])

    def set_judge_verdict(self, key: AttemptKey, verdict: JudgeVerdict) -> bool:
        """Attach the judge's verdict to a stored attempt; ``False`` if there is no such attempt."""
        with self.engine.begin() as connection:
            result = connection.execute(update(ATTEMPTS).where(*self._key_clause(key))
                                        .values(**judge_columns(verdict)))
        return bool(result.rowcount)

    def set_labels(self, labels: Sequence[tuple[int, FilterVerdict]]) -> None:
        """Store filter verdicts by attempt id, in one transaction."""
        if not labels:
            return
        statement = update(ATTEMPTS).where(ATTEMPTS.c.id == bindparam("attempt_id")).values(
            filter_label=bindparam("label"), filter_json=bindparam("json"))
        rows = [{"attempt_id": attempt_id, "label": columns["filter_label"], "json": columns["filter_json"]}
                for attempt_id, verdict in labels for columns in [label_columns(verdict)]]
        with self.engine.begin() as connection:
            connection.execute(statement, rows)

    def set_label(self, key: AttemptKey, verdict: FilterVerdict) -> bool:
        """Replace a stored attempt's filter verdict; ``False`` if there is no such attempt."""
        with self.engine.begin() as connection:
            result = connection.execute(update(ATTEMPTS).where(*self._key_clause(key))
                                        .values(**label_columns(verdict)))
        return bool(result.rowcount)

    @staticmethod
    def _key_clause(key: AttemptKey) -> list[Any]:
        return [ATTEMPTS.c.run_id == key.run_id, ATTEMPTS.c.agent_hash == key.agent_hash,
                ATTEMPTS.c.problem_id == key.problem_id]

    def get_attempt(self, key: AttemptKey) -> StoredAttempt | None:
        with self.engine.connect() as connection:
            row = connection.execute(select(ATTEMPTS).where(*self._key_clause(key))).first()
        return None if row is None else decode_attempt(row)

    def count_attempts(self) -> int:
        with self.engine.connect() as connection:
            return int(connection.execute(select(func.count()).select_from(ATTEMPTS)).scalar_one())

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """A connection whose reads all see one consistent state of the store, whatever is written
        meanwhile (a dump must not mix attempts and verdicts from before and after a write)."""
        if self.engine.dialect.name == "postgresql":
            with self.engine.connect().execution_options(isolation_level="REPEATABLE READ") as connection, \
                    connection.begin():
                yield connection
            return
        # pysqlite opens no transaction for reads: begin one by hand so that WAL pins a snapshot.
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("BEGIN")
            try:
                yield connection
            finally:
                connection.exec_driver_sql("ROLLBACK")

    def attempt_ids(self, since: float | None = None, until: float | None = None, *,
                    unlabelled_only: bool = False, connection: Connection | None = None) -> list[int]:
        """Ids of the attempts started in ``[since, until)``, in key order (run, agent, problem).

        ``connection``: read through it (e.g. a :meth:`snapshot`) instead of a connection of its own.
        """
        query = select(ATTEMPTS.c.id).order_by(*(ATTEMPTS.c[k] for k in KEY_COLUMNS))
        if since is not None:
            query = query.where(ATTEMPTS.c.started_at >= since)
        if until is not None:
            query = query.where(ATTEMPTS.c.started_at < until)
        if unlabelled_only:
            query = query.where(ATTEMPTS.c.filter_label.is_(None))
        with self._reading(connection) as reader:
            return list(reader.execute(query).scalars())

    @contextmanager
    def _reading(self, connection: Connection | None) -> Iterator[Connection]:
        """``connection`` if given (e.g. a :meth:`snapshot`), else a connection of the store's own."""
        if connection is not None:
            yield connection
            return
        with self.engine.connect() as own:
            yield own

    def fetch(self, ids: Sequence[int]) -> list[Row[Any]]:
        """Full attempt rows for ``ids``, in the order of ``ids`` (missing ids skipped)."""
        if not ids:
            return []
        with self.engine.connect() as connection:
            rows = {row.id: row for row in connection.execute(select(ATTEMPTS).where(ATTEMPTS.c.id.in_(ids)))}
        return [rows[i] for i in ids if i in rows]

    def load(self, ids: Sequence[int]) -> list[StoredAttempt]:
        return [decode_attempt(row) for row in self.fetch(ids)]

    def attempts_in_context(self, ids: Sequence[int], *, chunk: int,
                            connection: Connection | None = None) -> Iterator[list[Row[Any]]]:
        """The attempts ``ids`` (``CONTEXT_ATTEMPT_COLUMNS``) with their problem, run and agent
        (``CONTEXT_COLUMNS``), ``chunk`` at a time, in ``ids`` order (missing ids skipped)."""
        query = (select(*CONTEXT_ATTEMPT_COLUMNS, *CONTEXT_COLUMNS)
                 .join(PROBLEMS, PROBLEMS.c.id == ATTEMPTS.c.problem_id)
                 .join(RUNS, RUNS.c.id == ATTEMPTS.c.run_id)
                 .join(AGENTS, AGENTS.c.code_hash == ATTEMPTS.c.agent_hash))
        with self._reading(connection) as reader:
            for start in range(0, len(ids), chunk):
                part = ids[start:start + chunk]
                found = {row.id: row for row in reader.execute(query.where(ATTEMPTS.c.id.in_(part)))}
                yield [found[i] for i in part if i in found]

    def agents(self, hashes: Iterable[str], *, connection: Connection | None = None) -> list[AgentEntry]:
        """The agents of ``hashes`` as registered (unknown hashes skipped), by code hash."""
        wanted = sorted(set(hashes))
        if not wanted:
            return []
        query = select(AGENTS).where(AGENTS.c.code_hash.in_(wanted)).order_by(AGENTS.c.code_hash)
        with self._reading(connection) as reader:
            return [AgentEntry(code_hash=row.code_hash, hotkey=row.hotkey, submitted_at=row.submitted_at,
                               embargo_until=row.embargo_until, published_at=row.published_at, code=row.code)
                    for row in reader.execute(query)]

    # -- summaries ----------------------------------------------------------------------------------

    def scored_runs(self, kinds: Iterable[RunKind], *, offset: int, limit: int) -> tuple[list[str], int]:
        """A page of the ids of the runs of ``kinds``, newest first, and how many there are."""
        kinds = list(kinds)
        page = (select(RUNS.c.id).where(RUNS.c.kind.in_(kinds))
                .order_by(RUNS.c.started_at.desc().nulls_last(), RUNS.c.id).offset(offset).limit(limit))
        with self.engine.connect() as connection:
            total = connection.execute(select(func.count()).where(RUNS.c.kind.in_(kinds))).scalar_one()
            return list(connection.execute(page).scalars()), int(total)

    def category_scores(self, kinds: Iterable[RunKind], *,
                        run_ids: Sequence[str] | None = None) -> list[CategoryScore]:
        """Per run of ``kinds`` (of ``run_ids`` only, when given: read through the attempts' run index),
        agent and problem category: attempts, success rate, mean judge quality; by run, then category.

        Counted as the run's score counts them (``arena.validator.runs``): an attempt the inference
        provider failed on every try is the agent's failure, and its run stores a verdict with it when it
        scores it so; one still owed a retry (no verdict) is left out, as the score leaves it out."""
        query = (select(ATTEMPTS.c.run_id, RUNS.c.kind, RUNS.c.suite, ATTEMPTS.c.agent_hash, AGENTS.c.hotkey,
                        PROBLEMS.c.category, func.count().label("attempts"),
                        func.sum(cast(ATTEMPTS.c.success, Integer)).label("successes"),
                        func.avg(ATTEMPTS.c.judge_quality).label("mean_quality"))
                 .join(RUNS, RUNS.c.id == ATTEMPTS.c.run_id)
                 .join(PROBLEMS, PROBLEMS.c.id == ATTEMPTS.c.problem_id)
                 .join(AGENTS, AGENTS.c.code_hash == ATTEMPTS.c.agent_hash)
                 .where(RUNS.c.kind.in_(list(kinds)),
                        or_(ATTEMPTS.c.infra_failed.is_not(True), ATTEMPTS.c.judge_json.is_not(None)),
                        *([] if run_ids is None else [ATTEMPTS.c.run_id.in_(list(run_ids))]))
                 .group_by(ATTEMPTS.c.run_id, RUNS.c.kind, RUNS.c.suite, ATTEMPTS.c.agent_hash,
                           AGENTS.c.hotkey, PROBLEMS.c.category)
                 .order_by(ATTEMPTS.c.run_id, PROBLEMS.c.category))
        with self.engine.connect() as connection:
            rows = connection.execute(query).all()
        return [CategoryScore(run_id=r.run_id, kind=r.kind, suite=r.suite, agent_hash=r.agent_hash,
                              hotkey=r.hotkey, category=r.category, attempts=r.attempts,
                              success_rate=(r.successes or 0) / r.attempts,
                              mean_quality=None if r.mean_quality is None else float(r.mean_quality))
                for r in rows]

    def attempts_per_label(self) -> Mapping[str, int]:
        """Stored attempts per structural-filter label (``unlabelled`` for those not labelled yet)."""
        query = select(ATTEMPTS.c.filter_label, func.count()).group_by(ATTEMPTS.c.filter_label)
        with self.engine.connect() as connection:
            return {label or "unlabelled": int(n) for label, n in connection.execute(query)}

    def attempts_per_day_and_label(self) -> dict[int, dict[str, int]]:
        """Stored attempts per UTC day of their start (days since 1970-01-01) and per structural-filter
        label (``unlabelled`` for those not labelled yet)."""
        seconds = ATTEMPTS.c.started_at / 86_400
        # PostgreSQL's cast rounds, SQLite's truncates: floor where the backend has it.
        number = cast(func.floor(seconds), Integer) if self.engine.dialect.name == "postgresql" \
            else cast(seconds, Integer)
        query = (select(number, ATTEMPTS.c.filter_label, func.count())
                 .group_by(number, ATTEMPTS.c.filter_label))
        counts: dict[int, dict[str, int]] = {}
        with self.engine.connect() as connection:
            for day, label, n in connection.execute(query):
                labels = counts.setdefault(int(day), {})
                labels[label or "unlabelled"] = labels.get(label or "unlabelled", 0) + int(n)
        return counts
