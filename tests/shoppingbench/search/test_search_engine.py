"""BM25SearchEngine against the reference semantics, on real index files and a real SQLite store."""

from __future__ import annotations

import random
import tracemalloc
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest

from shoppingbench.catalog.models import CatalogDocument, Product
from shoppingbench.catalog.store import ProductStore
from shoppingbench.search import engine as engine_module
from shoppingbench.search import index as index_module
from shoppingbench.search.base import FindProductQuery
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.search.index import build_index, byte4_to_int, int_to_byte4


def _product(product_id: str, title: str, *, price: float = 100.0, shop_id: str = "1",
             service: Iterable[str] = (), sold_count: int = 0) -> Product:
    return Product(product_id=product_id, shop_id=shop_id, title=title, price=price,
                   service=list(service), sold_count=sold_count)


def _engine(tmp_path: Path, products: list[Product]) -> BM25SearchEngine:
    documents = [CatalogDocument(id=p.product_id, contents=p.title, product=p) for p in products]
    store = ProductStore(tmp_path / "products.sqlite3")
    store.upsert(documents)
    build_index(documents, tmp_path / "index", total=len(documents), progress=False)
    return BM25SearchEngine(tmp_path / "index", store)


def _ids(engine: BM25SearchEngine, **params: object) -> list[str]:
    return [hit.product_id for hit in engine.find_product(FindProductQuery(**params))]  # type: ignore[arg-type]


def _bits(value: float) -> int:
    return int(np.float32(value).view(np.uint32))


@pytest.fixture
def tiny(tmp_path: Path) -> BM25SearchEngine:
    return _engine(tmp_path, [
        _product("1", "red shoe"), _product("2", "red red shoe box"), _product("3", "blue box"),
        _product("4", "Running shoes for men's feet"),
    ])


# Exact float bits of Lucene 9.9.1's BM25(0.9, 0.4) scores for these queries on the corpus above
# (IndexSearcher over an Anserini-built index, before Anserini rounds scores for display).
@pytest.mark.parametrize(("q", "expected"), [
    ("red", {"2": 1055590146, "1": 1053253774}),
    ("shoe", {"1": 1045246003, "2": 1043648313, "4": 1043648313}),
    ("red box", {"2": 1062034347, "1": 1053253774, "3": 1053253774}),
    ("red red box", {"2": 1067544470, "1": 1061642382, "3": 1053253774}),
    ("shoes men", {"4": 1061538040, "1": 1045246003, "2": 1043648313}),
])
def test_scores_are_lucenes_floats(tiny: BM25SearchEngine, q: str, expected: dict[str, int]) -> None:
    assert {pid: _bits(score) for pid, score in tiny.scores(q).items()} == expected


def test_scores_follow_the_bm25_formula_in_float32(tiny: BM25SearchEngine) -> None:
    f = np.float32
    avgdl = f(12 / 4)  # lengths 2, 4, 2, 4 after stop words
    idf = f(np.log(1 + (4 - 2 + 0.5) / (2 + 0.5)))
    norm_inverse = f(1) / (f(0.9) * ((f(1) - f(0.4)) + f(0.4) * f(4) / avgdl))
    weight = f(1) * idf
    expected = weight - weight / (f(1) + f(2) * norm_inverse)
    assert tiny.scores("red")["2"] == expected


def test_ties_break_by_product_id_string(tiny: BM25SearchEngine) -> None:
    assert _ids(tiny, q="shoe") == ["1", "2", "4"]
    assert _ids(tiny, q="box red") == ["2", "1", "3"]


def test_norm_quantization() -> None:
    assert [int_to_byte4(n) for n in (23, 24, 25, 39, 40, 41, 42, 100)] == [23, 24, 25, 39, 40, 40, 41, 57]
    assert byte4_to_int(40) == 40 and byte4_to_int(41) == 42
    assert all(byte4_to_int(int_to_byte4(n)) == n for n in range(24))


