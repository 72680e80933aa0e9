"""An attempt to and from its database row (pure: no database access here)."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import Row

from shoppingbench.echo import echoed_calls
from shoppingbench.records import AttemptRecord
from trajectories.filter import FilterVerdict
from trajectories.store import blobs
from trajectories.store.entries import AttemptWrite, JudgeVerdict, StoredAttempt

LARGE_FIELDS = frozenset({"steps", "proxy_log"})
INT32_MAX = 2**31 - 1
DERIVED_COLUMNS = ("judge_model", "judge_quality", "judge_gates_passed", "judge_json", "filter_label",
                   "filter_json")


def judge_columns(verdict: JudgeVerdict | None) -> dict[str, Any]:
    if verdict is None:
        return {"judge_model": None, "judge_quality": None, "judge_gates_passed": None, "judge_json": None}
    return {"judge_model": verdict.model, "judge_quality": verdict.quality,
            "judge_gates_passed": verdict.gates_passed,
            "judge_json": blobs.dumps(verdict.model_dump(mode="json")).decode()}


def label_columns(verdict: FilterVerdict | None) -> dict[str, Any]:
    if verdict is None:
        return {"filter_label": None, "filter_json": None}
    return {"filter_label": verdict.label,
            "filter_json": blobs.dumps(verdict.model_dump(mode="json")).decode()}


class AttemptParts(NamedTuple):
    """An attempt's JSON as stored: the header, the steps and the proxy log (compact form)."""

    header: bytes
    steps: bytes
    proxy_log: bytes


def attempt_parts(record: AttemptRecord) -> AttemptParts:
    """The JSON of one attempt (the work that holds the GIL, beside the echo measure)."""
    for name in ("started_at", "finished_at"):
        if not math.isfinite(getattr(record, name)):
            raise ValueError(f"attempt {record_key(record)}: {name} is not a finite time")
    try:
        return AttemptParts(header=blobs.dumps(record.model_dump(mode="json", exclude=set(LARGE_FIELDS))),
                            steps=blobs.dumps(record.steps),
                            proxy_log=blobs.dumps(blobs.compact_proxy_log(record.proxy_log)))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"attempt {record_key(record)} cannot be stored: {exc}") from exc


@dataclass(frozen=True, slots=True)
class _LoggedInference:
    """What the echo measure reads of a proxy-log entry stored as JSON."""

    seq: int
    kind: str
    status: int
    request_messages: list[dict[str, Any]] | None
    completion_text: str | None
    reasoning_text: str | None
    completion_tool_calls: list[dict[str, Any]]


def echoed_in_json(proxy_log: bytes, query: str) -> int:
    """``len(echoed_calls(record.proxy_log, record.query))`` from the proxy log's stored JSON
    (:func:`attempt_parts`): the same fields, so the same count, computable in another process."""
    entries = blobs.expand_proxy_log(blobs.loads(proxy_log))
    return len(echoed_calls([_LoggedInference(
        e["seq"], e["kind"], e["status"], e.get("request_messages"), e.get("completion_text"),
        e.get("reasoning_text"), e.get("completion_tool_calls") or []) for e in entries], query))


def attempt_row(write: AttemptWrite, parts: AttemptParts, echoed: int) -> dict[str, Any]:
    """The row of one attempt from its JSON (:func:`attempt_parts`) and its echo measure (``echoed``:
    the count of ``shoppingbench.echo.echoed_calls`` on its proxy log and query)."""
    record = write.record
    header, steps, proxy_log = parts
    # One frame for both: tool results appear in the steps and again in the conversation the proxy
    # logged, which zstd then stores once (20% smaller, 20% faster than two frames).
    payload = blobs.compress(steps + proxy_log)
    # Hashing the compressed bytes is 4x cheaper; the codec is deterministic, so equal content written
    # by the same software hashes equal (all the idempotent re-write needs).
    digest = hashlib.sha256(header)
    digest.update(len(steps).to_bytes(8, "little"))
    digest.update(payload)
    score = record.score
    inference = [c for c in record.proxy_log if c.kind == "inference"]
    # The count comes from the upstream's usage report: keep it within the 32-bit column.
    tokens = sum(c.completion_tokens or 0 for c in inference)
    return {
        "run_id": record.run_id, "agent_hash": record.agent_hash, "problem_id": record.problem_id,
        "started_at": record.started_at, "finished_at": record.finished_at,
        "success": score.success, "answer_verified": record.answer_verified,
        "reference_success": (record.reference_score or score).success, "gt": score.gt, "rule": score.rule,
        "format": score.format,
        "length": score.length, "failure_kind": record.failure.kind if record.failure else None,
        "n_steps": len(record.steps), "n_proxy_calls": len(record.proxy_log),
        "n_inference_calls": len(inference),
        "completion_tokens": min(tokens, INT32_MAX),
        "echoed_completions": echoed,
        "infra_failed": record.infra_failed,
        "header": header.decode(), "payload": payload, "steps_size": len(steps),
        "proxy_log_size": len(proxy_log),
        "content_hash": digest.hexdigest(),
        **judge_columns(write.judge), **label_columns(write.label),
    }


def record_key(record: AttemptRecord) -> tuple[str, str, str]:
    return record.run_id, record.agent_hash, record.problem_id


def payload_json(row: Row[Any] | Any) -> tuple[bytes, bytes]:
    """The stored steps and proxy log as JSON bytes, exactly as written (the proxy log in its compact
    form, ``blobs.compact_proxy_log``). ``row`` needs ``payload``, ``steps_size`` and ``proxy_log_size``."""
    data = blobs.decompress(row.payload, row.steps_size + row.proxy_log_size)
    return data[:row.steps_size], data[row.steps_size:]


def decode_attempt(row: Row[Any] | Any) -> StoredAttempt:
    """The attempt of a row selected with (at least) every column of the ``attempts`` table."""
    fields = blobs.loads(row.header)
    steps, proxy_log = payload_json(row)
    fields["steps"] = blobs.loads(steps)
    fields["proxy_log"] = blobs.expand_proxy_log(blobs.loads(proxy_log))
    return StoredAttempt(
        id=row.id, record=AttemptRecord.model_validate(fields),
        judge=_verdict(row),
        label=FilterVerdict.model_validate(blobs.loads(row.filter_json)) if row.filter_json else None)


def _verdict(row: Row[Any] | Any) -> JudgeVerdict | None:
    """The stored verdict; its gates from their column, which migration 0007 filled in for verdicts whose
    JSON was written before the judge's gate was stored."""
    if not row.judge_json:
        return None
    return JudgeVerdict.model_validate(blobs.loads(row.judge_json) | {"gates_passed": row.judge_gates_passed})
