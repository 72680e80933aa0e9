"""A hostile no-LLM parser of the generator's wording: the agent a miner who read the writer would write.

It is the validity benchmark's probe (``benchmarks.validity``): if it does much better on generated
problems than on real ones, race scores measure clause parsing, not shopping. Everything it knows is
copied from the writer's public phrasing data (``shoppingbench/generator/writer/phrasing.json``) and
code, as a miner would copy it:

- the voucher block is cut at ``My budget``; the query's frame (``Find a shop offering {items}.``, the
  listed ``First, ... Second, ...`` frames, the split voucher frames) is matched and removed;
- items are split where a joint (``, `` / `` and `` / ``, and ``) is followed by the article the writer
  puts before a kind (``a``, ``an``, ``some``, ``a pair of``) or by a plural, at the writer's other item
  joints (``; ``, ``, as well as ``, ``, and also ``), its follow-up sentences (``Also, look for ...``),
  ordinals (``First, ... Lastly, ...``) and numbers (``1) ...``);
- in each item the price phrase and the service phrases (the lexicon's exact phrasings) become
  ``find_product`` filters; every clause after the kind is matched against the clause templates to
  recover the stated value; the kind and the values are the search words (exactly the writer's own
  ``search_terms``);
- candidates are viewed with ``view_product_information`` and the one with most catalog values (its best
  sku option's and its attributes') that the item's words mention in an everyday form wins (later pages
  when none carries all);
  a shop problem takes the shop with the best match for every item (searched shop by shop), a voucher
  problem the cheaper of equal matches.

Tuned only on problems generated over the bundled sample world, never on the calibration set. A
standalone agent file: the standard library and the agent SDK only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shoppingbench.agent_sdk import ProxyClient, create_dialogue_step, generate_tool_call_id

VIEWED = 10
PAGES = 3
SHOPS_TRIED = 5
_CURRENCY = r"(?:pesos|php)"
_NUM = r"(\d+(?:\.\d+)?)"
# What may lead a price phrasing: "priced", "that costs", "costs", "is priced", "with a price ranging", ...
_LEAD = (r"(?:(?:that )?(?:costs?|is priced|are priced|priced|costing|for|with a price(?: ranging| range)?|"
         r"(?:with|at) a price|price) )?")
_PRICES: tuple[tuple[str, str], ...] = (
    (rf"{_LEAD}(?:between|from|of|within)? ?{_NUM} (?:and|to) {_NUM} {_CURRENCY}", "between"),
    (rf"in the {_NUM}(?: to |-){_NUM} {_CURRENCY} range", "between"),
    (rf"costing {_NUM}-{_NUM} {_CURRENCY}", "between"),
    (rf"{_LEAD}(?:under|below|less than|cheaper than|costing no more than|no more than|up to) {_NUM} "
     rf"{_CURRENCY}", "high"),
    (rf"{_LEAD}(?:over|above|costing more than|more than) {_NUM} {_CURRENCY}", "low"),
)
_SERVICES: dict[str, tuple[str, ...]] = {
    "freeShipping": ("that comes with free shipping", "with free shipping included", "with free shipping",
                     "with free delivery", "that ships for free", "with shipping included",
                     "with complimentary shipping"),
    "COD": ("with a cash on delivery option", "that supports cash on delivery",
            "available for cash on delivery", "with cash on delivery", "that i can pay for on delivery",
            "that can be paid with cash on delivery", "with cod available", "with pay on delivery",
            "that allows cash on delivery", "available with cash on delivery",
            "that supports pay on delivery",
            "that offers cash on delivery"),
    "official": ("with lazmall authenticity and easy returns", "from an official lazmall store",
                 "with lazmall service", "with lazmall perks", "available on lazmall", "from lazmall",
                 "from an official store", "sold on lazmall", "from a lazmall store",
                 "from an official shop", "with lazmall benefits", "with lazmall service included",
                 "from lazmall for guaranteed authenticity"),
    "flashsale": ("with lazflash deals", "on a lazflash deal", "with lazflash perks", "in a lazflash sale",
                  "with a lazflash discount", "on flash sale", "in a flash sale", "with a lazflash deal",
                  "on a limited-time flash deal", "with lazflash offers", "available with lazflash deals",
                  "with lazflash limited-time deals", "available with lazflash"),
}
_FRAMES = (
    "looking for {}.", "i need {}.", "can you find {}?", "show me {}.", "i'm looking for {}.",
    "help me find {}.", "i want to buy {}.", "find me {}.", "do you have {}?", "searching for {}.",
    "i'd like {}.", "please find {}.", "any options for {}?", "i'm shopping for {}.",
    "can you help me find {}?", "i'm searching for {}.", "show me options for {}.",
    "find a shop offering {}.", "find shops selling {}.", "i'm looking for a shop that sells {}.",
    "find shops offering these items: {}", "looking for a shop offering these items: {}",
    "i need one store that sells the following: {}",
    "is there a single store that sells {}?", "i want to buy {} from the same shop.",
    "show me a store that has {}.", "looking for one shop with {}.", "which seller has {}?",
    "can you find a shop that carries {}?", "i need {}, all from one store.", "i want to get {}.",
    "help me buy {}.", "find shops offering multiple items where: {}", "i need one shop for these: {}",
    "looking for a store that sells all of the following. {}", "find a shop that has the following: {}",
    "i'm looking for a shop that offers these items: {}", "looking for a shop with {}.",
    "i need a store that has {}.", "i'm looking for a few products: {}",
    "find these items for me: {}", "i need the following: {}",
 "find a shop that sells {}.", "i'm looking for a shop that offers {}.",
 "find a shop offering all of these: {}",
 "i'm looking for a shop that offers several items: {}", "find a shop that offers these items: {}",
 "find shops offering these products: {}")
# A further item in its own sentence ("Also, look for {item}."): the sentence starts a new item phrase.
_FOLLOWUP = re.compile(r"(?<=[.?])\s+(?:(?:also|additionally|next|plus),? (?:look for|search for|i need|"
                       r"i want|find|i'm looking for|show me|need|searching for) |i also need |"
                       r"on top of that, i need |i'd also like )")
_NUMBERED = re.compile(r"(?:^|(?<=[.:;])\s)(?:\d[).]|\(\d\))\s+")
_SURE_ITEM_JOINT = re.compile(r",? as well as |,? and also |; and |; ")
_CLOSERS = ("all from the same seller, please.", "they should all come from one store.",
            "please show shops that sell all of them.", "i'd like to order them together from one shop.",
            "can you help me find a store that sells them all?",
            "please show me shops that carry all of these.", "can you help me find these products?",
            "please show me good options.", "please show me shops that have all these products.",
            "show only shops that sell all these items.", "all products should be from the same seller.",
            "can you help me find a store that sells all of them?",
            "please show me options within my budget.")
_SHARED_SERVICES = [re.compile(r"(?:^|\s)" + re.escape(frame.replace("{}", "@")).replace("@", "(.+?)") + "$")
                    for frame in ("please only show options {}.", "i only want items {}.",
                                  "all of them should come {}.", "please include only those {}.")]
_DETACHED_INTROS = ("find a shop offering both {}.", "i need one store that sells {}.",
                    "looking for a shop that has {}.", "is there a seller with {}?",
                    "i want to buy {} from the same shop.", "i'm looking for {}.", "i need {}.",
                    "i want to buy {}.", "help me find {}.", "find a shop offering {}.",
                    "looking for a shop that has both {}.", "is there a seller with both {}?")
_DETACHED_ITEMS = ("for the {}, look for one {}.", "the {} should be one {}.", "i want the {} {}.",
                   "for the {}, i'd like one {}.", "the {} i need is one {}.", "for the {}, i want it {}.",
                   "the {} should come {}.", "as for the {}, i'd like it {}.",
                   "for the {}, it should be one {}.")
_ORDINAL = re.compile(r"(?:^|\s)(?:first|second|third|fourth|lastly|finally)[,:]\s+(?:i want\s+)?")
_CLAUSE_WORDS = ("in|with|made|from|by|for|that|whose|colored|size|featuring|suitable|compatible|sold|"
                 "crafted|imported|priced|costing|under|below|over|above|between|up|on|available|cheaper")
# The writer's shopper words for keys: a clause may say one before or after its value ("model volvo").
_KEY_WORDS = frozenset({
    "age", "blade", "brand", "capacity", "collar", "color", "design", "dial", "diameter", "fabric", "finish",
    "fit", "flavor", "heel", "height", "length", "lens", "material", "model", "neck", "neckline", "occasion",
    "origin", "pattern", "plug", "power", "scent", "season", "shape", "size", "sleeves", "stone", "strap",
    "style", "taste", "theme", "thickness", "voltage", "volume", "warranty", "wattage", "weight", "wheel",
    "width"})
_KEY_WORD = "|".join(sorted(_KEY_WORDS))
# A keyed clause after a joint ("a cowl neck collar", "a 27 diameter") is not an item.
_KEYED_AFTER = rf"(?!(?:a|an) (?:[a-z0-9#%+./-]+ ){{0,3}}(?:{_KEY_WORD})(?:[,.?]| and |$))"
# Before an article, or before words no clause, price or service phrasing starts with that end in a plural
# ("coin banks") followed by a clause or the end: an item asked for in the plural without an article.
_ITEM_JOINT = re.compile(
    rf"(?:,? and |, ){_KEYED_AFTER}(?=(?:a|an|some|a pair of) |(?!(?:{_CLAUSE_WORDS})\b)"
    rf"(?:[a-z0-9-]+ ){{0,4}}[a-z0-9-]+s(?:[,.?]| and | (?:{_CLAUSE_WORDS})\b|$))")
_ARTICLE = re.compile(r"^(?:both )?(?:a pair of|some|an|a) ")
_CLAUSE_JOINT = re.compile(r",? and |, |\s*\|\s*")
_CLAUSE_TEMPLATES = (
    "in the color {}", "in {} color", "colored {}", "in size {}", "in a {} size", "size {}", "made of {}",
    "made from {}", "with {} material", "with a {} pattern", "in a {} design", "with a {} print",
    "in a {} pattern", "{}-patterned", "in a {} style", "with a {} look", "in {} style", "from the brand {}",
    "made by {}", "from {}", "by {}", "that fits {}", "suitable for {}", "compatible with {}", "for {}",
    "crafted from {}", "made in {}", "imported from {}", "with {} origin", "with the {} feature",
    "in {} flavor", "with {} flavor", "in the {} variety", "{}-flavored", "in a {} pack", "in the {} option",
    "sold as {}", "that is {}", "featuring {}", "with a {} option", "whose {} is {}", "with the {} {}",
    "{}: {}", "with a {}", "with {}", "in {}",
)
_SIZE_WORDS = {"extra extra small": "xxs", "extra small": "xs", "small": "s", "medium": "m", "large": "l",
               "extra large": "xl"}
_VARIANTS = {"sleeve": "sleeves", "stripe": "striped", "texture": "textured", "embroidery": "embroidered",
             "print": "printed", "male": "men", "female": "women", "unisex": "men and women",
             "shockproof": "shock-proof", "antibac": "antibacterial", "freesize": "free size",
             "pcs": "pieces", "pc": "piece", "kids": "children", "waterproof": "water-proof",
             "multicolor": "multi-colored"}
_PLAIN = {said: raw for raw, said in _VARIANTS.items() if " " not in said}
_SYSTEMS = {"eu size": "eu", "us size": "us", "uk size": "uk", "waist": "waist", "asian size": "asia"}


def _template(pattern: str) -> re.Pattern[str]:
    parts = [re.escape(part) for part in pattern.split("{}")]
    return re.compile("^" + "(.+?)".join(parts) + "$")


# The frame with most fixed text first: "i want to buy {} from the same shop." before "i want to buy {}.".
_FRAME_PATTERNS = [_template(frame) for frame in sorted(_FRAMES, key=lambda f: -len(f.replace("{}", "")))]
_CLAUSE_PATTERNS = [_template(template) for template in _CLAUSE_TEMPLATES]
_INTRO_PATTERNS = [_template(intro) for intro in _DETACHED_INTROS]
_DETACHED_PATTERNS = [_template(sentence) for sentence in _DETACHED_ITEMS]


@dataclass
class Item:
    """One requested item: its name (article dropped), stated values and filters."""

    name: str
    values: list[str] = field(default_factory=list)
    price: str | None = None
    services: list[str] = field(default_factory=list)

    @property
    def search_words(self) -> str:
        """The kind and values, each value in its catalog wording ("2 pieces" -> "2pcs")."""
        plain = " ".join(_PLAIN.get(word, word) for word in " ".join([*self.values, self.name]).split())
        return " ".join(dict.fromkeys(re.sub(r"(\d) ([a-z]+)\b", r"\1\2", plain).split()))


def _bound(value: str) -> str:
    return f"{float(value):g}"


def take_price(text: str) -> tuple[str | None, str]:
    """The price filter a phrase states and the phrase with ``|`` in its place."""
    for pattern, kind in _PRICES:
        match = re.search(pattern, text)
        if match is None:
            continue
        rest = text[:match.start()] + "|" + text[match.end():]
        if kind == "between":
            return f"{_bound(match.group(1))}-{_bound(match.group(2))}", rest
        return (f"{_bound(match.group(1))}-" if kind == "low" else f"-{_bound(match.group(1))}"), rest
    return None, text


def take_services(text: str) -> tuple[list[str], str]:
    """The services a phrase states and the phrase with ``|`` in their place."""
    found = []
    for name, phrases in _SERVICES.items():
        for phrase in sorted(phrases, key=len, reverse=True):  # "available with ..." before "with ..."
            if phrase in text:
                found.append(name)
                text = text.replace(phrase, "|")
                break
    return found, text


def clause_value(clause: str) -> str:
    """The value a clause states, by the first template it fits (the clause itself when none)."""
    for pattern in _CLAUSE_PATTERNS:
        match = pattern.match(clause)
        if match:
            return match.group(match.lastindex or 1).strip()
    return clause


_CLAUSE_START = re.compile(
    r" (?=(?:in|with|made|from|by|for|that|whose|colored|size|featuring|suitable|compatible|sold|crafted|"
    r"imported)\b|[a-z]+: )")


def parse_item(phrase: str) -> Item:
    """An item phrase: article and name, then clauses (prices and services become filters)."""
    price, rest = take_price(phrase)
    services, rest = take_services(rest)
    rest = _ARTICLE.sub("", rest.strip(" ,.")).strip(" ,.")
    head = _CLAUSE_JOINT.split(_CLAUSE_START.split(rest, maxsplit=1)[0], maxsplit=1)[0].strip()
    tail = rest[len(head):]
    clauses = [re.sub(r"^and ", "", c.strip(" ,")) for c in _CLAUSE_JOINT.split(tail)]
    values = [clause_value(c) for c in clauses if c and c != "and"]
    return Item(name=head, values=[v for v in values if v], price=price, services=services)


def _framed(text: str) -> list[str]:
    """The item phrases inside the query's frame (listed frames split at their ordinals)."""
    groups = [text.strip(" .?")]
    for pattern in _FRAME_PATTERNS:
        match = pattern.match(text)
        if match:
            groups = [g for g in match.groups() if g]
            break
    phrases: list[str] = []
    for group in groups:
        for listed in (part for ordinal in _ORDINAL.split(group) for part in _NUMBERED.split(ordinal)):
            for joined in _SURE_ITEM_JOINT.split(listed.strip(" .;")):
                phrases += [p.strip(" .") for p in _ITEM_JOINT.split(joined.strip(" .")) if p.strip(" .")]
    return phrases


