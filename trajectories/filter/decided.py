"""Who decided: which inference requests of an attempt hold text the agent's code wrote (SPEC 3, 6).

A tool call is the model's only when the model chose it, and it did not choose it when the agent's code
told it which call to make, in JSON, in words, or by showing it only the results the code had picked.
So each inference request of an attempt is read span by span (lower-case word tokens of every message:
contents, re-sent reasoning and tool calls) and each span is attributed to one of the sources the model
may be given:

- **static instructions**: word n-grams (``SPAN_NGRAM`` words) found in the requests of at least
  ``STATIC_SHARE`` of the run's problems (and of two at least): a system prompt, a template, the tags
  around history blocks. Computed over the whole run (:func:`static_grams`), never over one attempt (a
  run where a single problem reached the model is not measured);
- **the shopper's query**, as a whole (its full word sequence; a part of it chosen by code is the code's);
- **the model's own earlier outputs** in this attempt (texts, reasoning, tool calls, also re-serialised
  as name and parameters), of completions that were not echoed and not steered by shopping content: a
  completion answering the code's choice of a query part, an id, a number or a result's words is not the
  model's to launder into a later request (one answering a plain note, such as a parse error, is);
- **renderings of verified tool results** of calls the model itself emitted: a result's products shown
  from the first on in the tool's order (cutting the list after N items is still a rendering), each
  product's fields near its id. A product shown out of that order (singled out by its content) is a
  selection, which is a decision;
- **frame words**: field names, roles, tool names and ids the SDK made up (``tool_call_id``).

Whatever is left is the code speaking. A request with a product id, a word of the query or of a
verified result, or a number of three digits or more left over (shopping content the code placed), or
more than ``MAX_CODE_WORDS`` other words, is **steered**: its completion earns no reasoning credit and
its tool calls are nobody's (the structural filter, the offline judge and the LLM judge's evidence all
read this one rule). The echo measure (``shoppingbench.echo``) stays beside it as a second signal.

What it cannot see: static text is judged by its words, not by when or where the code places it, so a
fixed sentence sent on a condition in at least half of the run's problems reads as an instruction.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from shoppingbench.echo import InferenceEntry, answered_inference, completion_texts, words
from shoppingbench.records import AttemptRecord
from trajectories.filter.calls import CallIndex, LoggedCall, emitted_calls, executed_call

SPAN_NGRAM: Final = 3
"""Words per n-gram of the static and own-output sources."""
STATIC_SHARE: Final = 0.5
"""Share of the run's problems whose requests must hold an n-gram for it to count as static."""
MIN_STATIC_PROBLEMS: Final = 2
"""Static text is known only across problems: a run of one problem has none."""
MAX_CODE_WORDS: Final = 2
"""Plain words of a request no source accounts for that are tolerated (a step counter, a stray unit):
more is the code speaking. Shopping content left over (a product id, a word of the query or of a
verified result, a number of three digits or more) is never tolerated."""
MAX_REASON_WORDS: Final = 8

FRAME_WORDS: Final = frozenset({
    "system", "user", "assistant", "tool", "role", "content", "name", "names", "parameters", "arguments",
    "function", "type", "text", "id", "ids", "tool_call", "tool_calls", "tool_call_id", "call", "obs",
    "think", "response", "result", "results", "error", "find_product", "view_product_information",
    "recommend_product", "terminate", "product_id", "product_ids", "shop_id", "title", "price", "service",
    "sold_count", "short_description", "description", "sku_options", "attributes", "q", "page", "sort",
    "reasoning", "reasoning_content", "true", "false", "null", "none",
})
"""Words any rendering of a dialogue or of a tool result is built from: field names, roles, tags."""

_MADE_UP_ID: Final = re.compile(r"[0-9a-f]{8}|(?=[0-9]*[a-f])[0-9a-f]{9,64}|call_?\d+|chatcmpl\w*|toolu_\w+")
"""Ids an SDK or a server made up (tool-call ids, eight hex digits in the SDK, even when all of them are
decimal; completion ids): structure, not a decision. A product id is never one."""


_JSON_ESCAPE: Final = re.compile(r"\\(?:u([0-9a-fA-F]{4})|[nrtbf/\\\"])")


def _unescaped(match: re.Match[str]) -> str:
    return chr(int(match.group(1), 16)) if match.group(1) else " "


def text_words(text: str) -> list[str]:
    """Word tokens of ``text`` with JSON escapes read as what they stand for: an agent that writes a
    result or a call back with ``json.dumps`` shows the model the same words."""
    return words(_JSON_ESCAPE.sub(_unescaped, text) if "\\" in text else text)


