"""The reference agents, run for real (namespace sandbox, verified proxy, the LLM test double), get the
labels they stand for once their records go through the store: ReAct -> agentic, sub-task -> sub_task,
scripted baseline -> no_llm."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoppingbench.catalog_dir import open_catalog
from shoppingbench.doubles.llm_server import create_app
from shoppingbench.doubles.scripted_policies import shopping_policy
from shoppingbench.grading.grader import Grader
from shoppingbench.proxy import InferenceConfig
from shoppingbench.sample_world import SampleWorld
from shoppingbench.sandbox.limits import SandboxLimits
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig, iter_attempts
from shoppingbench.scoring import ORIGINAL
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.tools.serving import running_server
from tests.sandbox_support import UID_BASE
from tests.shoppingbench.scoring.test_scoring_support import FakeEmbedder
from trajectories.labelling import label_stored
from trajectories.store import TrajectoryStore

AGENTS = Path(__file__).resolve().parents[3] / "shoppingbench" / "agents"
MODEL = "stub-shopper"
EXPECTED = {"react_llm": "agentic", "sub_task": "sub_task", "scripted_baseline": "no_llm"}


@pytest.fixture(scope="module")
def engine(small_world: SampleWorld) -> Iterator[BM25SearchEngine]:
    engine = open_catalog(small_world.catalog_dir)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def inference() -> Iterator[InferenceConfig]:
    """The scripted shopping policy behind an OpenAI-compatible server: the stand-in for a hosted LLM."""
    with running_server(create_app(shopping_policy, models=[MODEL])) as url:
        yield InferenceConfig(base_url=f"{url}/v1", models=[MODEL])


def test_reference_agents_are_labelled_for_what_they_are(small_world: SampleWorld, engine: BM25SearchEngine,
                                                         inference: InferenceConfig, tmp_path: Path) -> None:
    suite = small_world.suite(1)  # one product, one shop and one voucher problem
    sandbox = SandboxConfig(backend="namespace", limits=SandboxLimits(timeout_s=90, startup_timeout_s=60),
                            uid_base=UID_BASE)
    grader = Grader(engine.get_products, FakeEmbedder(), ORIGINAL)
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'store.sqlite3'}") as store:
        hashes = {}
        for name in EXPECTED:
            agent = AgentFile.read(AGENTS / f"{name}.py")
            hashes[agent.sha256] = name
            store.write_attempts(iter_attempts(agent, suite, engine, grader, inference=inference,
                                               sandbox=sandbox, workers=3, run_id=f"run-{name}"))
        label_stored(store, progress=False)
        labels: dict[str, Counter[str]] = {name: Counter() for name in EXPECTED}
        for stored in store.load(store.attempt_ids()):
            assert stored.record.failure is None, stored.record.failure
            assert stored.label is not None
            labels[hashes[stored.record.agent_hash]][stored.label.label] += 1
            if hashes[stored.record.agent_hash] == "react_llm":
                evidence = stored.label.evidence
                assert evidence.executed_tool_calls >= 2
                assert evidence.matched_tool_calls == evidence.executed_tool_calls
    assert labels == {name: Counter({label: len(suite)}) for name, label in EXPECTED.items()}
