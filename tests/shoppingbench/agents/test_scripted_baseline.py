"""The scripted baseline's request parsing, and a full attempt over real HTTP scored by the real scorer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shoppingbench.agent_sdk import ProxyClient, ProxyError
from shoppingbench.agents.scripted_baseline import agent_main, choose_products, parse_requests
from shoppingbench.catalog.models import Product, document_for
from shoppingbench.catalog.store import ProductStore
from shoppingbench.problems.models import Problem
from shoppingbench.scoring import score_attempt
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.search.index import build_index
from shoppingbench.tools.server import create_app
from shoppingbench.tools.serving import running_server
from tests.shoppingbench.scoring.test_scoring_support import FakeEmbedder


def test_items_split_on_articles_not_on_inner_ands() -> None:
    requests = parse_requests(
        "Looking for a shop that sells a wet and dry vacuum priced between 917 and 1796 pesos, "
        "a desk fan made of plastic, and a steamer included multi cooker.")
    assert [r.keywords for r in requests] == [
        "wet dry vacuum", "desk fan plastic", "steamer included multi cooker"]
    assert requests[0].price == "917-1796"
    assert requests[1].price is None


def test_voucher_rules_are_not_items_and_filters_are_parsed() -> None:
    (request,) = parse_requests(
        "I need a stackable drawer organizer over 120 pesos with free shipping and cash on delivery."
        "\n\nMy budget is only `130`, but I have a voucher with the following rules:\n"
        "1. The voucher applies to all products.")
    assert request.price == "120-"
    assert request.services == ["freeShipping", "COD"]
    assert "budget" not in request.keywords and "voucher" not in request.keywords


def test_upper_bounds_and_missing_url(monkeypatch: pytest.MonkeyPatch) -> None:
    (request,) = parse_requests("Show me a toner under 1,250 pesos")
    assert request.price == "-1250"
    monkeypatch.delenv("SANDBOX_PROXY_URL", raising=False)
    with ProxyClient() as client, pytest.raises(ProxyError, match="SANDBOX_PROXY_URL"):
        client.find_product("toner")


def _product(pid: str, title: str, color: str, price: float) -> Product:
    return Product(product_id=pid, shop_id="7", title=title, price=price, sold_count=3,
                   sku_options={"1": {"color_family": color}}, service=["COD"])


@pytest.fixture
def served_catalog(tmp_path: Path) -> Iterator[tuple[str, BM25SearchEngine]]:
    documents = [document_for(p) for p in (
        _product("101", "Insulated Water Bottle 750ml", "black", 459.0),
        _product("102", "Insulated Water Bottle 750ml", "silver", 479.0),
        _product("103", "Kids Plastic Lunch Box", "blue", 89.0),
    )]
    with ProductStore(tmp_path / "products.sqlite3") as store:
        store.upsert(documents)
        build_index(documents, tmp_path / "index", progress=False)
        engine = BM25SearchEngine(tmp_path / "index", store)
        with running_server(create_app(engine)) as url:
            yield url, engine


def test_an_attempt_over_http_picks_the_matching_variant_and_scores(
        served_catalog: tuple[str, BM25SearchEngine]) -> None:
    url, engine = served_catalog
    problem = Problem.from_shoppingbench({
        "query": "Looking for an insulated water bottle in silver.",
        "reward": {"product_id": "102", "title": ["Insulated Water Bottle 750ml"],
                   "sku_options": [{"color_family": "silver"}]}})
    with ProxyClient(url) as client:
        steps = agent_main(problem.public_view(), client=client)
    calls = [step["completion"]["message"]["tool_call"][0]["name"] for step in steps]
    assert calls == ["find_product", "view_product_information", "recommend_product", "terminate"]
    score = score_attempt(problem, steps, engine.get_products, FakeEmbedder())
    assert score.answer == ["102"] and score.success and score.gt == 1
    assert score.format == 1 and score.length == pytest.approx(1 / 4)


def test_shop_choice_prefers_the_first_shared_shop_in_search_order() -> None:
    def hit(pid: str, shop: str) -> tuple[int, dict[str, object]]:
        return (1, {"product_id": pid, "shop_id": shop, "price": 1.0})

    # Shops "9" and "10" both carry both items; "9" comes first in the first item's search order.
    per_request = [[hit("a", "5"), hit("b", "9"), hit("c", "10")], [hit("d", "10"), hit("e", "9")]]
    assert choose_products(per_request, same_shop=True) == ["b", "e"]
    assert choose_products(per_request, same_shop=False) == ["a", "d"]


def test_a_request_with_no_candidates_keeps_its_position() -> None:
    found = [(1, {"product_id": "a", "shop_id": "1", "price": 1.0})]
    again = [(1, {"product_id": "c", "shop_id": "2", "price": 1.0})]
    assert choose_products([found, [], again], same_shop=False) == ["a", "", "c"]
    assert choose_products([found, [], again], same_shop=True) == ["a", "", "c"]
