"""The default generator's sampler draws what ShoppingBench's ``run_synthesize.py`` draws.

Keep probabilities, price modes and bounds, item counts and voucher rules are checked as frequencies
over many seeded draws against their exact expected values, with a tolerance of 5 standard errors of
the sample size (the seeds are fixed, so a run never flakes). The catalog tests use a real built catalog.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator

import pytest

from shoppingbench.catalog.models import Product
from shoppingbench.catalog_dir import build_catalog, open_catalog
from shoppingbench.generator.config import GeneratorConfig
from shoppingbench.generator.sampler import (
    SampledProblem,
    draw_product,
    sample_item,
    sample_price,
    sample_problem,
    sample_voucher,
)
from shoppingbench.problems.draws import HashDraws
from shoppingbench.problems.models import Category
from shoppingbench.search.catalog_view import CatalogView
from tests.shoppingbench.generator.test_generator_sbgen1 import imported_products, write_documents

CONFIG = GeneratorConfig()
DRAWS = 4000


def within(observed: int, n: int, p: float) -> bool:
    """``observed`` successes out of ``n`` are within 5 standard errors of probability ``p``."""
    return abs(observed / n - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12


def _product(**fields: object) -> Product:
    base: dict[str, object] = {"product_id": "p1", "shop_id": "s1", "title": "Canvas Tote Bag", "price": 99.5}
    return Product.model_validate(base | fields)


# --- one item ------------------------------------------------------------------------------------


def test_the_first_kept_sku_option_is_stated_whole_with_halving_odds() -> None:
    options = {"a": {"color": "red", "size": "m"}, "b": {"color": "blue", "size": "l"},
               "c": {"color": "green", "size": "s"}}
    targets = [sample_item(_product(sku_options=options), HashDraws("sku", str(i)), CONFIG, with_price=False)
               .target for i in range(DRAWS)]
    stated = Counter(t.sku_options[0]["color"] if t.sku_options else None for t in targets)
    for value, p in (("red", 1 / 2), ("blue", 1 / 4), ("green", 1 / 8), (None, 1 / 8)):
        assert within(stated[value], DRAWS, p), (value, stated)
    by_color = {o["color"]: o for o in options.values()}
    assert all(t.sku_options[0] == by_color[t.sku_options[0]["color"]] for t in targets if t.sku_options)
    assert all(len(t.sku_options) <= 1 and t.title == ["Canvas Tote Bag"] for t in targets)


def test_each_attribute_and_service_is_kept_with_probability_one_half() -> None:
    attributes = {"material": ["canvas", "cotton", "jute"], "origin": ["china"],
                  "pattern": ["plain", "striped"]}
    product = _product(attributes=attributes, service=["COD", "freeShipping", "official"])
    targets = [sample_item(product, HashDraws("attr", str(i)), CONFIG, with_price=False).target
               for i in range(DRAWS)]
    kept = Counter(key for t in targets for a in t.attributes for key in a)
    for key in attributes:
        assert within(kept[key], DRAWS, 1 / 2), (key, kept)
    materials = Counter(a["material"][0] for t in targets for a in t.attributes if "material" in a)
    for value in attributes["material"]:
        assert within(materials[value], kept["material"], 1 / 3), materials
    services = Counter(s for t in targets for s in t.service)
    for service in product.service:
        assert within(services[service], DRAWS, 1 / 2), services
    both = sum(1 for t in targets if {"COD", "official"} <= set(t.service))
    assert within(both, DRAWS, 1 / 4)  # kept independently


def test_price_modes_are_tried_in_order_with_the_reference_bounds() -> None:
    price = 99.5  # int(price) = 99: "less than" is valid unless randint gave 0; "greater than" always
    conditions = [sample_price(price, HashDraws("price", str(i)), 1) for i in range(DRAWS)]
    modes = Counter(next(iter(c)) if c else None for c in conditions)
    upper_ok = 99 / 100
    less = upper_ok / 2
    greater = (1 - less) / 2
    between = (1 - less) * (1 / 2) * upper_ok / 2  # reached, "greater than" not kept, kept and valid
    for mode, p in (("less than", less), ("greater than", greater), ("between", between),
                    (None, 1 - less - greater - between)):
        assert within(modes[mode], DRAWS, p), (mode, modes)
    lows = [int(b[0]) for c in conditions if c for b in c.values() if b[0] is not None]
    highs = [int(b[1]) for c in conditions if c for b in c.values() if b[1] is not None]
    assert min(lows) == 0 and max(lows) == 99  # int(99.5 - randint(0, 99))
    assert min(highs) == 100 and max(highs) == 198  # int(99.5 + randint(1..99))


def test_a_mode_whose_bounds_miss_the_price_is_passed_over() -> None:
    # A price below 1 has int(price) = 0: every bound is int(price) itself, and only "greater than 0" holds.
    conditions = [sample_price(0.5, HashDraws("cheap", str(i)), 1) for i in range(400)]
    assert {next(iter(c)) for c in conditions if c} == {"greater than"}
    assert all(c == {"greater than": [0.0, None]} for c in conditions if c)
    # "less than" is always passed over (kept or not), so "greater than" is reached and kept half the time.
    assert within(sum(1 for c in conditions if c), 400, 1 / 2)


def test_unstatable_values_are_passed_over_without_a_draw() -> None:
    clean = _product(attributes={"material": ["canvas"]})
    junk = _product(attributes={"brand": ["n/a"], "material": ["canvas"], "notes": ["line one\nline two"]})
    for i in range(200):
        one = sample_item(clean, HashDraws("junk", str(i)), CONFIG, with_price=True).target
        other = sample_item(junk, HashDraws("junk", str(i)), CONFIG, with_price=True).target
        assert one.attributes == other.attributes and one.price == other.price


def test_voucher_items_state_no_price() -> None:
    targets = [sample_item(_product(price=500.0), HashDraws("v", str(i)), CONFIG, with_price=False).target
               for i in range(200)]
    assert not any(t.price for t in targets)


# --- vouchers ------------------------------------------------------------------------------------


def test_vouchers_follow_the_reference_rules() -> None:
    prices = [180.25, 320.0, 99.75]
    total = sum(prices)
    vouchers = [sample_voucher(prices, shop=False, rng=HashDraws("voucher", str(i)), config=CONFIG)
                for i in range(DRAWS)]
    made = [v for v in vouchers if v is not None]
    fixed = [v for v in made if v.discount_type == "fixed"]
    assert within(len(fixed), len(made), 1 / 2)
    thresholds = [v.threshold for v in made]
    assert min(thresholds) == int(total * 0.1) and max(thresholds) == int(total * 0.9)
    for v in made:
        assert v.voucher_type == "platform"
        if v.discount_type == "fixed":
            assert v.face_value is not None
            assert int(v.threshold * 0.1) <= v.face_value <= int(v.threshold * 0.5)
            after = total - v.face_value
        else:
            assert v.discount is not None and v.cap is not None
            assert 10 <= round(v.discount * 100) <= 50 and v.threshold * v.discount < v.cap <= v.threshold
            after = max(total * (1 - v.discount), total - v.cap)
        assert v.price_after_voucher == after
        assert math.ceil(after) <= v.budget <= math.ceil(after) + math.ceil(after * 0.1)
    assert {round(v.discount * 100) for v in made if v.discount is not None} == set(range(10, 51))
    assert sample_voucher([40.0, 59.0], shop=True, rng=HashDraws("small"), config=CONFIG) is None  # < 100


def test_a_percentage_cap_not_above_the_discount_redraws() -> None:
    # Threshold 10 and 50%: cap = randint(5, 10) and 5 is refused, so the odds of a voucher are exact.
    config = GeneratorConfig(threshold_share=(0.1, 0.1), fixed_discount_odds=0, discount_percent=(50, 50))
    vouchers = [sample_voucher([100.0], shop=False, rng=HashDraws("cap", str(i)), config=config)
                for i in range(DRAWS)]
    assert within(sum(1 for v in vouchers if v is not None), DRAWS, 5 / 6)
    assert {v.cap for v in vouchers if v is not None} == {6, 7, 8, 9, 10}


# --- problems over a real catalog ------------------------------------------------------------------


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CatalogView]:
    root = tmp_path_factory.mktemp("sampler-catalog")
    # Prices of 100+ so every voucher basket reaches the reference's minimum total.
    products = [p.model_copy(update={"price": 100 + p.price})
                for p in imported_products(400, seed=11, shops=40)]
    build_catalog(write_documents(root / "docs.jsonl", products), root / "catalog", progress=False)
    engine = open_catalog(root / "catalog")
    yield CatalogView(engine)
    engine.close()


def _problems(catalog: CatalogView, category: Category, n: int) -> list[SampledProblem]:
    drawn = [sample_problem(category, catalog, HashDraws("problem", category, str(i)), CONFIG, lambda _: True)
             for i in range(n)]
    return [p for p in drawn if p is not None]


def test_products_are_drawn_uniformly(catalog: CatalogView) -> None:
    rng = HashDraws("uniform")
    counts = Counter(p.product_id for _ in range(20_000) if (p := draw_product(catalog, rng, lambda _: True)))
    expected = 20_000 / catalog.size
    assert len(counts) == catalog.size
    assert all(abs(c - expected) <= 5 * math.sqrt(expected) for c in counts.values())


def test_shop_problems_ask_for_two_to_four_items_of_one_shop(catalog: CatalogView) -> None:
    problems = _problems(catalog, "shop", 1500)
    assert len(problems) == 1500  # every shop of this catalog has 4+ products
    sizes = Counter(len(p.items) for p in problems)
    assert all(within(sizes[n], len(problems), 1 / 3) for n in (2, 3, 4)), sizes
    for problem in problems:
        assert {i.product.shop_id for i in problem.items} == {problem.shop_id}
        assert len({i.product.product_id for i in problem.items}) == len(problem.items)


def test_voucher_problems_split_platform_and_shop_with_the_reference_counts(catalog: CatalogView) -> None:
    problems = _problems(catalog, "voucher", 3000)
    platform = [p for p in problems if p.voucher and p.voucher.voucher_type == "platform"]
    shop = [p for p in problems if p.voucher and p.voucher.voucher_type == "shop"]
    assert len(platform) + len(shop) == len(problems) >= 2900  # only a cap at its floor redraws
    assert within(len(shop), len(problems), 1 / 2)
    platform_sizes = Counter(len(p.items) for p in platform)
    assert all(within(platform_sizes[n], len(platform), 1 / 4) for n in (1, 2, 3, 4)), platform_sizes
    shop_sizes = Counter(len(p.items) for p in shop)
    assert all(within(shop_sizes[n], len(shop), 1 / 3) for n in (2, 3, 4)), shop_sizes
    assert all(len({i.product.shop_id for i in p.items}) == 1 for p in shop)
    assert not any(i.target.price for p in problems for i in p.items)


def test_taken_products_are_never_drawn(catalog: CatalogView) -> None:
    taken = {catalog.product_id_at(k) for k in range(0, catalog.size, 2)}
    categories: tuple[Category, ...] = ("product", "shop", "voucher")
    drawn = [sample_problem(category, catalog, HashDraws("free", category, str(i)), CONFIG,
                            lambda pid: pid not in taken) for category in categories for i in range(100)]
    problems = [p for p in drawn if p is not None]
    assert {p.category for p in problems} == set(categories)
    assert all(i.product.product_id not in taken for p in problems for i in p.items)


def test_the_same_key_draws_the_same_problem(catalog: CatalogView) -> None:
    categories: tuple[Category, ...] = ("product", "shop", "voucher")
    for category in categories:
        first = sample_problem(category, catalog, HashDraws("same", category), CONFIG, lambda _: True)
        again = sample_problem(category, catalog, HashDraws("same", category), CONFIG, lambda _: True)
        other = sample_problem(category, catalog, HashDraws("other", category), CONFIG, lambda _: True)
        assert first == again and first != other
