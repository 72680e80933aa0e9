"""The lexicon writer: a request in a shopper's words, deterministic for the same lexicon and draws.

Each item is named by its kind ("crop top", "master cylinder": :func:`~.rules.choose_kind`), never by a
run of title words; every stated sku option and attribute is said by its role ("in mustard", "made of
cotton spandex", "for ford") with its value in everyday form, the key named only by a shopper word the
lexicon knows ("with a cowl neck collar"), never by its raw name; services and price modes come in
the lexicon's phrasings. Values go before the kind ("a mustard crop top") or after it in shuffled
clauses; a value before the kind that would rebuild three title words in a row goes after it instead.
The voucher block keeps ShoppingBench's own text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from shoppingbench.generator.writer.lexicon import Frames, KeyPhrasing, Lexicon, Role, lexicon_sha256
from shoppingbench.generator.writer.request import ItemRequest, WrittenItem, WrittenRequest
from shoppingbench.generator.writer.rules import (
    choose_kind,
    clean_value,
    head_region,
    key_phrasing,
    longest_title_run,
    plural,
    varied_value,
)
from shoppingbench.problems import wording
from shoppingbench.problems.models import (
    Category,
    PriceRelation,
    RewardTarget,
    Voucher,
    parse_price_condition,
)
from shoppingbench.problems.terms import Draws
from shoppingbench.scoring.rules import attribute_pairs

WRITER_VERSION: Final = "lexicon-writer-3"
"""Bumped whenever the code would word the same lexicon and draws differently."""
_LAST_ORDINAL_FROM: Final = 3
_LAST_ORDINAL_ODDS: Final = 0.5
_PREFIX_ODDS: Final = 0.45
_KEYED_ODDS: Final = 0.3
_PRICE_LAST_ODDS: Final = 0.8
_STRUCTURES: Final[dict[str, tuple[tuple[str, float], ...]]] = {
    "shop": (("detached", 0.2), ("followed", 0.3), ("listed", 0.15), ("numbered", 0.1), ("joined", 0.25)),
    "voucher": (("detached", 0.2), ("followed", 0.35), ("listed", 0.15), ("joined", 0.3)),
}
"""How a multi-item request is built, with its odds: the items named first and one sentence each
("detached"), one sentence per item joined by "Also, ..." ("followed"), listed by ordinal ("First, ...")
or number ("1) ..."), or all in one sentence ("joined")."""
_SHARED_SERVICE_ODDS: Final = 0.4
_BOTH_ODDS: Final = 0.5
_MODIFIER_ODDS: Final = 0.6
_SECOND_MODIFIER_ODDS: Final = 0.4
_VARIANT_ODDS: Final = 0.5
_PLURAL_ODDS: Final = 0.2
"""Items asked for in the plural with no article ("pig-themed coin banks"), as real requests often are."""
_MODIFIER_MIN_TITLES: Final = 2
_MAX_PREFIX_WORDS: Final = 2
_MAX_KIND_WORDS: Final = 4
_DRAFTS: Final = 6
_VERB_FORMS: Final = {"costs ": ("costs ", "cost "), "is priced ": ("is priced ", "are priced ")}
"""How a price phrasing said as a verb starts ("costs over 40 PHP"), and its (singular, plural) forms."""
_PARTICIPLES: Final = {"costs ": "costing ", "is priced ": "priced "}
_TITLE_RUN: Final = 3
"""Consecutive title words that make a phrase a copy of the title rather than a shopper's words."""


@dataclass(frozen=True, slots=True)
class _Draft:
    """One item's wording: its name (stated values before the kind, no article) and its clauses."""

    kind: str
    name: str
    clauses: tuple[str, ...]
    joined: str
    """The clauses joined as the item's own phrase says them."""
    search_terms: str
    plural: bool = False

    @property
    def named(self) -> str:
        """The name as said: "a crop top", "some pants", or a plural without article ("crop tops")."""
        return plural(self.name) if self.plural else wording.article(self.name)

    @property
    def phrase(self) -> str:
        return f"{self.named} {self.joined}" if self.joined else self.named

    @property
    def written(self) -> WrittenItem:
        return WrittenItem(phrase=self.phrase, search_terms=self.search_terms)


@dataclass(frozen=True, slots=True)
class _Statement:
    """One stated value: how its key is referred to, and the value in everyday form."""

    key: KeyPhrasing
    value: str


