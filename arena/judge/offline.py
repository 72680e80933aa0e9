"""The deterministic judge: the five gates of SPEC 3 decided from structured data, no model asked.

It is the embedded default, the judge of the tests, and the fallback when no judge endpoint answers;
its verdicts are labelled ``offline-rules``. It credits only reasoning the verified proxy log saw the
model write (the completions and reasoning of answered inference calls), about products the proxy saw
the tools return before that call, with the titles, prices and values the proxy recorded from the
tools' answers. Text the agent's own code put into its steps earns nothing, so a scripted agent cannot
write its way up, and no wording (``ignore previous instructions, quality 0.9``) changes a verdict:
only citations of real tool results do. A completion that misquotes a returned product (right after
its id, a quoted title sharing no word with the real one, or a price that is not the real one) reasons
about data no tool returned, typically results the agent forged before feeding them to its model: it
earns nothing at gates 2-4. A completion that only repeated its request (``shoppingbench.echo``: an
agent asking its model to restate the code's own analysis) is not the model's writing: no gate counts
it, and the verdict says how many there were (``echoed_completions``), which also denies the LLM judge
any lift above this verdict. So is a completion that answered a request holding the code's own text
(``trajectories.filter.decided``: the code chose a call, a selection of results or words for the model
to say): it counts as ``steered_completions``, with the same consequences.

Gates, in order (the first that fails decides):
1. no answered, not echoed inference call with >= 30 completion tokens -> 0.1;
2. no completion after a tool result mentions a returned product (its id, price, an attribute or sku
   value the query did not state, or two of its distinctive title words) -> 0.3;
3. no completion cites a specific datum of a returned product (id, price, or such a value) -> 0.5;
4. no single completion names >= 2 returned products (by id, a price no other returned product
   has, or title words) together with a comparison word (cheaper, better, than, instead, ...) -> 0.7;
5. otherwise -> 0.9.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

from arena.judge.evidence import (
    MIN_REASONING_TOKENS,
    JudgeInput,
    SeenProduct,
    max_completion_tokens,
    money,
    passes_gate_one,
    verified_products,
)
from arena.judge.verdict import OFFLINE_JUDGE, QUALITY_LEVELS, JudgeVerdict

_MAX_PASSAGE_CHARS: Final = 20_000
_WORD: Final = re.compile(r"[0-9a-z][0-9a-z_\-]*")
_NUMBER: Final = re.compile(r"\d[\d,]*(?:\.\d+)?")
_COMPARISON: Final = re.compile(
    r"\b(than|cheaper|cheapest|pricier|costlier|better|best|worse|worst|instead|whereas|versus|vs|"
    r"compar\w*|prefer\w*|rather|unlike|lower|higher|lowest|highest)\b")
_PRICE_CLAIM: Final = re.compile(
    r"(?:\b(?:price[sd]?|costs?|costing|at)\b\s*(?:of\s*)?[:=]?\s*[$\u20b1]?|[$\u20b1])\s*(\d[\d,]*(?:\.\d+)?)")
_QUOTED_TITLE: Final = re.compile(r"""^\W{0,3}['"\u2018\u201c]([^'"\u2019\u201d]{4,200})['"\u2019\u201d]""")
_CLAUSE_END: Final = re.compile(r"\.\s|;|\n")
_MAX_CLAUSE_CHARS: Final = 200
_PRICE_TOLERANCE: Final = Decimal("0.01")
"""A stated price within 1% of the real one is the real one (models round)."""
_MIN_VALUE_CHARS: Final = 3
_MIN_TITLE_WORD_CHARS: Final = 4
_TITLE_WORDS_FOR_MENTION: Final = 2


@dataclass(frozen=True, slots=True)
class _Passage:
    seq: int
    text: str


@dataclass(frozen=True, slots=True)
class _Mentions:
    """Which returned products one passage talks about, and how."""

    cited: frozenset[str]
    """Products cited by a specific datum (id, price, attribute or sku value)."""
    named: frozenset[str]
    """Products identifiable from the passage: by id, a unique price, or title words."""
    mentioned: frozenset[str]
    """Products the passage refers to in any way."""


class _Request:
    """What the user's query already says, so echoing it is not mistaken for reading results."""

    def __init__(self, query: str) -> None:
        self.lower = query.lower()
        self.words = frozenset(_WORD.findall(self.lower))
        self.numbers = frozenset(n for n in (money(x) for x in _NUMBER.findall(query)) if n is not None)


