"""The sample world: catalog realism and determinism, problems, solvability, files and paraphrasing."""

from __future__ import annotations

import gzip
import hashlib
import itertools
import math
import random
import re
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from structlog.testing import capture_logs

from shoppingbench.catalog.models import SERVICES, CatalogDocument, Product, build_contents, document_for
from shoppingbench.catalog.store import ProductStore
from shoppingbench.catalog_dir import build_catalog, open_catalog
from shoppingbench.problems.models import Problem, RewardTarget
from shoppingbench.sample_world import ensure_sample_world
from shoppingbench.search.base import MAX_PAGE, FindProductQuery, PriceRange
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.search.index import build_index
from shoppingbench.settings import LLMSettings
from shoppingbench.world import (
    generate_problems,
    generate_products,
    paraphrase_queries,
    write_world,
)
from tests.servers import running_server

COUNTS = {"product": 60, "shop": 30, "voucher": 30}


@pytest.fixture(scope="module")
def catalog() -> list[Product]:
    return list(generate_products(3000, seed=7))


@pytest.fixture(scope="module")
def by_id(catalog: list[Product]) -> dict[str, Product]:
    return {p.product_id: p for p in catalog}


@pytest.fixture(scope="module")
def engine(catalog: list[Product], tmp_path_factory: pytest.TempPathFactory) -> Iterator[BM25SearchEngine]:
    """The real BM25 engine over ``catalog``."""
    root = tmp_path_factory.mktemp("world-engine")
    documents = [document_for(p) for p in catalog]
    with ProductStore(root / "products.sqlite3") as store:
        store.upsert(documents)
        build_index(documents, root / "index", progress=False)
        yield BM25SearchEngine(root / "index", store)


@pytest.fixture(scope="module")
def problems(catalog: list[Product], engine: BM25SearchEngine) -> list[Problem]:
    return generate_problems(catalog, counts=COUNTS, seed=3, engine=engine)


# --- catalog -------------------------------------------------------------------------------------


def test_products_stream_and_are_deterministic() -> None:
    stream = generate_products(400, seed=11)
    assert not isinstance(stream, list | tuple)
    first = next(stream)
    assert [first, *stream] == list(generate_products(400, seed=11))
    assert list(generate_products(400, seed=12)) != list(generate_products(400, seed=11))
    assert sum(1 for _ in generate_products(37, seed=1)) == 37
    assert list(generate_products(0)) == []


def test_generation_is_fast_enough_for_large_catalogs() -> None:
    # The search benchmark builds 1M products; the target is >= 20k/s. This bound only catches
    # accidental super-linear work on a busy shared machine.
    started = time.perf_counter()
    assert sum(1 for _ in generate_products(20_000, seed=5)) == 20_000
    assert time.perf_counter() - started < 5.0


def test_ids_are_distinct_numeric_and_of_mixed_length(catalog: list[Product]) -> None:
    ids = [p.product_id for p in catalog]
    assert len(set(ids)) == len(ids)
    assert all(i.isdigit() and 7 <= len(i) <= 10 for i in ids)
    assert len({len(i) for i in ids}) == 4
    assert sorted(ids) != sorted(ids, key=int), "string order must differ from numeric order"
    shops = {p.shop_id for p in catalog}
    assert all(s.isdigit() for s in shops)
    assert len(catalog) / 30 < len(shops) < len(catalog) / 8


def test_sku_and_attribute_keys_and_values_are_lower_case(catalog: list[Product]) -> None:
    for product in catalog:
        for option in product.sku_options.values():
            assert all(k == k.lower() and v == v.lower() for k, v in option.items()), product
        for key, values in product.attributes.items():
            assert key == key.lower() and all(v == v.lower() for v in values), product
        assert product.brand == product.brand.lower()