def _grams(tokens: Sequence[str], n: int = SPAN_NGRAM) -> Iterable[str]:
    return map(" ".join, zip(*(tokens[i:] for i in range(n)), strict=False))


def _message_texts(message: Any) -> list[str]:
    """A request message's texts: content (string or parts), re-sent reasoning, tool calls."""
    if not isinstance(message, Mapping):
        return []
    texts: list[str] = []
    content = message.get("content")
    if isinstance(content, list):
        texts.extend(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    elif content is not None:
        texts.append(str(content))
    for key in ("reasoning_content", "reasoning"):
        if isinstance(message.get(key), str):
            texts.append(message[key])
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, Mapping):
            inner = call.get("function")
            function = inner if isinstance(inner, Mapping) else call
            texts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
    return texts


def message_tokens(messages: Iterable[Any] | None,
                   known: dict[str, list[str]] | None = None) -> list[list[str]]:
    """Each text of each request message as word tokens (no span crosses two texts). ``known``: texts
    already read (an agent re-sends its whole conversation with every call)."""
    cache: dict[str, list[str]] = {} if known is None else known
    found = []
    for message in messages or []:
        for text in _message_texts(message):
            tokens = cache.get(text)
            if tokens is None:
                tokens = cache[text] = text_words(text)
            if tokens:
                found.append(tokens)
    return found


Requests = Iterable[Sequence[Mapping[str, Any]] | None]
"""The request messages of one attempt's answered inference calls."""


def static_grams(requests_per_problem: Iterable[Requests]) -> frozenset[str] | None:
    """The n-grams found in the requests of at least ``STATIC_SHARE`` of the problems (and of
    ``MIN_STATIC_PROBLEMS``): ``requests_per_problem`` holds, per problem of the run, the request
    messages of its attempt's answered inference calls. ``None`` when fewer than
    ``MIN_STATIC_PROBLEMS`` problems reached the model: what is static cannot be told then."""
    counts: Counter[str] = Counter()
    problems = 0
    for requests in requests_per_problem:
        seen: set[str] = set()
        read: set[str] = set()
        for messages in requests:
            for message in messages or []:
                for text in _message_texts(message):
                    if text not in read:  # an agent re-sends its whole conversation with every call
                        read.add(text)
                        seen.update(_grams(text_words(text)))
        if seen:
            problems += 1
            counts.update(seen)
    if problems < MIN_STATIC_PROBLEMS:
        return None
    needed = max(MIN_STATIC_PROBLEMS, math.ceil(STATIC_SHARE * problems))
    return frozenset(gram for gram, count in counts.items() if count >= needed)


def run_static_grams(logs: Iterable[Sequence[InferenceEntry]]) -> frozenset[str] | None:
    """:func:`static_grams` of a run, given each problem's proxy log."""
    return static_grams([call.request_messages for call in answered_inference(log)] for log in logs)


def _price_units(price: float | None) -> list[list[str]]:
    if price is None:
        return []
    units = {f"{price}", f"{price:.2f}", f"{price:g}"}
    if float(price).is_integer():
        units.add(str(int(price)))
    return [words(u) for u in units]


@dataclass
class _Rendering:
    """What a product's verified rendering may show: short values as whole units, long texts as grams."""

    units: set[tuple[str, ...]] = field(default_factory=set)
    grams: set[str] = field(default_factory=set)
    vocabulary: set[str] = field(default_factory=set)

    def add_text(self, text: str | None) -> None:
        tokens = words(text or "")
        if not tokens:
            return
        self.vocabulary.update(tokens)
        if len(tokens) < SPAN_NGRAM:
            self.units.add(tuple(tokens))
        else:
            self.grams.update(_grams(tokens))


def _rendering(product: Any) -> _Rendering:
    shown = _Rendering()
    for text in (product.title, product.shop_id, *product.service, *product.values,
                 *getattr(product, "texts", ())):
        shown.add_text(text)
    sold = getattr(product, "sold_count", None)
    if sold is not None:
        shown.add_text(str(sold))
    for unit in _price_units(product.price):
        shown.units.add(tuple(unit))
    return shown


