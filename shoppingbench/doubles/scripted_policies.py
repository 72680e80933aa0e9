"""Scripted shopping policies for the OpenAI-compatible test double: a deterministic stand-in for a model.

TEST DOUBLES. They let the reference agents (and the demo, the sandbox tests and the trajectory
pipeline) run without a hosted LLM. A policy is a pure function of the chat-completions request
body (``Policy`` in :mod:`shoppingbench.doubles.llm_server`): the same conversation always gets the
same answer.

- :func:`react_policy` plays the model of an LLM shopping agent. It reads the conversation (the
  shopper's request: the first user message, or its ``<user>..</user>`` block when the agent sends the
  whole history in one message as the reference arena's template does; every earlier tool call and its
  result, in either protocol: tagged ``<tool_call>[..]</tool_call>`` text followed by ``<obs>[..]</obs>``,
  or OpenAI assistant ``tool_calls`` answered by ``role: tool`` messages) and plans the next turn:
  search every requested item with its price and service filters, view the best hits, look inside one
  shop when the items must share a shop, compare the candidates citing ids, prices and attributes, then
  recommend and terminate. A request carrying ``tools`` gets the turn as a tool-calling server sends it
  (native ``tool_calls``, the thinking as ``reasoning_content``); any other gets it in
  ``<think>``/``<tool_call>`` text.
- :func:`extract_policy` and :func:`choose_policy` play the narrow model of a sub-task agent: list
  the items of a request, or answer the one candidate id that fits best.
- ``shoppingbench.doubles.instruction_policies`` plays a model that follows an instruction: it repeats
  a text, says it in other words, or turns a call described in words into a ``<tool_call>``.
- :func:`shopping_policy` dispatches between them by the system prompt's ``TASK:`` marker.

The policy re-plays its own plan each turn: the plan runs from the start, each tool call it makes is
answered from the conversation when that call already happened there, and the first call that has
not happened yet becomes the reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import ValidationError

from shoppingbench.agent_sdk import normalise_call, parse_model_output
from shoppingbench.agents.scripted_baseline import Request, parse_requests
from shoppingbench.doubles.instruction_policies import (
    CALL_MARKER,
    PARAPHRASE_MARKER,
    REPEAT_MARKER,
    call_policy,
    paraphrase_policy,
    repeat_policy,
)
from shoppingbench.doubles.instruction_policies import message_text as _text
from shoppingbench.doubles.llm_server import StubReply
from shoppingbench.problems.models import Voucher
from shoppingbench.scoring.budget import fits_budget

EXTRACT_MARKER: Final = "TASK: EXTRACT_ITEMS"
CHOOSE_MARKER: Final = "TASK: CHOOSE_CANDIDATE"
PAGE_SIZE: Final = 10
SHOPS_TRIED: Final = 2
"""Shops looked into, in order of the first item's ranking, when no shop has every item."""

_BLOCK = re.compile(r"<(tool_call|obs)>(.*?)</\1>", re.DOTALL)
_USER = re.compile(r"<user>(.*?)</user>", re.DOTALL)
_TERM = re.compile(r"[a-z0-9]+(?:[.'-][a-z0-9]+)*")


# --- reading the conversation ------------------------------------------------------------------


@dataclass
class _Recorded:
    call: dict[str, Any]
    call_id: str | None = None
    """The OpenAI tool-call id, which the ``role: tool`` message answering the call names."""
    result: Any = None
    answered: bool = False


@dataclass
class Conversation:
    """What a policy can know: the system prompt, the shopper's request and the tool calls so far."""

    system: str
    query: str
    calls: list[_Recorded] = field(default_factory=list)

    @classmethod
    def read(cls, body: dict[str, Any]) -> Conversation:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        system = "\n".join(_text(m) for m in messages if m.get("role") in ("system", "developer"))
        turns = [m for m in messages if m.get("role") not in ("system", "developer")]
        first_user = next((_text(m) for m in turns if m.get("role") == "user"), "")
        tagged = _USER.search(first_user)
        conversation = cls(system=system, query=(tagged.group(1) if tagged else first_user).strip())
        last_block: list[_Recorded] = []
        for message in turns:
            native = message.get("tool_calls")
            if message.get("role") == "assistant" and isinstance(native, list) and native:
                last_block = [_Recorded(call, raw.get("id")) for raw in native
                              if (call := normalise_call(raw)) is not None]
                conversation.calls.extend(last_block)
            elif message.get("role") == "tool":
                _answer(last_block, message)
                continue  # a result's text is the catalog's, not tags the model wrote
            for kind, inner in _BLOCK.findall(_text(message)):
                if kind == "tool_call":
                    calls = parse_model_output(f"<think>.</think><tool_call>{inner}</tool_call>").tool_calls
                    last_block = [_Recorded(call) for call in calls]
                    conversation.calls.extend(last_block)
                else:
                    for recorded, result in zip(last_block, _observations(inner), strict=False):
                        recorded.result, recorded.answered = result, True
        return conversation