def test_fields_look_like_a_marketplace(catalog: list[Product]) -> None:
    n = len(catalog)
    tops = {p.category.split(" > ")[0] for p in catalog}
    assert len(tops) >= 25
    assert all(p.category.count(" > ") >= 1 for p in catalog)
    branded = sum(1 for p in catalog if p.brand)
    assert 0.6 * n < branded < n
    assert all(p.title and p.description and p.specification and p.sku_options for p in catalog)
    assert sum(1 for p in catalog if p.short_description) > 0.7 * n
    assert sum(1 for p in catalog if p.attributes) > 0.9 * n
    prices = [p.price for p in catalog]
    assert all(isinstance(x, float) and 1 <= x <= 50_000 for x in prices)
    assert statistics.median(prices) > 100
    sold = sorted(p.sold_count for p in catalog)
    assert sold[-1] > 50 * max(1, sold[n // 2]), "sold_count should be heavy-tailed"
    services = Counter(s for p in catalog for s in p.service)
    assert set(services) == set(SERVICES)
    assert all(p.service == [s for s in SERVICES if s in p.service] for p in catalog)
    titles = " ".join(p.title for p in catalog)
    assert "【" in titles
    assert re.search(r"\b\d+(?:\.\d+)?(?:ml|l|cm|mm|gb|mah|w|kg|g)\b", titles, re.IGNORECASE)
    assert re.search(r"\b\d+(?:\.\d+)? inch\b", titles, re.IGNORECASE)
    assert re.search(r"\b(?:AR15|M4|T900|G102|RK61|V10)\b", titles)


def test_catalog_is_full_of_near_duplicates(catalog: list[Product]) -> None:
    """Re-listings: same category and brand, mostly the same title words, another shop."""
    buckets: dict[tuple[str, str], list[Product]] = defaultdict(list)
    for product in catalog:
        buckets[(product.category, product.brand)].append(product)

    def words(p: Product) -> set[str]:
        return set(re.findall(r"[a-z0-9]+", p.title.lower()))

    duplicated = 0
    differing = 0
    for group in buckets.values():
        for a in group:
            twins = [b for b in group if b is not a and b.shop_id != a.shop_id
                     and len(words(a) & words(b)) / len(words(a) | words(b)) >= 0.5]
            duplicated += bool(twins)
            differing += any(b.sku_options != a.sku_options or b.price != a.price for b in twins)
    assert duplicated > 0.4 * len(catalog)
    assert differing > 0.35 * len(catalog)


# --- problems ------------------------------------------------------------------------------------


def satisfies(product: Product, target: RewardTarget) -> bool:
    """Every constraint the target states holds for ``product`` (bounds inclusive)."""
    for pairs in target.sku_options:
        options = product.sku_options.values()
        if not any(all(option.get(k) == v for k, v in pairs.items()) for option in options):
            return False
    for attribute in target.attributes:
        for key, values in attribute.items():
            if not all(v in product.attributes.get(key, []) for v in values):
                return False
    if not set(target.service) <= set(product.service):
        return False
    return all(c.satisfied_by(product.price) for c in target.price_conditions())


def test_problem_counts_shapes_and_round_trip(problems: list[Problem]) -> None:
    assert Counter(p.category for p in problems) == COUNTS
    assert len({p.id for p in problems}) == len(problems)
    for problem in problems:
        line = orjson.loads(orjson.dumps(problem.to_shoppingbench()))
        again = Problem.from_shoppingbench(line, problem.category)
        assert again.targets == problem.targets and again.voucher == problem.voucher
        assert set(line) == ({"query", "reward", "voucher"} if problem.category == "voucher"
                             else {"query", "reward"})


def test_problems_are_deterministic(catalog: list[Product], problems: list[Problem],
                                    engine: BM25SearchEngine) -> None:
    assert generate_problems(catalog, counts=COUNTS, seed=3, engine=engine) == problems
    assert generate_problems(catalog, counts=COUNTS, seed=4, engine=engine) != problems


def test_targets_satisfy_their_own_constraints(problems: list[Problem], by_id: dict[str, Product]) -> None:
    stated: Counter[str] = Counter()
    for problem in problems:
        for target in problem.targets:
            product = by_id[target.product_id]
            assert target.title == [product.title]
            assert satisfies(product, target), (problem.query, target)
            stated.update(k for k in ("sku_options", "attributes", "service", "price") if getattr(target, k))
            for condition in target.price:
                assert next(iter(condition)) in {"between", "greater than", "less than"}
    assert min(stated.values()) >= 10 and len(stated) == 4
    relations = Counter(next(iter(c)) for p in problems for t in p.targets for c in t.price)
    assert set(relations) == {"between", "greater than", "less than"}


def test_multi_item_targets_are_distinct_and_shop_targets_share_a_shop(
        problems: list[Problem], by_id: dict[str, Product]) -> None:
    for problem in problems:
        ids = [t.product_id for t in problem.targets]
        assert len(set(ids)) == len(ids)
        assert len({by_id[i].category for i in ids}) == len(ids)
        if problem.category == "shop":
            assert 2 <= len(ids) <= 4
            assert len({by_id[i].shop_id for i in ids}) == 1


def test_voucher_arithmetic(problems: list[Problem], by_id: dict[str, Product]) -> None:
    vouchers = [p for p in problems if p.category == "voucher"]
    kinds = Counter((p.voucher.voucher_type, p.voucher.discount_type) for p in vouchers if p.voucher)
    assert {k for k, _ in kinds} == {"platform", "shop"} and {d for _, d in kinds} == {"fixed", "percentage"}
    for problem in vouchers:
        voucher = problem.voucher
        assert voucher is not None and 1 <= len(problem.targets) <= 3
        products = [by_id[t.product_id] for t in problem.targets]
        total = sum(p.price for p in products)
        if voucher.discount_type == "fixed":
            after = total - (voucher.face_value or 0)
        else:
            assert voucher.discount is not None and voucher.cap is not None and 0 < voucher.discount < 1
            after = max(total * (1 - voucher.discount), total - voucher.cap)
        assert total >= voucher.threshold
        assert after <= voucher.budget < total
        assert voucher.price_after_voucher == pytest.approx(after, abs=1e-3)
        if voucher.voucher_type == "shop":
            assert len({p.shop_id for p in products}) == 1
        budget = str(int(voucher.budget)) if voucher.budget.is_integer() else str(voucher.budget)
        assert f"My budget is only `{budget}`" in problem.query
        assert ("same shop" in problem.query) == (voucher.voucher_type == "shop")


def test_queries_read_like_shoppers_and_hide_ids(problems: list[Problem], catalog: list[Product]) -> None:
    ids = {p.product_id for p in catalog}
    for problem in problems:
        assert not re.search(r"\d{7,}", problem.query), problem.query
        assert not any(t.product_id in problem.query for t in problem.targets)
        assert not set(re.findall(r"\d+", problem.query)) & ids
    openers = {" ".join(p.query.split()[:2]) for p in problems if p.category == "product"}
    assert len(openers) >= 8
    text = " ".join(p.query for p in problems).lower()
    for phrase in ("free shipping", "official", "cash on delivery", "flash", "pesos"):
        assert phrase in text
    # Stated facts appear verbatim: each constrained value and price bound is in the query.
    for problem in problems:
        query = problem.query.lower()
        for target in problem.targets:
            for pairs in target.sku_options:
                assert all(v in query for v in pairs.values()), (query, pairs)
            for attribute in target.attributes:
                assert all(v in query for vs in attribute.values() for v in vs), (query, attribute)


def test_unknown_category_is_rejected(catalog: list[Product], engine: BM25SearchEngine) -> None:
    with pytest.raises(ValueError, match="unknown problem categories"):
        generate_problems(catalog[:50], counts={"bundle": 1}, engine=engine)


# --- solvability against the real search engine --------------------------------------------------


def _keywords(query: str, product: Product) -> str:
    """What an agent would search for one item: the request's words that describe it."""
    described = set(re.findall(r"[a-z0-9]+(?:[.:-][a-z0-9]+)*", build_contents(product).lower()))
    words = re.findall(r"[a-z0-9]+(?:[.:-][a-z0-9]+)*", query.lower())
    return " ".join(dict.fromkeys(w for w in words if w in described))


def _found(engine: BM25SearchEngine, target: RewardTarget, q: str, shop_id: str | None = None) -> bool:
    price = None
    for condition in target.price_conditions():
        price = PriceRange(low=condition.low, high=condition.high)
    for page in range(1, MAX_PAGE + 1):
        hits = engine.find_product(FindProductQuery(q=q, page=page, price=price,
                                                    service=tuple(target.service), shop_id=shop_id))
        if any(hit.product_id == target.product_id for hit in hits):
            return True
    return False


def _assert_solvable(problems: list[Problem], engine: BM25SearchEngine, by_id: dict[str, Product]) -> None:
    for problem in problems:
        found = [_found(engine, t, _keywords(problem.query, by_id[t.product_id])) for t in problem.targets]
        if len(problem.targets) == 1:
            assert found[0], problem.query
            continue
        # Multi-item: one item leads to the shop; the rest are then found within that shop.
        assert any(found), problem.query
        shop = by_id[problem.targets[0].product_id].shop_id
        for target, global_hit in zip(problem.targets, found, strict=True):
            if not global_hit:
                assert by_id[target.product_id].shop_id == shop
                q = _keywords(problem.query, by_id[target.product_id])
                assert _found(engine, target, q, shop), problem.query


def test_every_problem_is_solvable_with_the_tools(
        problems: list[Problem], engine: BM25SearchEngine, by_id: dict[str, Product]) -> None:
    assert Counter(p.category for p in problems) == COUNTS
    _assert_solvable(problems, engine, by_id)


def test_top_hit_is_often_not_the_answer(
        problems: list[Problem], engine: BM25SearchEngine, by_id: dict[str, Product]) -> None:
    """Near-duplicates outrank many targets: solving takes constraint checks, not the first hit."""
    not_first = 0
    product_problems = [p for p in problems if p.category == "product"]
    for problem in product_problems:
        target = problem.targets[0]
        hits = engine.find_product(FindProductQuery(q=_keywords(problem.query, by_id[target.product_id])))
        not_first += not hits or hits[0].product_id != target.product_id
    assert not_first >= 0.25 * len(product_problems)


# --- files ---------------------------------------------------------------------------------------


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _catalog_engine(catalog_dir: Path) -> Any:
    """An engine factory as the sample world uses it: import the written documents, index, open."""
    def factory(documents: Path) -> BM25SearchEngine:
        build_catalog(documents, catalog_dir, strict=True, progress=False)
        return open_catalog(catalog_dir)
    return factory


def test_write_world_is_byte_identical_and_readable(tmp_path: Path) -> None:
    counts = {"product": 12, "shop": 6, "voucher": 6}
    first, second, other = (
        write_world(tmp_path / name, products=1500, seed=seed, counts=counts,
                    engine_factory=_catalog_engine(tmp_path / f"{name}-catalog"))
        for name, seed in (("a", 9), ("b", 9), ("c", 10)))
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    assert first == second and first.files != other.files
    assert first.problems == counts and first.products == 1500
    for name, digest in first.files.items():
        assert hashlib.sha256((tmp_path / "a" / name).read_bytes()).hexdigest() == digest
    manifest = orjson.loads((tmp_path / "a" / "manifest.json").read_bytes())
    assert manifest["seed"] == 9 and set(manifest["files"]) == set(first.files)

    lines = gzip.decompress((tmp_path / "a" / "documents.jsonl.gz").read_bytes()).splitlines()
    documents = [CatalogDocument.model_validate(orjson.loads(line)) for line in lines]
    assert documents == [document_for(p) for p in generate_products(1500, seed=9)]
    for category, wanted in counts.items():
        rows = (tmp_path / "a" / "problems" / f"{category}.jsonl").read_bytes().splitlines()
        assert len(rows) == wanted
        assert all(Problem.from_shoppingbench(orjson.loads(r), category).category == category for r in rows)


def test_write_world_uses_the_engine_factory(tmp_path: Path) -> None:
    built: list[Path] = []

    def factory(documents: Path) -> Any:
        built.append(documents)
        lines = gzip.decompress(documents.read_bytes()).splitlines()
        docs = [CatalogDocument.model_validate(orjson.loads(line)) for line in lines]
        store = ProductStore(tmp_path / "store.sqlite3")
        store.upsert(docs)
        build_index(docs, tmp_path / "index", progress=False)
        return BM25SearchEngine(tmp_path / "index", store)

    counts = {"product": 5, "shop": 2, "voucher": 2}
    manifest = write_world(tmp_path / "w", products=800, seed=2, counts=counts, engine_factory=factory)
    assert built == [tmp_path / "w" / "documents.jsonl.gz"]
    assert manifest.problems == counts


SMALL = {"product": 5, "shop": 2, "voucher": 2}


def _ensure(world_dir: Path, **changes: Any) -> str:
    """Run ensure_sample_world; returns whether it ``reused`` or ``generated`` the world."""
    options: dict[str, Any] = {"products": 800, "seed": 1, "counts": SMALL, "progress": False, **changes}
    with capture_logs() as logs:
        ensure_sample_world(world_dir, **options)
    events = {entry["event"] for entry in logs}
    return "reused" if "sample_world_reused" in events else "generated"


def test_an_interrupted_regeneration_is_redone_not_reused(tmp_path: Path) -> None:
    world = tmp_path / "w"
    assert _ensure(world) == "generated"
    seed_one = _tree(world)

    def killed(_documents: Path) -> Any:
        raise KeyboardInterrupt  # the process dies once the seed-2 documents are on disk

    with pytest.raises(KeyboardInterrupt):
        write_world(world, products=800, seed=2, counts=SMALL, engine_factory=killed)
    assert not (world / "manifest.json").exists()

    assert _ensure(world) == "generated"
    assert {k: v for k, v in _tree(world).items() if not k.startswith("catalog/")} == {
        k: v for k, v in seed_one.items() if not k.startswith("catalog/")}
    assert _ensure(world) == "reused"


def _truncate_manifest(world: Path) -> None:
    manifest = world / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:40])


