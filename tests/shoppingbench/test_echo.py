"""The echo measure (``shoppingbench.echo``) on hand-made completions, and its calibration on the honest
reference agents: their completions stay far below the threshold, so they keep their verdicts and labels."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shoppingbench.agents import react_llm, tool_calling_llm
from shoppingbench.catalog_dir import open_catalog
from shoppingbench.doubles.llm_server import create_app
from shoppingbench.doubles.scripted_policies import shopping_policy
from shoppingbench.echo import ECHO_THRESHOLD, MAX_MEASURED_CHARS, echo_shares, echoed_calls
from shoppingbench.proxy import InferenceConfig, ProxyServer
from shoppingbench.records import ProxyCall
from shoppingbench.sample_world import SampleWorld
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.tools.serving import running_server
from tests.adversarial.support import ROOMY, inference
from tests.sandbox_support import run_agent
from tests.trajectories.records import tool_call_text

__all__ = ["inference"]

QUERY = "I'm looking for a silver phone case from spigen priced under 300 pesos, please help me."
RESULTS = json.dumps([
    {"product_id": "7001", "shop_id": "11", "title": "Spigen Rugged Armor Case Matte Black", "price": 249.0},
    {"product_id": "7002", "shop_id": "12", "title": "Spigen Liquid Crystal Glitter Case", "price": 289.5}])
ANALYSIS = ("I compared the search results for the shopper. Product 7001 costs 249.0, while product 7002 "
            "costs 289.5. 7001 is cheaper than 7002 and matches the request better, so I recommend 7001.")
HONEST = ("Both cases are Spigen and under the budget. 7001 at 249 is a matte black rugged one; 7002 at "
          "289.5 is glitter, which looks silver. The shopper asked for silver, so 7002 fits better despite "
          "costing a little more.")
MODEL = "stub-shopper"
FIXTURE_AGENTS = Path(__file__).resolve().parents[1] / "fixtures" / "agents"


def call(seq: int, completion: str | None, messages: list[dict[str, Any]], *, reasoning: str | None = None,
         tool_calls: list[dict[str, Any]] | None = None, status: int = 200) -> ProxyCall:
    return ProxyCall(seq=seq, kind="inference", method="POST", path="/inference/chat/completions",
                     status=status, started_at=1.0 + seq, duration_ms=5.0, request_messages=messages,
                     completion_text=completion, reasoning_text=reasoning,
                     completion_tool_calls=tool_calls or [], completion_tokens=60)


def react_messages(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "system", "content": react_llm.SYSTEM_PROMPT}, {"role": "user", "content": QUERY},
            {"role": "user", "content": f"<obs>{RESULTS}</obs>"}, *extra]


def test_a_restated_request_is_echoed() -> None:
    messages = [{"role": "system", "content": "Repeat the user's message."},
                {"role": "user", "content": ANALYSIS}]
    assert echo_shares([call(0, ANALYSIS, messages)], QUERY) == {0: 1.0}
    assert echoed_calls([call(0, ANALYSIS, messages)], QUERY) == [0]


def test_a_partial_echo_counts_when_most_of_it_is_copied() -> None:
    messages = [{"role": "user", "content": ANALYSIS}]
    padded = f"Sure, here it is. {ANALYSIS} Happy to help."
    mostly_own = f"{ANALYSIS.split('. ')[0]}. {HONEST}"
    shares = echo_shares([call(0, padded, messages), call(1, mostly_own, messages)], QUERY)
    assert shares[0] is not None and ECHO_THRESHOLD <= shares[0] < 1.0
    assert shares[1] is not None and shares[1] < ECHO_THRESHOLD


def test_honest_reasoning_citing_ids_and_prices_from_tool_results_is_not_echo() -> None:
    quoting_titles = f"7001 'Spigen Rugged Armor Case Matte Black' at 249.0 versus 7002 at 289.5: {HONEST}"
    log = [call(0, f"<think>{HONEST}</think>", react_messages()), call(1, quoting_titles, react_messages())]
    shares = echo_shares(log, QUERY)
    assert all(s is not None and s < 0.5 for s in shares.values()), shares
    assert echoed_calls(log, QUERY) == []


def test_restating_the_shoppers_query_is_fair() -> None:
    restating = call(0, f"<think>{QUERY}</think>", react_messages())
    searching = call(0, tool_call_text("find_product", {"q": QUERY}), react_messages())
    assert echoed_calls([restating], QUERY) == echoed_calls([searching], QUERY) == []
    assert echoed_calls([restating], "") == [0], "without the query, the restatement copies the request"


def test_repeating_what_the_model_wrote_earlier_is_fair_but_repeating_an_echo_is_not() -> None:
    own = call(0, HONEST, react_messages())
    again = call(1, HONEST, react_messages({"role": "assistant", "content": HONEST}))
    assert echoed_calls([own, again], QUERY) == []
    laundered = call(0, ANALYSIS, [{"role": "user", "content": ANALYSIS}])
    relayed = call(1, ANALYSIS, react_messages({"role": "assistant", "content": ANALYSIS}))
    assert echoed_calls([laundered, relayed], QUERY) == [0, 1]


def test_native_tool_calls_repeated_from_the_request_are_echoed() -> None:
    arguments = {"q": "spigen rugged armor case", "price": "-300", "service": "COD"}
    native = {"id": "c1", "type": "function",
              "function": {"name": "find_product", "arguments": json.dumps(arguments)}}
    sent: list[dict[str, Any]] = [{"role": "user", "content": "Repeat this call."},
                                  {"role": "assistant", "content": None, "tool_calls": [native]}]
    repeated = call(0, None, sent, tool_calls=[{"name": "find_product", "arguments": arguments}])
    chosen = call(0, None, react_messages(), tool_calls=[{"name": "find_product", "arguments": arguments}])
    assert echoed_calls([repeated], QUERY) == [0]
    assert echoed_calls([chosen], QUERY) == []


def test_short_failed_and_huge_completions() -> None:
    messages = [{"role": "user", "content": ANALYSIS * 3}]
    terminate = '<tool_call>[{"name": "terminate"}]</tool_call>'
    log = [call(0, "7001", messages), call(1, terminate, messages), call(2, ANALYSIS, messages, status=500)]
    assert echo_shares(log, QUERY) == {0: None, 1: None}
    huge = "lorem ipsum dolor sit amet " * 100_000
    assert echoed_calls([call(0, huge, [{"role": "user", "content": huge}])], QUERY) == [0]
    assert len(huge) > MAX_MEASURED_CHARS


# --- calibration on the honest reference agents ----------------------------------------------------


@pytest.fixture(scope="module")
def proxy(small_world: SampleWorld) -> Iterator[ProxyServer]:
    engine = open_catalog(small_world.catalog_dir)
    with running_server(create_app(shopping_policy, models=[MODEL])) as upstream, \
            ProxyServer(engine, InferenceConfig(base_url=f"{upstream}/v1", models=[MODEL]), channels=1,
                        transport="tcp") as server:
        yield server
    engine.close()


@pytest.mark.parametrize("agent", [react_llm.agent_main, tool_calling_llm.agent_main],
                         ids=["tagged", "native"])
def test_honest_react_agents_stay_far_below_the_threshold(agent: Any, proxy: ProxyServer,
                                                          small_world: SampleWorld) -> None:
    shares: list[float] = []
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {"SANDBOX_PROXY_URL": proxy.channels[0].url, "SANDBOX_DEFAULT_MODEL": MODEL,
                            "SANDBOX_ALLOWED_MODELS": MODEL}.items():
            patch.setenv(name, value)
        for problem in small_world.suite(4):
            proxy.begin(0, "echo-calibration", problem.id)
            agent(problem.public_view())
            shares.extend(s for s in echo_shares(proxy.end(0), problem.query).values() if s is not None)
    # Measured on suite(10): tagged max 0.38, native max 0.42 (titles quoted from tool results).
    assert len(shares) >= 40 and max(shares) <= 0.5, max(shares)


@pytest.mark.parametrize("name", ["oro_style_agent", "oro_template_agent"])
def test_the_reference_arena_style_fixtures_echo_nothing(name: str, small_world: SampleWorld,
                                                         small_engine: BM25SearchEngine,
                                                         inference: InferenceConfig) -> None:
    """The fixture agents in the reference arena's styles (one keeps its whole dialogue in one user
    message), in the namespace sandbox: measured on suite(3), max share 0.25."""
    records = run_agent(FIXTURE_AGENTS / f"{name}.py", small_world.suite(2), small_engine, limits=ROOMY,
                        workers=2, inference=inference)
    shares = [s for r in records for s in echo_shares(r.proxy_log, r.query).values() if s is not None]
    assert all(r.failure is None for r in records) and len(shares) >= 12
    assert max(shares) <= 0.5, max(shares)
