"""Generator version "sbgen-1" (kept for replaying race days before the upgrade) over real catalogs: the
3k sample world and an imported ShoppingBench-format catalog whose sku and attribute keys the sample
world never uses. Its pinned digest proves the move into ``generator/sbgen1`` changed no byte.

Every property is checked against the real search engine and the project's scorer, never a stand-in.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import orjson
import pytest

from shoppingbench.catalog.models import SERVICES, Product, document_for
from shoppingbench.catalog.store import ProductStore
from shoppingbench.catalog_dir import build_catalog
from shoppingbench.generator import ProblemGenerator, catalog_fingerprint
from shoppingbench.generator.fingerprint import CACHE_FILE, hash_store
from shoppingbench.generator.sbgen1.config import GENERATOR_VERSION, GeneratorConfig
from shoppingbench.generator.sbgen1.describe import constraint_kinds
from shoppingbench.problems.draws import HashDraws
from shoppingbench.problems.models import CATEGORIES, Category, Problem
from shoppingbench.problems.solvability import reachable, request_keywords, target_filters
from shoppingbench.problems.wording import SERVICE_PHRASES, number
from shoppingbench.sample_world import SampleWorld
from shoppingbench.scoring import PRODUCTION_STRICT, fits_budget, score_attempt
from shoppingbench.scoring.budget import basket_total
from shoppingbench.scoring.embedder import Vectors
from shoppingbench.scoring.rules import attribute_pairs, sku_attr_hits
from shoppingbench.search.base import FindProductQuery, SearchHit
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.search.index import build_index
from tests.shoppingbench.scoring.test_scoring_support import answered

VERSION = "sbgen-1"
WORLD_COUNTS: dict[Category, int] = {"product": 15, "shop": 10, "voucher": 10}
IMPORTED_COUNTS: dict[Category, int] = {"product": 10, "shop": 6, "voucher": 6}

# --- an imported catalog in the ShoppingBench file format, with keys the sample world does not know ----

_KINDS = (
    ("Computers & Laptops > Laptops", ("laptop", "gaming laptop", "notebook laptop")),
    ("Kitchen & Dining > Cookware > Frying Pans", ("frying pan", "nonstick skillet", "grill pan")),
    ("Toys & Games > Building Blocks", ("building blocks", "brick set", "construction blocks")),
    ("Home & Garden > Planters", ("ceramic planter", "plant pot", "hanging planter")),
    ("Audio > Portable Speakers", ("bluetooth speaker", "party speaker", "portable speaker")),
    ("Beauty > Makeup > Lipsticks", ("matte lipstick", "liquid lipstick", "lip tint")),
    ("Tools > Power Drills", ("cordless drill", "impact drill", "hammer drill")),
    ("Bags > Backpacks", ("travel backpack", "laptop backpack", "hiking backpack")),
)
_BRANDS = ("zentaro", "kovalu", "brightmere", "ostrana", "velquist", "No Brand")
_ADJECTIVES = ("ultra", "slim", "premium", "portable", "heavy duty", "mini", "classic", "pro", "deluxe",
               "compact", "original", "waterproof", "lightweight", "smart", "vintage")
_SKU_KEYS = {
    "ram_size": ("8gb", "16gb", "32gb"),
    "finish_colour": ("matte black", "pearl white", "sage green", "coral"),
    "pot_diameter": ("12cm", "20cm", "28cm"),
    "bundle_choice": ("single", "twin pack", "starter kit"),
}
_ATTRIBUTE_KEYS = {
    "warranty_period": ("1 year", "2 years", "6 months"),
    "origin_region": ("bavaria", "kyushu", "lombardy", "ontario"),
    "surface_coating": ("granite", "ceramic", "titanium"),
    "age_bracket": ("teens", "adults", "kids 6+"),
    "power_rating": ("20w", "45w", "120w"),
}


def imported_products(n: int, seed: int, *, shops: int = 40) -> list[Product]:
    """``n`` products shaped like ShoppingBench's, with sku/attribute keys outside the sample world's."""
    rng = random.Random(seed)
    products = []
    for i in range(n):
        category, types = _KINDS[rng.randrange(len(_KINDS))]
        brand = rng.choice(_BRANDS)
        words = [brand.title() if brand != "No Brand" else "", *rng.sample(_ADJECTIVES, 2),
                 rng.choice(types), f"{rng.choice('XKQZ')}{rng.randint(10, 999)}"]
        sku_keys = rng.sample(sorted(_SKU_KEYS), rng.randint(0, 2))
        options = {str(o + 1): {k: rng.choice(_SKU_KEYS[k]) for k in sku_keys}
                   for o in range(rng.randint(1, 3))} if sku_keys else {}
        attributes = {k: rng.sample(_ATTRIBUTE_KEYS[k], rng.randint(1, 2))
                      for k in rng.sample(sorted(_ATTRIBUTE_KEYS), rng.randint(0, 3))}
        products.append(Product(
            product_id=str(7_000_000_000 + i * 7919 % 1_000_003), shop_id=str(500 + rng.randrange(shops)),
            brand=brand, category=category, title=" ".join(w for w in words if w).title(),
            price=round(rng.uniform(49, 6000), rng.choice((0, 2))), sold_count=rng.randint(0, 20_000),
            sku_options=options, attributes=attributes,
            service=[s for s in SERVICES if rng.random() < 0.35]))
    return products


def write_documents(path: Path, products: Sequence[Product]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(document_for(p).model_dump()) + b"\n" for p in products))
    return path


@pytest.fixture(scope="module")
def imported_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("imported-catalog")
    documents = write_documents(root / "documents.jsonl", imported_products(400, seed=5))
    build_catalog(documents, root / "catalog", progress=False)
    return root / "catalog"


@pytest.fixture(scope="module")
def imported(imported_dir: Path) -> Iterator[ProblemGenerator]:
    with ProblemGenerator.open(imported_dir, version=VERSION) as generator:
        yield generator


@pytest.fixture(scope="module")
def world(small_world: SampleWorld, small_engine: BM25SearchEngine) -> ProblemGenerator:
    return ProblemGenerator(small_engine, fingerprint=catalog_fingerprint(small_world.catalog_dir),
                            version=VERSION)


@pytest.fixture(scope="module")
def suites(world: ProblemGenerator, imported: ProblemGenerator) -> dict[str, list[Problem]]:
    return {"world": world.generate("race-2026-11-21", WORLD_COUNTS),
            "imported": imported.generate("race-2026-11-21", IMPORTED_COUNTS)}


@pytest.fixture(scope="module")
def all_problems(suites: dict[str, list[Problem]], world: ProblemGenerator,
                 imported: ProblemGenerator) -> list[tuple[ProblemGenerator, Problem]]:
    return [(world, p) for p in suites["world"]] + [(imported, p) for p in suites["imported"]]


class _Paged:
    """The ``find_product`` tool alone, page by page as agents call it (none of the generator's shortcuts)."""

    def __init__(self, engine: BM25SearchEngine) -> None:
        self.engine = engine

    def find_product(self, query: FindProductQuery) -> list[SearchHit]:
        return self.engine.find_product(query)


class _NoTitlesNeeded:
    """A title embedder for answers that are the targets themselves: the scorer must never call it."""

    name = "unused"

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise AssertionError(f"a gt match needs no title embedding, asked for {texts}")


def _suite_bytes(problems: Sequence[Problem]) -> list[str]:
    return [p.model_dump_json() for p in problems]


# --- determinism ---------------------------------------------------------------------------------


def test_same_inputs_give_the_same_bytes_from_a_fresh_generator(
        small_world: SampleWorld, imported_dir: Path, suites: dict[str, list[Problem]]) -> None:
    with ProblemGenerator.open(small_world.catalog_dir, version=VERSION) as again:
        assert _suite_bytes(again.generate("race-2026-11-21", WORLD_COUNTS)) == _suite_bytes(suites["world"])
    with ProblemGenerator.open(imported_dir, version=VERSION) as again:
        assert (_suite_bytes(again.generate("race-2026-11-21", IMPORTED_COUNTS))
                == _suite_bytes(suites["imported"]))


def test_a_pinned_suite_keeps_its_bytes_until_the_version_is_bumped(imported: ProblemGenerator) -> None:
    """Changing what the generator writes for the same inputs must bump GENERATOR_VERSION (and this pin)."""
    suite = imported.generate("pinned", {"product": 3, "shop": 2, "voucher": 2})
    digest = hashlib.sha256("\n".join(_suite_bytes(suite)).encode()).hexdigest()
    assert (GENERATOR_VERSION, digest[:16]) == ("sbgen-1", PINNED_SUITE_DIGEST)


PINNED_SUITE_DIGEST = "78174bedef18d43e"


def test_different_seeds_give_different_suites(world: ProblemGenerator, imported: ProblemGenerator,
                                               suites: dict[str, list[Problem]]) -> None:
    other = world.generate("race-2026-11-22", WORLD_COUNTS)
    assert {p.id for p in other}.isdisjoint({p.id for p in suites["world"]})
    targets = {t.product_id for p in suites["world"] for t in p.targets}
    assert len(targets & {t.product_id for p in other for t in p.targets}) < len(targets) / 4
    assert {p.id for p in imported.generate("another", IMPORTED_COUNTS)} != {p.id for p in suites["imported"]}


def test_draws_are_fixed_functions_of_their_key() -> None:
    first = HashDraws("sbgen-1", "fp", "seed", "product", "0")
    again = HashDraws("sbgen-1", "fp", "seed", "product", "0")
    values = [first.below(1000) for _ in range(50)]
    assert values == [again.below(1000) for _ in range(50)]
    assert values != [HashDraws("sbgen-1", "fp", "seed", "product", "1").below(1000) for _ in range(50)]
    # The stream is SHA-256 in counter mode: its first word is the digest's first 8 bytes, on any machine.
    key = hashlib.sha256(b"a").digest()
    expected = int.from_bytes(hashlib.sha256(key + (0).to_bytes(8, "big")).digest()[:8], "big")
    assert HashDraws("a").below(1 << 64) == expected
    draws = HashDraws("spread")
    counts = np.bincount([draws.below(7) for _ in range(7000)], minlength=7)
    assert counts.min() > 850 and counts.max() < 1150
    assert sorted(draws.sample(range(10), 10)) == list(range(10))
    assert all(2 <= draws.randint(2, 4) <= 4 for _ in range(100))


# --- shape of a suite ----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "counts"), [("world", WORLD_COUNTS), ("imported", IMPORTED_COUNTS)])
def test_counts_are_met_in_category_order_and_no_target_repeats(
        suites: dict[str, list[Problem]], name: str, counts: dict[Category, int]) -> None:
    suite = suites[name]
    assert [p.category for p in suite] == [c for c in CATEGORIES for _ in range(counts[c])]
    targets = [t.product_id for p in suite for t in p.targets]
    assert len(targets) == len(set(targets))
    assert all(p.difficulty is None for p in suite)


def test_excluded_products_are_never_targets(world: ProblemGenerator,
                                             suites: dict[str, list[Problem]]) -> None:
    burnt = frozenset(t.product_id for p in suites["world"] for t in p.targets)
    fresh = world.generate("race-2026-11-21", WORLD_COUNTS, exclude_products=burnt)
    assert [p.category for p in fresh] == [p.category for p in suites["world"]]
    assert burnt.isdisjoint(t.product_id for p in fresh for t in p.targets)


def test_a_catalog_that_cannot_supply_a_category_gives_fewer_without_raising(tmp_path: Path) -> None:
    products = [p.model_copy(update={"shop_id": f"solo-{i}"}) for i, p in enumerate(imported_products(60, 9))]
    build_catalog(write_documents(tmp_path / "docs.jsonl", products), tmp_path / "catalog", progress=False)
    with ProblemGenerator.open(tmp_path / "catalog", version=VERSION) as generator:
        suite = generator.generate("s", {"product": 3, "shop": 3})
        assert [p.category for p in suite] == ["product"] * 3  # no shop sells two items
        everything = frozenset(p.product_id for p in products)
        assert generator.generate("s", {"product": 3, "voucher": 2}, exclude_products=everything) == []
        assert generator.generate("s", {}) == []
        with pytest.raises(ValueError, match="unknown problem categories"):
            generator.generate("s", {"bundle": 1})  # type: ignore[dict-item]


# --- every problem is solvable and decided by its reward ----------------------------------------


def test_every_problem_is_solvable_by_a_paged_keyword_search(
        all_problems: list[tuple[ProblemGenerator, Problem]]) -> None:
    for generator, problem in all_problems:
        paged = _Paged(generator.engine)
        products = generator.engine.get_products([t.product_id for t in problem.targets])
        shops = {p.shop_id for p in products.values()}
        globally = 0
        for target in problem.targets:
            product = products[target.product_id]
            q = request_keywords(problem.query, product)
            price, services = target_filters(target)
            if reachable(paged, product.product_id, q, price=price, services=services):
                globally += 1
            else:
                assert problem.category != "product" and len(shops) == 1, problem.query
                assert reachable(paged, product.product_id, q, price=price, services=services,
                                 shop_id=product.shop_id), problem.query
        assert globally >= 1, problem.query


def test_targets_meet_every_stated_constraint_and_score_success(
        all_problems: list[tuple[ProblemGenerator, Problem]]) -> None:
    for generator, problem in all_problems:
        products = generator.engine.get_products([t.product_id for t in problem.targets])
        for target in problem.targets:
            product = products[target.product_id]
            assert target.title == [product.title]
            assert all(c.satisfied_by(product.price) for c in target.price_conditions())
            assert set(target.service) <= set(product.service)
            pairs = attribute_pairs(target)
            assert sku_attr_hits(product, pairs) == len(pairs)
            stated = target.sku_options or target.attributes or target.service or target.price
            assert stated or problem.category != "product"
        steps = answered(",".join(t.product_id for t in problem.targets))
        score = score_attempt(problem, steps, generator.engine.get_products, _NoTitlesNeeded(),
                              PRODUCTION_STRICT)
        assert score.success and score.rule == 1 and score.gt == 1, problem.query


def test_queries_state_every_constrained_value(all_problems: list[tuple[ProblemGenerator, Problem]]) -> None:
    for _, problem in all_problems:
        query = problem.query.lower()
        for target in problem.targets:
            for _, value in attribute_pairs(target):
                assert value.lower() in query, (value, problem.query)
            for condition in target.price_conditions():
                for bound in (condition.low, condition.high):
                    if bound is not None and bound > 0:
                        assert number(bound) in query, (bound, problem.query)
            for service in target.service:
                assert any(phrase.lower() in query for phrase in SERVICE_PHRASES[service]), problem.query


def test_multi_item_problems_pair_unambiguously(all_problems: list[tuple[ProblemGenerator, Problem]]) -> None:
    for generator, problem in all_problems:
        products = generator.engine.get_products([t.product_id for t in problem.targets])
        kinds = [products[t.product_id].category for t in problem.targets]
        assert len(set(kinds)) == len(kinds), problem.query
        if problem.category == "shop":
            assert 2 <= len(problem.targets) <= 4
            assert len({p.shop_id for p in products.values()}) == 1


def test_voucher_budgets_need_the_voucher_and_suffice_with_it(
        all_problems: list[tuple[ProblemGenerator, Problem]]) -> None:
    vouchers = [(g, p) for g, p in all_problems if p.category == "voucher"]
    assert vouchers
    for generator, problem in vouchers:
        assert problem.voucher is not None
        products = generator.engine.get_products([t.product_id for t in problem.targets])
        prices = [products[t.product_id].price for t in problem.targets]
        shops = {products[t.product_id].shop_id for t in problem.targets}
        assert basket_total(prices) > problem.voucher.budget
        assert fits_budget(prices, shops, problem.voucher)
        if problem.voucher.voucher_type == "shop":
            assert len(shops) == 1
        assert f"`{number(problem.voucher.budget)}`" in problem.query


# --- catalog order, fingerprint and space ----------------------------------------------------------


def test_ranks_follow_product_id_order_whatever_the_index_build_order(tmp_path: Path) -> None:
    products = imported_products(120, seed=3)
    shuffled = [document_for(p) for p in random.Random(1).sample(products, len(products))]
    with ProductStore(tmp_path / "products.sqlite3") as store:
        store.upsert(shuffled)
        build_index(shuffled, tmp_path / "index", progress=False)
        engine = BM25SearchEngine(tmp_path / "index", store)
        ids = sorted(p.product_id for p in products)
        assert [engine.product_id_at(k) for k in range(len(ids))] == ids
        shop = products[0].shop_id
        assert engine.shop_product_ids(shop) == sorted(p.product_id for p in products if p.shop_id == shop)
        assert sum(engine.shop_sizes()) == len(products)
        with pytest.raises(IndexError):
            engine.product_id_at(len(ids))


def test_fingerprint_is_stable_cached_and_follows_content(imported_dir: Path, tmp_path: Path) -> None:
    fingerprint = catalog_fingerprint(imported_dir)
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    assert (imported_dir / CACHE_FILE).exists()
    assert catalog_fingerprint(imported_dir) == fingerprint == hash_store(imported_dir / "products.sqlite3")

    products = imported_products(400, seed=5)
    # The same products from a file in another order, built elsewhere: the same fingerprint.
    reordered = write_documents(tmp_path / "reordered.jsonl", list(reversed(products)))
    build_catalog(reordered, tmp_path / "same", progress=False)
    assert catalog_fingerprint(tmp_path / "same") == fingerprint
    # One price changed: another fingerprint, and rebuilding in place does not reuse the stale cache.
    changed = [products[0].model_copy(update={"price": products[0].price + 1}), *products[1:]]
    build_catalog(write_documents(tmp_path / "changed.jsonl", changed), tmp_path / "same", progress=False)
    assert catalog_fingerprint(tmp_path / "same") != fingerprint


def test_the_space_is_far_larger_than_a_suite(world: ProblemGenerator, imported: ProblemGenerator) -> None:
    space = world.space()
    assert set(space) == set(CATEGORIES)
    assert space["product"] > 10**6 and space["shop"] > 10**5 and space["voucher"] > 10**5
    assert world.space() == space  # cached and deterministic
    assert all(count > 1000 for count in imported.space().values())


def test_the_configuration_shapes_the_problems(small_world: SampleWorld) -> None:
    config = GeneratorConfig(product_constraints=(3, 3), shop_items=(3, 3), voucher_items=(1, 1))
    with ProblemGenerator.open(small_world.catalog_dir, config, version=VERSION) as generator:
        suite = generator.generate("configured", {"product": 5, "shop": 3, "voucher": 3})
        assert len(suite) == 11
        products = generator.engine.get_products([t.product_id for p in suite for t in p.targets])
    for problem in suite:
        if problem.category == "product":
            target = problem.targets[0]
            stated = (bool(target.sku_options) + len(target.attributes) + bool(target.service)
                      + bool(target.price))
            assert stated >= min(3, len(constraint_kinds(products[target.product_id], config)))
        if problem.category == "shop":
            assert len(problem.targets) in (2, 3)
        if problem.category == "voucher":
            assert len(problem.targets) == 1
    with pytest.raises(ValueError):
        GeneratorConfig(shop_items=(1, 2))