def _edit_problem_file(world: Path) -> None:
    with (world / "problems" / "shop.jsonl").open("ab") as handle:
        handle.write(b"\n")


def _claim_a_paraphrase(world: Path) -> None:
    manifest = world / "manifest.json"
    manifest.write_bytes(orjson.dumps({**orjson.loads(manifest.read_bytes()), "paraphrased_by": "some-llm"}))


@pytest.mark.parametrize(("damage", "changes"), [
    (_truncate_manifest, {}),
    (_edit_problem_file, {}),
    (_claim_a_paraphrase, {}),
    (lambda _world: None, {"counts": {**SMALL, "voucher": 3}}),
    (lambda world: (world / "documents.jsonl.gz").unlink(), {}),
])
def test_a_damaged_or_different_world_is_regenerated(tmp_path: Path, damage: Any,
                                                     changes: dict[str, Any]) -> None:
    world = tmp_path / "w"
    assert _ensure(world) == "generated"
    assert _ensure(world) == "reused"
    damage(world)
    assert _ensure(world, **changes) == "generated"
    assert _ensure(world, **changes) == "reused"


def test_the_solvability_engine_is_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[BM25SearchEngine] = []
    close = BM25SearchEngine.close

    def spy(engine: BM25SearchEngine) -> None:
        closed.append(engine)
        close(engine)

    monkeypatch.setattr(BM25SearchEngine, "close", spy)
    _ensure(tmp_path / "w")
    assert len(closed) == 1


