"""What an agent finds in the sandbox is what the reference arena gives it: ``SANDBOX_MODEL`` beside our
``SANDBOX_DEFAULT_MODEL``/``SANDBOX_ALLOWED_MODELS``, ``PROBLEM_DATA``, ``ujson`` and ``requests``, and the
problem dict with the reference's keys (``problem_id``, ``category`` as ``Product``/``Shop``/``Voucher``)
plus ours, none of which reveals the answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shoppingbench.problems.models import Problem, RewardTarget
from shoppingbench.proxy.inference import InferenceConfig
from shoppingbench.sandbox.limits import SandboxLimits
from shoppingbench.search.engine import BM25SearchEngine
from tests.sandbox_support import TIGHT, run_agent

REPORTER = '''
import json, os
import requests
import ujson


def agent_main(problem):
    seen = {"problem": problem, "problem_data": json.loads(os.environ["PROBLEM_DATA"]),
            "env": {k: v for k, v in os.environ.items()
                    if k.startswith("SANDBOX_") and k != "SANDBOX_PROXY_URL"},
            "ujson": ujson.dumps({"a": 1}), "requests": requests.__name__}
    return [{"completion": {"content": json.dumps(seen)}}]
'''


def test_defaults_follow_the_reference() -> None:
    assert SandboxLimits().timeout_s == 300


def test_the_agent_sees_the_reference_environment_and_problem_dict(small_engine: BM25SearchEngine,
                                                                   tmp_path: Path) -> None:
    agent = tmp_path / "reporter.py"
    agent.write_text(REPORTER)
    problem = Problem(id="p-1", category="shop", query="a kettle and a mug from one shop", difficulty="easy",
                      title="Shop 1", targets=[RewardTarget(product_id="1", title=["kettle"]),
                                               RewardTarget(product_id="2", title=["mug"])])
    inference = InferenceConfig(models=["deepseek-ai/DeepSeek-V3.2-TEE", "other"])
    (record,) = run_agent(agent, [problem], small_engine, limits=TIGHT, inference=inference)
    assert record.failure is None, (record.failure, record.stderr_tail)
    seen = json.loads(record.steps[0]["completion"]["content"])
    assert seen["env"] == {"SANDBOX_MODEL": "deepseek-ai/DeepSeek-V3.2-TEE",
                           "SANDBOX_DEFAULT_MODEL": "deepseek-ai/DeepSeek-V3.2-TEE",
                           "SANDBOX_ALLOWED_MODELS": "deepseek-ai/DeepSeek-V3.2-TEE,other"}
    assert seen["ujson"] == '{"a":1}' and seen["requests"] == "requests"
    assert seen["problem"] == seen["problem_data"] == problem.public_view()
    assert seen["problem"] == {"problem_id": seen["problem"]["id"], "id": seen["problem"]["id"],
                               "query": problem.query, "category": "Shop", "difficulty": "easy",
                               "title": "Shop 1"}


@pytest.mark.parametrize(("category", "spelled"), [("product", "Product"), ("voucher", "Voucher")])
def test_categories_are_spelled_as_in_the_reference(category: str, spelled: str) -> None:
    voucher = {"voucher_type": "platform", "threshold": 1, "discount_type": "fixed", "face_value": 1,
               "budget": 10} if category == "voucher" else None
    problem = Problem.model_validate({"category": category, "query": "q", "voucher": voucher,
                                      "targets": [{"product_id": "1", "title": ["t"]}]})
    assert problem.public_view()["category"] == spelled
    assert problem.public_view()["difficulty"] is None and problem.public_view()["title"] is None
