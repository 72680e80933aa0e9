"""Hostile agents of the adversarial suite, built as a miner would: the reference ReAct agent's file with
a few lines appended that cheat (not a test module itself)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shoppingbench.doubles.llm_server import create_app
from shoppingbench.doubles.scripted_policies import shopping_policy
from shoppingbench.proxy import InferenceConfig
from shoppingbench.sandbox.limits import SandboxLimits
from shoppingbench.tools.serving import running_server

REACT_AGENT = Path(__file__).resolve().parents[2] / "shoppingbench" / "agents" / "react_llm.py"
MODEL = "stub-shopper"
ROOMY = SandboxLimits(timeout_s=90, startup_timeout_s=60)


def react_with(tail: str, path: Path) -> Path:
    """The reference ReAct agent with ``tail`` appended (it may redefine ``agent_main`` and helpers)."""
    path.write_text(REACT_AGENT.read_text() + "\n\n# --- appended by the hostile miner ---\n" + tail)
    return path


@pytest.fixture(scope="module")
def inference() -> Iterator[InferenceConfig]:
    """The scripted shopping policy behind an OpenAI-compatible server (the LLM's test double)."""
    with running_server(create_app(shopping_policy, models=[MODEL])) as url:
        yield InferenceConfig(base_url=f"{url}/v1", models=[MODEL])
