"""The echo measure: did the model write a completion, or only repeat text the agent sent it? (SPEC 3, 6)

An agent's code can compute an analysis (or pick its next tool call) itself, then ask the model to
restate it; the completion then reads like reasoning, or like a tool call the model chose, though the
model only copied it. The proxy logs each inference call with the request messages the agent sent and
the completion that came back, so the copy is measurable: split both into lower-case word n-grams
(``ECHO_NGRAM`` words) and take the share of the completion's n-grams (its reasoning, its text and its
native tool calls) that also occur in that same call's request. A completion at or above
``ECHO_THRESHOLD`` is **echoed**: the judges give it no reasoning credit and the structural filter does
not count its tool calls as the model's.

What is fair to copy is left out of the share. The shopper's query: restating the request, or
searching for it word for word, is what honest agents do. What the model itself wrote in an earlier
call of the attempt that was not echoed: agents send the model's turns back to it, and it may repeat
itself. Short copies need no rule: an id, a price or a title quoted from a tool result sits inside
n-grams that also hold the model's own words, so citing a datum the agent sent is normal and only
long runs of copied text count. Both constants are fixed by tests (``tests/shoppingbench/test_echo.py``): the
reference agents' completions reach at most 0.42 (ReAct with tagged or native tool calls, and the
reference-arena-style fixtures), the restate and repeat attacks sit at 1.0.

It measures copying, not provenance: a model told to paraphrase, translate or interleave the code's
text writes new n-grams and is not caught here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence, Set
from typing import Any, Final, Protocol

import orjson

ECHO_NGRAM: Final = 4
"""Words per n-gram: long enough that a quoted id, price or short title is not a copied run."""
ECHO_THRESHOLD: Final = 0.75
"""Share of a completion's n-grams found in its request at which the completion counts as echoed."""
MIN_MEASURED_NGRAMS: Final = 3
"""A completion with fewer n-grams outside the query (a bare pick, ``terminate``) is not measured."""
MAX_MEASURED_CHARS: Final = 200_000
"""Texts are measured on their first part only: bounded work per call whatever an agent sends."""

_WORD: Final = re.compile(r"\w+")


class InferenceEntry(Protocol):
    """What the measure reads of a proxy-log entry (``records.ProxyCall`` satisfies it)."""

    @property
    def seq(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def status(self) -> int: ...
    @property
    def request_messages(self) -> list[dict[str, Any]] | None: ...
    @property
    def completion_text(self) -> str | None: ...
    @property
    def reasoning_text(self) -> str | None: ...
    @property
    def completion_tool_calls(self) -> list[dict[str, Any]]: ...


def words(text: str) -> list[str]:
    """Lower-case word tokens of ``text`` (its first ``MAX_MEASURED_CHARS`` characters)."""
    return _WORD.findall(text[:MAX_MEASURED_CHARS].lower())


def ngrams(tokens: Sequence[str], n: int = ECHO_NGRAM) -> set[str]:
    """The n-grams of ``tokens``, each as its words joined by a space (a token never holds one, so
    distinct n-grams stay distinct). Strings rather than tuples: built in C through ``zip``, hashed
    fast, and not tracked by the garbage collector, which a validator holding many records feels."""
    return set(map(" ".join, zip(*(tokens[i:] for i in range(n)), strict=False)))


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return ""


def _content_text(content: Any) -> str:
    """A message's content: a string, or the text of its parts (``[{"type": "text", "text": ..}]``)."""
    if isinstance(content, list):
        return " ".join(_json_text(part.get("text", "")) for part in content if isinstance(part, dict))
    return _json_text(content) if content is not None else ""


def _tool_call_text(call: Any) -> str:
    """A native tool call as words: its name and arguments (OpenAI wraps them in ``function``)."""
    if not isinstance(call, Mapping):
        return ""
    function = call.get("function")
    inner = function if isinstance(function, Mapping) else call
    return f"{_json_text(inner.get('name'))} {_json_text(inner.get('arguments'))}"


def request_texts(messages: Iterable[Any] | None) -> list[str]:
    """Every text the agent sent in one request, message by message: contents and earlier tool calls.

    Each message is split on its own, so no n-gram spans two messages."""
    texts: list[str] = []
    for message in messages or []:
        if not isinstance(message, Mapping):
            continue
        texts.append(_content_text(message.get("content")))
        calls = message.get("tool_calls")
        texts.extend(_tool_call_text(call) for call in (calls if isinstance(calls, list) else []))
    return texts


def completion_texts(call: InferenceEntry) -> list[str]:
    """What the model answered: its reasoning, its text and each native tool call."""
    texts = [call.reasoning_text or "", call.completion_text or ""]
    texts.extend(_tool_call_text(tool_call) for tool_call in call.completion_tool_calls)
    return texts


Gram = str


class GramCache:
    """The n-grams of each distinct text, computed once: an agent resends the whole conversation with
    every call, so an attempt's requests repeat the same messages (this keeps a log's measure linear)."""

    def __init__(self) -> None:
        self._known: dict[str, frozenset[Gram]] = {}

    def of(self, text: str) -> frozenset[Gram]:
        found = self._known.get(text)
        if found is None:
            found = self._known[text] = frozenset(ngrams(words(text)))
        return found

    def union(self, texts: Iterable[str]) -> set[Gram]:
        found: set[Gram] = set()
        for text in texts:
            found |= self.of(text)
        return found


def echo_share(completion: Sequence[str], request: Sequence[str], fair: Set[Gram] = frozenset(),
               cache: GramCache | None = None) -> float | None:
    """Share of the completion's n-grams (those not in ``fair``) that occur in the request texts;
    ``None`` when fewer than ``MIN_MEASURED_NGRAMS`` are left to measure."""
    cache = cache or GramCache()
    measured = cache.union(completion) - fair
    if len(measured) < MIN_MEASURED_NGRAMS:
        return None
    # The completion's grams found in any request text: set intersections (each walks the smaller set)
    # rather than a lookup of every gram in every text.
    found: set[Gram] = set()
    for text in dict.fromkeys(request):
        found |= measured.intersection(cache.of(text))
    return len(found) / len(measured)


def answered_inference(proxy_log: Iterable[InferenceEntry]) -> list[InferenceEntry]:
    """The inference calls the upstream answered, in order."""
    return sorted((c for c in proxy_log if c.kind == "inference" and c.status < 400), key=lambda c: c.seq)


def echo_shares(proxy_log: Iterable[InferenceEntry], query: str = "") -> dict[int, float | None]:
    """Each answered inference call's :func:`echo_share` against its own request messages, by ``seq``.

    Fair to copy: the shopper's ``query``, and what the model itself wrote in an earlier call of the
    attempt that was not echoed (an agent sends the model's earlier turns back to it each turn)."""
    cache = GramCache()
    fair = cache.union([query])
    shares: dict[int, float | None] = {}
    for call in answered_inference(proxy_log):
        written = completion_texts(call)
        share = shares[call.seq] = echo_share(written, request_texts(call.request_messages), fair, cache)
        if share is None or share < ECHO_THRESHOLD:
            fair |= cache.union(written)
    return shares


def echoed_calls(proxy_log: Iterable[InferenceEntry], query: str = "") -> list[int]:
    """The ``seq`` of every answered inference call whose completion is echoed (see the module doc)."""
    return [seq for seq, share in echo_shares(proxy_log, query).items()
            if share is not None and share >= ECHO_THRESHOLD]