def _answer(block: list[_Recorded], message: dict[str, Any]) -> None:
    """Record a ``role: tool`` message as the result of the call it names (else the first unanswered)."""
    call_id = message.get("tool_call_id")
    named = [r for r in block if r.call_id is not None and r.call_id == call_id]
    target = next(iter(named or [r for r in block if not r.answered]), None)
    if target is not None:
        target.result, target.answered = _tool_result(_text(message)), True


def _tool_result(text: str) -> Any:
    """What a model reads in a tool message: JSON, the complete entries of a JSON list that was cut short
    (agents cut long results), or else the text itself (errors, confirmations)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    if not text.lstrip().startswith("["):
        return text
    decoder = json.JSONDecoder()
    entries: list[Any] = []
    position = text.index("[") + 1
    while True:
        while position < len(text) and text[position] in ", \n\r\t":
            position += 1
        try:
            entry, position = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            return entries
        entries.append(entry)


def _observations(inner: str) -> list[Any]:
    try:
        entries = json.loads(inner)
    except (ValueError, RecursionError):
        return []
    if not isinstance(entries, list):
        entries = [entries]
    # {"result": ..} (this repo's agents) or {"results": ..} (the reference arena's template).
    return [entry.get("result", entry.get("results")) if isinstance(entry, dict) else entry
            for entry in entries]


class _Reply(Exception):
    """Control flow, not an error: the plan's next move."""

    def __init__(self, calls: list[dict[str, Any]], think: str) -> None:
        super().__init__(think)
        self.calls = calls
        self.think = think


class _Replay:
    """Answers the plan's calls from the conversation; the first new call ends the turn."""

    def __init__(self, conversation: Conversation) -> None:
        self.recorded = conversation.calls
        self.position = 0

    def run(self, calls: list[dict[str, Any]], think: str) -> list[Any]:
        window = self.recorded[self.position:self.position + len(calls)]
        if len(window) == len(calls) and all(r.answered and r.call == c for r, c in zip(window, calls,
                                                                                         strict=True)):
            self.position += len(calls)
            return [r.result for r in window]
        raise _Reply(calls, think)


def _call(name: str, **parameters: Any) -> dict[str, Any]:
    return {"name": name, "parameters": {k: v for k, v in parameters.items() if v is not None}}


# --- judging candidates ------------------------------------------------------------------------


def _stem(term: str) -> str:
    return term[:-1] if len(term) > 3 and term.endswith("s") and not term.endswith("ss") else term


def terms(text: str) -> set[str]:
    """Lower-case words of ``text``, plural ``s`` dropped, so "bottles" meets "bottle"."""
    return {_stem(t) for t in _TERM.findall(text.lower())}


@dataclass
class Candidate:
    """A search hit with its details, judged against one requested item."""

    hit: dict[str, Any]
    detail: dict[str, Any]
    rank: int
    matched: list[str]
    missing: list[str]

    @property
    def product_id(self) -> str:
        return str(self.hit.get("product_id", ""))

    @property
    def shop_id(self) -> str:
        return str(self.hit.get("shop_id", ""))

    @property
    def price(self) -> float:
        price = self.hit.get("price")
        return float(price) if isinstance(price, int | float) else 0.0

    def describe(self) -> str:
        options = _option_text(self.detail)
        return (f"{self.product_id} '{self.hit.get('title', '')}' (price {self.price:g}, shop {self.shop_id}"
                f"{'; ' + options if options else ''})")


