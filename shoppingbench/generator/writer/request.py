"""The hand-over between the generator's sampler and its writer, as in ShoppingBench's own synthesis.

The sampler decides *what* a problem asks (targets and the constraints stated for each, the voucher);
the writer decides *how* a shopper says it. An :class:`ItemRequest` carries one target product with the
reward target that checks exactly the stated constraints; a :class:`WrittenRequest` is the query with,
per item, the words a shopper would search with (the solvability check searches with those, never with
the target's own vocabulary).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from shoppingbench.catalog.models import Product
from shoppingbench.problems.models import Category, Problem, RewardTarget, Voucher
from shoppingbench.problems.terms import Draws


@dataclass(frozen=True, slots=True)
class ItemRequest:
    """One requested item: the target product and the reward target of what its request states."""

    product: Product
    target: RewardTarget


@dataclass(frozen=True, slots=True)
class WrittenItem:
    """How one item reads in the query, and the words a shopper would type to search for it."""

    phrase: str
    search_terms: str


@dataclass(frozen=True, slots=True)
class WrittenRequest:
    """A worded problem: the query and its items in request order."""

    query: str
    items: tuple[WrittenItem, ...]


@dataclass(frozen=True, slots=True)
class GeneratedProblem:
    """A generated problem and, per target, the shopper words its solvability was checked with."""

    problem: Problem
    search_terms: tuple[str, ...]


class RequestWriter(Protocol):
    """Words requests; ``key`` names everything that changes its bytes (version and lexicon digest)."""

    @property
    def key(self) -> str: ...

    def write(self, category: Category, items: Sequence[ItemRequest], voucher: Voucher | None,
              rng: Draws) -> WrittenRequest: ...
