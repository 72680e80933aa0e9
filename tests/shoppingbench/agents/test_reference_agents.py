"""The reference agents on a real sample world, through the verified proxy, with the scripted policy as
their model (the LLM test double): they solve problems, the LLM-driven agents' tool calls (tagged text or
native tool calls) all come from model completions while the sub-task agent's never do, and the reference
arena's style runs unmodified, also in the sandbox's import layout."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from fastapi import FastAPI

from shoppingbench.agent_sdk import COMPAT_DIR, parse_model_output
from shoppingbench.agents import react_llm, scripted_baseline, sub_task, tool_calling_llm
from shoppingbench.catalog_dir import open_catalog
from shoppingbench.doubles.llm_server import count_tokens
from shoppingbench.doubles.llm_server import create_app as create_stub_app
from shoppingbench.doubles.scripted_policies import shopping_policy
from shoppingbench.problems.models import Problem
from shoppingbench.proxy import InferenceConfig, ProxyServer
from shoppingbench.records import ProxyCall
from shoppingbench.sample_world import SampleWorld
from shoppingbench.scoring import AttemptScore, score_attempt
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.submission_check import check_agent
from shoppingbench.tools.serving import running_server
from tests.shoppingbench.scoring.test_scoring_support import FakeEmbedder
from tests.shoppingbench.test_agent_sdk import _sandbox_tree, run_isolated

MODEL = "stub-shopper"
ORO_AGENT = Path(__file__).resolve().parents[2] / "fixtures" / "agents" / "oro_style_agent.py"
AgentMain = Callable[[dict[str, Any]], list[dict[str, Any]]]


@dataclass
class Services:
    engine: BM25SearchEngine
    proxy: ProxyServer
    stub: FastAPI

    def environment(self) -> dict[str, str]:
        return {"SANDBOX_PROXY_URL": self.proxy.channels[0].url, "SANDBOX_DEFAULT_MODEL": MODEL,
                "SANDBOX_ALLOWED_MODELS": MODEL}


@dataclass
class Run:
    problem: Problem
    steps: list[dict[str, Any]]
    log: list[ProxyCall]
    score: AttemptScore


@pytest.fixture(scope="module")
def services(small_world: SampleWorld) -> Iterator[Services]:
    engine = open_catalog(small_world.catalog_dir)
    stub = create_stub_app(shopping_policy, models=[MODEL])
    with running_server(stub) as upstream, \
            ProxyServer(engine, InferenceConfig(base_url=f"{upstream}/v1", models=[MODEL]), channels=1,
                        transport="tcp") as proxy:
        yield Services(engine, proxy, stub)


def run_suite(agent: AgentMain, suite: list[Problem], services: Services) -> list[Run]:
    runs = []
    with pytest.MonkeyPatch.context() as patch:
        for name, value in services.environment().items():
            patch.setenv(name, value)
        for problem in suite:
            services.proxy.begin(0, "test-run", problem.id)
            steps = agent(problem.public_view())
            log = services.proxy.end(0)
            runs.append(Run(problem, steps, log, score_attempt(problem, steps, services.engine.get_products,
                                                               FakeEmbedder())))
    return runs


def executed_calls(run: Run) -> list[tuple[str, str]]:
    return [(call["name"], json.dumps(call["parameters"], sort_keys=True))
            for step in run.steps for call in step["completion"]["message"].get("tool_call", [])]


def completed_calls(run: Run) -> set[tuple[str, str]]:
    """Every tool call some model completion in the verified log emitted, as text or natively."""
    return {(call["name"], json.dumps(call["parameters"], sort_keys=True))
            for entry in run.log if entry.kind == "inference"
            for call in parse_model_output(entry.completion_text or "",
                                           native_tool_calls=entry.completion_tool_calls).tool_calls}


def successes(runs: list[Run]) -> int:
    return sum(run.score.success for run in runs)


@pytest.mark.parametrize("agent", [react_llm, tool_calling_llm], ids=["react", "tool-calling"])
def test_the_llm_agents_solve_problems_with_every_tool_call_from_the_model(
        agent: ModuleType, services: Services, small_world: SampleWorld) -> None:
    runs = run_suite(agent.agent_main, small_world.suite(3), services)
    assert successes(runs) >= 4, [r.score for r in runs]
    for run in runs:
        assert run.score.format == 1.0 and run.score.length > 0, run.problem.query
        assert set(executed_calls(run)) <= completed_calls(run)
        searched = [e for e in run.log if e.kind == "search"]
        assert len(searched) == sum(name in ("find_product", "view_product_information")
                                    for name, _ in executed_calls(run))
        final = run.steps[-1]["completion"]["message"]
        assert final["tool_call"][-1]["name"] == "terminate" and run.score.answer
        assert any(pid in final["think"] for pid in run.score.answer)


def test_the_sub_task_agent_only_asks_the_model_short_questions(services: Services,
                                                                small_world: SampleWorld) -> None:
    runs = run_suite(sub_task.agent_main, small_world.suite(3), services)
    assert successes(runs) >= 3, [r.score for r in runs]
    for run in runs:
        inference = [e for e in run.log if e.kind == "inference"]
        assert inference and all(count_tokens(e.completion_text or "") < 30 for e in inference
                                 if "CHOOSE" in json.dumps(e.request_messages))
        assert not set(executed_calls(run)) & completed_calls(run)
        assert run.score.format == 1.0


def test_the_scripted_baseline_runs_on_the_sdk_without_a_model(services: Services,
                                                               small_world: SampleWorld) -> None:
    runs = run_suite(scripted_baseline.agent_main, small_world.suite(3), services)
    assert successes(runs) >= 3
    assert all(e.kind == "search" for run in runs for e in run.log)


@contextmanager
def _load(path: Path, name: str) -> Iterator[ModuleType]:
    """A fresh copy of an agent file as a module; its module-level proxy client is closed afterwards."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        yield module
    finally:
        module._proxy.close()