def _followed(text: str) -> list[str]:
    """Item phrases of a request that adds items in sentences of their own, the first one framed."""
    first, *more = _FOLLOWUP.split(text)
    return _framed(first) + [p.strip(" .") for p in more if p.strip(" .")]


def _referenced(ref: str, names: list[str]) -> int:
    """Which named item a detail sentence means: "the second cat litter", or "the box" of "cardboard boxes"
    (-1: none)."""
    ordinals = ("first", "second", "third", "fourth")
    words = ref.split(" ", 1)
    if len(words) == 2 and words[0] in ordinals and ordinals.index(words[0]) < len(names):
        return ordinals.index(words[0])
    forms = (ref, ref + "s", ref + "es", ref[:-1] + "ies")
    return next((i for i, name in enumerate(names) if name.endswith(forms)), -1)


def _detached(text: str) -> list[str] | None:
    """Items named first, then one sentence of clauses per item ("For the kettle, look for one ...")."""
    sentences = re.split(r"(?<=[.?])\s+", text)
    intro = next((m for m in (p.match(sentences[0]) for p in _INTRO_PATTERNS) if m), None)
    details = [next((m for m in (p.match(s) for p in _DETACHED_PATTERNS) if m), None) for s in sentences[1:]]
    if intro is None or not details or not all(details):
        return None
    names = [p.strip(" .") for p in _ITEM_JOINT.split(intro.group(1).removeprefix("both ")) if p.strip()]
    for detail in filter(None, details):
        index = _referenced(detail.group(1), names)
        if index >= 0:
            names[index] += " " + detail.group(2)
    return names