def _option_text(detail: dict[str, Any], limit: int = 4) -> str:
    pairs: list[str] = []
    for option in (detail.get("sku_options") or {}).values():
        if isinstance(option, dict):
            pairs.extend(f"{k}: {v}" for k, v in option.items())
    for key, values in (detail.get("attributes") or {}).items():
        if isinstance(values, list):
            pairs.append(f"{key}: {', '.join(str(v) for v in values)}")
    unique = list(dict.fromkeys(pairs))
    return "; ".join(unique[:limit]) + (" ..." if len(unique) > limit else "")


def _haystack(hit: dict[str, Any], detail: dict[str, Any]) -> set[str]:
    texts = [str(hit.get("title", ""))]
    for option in (detail.get("sku_options") or {}).values():
        if isinstance(option, dict):
            texts.extend(str(v) for v in option.values())
    for values in (detail.get("attributes") or {}).values():
        if isinstance(values, list):
            texts.extend(str(v) for v in values)
    return terms(" ".join(texts))


def judge(request: Request, hits: Sequence[Any], details: Sequence[Any], *,
          prefer_cheap: bool) -> list[Candidate]:
    """The hits as candidates, best first: most requested words present, then (with a budget) the
    cheaper, then the search rank."""
    by_id = {str(d.get("product_id")): d for d in details if isinstance(d, dict)}
    wanted = list(dict.fromkeys(_stem(t) for t in _TERM.findall(request.keywords.lower())))
    candidates = []
    for rank, hit in enumerate(h for h in hits if isinstance(h, dict)):
        detail = by_id.get(str(hit.get("product_id")), {})
        present = _haystack(hit, detail)
        candidates.append(Candidate(hit=hit, detail=detail, rank=rank,
                                    matched=[w for w in wanted if w in present],
                                    missing=[w for w in wanted if w not in present]))
    return sorted(candidates, key=lambda c: (-len(c.matched), c.price if prefer_cheap else 0.0, c.rank))


# --- reading the request ----------------------------------------------------------------------

_CHATTER = re.compile(
    r"\b(?:ships? free|i pay on delivery|pay on delivery|\d+(?:\.\d+)? \d+(?:\.\d+)? range|any|good|"
    r"options?|buy|everything|following|carrying|payable|by|usable|as|suitable|pair|perks?|deal|verified|"
    r"sold|sellers?|shops|stores|offering|single|order|hi|i'd|i'm|i|do|them|same|shopping|there|where|"
    r"lazmall|lazflash|"
    r"cod|currently|type|kind|"
    r"version|variant|themed|scented|flavored|design|look|form|build|crafted|meant|fits?|works?|"
    r"compatible|what|rated)\b")
"""Template words and phrases (left by the baseline's reading) that name no product property."""
_EXTRA_SERVICES: Final = {"freeShipping": re.compile(r"\bships? for free\b"),
                          "COD": re.compile(r"\bpay for on delivery\b")}
_RANGE = re.compile(r"in the (\d+(?:\.\d+)?) to (\d+(?:\.\d+)?) (?:pesos|php) range", re.IGNORECASE)


def understand(query: str) -> list[Request]:
    """The items of a request, read more carefully than the regex baseline does: template chatter
    dropped from the keywords, a few more price and service phrasings, and no item made of chatter."""
    requests = []
    for request in parse_requests(query):
        words = (word.strip(".'-") for word in request.keywords.lower().split())
        keywords = " ".join(_CHATTER.sub(" ", " ".join(w for w in words if w)).split())
        if not keywords:
            continue
        price = request.price
        if price is None and (bounds := _RANGE.search(request.text)):
            price = f"{bounds.group(1)}-{bounds.group(2)}"
        text = request.text.lower()
        services = request.services + [name for name, phrase in _EXTRA_SERVICES.items()
                                       if name not in request.services and phrase.search(text)]
        requests.append(Request(text=request.text, keywords=keywords, price=price, services=services))
    return requests or parse_requests(query)


# --- the shopping plan -------------------------------------------------------------------------


_BUDGET = re.compile(r"budget is only `([\d.]+)`")
_THRESHOLD = re.compile(r"exceeds `([\d.]+)`")
_FIXED = re.compile(r"fixed discount of `([\d.]+)`")
_PERCENT = re.compile(r"percentage discount of `([\d.]+)%` with a cap of `([\d.]+)`")