def test_an_agent_in_the_reference_arenas_style_runs_unmodified(services: Services, small_world: SampleWorld,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(COMPAT_DIR))
    with _load(ORO_AGENT, "oro_style_agent") as agent:
        runs = run_suite(agent.agent_main, small_world.suite(2), services)
    assert successes(runs) >= 3, [r.score for r in runs]
    for run in runs:
        assert set(executed_calls(run)) <= completed_calls(run)
        assert run.steps[0]["extra_info"]["step"] == 1  # its own numbering, kept as given


@pytest.mark.parametrize("agent_file", [ORO_AGENT, Path(react_llm.__file__), Path(tool_calling_llm.__file__)],
                         ids=["oro-style", "react", "tool-calling"])
def test_agents_run_in_the_sandbox_import_layout(agent_file: Path, services: Services,
                                                 small_world: SampleWorld, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Alone with the SDK (no other shoppingbench module importable), the agent does exactly what it does
    in-process: the same calls, the same answer."""
    problem = small_world.suite(1)[1]
    code = f"""
import importlib.util, json
spec = importlib.util.spec_from_file_location("agent", {str(agent_file)!r})
agent = importlib.util.module_from_spec(spec)
spec.loader.exec_module(agent)
print("STEPS" + json.dumps(agent.agent_main(json.loads({json.dumps(json.dumps(problem.public_view()))}))))
"""
    services.proxy.begin(0, "isolated", problem.id)
    done = run_isolated(code, _sandbox_tree(tmp_path), services.environment())
    log = services.proxy.end(0)
    assert done.returncode == 0, done.stderr[-2000:]
    steps = json.loads(done.stdout[done.stdout.index("STEPS") + 5:])
    isolated = Run(problem, steps, log, score_attempt(problem, steps, services.engine.get_products,
                                                      FakeEmbedder()))
    monkeypatch.syspath_prepend(str(COMPAT_DIR))
    with _load(agent_file, f"in_process_{agent_file.stem}") as agent:
        (in_process,) = run_suite(agent.agent_main, [problem], services)
    assert executed_calls(isolated) == executed_calls(in_process) and len(executed_calls(isolated)) >= 4
    assert isolated.score.answer == in_process.score.answer != []
    assert isolated.score.format == 1.0 and set(executed_calls(isolated)) <= completed_calls(isolated)


def test_every_reference_agent_passes_static_analysis_against_the_worlds_ids(
        small_world: SampleWorld) -> None:
    ids = {target.product_id for problem in small_world.suite(100) for target in problem.targets}
    assert len(ids) > 300
    for path in (Path(scripted_baseline.__file__), Path(react_llm.__file__), Path(sub_task.__file__),
                 Path(tool_calling_llm.__file__), ORO_AGENT):
        report = check_agent(path.read_bytes(), known_product_ids=ids)
        assert report.ok, (path.name, report.findings)
