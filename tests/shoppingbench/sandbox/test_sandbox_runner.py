"""The sandboxed runner end to end: real sandboxes, the verified proxy, the LLM test double, the scorer.

The reference agents (and one written in the reference arena's style) must score exactly as they do
in-process, and every attempt's proxy log must hold the calls its dialogue shows, no more, no fewer.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shoppingbench.agent_sdk import COMPAT_DIR
from shoppingbench.doubles.llm_server import create_app
from shoppingbench.doubles.scripted_policies import shopping_policy
from shoppingbench.evaluation import iter_in_process
from shoppingbench.grading.grader import Grader
from shoppingbench.problems.models import Problem, public_id
from shoppingbench.proxy import InferenceConfig, ProxyServer
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.sandbox import backends
from shoppingbench.sandbox.backends import BackendName, NamespaceBackend, SandboxUnavailable
from shoppingbench.sandbox.limits import SandboxLimits
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig, iter_attempts
from shoppingbench.sandbox.uids import lease_uids
from shoppingbench.scoring import PRODUCTION_STRICT, CachedEmbedder, MiniLMEmbedder
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.tools.serving import running_server
from tests.sandbox_support import (
    SLOT_UIDS,
    TIGHT,
    UID_BASE,
    fake_grader,
    leftover_processes,
    problem,
    run_agent,
    sandbox_backends,
)

REPO = Path(__file__).resolve().parents[3]
REFERENCE_AGENTS = {
    "scripted_baseline": REPO / "shoppingbench" / "agents" / "scripted_baseline.py",
    "react_llm": REPO / "shoppingbench" / "agents" / "react_llm.py",
    "sub_task": REPO / "shoppingbench" / "agents" / "sub_task.py",
    "oro_style": REPO / "tests" / "fixtures" / "agents" / "oro_style_agent.py",
}
MODEL = "stub-shopper"
ROOMY = SandboxLimits(timeout_s=90, startup_timeout_s=60)


@pytest.fixture(scope="module")
def engine(small_engine: BM25SearchEngine) -> BM25SearchEngine:
    return small_engine


@pytest.fixture(scope="module")
def grader(engine: BM25SearchEngine, tmp_path_factory: pytest.TempPathFactory) -> Grader:
    cache = tmp_path_factory.mktemp("embeddings") / "titles.sqlite3"
    return Grader(engine.get_products, CachedEmbedder(MiniLMEmbedder(), cache), PRODUCTION_STRICT)


@pytest.fixture(scope="module")
def inference() -> Iterator[InferenceConfig]:
    """The scripted shopping policy behind an OpenAI-compatible server (the LLM's test double)."""
    with running_server(create_app(shopping_policy, models=[MODEL])) as url:
        yield InferenceConfig(base_url=f"{url}/v1", models=[MODEL])


@pytest.fixture(autouse=True)
def no_process_survives() -> Iterator[None]:
    yield
    assert leftover_processes(SLOT_UIDS) == [], "a sandbox process outlived its run"


def _load(path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    spec = importlib.util.spec_from_file_location(f"in_process_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _in_process(path: Path, suite: list[Problem], engine: BM25SearchEngine, grader: Grader,
                inference: InferenceConfig, monkeypatch: pytest.MonkeyPatch) -> list[AttemptRecord]:
    """The same agent file run trusted in this process, against the same proxy code over loopback."""
    monkeypatch.syspath_prepend(str(COMPAT_DIR))
    module = _load(path, monkeypatch)
    with ProxyServer(engine, inference, channels=1, transport="tcp") as proxy:
        monkeypatch.setenv("SANDBOX_PROXY_URL", proxy.channels[0].url)
        monkeypatch.setenv("SANDBOX_DEFAULT_MODEL", MODEL)
        monkeypatch.setenv("SANDBOX_ALLOWED_MODELS", MODEL)
        proxy.begin(0, "in-process", "all")
        records = iter_in_process(module.agent_main, suite, grader, run_id="in-process")
        by_id = {r.problem_id: r for r in records}
        proxy.end(0)
    return [by_id[p.id] for p in suite]


def _step_results(record: AttemptRecord) -> list[list[str]]:
    """Product ids each search/view tool call of the dialogue got back, in order."""
    results = []
    for step in record.steps:
        for call in step["completion"]["message"].get("tool_call", []):
            if call["name"] in ("find_product", "view_product_information"):
                results.append([str(item["product_id"]) for item in call.get("result") or []])
    return results


@pytest.mark.parametrize("backend", sandbox_backends())
@pytest.mark.parametrize("name", sorted(REFERENCE_AGENTS))
def test_reference_agents_score_in_the_sandbox_exactly_as_in_process(backend: BackendName,
        name: str, small_world: SampleWorld, engine: BM25SearchEngine, grader: Grader,
        inference: InferenceConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = small_world.suite(2)
    sandboxed = run_agent(REFERENCE_AGENTS[name], suite, engine, grader, limits=ROOMY, workers=2,
                          inference=inference, backend=backend)
    assert [r.failure for r in sandboxed] == [None] * len(suite), [r.stderr_tail for r in sandboxed]
    assert any(r.score.success for r in sandboxed)
    trusted = _in_process(REFERENCE_AGENTS[name], suite, engine, grader, inference, monkeypatch)
    assert [r.score for r in sandboxed] == [r.score for r in trusted]
    for record in sandboxed:
        searches = [c for c in record.proxy_log if c.kind == "search"]
        assert [c.product_ids for c in searches] == _step_results(record)
        assert all(c.status == 200 for c in record.proxy_log)
        assert record.agent_hash == AgentFile.read(REFERENCE_AGENTS[name]).sha256
        assert record.started_at <= record.finished_at


def test_an_llm_agents_inference_calls_are_logged_with_their_completions(
        small_world: SampleWorld, engine: BM25SearchEngine, inference: InferenceConfig) -> None:
    (record,) = run_agent(REFERENCE_AGENTS["react_llm"], small_world.suite(1)[:1], engine, limits=ROOMY,
                          inference=inference)
    calls = [c for c in record.proxy_log if c.kind == "inference"]
    assert len(calls) == len(record.steps) and all(c.model == MODEL for c in calls)
    for call, step in zip(calls, record.steps, strict=True):
        # Each step is what the model wrote in the completion logged just before it ran.
        assert call.completion_text is not None
        assert call.completion_text.strip() == step["completion"]["content"]
        assert call.request_messages and call.completion_tokens and call.completion_tokens > 0


@pytest.mark.parametrize("backend", sandbox_backends())
def test_the_agent_sees_only_the_public_problem_and_its_sandbox_env(
        backend: BackendName, engine: BM25SearchEngine, tmp_path: Path) -> None:
    agent = tmp_path / "introspect.py"
    agent.write_text(
        "import os, sys\n"
        "def agent_main(problem):\n"
        "    try:\n"
        "        import shoppingbench.scoring\n"
        "        scoring = 'importable'\n"
        "    except ImportError:\n"
        "        scoring = 'hidden'\n"
        "    import shoppingbench.agent_sdk, src.agent.proxy_client, httpx, pydantic\n"
        "    return [{'problem': problem, 'env': dict(os.environ), 'uid': os.getuid(), 'scoring': scoring,\n"
        "             'cwd': os.getcwd(), 'argv_hidden': 'ARENA' not in ' '.join(sys.argv)}]\n")
    shown = problem("p-1", "a red kettle", target="secret-target")
    (record,) = run_agent(agent, [shown], engine, backend=backend)
    (step,) = record.steps
    assert step["problem"] == shown.public_view() and "secret-target" not in str(step)
    assert step["problem"]["id"] == public_id("p-1") != "p-1"
    assert step["scoring"] == "hidden" and step["cwd"] == "/tmp" and step["uid"] in SLOT_UIDS
    assert set(step["env"]) <= {"PATH", "HOME", "TMPDIR", "LANG", "PWD", "SANDBOX_PROXY_URL",
                                "SANDBOX_DEFAULT_MODEL", "SANDBOX_ALLOWED_MODELS", "SANDBOX_MODEL",
                                "PROBLEM_DATA"}
    assert step["env"]["SANDBOX_PROXY_URL"].startswith("http://127.0.0.1:")


def test_records_stream_out_as_each_attempt_finishes(engine: BM25SearchEngine, tmp_path: Path) -> None:
    agent = tmp_path / "slow.py"
    agent.write_text("import time\n"
                     "def agent_main(problem):\n"
                     "    time.sleep(5 if problem['query'] == 'slow' else 0)\n"
                     "    return []\n")
    sandbox = SandboxConfig(limits=TIGHT, uid_base=UID_BASE)
    stream = iter_attempts(AgentFile.read(agent), [problem("slow", "slow"), problem("fast", "fast")], engine,
                           fake_grader(engine), inference=InferenceConfig(), sandbox=sandbox, workers=2)
    first = next(stream)
    seen_at = time.time()
    assert first.problem_id == "fast" and seen_at < first.finished_at + 3
    assert [r.problem_id for r in stream] == ["slow"]


@pytest.mark.parametrize("backend", sandbox_backends())
@pytest.mark.parametrize(("source", "reason"), [
    ("def agent_main(problem:\n", "does not compile"),
    ("import no_such_module\n", "importing the agent file failed: ModuleNotFoundError"),
    ("x = 1\n", "defines no agent_main"),
])
def test_broken_agent_files_fail_every_problem_with_the_reason(
        backend: BackendName, engine: BM25SearchEngine, tmp_path: Path, source: str, reason: str) -> None:
    agent = tmp_path / "broken.py"
    agent.write_text(source)
    records = run_agent(agent, [problem("a", "a"), problem("b", "b")], engine, backend=backend)
    for record in records:
        assert record.failure is not None and record.failure.kind == "crash"
        assert reason in record.failure.reason


@pytest.mark.parametrize("backend", sandbox_backends())
def test_the_cpu_limit_holds_per_problem(backend: BackendName, engine: BM25SearchEngine,
                                         tmp_path: Path) -> None:
    agent = tmp_path / "burn.py"
    agent.write_text("def agent_main(problem):\n    while True:\n        pass\n")
    limits = TIGHT.model_copy(update={"timeout_s": 30.0, "cpu_s": 1})
    (record,) = run_agent(agent, [problem("burn", "burn")], engine, limits=limits, backend=backend)
    assert record.failure is not None and record.failure.kind == "timeout"
    assert "CPU time limit of 1 s" in record.failure.reason


def test_the_unsandboxed_mode_runs_the_same_code_path(small_world: SampleWorld, engine: BM25SearchEngine,
                                                      grader: Grader) -> None:
    suite = small_world.suite(1)
    agent = REFERENCE_AGENTS["scripted_baseline"]
    plain = run_agent(agent, suite, engine, grader, backend="none", limits=ROOMY)
    isolated = run_agent(agent, suite, engine, grader, limits=ROOMY)
    assert [r.score for r in plain] == [r.score for r in isolated]
    assert [len(r.proxy_log) for r in plain] == [len(r.proxy_log) for r in isolated]


def test_a_missing_sandbox_tool_is_reported_before_anything_runs() -> None:
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        NamespaceBackend(bwrap="/nonexistent/bwrap").check()


def test_the_host_environment_is_not_inherited(engine: BM25SearchEngine, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_INFERENCE_API_KEY", "sk-secret")
    agent = tmp_path / "env.py"
    agent.write_text("import os\ndef agent_main(problem):\n    return [dict(os.environ)]\n")
    (record,) = run_agent(agent, [problem("env", "env")], engine, backend="none")
    assert "sk-secret" not in record.model_dump_json()
    assert record.steps[0]["HOME"] != os.environ.get("HOME")


def test_concurrent_runs_get_disjoint_slot_uids(tmp_path: Path) -> None:
    with lease_uids(UID_BASE, 4, tmp_path) as first, lease_uids(UID_BASE, 4, tmp_path) as second, \
            lease_uids(UID_BASE, 2, tmp_path) as third:
        assert {first, second, third} == {UID_BASE, UID_BASE + 4, UID_BASE + 8}
    with lease_uids(UID_BASE, 4, tmp_path) as again:
        assert again == UID_BASE


@pytest.mark.parametrize("backend", sandbox_backends())
def test_problems_in_one_slot_share_no_files(backend: BackendName, engine: BM25SearchEngine,
                                             tmp_path: Path) -> None:
    agent = tmp_path / "remember.py"
    agent.write_text("import os\n"
                     "def agent_main(problem):\n"
                     # Only what the agent's uid made: a checkout under /tmp shows root-owned mount dirs.
                     "    seen = sorted(n for n in os.listdir('/tmp')\n"
                     "                  if os.lstat('/tmp/' + n).st_uid == os.getuid())\n"
                     "    os.makedirs('/tmp/notes/deep', exist_ok=True)\n"
                     "    with open('/tmp/notes/deep/' + problem['id'], 'w') as handle:\n"
                     "        handle.write('remember me')\n"
                     "    os.symlink('/tmp/notes', '/tmp/link')\n"
                     "    return [{'seen': seen}]\n")
    records = run_agent(agent, [problem(f"p{i}", "q") for i in range(3)], engine, workers=1, backend=backend)
    assert [r.steps for r in records] == [[{"seen": []}]] * 3


def test_host_packages_installed_under_tmp_stay_visible_and_tmp_is_still_wiped(
        engine: BM25SearchEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A checkout (and its venv) under /tmp, as CI clones have: the sandbox's private /tmp must not hide it.
    site = tmp_path / "site-packages"
    (site / "probe_pkg").mkdir(parents=True)
    (site / "probe_pkg" / "__init__.py").write_text("VALUE = 42\n")
    host_python = backends._host_python
    monkeypatch.setattr(backends, "_host_python",
                        lambda: (lambda i, p, s: (i, p, [*s, str(site)]))(*host_python()))
    agent = tmp_path / "probe.py"
    agent.write_text("import os, probe_pkg\n"
                     "def agent_main(problem):\n"
                     "    seen = os.path.exists('/tmp/marker')\n"
                     "    open('/tmp/marker', 'w').close()\n"
                     "    return [{'value': probe_pkg.VALUE, 'marker_seen': seen}]\n")
    records = run_agent(agent, [problem("p-1", "a"), problem("p-2", "b")], engine, workers=1)
    assert [r.failure for r in records] == [None, None], [r.stderr_tail for r in records]
    assert [r.steps for r in records] == [[{"value": 42, "marker_seen": False}]] * 2
