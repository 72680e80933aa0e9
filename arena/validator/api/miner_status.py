"""What the validators' public APIs say about one miner's agents (``miner status``): each submission's
state, qualifying score, race score, embargo and why a file was refused, read from ``/submissions``,
``/race`` and ``/embargo`` of every validator with a permit."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from arena.chain import Neuron
from arena.race.state import CompletedRace, RunningRace, Submission
from arena.validator.api.views.models import EmbargoEntry


class AgentStatus(BaseModel):
    """One of the hotkey's submissions as one validator reports it."""

    submission_id: str
    submitted_at: str
    status: str
    qualifying_score: float | None
    race_score: float | None
    race_id: str | None
    embargo: str
    rejection: str = ""


class ValidatorReport(BaseModel):
    """What one validator's public API said about the hotkey, or why it said nothing."""

    uid: int
    hotkey: str
    url: str
    agents: list[AgentStatus] = []
    error: str | None = None


_SUBMISSIONS = TypeAdapter(list[Submission])
_EMBARGO = TypeAdapter(list[EmbargoEntry])
_RACE = TypeAdapter(RunningRace | None)
_LAST_RACE = TypeAdapter(CompletedRace | None)


def _race_score(submission: Submission, running: RunningRace | None,
                last: CompletedRace | None) -> tuple[float | None, str | None]:
    """The submission's score in the running race if it has one there, else in the last finished race."""
    for race in (running, last):
        if race is not None and submission.submission_id in race.results:
            return race.results[submission.submission_id], race.race_id
    return None, None


def _embargo_text(entry: EmbargoEntry | None) -> str:
    if entry is None:
        return ""
    if entry.published_at is not None:
        return f"published {entry.published_at.isoformat()}"
    return f"until {entry.embargo_until.isoformat()}" if entry.embargo_until else ""


def _rejection_text(submission: Submission) -> str:
    """Why the validator refused the file: static analysis' reason, or the original it copies."""
    rejection, original = submission.rejection, submission.copy_of
    if original is not None:
        return f"{original.summary()}: no race, no weight"
    return "" if rejection is None else f"{rejection.kind}: {rejection.reason}"


def validator_report(client: httpx.Client, validator: Neuron, hotkey: str) -> ValidatorReport:
    """Ask ``validator``'s API (``/submissions``, ``/race``, ``/embargo``) about ``hotkey``'s agents.

    The answers are untrusted: anything unreachable, non-2xx or malformed becomes the report's error.
    """
    assert validator.axon is not None  # metagraph.validators() lists only neurons with an axon
    report = ValidatorReport(uid=validator.uid, hotkey=validator.hotkey, url=validator.axon.url)
    try:
        answers = []
        for path in ("/submissions", "/race", "/embargo"):
            response = client.get(report.url + path)
            response.raise_for_status()
            answers.append(response.content)
        submissions = _SUBMISSIONS.validate_json(answers[0])
        race = orjson.loads(answers[1])
        if not isinstance(race, dict):
            raise ValueError("/race is not a JSON object")
        running = _RACE.validate_python(race.get("running"))
        last = _LAST_RACE.validate_python(race.get("last_race"))
        embargo = {entry.submission_id: entry for entry in _EMBARGO.validate_json(answers[2])}
    except httpx.HTTPStatusError as exc:
        return report.model_copy(update={"error": f"HTTP {exc.response.status_code} from {exc.request.url}"})
    except httpx.HTTPError as exc:
        return report.model_copy(update={"error": f"unreachable: {type(exc).__name__}"})
    except (ValidationError, ValueError) as exc:  # orjson.JSONDecodeError is a ValueError
        return report.model_copy(update={"error": f"malformed answer: {str(exc).splitlines()[0]}"})
    agents = []
    for submission in submissions:
        if submission.hotkey != hotkey:
            continue
        score, race_id = _race_score(submission, running, last)
        agents.append(AgentStatus(submission_id=submission.submission_id,
                                  submitted_at=submission.submitted_at.isoformat(), status=submission.status,
                                  qualifying_score=submission.qualifying_score, race_score=score,
                                  race_id=race_id,
                                  embargo=_embargo_text(embargo.get(submission.submission_id)),
                                  rejection=_rejection_text(submission)))
    return report.model_copy(update={"agents": agents})


def validator_reports(validators: Sequence[Neuron], hotkey: str, *, timeout: float) -> list[ValidatorReport]:
    """:func:`validator_report` of each validator, each request within ``timeout`` seconds."""
    with httpx.Client(timeout=timeout) as client:
        return [validator_report(client, validator, hotkey) for validator in validators]


def status_table(report: ValidatorReport) -> Table:
    """One row per submission of the hotkey; what a validator answers is untrusted: Text cells keep its
    strings from being read as markup."""
    table = Table(title=Text(f"validator uid {report.uid} {report.hotkey} ({report.url})"))
    for column in ("submission", "submitted", "state", "qualifying score", "race score", "embargo",
                   "why refused"):
        table.add_column(column)
    for a in report.agents:
        qualifying = "" if a.qualifying_score is None else f"{a.qualifying_score:.4f}"
        race = "" if a.race_score is None else f"{a.race_score:.4f} ({a.race_id})"
        table.add_row(*(Text(cell) for cell in (a.submission_id, a.submitted_at, a.status, qualifying, race,
                                                 a.embargo, a.rejection)))
    return table


def print_reports(console: Console, hotkey: str, reports: Sequence[ValidatorReport]) -> None:
    """Each validator's table of the hotkey's agents, or why it has none to show."""
    console.print(f"agents of hotkey {hotkey}")
    for report in reports:
        where = f"validator uid {report.uid} {report.hotkey} ({report.url})"
        if report.error is not None:
            console.print(f"{where}: {report.error}", markup=False, style="red")
        elif not report.agents:
            console.print(f"{where}: no submission from this hotkey", markup=False)
        else:
            console.print(status_table(report))
