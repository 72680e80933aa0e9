"""What a validator keeps about uploads: seen nonces (replays stay refused across restarts), verdicts
per committed file, the fingerprint of every file that passed static analysis (the copy rule's input)
and accepted files by hash. Tables live in the arena database (``arena.storage``).

A verdict is keyed by hotkey, file hash and commitment block: two files committed in one block are two
verdicts, never one answered for the other. Databases made when verdicts were keyed by hotkey and block
(tables ``submission_verdicts`` and ``submission_findings``, which ``create_all`` cannot re-key) keep
those tables untouched; their rows are copied once into the new tables when a store first opens them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping, Sequence
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
    tuple_,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column
from sqlalchemy.sql import ColumnElement

from arena.race.clock import Clock
from arena.race.events import CopyOf
from arena.storage import Base
from arena.submissions.copies import CodeEntry, CodeKey
from arena.submissions.models import Submission
from arena.submissions.rules import PastVerdict
from shoppingbench.files import write_file_atomically
from shoppingbench.submission_check.models import Finding
from shoppingbench.submission_check.similarity import CodeFingerprint

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


class _CodeRow(Base):
    """A file that passed static analysis: its fingerprint, and the original when it is a copy."""

    __tablename__ = "submission_code"
    hotkey: Mapped[str] = mapped_column(String(64), primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    commitment_block: Mapped[int] = mapped_column(primary_key=True)
    extrinsic_index: Mapped[int | None]
    fingerprint: Mapped[str] = mapped_column(Text, doc="JSON CodeFingerprint")
    copy_of: Mapped[str | None] = mapped_column(Text, doc="JSON CopyOf when the file is a copy")


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
    copy_of: CopyOf | None = None


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
            code = session.get(_CodeRow, (hotkey, sha256, commitment_block))
            submission = Submission(hotkey=row.hotkey, sha256=row.sha256, name=row.name,
                                    size_bytes=row.size_bytes, commitment_block=row.commitment_block,
                                    commitment_time=_utc(row.commitment_time),
                                    received_at=_utc(row.received_at))
            return submission, _verdict(row, found.findings if found is not None else None,
                                        code.copy_of if code is not None else None)

    def all(self) -> list[UploadVerdict]:
        """Every verdict with the findings of each rejection and the original of each copy, oldest
        commitment first."""
        query = (select(_VerdictRow, _FindingsRow.findings, _CodeRow.copy_of)
                 .outerjoin(_FindingsRow, _same_file(_FindingsRow)).outerjoin(_CodeRow, _same_file(_CodeRow))
                 .order_by(_VerdictRow.commitment_time, _VerdictRow.hotkey))
        with Session(self._engine) as session:
            rows = session.execute(query).all()
        return [_verdict(row, findings, copy_of) for row, findings, copy_of in rows]

    def code_entries(self) -> list[tuple[CodeEntry, bool]]:
        """The fingerprint and chain place of every file that passed static analysis, and whether it is
        a copy."""
        with Session(self._engine) as session:
            return [(CodeEntry(hotkey=r.hotkey, sha256=r.sha256, commitment_block=r.commitment_block,
                               extrinsic_index=r.extrinsic_index,
                               fingerprint=CodeFingerprint.model_validate_json(r.fingerprint)),
                     r.copy_of is not None)
                    for r in session.scalars(select(_CodeRow)).all()]

    def record(self, submission: Submission, outcome: str, findings: Sequence[Finding] = (), *,
               code: CodeEntry | None = None, copy_of: CopyOf | None = None) -> None:
        """The verdict on a committed file, with the findings of a rejection or the fingerprint (and the
        original, for a copy) of a file that passed; a file is judged once per commitment (a repeat of it
        changes nothing)."""
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
                if code is not None:
                    session.add(_CodeRow(**key, extrinsic_index=code.extrinsic_index,
                                         fingerprint=code.fingerprint.model_dump_json(),
                                         copy_of=copy_of.model_dump_json() if copy_of else None))
        except IntegrityError:
            pass

    def mark_copies(self, verdicts: Mapping[CodeKey, CopyOf]) -> list[CodeKey]:
        """Record ``verdicts`` where they changed: an accepted file turned into a copy, or a copy whose
        original turned out to copy an earlier file (an original uploaded after its copies); returns the
        keys it changed. A copy stays a copy."""
        if not verdicts:
            return []
        with Session(self._engine) as session, session.begin():
            key = tuple_(_CodeRow.hotkey, _CodeRow.sha256, _CodeRow.commitment_block)
            rows = [r for r in session.scalars(select(_CodeRow).where(key.in_(list(verdicts)))).all()
                    if r.copy_of is None or CopyOf.model_validate_json(r.copy_of)
                    != verdicts[(r.hotkey, r.sha256, r.commitment_block)]]
            changed = [(r.hotkey, r.sha256, r.commitment_block) for r in rows]
            for row, changed_key in zip(rows, changed, strict=True):
                row.copy_of = verdicts[changed_key].model_dump_json()
                session.execute(update(_VerdictRow).where(
                    _VerdictRow.hotkey == row.hotkey, _VerdictRow.sha256 == row.sha256,
                    _VerdictRow.commitment_block == row.commitment_block).values(outcome="copy"))
        return changed


def _same_file(table: type[_FindingsRow] | type[_CodeRow]) -> ColumnElement[bool]:
    """The join condition of a per-file table with the verdicts."""
    return ((table.hotkey == _VerdictRow.hotkey) & (table.sha256 == _VerdictRow.sha256)
            & (table.commitment_block == _VerdictRow.commitment_block))


def _verdict(row: _VerdictRow, findings: str | None, copy_of: str | None = None) -> UploadVerdict:
    return UploadVerdict(hotkey=row.hotkey, sha256=row.sha256, commitment_block=row.commitment_block,
                         commitment_time=_utc(row.commitment_time), outcome=row.outcome,
                         findings=tuple(FINDINGS.validate_json(findings)) if findings else (),
                         copy_of=CopyOf.model_validate_json(copy_of) if copy_of else None)


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
        write_file_atomically(target, source)
        return target