def test_lengths_in_one_norm_bucket_tie_and_order_by_id_string(tmp_path: Path) -> None:
    filler = " ".join(f"w{i}" for i in range(39))
    engine = _engine(tmp_path, [
        _product("9", f"lamp {filler}"),            # 40 terms
        _product("10", f"lamp {filler} extra"),     # 41 terms: same norm byte as 40
        _product("8", f"lamp {filler} extra more"),  # 42 terms: the next bucket, a lower score
    ])
    scores = engine.scores("lamp")
    assert scores["9"] == scores["10"] > scores["8"]
    assert _ids(engine, q="lamp") == ["10", "9", "8"]


def test_duplicate_query_terms_boost_their_term(tmp_path: Path) -> None:
    engine = _engine(tmp_path, [_product("a", "red"), _product("b", "blue"), _product("c", "blue")])
    assert _ids(engine, q="red blue") == ["a", "b", "c"]  # rarer "red" first
    fillers = [_product(f"z{i}", "filler") for i in range(7)]
    engine2 = _engine(tmp_path / "2", [_product("a", "red"), _product("b", "red"), _product("c", "blue"),
                                       *fillers])
    assert _ids(engine2, q="red blue") == ["c", "a", "b"]
    # Anserini sends "red" once with boost 2: 2 x idf(df=2) outweighs idf(df=1).
    assert _ids(engine2, q="red red blue") == ["a", "b", "c"]


def test_pages_and_out_of_range(tmp_path: Path) -> None:
    engine = _engine(tmp_path, [_product(f"p{i:02d}", "kettle") for i in range(60)])
    pages = [_ids(engine, q="kettle", page=page) for page in range(1, 6)]
    assert [len(page) for page in pages] == [10] * 5
    assert [pid for page in pages for pid in page] == [f"p{i:02d}" for i in range(50)]
    assert _ids(engine, q="kettle", page=6) == []
    assert _ids(engine, q="kettle", page=0) == []
    assert _ids(engine, q="   ") == []
    assert _ids(engine, q="the of and") == []


def test_price_bounds_are_inclusive_and_open(tmp_path: Path) -> None:
    engine = _engine(tmp_path, [_product(str(i), "mug", price=float(p))
                                for i, p in enumerate([5, 10, 15, 20, 25])])
    assert _ids(engine, q="mug", price="10-20") == ["1", "2", "3"]
    assert _ids(engine, q="mug", price="20-") == ["3", "4"]
    assert _ids(engine, q="mug", price="-10") == ["0", "1"]
    assert _ids(engine, q="mug", price="10.5-14.9") == []


def test_shop_ids_compare_as_strings(tmp_path: Path) -> None:
    engine = _engine(tmp_path, [_product("1", "cap", shop_id="7"), _product("2", "cap", shop_id="007")])
    assert _ids(engine, q="cap", shop_id="007") == ["2"]
    assert _ids(engine, q="cap", shop_id=7) == ["1"]
    assert _ids(engine, q="cap", shop_id="70") == []


def test_every_requested_service_is_required(tmp_path: Path) -> None:
    engine = _engine(tmp_path, [_product("1", "fan", service=["COD"]),
                                _product("2", "fan", service=["COD", "official"]),
                                _product("3", "fan", service=["official", "flashsale", "COD"])])
    assert _ids(engine, q="fan", service="COD,official") == ["2", "3"]
    assert _ids(engine, q="fan", service="flashsale") == ["3"]
    assert _ids(engine, q="fan", service="freeShipping") == []


def test_sorts_are_stable_over_relevance(tmp_path: Path) -> None:
    engine = _engine(tmp_path, [
        _product("a", "tent tent", price=30, sold_count=5),
        _product("b", "tent", price=10, sold_count=5),
        _product("c", "tent camping gear", price=30, sold_count=9),
        _product("d", "tent", price=10, sold_count=1),
    ])
    relevance = _ids(engine, q="tent")
    assert relevance == ["a", "b", "d", "c"]
    assert _ids(engine, q="tent", sort="priceasc") == ["b", "d", "a", "c"]
    assert _ids(engine, q="tent", sort="pricedesc") == ["a", "c", "b", "d"]
    assert _ids(engine, q="tent", sort="order") == ["c", "a", "b", "d"]