def _masked_prices(text: str) -> tuple[str, list[str]]:
    """``text`` with each price phrasing replaced by ``<n>``, so its "and" ("between 5 and 9 pesos", "and
    costs over 9 php") never splits items; the phrasings in order."""
    said: list[str] = []

    def mask(match: re.Match[str]) -> str:
        said.append(match.group(0))
        return f"<{len(said) - 1}>"

    for pattern, _ in _PRICES:
        text = re.sub(rf"(?:,? and )?{pattern}", mask, text)
    return text, said


def _unmasked(phrase: str, said: list[str]) -> str:
    return re.sub(r"<(\d+)>", lambda m: said[int(m.group(1))], phrase)


def split_items(query: str) -> tuple[list[str], list[str]]:
    """The item phrases of a query, and services said once for all items."""
    text, said = _masked_prices(" ".join(query.lower().split()))
    phrases, shared = _split(text)
    return [_unmasked(p, said) for p in phrases], shared


def _split(text: str) -> tuple[list[str], list[str]]:
    for closer in _CLOSERS:
        text = text.replace(" " + closer, "")
    shared: list[str] = []
    for pattern in _SHARED_SERVICES:
        match = pattern.search(text)
        if match:
            shared = take_services(match.group(1))[0]
            text = text[:match.start()]
            break
    return _detached(text) or _followed(text), shared


