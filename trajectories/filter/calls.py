"""Tool calls as the structural filter compares them: emitted (in an LLM completion), executed (in the
proxy log) and claimed (in the agent's own steps), each reduced to a normalised signature.

Completions are read with the agent SDK's own parser (``parse_model_output``): a call counts as
emitted in exactly the shapes the reference agents would execute (tagged ``<tool_call>`` blocks with
the usual slips repaired, native tool calls). Completions and steps are untrusted: junk yields no call.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import orjson

from shoppingbench.agent_sdk import normalise_call, parse_model_output
from shoppingbench.echo import InferenceEntry

Value = str | int | float | frozenset[str] | tuple[float | None, float | None]

_TERM = re.compile(r"\w+")
_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
_MAX_TEXT = 200_000
"""Completions longer than this are only searched in their first part (bounded work per attempt)."""


class LoggedCall(InferenceEntry, Protocol):
    """What the filter reads of a proxy-log entry (the echo measure's fields and the tool call's):
    a ``shoppingbench.records.ProxyCall`` satisfies it."""

    @property
    def path(self) -> str: ...
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def completion_tokens(self) -> int | None: ...


@dataclass(frozen=True)
class CallSignature:
    """A tool call reduced to what identifies it: the tool's name and its normalised arguments.

    ``q`` becomes its set of lower-case terms, ``product_ids`` and ``service`` sets of items,
    ``price`` a pair of bounds, ``page`` an integer; absent, empty and default values are dropped.
    """

    name: str
    args: tuple[tuple[str, Value], ...]

    @cached_property
    def mapping(self) -> dict[str, Value]:
        return dict(self.args)


def _split_ids(value: Any) -> frozenset[str]:
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    return frozenset(s for item in items if (s := str(item).strip()))


def _price(value: Any) -> tuple[float | None, float | None] | str | None:
    text = str(value).strip().replace(" ", "")
    if not text or text == "-":
        return None
    low, sep, high = text.partition("-")
    try:
        bounds = (float(low) if low else None, float(high) if high else None)
    except ValueError:
        return text.lower()
    return bounds if sep else (bounds[0], bounds[0])


def normalise_value(key: str, value: Any) -> Value | None:
    """One argument in comparable form, or ``None`` when it is absent or the tool's default."""
    if value is None or value == "" or value == []:
        return None
    if key == "q":
        return frozenset(term.lower() for term in _TERM.findall(str(value)))
    if key in ("product_ids", "service"):
        items = _split_ids(value)
        return frozenset(i.lower() for i in items) if key == "service" else items
    if key == "price":
        return _price(value)
    if key == "page":
        try:
            page = int(str(value).strip())
        except ValueError:
            return str(value).strip().lower()
        return None if page == 1 else page
    if isinstance(value, bool | int | float):
        return str(value).lower()
    if isinstance(value, dict | list):
        try:
            return orjson.dumps(value, option=_CANONICAL, default=str).decode()
        except (TypeError, RecursionError):  # nested too deep for JSON: compare as unreadable
            return "<unreadable>"
    return str(value).strip().lower()


def signature(name: Any, arguments: Any) -> CallSignature | None:
    """The signature of a call with these name and arguments, ``None`` if it is not a call at all."""
    if not isinstance(name, str) or not name.strip() or not isinstance(arguments, dict):
        return None
    args = []
    for key, raw in arguments.items():
        value = normalise_value(str(key), raw)
        if value is not None:
            args.append((str(key), value))
    return CallSignature(name=name.strip().rsplit("/", 1)[-1].lower(), args=tuple(sorted(args)))


def _from_object(item: Any) -> CallSignature | None:
    call = normalise_call(item)
    return None if call is None else signature(call["name"], call["parameters"])


def emitted_calls(call: LoggedCall) -> list[CallSignature]:
    """The tool calls an inference completion emitted: its ``<tool_call>`` blocks and native calls."""
    parsed = parse_model_output((call.completion_text or "")[:_MAX_TEXT])
    found = [sig for item in parsed.tool_calls if (sig := _from_object(item)) is not None]
    found.extend(sig for item in call.completion_tool_calls if (sig := _from_object(item)) is not None)
    return found


def executed_call(call: LoggedCall) -> CallSignature | None:
    """The tool call a proxy ``search`` entry records (``/search/find_product`` -> ``find_product``)."""
    return signature(call.path, call.params)


def step_calls(steps: Any) -> Iterator[CallSignature]:
    """The tool calls the agent's steps claim (``completion.message.tool_call``), junk skipped."""
    if not isinstance(steps, list):
        return
    for step in steps:
        completion = step.get("completion") if isinstance(step, dict) else None
        message = completion.get("message") if isinstance(completion, dict) else None
        calls = message.get("tool_call") if isinstance(message, dict) else None
        for item in calls if isinstance(calls, list) else []:
            if (sig := _from_object(item)) is not None:
                yield sig


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def matches(executed: CallSignature, emitted: CallSignature, *, min_query_jaccard: float) -> bool:
    """Whether ``executed`` is the call ``emitted`` asked for.

    Same tool; the query's term sets at least ``min_query_jaccard`` alike; every executed product id
    among the emitted ones; every other argument equal after normalisation.
    """
    if executed.name != emitted.name:
        return False
    mine, theirs = executed.mapping, emitted.mapping
    for key in mine.keys() | theirs.keys():
        a, b = mine.get(key), theirs.get(key)
        if key == "q":
            terms_a = a if isinstance(a, frozenset) else frozenset()
            terms_b = b if isinstance(b, frozenset) else frozenset()
            if jaccard(terms_a, terms_b) < min_query_jaccard:
                return False
        elif key == "product_ids":
            if not (isinstance(a, frozenset) and isinstance(b, frozenset) and a <= b):
                return False
        elif a != b:
            return False
    return True


class CallIndex:
    """Calls seen so far, answering "does one of them match this call?" without scanning them all."""

    def __init__(self, min_query_jaccard: float) -> None:
        self.min_query_jaccard = min_query_jaccard
        self._exact: set[CallSignature] = set()
        self._by_name: dict[str, list[CallSignature]] = defaultdict(list)
        self.size = 0

    def add(self, call: CallSignature) -> None:
        self._exact.add(call)
        self._by_name[call.name].append(call)
        self.size += 1

    def matches(self, call: CallSignature) -> bool:
        """Whether ``call`` is one of the indexed calls (see :func:`matches`)."""
        # An identical signature matches under any threshold; only near misses need the full rule.
        if call in self._exact:
            return True
        return any(matches(call, other, min_query_jaccard=self.min_query_jaccard)
                   for other in self._by_name.get(call.name, ()))
