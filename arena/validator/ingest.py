"""Feed the submission gate's verdicts into the race engine, each exactly once, restarts included.

The gate (``arena.submissions``) records one verdict per (hotkey, file, commitment) in the arena database;
the race engine's event log records what it was fed. An upload counts as fed when the log holds an
accepted or rejected event for its hotkey and file at or after its commitment time, so a restart
(or a crash between the two writes) neither loses nor repeats one.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import structlog
from sqlalchemy import Engine

from arena.race import RaceEngine, RaceEvent, Rejection
from arena.race.events import SubmissionAccepted, SubmissionRejected
from arena.submissions.store import UploadVerdict, VerdictStore

log = structlog.get_logger(__name__)


def upload_verdicts(engine: Engine) -> list[UploadVerdict]:
    """Every verdict the gate recorded with the findings of each rejection, oldest commitment first."""
    return VerdictStore(engine).all()


def fed_submissions(events: Iterable[RaceEvent]) -> dict[tuple[str, str], datetime]:
    """(hotkey, file hash) -> when the engine last recorded it, accepted or rejected."""
    fed: dict[tuple[str, str], datetime] = {}
    for event in events:
        if isinstance(event, SubmissionAccepted | SubmissionRejected):
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
        if key in fed and fed[key] >= verdict.commitment_time:
            continue
        rejection = None if verdict.outcome == "accepted" else Rejection.of(
            "integrity" if verdict.outcome == "integrity" else "security", verdict.findings)
        outcome = race.submit(verdict.hotkey, verdict.sha256, rejection,
                              commitment_block=verdict.commitment_block)
        if outcome.status == "cooling_down":
            log.info("upload_waits_for_cooldown", hotkey=verdict.hotkey, retry_at=str(outcome.retry_at))
            continue
        fed[key] = race.clock.now()
        recorded += 1
        log.info("upload_ingested", hotkey=verdict.hotkey, sha256=verdict.sha256, status=outcome.status,
                 submission_id=outcome.submission_id)
    return recorded