@dataclass(frozen=True)
class Budget:
    """The voucher block: what the shopper may spend after the voucher."""

    budget: float
    threshold: float
    fixed: float | None
    percent: float
    cap: float

    def total_paid(self, prices: list[float]) -> float:
        total = sum(prices)
        if total < self.threshold:
            return total
        if self.fixed is not None:
            return total - self.fixed
        return max(total * (1 - self.percent / 100), total - self.cap)


def parse_budget(block: str) -> Budget | None:
    """The voucher block's numbers (ShoppingBench's own wording), ``None`` when the query has none."""
    numbers = [float(n) for n in re.findall(r"`(\d+(?:\.\d+)?)%?`", block)]
    if len(numbers) < 3:
        return None
    if "fixed discount" in block:
        return Budget(numbers[0], numbers[1], numbers[2], 0.0, 0.0)
    return Budget(numbers[0], numbers[1], None, numbers[2], numbers[3] if len(numbers) > 3 else 0.0)


Parsed = tuple[list[Item], Budget | None]
"""A query's items and its voucher block (``None`` without one)."""


def parse_query(query: str) -> Parsed:
    """The items a query asks for and its voucher block (``None`` without one)."""
    wish, _, voucher = query.partition("My budget")
    phrases, shared = split_items(wish.strip())
    items = [parse_item(p) for p in phrases] or [Item(name=wish)]
    for item in items:
        item.services += [s for s in shared if s not in item.services]
    return items, parse_budget(voucher)


