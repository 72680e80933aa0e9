"""The tool-calling reference agent on a real sample world, through the verified proxy, with the
OpenAI-compatible stub as its model (the LLM test double, playing the scripted shopping policy or a few
scripted replies).

The key property: every request the agent sends renders, through Qwen3's chat template, exactly as the
training conversation ``steps_to_messages`` builds from the steps recorded before it, and its tokens are
the start of the training example of the whole attempt: the model reads at inference what it is trained on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from transformers import PreTrainedTokenizerFast

from shoppingbench.agent_sdk import MAX_TOOL_CHARS, SYSTEM_PROMPT, TOOL_SCHEMAS, tool_result_text
from shoppingbench.agents import tool_calling_llm
from shoppingbench.dialogue import DialogueStep
from shoppingbench.doubles.llm_server import StubReply
from shoppingbench.doubles.llm_server import create_app as create_stub_app
from shoppingbench.doubles.scripted_policies import shopping_policy
from shoppingbench.problems.models import Problem
from shoppingbench.proxy import InferenceConfig, ProxyServer
from shoppingbench.proxy.budgets import InferenceBudgets
from shoppingbench.records import ProxyCall
from shoppingbench.sample_world import SampleWorld
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.tools.serving import running_server
from tests.shoppingbench.agents.test_reference_agents import MODEL, Run, Services, run_suite
from trajectories.training.data.conversations import DataFilter, steps_to_messages
from trajectories.training.data.tokens import render_messages
from trajectories.training.dev.tiny import qwen3_tokenizer

Policy = Callable[[dict[str, Any]], StubReply]


@contextmanager
def serving(engine: BM25SearchEngine, policy: Policy,
            budgets: InferenceBudgets | None = None) -> Iterator[Services]:
    stub = create_stub_app(policy, models=[MODEL])
    inference_budgets = budgets or InferenceBudgets()
    with running_server(stub) as upstream, \
            ProxyServer(engine, InferenceConfig(base_url=f"{upstream}/v1", models=[MODEL],
                                                budgets=inference_budgets),
                        channels=1, transport="tcp") as proxy:
        yield Services(engine, proxy, stub)


def script(*replies: StubReply) -> Policy:
    """Answers the request holding ``i`` assistant turns with ``replies[i]`` (the last one repeats)."""
    def policy(body: dict[str, Any]) -> StubReply:
        turn = sum(message.get("role") == "assistant" for message in body["messages"])
        reply: StubReply = replies[min(turn, len(replies) - 1)]
        return reply
    return policy


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def requests(run: Run) -> list[list[dict[str, Any]]]:
    """The messages of every chat request the agent sent, as the verified proxy logged them."""
    return [entry.request_messages or [] for entry in run.log if entry.kind == "inference"]


def inference_calls(log: list[ProxyCall]) -> list[ProxyCall]:
    return [entry for entry in log if entry.kind == "inference"]


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return qwen3_tokenizer()


@pytest.fixture(scope="module")
def problem(small_world: SampleWorld) -> Problem:
    return small_world.suite(1)[0]


schemas: list[Any] = TOOL_SCHEMAS


def render(tokenizer: PreTrainedTokenizerFast, messages: list[dict[str, Any]]) -> str:
    text: Any = tokenizer.apply_chat_template(messages, tools=schemas, add_generation_prompt=True,
                                              tokenize=False)
    return str(text)


def test_every_prompt_renders_as_the_training_conversation_of_the_steps_so_far(
        small_world: SampleWorld, small_engine: BM25SearchEngine, tokenizer: PreTrainedTokenizerFast) -> None:
    assert DataFilter().max_tool_chars == MAX_TOOL_CHARS
    with serving(small_engine, shopping_policy) as services:
        runs = run_suite(tool_calling_llm.agent_main, small_world.suite(1), services)
    cut_results = 0
    for run in runs:
        steps = [DialogueStep.model_validate(step) for step in run.steps]
        sent = requests(run)
        assert run.score.length > 0 and len(sent) == len(steps) >= 3, run.problem.query
        assert all(entry.params["tools"] == TOOL_SCHEMAS for entry in inference_calls(run.log))
        for number, messages in enumerate(sent):
            trained = steps_to_messages(run.problem.query, steps[:number], DataFilter().max_tool_chars)
            assert render(tokenizer, messages) == render(tokenizer, trained), (run.problem.query, number)
        # The last prompt's tokens open the training example of the whole attempt (TRL's training template),
        # and what follows them there is the final turn, which the model learns to generate.
        prompt: Any = tokenizer.apply_chat_template(sent[-1], tools=schemas, add_generation_prompt=True,
                                                    tokenize=True, return_dict=True)
        example = render_messages(tokenizer, steps_to_messages(run.problem.query, steps, MAX_TOOL_CHARS),
                                  TOOL_SCHEMAS)
        length = len(prompt["input_ids"])
        assert example.input_ids[:length] == list(prompt["input_ids"])
        end = example.assistant_mask.index(0, length)
        final = tokenizer.decode(example.input_ids[length:end])
        assert final.startswith("<think>") and '"name": "terminate"' in final, final
        cut_results += sum(m["role"] == "tool" and m["content"].endswith("...") for m in sent[-1])
    assert sum(run.score.success for run in runs) >= 2, [run.score for run in runs]
    assert cut_results, "no tool result was long enough to be cut: the cut is untested"


def test_raw_hermes_text_is_read_and_sent_back_as_structured_tool_calls(
        small_engine: BM25SearchEngine, problem: Problem) -> None:
    """A server without a tool-call parser answers Qwen3's raw text; the agent still speaks the protocol."""
    search = '<tool_call>\n{"name": "find_product", "arguments": {"q": "water bottle"}}\n</tool_call>'
    finish = ('<tool_call>\n{"name": "recommend_product", "arguments": {"product_ids": "1"}}\n</tool_call>\n'
              '<tool_call>\n{"name": "terminate", "arguments": {"status": "success"}}\n</tool_call>')
    policy = script(StubReply(content=f"<think>\nI search for bottles.\n</think>\n\n{search}"),
                    StubReply(content=f"<think>\nThe first one fits.\n</think>\n\n{finish}"))
    with serving(small_engine, policy) as services:
        (run,) = run_suite(tool_calling_llm.agent_main, [problem], services)
    first, second = run.steps
    assert first["completion"]["message"]["think"] == "I search for bottles."
    (searched,) = first["completion"]["message"]["tool_call"]
    assert (searched["name"], searched["parameters"]) == ("find_product", {"q": "water bottle"})
    assert [c["name"] for c in second["completion"]["message"]["tool_call"]] == ["recommend_product",
                                                                               "terminate"]
    assert [e.params["q"] for e in run.log if e.kind == "search"] == ["water bottle"]
    system, user, assistant, tool = requests(run)[-1]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user == {"role": "user", "content": problem.query}
    assert assistant == {"role": "assistant", "content": "", "reasoning_content": "I search for bottles.",
                         "reasoning": "I search for bottles.", "tool_calls": [
                             {"id": "call_0_0", "type": "function", "function": {
                                 "name": "find_product", "arguments": '{"q": "water bottle"}'}}]}
    assert tool == {"role": "tool", "tool_call_id": "call_0_0", "name": "find_product",
                    "content": tool_result_text(searched["result"])}
    assert searched["tool_call_id"] == "call_0_0"


