"""The GRPO environment's tools against the small world's real search engine: the schemas TRL renders from
them, pages, filters, the fields returned, unknown ids, hostile input, and the episode they record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from transformers import AutoTokenizer
from transformers.utils.chat_template_utils import get_json_schema

from shoppingbench.grading.grader import Grader
from shoppingbench.sample_world import SampleWorld
from shoppingbench.search.base import PAGE_SIZE, FindProductQuery, SearchHit
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.settings import HarnessSettings
from shoppingbench.tools.semantics import MAX_VIEW_IDS
from tests.trajectories.training.tools_support import trl_tools
from trajectories.training.data.tools import TOOL_SCHEMAS
from trajectories.training.stages.environment import (
    ShoppingContext,
    ShoppingEnvironment,
    ToolError,
    environment_factory,
)
from trajectories.training.stages.rewards import EpisodeCall

TOOLS = ("find_product", "view_product_information", "recommend_product", "terminate")
QUERY = "plush toy"
"""Matches more than one page of the small world."""


@pytest.fixture(scope="module")
def context(small_engine: BM25SearchEngine, tmp_path_factory: pytest.TempPathFactory) -> ShoppingContext:
    settings = HarnessSettings(home=tmp_path_factory.mktemp("home"))
    return ShoppingContext(small_engine, Grader.from_settings(small_engine.get_products, settings))


@pytest.fixture
def env(context: ShoppingContext, small_world: SampleWorld) -> ShoppingEnvironment:
    environment = ShoppingEnvironment(context)
    environment.reset(problem=small_world.suite(1)[0].model_dump_json())
    return environment


def _hits(text: str) -> list[dict[str, Any]]:
    hits: list[dict[str, Any]] = json.loads(text)
    return hits


def test_the_tools_trl_discovers_render_the_sft_schemas(env: ShoppingEnvironment,
                                                        tiny_model_dir: Path) -> None:
    # TRL exposes every public function of the class but reset as a tool: exactly the four tools
    assert sorted(tool.__name__ for tool in trl_tools(env)) == sorted(TOOLS)
    expected = {tool["function"]["name"]: tool["function"] for tool in TOOL_SCHEMAS}
    rendered = [get_json_schema(tool) for tool in trl_tools(env)]
    for schema in rendered:
        function, reference = schema["function"], expected[schema["function"]["name"]]
        assert function["description"] == reference["description"]
        assert function["parameters"]["required"] == reference["parameters"]["required"]
        properties = function["parameters"]["properties"]
        assert list(properties) == list(reference["parameters"]["properties"])
        for name, spec in reference["parameters"]["properties"].items():
            assert properties[name]["type"] == spec["type"]
            assert properties[name].get("enum") == spec.get("enum")
            if "description" in spec:
                assert properties[name]["description"] == spec["description"]
    assert {schema["function"]["name"] for schema in rendered} == set(expected)
    # what the model reads: the chat template writes each schema into the system turn's <tools> block
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    text = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}],
                                         tools=list(trl_tools(env)), tokenize=False)
    assert isinstance(text, str)
    tools_block = text.split("<tools>\n")[1].split("\n</tools>")[0]
    assert [json.loads(line) for line in tools_block.splitlines()] == rendered


def test_find_product_pages_the_engines_results_with_only_the_hit_fields(
        env: ShoppingEnvironment, small_engine: BM25SearchEngine) -> None:
    pages = [_hits(env.find_product(q=QUERY, page=page)) for page in (1, 2)]
    for page, hits in zip((1, 2), pages, strict=True):
        expected = small_engine.find_product(FindProductQuery(q=QUERY, page=page))
        assert hits == [hit.model_dump(mode="json") for hit in expected] and hits
        assert all(set(hit) == set(SearchHit.model_fields) for hit in hits)
    first, second = ({hit["product_id"] for hit in hits} for hits in pages)
    assert len(pages[0]) == PAGE_SIZE and not first & second
    assert env.find_product(q=QUERY, page=6) == "[]" and env.find_product(q=QUERY, page=0) == "[]"
    calls = env.episode.calls
    assert [(c.name, c.arguments["page"]) for c in calls] == [("find_product", 1), ("find_product", 2),
                                                             ("find_product", 6), ("find_product", 0)]
    assert [list(c.returned_ids) for c in calls[:2]] == [[h["product_id"] for h in hits] for hits in pages]
    assert calls[2].returned_ids == ()


def test_find_product_filters_and_sorts_like_the_tool_server(env: ShoppingEnvironment) -> None:
    priced = _hits(env.find_product(q=QUERY, price="20-60"))
    assert priced and all(20 <= hit["price"] <= 60 for hit in priced)
    ascending = [hit["price"] for hit in _hits(env.find_product(q=QUERY, sort="priceasc"))]
    assert ascending == sorted(ascending) and len(ascending) > 1
    served = _hits(env.find_product(q=QUERY, service="COD"))
    assert served and all("COD" in hit["service"] for hit in served)
    # a JSON list of services is accepted, as by the tool server's POST body
    assert env.find_product(q=QUERY, service=["COD"]) == env.find_product(q=QUERY, service="COD")  # type: ignore[arg-type]
    shop = served[0]["shop_id"]
    assert {hit["shop_id"] for hit in _hits(env.find_product(q=QUERY, shop_id=shop))} == {shop}
    assert env.episode.calls[0].arguments == {"q": QUERY, "page": 1, "price": "20-60"}


@pytest.mark.parametrize(("arguments", "reason"), [
    ({"q": "x" * 2001}, "q"),
    ({"q": "plush \ud800"}, "Unicode"),
    ({"q": QUERY, "service": ["COD", "\ud800"]}, "Unicode"),
])
def test_invalid_searches_are_refused_naming_the_field_and_recorded_without_ids(
        env: ShoppingEnvironment, arguments: dict[str, Any], reason: str) -> None:
    with pytest.raises(ToolError, match=reason) as refused:
        env.find_product(**arguments)
    assert "\ud800" not in str(refused.value) and len(str(refused.value)) < 500
    (call,) = env.episode.calls
    assert call.name == "find_product" and call.returned_ids == ()


def test_query_syntax_in_the_search_text_is_plain_text(env: ShoppingEnvironment) -> None:
    for q in ('title:plush OR "toy', "plush AND (toy", "*:*", "toy^10 -plush"):
        assert isinstance(_hits(env.find_product(q=q)), list)


def test_view_product_information_returns_the_known_ids_in_order(
        env: ShoppingEnvironment, small_engine: BM25SearchEngine) -> None:
    first, second = (hit["product_id"] for hit in _hits(env.find_product(q=QUERY))[:2])
    # split on commas as the reference server does: not stripped, repeats answered again
    viewed = _hits(env.view_product_information(product_ids=f"{second},no-such-id,{first},{second}, {first}"))
    assert [item["product_id"] for item in viewed] == [second, first, second]
    expected = small_engine.view_product_information([second, first, second])
    assert viewed == [info.model_dump(mode="json") for info in expected]
    assert set(viewed[0]) == {"product_id", "short_description", "description", "sku_options", "attributes"}
    assert _hits(env.view_product_information(product_ids=[first])) == viewed[1:2]  # type: ignore[arg-type]
    assert env.view_product_information(product_ids="no-such-id") == "[]"
    with pytest.raises(ToolError, match=f"at most {MAX_VIEW_IDS}"):
        env.view_product_information(product_ids=",".join(str(i) for i in range(MAX_VIEW_IDS + 1)))
    with pytest.raises(ToolError, match="Unicode"):
        env.view_product_information(product_ids="\ud800")
    assert [c.name for c in env.episode.calls] == ["find_product"] + ["view_product_information"] * 5


def test_the_last_recommendation_counts_even_a_refused_one(env: ShoppingEnvironment) -> None:
    assert env.recommend_product(product_ids=" a, b ,a,") == "Recommended to the user: a, b"
    assert env.episode.recommended == ["a", "b"]
    with pytest.raises(ToolError):
        env.recommend_product(product_ids="a,\ud800")
    assert env.episode.recommended == []
    assert env.episode.calls[-1] == EpisodeCall("recommend_product", {"product_ids": "a,\ud800"})


def test_after_terminate_the_dialogue_is_over(env: ShoppingEnvironment) -> None:
    env.find_product(q=QUERY)
    assert env.terminate(status="success") == "The dialogue has ended with status: success"
    assert env.episode.terminated
    for name, arguments in (("find_product", {"q": QUERY}), ("recommend_product", {"product_ids": "a"}),
                            ("terminate", {"status": "failure"})):
        with pytest.raises(ToolError, match="ended"):
            getattr(env, name)(**arguments)
    assert [c.name for c in env.episode.calls] == ["find_product", "terminate"]


def test_reset_takes_the_problem_from_the_dataset_row_and_clears_the_episode(
        context: ShoppingContext, small_world: SampleWorld) -> None:
    factory = environment_factory(context)
    first, second = factory(), factory()
    with pytest.raises(RuntimeError, match="reset"):
        _ = first.problem
    problems = small_world.suite(1)
    # TRL passes the whole row: the prompt and every other column
    row: dict[str, Any] = {"prompt": [{"role": "user", "content": problems[1].query}],
                           "problem_id": problems[1].id, "problem": problems[1].model_dump_json(),
                           "teacher_plan": None}
    first.reset(**row)
    first.find_product(q=QUERY)
    first.recommend_product(product_ids="x")
    first.reset(**{**row, "problem": problems[2].model_dump_json()})
    assert first.problem == problems[2] and first.episode.calls == [] and first.episode.recommended is None
    second.reset(**row)
    assert second.problem == problems[1] and second.grader is first.grader  # one engine and grader per run


def test_a_row_without_a_problem_is_refused(context: ShoppingContext) -> None:
    with pytest.raises(ValueError, match="problem"):
        ShoppingEnvironment(context).reset(prompt=[{"role": "user", "content": "hi"}])
