"""Export a window of attempts (normally one UTC day) as a dataset directory.

Layout of ``out``::

    README.md                      dataset card (Hugging Face YAML header)
    manifest.json                  schema version, window, split rule, counts, statistics, file sha256
    agents.parquet (.jsonl.gz)     the agents of these attempts; code only once published
    data/{split}-{shard}.parquet   attempts by split: train, held_out, unclustered (those with rows)
    data/{split}-{shard}.jsonl.gz  the same rows as JSON lines
    kto/{split}-{shard}.parquet    the ``kto`` view: conversations as prompt, completion and label
    kto/{split}-{shard}.jsonl.gz   the same rows as JSON lines

A window without attempts is refused (:class:`EmptyWindow`): a dataset without data files is never written.
A window of several whole days (:meth:`DumpWindow.days`) is a corpus: one dataset over all of them, which
one ``datasets.load_dataset(DIR)`` call reads; split by the exposure ledger (:class:`LedgerSplits`), no
cluster is in ``train`` on one day and in ``held_out`` on another.

The export streams: attempts are read in chunks, in a fixed order (run, agent, problem), and written
one row group at a time, so memory stays flat whatever the day's size. Nothing in the output depends
on when or where it was made: the same window over the same data gives the same bytes. The directory
is assembled next to ``out`` and renamed into place at the end, so ``out`` is never half written.
"""

from __future__ import annotations

import gc
import hashlib
import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import structlog
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Connection, Row

from trajectories.dumps.card import render_card
from trajectories.dumps.chat import NO_CONVERSATION, Conversation, kto_view, proxy_conversation
from trajectories.dumps.columns import AGENT_SCHEMA, ATTEMPT_SCHEMA, KTO_SCHEMA, SCHEMA_VERSION
from trajectories.dumps.splits import SPLITS, LedgerSplits, SplitRule
from trajectories.dumps.stats import DumpStats
from trajectories.dumps.writers import PARQUET_OPTIONS, SplitWriter, gzip_member
from trajectories.filter import FilterConfig
from trajectories.labelling import echoed_in_payload, label_payload
from trajectories.progress import progress_bar
from trajectories.store import TrajectoryStore, blobs
from trajectories.store.rows import payload_json

log = structlog.get_logger(__name__)

CHUNK = 256
KTO_DIR = "kto"
INFERENCE_KIND = b'"kind":"inference"'


class EmptyWindow(ValueError):
    """The window holds no attempt: there is nothing to export."""


@dataclass(frozen=True)
class DumpWindow:
    """Attempts started in ``[since, until)``; ``until`` is also the embargo cut-off for agents' code."""

    since: datetime
    until: datetime

    def __post_init__(self) -> None:
        for moment in (self.since, self.until):
            if moment.tzinfo is None:
                raise ValueError(f"{moment} has no time zone: give UTC times")
        if self.until <= self.since:
            raise ValueError(f"the window ends ({self.until}) before it starts ({self.since})")

    @classmethod
    def day(cls, day: date) -> DumpWindow:
        return cls.days(day, day)

    @classmethod
    def days(cls, first: date, last: date) -> DumpWindow:
        """The UTC days ``first`` to ``last``, both included."""
        if last < first:
            raise ValueError(f"the last day ({last}) comes before the first ({first})")
        start = datetime.combine(first, time(0), tzinfo=UTC)
        return cls(start, datetime.combine(last + timedelta(days=1), time(0), tzinfo=UTC))

    @property
    def label(self) -> str:
        whole_days = (self.until - self.since) % timedelta(days=1) == timedelta(0)
        if not (whole_days and self.since.astimezone(UTC).time() == time(0)):
            return f"{_iso(self.since)}..{_iso(self.until)}"
        first = self.since.astimezone(UTC).date()
        last = (self.until - timedelta(days=1)).astimezone(UTC).date()
        return first.isoformat() if first == last else f"{first.isoformat()}..{last.isoformat()}"


def day_dump(root: Path, day: date) -> Path | None:
    """``root/YYYY-MM-DD`` when it holds a complete dump of ``day`` (its manifest is written last)."""
    folder = root / day.isoformat()
    return folder if (folder / "manifest.json").is_file() else None


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