def read_voucher(query: str) -> Voucher | None:
    """The budget and voucher a request states in the ShoppingBench wording, if any."""
    budget, threshold = _BUDGET.search(query), _THRESHOLD.search(query)
    fixed, percent = _FIXED.search(query), _PERCENT.search(query)
    if budget is None or threshold is None or (fixed is None and percent is None):
        return None
    try:
        return Voucher(voucher_type="shop" if "same shop" in query else "platform",
                       threshold=float(threshold.group(1)), budget=float(budget.group(1)),
                       discount_type="fixed" if fixed else "percentage",
                       face_value=float(fixed.group(1)) if fixed else None,
                       discount=float(percent.group(1)) / 100 if percent else None,
                       cap=float(percent.group(2)) if percent else None)
    except (ValidationError, ValueError):
        return None


def _search(request: Request, shop_id: str | None = None) -> dict[str, Any]:
    return _call("find_product", q=request.keywords, shop_id=shop_id, price=request.price,
                 service=",".join(request.services) or None)


def _hits(result: Any) -> list[dict[str, Any]]:
    return [h for h in result if isinstance(h, dict)] if isinstance(result, list) else []


def _request_line(number: int, request: Request) -> str:
    filters = [f"price {request.price}"] if request.price else []
    filters += [f"service {s}" for s in request.services]
    return f"{number}) '{request.keywords}'" + (f" ({', '.join(filters)})" if filters else "")


def _view(replay: _Replay, hits: Sequence[Sequence[dict[str, Any]]],
          think: str) -> list[list[dict[str, Any]]]:
    """The details of every item's hits, one view call per item that has hits."""
    views = [_call("view_product_information", product_ids=",".join(str(x.get("product_id")) for x in h))
             for h in hits if h]
    answers = iter(replay.run(views, think) if views else [])
    return [_hits(next(answers)) if h else [] for h in hits]


def _found(requests: Sequence[Request], hits: Sequence[Sequence[dict[str, Any]]]) -> str:
    return "; ".join(f"for '{r.keywords}' the search found "
                     + (", ".join(f"{x.get('product_id')} '{x.get('title')}' at {x.get('price')}"
                                  for x in h[:3]) if h else "nothing")
                     for r, h in zip(requests, hits, strict=True))


def _search_and_judge(replay: _Replay, requests: Sequence[Request], *, shop_id: str | None,
                      prefer_cheap: bool, intro: str) -> list[list[Candidate]]:
    """Search each request (again without filters when they leave nothing), view the hits, and look at
    the second page for an item whose first page has no candidate with every requested word (unless
    searching inside one shop)."""
    searches = [_search(r, shop_id) for r in requests]
    hits = [_hits(h) for h in replay.run(searches, intro)]
    unfiltered = 1 + (shop_id is not None)  # q (and shop_id) only
    bare = [i for i, h in enumerate(hits) if not h and len(searches[i]["parameters"]) > unfiltered]
    if bare:
        for i in bare:
            searches[i] = _call("find_product", q=requests[i].keywords, shop_id=shop_id)
        again = replay.run([searches[i] for i in bare], "No product passed the filters for "
                           + ", ".join(f"'{requests[i].keywords}'" for i in bare)
                           + "; searching again with the keywords alone.")
        for i, result in zip(bare, again, strict=True):
            hits[i] = _hits(result)
    details = _view(replay, hits, f"Search results: {_found(requests, hits)}. I will view these candidates "
                                  "to check their options and attributes.")
    judged = [judge(r, h, d, prefer_cheap=prefer_cheap)
              for r, h, d in zip(requests, hits, details, strict=True)]
    # Inside one shop the first page is all there is worth reading.
    partial = [i for i, candidates in enumerate(judged) if candidates and candidates[0].missing
               and len(hits[i]) == PAGE_SIZE and shop_id is None]
    if not partial:
        return judged
    more = [_hits(h) for h in replay.run(
        [_call("find_product", **{**searches[i]["parameters"], "page": 2}) for i in partial],
        " ".join(f"No candidate for '{requests[i].keywords}' has every requested word (the best, "
                 f"{judged[i][0].describe()}, lacks {', '.join(judged[i][0].missing)})." for i in partial)
        + " I will look at the next page of results.")]
    more_details = _view(replay, more, f"Second page: {_found([requests[i] for i in partial], more)}. "
                                       "I will view these as well.")
    for i, extra_hits, extra_details in zip(partial, more, more_details, strict=True):
        judged[i] = judge(requests[i], [*hits[i], *extra_hits], [*details[i], *extra_details],
                          prefer_cheap=prefer_cheap)
    return judged


