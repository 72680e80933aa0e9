"""A hostile no-LLM parser tuned on one recorded pass of a bank model's requests (docs/validity.md).

It plays a miner who read one past bank's requests (``arena bank build``'s model rewrites) and wrote
rules for that model's style on top of the writer-grammar parser (:mod:`benchmarks.validity_parser`),
whose search, matching, shop and voucher logic it reuses unchanged. What it adds, all phrasing rules
read off the style, none about a problem:

- the greeting and questions about the shop ("Which shop has them all?", "; can you find a shop that
  carries both?") are dropped, closings cut ("Thanks!", "What matters most is ..."), and so are shop
  mentions ("from one seller", "all from the same store");
- items the model starts with markers ("First, ...", "Second: ...", "Also, ...", "Lastly, I'd like ...",
  "The other is ...") are one item a marked sentence, the sentences after it part of it, and the
  sentences about the order ("I want 3 products.", "I'd like a few things with my voucher.") dropped;
  otherwise items are split at dash bullets, numbered lists, ordinals, follow-up sentences ("I also
  need ...", "plus another ..."), then the writer parser's joints; "another" names an item like "a";
- a request that names no shop, voucher, budget or count is one item (one-product requests);
- prices are read in the model's wordings (``127 to 185 php``, ``34-111 pesos``, ``above 117 PHP``,
  ``in the 654 to 960 php range``, ``I'm okay paying above ...``) and services by their key words with
  the filler around them (``that I can pay cash on delivery for``, ``on a LazFlash deal``, ``ships for
  free``); prices and services said before the first item (or in a closing) count for every item.

Tuned only on the first half of each category of one recorded pass (``--half first`` of
``recorded-banks-v2-a``); measured on the other pass's other half. An agent file for the validity
benchmark's ``--parser``: it imports the project parser, so it runs from the repository, not in a sandbox.
"""

from __future__ import annotations

import re
from typing import Any

from benchmarks import validity_parser as base
from benchmarks.validity_parser import Budget, Item, parse_budget
from shoppingbench.agent_sdk import ProxyClient

_CURRENCY = r"(?:php|pesos?|₱)"
_NUM = r"(\d+(?:,\d{3})*(?:\.\d+)?)"
# Words the model puts before a price: "priced", "that costs", "I'm okay paying", "my budget is", ...
_PRICE_LEAD = (r"(?:(?:,\s*|\s)(?:and |but |ideally |preferably )?(?:(?:that|which|it|they) )?(?:i'm |i am )?"
               r"(?:(?:costs?|costing|is priced|are priced|priced|for|at|with a price|a price|my budget is|"
               r"budget(?: is)?|okay (?:spending|paying)|fine if it's|hoping to spend|spend(?:ing)?|paying|"
               r"somewhere|in the|roughly|around|anywhere|ranging|range|priced at) )*)?")
_PRICES: tuple[tuple[str, str], ...] = (
    (rf"(?:between |from )?{_NUM} ?(?:-|–|to|and) ?{_NUM} ?{_CURRENCY}(?: range)?", "between"),
    (rf"(?:between |from )?{_CURRENCY} ?{_NUM} ?(?:-|–|to|and) ?(?:{_CURRENCY} ?)?{_NUM}(?: range)?",
     "between"),
    (rf"(?:over|above|more than|at least|no less than|upwards of|starting at|greater than|higher than) "
     rf"{_NUM} ?{_CURRENCY}", "low"),
    (rf"(?:under|below|less than|up to|no more than|at most|max(?:imum)?|within|cheaper than) {_NUM} ?"
     rf"{_CURRENCY}",
     "high"),
)
_SERVICE_WORDS: dict[str, str] = {
    "freeShipping": r"free (?:shipping|delivery)|ships? (?:for )?free|shipped (?:for )?free|"
                    r"shipping (?:is )?(?:free|included)|complimentary (?:shipping|delivery)",
    "COD": r"cash[- ]on[- ]delivery|\bcod\b|pay(?:ment)? on delivery|pay (?:in )?cash(?: when it arrives)?",
    "official": r"lazmall|official (?:store|shop|seller)",
    "flashsale": r"lazflash|flash (?:sale|deal)s?",
}
# The filler the model puts around a service: "that I can pay", "from", "on a", "... deal", "... available".
_SERVICE_LEAD = (r"(?:,\s*|\s)?(?:(?:and|but|also|ideally|preferably|if possible|plus) )*"
                 r"(?:(?:that|which|it|they)(?: is| are|'s|'re)? |that's |it's |i'd (?:like|prefer|want)"
                 r"(?: it)?"
                 r"(?: to)? |i (?:can|could|want to|need to|would like to) |can be |should (?:be |have |"
                 r"come )?)*"
                 r"(?:(?:with|from|on|in|via|through|by|under|sold on|sold|available(?: on| with| for| via)?|"
                 r"offering|offers?|supports?|has|have|comes? with|get|payable|paid|pay|be paid|"
                 r"be|is|are|also)(?: by| with| for| via| on)? )*(?:an? |the )?")