def _everyday(raw: str) -> set[str]:
    """The forms a raw catalog value is written in by the writer (everyday form and raw)."""
    text = " ".join(raw.lower().replace("_", " ").split())
    forms = {text, text.replace("/", " and "), text.replace("/", " or ")}
    system, colon, inner = text.partition(":")
    if colon:
        inner = {v: k for k, v in _SIZE_WORDS.items()}.get(inner.strip(), inner.strip())
        forms |= {inner, f"size {inner}", f"{system} {inner}"}
        forms |= {f"{name} {inner}" for name, code in _SYSTEMS.items() if code == system}
    forms |= {word for word, code in _SIZE_WORDS.items() if code == text}
    varied = " ".join(_VARIANTS.get(w, w) for w in re.sub(r"(\d)([a-z]+)\b", r"\1 \2", text).split())
    return forms | {varied}


def _readings(value: str) -> set[str]:
    """A stated value as said, and without a key word said before or after it ("model volvo", "a cowl
    neck collar")."""
    words = value.removeprefix("an ").removeprefix("a ").split()
    readings = {value, " ".join(words)}
    if len(words) > 1 and words[0] in _KEY_WORDS:
        readings.add(" ".join(words[1:]))
    if len(words) > 1 and words[-1] in _KEY_WORDS:
        readings.add(" ".join(words[:-1]))
    return readings


