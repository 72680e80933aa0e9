"""The writer's lexicon: the phrase knowledge as versioned data, with a digest every validator compares.

A lexicon is one JSON file (``<catalog_dir>/lexicon.json``, written by ``arena lexicon build``): the
kind phrases mined from the catalog's titles, how a shopper names each attribute/sku key and says
its frequent values, and the catalog-independent phrasing (services, price modes, currencies,
clause templates, sentence frames) taken from ``phrasing.json`` beside this module. Its
:func:`lexicon_sha256` is the SHA-256 of its canonical bytes (sorted keys, two-space indent, one
trailing newline), which is exactly what :func:`save_lexicon` writes, so ``sha256sum lexicon.json``
on any machine gives the digest that enters the writer's key.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shoppingbench.files import write_file_atomically
from shoppingbench.problems.models import PriceRelation

LEXICON_FILE: Final = "lexicon.json"
"""Where a catalog's lexicon lives: beside its store and index, in the catalog directory."""
LEXICON_FORMAT: Final = 1
"""Bumped when the file's meaning changes; a reader refuses other formats."""
PHRASING_FILE: Final = Path(__file__).with_name("phrasing.json")
SAMPLE_LEXICON_FILE: Final = Path(__file__).with_name("sample_world_lexicon.json")

Role = Literal["color", "size", "material", "pattern", "style", "brand", "origin", "fit", "flavor",
               "quantity", "feature"]
"""How a key's values are said: "in red" (color), "made of cotton" (material), "for men" (fit), ..."""
ROLES: Final[tuple[Role, ...]] = ("color", "size", "material", "pattern", "style", "brand", "origin", "fit",
                                  "flavor", "quantity", "feature")


class LexiconError(ValueError):
    """A lexicon that is missing, unreadable or not a lexicon."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Frames(_Frozen):
    """Sentence frames per category; ``{item}``/``{items}``/``{first}``/``{rest}`` are item phrases."""

    product: list[str] = Field(min_length=1)
    shop: list[str] = Field(min_length=1)
    shop_listed: list[str] = Field(min_length=1)
    shop_closers: list[str] = Field(min_length=1)
    """Appended to a shop request ("" for none): the same-seller reminder real requests often end with."""
    voucher: list[str] = Field(min_length=1)
    voucher_listed: list[str] = Field(min_length=1)
    """A voucher request listing its items by ordinal (``{items}``)."""
    ordinals: list[str] = Field(min_length=4)
    last_ordinals: list[str] = Field(min_length=1)
    """What may introduce the last of three or more listed items instead of its ordinal ("Lastly")."""
    listed_item: list[str] = Field(min_length=1)
    shared_services: list[str] = Field(min_length=1)
    """A sentence stating services every item asks for once (``{services}``)."""
    detached_shop: list[str] = Field(min_length=1)
    detached_voucher: list[str] = Field(min_length=1)
    """Intros naming the items first (``{items}``); each item's requirements follow in its own sentence."""
    detached_item: list[str] = Field(min_length=1)
    """One item's requirements (``{ref}`` its kind, ``{clauses}``)."""
    shop_followed: list[str] = Field(min_length=1)
    """A shop request's first sentence when each further item follows in its own (``{item}``)."""
    followups: list[str] = Field(min_length=1)
    """A sentence adding one more item after the first ("Also, look for {item}.")."""
    shop_numbered: list[str] = Field(min_length=1)
    """A shop request listing its items numbered (``{items}``: ``numbered_item`` sentences)."""
    numbered_item: list[str] = Field(min_length=1)
    """One numbered item (``{n}`` its number from 1, ``{item}`` capitalised); one ending in ";" ends the
    request with "." when it is the last."""
    item_joints: list[tuple[str, str]] = Field(min_length=1)
    """How a one-sentence list joins its items: (between items, before the last), e.g. (", ", " and "),
    ("; ", "; and ")."""
    voucher_closers: list[str] = Field(min_length=1)
    """Appended to a multi-item voucher request ("" for none)."""


class Phrasing(_Frozen):
    """The catalog-independent part: how services, prices and clauses are said, and word lists."""

    noise_words: list[str]
    kind_nouns: list[str]
    """Words that often end a product name ("bag", "shirt"): a kind ending in one is preferred."""
    services: dict[str, list[str]]
    prices: dict[PriceRelation, list[str]]
    currencies: list[str] = Field(min_length=1)
    clauses: dict[Role, list[str]]
    keyed_clauses: list[str] = Field(min_length=1)
    prefix_roles: list[Role]
    frames: Frames
    key_words: dict[str, str]
    role_markers: dict[Role, list[str]]
    size_words: dict[str, str]
    value_variants: dict[str, str]
    """Word swaps that keep a value's meaning ("sleeve" -> "sleeves", "pcs" -> "pieces"): some stated
    values are said this way, as real requests rarely repeat every value word for word."""
    size_systems: dict[str, str]


class KeyPhrasing(_Frozen):
    """How a shopper refers to one attribute/sku key: its role and its words (none: the value alone)."""

    role: Role
    words: list[str] = Field(default_factory=list)


class Lexicon(_Frozen):
    """Everything the writer says, as data (see the module docstring)."""

    format: Literal[1] = LEXICON_FORMAT
    catalog_products: int = Field(ge=0)
    """How many products the build scanned (information only)."""
    kinds: dict[str, int]
    """Kind phrases (one or two title words) and the number of distinct titles that use them."""
    keys: dict[str, KeyPhrasing]
    values: dict[str, dict[str, str]]
    """Per key, the everyday form of a raw value ("int:m" -> "medium"); values not listed are cleaned."""
    phrasing: Phrasing


def load_phrasing() -> Phrasing:
    """The shipped catalog-independent phrasing."""
    return Phrasing.model_validate_json(PHRASING_FILE.read_bytes())


def canonical_bytes(lexicon: Lexicon) -> bytes:
    options = orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2
    return orjson.dumps(lexicon.model_dump(mode="json"), option=options) + b"\n"


def lexicon_sha256(lexicon: Lexicon) -> str:
    return hashlib.sha256(canonical_bytes(lexicon)).hexdigest()


def save_lexicon(lexicon: Lexicon, path: Path) -> str:
    """Write the canonical bytes atomically; returns the digest."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = canonical_bytes(lexicon)
    write_file_atomically(path, data)
    return hashlib.sha256(data).hexdigest()


def load_lexicon(path: Path) -> Lexicon:
    try:
        return Lexicon.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise LexiconError(f"cannot read the lexicon {path}: {exc}") from exc
    except ValidationError as exc:
        raise LexiconError(f"{path} is not a lexicon of format {LEXICON_FORMAT}: {exc}") from exc