class ExportOptions(BaseModel):
    model_config = ConfigDict(frozen=True)

    split_rule: SplitRule = Field(default_factory=SplitRule)
    filter: FilterConfig = Field(default_factory=FilterConfig, description=(
        "Thresholds for attempts the store has no label for yet (labelled on the fly, not stored)"))
    jsonl: bool = True
    rows_per_file: int = Field(default=10_000, ge=1)
    row_group_rows: int = Field(default=256, ge=1)


def attempt_id(run_id: str, agent_hash: str, problem_id: str) -> str:
    return hashlib.sha256(f"{run_id}/{agent_hash}/{problem_id}".encode()).hexdigest()[:24]


def _label(row: Row[Any], steps: bytes, proxy_log: bytes, config: FilterConfig, query: str,
           ) -> tuple[str, list[str], str, dict[str, Any], str]:
    """Label, reasons, verdict JSON, evidence and where the label came from (stored or computed now)."""
    if row.filter_label is not None and row.filter_json:
        verdict = blobs.loads(row.filter_json)
        reasons = list(verdict.get("reasons", []))
        return row.filter_label, reasons, row.filter_json, verdict.get("evidence", {}), "stored"
    computed = label_payload(steps, proxy_log, config, query)
    as_json = computed.model_dump(mode="json")
    return computed.label, computed.reasons, blobs.dumps(as_json).decode(), as_json["evidence"], "computed"


def kto_row(row: dict[str, Any]) -> dict[str, Any] | None:
    """The ``kto`` view of an attempt row: its conversation as prompt and completion, labelled by success."""
    view = kto_view(row["messages"])
    if view is None:
        return None
    prompt, completion = view
    kept = {name: row[name] for name in KTO_SCHEMA.names if name in row}
    return {**kept, "prompt": prompt, "completion": completion, "label": bool(row["success"])}


def _conversation(proxy_log: bytes) -> Conversation:
    # Without an inference entry there is no conversation: the log (mostly search results) need not be
    # parsed. Stored logs are compact JSON (blobs.dumps), where every entry's kind reads this way.
    if INFERENCE_KIND not in proxy_log:
        return NO_CONVERSATION
    return proxy_conversation(blobs.expand_proxy_log(orjson.loads(proxy_log or b"null")))


def _attempt_row(row: Row[Any], rule: SplitRule | LedgerSplits, config: FilterConfig,
                 ) -> tuple[dict[str, Any], dict[str, Any], str]:
    header = blobs.loads(row.header)
    score: dict[str, Any] = header.get("score") or {}
    failure: dict[str, Any] = header.get("failure") or {}
    steps, proxy_log = payload_json(row)
    query = header.get("query") if isinstance(header.get("query"), str) else ""
    label, reasons, filter_json, evidence, source = _label(row, steps, proxy_log, config, query)
    # Rows stored before the echo measure (migration 0004) are measured now, like unlabelled ones.
    echoed = row.echoed_completions if row.echoed_completions is not None else echoed_in_payload(proxy_log,
                                                                                                 query)
    if isinstance(rule, LedgerSplits):
        cluster, split = rule.placed(row.problem_id)
    else:
        cluster, split = row.leak_cluster, rule.split_of(row.leak_cluster)
    out = {
        "attempt_id": attempt_id(row.run_id, row.agent_hash, row.problem_id),
        "split": split,
        "run_id": row.run_id, "run_kind": row.run_kind, "validator": row.validator,
        "run_suite": row.run_suite, "problem_id": row.problem_id, "problem_version": row.problem_version,
        "category": header.get("category"), "query": header.get("query"), "leak_cluster": cluster,
        "problem_suite": row.problem_suite, "reward_json": row.reward_json, "agent_hash": row.agent_hash,
        "hotkey": row.hotkey, "started_at": row.started_at, "finished_at": row.finished_at,
        "success": row.success, "answer_verified": row.answer_verified,
        "reference_success": row.reference_success, "gt": row.gt, "rule": row.rule,
        "found": score.get("found"),
        "format": row.format, "length": row.length, "title_rate": score.get("title_rate"),
        "price_rate": score.get("price_rate"), "service_rate": score.get("service_rate"),
        "sku_attr_rate": score.get("sku_attr_rate"), "shop": score.get("shop"), "budget": score.get("budget"),
        "answer": score.get("answer") or [], "score_json": blobs.dumps(score).decode(),
        "failure_kind": row.failure_kind, "failure_reason": failure.get("reason"),
        "judge_model": row.judge_model, "judge_quality": row.judge_quality, "judge_json": row.judge_json,
        "filter_label": label, "filter_reasons": reasons, "filter_json": filter_json,
        "echoed_completions": echoed, "n_steps": row.n_steps, "n_proxy_calls": row.n_proxy_calls,
        "n_inference_calls": row.n_inference_calls, "completion_tokens": row.completion_tokens,
        "steps_json": steps.decode(), "proxy_log_json": proxy_log.decode(),
    }
    conversation = _conversation(proxy_log)
    out["messages"] = conversation.messages
    out["tools"] = orjson.dumps(conversation.tools).decode()
    return out, evidence, source