def _mentioned(raw: str, text: str) -> bool:
    """Whether ``text`` (padded with spaces) says the catalog value ``raw`` in any form the writer uses."""
    return any(len(form) > 1 and f" {form} " in text for form in _everyday(raw))


def match_score(item: Item, detail: dict[str, Any], title: str) -> tuple[int, int]:
    """(values of the best sku option and the attributes that the item's words mention, name words in the
    title). Reading the catalog's values in the item's words, rather than the parsed values in the
    catalog's, also counts a value said inside a longer clause ("with a plain wave design")."""
    words = [item.name, *item.values, *(r for v in item.values for r in _readings(v))]
    text = f" {' '.join(re.sub(r'[,.;:()!?]', ' ', ' '.join(words).lower()).split())} "
    attributes = sum(1 for values in (detail.get("attributes") or {}).values() for v in values
                     if _mentioned(str(v), text))
    options = [sum(1 for v in option.values() if _mentioned(str(v), text))
               for option in (detail.get("sku_options") or {}).values()] or [0]
    return max(options) + attributes, sum(1 for w in item.name.split() if w in title.lower())


Scored = list[tuple[tuple[int, int], dict[str, Any]]]


class _Dialogue:
    """The attempt's steps; every tool call goes through the proxy."""

    def __init__(self, query: str, client: ProxyClient) -> None:
        self.query = query
        self.client = client
        self.steps: list[dict[str, Any]] = []

    def call(self, think: str, name: str, parameters: dict[str, Any]) -> Any:
        result: Any = None
        if name == "find_product":
            result = self.client.find_product(**parameters)
        elif name == "view_product_information":
            result = self.client.view_product_information(parameters["product_ids"])
        call = {"name": name, "parameters": parameters,
                "tool_call_id": generate_tool_call_id(name, parameters), "result": result}
        self.steps.append(create_dialogue_step(think, [call], None, self.query, len(self.steps)))
        return result


