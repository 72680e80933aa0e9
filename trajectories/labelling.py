"""The structural filter as a pass over the store: label attempts and keep the verdicts with them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import structlog

from shoppingbench.echo import echoed_calls
from trajectories.filter import FilterConfig, FilterVerdict, label_attempt
from trajectories.progress import progress_bar
from trajectories.store import TrajectoryStore, blobs
from trajectories.store.rows import payload_json

log = structlog.get_logger(__name__)

CHUNK = 256


@dataclass(frozen=True, slots=True)
class _StoredCall:
    """The fields the filter reads of a stored proxy-log entry. The store holds only ProxyCalls that
    were validated when written, so they are read back without validating them again."""

    seq: int
    kind: str
    path: str
    params: dict[str, Any]
    status: int
    request_messages: list[dict[str, Any]] | None
    completion_text: str | None
    reasoning_text: str | None
    completion_tool_calls: list[dict[str, Any]]
    completion_tokens: int | None

    @classmethod
    def of(cls, entry: dict[str, Any]) -> _StoredCall:
        return cls(entry["seq"], entry["kind"], entry["path"], entry.get("params") or {}, entry["status"],
                   entry.get("request_messages"), entry.get("completion_text"), entry.get("reasoning_text"),
                   entry.get("completion_tool_calls") or [], entry.get("completion_tokens"))


def stored_calls(proxy_log: bytes) -> list[_StoredCall]:
    """The proxy log of a stored attempt (``rows.payload_json``), each request with all its messages."""
    return [_StoredCall.of(entry) for entry in blobs.expand_proxy_log(blobs.loads(proxy_log))]


def label_payload(steps: bytes, proxy_log: bytes, config: FilterConfig, query: str) -> FilterVerdict:
    """Label an attempt from its stored JSON (``rows.payload_json``) and the shopper's query."""
    return label_attempt(stored_calls(proxy_log), blobs.loads(steps), config, query=query)


def echoed_in_payload(proxy_log: bytes, query: str) -> int:
    """How many of a stored attempt's completions only repeated their request (``shoppingbench.echo``)."""
    return len(echoed_calls(stored_calls(proxy_log), query))


def stored_query(header: str) -> str:
    """The shopper's query out of a stored attempt's header JSON."""
    query = blobs.loads(header).get("query")
    return query if isinstance(query, str) else ""


def label_stored(store: TrajectoryStore, config: FilterConfig | None = None, *, since: float | None = None,
                 until: float | None = None, relabel: bool = False, progress: bool = True) -> Counter[str]:
    """Label the attempts started in ``[since, until)`` (only unlabelled ones unless ``relabel``).

    Returns the count per label. Each chunk's verdicts are committed together.
    """
    config = config or FilterConfig()
    ids = store.attempt_ids(since, until, unlabelled_only=not relabel)
    counts: Counter[str] = Counter()
    with progress_bar(progress, "labelling attempts", len(ids)) as advance:
        for start in range(0, len(ids), CHUNK):
            verdicts: list[tuple[int, FilterVerdict]] = []
            for row in store.fetch(ids[start:start + CHUNK]):
                verdict = label_payload(*payload_json(row), config, stored_query(row.header))
                verdicts.append((row.id, verdict))
                counts[verdict.label] += 1
            store.set_labels(verdicts)
            advance(len(verdicts))
    log.info("attempts_labelled", attempts=sum(counts.values()), **counts)
    return counts