def _comparison(request: Request, candidates: Sequence[Candidate], chosen: Candidate | None) -> str:
    if chosen is None:
        return f"For '{request.keywords}' I found no candidate."
    text = (f"For '{request.keywords}' {chosen.describe()} has {len(chosen.matched)} of "
            f"{len(chosen.matched) + len(chosen.missing)} requested terms")
    text += f" (missing: {', '.join(chosen.missing)})" if chosen.missing else ""
    rival = next((c for c in candidates if c.product_id != chosen.product_id), None)
    if rival is not None:
        reason = (f"it has only {len(rival.matched)} of them" if len(rival.matched) < len(chosen.matched)
                  else f"it costs {rival.price:g}" if rival.price > chosen.price
                  else "it ranks lower in the search")
        text += (f"; {rival.product_id} '{rival.hit.get('title', '')}' (price {rival.price:g}) fits less "
                 f"well: {reason}")
    return text + "."


def _fit(picks: Sequence[Candidate]) -> tuple[int, int]:
    """How well a basket fits: items with every requested word, then requested words in all."""
    return sum(1 for c in picks if not c.missing), sum(len(c.matched) for c in picks)


def _acceptable(candidate: Candidate) -> bool:
    """Has at least half of the requested words: a search inside one shop always finds *something*."""
    return 2 * len(candidate.matched) >= len(candidate.matched) + len(candidate.missing) > 0


def _shared_shop(per_request: Sequence[Sequence[Candidate]]) -> tuple[str, list[Candidate]] | None:
    """The shop with an acceptable candidate for every request that fits best (first in the first
    request's ranking on ties), with its best candidate per request."""
    best: tuple[tuple[int, int], str, list[Candidate]] | None = None
    for shop in dict.fromkeys(c.shop_id for c in per_request[0]):
        picks = [next((c for c in cands if c.shop_id == shop), None) for cands in per_request]
        chosen = [p for p in picks if p is not None and _acceptable(p)]
        if len(chosen) == len(picks) and (best is None or _fit(chosen) > best[0]):
            best = (_fit(chosen), shop, chosen)
    return (best[1], best[2]) if best else None


def _one_shop(replay: _Replay, requests: Sequence[Request], per_request: list[list[Candidate]],
              prefer_cheap: bool) -> tuple[str, list[Candidate]] | None:
    """The shop to buy everything from: among the candidates found, or by searching inside the shops
    of the first item's best candidates when that leaves an item without a full match."""
    best = _shared_shop(per_request)
    if best is not None and _fit(best[1])[0] == len(requests):
        return best
    shops = [c.shop_id for c in sorted(per_request[0], key=lambda c: bool(c.missing)) if _acceptable(c)]
    for shop in list(dict.fromkeys(s for s in shops if best is None or s != best[0]))[:SHOPS_TRIED]:
        first = next(c for c in per_request[0] if c.shop_id == shop)
        lead = (f"{first.describe()} answers the first item; I will look for the other items inside its shop "
                f"{shop}.")
        scoped = _search_and_judge(replay, requests[1:], shop_id=shop, prefer_cheap=prefer_cheap,
                                   intro="No shop I saw has a full match for every item. " + lead)
        if not all(cands and _acceptable(cands[0]) for cands in scoped):
            continue
        picks = [first, *(cands[0] for cands in scoped)]
        if best is None or _fit(picks) > _fit(best[1]):
            best = (shop, picks)
            per_request[1:] = scoped
        if _fit(picks)[0] == len(requests):
            break
    return best


def _within_budget(chosen: Sequence[Candidate], voucher: Voucher) -> bool:
    return fits_budget([c.price for c in chosen], [c.shop_id for c in chosen], voucher)


