"""The tool server over the real BM25 engine, through real HTTP (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import gzip
import statistics
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import orjson
import pytest

from shoppingbench.catalog.importer import import_documents
from shoppingbench.catalog.models import Product, document_for
from shoppingbench.catalog.store import ProductStore
from shoppingbench.search.base import FindProductQuery, ProductInformation, SearchHit
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.search.index import build_index
from shoppingbench.tools.server import MAX_VIEW_IDS, create_app
from tests.servers import running_server

HIT_FIELDS = {"product_id", "shop_id", "title", "price", "service", "sold_count"}
INFO_FIELDS = {"product_id", "short_description", "description", "sku_options", "attributes"}
SERVICE_CYCLE = [["COD"], ["official", "freeShipping"], [], ["flashsale", "COD"], ["official"]]

HAND_MADE = [
    ("1001", "s1", "Stainless Steel Water Bottle 750ml", 459.0, 1287, ["official", "freeShipping"]),
    ("1002", "s2", "Kids Plastic Water Bottle 500ml With Straw", 89.0, 5402, ["COD"]),
    ("1003", "s1", "Glass Water Bottle 1L With Sleeve", 250.0, 40, ["COD", "freeShipping"]),
    ("1004", "s3", "Men's Leather Wallet Bifold", 399.0, 800, ["official"]),
    ("1005", "s3", "Lock&Lock Food Container Set 3pcs", 520.0, 2200, ["official", "COD"]),
    ("1006", "s4", "Wireless Bluetooth Earbuds", 1299.0, 9000, ["flashsale", "freeShipping"]),
    ("1007", "s4", "Phone Case For iPhone 15 Shockproof", 150.0, 15000, ["COD"]),
    ("1008", "s2", "Insulated Lunch Bag Water Resistant", 199.0, 300, []),
]


def catalog_products() -> list[Product]:
    products = [
        Product(product_id=pid, shop_id=shop, title=title, price=price, sold_count=sold, service=service,
                brand="acme", short_description=f"About {title}.", description=f"{title}, described.",
                sku_options={"1": {"size": "750ml", "color_family": "black"}},
                attributes={"material": ["stainless steel"]})
        for pid, shop, title, price, sold, service in HAND_MADE
    ]
    # Enough similar bottles that "water bottle" fills several pages and the filters have work to do.
    products += [
        Product(product_id=str(2000 + n), shop_id=f"s{5 + n % 3}",
                title=f"Sports Water Bottle Model {n} BPA Free", price=100.0 + 10 * n,
                sold_count=7 * n % 101, service=SERVICE_CYCLE[n % len(SERVICE_CYCLE)])
        for n in range(30)
    ]
    return products


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BM25SearchEngine]:
    root = tmp_path_factory.mktemp("catalog")
    source = root / "documents.jsonl.gz"
    source.write_bytes(gzip.compress(b"".join(
        orjson.dumps(document_for(p).model_dump()) + b"\n" for p in catalog_products())))
    with ProductStore(root / "products.sqlite3") as store:
        report = import_documents(source, store, progress=False)
        assert report.bad == 0
        build_index(store.iter_documents(), root / "index", total=len(store), progress=False)
    with ProductStore(root / "products.sqlite3", read_only=True) as store:
        yield BM25SearchEngine(root / "index", store)


@pytest.fixture(scope="module")
def base_url(engine: BM25SearchEngine) -> Iterator[str]:
    with running_server(create_app(engine)) as url:
        yield url


@pytest.fixture
def http(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=30.0) as client:
        yield client


def direct(engine: BM25SearchEngine, **params: Any) -> list[dict[str, Any]]:
    return [hit.model_dump() for hit in engine.find_product(FindProductQuery(**params))]


def test_health_counts_the_catalog(http: httpx.Client) -> None:
    response = http.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "products": len(catalog_products())}


def test_find_product_returns_exactly_the_six_hit_fields(http: httpx.Client,
                                                         engine: BM25SearchEngine) -> None:
    hits = http.get("/search/find_product", params={"q": "leather wallet", "page": 1}).json()
    assert hits[0]["product_id"] == "1004"
    assert all(set(hit) == HIT_FIELDS for hit in hits)
    product = engine.get_product("1004")
    assert product is not None and hits[0] == SearchHit.of(product).model_dump()


PARAMS = [{"page": 1, **params} for params in [
    {"q": "water bottle"},
    {"q": "water bottle", "page": 2},
    {"q": "water bottle", "page": 4},
    {"q": "water bottle", "sort": "priceasc"},
    {"q": "water bottle", "sort": "pricedesc", "page": 2},
    {"q": "water bottle", "sort": "order"},
    {"q": "water bottle", "service": "COD"},
    {"q": "water bottle", "service": "official,freeShipping"},
    {"q": "water bottle", "price": "150-250"},
    {"q": "water bottle", "price": "300-"},
    {"q": "water bottle", "price": "-120.5"},
    {"q": "water bottle", "shop_id": "s1"},
    {"q": "bottle", "shop_id": "s6", "price": "100-300", "sort": "pricedesc", "service": "COD"},
    {"q": "men's wallet"},
    {"q": "lock&lock"},
    {"q": "nothing matches zzzz"},
]]


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: "&".join(f"{k}={v}" for k, v in p.items()))
def test_get_and_post_give_the_engine_answer(http: httpx.Client, engine: BM25SearchEngine,
                                              params: dict[str, Any]) -> None:
    expected = direct(engine, **params)
    got = http.get("/search/find_product", params=params)
    posted = http.post("/search/find_product", json=params)
    assert (got.status_code, posted.status_code) == (200, 200)
    assert got.json() == posted.json() == expected


def test_filters_and_sorts_are_applied(http: httpx.Client) -> None:
    def find(**params: Any) -> list[dict[str, Any]]:
        response = http.get("/search/find_product", params={"q": "water bottle", "page": 1, **params})
        assert response.status_code == 200
        hits: list[dict[str, Any]] = response.json()
        assert hits
        return hits

    assert all("COD" in hit["service"] for hit in find(service="COD"))
    both = find(service="official,freeShipping")
    assert all({"official", "freeShipping"} <= set(hit["service"]) for hit in both)
    assert all(150 <= hit["price"] <= 250 for hit in find(price="150-250"))
    assert {hit["price"] for hit in find(price="250-250")} == {250.0}  # bounds are inclusive
    assert {hit["shop_id"] for hit in find(shop_id="s1")} == {"s1"}
    prices = [hit["price"] for hit in find(sort="priceasc")]
    assert prices == sorted(prices)
    prices = [hit["price"] for hit in find(sort="pricedesc")]
    assert prices == sorted(prices, reverse=True)
    sold = [hit["sold_count"] for hit in find(sort="order")]
    assert sold == sorted(sold, reverse=True)


def test_pages_partition_the_results(http: httpx.Client) -> None:
    pages = [http.get("/search/find_product", params={"q": "water bottle", "page": page}).json()
             for page in range(1, 6)]
    ids = [hit["product_id"] for page in pages for hit in page]
    assert [len(page) for page in pages] == [10, 10, 10, 4, 0]
    assert len(ids) == len(set(ids)) == 34


@pytest.mark.parametrize("page", [0, -1, 6, 10**30])
def test_a_page_outside_1_to_5_is_an_empty_list(http: httpx.Client, page: int) -> None:
    for response in (http.get("/search/find_product", params={"q": "water", "page": page}),
                     http.post("/search/find_product", json={"q": "water", "page": page})):
        assert (response.status_code, response.json()) == (200, [])


def test_an_overlong_query_is_422_naming_the_field(http: httpx.Client) -> None:
    params = {"q": "x" * 2_001, "page": 1}
    for location, response in (("query", http.get("/search/find_product", params=params)),
                               ("body", http.post("/search/find_product", json=params))):
        assert response.status_code == 422, response.text
        (error,) = response.json()["detail"]
        assert error["loc"] == [location] and "q: String should have at most 2000 characters" in error["msg"]


@pytest.mark.parametrize("body", [b'["water"]', b'{"q": "wat', b'"water"', b'{"q": "water\\ud800"}'])
def test_malformed_post_bodies_are_422(http: httpx.Client, body: bytes) -> None:
    response = http.post("/search/find_product", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["msg"]


def test_view_product_information_in_the_order_asked(http: httpx.Client, engine: BM25SearchEngine) -> None:
    expected = [ProductInformation.of(p).model_dump()
                for p in (engine.get_product("1002"), engine.get_product("1001")) if p is not None]
    responses = [  # split on commas and not stripped, as the reference server does
        http.get("/search/view_product_information", params={"product_ids": "1002,1001,nope, 1002,"}),
        http.post("/search/view_product_information", json={"product_ids": "1002,1001,nope"}),
        http.post("/search/view_product_information", json={"product_ids": [1002, "1001", "nope", " 1002"]}),
    ]
    for response in responses:
        assert response.status_code == 200
        assert response.json() == expected
        assert all(set(info) == INFO_FIELDS for info in response.json())


def test_view_product_information_edge_cases(http: httpx.Client) -> None:
    assert http.get("/search/view_product_information", params={"product_ids": ""}).json() == []
    assert http.get("/search/view_product_information").status_code == 422
    too_many = ",".join(str(n) for n in range(MAX_VIEW_IDS + 1))
    response = http.post("/search/view_product_information", json={"product_ids": too_many})
    assert response.status_code == 422 and f"at most {MAX_VIEW_IDS}" in response.json()["detail"][0]["msg"]


def test_get_product_raw(http: httpx.Client, engine: BM25SearchEngine) -> None:
    response = http.get("/search/get_product_raw", params={"product_id": "1005"})
    product = engine.get_product("1005")
    assert response.status_code == 200 and product is not None
    assert response.json() == product.model_dump()

    missing = http.get("/search/get_product_raw", params={"product_id": "9999"})
    assert missing.status_code == 404
    assert missing.json() == {"detail": "no product with id '9999' in the catalog"}


def test_openapi_documents_every_tool_parameter(http: httpx.Client) -> None:
    spec = http.get("/openapi.json").json()
    for path, parameters in [("/search/find_product", {"q", "page", "shop_id", "price", "sort", "service"}),
                             ("/search/view_product_information", {"product_ids"}),
                             ("/search/get_product_raw", {"product_id"})]:
        documented = {p["name"]: p.get("description") for p in spec["paths"][path]["get"]["parameters"]}
        assert set(documented) == parameters
        assert all(documented.values()), documented
    for path in ("/search/find_product", "/search/view_product_information"):
        assert "requestBody" in spec["paths"][path]["post"]
    assert http.get("/docs").status_code == 200


ODD_TEXT = [
    "", " ", "'", '"', '"unbalanced', "men's", "AND", "OR", "NOT", "water AND NOT bottle", "title:x",
    "contents:water", "lock&lock", "a|b", "+water -bottle", "water~2", "wat*", "?", "(", ")", "[1 TO 5]",
    "{}", "\\", "/", "%", "%00", "\x00", "\x01\x02\x7f", "\t\n\r", "ümlaut ß", "水杯", "🚀🚀", "\u200b",
    "\ufffd", "a" * 1_999, "ü" * 1_000, "a " * 3_000, ",", ",,,", "-", "1-2-3", "1e309", "nan-inf", "-1-5",
    "0x10", "1.-", "٣-٥",
]
FIND_FIELDS = ["q", "shop_id", "price", "sort", "service", "page"]


def test_odd_inputs_never_cause_a_server_error(base_url: str) -> None:
    statuses: dict[int, int] = {}
    # A short timeout so that an input the engine chokes on fails here, naming it, instead of hanging.
    http = httpx.Client(base_url=base_url, timeout=10.0)

    def check(method: str, path: str, allowed: set[int], **request: Any) -> None:
        try:
            response = http.request(method, path, **request)
        except httpx.TimeoutException:
            pytest.fail(f"{method} {path} {str(request)[:200]} got no answer within 10 s")
        assert response.status_code in allowed, (method, path, str(request)[:200], response.text[:300])
        response.json()  # always a JSON body
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

    with http:
        for text in ODD_TEXT:
            for field in FIND_FIELDS:
                arguments = {"q": "water", "page": 1, field: text}
                check("GET", "/search/find_product", {200, 422}, params=arguments)
                check("POST", "/search/find_product", {200, 422}, json=arguments)
            every = {"q": text, "service": [text], "shop_id": text}
            check("POST", "/search/find_product", {200, 422}, json=every)
            check("GET", "/search/view_product_information", {200, 422}, params={"product_ids": text})
            check("POST", "/search/view_product_information", {200, 422}, json={"product_ids": [text, 1]})
            check("GET", "/search/get_product_raw", {200, 404, 422}, params={"product_id": text})
        repeated = [("q", "water"), ("q", "bottle"), ("page", "1"), ("page", "2"), ("sort", "order")]
        check("GET", "/search/find_product", {200, 422}, params=[*repeated, ("sort", "x")])
        check("GET", "/search/view_product_information", {200, 422},
              params=[("product_ids", "1001"), ("product_ids", "1")])
        check("POST", "/search/find_product", {422}, json={"q": "x" * 1_000_000, "page": 1})
        check("POST", "/search/view_product_information", {422}, json={"product_ids": list(range(200_000))})
    assert statuses[200] > 100 and statuses[422] >= 2  # the battery exercised both outcomes


def test_concurrent_requests_get_the_same_answers_as_sequential_ones(base_url: str,
                                                                     engine: BM25SearchEngine) -> None:
    calls = [("find", params) for params in PARAMS] + [("view", {"product_ids": "1001,2005,1007,2029"})] * 4
    expected = [direct(engine, **params) if kind == "find" else
                [i.model_dump() for i in engine.view_product_information(params["product_ids"].split(","))]
                for kind, params in calls]

    def client(worker: int) -> bool:
        # Each worker walks every call from its own starting point, so different calls overlap.
        order = [(worker * 3 + step) % len(calls) for step in range(len(calls))]
        with httpx.Client(base_url=base_url, timeout=30.0) as http:
            for index in order:
                kind, params = calls[index]
                path = "/search/find_product" if kind == "find" else "/search/view_product_information"
                if http.get(path, params=params).json() != expected[index]:
                    return False
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(client, range(8)))


def test_keep_alive_requests_are_not_delayed(http: httpx.Client) -> None:
    # Without TCP_NODELAY on the served socket each keep-alive response waits ~40 ms for a delayed ACK.
    timings = []
    for _ in range(15):
        response = http.get("/health")
        assert response.status_code == 200
        timings.append(response.elapsed.total_seconds())
    assert statistics.median(timings) < 0.02, timings


def test_running_server_shuts_down(engine: BM25SearchEngine) -> None:
    with running_server(create_app(engine)) as url:
        assert httpx.get(f"{url}/health").status_code == 200
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/health", timeout=2.0)