_SERVICE_TRAIL = (r"(?: (?:deals?|sale|service|perks|benefits|authenticity|authentic|store|shop|seller|o"
                  r"ption|"
                  r"available|included|if possible|too|as well|for|payment|offers?|discount|price|promo|"
                  r"guarantee|mall))*")
_SERVICES = {name: re.compile(f"{_SERVICE_LEAD}(?:{words}){_SERVICE_TRAIL}") for name, words in
             _SERVICE_WORDS.items()}
_SHOP_MENTION = re.compile(
    r",?\s*(?:(?:and |ideally |preferably |but )?(?:all |both |everything |all of them |each )?(?:\w+ )?"
    r"(?:(?:from|in|at|by|through) )(?:just )?(?:one|the same|a single|a|one single|the one|one and the same)"
    r" (?:shop|store|seller|order|place|vendor|checkout)(?: please)?|so \d+ items total|in one go)\b")
# A closing the model glues on, often without a full stop ("... free shipping What matters most is ...").
_CLOSING = re.compile(r"(?:(?<=[.!?])|(?<=[a-z0-9)])(?=\s+[A-Z]))\s+(?:thanks|thank you|what matters|wha"
                      r"t's most|"
                      r"most important|the most important|the main thing|it's important|above all|"
                      r"most of all|please make sure|the key (?:thing|part)|my priority|priority)\b.*$",
                      re.IGNORECASE | re.DOTALL)
_TRAILING_CLOSING = re.compile(r",? (?:and )?(?:most important(?: to me)?|what matters most|above all|"
                               r"what's most important)\b.*$")
_BULLET = re.compile(r"(?:^|(?<=[\s:?!.]))-\s+")
_NUMBERED = re.compile(r"(?:^|(?<=[\s:?!.]))(?:\d{1,2}[.)]|\(\d{1,2}\))\s+(?=[a-z<§])")
_ORDINALS = re.compile(r"(?:[.,;]\s*|\s)(?:and )?(?:then |also )?(?:the )?(?:first|second|third|fourth|fifth|"
                       r"last|next|other)(?: one| item| thing)?(?:,| is| should be| would be| being|:)\s+"
                       r"(?:(?:a|an|one|some) )?")
_FOLLOW_UPS = re.compile(r"(?:(?<=[.!?])\s+|,? and |, )(?:also,? |additionally,? |plus,? |then,? |lastly,? |"
                         r"finally,? |on top of that,? )?(?:i(?:'d| would)? also (?:need|want|like|get)("
                         r"?: to get)?|"
                         r"i(?:'m| am) also (?:looking for|after)|i also need|also need|also,? (?:get|fi"
                         r"nd) me|"
                         r"i'll also need|i want|i need|plus|and also|along with|as well as)\s+(?=(?:a|a"
                         r"n|some|"
                         r"another|one|two|the|\d+)\b)")
_OPENING = re.compile(
    r"^(?:(?:hi|hey|hello)(?: there)?[,!.]?\s+)?(?:(?:i'm|i am|we're) )?(?:(?:could|can|would) you (?:pl"
    r"ease )?"
    r"(?:help me )?)?(?:please )?(?:help me )?(?:looking for|searching for|shopping for|after|need|want("
    r"?: to "
    r"(?:buy|get|find|order))?|find(?: me)?|show me|get me|get|buy|i'd like(?: to (?:buy|get|find|order))?|"
    r"i need|i want|i'm after|where can i (?:get|find|buy)|is there|do you have|hoping to find|"
    r"putting together [^,:]*?(?: and need)?)\s+")
_SHOP_OPENING = re.compile(r"^(?:one |a |any )?(?:single )?(?:shop|store|seller|vendor)(?: that| which| who)?"
                           r" (?:sells|has|carries|offers|stocks|with)(?: both| all of)?\s*:?\s*")
_LIST_INTRO = re.compile(r"^[^:]{0,90}?:\s+")


def _bound(value: str) -> str:
    return f"{float(value.replace(',', '')):g}"


def take_price(text: str) -> tuple[str | None, str]:
    """The price filter the model's wording states and the text without it."""
    for pattern, kind in _PRICES:
        match = re.search(_PRICE_LEAD + pattern, text)
        if match is None:
            continue
        rest = f"{text[:match.start()]} {text[match.end():]}"
        numbers = [g for g in match.groups() if g]
        if kind == "between":
            return f"{_bound(numbers[0])}-{_bound(numbers[1])}", rest
        return (f"{_bound(numbers[0])}-" if kind == "low" else f"-{_bound(numbers[0])}"), rest
    return None, text