@dataclass
class _Attempt:
    """What one attempt has given the model so far: its own words and its own calls' verified results."""

    own_grams: set[str] = field(default_factory=set)
    own_units: set[tuple[str, ...]] = field(default_factory=set)
    own_calls: CallIndex = field(default_factory=lambda: CallIndex(1.0))
    results: list[list[str]] = field(default_factory=list)
    """Each own call's result ids, in the tool's order."""
    renderings: dict[str, _Rendering] = field(default_factory=dict)

    def take_output(self, call: LoggedCall) -> None:
        for text in completion_texts(call):
            tokens = words(text)
            self.own_grams.update(_grams(tokens))
            if 0 < len(tokens) < SPAN_NGRAM:
                self.own_units.add(tuple(tokens))
        for emitted in emitted_calls(call):
            self.own_calls.add(emitted)
            # The call re-serialised as name and parameters (``find_product q red shirt``), as agents
            # write it back into their history.
            tokens = [emitted.name]
            for key, value in emitted.args:
                tokens.append(key)
                tokens.extend(sorted(value) if isinstance(value, frozenset) else words(str(value)))
            self.own_grams.update(_grams(tokens))
            self.own_units.update((token,) for token in tokens)

    def take_result(self, call: LoggedCall, products: Sequence[Any]) -> None:
        signature = executed_call(call)
        if signature is None or not self.own_calls.matches(signature):
            return
        self.results.append([p.product_id for p in products])
        for product in products:
            self.renderings.setdefault(product.product_id, _Rendering())
            found = _rendering(product)
            kept = self.renderings[product.product_id]
            kept.units |= found.units
            kept.grams |= found.grams
            kept.vocabulary |= found.vocabulary


def _mark_grams(tokens: Sequence[str], covered: list[bool],
                grams: Iterable[set[str] | frozenset[str]]) -> None:
    sources = [g for g in grams if g]
    if not sources:
        return
    for i, gram in enumerate(_grams(tokens)):
        if any(gram in source for source in sources):
            covered[i:i + SPAN_NGRAM] = [True] * SPAN_NGRAM


def _mark_units(tokens: Sequence[str], covered: list[bool], units: set[tuple[str, ...]]) -> None:
    if not units:
        return
    longest = max(len(u) for u in units)
    for i in range(len(tokens)):
        if covered[i]:
            continue
        for size in range(1, min(longest, len(tokens) - i) + 1):
            if tuple(tokens[i:i + size]) in units:
                covered[i:i + size] = [True] * size


def _mark_sequence(tokens: Sequence[str], covered: list[bool], sequence: Sequence[str]) -> None:
    n = len(sequence)
    if not n:
        return
    first = sequence[0]
    for i, token in enumerate(tokens):
        if token == first and list(tokens[i:i + n]) == list(sequence):
            covered[i:i + n] = [True] * n


def _rendered_ids(tokens: Sequence[str], covered: Sequence[bool], results: Sequence[Sequence[str]],
                  known: set[str]) -> dict[int, str]:
    """The positions of product ids that are part of a rendering: for some own result, the ids shown
    from its first on, in its order (a result may be shown more than once, each time from its first)."""
    occurrences = [(i, t) for i, t in enumerate(tokens) if not covered[i] and t in known]
    rendered: dict[int, str] = {}
    for ids in results:
        if not ids:
            continue
        expected = 0
        for position, token in occurrences:
            if token == ids[0]:
                expected = 0
            if expected < len(ids) and token == ids[expected]:
                rendered[position] = token
                expected += 1
    return rendered


def _mark_renderings(tokens: Sequence[str], covered: list[bool], attempt: _Attempt, known: set[str]) -> None:
    rendered = _rendered_ids(tokens, covered, attempt.results, known)
    positions = sorted(rendered)
    for index, position in enumerate(positions):
        covered[position] = True
        shown = attempt.renderings.get(rendered[position])
        if shown is None:
            continue
        # A product's fields are shown near its id: between the ids shown before and after it.
        lo = positions[index - 1] + 1 if index else 0
        hi = positions[index + 1] if index + 1 < len(positions) else len(tokens)
        window = list(tokens[lo:hi])
        part = list(covered[lo:hi])
        _mark_grams(window, part, [shown.grams])
        _mark_units(window, part, shown.units)
        for j in range(1, len(window)):  # a text cut mid-word ("descrip...") by the agent's rendering
            if not part[j] and part[j - 1] and any(w.startswith(window[j]) for w in shown.vocabulary):
                part[j] = True
        covered[lo:hi] = part


def _leftover(tokens: Sequence[str], covered: Sequence[bool]) -> list[str]:
    run: list[str] = []
    for token, done in zip(tokens, covered, strict=True):
        if not done:
            run.append(token)
        elif run:
            break
    return run[:MAX_REASON_WORDS]