def candidates(dialogue: _Dialogue, item: Item, shop_id: str | None = None) -> Scored:
    """The item's hits, best match first (ties: search rank); later pages while none carries all values."""
    params: dict[str, Any] = {"q": item.search_words}
    if item.price:
        params["price"] = item.price
    if item.services:
        params["service"] = ",".join(item.services)
    if shop_id is not None:
        params["shop_id"] = shop_id
    scored: Scored = []
    for page in range(1, PAGES + 1):
        hits: list[dict[str, Any]] = dialogue.call(f"Searching {params}, page {page}.", "find_product",
                                                   {**params, "page": page})[:VIEWED]
        if not hits:
            break
        details = {d["product_id"]: d for d in dialogue.call(
            "Checking sku options and attributes.", "view_product_information",
            {"product_ids": ",".join(h["product_id"] for h in hits)})}
        scored += [(match_score(item, details.get(h["product_id"], {}), h["title"]), h) for h in hits]
        if any(score[0] >= len(item.values) for score, _ in scored):
            break
    return sorted(scored, key=lambda pair: (-pair[0][0], -pair[0][1]))


def _best(scored: Scored, cheap: bool, loose: bool = False) -> dict[str, Any] | None:
    """The best match (``loose``: only the stated values count), the cheapest of ties with ``cheap``."""
    if not scored:
        return None
    top = scored[0][0]
    tied = [h for s, h in scored if (s[0] == top[0] if loose else s == top)]
    return min(tied, key=lambda h: h["price"]) if cheap else tied[0]


def within_budget(per_item: list[Scored], budget: Budget) -> list[dict[str, Any] | None]:
    """The best picks; when they overrun the budget, the cheapest picks that carry as many values."""
    picks = [_best(scored, True) for scored in per_item]
    if budget.total_paid([p["price"] for p in picks if p]) <= budget.budget:
        return picks
    return [_best(scored, True, loose=True) for scored in per_item]


def _shop_order(per_item: list[Scored], items: list[Item]) -> list[str]:
    """Shops with a hit for every item first, then the shops of the most constrained item's hits."""
    shops = [list(dict.fromkeys(h["shop_id"] for _, h in scored)) for scored in per_item]
    everywhere = [shop for shop in shops[0] if all(shop in other for other in shops[1:])]
    richest = max(range(len(items)), key=lambda i: (len(items[i].values) + len(items[i].services)
                                                     + bool(items[i].price)))
    return list(dict.fromkeys([*everywhere, *shops[richest]]))


def one_shop(dialogue: _Dialogue, items: list[Item], per_item: list[Scored]) -> list[str]:
    """The shop whose best picks match most stated values, then most name words."""
    best: tuple[tuple[int, int], list[str]] = ((-1, -1), [])
    wanted = sum(len(item.values) for item in items)
    for shop in _shop_order(per_item, items)[:SHOPS_TRIED]:
        in_shop = [[(s, h) for s, h in scored if h["shop_id"] == shop] or candidates(dialogue, item, shop)
                   for item, scored in zip(items, per_item, strict=True)]
        if not all(in_shop):
            continue
        total = (sum(scored[0][0][0] for scored in in_shop), sum(scored[0][0][1] for scored in in_shop))
        if total > best[0]:
            best = (total, [pick["product_id"] for pick in (_best(s, False) for s in in_shop) if pick])
        if total[0] >= wanted:
            break
    return best[1]


def agent_main(problem: dict[str, Any], client: ProxyClient | None = None,
               parse: Callable[[str], Parsed] = parse_query) -> list[dict[str, Any]]:
    """Solve one problem from its ``query`` alone, read by ``parse`` (a tuned parser passes its own)."""
    query = str(problem.get("query", ""))
    proxy = client or ProxyClient()
    try:
        dialogue = _Dialogue(query, proxy)
        items, budget = parse(query)
        per_item = [candidates(dialogue, item) for item in items]
        chosen: list[str] = []
        if len(items) > 1 and budget is None:
            chosen = one_shop(dialogue, items, per_item)
        if not chosen:
            picks = within_budget(per_item, budget) if budget else [_best(s, False) for s in per_item]
            chosen = [pick["product_id"] if pick else "" for pick in picks]
        dialogue.call("Recommending one product per item.", "recommend_product",
                      {"product_ids": ",".join(chosen)})
        dialogue.call("Done.", "terminate", {"status": "success" if any(chosen) else "failure"})
        return dialogue.steps
    finally:
        if client is None:
            proxy.close()
