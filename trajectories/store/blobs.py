"""How the large parts of an attempt (steps, proxy log) are stored: JSON, then zstd.

Steps are agent output and may hold what ``orjson`` refuses (integers beyond 64 bits, lone
surrogates); those fall back to the standard library so a hostile value is stored, not fatal. JSON has
no NaN or infinity: like ``orjson``, both paths write them as ``null``.

The proxy log repeats the whole conversation in every inference request, which grows quadratically
with the number of steps. Each inference entry therefore stores only the messages that are new since
the previous inference entry, with ``request_messages_prefix`` counting the leading messages it shares
with that entry; :func:`expand_proxy_log` restores the full lists. The daily dumps ship this same
compact form (the dataset card shows how to expand it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import pyarrow as pa

from shoppingbench.records import ProxyCall

ZSTD_LEVEL = 1
"""Level 1: the ingest target (thousands of attempts per second) matters more than the last 10% of size."""

PREFIX_KEY = "request_messages_prefix"
MESSAGES_KEY = "request_messages"
RESULTS_KEY = "results"

_codec = pa.Codec("zstd", compression_level=ZSTD_LEVEL)


def dumps(value: Any) -> bytes:
    """Compact JSON bytes of ``value`` (UTF-8), whatever untrusted JSON data it holds.

    Raises ValueError only for what no JSON can hold: non-JSON types, or nesting deeper than Python's
    recursion limit (the runner's JSON parsing already refuses such agent output).
    """
    try:
        return orjson.dumps(value)
    except TypeError:
        try:
            return json.dumps(_finite(value), ensure_ascii=True, separators=(",", ":")).encode()
        except RecursionError as exc:
            raise ValueError("the data is nested too deeply to store as JSON") from exc


def loads(data: bytes | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        # What dumps wrote through the fallback (big integers, escaped lone surrogates).
        return json.loads(data)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def compress(data: bytes) -> bytes:
    return bytes(_codec.compress(data, asbytes=True))


def decompress(blob: bytes, size: int) -> bytes:
    """Inverse of :func:`compress`; ``size`` is the length of the original bytes (stored beside the blob)."""
    return bytes(_codec.decompress(blob, decompressed_size=size, asbytes=True))


def compact_proxy_log(calls: Sequence[ProxyCall]) -> list[dict[str, Any]]:
    """The proxy log as JSON-ready dicts, each inference request's repeated conversation replaced by a
    count of the leading messages it shares with the previous inference request.

    Each entry is ``call.model_dump(mode="json")`` with ``request_messages`` moved last. A ProxyCall
    holds JSON data (the proxy builds it from HTTP JSON), so a copy of its field values (and of its
    returned products') is that dump,
    at a third of the cost of a ``model_dump`` per call; a value JSON cannot hold is refused by
    :func:`dumps`, as in the steps. The returned products are their frozen models' own field dicts, not
    copies (half this function's cost, about 100 products an attempt): encode the entries, never change
    them.
    """
    previous: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for call in calls:
        entry = dict(call.__dict__)
        entry[RESULTS_KEY] = [product.__dict__ for product in call.results]
        messages = entry.pop(MESSAGES_KEY)
        entry[MESSAGES_KEY] = None
        if messages is not None:
            shared = _shared_prefix(messages, previous)
            previous = messages
            entry[MESSAGES_KEY] = messages[shared:]
            if shared:
                entry[PREFIX_KEY] = shared
        out.append(entry)
    return out


def _shared_prefix(messages: list[dict[str, Any]], previous: list[dict[str, Any]]) -> int:
    """How many leading messages ``messages`` shares with ``previous``."""
    # The usual case, a conversation that grew by appending, takes one list comparison.
    if messages[:len(previous)] == previous:
        return len(previous)
    shared = 0
    for mine, theirs in zip(messages, previous, strict=False):
        if mine != theirs:
            break
        shared += 1
    return shared


def expand_proxy_log(entries: Any) -> Any:
    """Inverse of :func:`compact_proxy_log`: every inference entry with its full ``request_messages``."""
    if not isinstance(entries, list):
        return entries
    previous: list[Any] = []
    for entry in entries:
        messages = entry.get(MESSAGES_KEY) if isinstance(entry, dict) else None
        if not isinstance(messages, list):
            continue
        shared = entry.pop(PREFIX_KEY, 0)
        if shared:
            messages = previous[:shared] + messages
            entry[MESSAGES_KEY] = messages
        previous = messages
    return entries
