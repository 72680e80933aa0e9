"""Sloppy tool arguments get the reference server's answers, from one implementation
(``shoppingbench.tools.semantics``) that the HTTP tool server and the training environment both run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from shoppingbench.grading.grader import Grader
from shoppingbench.search.base import FindProductQuery, PriceRange
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.settings import HarnessSettings
from shoppingbench.tools import semantics
from shoppingbench.tools.server import create_app
from shoppingbench.tools.serving import running_server
from trajectories.training.stages.environment import ShoppingContext, ShoppingEnvironment

Q = "plush toy"

# (sloppy arguments, the clean query the reference answers them with; None: the answer is [])
SLOPPY: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
    ({"service": "teleport"}, {}),
    ({"service": "COD,teleport,COD"}, {"service": ("COD",)}),
    ({"service": "COD, official"}, {"service": ("COD",)}),  # not stripped: " official" is unknown
    ({"service": "cod"}, {}),
    ({"price": "₱100-3000"}, {"price": PriceRange(high=3000)}),
    ({"price": "100~3000"}, {}),
    ({"price": "under 3000"}, {}),
    ({"price": "100"}, {}),
    ({"price": "3000-100"}, {"price": PriceRange(low=3000, high=100)}),
    ({"price": "1-2-3"}, {}),
    ({"price": "nan-50"}, {"price": PriceRange(high=50)}),
    ({"price": " 20 - 60 "}, {"price": PriceRange(low=20, high=60)}),
    ({"sort": "cheapest"}, {}),
    ({"sort": "PRICEASC"}, {}),
    ({"sort": "default"}, {}),
    ({"sort": "priceasc"}, {"sort": "priceasc"}),
    ({"page": "abc"}, None),
    ({"page": "2.0"}, None),
    ({"page": "0"}, None),
    ({"page": "6"}, None),
    ({"page": " 2"}, None),
    ({"page": "02"}, {"page": 2}),
    ({"page": "²"}, None),
    ({"shop_id": ""}, {}),
    ({"shop_id": " "}, {"shop_id": " "}),
    ({"q": ""}, None),
]


def _expected(engine: BM25SearchEngine, clean: dict[str, Any] | None) -> list[dict[str, Any]]:
    if clean is None:
        return []
    return [hit.model_dump() for hit in engine.find_product(FindProductQuery(**{"q": Q, "page": 1, **clean}))]


@pytest.fixture(scope="module")
def http(small_engine: BM25SearchEngine) -> Iterator[httpx.Client]:
    with running_server(create_app(small_engine)) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def environment(small_engine: BM25SearchEngine,
                tmp_path_factory: pytest.TempPathFactory) -> ShoppingEnvironment:
    settings = HarnessSettings(home=tmp_path_factory.mktemp("home"))
    grader = Grader.from_settings(small_engine.get_products, settings)
    return ShoppingEnvironment(ShoppingContext(small_engine, grader))


@pytest.mark.parametrize(("sloppy", "clean"), SLOPPY, ids=[json.dumps(s) for s, _ in SLOPPY])
def test_sloppy_arguments_answer_as_on_the_reference_server_everywhere(
        sloppy: dict[str, Any], clean: dict[str, Any] | None, small_engine: BM25SearchEngine,
        http: httpx.Client, environment: ShoppingEnvironment) -> None:
    arguments = {"q": Q, "page": "1", **sloppy}
    expected = _expected(small_engine, clean)
    assert [hit.model_dump() for hit in semantics.find_product(small_engine, **arguments)] == expected
    for response in (http.get("/search/find_product", params=arguments),
                     http.post("/search/find_product", json=arguments)):
        assert (response.status_code, response.json()) == (200, expected)
    assert json.loads(environment.find_product(**arguments)) == expected


def test_filters_that_apply_change_the_answer(small_engine: BM25SearchEngine) -> None:
    """The cases above are not vacuous: the filters kept do filter, the pages kept do page."""
    every = _expected(small_engine, {})
    assert len(every) == 10
    assert _expected(small_engine, {"price": PriceRange(low=3000, high=100)}) == []
    assert _expected(small_engine, {"page": 2}) not in ([], every)
    assert _expected(small_engine, {"shop_id": " "}) == []


def test_a_missing_page_or_query_gives_an_empty_page_as_on_the_reference(small_engine: BM25SearchEngine,
                                                                         http: httpx.Client) -> None:
    assert semantics.find_product(small_engine, q=Q) == []
    for params in ({"q": Q}, {"page": "1"}):
        response = http.get("/search/find_product", params=params)
        assert (response.status_code, response.json()) == (200, [])
    assert http.post("/search/find_product", json={"q": Q, "page": 1}).json() == _expected(small_engine, {})


def test_view_splits_ids_as_the_reference(small_engine: BM25SearchEngine, http: httpx.Client,
                                          environment: ShoppingEnvironment) -> None:
    first, second = (hit["product_id"] for hit in _expected(small_engine, {})[:2])
    asked = f"{first}, {second},,{second},nope"  # " {second}" is not an id: the reference does not strip
    expected = [info.model_dump() for info in small_engine.view_product_information([first, second])]
    assert [i.model_dump() for i in semantics.view_product_information(small_engine, asked)] == expected
    assert http.get("/search/view_product_information", params={"product_ids": asked}).json() == expected
    assert json.loads(environment.view_product_information(product_ids=asked)) == expected
    with pytest.raises(semantics.ToolRefusal, match="required"):
        semantics.view_product_information(small_engine, None)
