"""Deterministic sample world: a synthetic marketplace catalog and a problem bank derived from it.

``generate_products`` streams the catalog, ``generate_problems`` draws solvable product, shop and
voucher requests from it, ``write_world`` writes both in the ShoppingBench file formats and
``paraphrase_queries`` optionally has an LLM reword the requests.
"""

from shoppingbench.world.catalog import generate_products
from shoppingbench.world.llm import paraphrase_queries
from shoppingbench.world.problems import (
    DEFAULT_COUNTS,
    ProductFinder,
    generate_problems,
    reachable,
    request_keywords,
    target_filters,
)
from shoppingbench.world.writer import write_world

__all__ = [
    "DEFAULT_COUNTS",
    "ProductFinder",
    "generate_problems",
    "generate_products",
    "paraphrase_queries",
    "reachable",
    "request_keywords",
    "target_filters",
    "write_world",
]