def test_filters_see_only_the_top_10000_hits(tmp_path: Path) -> None:
    # 10,001 equal-score hits rank by id string; the last one is the only one the filter accepts.
    products = [_product(f"{i:05d}", "widget", price=1.0) for i in range(10_000)]
    products.append(_product("99999", "widget", price=999.0))
    products.append(_product("zz", "other", price=999.0))
    engine = _engine(tmp_path, products)
    assert _ids(engine, q="widget", price="999-999") == []
    assert _ids(engine, q="widget other", price="999-999") == ["zz"]
    assert _ids(engine, q="widget", page=5)[-1] == "00049"


def test_filters_apply_before_paging_and_keep_the_first_50(tmp_path: Path) -> None:
    products = [_product(f"{i:03d}", "chair", price=float(i % 2)) for i in range(130)]
    engine = _engine(tmp_path, products)
    passing = [f"{i:03d}" for i in range(130) if i % 2][:50]
    pages = [_ids(engine, q="chair", price="1-1", page=page) for page in range(1, 7)]
    assert [pid for page in pages for pid in page] == passing
    assert pages[5] == []
    assert _ids(engine, q="chair", price="1-1", sort="pricedesc", page=5) == passing[40:]


@pytest.mark.parametrize("q", ['"', "men's", "AND OR NOT", "title:x", "lock&lock", "*", "(", ")",
                               "contents:red^5", "red~2", "\\", "+-!{}[]", "' OR 1=1 --"])
def test_query_syntax_is_just_text(tmp_path: Path, q: str) -> None:
    engine = _engine(tmp_path, [_product("1", "men's lock&lock title:x red"), _product("2", "plain")])
    assert _ids(engine, q=q) in ([], ["1"])


def test_view_and_get(tiny: BM25SearchEngine) -> None:
    infos = tiny.view_product_information(["3", "missing", "1"])
    assert [info.product_id for info in infos] == ["3", "1"]
    assert tiny.get_product("2") is not None and tiny.get_product("nope") is None
    assert set(tiny.get_products(["1", "x"])) == {"1"}
    assert len(tiny) == 4
    hit = tiny.find_product(FindProductQuery(q="blue"))[0]
    assert hit.model_dump() == {"product_id": "3", "shop_id": "1", "title": "blue box", "price": 100.0,
                                "service": [], "sold_count": 0}


def _brute_force(engine: BM25SearchEngine, products: dict[str, Product],
                 query: FindProductQuery) -> list[str]:
    """ref_search.py's post-processing over every score, written the slow obvious way."""
    ranked = sorted(engine.scores(query.q).items(), key=lambda item: (-item[1], item[0]))[:10_000]
    kept = []
    for product_id, _ in ranked:
        product = products[product_id]
        if query.shop_id and query.shop_id != product.shop_id:
            continue
        if query.price is not None and not query.price.contains(product.price):
            continue
        if any(s not in product.service for s in query.service):
            continue
        kept.append(product)
        if len(kept) >= 50:
            break
    if query.sort == "order":
        kept.sort(key=lambda p: p.sold_count, reverse=True)
    elif query.sort == "priceasc":
        kept.sort(key=lambda p: p.price)
    elif query.sort == "pricedesc":
        kept.sort(key=lambda p: p.price, reverse=True)
    return [p.product_id for p in kept[(query.page - 1) * 10:query.page * 10]]


@pytest.mark.parametrize("sorted_union_max", [1 << 20, 0])
def test_matches_a_brute_force_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         sorted_union_max: int) -> None:
    # > 10,000 hits with many lengths and frequencies, so cut-straddling tie runs are common; both
    # ways of summing multi-term scores are exercised.
    monkeypatch.setattr(engine_module, "_SORTED_UNION_MAX", sorted_union_max)
    rng = random.Random(3)
    words = ["lamp", "desk", "oak", "led", "usb", "white"]
    products = {}
    for i in range(12_500):
        title = " ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))
        product_id = str(rng.randrange(10**6)) + f"-{i}"
        products[product_id] = _product(product_id, title, price=float(rng.randint(1, 9)),
                                        shop_id=str(rng.randint(1, 5)), sold_count=rng.randint(0, 3),
                                        service=rng.sample(["COD", "official"], rng.randint(0, 2)))
    engine = _engine(tmp_path, list(products.values()))
    for _ in range(60):
        params: dict[str, object] = {"q": " ".join(rng.choice(words) for _ in range(rng.randint(1, 3))),
                                     "page": rng.randint(1, 5)}
        if rng.random() < 0.5:
            params["price"] = rng.choice(["3-5", "8-", "-2"])
        if rng.random() < 0.3:
            params["shop_id"] = str(rng.randint(1, 5))
        if rng.random() < 0.3:
            params["service"] = "COD"
        params["sort"] = rng.choice([None, "order", "priceasc", "pricedesc"])
        query = FindProductQuery(**params)  # type: ignore[arg-type]
        assert _ids(engine, **params) == _brute_force(engine, products, query), params