def take_services(text: str) -> tuple[list[str], str]:
    """The services the text names by their key words, and the text without them and their filler."""
    found = []
    for name, pattern in _SERVICES.items():
        if pattern.search(text):
            found.append(name)
            text = pattern.sub(" ", text)
    return found, text


def _tidy(text: str) -> str:
    text = re.sub(r"\s+([,.;?!])", r"\1", " ".join(text.split()))
    return re.sub(r"(?:^|\s)(?:and|,)+(?=\s*$)", "", text).strip(" ,.;:!?-")


def _bulleted_item(phrase: str) -> Item:
    """A bullet: the kind, then comma-separated values (prices and services become filters)."""
    price, rest = take_price(phrase)
    services, rest = take_services(rest)
    parts = [_tidy(part) for part in re.split(r",| \band\b (?=[^,]*$)", rest)]
    parts = [p for p in parts if p]
    head = re.sub(r"^(?:an?|some|one) ", "", parts[0]) if parts else _tidy(rest)
    return Item(name=head, values=parts[1:], price=price, services=services)


def _prose_item(phrase: str) -> Item:
    """A phrase of running text, read as the writer parser reads an item once price and services are out."""
    price, rest = take_price(phrase)
    services, rest = take_services(rest)
    item = base.parse_item(_tidy(rest))
    return Item(name=item.name, values=item.values, price=price, services=services)


def _cut_closing(wish: str) -> str:
    return _TRAILING_CLOSING.sub("", _CLOSING.sub("", wish).lower()).strip()


def _without_opening(text: str) -> str:
    """The text from its first item on: the greeting, the ask and the shop it is asked of dropped."""
    text = _OPENING.sub("", text, count=1)
    text = _SHOP_OPENING.sub("", text, count=1)
    return re.sub(r"^(?:these|the following|this)(?: \w+)?\s*[:,]?\s+", "", text)


def _listed(text: str) -> tuple[str, list[str]] | None:
    """The intro and the items of a dash-bulleted or numbered list, ``None`` for running text."""
    for marker in (_BULLET, _NUMBERED):
        parts = marker.split(text)
        if len(parts) >= 3 or (len(parts) == 2 and not parts[0].strip()):
            return parts[0], [p for p in (part.strip(" ,;") for part in parts[1:]) if p]
    return None


def _running(text: str) -> list[str]:
    """The item phrases of running text: ordinals and follow-up sentences, then the writer's joints."""
    if re.match(r"^[^:]{0,90}?:\s+(?:an?|some|one)\b", text):
        text = _LIST_INTRO.sub("", text, count=1)
    pieces = [p for p in _ORDINALS.split(" " + text) if p.strip(" .,;")]
    if len(pieces) > 1 and not re.search(r"\b(?:an?|some|one)\b", pieces[0]):
        pieces = pieces[1:]  # the ask before "The first is ..." names no item
    phrases: list[str] = []
    for index, piece in enumerate(pieces):
        for part_index, part in enumerate(_FOLLOW_UPS.split(piece)):
            part = part.strip(" .,;")
            if part:
                part = _without_opening(part) if index == part_index == 0 else part
                phrases += base._framed(part + ".") if part else []
    return [p for p in phrases if p.strip(" .,")]


def _masked(text: str) -> tuple[str, list[str]]:
    """``text`` with each price phrasing as ``<n>`` so its "and" or "-" never splits items."""
    said: list[str] = []

    def mask(match: re.Match[str]) -> str:
        said.append(match.group(0))
        return f" <{len(said) - 1}> "

    for pattern, _ in _PRICES:
        text = re.sub(pattern, mask, text)
    return " ".join(text.split()), said


def _unmasked(phrase: str, said: list[str]) -> str:
    return re.sub(r"<(\d+)>", lambda m: said[int(m.group(1))], phrase)


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'(]?[A-Z0-9])|:\s+(?=(?:first|one is)\b)", re.IGNORECASE)
# A sentence that starts an item: "First, ...", "Second: ...", "Also, ...", "Lastly, I'd like ...", "The other
# is ...", with the ask that may follow the marker.
_MARKER = re.compile(
    r"^(?:(?:and |then )?(?:first(?:ly)?|second(?:ly)?|third(?:ly)?|fourth|fifth|next|also|additionally|plus|"
    r"lastly|finally|last|on top of that)\b(?: of all)?[,:]?\s*(?:(?:i(?:'d| would| also)? (?:also )?"
    r"(?:need|want|like)(?: to (?:get|buy|find))?|i'm (?:also )?(?:looking for|after)|get me|find me|"
    r"look for|search for|there'?s|it'?s)\s+)?|(?:the )?(?:one|other|first one|second one|last one)\s+"
    r"(?:is|should be|would be|being)\s+)", re.IGNORECASE)
