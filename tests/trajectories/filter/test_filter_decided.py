"""Who decided (``trajectories.filter.decided``): requests that hold the agent's code's own text are
steered. Hand-made logs for each rule, then real dialogues of the honest agents through the verified
proxy and the scripted model: the project's ReAct agent (tagged calls), the OpenAI-tools agent (native
calls, a minimal search-view-recommend loop) and the reference arena's head-agent style (one system
prompt, the whole history as tagged blocks in one user message) keep every request unsteered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shoppingbench.agents import react_llm, tool_calling_llm
from shoppingbench.proxy import InferenceConfig, ProxyServer
from shoppingbench.records import ProxyCall, ReturnedProduct
from shoppingbench.sample_world import SampleWorld
from shoppingbench.search.engine import BM25SearchEngine
from tests.adversarial.support import ROOMY, inference
from tests.sandbox_support import run_agent
from tests.shoppingbench.test_echo import proxy
from trajectories.filter import label_attempt
from trajectories.filter.decided import run_static_grams, static_grams, steered_calls

__all__ = ["inference", "proxy"]

MODEL = "stub-shopper"
FIXTURE_AGENTS = Path(__file__).resolve().parents[2] / "fixtures" / "agents"
SYSTEM = ("You are a shopping assistant. Call find_product to search, view_product_information to read "
          "details, then recommend_product with the best ids and terminate. Think before each call.")
QUERIES = ["I want a silver spigen phone case under 300 pesos.",
           "Find me a red cotton crop top with free shipping.",
           "Show me bpa free silicone bento boxes with cash on delivery."]
QUERY = QUERIES[0]
HITS = [ReturnedProduct(product_id=f"70{n:02d}", shop_id=f"{n}", title=title, price=price, sold_count=n * 7)
        for n, (title, price) in enumerate([("Spigen Rugged Armor Case Matte Black", 249.0),
                                            ("Spigen Liquid Crystal Glitter Silver Case", 289.5),
                                            ("Spigen Ultra Hybrid Clear Case", 199.0),
                                            ("Spigen Tough Armor Silver Case", 299.0),
                                            ("Generic Silver Case", 99.0)], start=1)]
THINK = ("<think>The shopper wants a silver Spigen case under 300. I will search for spigen silver case with "
         "a price filter.</think>")
CALL = ('<tool_call>[{"name": "find_product", "parameters": {"q": "spigen silver case", "price": "-300"}}]'
        '</tool_call>')


def inference_call(seq: int, messages: list[dict[str, Any]], completion: str) -> ProxyCall:
    return ProxyCall(seq=seq, kind="inference", method="POST", path="/inference/chat/completions", status=200,
                     started_at=1.0 + seq, duration_ms=5.0, request_messages=messages,
                     completion_text=completion,
                     completion_tokens=60)


def search_call(seq: int, params: dict[str, Any], hits: list[ReturnedProduct]) -> ProxyCall:
    return ProxyCall(seq=seq, kind="search", method="GET", path="/search/find_product", params=params,
                     status=200, started_at=1.0 + seq, duration_ms=3.0,
                     product_ids=[h.product_id for h in hits],
                     results=hits)


def rendering(hits: list[ReturnedProduct]) -> str:
    """Results as the ReAct agent shows them (the tool's JSON, in its order)."""
    shown = [{"product_id": h.product_id, "shop_id": h.shop_id, "title": h.title, "price": h.price,
              "service": h.service, "sold_count": h.sold_count} for h in hits]
    entries = [{"tool_call_id": "3f9a0c1d", "name": "find_product", "result": shown}]
    return "<obs>" + json.dumps(entries) + "</obs>"


def dialogue(second_user: str, *, query: str = QUERY, emitted: bool = True) -> list[ProxyCall]:
    """Search (emitted by the model's first completion, or not), then a second request whose last user
    message is ``second_user``."""
    first = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": query}]
    log = [inference_call(0, first, THINK + CALL if emitted else "<think>ok</think>"),
           search_call(1, {"q": "spigen silver case", "price": "-300"}, HITS)]
    second = [*first, {"role": "assistant", "content": THINK + CALL},
              {"role": "user", "content": second_user}]
    log.append(inference_call(2, second, "<think>Comparing 7002 at 289.5 with 7004 at 299.0: 7002 is silver "
                                         "and cheaper.</think><tool_call>[{\"name\": \"recommend_product\", "
                                         "\"parameters\": {\"product_ids\": \"7002\"}}]</tool_call>"))
    return log


def static_of(*logs: list[ProxyCall]) -> frozenset[str]:
    """The run's static text: these logs plus the same agent's first request on the other queries."""
    first = [[{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}] for q in QUERIES[1:]]
    others = [[inference_call(0, messages, "x")] for messages in first]
    static = run_static_grams([*logs, *others])
    assert static is not None
    return static


def test_results_rendered_whole_or_cut_after_n_items_leave_the_request_the_model_s() -> None:
    for hits in (HITS, HITS[:3]):
        log = dialogue(rendering(hits))
        assert steered_calls(log, QUERY, static_of(log)) == {}


def test_a_result_filtered_by_its_content_is_the_code_s_selection() -> None:
    log = dialogue(rendering([HITS[1], HITS[3]]))  # the two silver ones, singled out by the code
    steered = steered_calls(log, QUERY, static_of(log))
    assert list(steered) == [2] and "selection" in steered[2]


def test_a_tool_call_described_in_words_is_the_code_speaking() -> None:
    first = [{"role": "system", "content": SYSTEM},
             {"role": "user", "content": f"{QUERY}\nNext step: search find_product with q spigen silver and "
                                         "price -300."}]
    log = [inference_call(0, first, THINK + CALL)]
    steered = steered_calls(log, QUERY, static_of(log))
    assert list(steered) == [0] and "spigen silver" in steered[0]


def test_only_the_whole_query_is_the_shopper_s() -> None:
    part = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "a silver spigen phone case"}]
    whole = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUERY}]
    for messages, steered in ((part, [0]), (whole, [])):
        log = [inference_call(0, messages, THINK + CALL)]
        assert list(steered_calls(log, QUERY, static_of(log))) == steered


