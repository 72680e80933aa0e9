"""The generator's writer: requests in a shopper's words from a versioned lexicon (SPEC 5).

PLACEHOLDER (being replaced by the lexicon writer): ``writer_for_catalog`` returns a plain writer that
names an item by its first two title words and states values verbatim, so the sampler can be wired and
tested against the :class:`~shoppingbench.generator.request.RequestWriter` protocol meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from shoppingbench.generator.request import ItemRequest, RequestWriter, WrittenItem, WrittenRequest
from shoppingbench.problems.models import Category, Voucher
from shoppingbench.problems.solvability import WORD
from shoppingbench.problems.terms import Draws


class PlainWriter:
    """Placeholder writer (see the module docstring)."""

    key = "plain-0"

    def write(self, category: Category, items: Sequence[ItemRequest], voucher: Voucher | None,
              rng: Draws) -> WrittenRequest:
        written = []
        for item in items:
            name = " ".join(WORD.findall(item.product.title.lower())[:2])
            values = [v for option in item.target.sku_options for v in option.values()]
            values += [v for attribute in item.target.attributes for vs in attribute.values() for v in vs]
            words = " ".join([*values, name])
            written.append(WrittenItem(phrase=words, search_terms=words))
        query = "I need " + "; and ".join(w.phrase for w in written) + "."
        if voucher is not None:
            query += f"\n\nMy budget is only `{voucher.budget:g}`."
        return WrittenRequest(query=query, items=tuple(written))


def writer_for_catalog(catalog_dir: Path) -> RequestWriter:
    """The writer for the catalog in ``catalog_dir`` (placeholder: the plain writer)."""
    return PlainWriter()