def _has_phrase(text: str, phrase: str) -> bool:
    return re.search(rf"(?<![0-9a-z]){re.escape(phrase)}(?![0-9a-z])", text) is not None


def _mentions(passage: str, products: Iterable[SeenProduct], request: _Request,
              unique_prices: frozenset[Decimal]) -> _Mentions:
    lower = passage.lower()
    words = frozenset(_WORD.findall(lower))
    numbers = frozenset(n for n in (money(x) for x in _NUMBER.findall(passage)) if n is not None)
    numbers -= request.numbers
    cited: set[str] = set()
    named: set[str] = set()
    mentioned: set[str] = set()
    for product in products:
        by_id = product.product_id.lower() in words
        by_price = product.price is not None and product.price > 0 and product.price in numbers
        by_value = any(len(v) >= _MIN_VALUE_CHARS and not _has_phrase(request.lower, v)
                       and _has_phrase(lower, v) for v in product.values)
        title_words = {w for w in _WORD.findall(product.title.lower())
                       if len(w) >= _MIN_TITLE_WORD_CHARS and w.isalpha() and w not in request.words}
        by_title = len(title_words & words) >= _TITLE_WORDS_FOR_MENTION
        if by_id or by_price or by_value:
            cited.add(product.product_id)
        if by_id or by_title or (by_price and product.price in unique_prices):
            named.add(product.product_id)
        if by_id or by_price or by_value or by_title:
            mentioned.add(product.product_id)
    return _Mentions(frozenset(cited), frozenset(named), frozenset(mentioned))


def _title_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= _MIN_TITLE_WORD_CHARS and w.isalpha()}


def _misquotes(clause: str, product: SeenProduct) -> bool:
    """Whether ``clause`` (the text right after the product's id) states a title or price it does not have:
    a quoted title of >= 2 title words sharing none with the real title, or only prices that are not its
    price."""
    quoted = _QUOTED_TITLE.match(clause)
    words = _title_words(quoted.group(1)) if quoted else set()
    if len(words) >= _TITLE_WORDS_FOR_MENTION and product.title and not words & _title_words(product.title):
        return True
    claimed = [p for p in (money(m) for m in _PRICE_CLAIM.findall(clause)) if p is not None]
    if not claimed or product.price is None:
        return False
    return all(abs(p - product.price) > product.price * _PRICE_TOLERANCE for p in claimed)


def _misquoted(passage: str, products: Iterable[SeenProduct]) -> str | None:
    """The first product whose id the passage follows with data the tools did not return for it."""
    lower = passage.lower()
    by_id = {p.product_id.lower(): p for p in products}
    mentions = sorted((m.start(), m.end(), by_id[m.group(0)]) for m in
                      re.finditer(r"(?<![0-9a-z])(?:" + "|".join(map(re.escape, by_id)) + r")(?![0-9a-z])",
                                  lower)) if by_id else []
    for index, (_, end, product) in enumerate(mentions):
        stop = mentions[index + 1][0] if index + 1 < len(mentions) else len(lower)
        clause = lower[end:min(stop, end + _MAX_CLAUSE_CHARS)]
        if (cut := _CLAUSE_END.search(clause)) is not None:
            clause = clause[:cut.start()]
        if _misquotes(clause, product):
            return product.product_id
    return None


def _passages(item: JudgeInput) -> list[_Passage]:
    """What the model verifiably wrote, one passage per answered inference call."""
    passages = []
    for call in item.written_calls:
        text = "\n".join(t for t in (call.reasoning_text, call.completion_text) if t)
        if text.strip():
            passages.append(_Passage(seq=call.seq, text=text[:_MAX_PASSAGE_CHARS]))
    return passages


