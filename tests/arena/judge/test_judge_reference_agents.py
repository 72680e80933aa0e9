"""The offline judge on genuine attempts: the reference agents through the verified proxy, with the
scripted shopping policy as their model (the LLM test double for a hosted model).

A ReAct agent whose model reads and compares the results earns the top level; the sub-task agent,
whose Python drives the tools while the model only picks an id, and the scripted baseline, which never
calls a model, stay at the bottom, whatever their steps say.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from arena.judge import JudgeInput, judge_offline
from shoppingbench.agents import react_llm, scripted_baseline, sub_task
from shoppingbench.catalog_dir import open_catalog
from shoppingbench.doubles.llm_server import create_app
from shoppingbench.doubles.scripted_policies import shopping_policy
from shoppingbench.proxy import InferenceConfig, ProxyServer
from shoppingbench.sample_world import SampleWorld
from shoppingbench.tools.serving import running_server

MODEL = "stub-shopper"


@pytest.fixture(scope="module")
def proxy(small_world: SampleWorld) -> Iterator[ProxyServer]:
    engine = open_catalog(small_world.catalog_dir)
    with running_server(create_app(shopping_policy, models=[MODEL])) as upstream, \
            ProxyServer(engine, InferenceConfig(base_url=f"{upstream}/v1", models=[MODEL]), channels=1,
                        transport="tcp") as server:
        yield server
    engine.close()


def judged(agent: Any, proxy: ProxyServer, small_world: SampleWorld) -> list[float]:
    qualities = []
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {"SANDBOX_PROXY_URL": proxy.channels[0].url, "SANDBOX_DEFAULT_MODEL": MODEL,
                            "SANDBOX_ALLOWED_MODELS": MODEL}.items():
            patch.setenv(name, value)
        for problem in small_world.suite(2):
            proxy.begin(0, "judge-test", problem.id)
            steps = agent(problem.public_view())
            log = proxy.end(0)
            item = JudgeInput(query=problem.query, proxy_log=log, steps=steps)
            qualities.append(judge_offline(item).quality)
    return qualities


def test_reference_agents_are_judged_by_what_their_model_did(proxy: ProxyServer,
                                                             small_world: SampleWorld) -> None:
    react = judged(react_llm.agent_main, proxy, small_world)
    code_driven = judged(sub_task.agent_main, proxy, small_world)
    scripted = judged(scripted_baseline.agent_main, proxy, small_world)
    assert len(react) == 6 and set(react) == {0.9}
    assert set(code_driven) == {0.1} and set(scripted) == {0.1}