def _agent_rows(store: TrajectoryStore, connection: Connection, hashes: set[str], cutoff: float,
                ) -> list[dict[str, Any]]:
    rows = []
    for agent in store.agents(hashes, connection=connection):
        # The embargo (SPEC 4): code leaves the store only once published, as of the dump's cut-off.
        published = agent.published_at is not None and agent.published_at <= cutoff
        rows.append({"agent_hash": agent.code_hash, "hotkey": agent.hotkey,
                     "submitted_at": agent.submitted_at, "embargo_until": agent.embargo_until,
                     "published_at": agent.published_at if published else None,
                     "code_published": published, "code": agent.code if published else None})
    return rows


class _Files:
    """The data files of a dump as they are finished: rows, size, and (at the end) sha256."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.entries: dict[str, dict[str, Any]] = {}

    def add(self, path: Path, rows: int) -> None:
        self.entries[path.relative_to(self.root).as_posix()] = {"rows": rows, "bytes": path.stat().st_size}

    def with_checksums(self) -> dict[str, dict[str, Any]]:
        for name, entry in self.entries.items():
            digest = hashlib.sha256()
            with (self.root / name).open("rb") as handle:
                while block := handle.read(1 << 20):
                    digest.update(block)
            entry["sha256"] = digest.hexdigest()
        return dict(sorted(self.entries.items()))


@dataclass
class _Written:
    stats: DumpStats
    splits: dict[str, int]
    agents: set[str]
    kto_splits: dict[str, int]


def _write_attempts(store: TrajectoryStore, connection: Connection, window: DumpWindow,
                    options: ExportOptions, splits: LedgerSplits | None, files: _Files,
                    progress: bool) -> _Written:
    ids = store.attempt_ids(window.since.timestamp(), window.until.timestamp(), connection=connection)
    written = _Written(DumpStats(), {}, set(), {})
    writers: dict[tuple[str, str], SplitWriter] = {}
    with ThreadPoolExecutor(2) as builders, ThreadPoolExecutor(2) as gzippers, \
            ThreadPoolExecutor(1) as parquet_thread:
        def build(row: Row[Any]) -> tuple[dict[str, Any], dict[str, Any], str]:
            return _attempt_row(row, splits or options.split_rule, options.filter)

        def writer(split: str, directory: str = "data") -> SplitWriter:
            if (directory, split) not in writers:
                (files.root / directory).mkdir(exist_ok=True)
                writers[directory, split] = SplitWriter(
                    files.root / directory, split, KTO_SCHEMA if directory == KTO_DIR else ATTEMPT_SCHEMA,
                    rows_per_file=options.rows_per_file, row_group_rows=options.row_group_rows,
                    parquet_thread=parquet_thread, jsonl_pool=gzippers if options.jsonl else None,
                    on_file=files.add)
            return writers[directory, split]

        with progress_bar(progress, f"exporting {window.label}", len(ids)) as advance:
            for chunk in store.attempts_in_context(ids, chunk=CHUNK, connection=connection):
                # Decompression releases the GIL: the rows of a chunk are built on two threads.
                for values, evidence, source in builders.map(build, chunk):
                    writer(values["split"]).add(values)
                    if (kto := kto_row(values)) is not None:
                        writer(values["split"], KTO_DIR).add(kto)
                    written.stats.add(values, evidence, source)
                    written.agents.add(values["agent_hash"])
                advance(len(chunk))
        for directory, split in sorted(writers, key=lambda key: (key[0], SPLITS.index(key[1]))):
            writers[directory, split].close()
            counts = written.kto_splits if directory == KTO_DIR else written.splits
            counts[split] = writers[directory, split].rows
    return written


def _write_agents(store: TrajectoryStore, connection: Connection, hashes: set[str], cutoff: float,
                  files: _Files, jsonl: bool) -> list[dict[str, Any]]:
    rows = _agent_rows(store, connection, hashes, cutoff)
    pq.write_table(pa.Table.from_pylist(rows, schema=AGENT_SCHEMA), files.root / "agents.parquet",
                   **PARQUET_OPTIONS)
    files.add(files.root / "agents.parquet", len(rows))
    if jsonl:
        lines = b"".join(orjson.dumps(r) + b"\n" for r in rows)
        (files.root / "agents.jsonl.gz").write_bytes(gzip_member(lines))
        files.add(files.root / "agents.jsonl.gz", len(rows))
    return rows


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the duration. Every attempt parses its proxy log into
    hundreds of thousands of dicts and lists that live while its row is built: the collector, counting
    allocations, kept traversing them (an eighth of the export's CPU). The rows hold no reference cycles;
    reference counting frees them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _replace_dir(staging: Path, out: Path, overwrite: bool) -> None:
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{out} exists and is not empty: choose another --out or pass --overwrite")
        retired = out.with_name(f".{out.name}.old")
        shutil.rmtree(retired, ignore_errors=True)
        os.replace(out, retired)
        os.replace(staging, out)
        shutil.rmtree(retired)
        return
    if out.exists():
        out.rmdir()
    os.replace(staging, out)


def export_dump(store: TrajectoryStore, window: DumpWindow, out: Path, *,
                options: ExportOptions | None = None, splits: LedgerSplits | None = None,
                progress: bool = True, overwrite: bool = False) -> dict[str, Any]:
    """Write the dump of ``window`` to ``out``; returns its manifest. ``splits``: the exposure ledger's
    placements, which then decide each attempt's cluster and split instead of ``options.split_rule``."""
    options = options or ExportOptions()
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} exists and is not empty: choose another --out or pass --overwrite")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.with_name(f".{out.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "data").mkdir(parents=True)
    try:
        files = _Files(staging)
        with store.snapshot() as connection, _collector_paused():
            written = _write_attempts(store, connection, window, options, splits, files, progress)
            if not written.stats.attempts:
                raise EmptyWindow(f"no attempt started in {window.label} ({_iso(window.since)} to "
                                  f"{_iso(window.until)}): nothing to export (`dump days` lists the days "
                                  f"the store holds)")
            agents = _write_agents(store, connection, written.agents, window.until.timestamp(), files,
                                   options.jsonl)
        manifest = {
            "schema_version": SCHEMA_VERSION,
            "window": {"label": window.label, "since": _iso(window.since), "until": _iso(window.until),
                       "embargo_cutoff": _iso(window.until)},
            "split_rule": (splits or options.split_rule).describe(),
            "filter_config_for_unlabelled": options.filter.model_dump(mode="json"),
            "splits": written.splits,
            "kto_splits": written.kto_splits,
            "agents": {"agents": len(agents), "code_published": sum(r["code_published"] for r in agents)},
            "stats": written.stats.summary(),
            "files": files.with_checksums(),
        }
        (staging / "README.md").write_text(render_card(manifest))
        (staging / "manifest.json").write_bytes(
            orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
        _replace_dir(staging, out, overwrite)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    log.info("dump_exported", window=window.label, out=str(out), attempts=written.stats.attempts,
             splits=written.splits, labels=dict(written.stats.labels))
    return manifest