# An unmarked sentence about the order, not an item: "I want all of these from one shop.", "Which shop has
# them all?", "I'd like a few things with my voucher."
_ABOUT_ORDER = re.compile(r"\b(?:shops?|stores?|sellers?|vendors?|voucher|order|things|items|products|these|"
                          r"everything|both|all of (?:them|these))\b", re.IGNORECASE)

_COUNTLESS_NUMBER = re.compile(r"\d(?!\s*(?:products?|items?|things?)\b)")
"""A number that is not a count of the order's items ("I need 3 products.")."""


def _marked_phrases(wish: str) -> list[str] | None:
    """The item phrases of a request that starts its items with markers ("First, ... Also, ..."), each
    marked sentence an item and the sentences after it part of it; ``None`` for any other request."""
    sentences = [s.strip() for s in _SENTENCE.split(wish.strip()) if s.strip()]
    if sum(1 for s in sentences if _MARKER.match(s)) == 0:
        return None
    phrases: list[str] = []
    for sentence in sentences:
        marker = _MARKER.match(sentence)
        if marker:
            phrases.append(sentence[marker.end():])
        elif _ABOUT_ORDER.search(sentence) and not _COUNTLESS_NUMBER.search(sentence) and not take_services(
                sentence.lower())[0]:
            continue
        elif phrases:
            phrases[-1] += " " + sentence
        else:
            phrases.append(sentence)
    return phrases if len(phrases) > 1 else None


# A question about the shop, as a sentence or a closing clause: "Which shop has them all?", "; can you find a
# shop that carries both?"
_SHOP_QUESTION = re.compile(r"(?:(?<=[.!?])\s+|[;,]\s*|\s+)(?:so |and )?(?:can|could|would|which|is|are|does|"
                            r"do|any|what|where)\b[^.?!;:]*\b(?:shops?|stores?|sellers?)\b[^.?!:]*\?",
                            re.IGNORECASE)
# A request for several products says so: a shop or a voucher order, or a count of its items.
_SEVERAL = re.compile(r"\b(?:shops?|stores?|sellers?|vouchers?|budget|both|items|products|things|first|"
                      r"second|also)\b", re.IGNORECASE)
_GREETING = re.compile(r"^(?:hi|hey|hello)(?: there)?[!,.]?\s+", re.IGNORECASE)


def _clean(wish: str) -> str:
    """The request without its greeting and its questions about the shop; "another" as "a" (an item)."""
    wish = _GREETING.sub("", _SHOP_QUESTION.sub("", wish.strip()))
    return re.sub(r"\banother\b", "a", wish)


def parse_query(query: str) -> tuple[list[Item], Budget | None]:
    """The items a bank-model query asks for and its voucher block (``None`` without one)."""
    wish, _, voucher = query.partition("My budget")
    wish = _clean(wish)
    closing = _CLOSING.search(wish)
    shared_services = take_services(closing.group(0).lower())[0] if closing else []
    marked = _marked_phrases(wish)
    if marked is not None:
        items = [_prose_item(_tidy(_SHOP_MENTION.sub("", _cut_closing(p)))) for p in marked]
        return _shared(items, None, shared_services), parse_budget(voucher)
    text = _SHOP_MENTION.sub("", _cut_closing(wish.strip()))
    masked, said = _masked(" ".join(text.split()))
    listed = _listed(masked)
    if listed is not None:
        intro, phrases = listed
        items = [_bulleted_item(_unmasked(p, said)) for p in phrases]
        shared_price, rest = take_price(_unmasked(intro, said))
        shared_services += take_services(rest)[0]
    else:
        items = [_prose_item(_unmasked(p, said)) for p in _running(masked)]
        shared_price = None
    items = [item for item in items if item.name] or [Item(name=_tidy(text))]
    if not _SEVERAL.search(query):
        items = [_merged(items)]
    return _shared(items, shared_price, shared_services), parse_budget(voucher)


def _merged(items: list[Item]) -> Item:
    """One item from the pieces a one-product request was cut into: the first names it, the rest qualify
    it."""
    first = items[0]
    values = [*first.values, *(v for item in items[1:] for v in [item.name, *item.values])]
    services = list(dict.fromkeys(s for item in items for s in item.services))
    price = next((item.price for item in items if item.price), None)
    return Item(name=first.name, values=values, price=price, services=services)


def _shared(items: list[Item], price: str | None, services: list[str]) -> list[Item]:
    """``items`` with a price and services said once for all of them added to each."""
    for item in items:
        item.price = item.price or price
        item.services += [s for s in services if s not in item.services]
    return items


def agent_main(problem: dict[str, Any], client: ProxyClient | None = None) -> list[dict[str, Any]]:
    """Solve one problem from its ``query`` alone, as the project parser does with this parse."""
    return base.agent_main(problem, client, parse=parse_query)