def test_rebuild_replaces_an_index_but_never_a_foreign_folder(tmp_path: Path) -> None:
    documents = [CatalogDocument(id="1", contents="kettle", product=_product("1", "kettle"))]
    first = build_index(documents, tmp_path / "index", progress=False)
    second = build_index(documents, tmp_path / "index", progress=False)
    assert first.documents == second.documents == 1 and second.terms == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "cat.jpg").write_bytes(b"\xff")
    with pytest.raises(FileExistsError):
        build_index(documents, foreign, progress=False)
    assert (foreign / "cat.jpg").exists()


def test_postings_order_does_not_depend_on_the_ordering_window(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(5)
    documents = [CatalogDocument(id=f"d{i}", contents=" ".join(rng.choice("abcdef") for _ in range(9)),
                                 product=_product(f"d{i}", "x")) for i in range(300)]
    build_index(documents, tmp_path / "wide", progress=False)
    monkeypatch.setattr(index_module, "_ORDER_WINDOW", 3)
    monkeypatch.setattr(index_module, "CHUNK_DOCS", 7)
    build_index(documents, tmp_path / "narrow", progress=False)
    for name in ("postings_docs", "postings_tf", "postings_offsets", "terms_blob", "id_rank"):
        assert np.array_equal(np.load(tmp_path / "wide" / f"{name}.npy"),
                              np.load(tmp_path / "narrow" / f"{name}.npy")), name


def test_leftovers_of_killed_builds_are_removed_and_nothing_else(tmp_path: Path) -> None:
    for leftover in (".index.old-k1/index", ".index.build-k2/index"):
        (tmp_path / leftover).mkdir(parents=True)
        (tmp_path / leftover / "postings_docs.npy").write_bytes(b"\0" * 1024)
    keep = [".index.old", ".other.build-k3", "index.build-k4", ".index.older"]  # not this index's scratch
    for name in keep:
        (tmp_path / name).mkdir()
    documents = [CatalogDocument(id="1", contents="kettle", product=_product("1", "kettle"))]

    build_index(documents, tmp_path / "index", progress=False)

    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["index", *keep])


def test_a_very_long_id_costs_its_own_bytes_not_every_document_padded_to_it(tmp_path: Path) -> None:
    # The model caps ids at 256 characters; the index must stay bounded whatever it is given.
    long_id = "1" + "0" * 100_000
    ids = [str(n) for n in range(2, 1_002)] + [long_id, "1"]

    def doc(product_id: str) -> CatalogDocument:
        product = Product.model_construct(product_id=product_id, shop_id="1", title="kettle", price=1.0)
        return CatalogDocument.model_construct(id=product_id, contents="kettle", product=product)

    tracemalloc.start()
    try:
        build_index([doc(i) for i in ids], tmp_path / "index", progress=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    # Padding 1,002 ids to 100 KB each would take ~100 MB; the ids themselves are ~105 KB.
    assert peak < 20_000_000, f"peak {peak / 1e6:.1f} MB"
    # Ties still break by product id as a string (byte order): ... "1000" < "100...0" < "1001" ...
    rank = np.load(tmp_path / "index" / "id_rank.npy")
    by_rank = [ids[d] for d in np.argsort(rank)]
    assert by_rank == sorted(ids)
    assert by_rank[:3] == ["1", "10", "100"] and by_rank[by_rank.index(long_id) - 1:][:3] == [
        "1000", long_id, "1001"]