def test_failing_calls_become_results_the_model_reads(small_engine: BM25SearchEngine,
                                                       problem: Problem) -> None:
    policy = script(StubReply(tool_calls=[call("find_product", query="kettle"), call("buy_now", id="1")]),
                    StubReply(tool_calls=[call("terminate", status="failure")]))
    with serving(small_engine, policy) as services:
        (run,) = run_suite(tool_calling_llm.agent_main, [problem], services)
    assert not [e for e in run.log if e.kind == "search"]
    wrong, unknown = run.steps[0]["completion"]["message"]["tool_call"]
    assert "unexpected keyword argument 'query'" in wrong["result"]
    assert "'buy_now' is not registered" in unknown["result"]
    results = [m["content"] for m in requests(run)[-1] if m["role"] == "tool"]
    assert results == [wrong["result"], unknown["result"]] and all(r.startswith("Error: ") for r in results)
    assert run.steps[-1]["completion"]["message"]["tool_call"][0]["name"] == "terminate"


def test_a_reply_without_calls_or_text_is_asked_again_then_the_agent_gives_up(
        small_engine: BM25SearchEngine, problem: Problem) -> None:
    with serving(small_engine, script(StubReply(reasoning="Still thinking."))) as services:
        (run,) = run_suite(tool_calling_llm.agent_main, [problem], services)
    assert run.steps == []
    assert len(requests(run)) == tool_calling_llm.MAX_EMPTY_REPLIES + 1
    assert all(len(messages) == 2 for messages in requests(run)), "nothing the training side lacks is sent"


def test_text_for_the_user_is_a_turn_and_the_dialogue_goes_on(small_engine: BM25SearchEngine,
                                                              problem: Problem) -> None:
    policy = script(StubReply(content="I will look for it.", reasoning="Plan."),
                    StubReply(tool_calls=[call("terminate", status="failure")]))
    with serving(small_engine, policy) as services:
        (run,) = run_suite(tool_calling_llm.agent_main, [problem], services)
    assert run.steps[0]["completion"]["message"] == {"think": "Plan.", "response": "I will look for it."}
    assert requests(run)[-1][-1] == {"role": "assistant", "content": "I will look for it.",
                                     "reasoning_content": "Plan.", "reasoning": "Plan."}


def test_the_agent_stops_after_max_steps(small_engine: BM25SearchEngine, problem: Problem) -> None:
    with serving(small_engine, script(StubReply(tool_calls=[call("find_product", q="lamp")]))) as services:
        (run,) = run_suite(tool_calling_llm.agent_main, [problem], services)
    assert len(run.steps) == len(requests(run)) == tool_calling_llm.MAX_STEPS
    assert run.score.length == 0


def test_a_spent_inference_budget_ends_the_attempt(small_engine: BM25SearchEngine, problem: Problem) -> None:
    policy = script(StubReply(tool_calls=[call("find_product", q="lamp")]))
    with serving(small_engine, policy, InferenceBudgets(attempt_calls=2)) as services:
        (run,) = run_suite(tool_calling_llm.agent_main, [problem], services)
    assert len(run.steps) == 2
    refused = [e for e in inference_calls(run.log) if e.status == 429]
    assert len(refused) == 1 and json.dumps(refused[0].error or "").count("budget") >= 1