# --- LLM paraphrasing ----------------------------------------------------------------------------


def _chat_double(mode: dict[str, str]) -> FastAPI:
    """A test double for a hosted OpenAI-compatible LLM: it answers /v1/chat/completions locally.

    ``mode["reply"]`` picks the behaviour: ``keep`` rewords the opener and keeps every fact,
    ``drop`` answers with a vague sentence that loses the facts, ``error`` fails with HTTP 500.
    """
    app = FastAPI()

    @app.post("/v1/chat/completions")
    def chat(body: dict[str, Any]) -> Any:
        request = body["messages"][-1]["content"]
        if mode["reply"] == "error":
            return JSONResponse({"error": {"message": "boom", "type": "server_error"}}, status_code=500)
        reply = ("Hey there! " + request) if mode["reply"] == "keep" else "I want something nice, please."
        return {"id": "chatcmpl-double", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": reply}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    return app


def test_paraphrase_keeps_faithful_rewrites_and_falls_back_otherwise(
        problems: list[Problem], catalog: list[Product]) -> None:
    sample = [*problems[:3], *[p for p in problems if p.category == "voucher"][:2]]
    assert paraphrase_queries(sample, None) == sample
    mode = {"reply": "keep"}
    with running_server(_chat_double(mode)) as base_url:
        settings = LLMSettings(base_url=f"{base_url}/v1", api_key="test", model="double")
        kept = paraphrase_queries(sample, settings, catalog)
        assert [p.query for p in kept] == ["Hey there! " + p.query for p in sample]
        assert [p.targets for p in kept] == [p.targets for p in sample]
        assert all(p.id != q.id for p, q in zip(kept, sample, strict=True))
        voucher = kept[-1]
        assert voucher.voucher == sample[-1].voucher and "\n\nMy budget is only `" in voucher.query
        mode["reply"] = "drop"
        assert paraphrase_queries(sample, settings, catalog) == sample
        mode["reply"] = "error"
        assert paraphrase_queries(sample[:1], settings, catalog) == sample[:1]


def test_paraphrase_falls_back_when_the_endpoint_is_down(problems: list[Problem]) -> None:
    settings = LLMSettings(base_url="http://127.0.0.1:9/v1", model="none", timeout_seconds=2)
    assert paraphrase_queries(problems[:2], settings) == problems[:2]


def test_price_bounds_bracket_the_target_price(problems: list[Problem], by_id: dict[str, Product]) -> None:
    for target in itertools.chain.from_iterable(p.targets for p in problems):
        for condition in target.price_conditions():
            price = by_id[target.product_id].price
            if condition.low is not None:
                assert condition.low == math.floor(condition.low) and condition.low <= price
            if condition.high is not None:
                assert condition.high == math.ceil(condition.high) and price <= condition.high


def test_write_world_rewords_queries_with_a_configured_llm(tmp_path: Path) -> None:
    counts = {"product": 4, "shop": 2, "voucher": 2}
    with running_server(_chat_double({"reply": "keep"})) as base_url:
        llm = LLMSettings(base_url=f"{base_url}/v1", api_key="test", model="double")
        manifest = write_world(tmp_path / "w", products=800, seed=2, counts=counts, llm=llm,
                               engine_factory=_catalog_engine(tmp_path / "catalog"))
    assert manifest.paraphrased_by == "double" and manifest.problems == counts
    queries = [orjson.loads(line)["query"]
               for line in (tmp_path / "w" / "problems" / "product.jsonl").read_bytes().splitlines()]
    assert queries and all(q.startswith("Hey there! ") for q in queries)


def test_a_voucher_is_only_made_when_a_whole_budget_needs_it(catalog: list[Product],
                                                             engine: BM25SearchEngine) -> None:
    from shoppingbench.world.problems import _Builder

    cheap = catalog[0].model_copy(update={"price": 1.51})
    builder = _Builder(catalog, engine, random.Random(0))
    outcomes = [builder._voucher([cheap], None) for _ in range(2000)]
    assert any(v is None for v in outcomes)
    for voucher in (v for v in outcomes if v is not None):
        assert voucher.price_after_voucher is not None
        assert voucher.price_after_voucher <= voucher.budget < cheap.price