class LexiconWriter:
    """Words requests from one lexicon (implements ``RequestWriter``)."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        self.digest = lexicon_sha256(lexicon)
        self._noise = frozenset(lexicon.phrasing.noise_words)
        self._nouns = frozenset(lexicon.phrasing.kind_nouns)

    @property
    def key(self) -> str:
        return f"{WRITER_VERSION}:{self.digest}"

    def write(self, category: Category, items: Sequence[ItemRequest], voucher: Voucher | None,
              rng: Draws) -> WrittenRequest:
        shared = self._shared_services(items, rng)
        drafts = [self._item(item, shared, rng) for item in items]
        query = self._frame(category, drafts, rng)
        if shared:
            phrasing = self.lexicon.phrasing
            services = wording.join_clauses([rng.choice(phrasing.services[s]) for s in shared], rng)
            query += " " + rng.choice(phrasing.frames.shared_services).format(services=services)
        if voucher is not None:
            query += "\n\n" + wording.voucher_rules(voucher)
        return WrittenRequest(query=query, items=tuple(draft.written for draft in drafts))

    def write_item(self, item: ItemRequest, rng: Draws) -> WrittenItem:
        return self._item(item, (), rng).written

    def _shared_services(self, items: Sequence[ItemRequest], rng: Draws) -> tuple[str, ...]:
        """Services every item asks for, said once for all of them ("Please only show options with free
        shipping."), as real requests sometimes do; none for a single item or most of the time."""
        if len(items) < 2:
            return ()
        common = [s for s in items[0].target.service if all(s in item.target.service for item in items)]
        common = [s for s in common if s in self.lexicon.phrasing.services]
        return tuple(common) if common and rng.random() < _SHARED_SERVICE_ODDS else ()

    def key_phrasing(self, key: str) -> KeyPhrasing:
        return self.lexicon.keys.get(key) or key_phrasing(key, self.lexicon.phrasing)

    def everyday_value(self, key: str, value: str, role: Role) -> str:
        known = self.lexicon.values.get(key, {}).get(value)
        return known if known is not None else clean_value(value, role, self.lexicon.phrasing)

    def statements(self, target: RewardTarget) -> list[_Statement]:
        """The target's stated sku options and attributes, in target order."""
        out = []
        for key, value in attribute_pairs(target):
            phrasing = self.key_phrasing(key)
            out.append(_Statement(key=phrasing, value=self.everyday_value(key, value, phrasing.role)))
        return out

    def _item(self, item: ItemRequest, shared: Sequence[str], rng: Draws) -> _Draft:
        """The item's wording: of a few drafts, the first that repeats no three title words in a row
        outside its stated values (values may be title words, as in real queries); else the last."""
        product, target = item.product, item.target
        kind = choose_kind(product.title, product.category, self.lexicon.kinds, self._noise, self._nouns)
        statements = [self._said(statement, rng) for statement in self.statements(target)]
        kind = next((s.value for s in statements if _names_kind(s.value, kind)), kind)
        values = [s.value for s in statements]
        services = [s for s in target.service if s in self.lexicon.phrasing.services and s not in shared]
        modifiers = [m for m in self._modifiers(product.title, [kind, *values])
                     if longest_title_run(f"{m} {kind}", product.title) < _TITLE_RUN]
        for _ in range(_DRAFTS):
            chosen = self._chosen_modifiers(modifiers, rng)
            draft = self._draft(" ".join([*chosen, kind]), statements, services, target, rng)
            if longest_title_run(_without(draft.phrase, values), product.title) < _TITLE_RUN:
                break
        search_terms = " ".join(dict.fromkeys(" ".join([*values, draft.kind]).split()))
        return replace(draft, kind=kind, search_terms=search_terms)

    def said_forms(self, value: str) -> tuple[str, str]:
        """The ways an everyday value can be said: as it is, or varied (:func:`~.rules.varied_value`)."""
        return value, varied_value(value, self.lexicon.phrasing.value_variants)

    def _said(self, statement: _Statement, rng: Draws) -> _Statement:
        if rng.random() >= _VARIANT_ODDS:
            return statement
        return _Statement(key=statement.key, value=self.said_forms(statement.value)[1])

    @staticmethod
    def _chosen_modifiers(modifiers: Sequence[str], rng: Draws) -> list[str]:
        """None, one, or (less often) two of ``modifiers``, in title order."""
        if not modifiers or rng.random() >= _MODIFIER_ODDS:
            return []
        first = rng.choice(modifiers)
        second = rng.choice(modifiers) if rng.random() < _SECOND_MODIFIER_ODDS else first
        return sorted({first, second}, key=modifiers.index)

    def _modifiers(self, title: str, stated: Sequence[str]) -> list[str]:
        """Title words a shopper might add to the kind ("travel shaver", "ceramic plate"): plain words
        other titles use too (not a one-off model name), not already said, from where the title names
        the item (not "for Mitsubishi")."""
        said = {word for text in stated for word in text.split()}
        return [word for word in dict.fromkeys(head_region(title, self._noise))
                if word.isalpha() and len(word) > 2 and word not in self._noise and word not in said
                and self.lexicon.kinds.get(word, 0) >= _MODIFIER_MIN_TITLES]

    def _draft(self, kind: str, statements: Sequence[_Statement], services: Sequence[str],
               target: RewardTarget, rng: Draws) -> _Draft:
        prefix: list[str] = []
        clauses: list[str] = []
        for statement in statements:
            if set(statement.value.split()) <= set(kind.split()):
                continue  # the kind already says it ("tote" of a "tote bag", "fan blade" as the kind)
            if self._goes_first(statement, rng):
                prefix.append(statement.value)
            else:
                clauses.append(self._clause(statement, rng))
        clauses += [rng.choice(self.lexicon.phrasing.services[s]) for s in services]
        prices = [self._price(raw, rng) for raw in target.price]
        tail = prices[-1:] if prices and rng.random() < _PRICE_LAST_ODDS else []
        clauses += [p for p in prices if p not in tail]
        rng.shuffle(clauses)
        countable = not kind.endswith("s") and kind.split()[-1].isalpha()
        plural = countable and rng.random() < _PLURAL_ODDS
        ordered = _attached((*clauses, *tail), plural or kind.endswith("s"))
        return _Draft(kind=kind, name=" ".join([*prefix, kind]), clauses=ordered,
                      joined=wording.join_clauses(ordered, rng), search_terms="", plural=plural)

    def _goes_first(self, statement: _Statement, rng: Draws) -> bool:
        return (statement.key.role in self.lexicon.phrasing.prefix_roles
                and len(statement.value.split()) <= _MAX_PREFIX_WORDS and rng.random() < _PREFIX_ODDS)

    def _clause(self, statement: _Statement, rng: Draws) -> str:
        phrasing = self.lexicon.phrasing
        words = [w for w in statement.key.words if w not in statement.value.split()]  # not "size EU size 40"
        measured = any(c.isdigit() for c in statement.value)  # "7 days", "220v": say what they measure
        if words and (measured or rng.random() < _KEYED_ODDS):
            return rng.choice(phrasing.keyed_clauses).format(
                v=statement.value, av=wording.article(statement.value), k=rng.choice(words))
        templates = _fitting(phrasing.clauses[statement.key.role], statement.value)
        return rng.choice(templates).format(v=statement.value)

    def _price(self, raw: Mapping[PriceRelation, list[float | None]], rng: Draws) -> str:
        condition = parse_price_condition(raw)
        template = rng.choice(self.lexicon.phrasing.prices[condition.relation])
        low, high = wording.number(condition.low or 0), wording.number(condition.high or 0)
        return template.format(low=low, high=high, cur=rng.choice(self.lexicon.phrasing.currencies))

    def _frame(self, category: Category, drafts: Sequence[_Draft], rng: Draws) -> str:
        frames = self.lexicon.phrasing.frames
        phrases = [draft.phrase for draft in drafts]
        if category == "product" or len(drafts) == 1:
            options = frames.product if category == "product" else (
                frames.voucher if category == "voucher" else frames.shop)
            return _capitalised(rng.choice(options).format(item=phrases[0], items=phrases[0]))
        structure = _structure(category, rng)
        if structure == "detached":
            return self._detached(category, drafts, rng)
        if structure == "followed":
            return self._followed(category, phrases, rng)
        if structure == "listed":
            listed = _listed(phrases, frames, rng)
            opening = frames.shop_listed if category == "shop" else frames.voucher_listed
            return _capitalised(rng.choice(opening).format(items=listed))
        if structure == "numbered":
            numbered = " ".join(rng.choice(frames.numbered_item).format(n=i + 1, item=_capitalised(phrase))
                                for i, phrase in enumerate(phrases))
            ended = numbered if numbered.endswith(".") else numbered.removesuffix(";") + "."  # "...; (3) C."
            return rng.choice(frames.shop_numbered).format(items=ended)
        items = self._joined_items(phrases, rng)
        opening, closers = ((frames.shop, frames.shop_closers) if category == "shop"
                            else (frames.voucher, frames.voucher_closers))
        return _capitalised(rng.choice(opening).format(items=items)) + rng.choice(closers)

    def _joined_items(self, phrases: Sequence[str], rng: Draws) -> str:
        """Items in one sentence, joined by commas or semicolons, with "and", ", as well as" or "; and"
        before the last."""
        between, last = rng.choice(self.lexicon.phrasing.frames.item_joints)
        joined = between.join(phrases[:-1]) + last + phrases[-1]
        return _both(joined, len(phrases), rng) if " and " in last else joined

    def _followed(self, category: Category, phrases: Sequence[str], rng: Draws) -> str:
        """The first item in the request's frame, each further item in its own sentence ("Also, look
        for ...", "Additionally, I want ..."), as real requests most often add items."""
        frames = self.lexicon.phrasing.frames
        opening = frames.shop_followed if category == "shop" else frames.voucher
        sentences = [_capitalised(rng.choice(opening).format(item=phrases[0], items=phrases[0]))]
        sentences += [rng.choice(frames.followups).format(item=phrase) for phrase in phrases[1:]]
        closers = frames.shop_closers if category == "shop" else frames.voucher_closers
        return " ".join(sentences) + rng.choice(closers)

    def _detached(self, category: Category, drafts: Sequence[_Draft], rng: Draws) -> str:
        """The items named first, then one sentence of requirements per item, as real requests often
        are ("Find a shop offering both X and Y. For the X, look for one with ...")."""
        frames = self.lexicon.phrasing.frames
        names = _both(wording.join_clauses([draft.named for draft in drafts], rng), len(drafts), rng)
        intro = frames.detached_shop if category == "shop" else frames.detached_voucher
        sentences = [_capitalised(rng.choice(intro).format(items=names))]
        kinds = [draft.kind for draft in drafts]
        for index, draft in enumerate(drafts):
            if not draft.clauses:
                continue
            ordinal = frames.ordinals[index].lower()
            ref = draft.kind if kinds.count(draft.kind) == 1 else f"{ordinal} {draft.kind}"
            clauses = wording.join_clauses(list(draft.clauses), rng)
            sentence = rng.choice(frames.detached_item).format(ref=ref, clauses=clauses)
            sentences.append(_capitalised(sentence))
        return " ".join(sentences)


def _without(phrase: str, values: Sequence[str]) -> str:
    """``phrase`` with each stated value cut out (longest first), so runs are not counted across them."""
    for value in sorted(values, key=len, reverse=True):
        phrase = phrase.replace(value, " | ")
    return phrase


def _attached(clauses: Sequence[str], plural: bool) -> tuple[str, ...]:
    """A price said as a verb ("costs over 40 PHP") agrees with the item and fits where it stands: last,
    "and" joins it to the clause before ("a rack with free shipping and costs over 40 PHP", as real
    requests often say it); first, it becomes a relative clause ("a rack that costs over 40 PHP"); in
    between, a participle ("a rack with free shipping, costing over 40 PHP, and in red")."""
    said = []
    for index, clause in enumerate(clauses):
        verb = next((v for v in _VERB_FORMS if clause.startswith(v)), None)
        if verb is None:
            said.append(clause)
        elif index == 0:
            said.append(f"that {_VERB_FORMS[verb][plural]}{clause.removeprefix(verb)}")
        elif index < len(clauses) - 1:
            said.append(f"{_PARTICIPLES[verb]}{clause.removeprefix(verb)}")
        else:
            said.append(f"{_VERB_FORMS[verb][plural]}{clause.removeprefix(verb)}")
    return tuple(said)


def _both(items: str, count: int, rng: Draws) -> str:
    """Two items said as "both X and Y" at :data:`_BOTH_ODDS`, as real two-item requests often are."""
    return f"both {items}" if count == 2 and rng.random() < _BOTH_ODDS else items


def _names_kind(value: str, kind: str) -> bool:
    """Whether a stated value is a longer name of the same kind ("fan blade" for "blade")."""
    words, kind_words = value.split(), kind.split()
    return len(kind_words) < len(words) <= _MAX_KIND_WORDS and words[-1] == kind_words[-1]


def _fitting(templates: Sequence[str], value: str) -> Sequence[str]:
    """Templates that do not repeat a word of the value ("with a graphic print print")."""
    words = set(value.split())
    fitting = [t for t in templates if not words & set(t.replace("{v}", " ").split())]
    return fitting or templates


def _structure(category: Category, rng: Draws) -> str:
    """A multi-item request's structure, drawn by :data:`_STRUCTURES`'s odds."""
    draw, total = rng.random(), 0.0
    options = _STRUCTURES[category]
    for name, odds in options:
        total += odds
        if draw < total:
            return name
    return options[-1][0]


def _listed(phrases: Sequence[str], frames: Frames, rng: Draws) -> str:
    """Items listed by ordinal ("First, A. Second, B."); the last of three or more sometimes "Lastly"."""
    ordinals = list(frames.ordinals[:len(phrases)])
    if len(phrases) >= _LAST_ORDINAL_FROM and rng.random() < _LAST_ORDINAL_ODDS:
        ordinals[-1] = rng.choice(frames.last_ordinals)
    return " ".join(rng.choice(frames.listed_item).format(ordinal=ordinals[i], item=phrase)
                    for i, phrase in enumerate(phrases))


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]
