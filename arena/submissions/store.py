"""What a validator keeps about uploads: seen nonces (replays stay refused across restarts), verdicts
per commitment, and accepted files by hash. Tables live in the arena database (``arena.storage``)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import TypeAdapter
from sqlalchemy import BigInteger, Engine, String, Text, delete, select
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
    __tablename__ = "submission_verdicts"
    hotkey: Mapped[str] = mapped_column(String(64), primary_key=True)
    commitment_block: Mapped[int] = mapped_column(primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64))
    commitment_time: Mapped[datetime]
    outcome: Mapped[str] = mapped_column(String(16))
    name: Mapped[str]
    size_bytes: Mapped[int]
    received_at: Mapped[datetime]


class _FindingsRow(Base):
    """The static-analysis findings behind a rejection verdict: a table of its own, so that databases made
    before findings were kept gain it on open (``create_all``) and their verdicts read as without."""

    __tablename__ = "submission_findings"
    hotkey: Mapped[str] = mapped_column(String(64), primary_key=True)
    commitment_block: Mapped[int] = mapped_column(primary_key=True)
    findings: Mapped[str] = mapped_column(Text, doc="JSON list of shoppingbench Finding")


def _utc(value: datetime) -> datetime:
    # SQLite hands datetimes back naive; they were stored as UTC.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class SqlNonceStore:
    """``bittensor.http_auth.NonceStore`` in SQL: a (hotkey, nonce) pair is accepted once, ever within
    ``retention``; older pairs are purged because ``verify`` refuses them as stale anyway.

    Only hotkeys ``admit`` accepts are remembered: anyone can make keys and sign, so requests from
    unregistered hotkeys (refused later, and again if replayed) must not grow the table.
    """

    def __init__(self, engine: Engine, clock: Clock, retention: float,
                 admit: Callable[[str], bool]) -> None:
        self._engine = engine
        self._clock = clock
        self._admit = admit
        self.retention = retention

    def check_and_store(self, hotkey_ss58: str, nonce_ns: int) -> bool:
        if not self._admit(hotkey_ss58):
            return True
        horizon = int(self._clock.now().timestamp() * 1e9) - int(self.retention * 1e9)
        try:
            with Session(self._engine) as session, session.begin():
                session.execute(delete(_NonceRow).where(_NonceRow.nonce_ns < horizon))
                session.add(_NonceRow(hotkey=hotkey_ss58, nonce_ns=nonce_ns))
        except IntegrityError:
            return False
        return True


class VerdictStore:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def history(self, hotkey: str) -> list[PastVerdict]:
        with Session(self._engine) as session:
            rows = session.scalars(select(_VerdictRow).where(_VerdictRow.hotkey == hotkey)).all()
            return [PastVerdict.model_validate({"commitment_block": r.commitment_block, "outcome": r.outcome,
                                                "commitment_time": _utc(r.commitment_time)}) for r in rows]

    def accepted(self, hotkey: str, commitment_block: int) -> Submission | None:
        with Session(self._engine) as session:
            row = session.get(_VerdictRow, (hotkey, commitment_block))
            if row is None or row.outcome != "accepted":
                return None
            return Submission(hotkey=row.hotkey, sha256=row.sha256, name=row.name, size_bytes=row.size_bytes,
                              commitment_block=row.commitment_block,
                              commitment_time=_utc(row.commitment_time), received_at=_utc(row.received_at))

    def record(self, submission: Submission, outcome: str, findings: Sequence[Finding] = ()) -> None:
        """The verdict on a commitment, with the findings of a rejection; a commitment is judged once (a
        repeat of it changes nothing)."""
        key = {"hotkey": submission.hotkey, "commitment_block": submission.commitment_block}
        row = _VerdictRow(**key, sha256=submission.sha256, commitment_time=submission.commitment_time,
                          outcome=outcome, name=submission.name, size_bytes=submission.size_bytes,
                          received_at=submission.received_at)
        try:
            with Session(self._engine) as session, session.begin():
                session.add(row)
                if findings:
                    session.add(_FindingsRow(**key, findings=FINDINGS.dump_json(list(findings)).decode()))
        except IntegrityError:
            pass


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
