"""The shopper-words solvability check over a small real catalog: the target, or a product the reward
accepts, must be listed on pages 1..5, and the basket must still succeed.

Title similarity comes from two scripted embedders (every title alike, every title apart), so the test
decides which listed products the scorer's title check accepts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from shoppingbench.catalog.models import Product
from shoppingbench.catalog_dir import build_catalog, open_catalog
from shoppingbench.generator.sampler import SampledProblem
from shoppingbench.generator.solvable import RewardCheck, SolvabilityCheck
from shoppingbench.generator.writer.request import ItemRequest
from shoppingbench.problems.models import Voucher
from shoppingbench.problems.terms import stated_target
from shoppingbench.scoring.embedder import TitleEmbedder, Vectors
from shoppingbench.search.base import FindProductQuery
from shoppingbench.search.engine import BM25SearchEngine
from tests.shoppingbench.generator.test_generator_sbgen1 import write_documents


class _AllAlike:
    """Every title embeds to the same vector: similarity 1."""

    name = "all-alike"

    def embed(self, texts: Sequence[str]) -> Vectors:
        return np.full((len(texts), 4), 0.5, dtype=np.float32)


class _AllApart:
    """Every distinct title embeds to its own axis: similarity 0 between different titles."""

    name = "all-apart"

    def __init__(self) -> None:
        self.axes: dict[str, int] = {}

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, self.axes.setdefault(text, len(self.axes))] = 1
        return out


def _product(pid: str, shop: str, title: str, price: float) -> Product:
    return Product(product_id=pid, shop_id=shop, title=title, price=price, category="Bags",
                   attributes={"material": ["canvas"]}, service=["COD"])


PRODUCTS = [
    _product("t1", "s1", "Canvas Tote Bag", 200.0),
    _product("a1", "s2", "Canvas Tote Bag Zebra", 210.0),  # the listed look-alike, another shop
    _product("a2", "s2", "Canvas Tote Bag Zebra Deluxe", 900.0),  # look-alike over any price bound below
    _product("t2", "s1", "Leather Wallet", 150.0),
    *[_product(f"f{i}", f"s{3 + i % 4}", f"Cotton Shirt {i}", 100.0 + i) for i in range(20)],
    # Sixty wallets of another shop that outrank the leather wallet for "wallet" on pages 1..5.
    *[_product(f"w{i}", "s9", "Wallet Wallet Wallet", 100.0 + i) for i in range(60)],
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BM25SearchEngine]:
    root = tmp_path_factory.mktemp("solvable")
    catalog: Path = root / "catalog"
    build_catalog(write_documents(root / "docs.jsonl", PRODUCTS), catalog, progress=False)
    opened = open_catalog(catalog)
    yield opened
    opened.close()


def _item(pid: str, *, below: float | None = None) -> ItemRequest:
    product = next(p for p in PRODUCTS if p.product_id == pid)
    prices = [] if below is None else [{"less than": [None, below]}]
    target = stated_target(product, sku={}, attributes=[{"material": ["canvas"]}], services=["COD"],
                           prices=prices)
    return ItemRequest(product, target)


def _check(engine: BM25SearchEngine, titles: TitleEmbedder) -> SolvabilityCheck:
    return SolvabilityCheck(engine, engine.get_products, RewardCheck(titles))


def test_the_target_listed_from_the_shopper_words_is_enough(engine: BM25SearchEngine) -> None:
    problem = SampledProblem("product", (_item("t1", below=300),), None, None)
    assert _check(engine, _AllApart()).solvable(problem, ["canvas tote"])
    assert not _check(engine, _AllApart()).solvable(problem, ["wallet"])  # words that miss it
    assert not _check(engine, _AllApart()).solvable(problem, [""])


def test_a_listed_product_the_reward_accepts_makes_it_solvable(engine: BM25SearchEngine) -> None:
    problem = SampledProblem("product", (_item("t1", below=300),), None, None)
    # "zebra" lists only the look-alikes: accepted when the title check passes, and the price holds.
    assert _check(engine, _AllAlike()).solvable(problem, ["zebra"])
    assert not _check(engine, _AllApart()).solvable(problem, ["zebra"])
    unweighed = SolvabilityCheck(engine, engine.get_products, RewardCheck(_AllAlike(), weighed=0))
    assert not unweighed.solvable(problem, ["zebra"])  # no look-alike weighed: only the target counts
    cheap = SampledProblem("product", (_item("t1", below=205),), None, None)
    assert not _check(engine, _AllAlike()).solvable(cheap, ["zebra"])  # both look-alikes cost more


def test_the_basket_must_still_work(engine: BM25SearchEngine) -> None:
    items = (_item("t1"), _item("t2"))
    shop = SampledProblem("shop", items, "s1", None)
    assert _check(engine, _AllAlike()).solvable(shop, ["canvas tote", "leather wallet"])
    # The look-alike sells in another shop: a one-shop basket cannot use it.
    assert not _check(engine, _AllAlike()).solvable(shop, ["zebra", "leather wallet"])
    voucher = Voucher(voucher_type="platform", threshold=300, discount_type="fixed", face_value=40,
                      budget=315)
    basket = SampledProblem("voucher", items, None, voucher)
    assert _check(engine, _AllAlike()).solvable(basket, ["canvas tote", "leather wallet"])  # 350 - 40
    # The 210 look-alike makes 360 - 40 = 320, over budget; the 900 one too.
    assert not _check(engine, _AllAlike()).solvable(basket, ["zebra", "leather wallet"])



def test_a_shops_later_items_may_be_found_within_the_shop(engine: BM25SearchEngine) -> None:
    items = (_item("t1"), _item("t2"))
    # "wallet" lists sixty other wallets globally, never the leather one; within shop s1 it does.
    assert "t2" not in engine.listing(FindProductQuery(q="wallet", price=None, service=("COD",)))
    assert _check(engine, _AllApart()).solvable(SampledProblem("shop", items, "s1", None), ["tote", "wallet"])
    # A platform voucher's items are not of one shop: no shop-scoped search.
    voucher = Voucher(voucher_type="platform", threshold=300, discount_type="fixed", face_value=40,
                      budget=400)
    assert not _check(engine, _AllApart()).solvable(SampledProblem("voucher", items, None, voucher),
                                                    ["tote", "wallet"])
