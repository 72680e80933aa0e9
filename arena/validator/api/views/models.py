"""The API's own answers about the reign and the embargo, built from the race state."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel

from arena.race import RaceState
from arena.race.state import Submission


class EmbargoEntry(BaseModel):
    submission_id: str
    hotkey: str
    embargo_until: datetime | None
    published_at: datetime | None


class WinnerView(BaseModel):
    submission_id: str
    hotkey: str
    code_hash: str
    since: datetime
    race_id: str
    embargo: EmbargoEntry


def embargo_entry(state: RaceState, submission: Submission) -> EmbargoEntry:
    sid = submission.submission_id
    return EmbargoEntry(submission_id=sid, hotkey=submission.hotkey, embargo_until=state.embargoed.get(sid),
                        published_at=state.published.get(sid))


def reigning_winner(state: RaceState) -> WinnerView | None:
    reign = state.reign
    if reign is None:
        return None
    submission = state.submissions[reign.submission_id]
    return WinnerView(submission_id=reign.submission_id, hotkey=reign.hotkey, code_hash=submission.code_hash,
                      since=reign.since, race_id=reign.race_id, embargo=embargo_entry(state, submission))


def by_submission_time(submissions: Iterable[Submission]) -> list[Submission]:
    """Oldest submission first (ties by id): the order of every list of submissions the API shows."""
    return sorted(submissions, key=lambda s: (s.submitted_at, s.submission_id))