def _plan(conversation: Conversation) -> None:
    """Play the whole attempt; raises :class:`_Reply` with the next turn."""
    replay = _Replay(conversation)
    query = conversation.query
    requests = understand(query)
    voucher = read_voucher(query)
    one_shop = len(requests) > 1 and (voucher.voucher_type == "shop" if voucher else
                                      any(w in query.lower() for w in ("shop", "store", "seller")))
    intro = (f"The shopper asks for {len(requests)} item(s): "
             + "; ".join(_request_line(i + 1, r) for i, r in enumerate(requests))
             + (". They must come from one shop" if one_shop else "")
             + (f". Budget {voucher.budget:g} with a {voucher.voucher_type} voucher" if voucher else "")
             + ". I will search for each item with its filters.")
    per_request = _search_and_judge(replay, requests, shop_id=None, prefer_cheap=voucher is not None,
                                    intro=intro)
    chosen: list[Candidate | None] = [cands[0] if cands else None for cands in per_request]
    notes: list[str] = []
    if one_shop and all(per_request):
        shared = _one_shop(replay, requests, per_request, prefer_cheap=voucher is not None)
        if shared is not None:
            chosen = list(shared[1])
            notes.append(f"Shop {shared[0]} has a matching product for every item.")
        else:
            notes.append("No single shop sells every item; I recommend the best match for each.")
    if voucher is not None and all(c is not None for c in chosen):
        basket = [c for c in chosen if c is not None]
        total = sum(c.price for c in basket)
        verdict = "fits" if _within_budget(basket, voucher) else "does not fit"
        notes.append(f"The basket totals {total:g}; with the voucher it {verdict} the budget of "
                     f"{voucher.budget:g}.")
    ids = [c.product_id if c else "" for c in chosen]
    think = " ".join([*(_comparison(r, cands, c) for r, cands, c in zip(requests, per_request, chosen,
                                                                        strict=True)), *notes])
    status = "success" if any(ids) else "failure"
    replay.run([_call("recommend_product", product_ids=",".join(ids)), _call("terminate", status=status)],
               think + " Recommending " + (", ".join(i for i in ids if i) or "nothing") + " and finishing.")
    raise _Reply([_call("terminate", status=status)], "The recommendation is made; the dialogue is over.")


def _tagged(reply: _Reply) -> str:
    calls = json.dumps(reply.calls, ensure_ascii=False)
    return f"<think>{reply.think}</think>\n<tool_call>{calls}</tool_call>"


def _native(reply: _Reply) -> StubReply:
    calls = [{"name": call["name"], "arguments": call["parameters"]} for call in reply.calls]
    return StubReply(tool_calls=calls, reasoning=reply.think)


def react_policy(body: dict[str, Any]) -> StubReply:
    """The next turn of an LLM agent's conversation: native tool calls when the request offers ``tools``,
    tagged text otherwise."""
    try:
        _plan(Conversation.read(body))
    except _Reply as reply:
        return _native(reply) if body.get("tools") else StubReply(content=_tagged(reply))
    raise AssertionError("the plan always ends in a reply")  # pragma: no cover


# --- the sub-task agent's narrow model ---------------------------------------------------------


def extract_policy(body: dict[str, Any]) -> StubReply:
    """One line per requested item: ``keywords | price range or none | services or none``."""
    conversation = Conversation.read(body)
    lines = [f"{r.keywords} | {r.price or 'none'} | {','.join(r.services) or 'none'}"
             for r in understand(conversation.query)]
    return StubReply(content="\n".join(lines))


_CANDIDATE_LINE = re.compile(r"^\s*-?\s*(\S+)\s*\|(.*)$", re.MULTILINE)
_WANTED = re.compile(r"^Wanted:\s*(.*)$", re.MULTILINE)


def choose_policy(body: dict[str, Any]) -> StubReply:
    """The id of the candidate line sharing the most words with the ``Wanted:`` line (first on ties)."""
    conversation = Conversation.read(body)
    wanted_line = _WANTED.search(conversation.query)
    wanted = terms(wanted_line.group(1) if wanted_line else conversation.query)
    options = [(product_id, terms(rest)) for product_id, rest in _CANDIDATE_LINE.findall(conversation.query)]
    if not options:
        return StubReply(content="none")
    best = max(options, key=lambda option: len(wanted & option[1]))  # max keeps the first of equals
    return StubReply(content=best[0])


def shopping_policy(body: dict[str, Any]) -> StubReply:
    """Every reference agent's model: the sub-task and repeat markers pick the narrow policies, else ReAct."""
    system = Conversation.read(body).system
    if REPEAT_MARKER in system:
        return repeat_policy(body)
    if PARAPHRASE_MARKER in system:
        return paraphrase_policy(body)
    if CALL_MARKER in system:
        return call_policy(body)
    if CHOOSE_MARKER in system:
        return choose_policy(body)
    if EXTRACT_MARKER in system:
        return extract_policy(body)
    return react_policy(body)