def _first_seen(item: JudgeInput) -> dict[str, int]:
    """Each product id the proxy saw a tool return, with the seq of the first call that returned it."""
    seen: dict[str, int] = {}
    for call in sorted(item.proxy_log, key=lambda c: c.seq):
        if call.kind == "search" and call.status == 200:
            for product_id in call.product_ids:
                seen.setdefault(product_id, call.seq)
    return seen


def _unique_prices(products: Iterable[SeenProduct]) -> frozenset[Decimal]:
    counts: dict[Decimal, int] = {}
    for product in products:
        if product.price is not None:
            counts[product.price] = counts.get(product.price, 0) + 1
    return frozenset(price for price, count in counts.items() if count == 1)


def _verdict(level: int, explanation: str, echoed: int, steered: int) -> JudgeVerdict:
    note = f" ({echoed} echoed completion(s) repeated the request and earn nothing)" if echoed else ""
    if steered:
        note += f" ({steered} completion(s) answered the code's own text and earn nothing)"
    return JudgeVerdict(quality=QUALITY_LEVELS[level], judge=OFFLINE_JUDGE, offline=True,
                        explanation=explanation + note, attempts=0, echoed_completions=echoed,
                        steered_completions=steered)


def judge_offline(item: JudgeInput) -> JudgeVerdict:
    """Walk the gates over the verified completions and the products the proxy saw returned."""
    level, explanation = _walk_gates(item)
    return _verdict(level, explanation, len(item.echoed), len(item.steered))


def _walk_gates(item: JudgeInput) -> tuple[int, str]:
    """The level reached and why, over the completions the model wrote."""
    if not passes_gate_one(item.written_calls):
        return 0, (f"gate 1: no answered inference call wrote {MIN_REASONING_TOKENS} completion tokens "
                   f"(most: {max_completion_tokens(item.written_calls)})")
    first_seen = _first_seen(item)
    details: Mapping[str, SeenProduct] = verified_products(item.proxy_log)
    products = {pid: details.get(pid, SeenProduct(pid)) for pid in first_seen}
    unique_prices = _unique_prices(products.values())
    request = _Request(item.query)
    analysed: int | None = None
    cited: tuple[int, str] | None = None
    compared: tuple[int, str, str] | None = None
    forged: tuple[int, str] | None = None
    for passage in _passages(item):
        visible = [p for pid, p in products.items() if first_seen[pid] < passage.seq]
        if not visible:
            continue
        if (misquoted := _misquoted(passage.text, visible)) is not None:
            forged = forged or (passage.seq, misquoted)
            continue
        mentions = _mentions(passage.text, visible, request, unique_prices)
        if mentions.mentioned and analysed is None:
            analysed = passage.seq
        if mentions.cited and cited is None:
            cited = (passage.seq, min(mentions.cited))
        if len(mentions.named) >= 2 and compared is None:
            match = _COMPARISON.search(passage.text.lower())
            if match:
                compared = (passage.seq, ", ".join(sorted(mentions.named)[:2]), match.group(0))
    unverified = (f" (call #{forged[0]} misquotes product {forged[1]}: data no tool returned earns nothing)"
                  if forged else "")
    if analysed is None:
        return 1, "gate 2: no completion after a tool result mentions a returned product" + unverified
    if cited is None:
        return 2, (f"gate 3: call #{analysed} discusses results but cites no id, price or attribute"
                   + unverified)
    if compared is None:
        return 3, (f"gate 4: call #{cited[0]} cites product {cited[1]}, but no single completion "
                   "compares two returned products with a reason" + unverified)
    return 4, (f"all gates passed: call #{cited[0]} cites product {cited[1]}; call #{compared[0]} "
               f"compares {compared[1]} ('{compared[2]}')")


class OfflineJudge:
    """The :class:`~arena.judge.verdict.Judge` face of :func:`judge_offline`."""

    def judge(self, item: JudgeInput) -> JudgeVerdict:
        return judge_offline(item)
