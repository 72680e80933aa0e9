"""What a validator keeps about uploads: seen nonces (replays stay refused across restarts), verdicts
per committed file, and accepted files by hash. Tables live in the arena database (``arena.storage``).

A verdict is keyed by hotkey, file hash and commitment block: two files committed in one block are two
verdicts, never one answered for the other. Databases made when verdicts were keyed by hotkey and block
(tables ``submission_verdicts`` and ``submission_findings``, which ``create_all`` cannot re-key) keep
those tables untouched; their rows are copied once into the new tables when a store first opens them.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, TypeAdapter
from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    delete,
    func,
    inspect,
    select,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column

from arena.race.clock import Clock
from arena.storage import Base
from arena.submissions.models import Submission
from arena.submissions.rules import PastVerdict
from shoppingbench.submission_check.models import Finding

FINDINGS = TypeAdapter(list[Finding])


class _NonceRow(Base):
    __tablename__ = "submission_nonces"
    hotkey: Mapped[str] = mapped_column(String(64), primary_key=True)
    nonce_ns: Mapped[int] = mapped_column(BigInteger, primary_key=True, index=True)


class _VerdictRow(Base):
    __tablename__ = "submission_judgements"
    hotkey: Mapped[str] = mapped_column(String(64), primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    commitment_block: Mapped[int] = mapped_column(primary_key=True)
    commitment_time: Mapped[datetime]
    outcome: Mapped[str] = mapped_column(String(16))
    name: Mapped[str]
    size_bytes: Mapped[int]
    received_at: Mapped[datetime]


class _FindingsRow(Base):
    """The static-analysis findings behind a rejection verdict, in a table of their own."""

    __tablename__ = "submission_judgement_findings"
    hotkey: Mapped[str] = mapped_column(String(64), primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    commitment_block: Mapped[int] = mapped_column(primary_key=True)
    findings: Mapped[str] = mapped_column(Text, doc="JSON list of shoppingbench Finding")


_LEGACY = MetaData()
_LEGACY_VERDICTS = Table(
    "submission_verdicts", _LEGACY, Column("hotkey", String(64), primary_key=True),
    Column("commitment_block", Integer, primary_key=True), Column("sha256", String(64)),
    Column("commitment_time", DateTime), Column("outcome", String(16)), Column("name", String),
    Column("size_bytes", Integer), Column("received_at", DateTime))
_LEGACY_FINDINGS = Table(
    "submission_findings", _LEGACY, Column("hotkey", String(64), primary_key=True),
    Column("commitment_block", Integer, primary_key=True), Column("findings", Text))
"""The tables of verdicts keyed by (hotkey, block), read only to adopt their rows."""


class UploadVerdict(BaseModel):
    """One recorded verdict with the findings of a rejection."""

    model_config = ConfigDict(frozen=True)

    hotkey: str
    sha256: str
    commitment_block: int
    commitment_time: datetime
    outcome: str
    findings: tuple[Finding, ...] = ()


def _utc(value: datetime) -> datetime:
    # SQLite hands datetimes back naive; they were stored as UTC.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class SqlNonceStore:
    """``bittensor.http_auth.NonceStore`` in SQL: a (hotkey, nonce) pair is accepted once, ever within
    ``retention``; older pairs are purged because ``verify`` refuses them as stale anyway.

    One writer at a time in this process (the API answers uploads on many threads): the insert and the
    purge are one short transaction each request, so queueing them costs less than SQLite's lock retries;
    other processes sharing the database are waited for by the engine's busy timeout (``arena.storage``).
    The gate calls it only for registered hotkeys after their signature verified, so strangers' keys and
    forged requests never grow the table.
    """

    def __init__(self, engine: Engine, clock: Clock, retention: float) -> None:
        self._engine = engine
        self._clock = clock
        self._writer = threading.Lock()
        self.retention = retention

    def check_and_store(self, hotkey_ss58: str, nonce_ns: int) -> bool:
        horizon = int(self._clock.now().timestamp() * 1e9) - int(self.retention * 1e9)
        try:
            with self._writer, Session(self._engine) as session, session.begin():
                session.execute(delete(_NonceRow).where(_NonceRow.nonce_ns < horizon))
                session.add(_NonceRow(hotkey=hotkey_ss58, nonce_ns=nonce_ns))
        except IntegrityError:
            return False
        return True


def _adopt_legacy_rows(engine: Engine) -> None:
    """Copy the verdicts of a database keyed by (hotkey, block) into the new tables, once: while they are
    empty (a store opening the database at the same moment may win the race; its copy is the same). The
    old tables stay as they were."""
    if not inspect(engine).has_table(_LEGACY_VERDICTS.name):
        return
    with contextlib.suppress(IntegrityError), Session(engine) as session, session.begin():
        if session.scalar(select(func.count()).select_from(_VerdictRow)):
            return
        old = session.execute(select(_LEGACY_VERDICTS)).all()
        shas = {(r.hotkey, r.commitment_block): r.sha256 for r in old}
        session.add_all(_VerdictRow(**r._asdict()) for r in old)
        if inspect(engine).has_table(_LEGACY_FINDINGS.name):
            session.add_all(_FindingsRow(**r._asdict(), sha256=shas[(r.hotkey, r.commitment_block)])
                            for r in session.execute(select(_LEGACY_FINDINGS)).all()
                            if (r.hotkey, r.commitment_block) in shas)


class VerdictStore:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        _adopt_legacy_rows(engine)

    def history(self, hotkey: str) -> list[PastVerdict]:
        with Session(self._engine) as session:
            rows = session.scalars(select(_VerdictRow).where(_VerdictRow.hotkey == hotkey)).all()
            return [PastVerdict.model_validate({"commitment_block": r.commitment_block, "outcome": r.outcome,
                                                "commitment_time": _utc(r.commitment_time)}) for r in rows]

    def judged(self, hotkey: str, sha256: str,
               commitment_block: int) -> tuple[Submission, UploadVerdict] | None:
        """The submission and verdict recorded for this file at this commitment, if it was judged."""
        with Session(self._engine) as session:
            row = session.get(_VerdictRow, (hotkey, sha256, commitment_block))
            if row is None:
                return None
            found = session.get(_FindingsRow, (hotkey, sha256, commitment_block))
            submission = Submission(hotkey=row.hotkey, sha256=row.sha256, name=row.name,
                                    size_bytes=row.size_bytes, commitment_block=row.commitment_block,
                                    commitment_time=_utc(row.commitment_time),
                                    received_at=_utc(row.received_at))
            return submission, _verdict(row, found.findings if found is not None else None)

    def all(self) -> list[UploadVerdict]:
        """Every verdict with the findings of each rejection, oldest commitment first."""
        query = (select(_VerdictRow, _FindingsRow.findings)
                 .outerjoin(_FindingsRow, (_FindingsRow.hotkey == _VerdictRow.hotkey)
                            & (_FindingsRow.sha256 == _VerdictRow.sha256)
                            & (_FindingsRow.commitment_block == _VerdictRow.commitment_block))
                 .order_by(_VerdictRow.commitment_time, _VerdictRow.hotkey))
        with Session(self._engine) as session:
            return [_verdict(row, findings) for row, findings in session.execute(query).all()]

    def record(self, submission: Submission, outcome: str, findings: Sequence[Finding] = ()) -> None:
        """The verdict on a committed file, with the findings of a rejection; a file is judged once per
        commitment (a repeat of it changes nothing)."""
        key = {"hotkey": submission.hotkey, "sha256": submission.sha256,
               "commitment_block": submission.commitment_block}
        row = _VerdictRow(**key, commitment_time=submission.commitment_time, outcome=outcome,
                          name=submission.name, size_bytes=submission.size_bytes,
                          received_at=submission.received_at)
        try:
            with Session(self._engine) as session, session.begin():
                session.add(row)
                if findings:
                    session.add(_FindingsRow(**key, findings=FINDINGS.dump_json(list(findings)).decode()))
        except IntegrityError:
            pass


def _verdict(row: _VerdictRow, findings: str | None) -> UploadVerdict:
    return UploadVerdict(hotkey=row.hotkey, sha256=row.sha256, commitment_block=row.commitment_block,
                         commitment_time=_utc(row.commitment_time), outcome=row.outcome,
                         findings=tuple(FINDINGS.validate_json(findings)) if findings else ())


class FileStore:
    """Accepted agent files under ``root/<sha256>.py``, written atomically (a crash leaves no half file)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, sha256: str) -> Path:
        return self.root / f"{sha256}.py"

    def put(self, sha256: str, source: bytes) -> Path:
        target = self.path(sha256)
        if target.exists():
            return target
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".upload-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(source)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target
