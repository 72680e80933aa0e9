"""``worker rewrite``: a dump's successful sub-task attempts, rewritten by a teacher into agentic dialogues,
written as a side dataset next to the dump (default ``DUMP/rewritten/``).

Candidates are the dump's ``train`` rows under SFT's leak-cluster guard (a cluster held out anywhere in
the dump, or listed, is never read) that the structural filter labelled ``sub_task``, that succeeded and
whose answer passed the arena's verified-answer rule. Their verified calls (:mod:`vouched_calls`) go to the
teacher; an answer that changes, adds, drops or reorders a call or states another result, that is not
JSON, or that smuggles tags, is discarded and counted by reason (:mod:`prompt`).

Output directory:

- ``data/train-00000.parquet``: one row per kept rewrite, the columns SFT reads plus ``origin``
  (``rewrite``), ``rewritten_from`` (the original ``attempt_id``) and ``teacher_model``;
- ``progress.jsonl``: one line per candidate as it is decided (kept with its steps, or the discard reason
  and detail), so a rerun resumes where it stopped (another teacher or dump starts over);
- ``summary.json``: candidates, kept, discards and skips by reason, the teacher, the dump's manifest.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import structlog
from pydantic import BaseModel, Field
from rich.progress import Progress

from shoppingbench.grading.verified import UNVERIFIED_ANSWER
from trajectories.dumps.reader import (
    REWRITTEN_DIR,
    dump_files,
    parse_proxy_log_json,
    parse_steps_json,
    read_rows,
)
from trajectories.training.rewrite.prompt import Discard, check_rewrite, teacher_messages
from trajectories.training.rewrite.teacher import Teacher, TeacherUnavailable
from trajectories.training.rewrite.vouched_calls import verified_calls

log = structlog.get_logger(__name__)

ORIGIN: Final = "rewrite"
PROGRESS_FILE: Final = "progress.jsonl"
SUMMARY_FILE: Final = "summary.json"
_READ = ["attempt_id", "split", "problem_id", "category", "query", "leak_cluster", "success", "rule",
         "filter_label", "failure_kind", "answer_verified", "answer", "started_at", "steps_json",
         "proxy_log_json"]
_t, _f = pa.string(), pa.float64()
REWRITE_SCHEMA: Final = pa.schema([
    ("attempt_id", _t), ("split", _t), ("problem_id", _t), ("category", _t), ("query", _t),
    ("leak_cluster", _t), ("success", pa.bool_()), ("rule", _f), ("judge_quality", _f), ("filter_label", _t),
    ("failure_kind", _t), ("origin", _t), ("rewritten_from", _t), ("teacher_model", _t), ("steps_json", _t),
])


class RewriteSummary(BaseModel):
    """What one ``worker rewrite`` gave (``summary.json`` and the command's last line)."""

    dump: str
    out: str
    teacher_model: str
    candidates: int = Field(description="Successful, verified, sub-task train rows outside held-out clusters")
    rewritten_kept: int
    discarded: dict[str, int] = Field(description="Teacher answers refused, by reason")
    skipped: dict[str, int] = Field(description="Candidates never sent to the teacher, by reason")
    not_candidates: dict[str, int] = Field(description="Dump rows that are no candidate, by reason")


def rewrite_id(attempt_id: str) -> str:
    """The rewritten row's id: stable, never equal to an attempt id of the dump."""
    return hashlib.sha256(f"rewrite/{attempt_id}".encode()).hexdigest()[:24]


def _rows(dump: Path) -> Iterator[dict[str, Any]]:
    return read_rows(dump_files([dump]), _READ, batch_size=64)


def _not_candidate(row: dict[str, Any], held_out: frozenset[str]) -> str | None:
    if row["split"] != "train":
        return f"split:{row['split']}"
    if not row["leak_cluster"] or row["leak_cluster"] in held_out:
        return "held_out_cluster"
    if row["filter_label"] != "sub_task":
        return f"label:{row['filter_label']}"
    if not row["success"]:
        return "not_successful"
    if row["failure_kind"] == UNVERIFIED_ANSWER or row["answer_verified"] is False:
        return UNVERIFIED_ANSWER
    return None


def _decide(row: dict[str, Any], teacher: Teacher, max_result_chars: int) -> dict[str, Any]:
    """One candidate's outcome as its progress line."""
    outcome: dict[str, Any] = {"attempt_id": row["attempt_id"]}
    steps = parse_steps_json(row["steps_json"])
    proxy_log = parse_proxy_log_json(row["proxy_log_json"])
    if not steps or proxy_log is None:
        return outcome | {"status": "skipped", "reason": "unreadable_record"}
    calls = verified_calls(proxy_log, steps, row["answer"] or [])
    if isinstance(calls, str):
        return outcome | {"status": "skipped", "reason": calls}
    try:
        answer = teacher.complete(teacher_messages(row["query"], calls, max_result_chars=max_result_chars))
    except TeacherUnavailable as exc:
        checked: list[dict[str, Any]] | Discard = Discard("teacher_error", str(exc)[:200])
    else:
        checked = check_rewrite(answer, row["query"], calls, timestamp=row["started_at"] or 0.0)
    if isinstance(checked, Discard):
        return outcome | {"status": "discarded", "reason": checked.reason, "detail": checked.detail}
    return outcome | {"status": "kept", "steps": checked}


def _done(progress_file: Path, fingerprint: str) -> dict[str, dict[str, Any]]:
    """Decided candidates of an earlier run with the same fingerprint (a torn last line is dropped)."""
    if not progress_file.exists():
        return {}
    lines = progress_file.read_bytes().splitlines()
    decided: dict[str, dict[str, Any]] = {}
    for line in lines:
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(entry, dict) and entry.get("fingerprint") == fingerprint:
            decided[str(entry.get("attempt_id"))] = entry
    return decided


def rewrite_dump(dump: Path, teacher: Teacher, *, out: Path | None = None,
                 held_out_clusters: frozenset[str] = frozenset(), max_attempts: int | None = None,
                 max_result_chars: int = 2000, resume: bool = True, progress: bool = True) -> RewriteSummary:
    """Rewrite ``dump``'s candidates with ``teacher`` into ``out`` (default ``dump/rewritten``)."""
    out = out or dump / REWRITTEN_DIR
    held_out = held_out_clusters | frozenset(
        r["leak_cluster"] for r in _rows(dump) if r["split"] == "held_out" and r["leak_cluster"])
    not_candidates: Counter[str] = Counter()
    candidates: list[dict[str, Any]] = []
    for row in _rows(dump):
        reason = _not_candidate(row, held_out)
        if reason is None and (max_attempts is None or len(candidates) < max_attempts):
            candidates.append(row)
        else:
            not_candidates[reason or "over_max_attempts"] += 1
    manifest = dump / "manifest.json"
    fingerprint = hashlib.sha256(teacher.model.encode() + b"\0" + (
        manifest.read_bytes() if manifest.exists() else str(dump.resolve()).encode())).hexdigest()[:16]
    out.mkdir(parents=True, exist_ok=True)
    progress_file = out / PROGRESS_FILE
    decided = _done(progress_file, fingerprint) if resume else {}
    log.info("rewrite.started", dump=str(dump), candidates=len(candidates), resumed=len(decided),
             teacher=teacher.model)
    with progress_file.open("ab" if resume else "wb") as sink, \
            Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("rewriting sub-task attempts", total=len(candidates))
        for row in candidates:
            if row["attempt_id"] not in decided:
                entry = _decide(row, teacher, max_result_chars) | {"fingerprint": fingerprint}
                sink.write(orjson.dumps(entry) + b"\n")
                sink.flush()
                decided[row["attempt_id"]] = entry
            bar.advance(task)
    kept_rows = [_output_row(row, decided[row["attempt_id"]], teacher.model) for row in candidates
                 if decided[row["attempt_id"]]["status"] == "kept"]
    data = out / "data"
    data.mkdir(exist_ok=True)
    for stale in data.glob("*.parquet"):
        stale.unlink()
    if kept_rows:
        pq.write_table(pa.Table.from_pylist(kept_rows, schema=REWRITE_SCHEMA), data / "train-00000.parquet",
                       compression="zstd")
    outcomes = [decided[row["attempt_id"]] for row in candidates]
    summary = RewriteSummary(
        dump=str(dump), out=str(out), teacher_model=teacher.model, candidates=len(candidates),
        rewritten_kept=len(kept_rows),
        discarded=dict(sorted(Counter(o["reason"] for o in outcomes if o["status"] == "discarded").items())),
        skipped=dict(sorted(Counter(o["reason"] for o in outcomes if o["status"] == "skipped").items())),
        not_candidates=dict(sorted(not_candidates.items())))
    (out / SUMMARY_FILE).write_text(summary.model_dump_json(indent=2), encoding="utf-8")
    log.info("rewrite.finished", kept=summary.rewritten_kept, discarded=summary.discarded,
             skipped=summary.skipped)
    return summary


def _output_row(row: dict[str, Any], decided: dict[str, Any], teacher_model: str) -> dict[str, Any]:
    return {"attempt_id": rewrite_id(row["attempt_id"]), "split": "train", "problem_id": row["problem_id"],
            "category": row["category"], "query": row["query"], "leak_cluster": row["leak_cluster"],
            "success": True, "rule": row["rule"], "judge_quality": None, "filter_label": row["filter_label"],
            "failure_kind": None, "origin": ORIGIN, "rewritten_from": row["attempt_id"],
            "teacher_model": teacher_model, "steps_json": orjson.dumps(decided["steps"]).decode()}