@dataclass(frozen=True)
class Steer:
    """Why a request holds the code's own text, and whether that text carries shopping content (a part
    of the query, a product id, a price or other number, a word of a verified result): content the
    code chose. A steer of plain words (a parse-error note, a warning) leaves the model's answer its own
    words for later requests; a content steer does not (no laundering the code's choice)."""

    reason: str
    content: bool


_NUMBER: Final = re.compile(r"\d{3,}")


def request_steering(messages: Sequence[Any] | None, query_tokens: Sequence[str], static: frozenset[str],
                     attempt: _Attempt, known_ids: set[str],
                     texts: dict[str, list[str]] | None = None) -> Steer | None:
    """Why this request holds the code's own text, or ``None`` when every span is accounted for."""
    words_left = 0
    ids_left: list[str] = []
    content_left: list[str] = []
    first_run: list[str] = []
    query_words = set(query_tokens)
    own_units = {unit for unit in attempt.own_units if not (len(unit) == 1 and unit[0] in known_ids)}
    for tokens in message_tokens(messages, texts):
        covered = [t in FRAME_WORDS or (t not in known_ids and bool(_MADE_UP_ID.fullmatch(t)))
                   for t in tokens]
        _mark_grams(tokens, covered, [static, attempt.own_grams])
        _mark_sequence(tokens, covered, query_tokens)
        _mark_renderings(tokens, covered, attempt, known_ids)
        _mark_units(tokens, covered, own_units)
        for token, done in zip(tokens, covered, strict=True):
            if done:
                continue
            if token in known_ids:
                ids_left.append(token)
            elif token in query_words or _NUMBER.search(token) or any(
                    token in shown.vocabulary for shown in attempt.renderings.values()):
                content_left.append(token)
            else:
                words_left += 1
        if not first_run:
            first_run = _leftover(tokens, covered)
    if ids_left:
        return Steer(f"product id {ids_left[0]} shown outside a rendering of a result the model asked for "
                     f"(the code's selection; {len(ids_left)} such id(s))", content=True)
    if content_left:
        return Steer(f"{len(content_left)} words of the query or of results, or numbers, placed by the code "
                     f"('{' '.join(content_left[:MAX_REASON_WORDS])}')", content=True)
    if words_left > MAX_CODE_WORDS:
        return Steer(f"{words_left} words no source accounts for, the first: '{' '.join(first_run)}'",
                     content=False)
    return None


def steered_calls(proxy_log: Sequence[LoggedCall], query: str, static: frozenset[str],
                  echoed: Iterable[int] = ()) -> dict[int, str]:
    """The ``seq`` of each answered inference call whose request holds the code's own text, with why.

    ``static``: the run's :func:`static_grams`; ``echoed``: the echo measure of the attempt (echoed
    completions are not the model's words either)."""
    not_own = set(echoed)
    query_tokens = words(query)
    attempt = _Attempt()
    known_ids = {pid for call in proxy_log for pid in getattr(call, "product_ids", ()) or ()}
    steered: dict[int, str] = {}
    texts: dict[str, list[str]] = {}
    for call in sorted(proxy_log, key=lambda c: c.seq):
        if call.kind == "inference":
            if call.status >= 400 or not (call.completion_text or call.completion_tool_calls
                                          or call.reasoning_text):
                continue
            steer = request_steering(call.request_messages, query_tokens, static, attempt, known_ids, texts)
            if steer is not None:
                steered[call.seq] = steer.reason
            if (steer is None or not steer.content) and call.seq not in not_own:
                attempt.take_output(call)
        elif call.kind == "search" and call.status < 400:
            attempt.take_result(call, getattr(call, "results", ()) or ())
    return steered


def carry_run_steering(records: Iterable[AttemptRecord]) -> None:
    """Measure a whole run: its static text over every attempt, then each attempt's steered requests,
    kept with each record (:meth:`~shoppingbench.records.AttemptRecord.carry_steering`). A run in
    which fewer than ``MIN_STATIC_PROBLEMS`` problems reached the model is not measured (its records
    carry nothing, as before any measure): with one problem, a template and the code's words look alike,
    and such a run's credit is at most one problem's."""
    listed = list(records)
    static = run_static_grams([record.proxy_log for record in listed])
    if static is None:
        return
    for record in listed:
        record.carry_steering(steered_calls(record.proxy_log, record.query, static, record.echoed_calls()))


def describe(steered: Mapping[int, str], limit: int = 5) -> list[str]:
    """The steered requests as the store and the dumps keep them: ``seq N: why``, the first ``limit``."""
    return [f"seq {seq}: {why}" for seq, why in sorted(steered.items())[:limit]]