def test_results_of_a_call_the_code_made_are_not_renderings() -> None:
    log = dialogue(rendering(HITS), emitted=False)
    steered = steered_calls(log, QUERY, static_of(log))
    assert 2 in steered and "product id" in steered[2]


def test_the_restated_comparison_of_the_code_is_steered() -> None:
    analysis = ("Restate in your own words: product 7002 'Spigen Liquid Crystal Glitter Silver Case' costs "
                "289.5, while product 7004 costs 299.0, so 7002 is the better pick.")
    log = dialogue(rendering(HITS) + "\n" + analysis)
    assert 2 in steered_calls(log, QUERY, static_of(log))


def test_a_completion_answering_a_steered_request_launders_nothing() -> None:
    """The model's words written under the code's steer are not the model's own in the next request."""
    steer = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"{QUERY}\nSay: I pick 7003 "
                                                                                "because it is clear."}]
    said = "<think>I pick 7003 because it is clear.</think>"
    log = [inference_call(0, steer, said),
           inference_call(1, [*steer, {"role": "assistant", "content": said}], THINK + CALL)]
    assert set(steered_calls(log, QUERY, static_of(log))) == {0, 1}


def test_static_text_is_known_only_across_problems() -> None:
    one = [[[{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUERY}]]]
    assert static_grams(one) is None  # unknown: such a run is not measured
    two = [*one, [[{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUERIES[1]}]]]
    static = static_grams(two)
    assert static is not None and "you are a" in static and "silver spigen phone" not in static


# --- real dialogues of the honest agents --------------------------------------------------------------


def _labels(logs: list[tuple[str, list[ProxyCall], list[Any]]]) -> list[tuple[dict[int, str], str]]:
    static = run_static_grams([log for _, log, _ in logs])
    assert static is not None
    found: list[tuple[dict[int, str], str]] = []
    for query, log, steps in logs:
        steered = steered_calls(log, query, static)
        found.append((steered, label_attempt(log, steps, query=query, steered=steered).label))
    return found


@pytest.mark.parametrize("agent", [react_llm.agent_main, tool_calling_llm.agent_main],
                         ids=["tagged", "native"])
def test_the_project_s_agents_decide_every_call_themselves(agent: Any, proxy: ProxyServer,
                                                         small_world: SampleWorld) -> None:
    logs = []
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {"SANDBOX_PROXY_URL": proxy.channels[0].url, "SANDBOX_DEFAULT_MODEL": MODEL,
                            "SANDBOX_ALLOWED_MODELS": MODEL}.items():
            patch.setenv(name, value)
        for problem in small_world.suite(2):
            proxy.begin(0, "decided", problem.id)
            steps = agent(problem.public_view())
            logs.append((problem.query, proxy.end(0), steps))
    found = _labels(logs)
    assert [steered for steered, _ in found] == [{}] * len(logs)
    assert [label for _, label in found] == ["agentic"] * len(logs)


def test_the_reference_arena_s_head_agent_style_decides_every_call_itself(
        small_world: SampleWorld, small_engine: BM25SearchEngine, inference: InferenceConfig) -> None:
    records = run_agent(FIXTURE_AGENTS / "oro_style_agent.py", small_world.suite(2), small_engine,
                        limits=ROOMY, workers=2, inference=inference)
    assert all(r.failure is None for r in records)
    found = _labels([(r.query, r.proxy_log, r.steps) for r in records])
    assert [steered for steered, _ in found] == [{}] * len(records)
    assert [label for _, label in found] == ["agentic"] * len(records)
