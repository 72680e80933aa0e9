"""Feed the submission gate's verdicts into the race engine, each exactly once, restarts included.

The gate (``arena.submissions``) records one verdict per (hotkey, file, commitment) in the arena database;
the race engine's event log records what it was fed. An upload counts as fed when the log holds an
accepted or rejected event for its hotkey and file at or after its commitment time, so a restart
(or a crash between the two writes) neither loses nor repeats one. A copy verdict counts as fed when the
race state holds that file marked a copy of that original: also a file fed as accepted (or as a copy of a
copy) before the gate found the original.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import structlog
from sqlalchemy import Engine

from arena.race import RaceEngine, RaceEvent, RaceState, Rejection
from arena.race.events import CopyOf, SubmissionAccepted, SubmissionCopied, SubmissionRejected
from arena.submissions.store import UploadVerdict, VerdictStore

log = structlog.get_logger(__name__)


def upload_verdicts(engine: Engine) -> list[UploadVerdict]:
    """Every verdict the gate recorded with the findings of each rejection, oldest commitment first."""
    return VerdictStore(engine).all()


def fed_submissions(events: Iterable[RaceEvent]) -> dict[tuple[str, str], datetime]:
    """(hotkey, file hash) -> when the engine last recorded it, accepted or rejected."""
    fed: dict[tuple[str, str], datetime] = {}
    for event in events:
        if isinstance(event, SubmissionAccepted | SubmissionRejected | SubmissionCopied):
            fed[(event.hotkey, event.code_hash)] = event.at
    return fed


def ingest_uploads(verdicts: Iterable[UploadVerdict], race: RaceEngine,
                   fed: dict[tuple[str, str], datetime]) -> int:
    """Submit every verdict not fed yet; ``fed`` is updated in place. Returns how many were recorded.

    A hotkey still cooling down in the engine (its cooldown counts from when it was fed, a little later
    than the gate's) is simply tried again on a later tick.
    """
    recorded = 0
    for verdict in verdicts:
        key = (verdict.hotkey, verdict.sha256)
        if verdict.copy_of is not None:
            if _marked_copy(race.state, key, verdict.copy_of):
                continue
        elif key in fed and fed[key] >= verdict.commitment_time:
            continue
        rejection = None if verdict.outcome in ("accepted", "copy") else Rejection.of(
            "integrity" if verdict.outcome == "integrity" else "security", verdict.findings)
        outcome = race.submit(verdict.hotkey, verdict.sha256, rejection,
                              commitment_block=verdict.commitment_block, copy_of=verdict.copy_of)
        if outcome.status == "cooling_down":
            log.info("upload_waits_for_cooldown", hotkey=verdict.hotkey, retry_at=str(outcome.retry_at))
            continue
        fed[key] = race.clock.now()
        recorded += 1
        log.info("upload_ingested", hotkey=verdict.hotkey, sha256=verdict.sha256, status=outcome.status,
                 submission_id=outcome.submission_id)
    return recorded


def _marked_copy(state: RaceState, key: tuple[str, str], original: CopyOf) -> bool:
    return any((s.hotkey, s.code_hash) == key and s.copy_of == original for s in state.submissions.values())
