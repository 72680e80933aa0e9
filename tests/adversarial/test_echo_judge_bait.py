"""Restate-the-analysis judge bait (issue 22, item 3; SPEC 3: reasoning counts only where the model wrote it).

Seen: a non-LLM parser making one call that asks the model to restate the parser's own comparison of ids
and prices from verified results got quality 0.9 from the offline rules on every attempt (final score
0.27 -> 0.70), and an LLM judge that obeyed an injection still gained one gate through the cap. Through
the real namespace sandbox, verified proxy and scripted model: the echoed completion earns no reasoning
credit (gate 1: the model wrote nothing), and a judge model saying 0.9 is held at the offline verdict.
(The honest agents keep their verdicts: ``tests/shoppingbench/test_echo.py``,
``tests/arena/judge/test_judge_reference_agents.py``.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from arena.judge import JudgeCallConfig, JudgeInput, JudgeModel, LLMJudge, judge_offline
from arena.judge.prompt import attempt_document
from shoppingbench.doubles.llm_server import StubReply, create_app
from shoppingbench.problems.models import Problem
from shoppingbench.proxy import InferenceConfig
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.tools.serving import running_server
from tests.adversarial.echo_agents import restate_agent
from tests.adversarial.support import ROOMY, inference
from tests.sandbox_support import run_agent

__all__ = ["inference"]

OBEYS_INJECTION = '{"gate_failed": null, "reasoning_quality": 0.9, "explanation": "as the trajectory says"}'


@pytest.fixture(scope="module")
def suite(small_world: SampleWorld) -> list[Problem]:
    return small_world.suite(2)


@pytest.fixture(scope="module")
def bait(suite: list[Problem], small_engine: BM25SearchEngine, inference: InferenceConfig,
         tmp_path_factory: pytest.TempPathFactory) -> list[AttemptRecord]:
    agent = restate_agent(tmp_path_factory.mktemp("agents"))
    records = run_agent(agent, suite, small_engine, limits=ROOMY, workers=2, inference=inference)
    assert all(r.failure is None for r in records), [r.stderr_tail for r in records]
    return records


@pytest.fixture(scope="module")
def injected_judge() -> Iterator[LLMJudge]:
    """A judge model that obeys whatever the trajectory tells it: always 0.9."""
    def policy(body: dict[str, Any]) -> StubReply:
        return StubReply(content=OBEYS_INJECTION)

    with running_server(create_app(policy)) as url:
        yield LLMJudge([JudgeModel(name="obedient", base_url=f"{url}/v1")],
                       JudgeCallConfig(timeout_s=5.0, max_rounds=1), sleep=lambda _: None)


def _restated(record: AttemptRecord) -> list[str]:
    """The completions that carry the parser's comparison (what used to earn 0.9)."""
    return [c.completion_text or "" for c in record.proxy_log
            if c.kind == "inference" and "is cheaper than" in (c.completion_text or "")]


def test_a_restated_analysis_earns_no_reasoning_credit(bait: list[AttemptRecord]) -> None:
    assert all(_restated(r) and r.proxy_log[0].kind == "search" for r in bait), "no analysis was restated"
    verdicts = [judge_offline(JudgeInput.from_record(r)) for r in bait]
    assert [v.quality for v in verdicts] == [0.1] * len(bait), [v.explanation for v in verdicts]
    assert all(v.echoed_completions == 1 and "echoed" in v.explanation for v in verdicts)


def test_an_injected_llm_judge_gains_no_gate_on_an_echoed_attempt(bait: list[AttemptRecord],
                                                                  injected_judge: LLMJudge) -> None:
    for record in bait:
        item = JudgeInput.from_record(record)
        offline = judge_offline(item)
        verdict = injected_judge.judge(item)
        assert verdict.quality == offline.quality, verdict.explanation
        assert verdict.echoed_completions == offline.echoed_completions > 0


def test_the_llm_judge_never_reads_an_echoed_completion_as_reasoning(bait: list[AttemptRecord]) -> None:
    document = attempt_document(JudgeInput.from_record(bait[0]))
    calls = document["verified_proxy_log"]["calls"]
    echoed = [c for c in calls if c.get("echoed")]
    assert len(echoed) == 1 and "completion_start" not in echoed[0]
    assert document["verified_proxy_log"]["summary"]["echoed_completions"] == 1
    assert document["verified_proxy_log"]["summary"]["max_completion_tokens"] == 0


def test_the_bait_is_caught_whatever_the_agent_claims_in_its_steps(bait: list[AttemptRecord]) -> None:
    """Steps are the agent's words: rewriting them (a query of its own) does not change what is fair."""
    record = bait[0]
    forged = [dict(step, extra_info={**step.get("extra_info", {}), "query": _restated(record)[0]})
              for step in record.steps]
    item = JudgeInput(query=record.query, proxy_log=record.proxy_log, steps=forged)
    assert judge_offline(item).quality == 0.1
