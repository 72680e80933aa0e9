"""Stages 2 (rejection sampling) and 3 (teacher trajectories) end to end on CPU: rollouts of real
``small_world`` problems through the namespace sandbox and the verified proxy, graded by the real scorer,
resumed after a crash, then SFT of the tiny Qwen3 on the successful attempts.

The teacher is the scripted shopping policy behind the OpenAI-compatible test double (a hosted teacher
cannot exist here); vLLM is replaced by ``tests/fake_vllm.py``, a test double of its command line that
serves the same checkpoint with the project's transformers server.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from peft import AutoPeftModelForCausalLM

from shoppingbench.doubles.llm_server import create_app as create_stub_app
from shoppingbench.doubles.scripted_policies import shopping_policy
from shoppingbench.grading.grader import Grader
from shoppingbench.proxy.budgets import InferenceBudgets
from shoppingbench.proxy.inference import InferenceConfig
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.sandbox.limits import SandboxLimits
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.settings import HarnessSettings
from shoppingbench.tools.serving import running_server
from tests.sandbox_support import UID_BASE
from tests.trajectories.training.conftest import WORLD_HELD_OUT_CLUSTER
from trajectories.training.data.problems import dump_problems
from trajectories.training.data.weighting import RewardWeighting, repeats, sample_reward
from trajectories.training.evaluation.evaluate import DEFAULT_AGENT
from trajectories.training.serving.vllm_server import VllmError, running_vllm
from trajectories.training.stages.rollouts import (
    ATTEMPTS_FILE,
    RolloutMeta,
    collect_rollouts,
    read_attempts,
    rollout_conversations,
    rollout_meta,
)
from trajectories.training.stages.sampling import run_sampling_stage
from trajectories.training.stages.sampling_config import SamplingStageConfig
from trajectories.training.stages.stage import NothingToTrain, StageResult

CONFIGS = Path(__file__).parents[3] / "trajectories" / "training" / "configs"
TEACHER = "teacher"
TEACHER_KEY = "sk-teacher-test"
KEY_VARIABLE = "ARENA_TEST_TEACHER_KEY"


@pytest.fixture(scope="module")
def teacher_url() -> Iterator[str]:
    with running_server(create_stub_app(shopping_policy, api_key=TEACHER_KEY, models=[TEACHER])) as url:
        yield f"{url}/v1"


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> HarnessSettings:
    # Random tiny models talk junk until the proxy's budget stops them: two completions per attempt
    return HarnessSettings(home=tmp_path_factory.mktemp("home"), sandbox_uid_base=UID_BASE,
                           sandbox_timeout_s=90, inference_attempt_calls=2)


@pytest.fixture(scope="module")
def teacher_settings(settings: HarnessSettings) -> HarnessSettings:
    """The scripted teacher needs a dozen completions or so per problem."""
    return settings.with_changes(inference_attempt_calls=40)


def _config(name: str, **rollouts: object) -> SamplingStageConfig:
    config = SamplingStageConfig.load(CONFIGS / name)
    return config.model_copy(update={"rollouts": config.rollouts.model_copy(update=rollouts)})


def _teacher_config(model: Path, world: SampleWorld, url: str, **rollouts: object) -> SamplingStageConfig:
    """The tiny teacher stage rolling out the scripted teacher at ``url`` on ``world``."""
    config = _config("teacher_tiny.yaml", catalog=world.catalog_dir, **rollouts)
    serving = config.rollouts.serving.model_copy(update={"base_url": url, "model_name": TEACHER,
                                                         "api_key_env": KEY_VARIABLE})
    return config.model_copy(update={"model": str(model), "rollouts": config.rollouts.model_copy(
        update={"serving": serving})})


@pytest.fixture(scope="module")
def teacher_run(tiny_model_dir: Path, world_dump: Path, small_world: SampleWorld, teacher_url: str,
                teacher_settings: HarnessSettings, tmp_path_factory: pytest.TempPathFactory,
                ) -> tuple[Path, StageResult]:
    config = _teacher_config(tiny_model_dir, small_world, teacher_url)
    out = tmp_path_factory.mktemp("teacher") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_VARIABLE, TEACHER_KEY)
        result = run_sampling_stage(config, [world_dump], out, settings=teacher_settings, progress=False)
    return out, result


def test_the_teacher_stage_rolls_out_train_problems_and_fine_tunes_on_the_successes(
        teacher_run: tuple[Path, StageResult], world_dump: Path) -> None:
    out, result = teacher_run
    records = read_attempts(out / "rollouts" / ATTEMPTS_FILE)
    train = dump_problems([world_dump], "train")
    assert {r.problem_id for r in records} == {p.id for p in train.problems[:4]}
    assert WORLD_HELD_OUT_CLUSTER not in {train.clusters[r.problem_id] for r in records}
    for record in records:
        inference = [c for c in record.proxy_log if c.kind == "inference"]
        assert inference and all(c.model == TEACHER and c.status == 200 for c in inference)
        assert all(c.params["temperature"] == 0.0 for c in inference)  # forced by the proxy
    summary = json.loads((out / "rollouts" / "summary.json").read_text(encoding="utf-8"))
    successes = sum(r.score.success for r in records)
    assert summary["attempts"] == len(records) == 4 and summary["successes"] == successes
    assert 0 < summary["kept"] <= successes and result.extra["rollouts"]["kept"] == summary["kept"]
    assert result.train_examples == summary["kept"] and result.global_step == 2
    assert result.extra["weighting"] == {"mode": "uniform", "kept": summary["kept"],
                                         "examples": summary["kept"]}
    losses = [entry["loss"] for entry in result.log_history if "loss" in entry]
    assert len(losses) == 2 and all(math.isfinite(loss) for loss in losses)
    assert (result.final_dir / "adapter_config.json").exists()
    assert AutoPeftModelForCausalLM.from_pretrained(result.final_dir) is not None


def test_reward_weighted_sampling_repeats_each_kept_attempt_by_its_reward(
        teacher_run: tuple[Path, StageResult], tiny_model_dir: Path, world_dump: Path,
        small_world: SampleWorld, teacher_url: str, teacher_settings: HarnessSettings, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The teacher run's finished rollouts (copied: nothing is rolled out again) fine-tuned on as the
    study's reward-weighted rejection sampling does, each kept attempt repeated by its reward."""
    out = tmp_path / "run"
    shutil.copytree(teacher_run[0] / "rollouts", out / "rollouts")
    weighting = RewardWeighting(mode="reward", max_repeats=3)
    config = _teacher_config(tiny_model_dir, small_world, teacher_url, weighting=weighting)
    monkeypatch.setenv(KEY_VARIABLE, TEACHER_KEY)
    result = run_sampling_stage(config, [world_dump], out, settings=teacher_settings, progress=False)
    records = read_attempts(out / "rollouts" / ATTEMPTS_FILE)
    assert len(records) == 4  # the copied rollouts were complete
    found = dump_problems([world_dump], "train")
    selection = rollout_conversations(records, {p.id: p for p in found.problems}, found.clusters,
                                      keep_labels=config.rollouts.keep_labels,
                                      max_tool_chars=config.rollouts.max_tool_chars)
    successes = {sample_reward(r.score) for r in records if r.score.success}
    assert len(selection.rewards) == len(selection.conversations) and set(selection.rewards) <= successes
    expected = sum(repeats(selection.rewards, weighting))
    assert expected >= 3 and expected > len(selection.conversations)  # the best one three times
    assert result.extra["weighting"] == {"mode": "reward", "kept": len(selection.conversations),
                                         "examples": expected}
    assert result.train_examples == expected and result.global_step == 2


def test_a_teacher_endpoint_without_its_key_is_refused_before_any_rollout(
        world_dump: Path, small_world: SampleWorld, teacher_url: str, settings: HarnessSettings,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    config = _config("teacher_tiny.yaml", catalog=small_world.catalog_dir)
    config = config.model_copy(update={"rollouts": config.rollouts.model_copy(update={
        "serving": config.rollouts.serving.model_copy(update={"base_url": teacher_url,
                                                             "api_key_env": KEY_VARIABLE})})})
    with pytest.raises(ValueError, match=KEY_VARIABLE):
        run_sampling_stage(config, [world_dump], tmp_path / "run", settings=settings, progress=False)
    assert not (tmp_path / "run" / "rollouts" / ATTEMPTS_FILE).exists()


def test_the_teacher_stage_must_roll_out_an_endpoint() -> None:
    config = SamplingStageConfig.load(CONFIGS / "teacher_tiny.yaml")
    with pytest.raises(ValueError, match="endpoint"):
        SamplingStageConfig.model_validate({**config.model_dump(),
                                            "rollouts": {"serving": {"backend": "hf"}}})


def test_rollouts_resume_after_a_crash_without_repeating_or_losing_an_attempt(
        world_dump: Path, small_engine: BM25SearchEngine, teacher_url: str, settings: HarnessSettings,
        tmp_path: Path) -> None:
    problems = dump_problems([world_dump], "train").problems[:2]
    agent = AgentFile.read(DEFAULT_AGENT)
    meta = rollout_meta(TEACHER, agent, problems, 2, 0.0)
    inference = InferenceConfig(base_url=teacher_url, api_key=TEACHER_KEY, models=[TEACHER],
                                budgets=InferenceBudgets(attempt_calls=40))
    grader = Grader.from_settings(small_engine.get_products, settings)
    sandbox = SandboxConfig(limits=SandboxLimits(timeout_s=90, startup_timeout_s=60), uid_base=UID_BASE)

    def roll(used: RolloutMeta) -> list[AttemptRecord]:
        return collect_rollouts(agent, problems, small_engine, grader, inference=inference, sandbox=sandbox,
                                meta=used, directory=tmp_path, workers=2, progress=False)

    first = roll(meta)
    keys = sorted((r.run_id, r.problem_id) for r in first)
    assert len(keys) == len(set(keys)) == 4
    attempts = tmp_path / ATTEMPTS_FILE
    lines = attempts.read_bytes().splitlines(keepends=True)
    attempts.write_bytes(b"".join(lines[:2]) + lines[2][:50])  # killed while writing the third record
    again = roll(meta)
    assert sorted((r.run_id, r.problem_id) for r in again) == keys
    assert len(attempts.read_bytes().splitlines()) == 4  # the torn line is gone, nothing doubled
    other = rollout_meta(TEACHER, agent, problems, 2, 1.0)
    with pytest.raises(ValueError, match="no-resume"):
        roll(other)


def test_rejection_sampling_of_a_model_that_never_succeeds_stops_with_a_clear_reason(
        tiny_model_dir: Path, world_dump: Path, small_world: SampleWorld, settings: HarnessSettings,
        tmp_path: Path) -> None:
    config = _config("rejection_tiny.yaml", catalog=small_world.catalog_dir)
    config = config.model_copy(update={"model": str(tiny_model_dir)})
    with pytest.raises(NothingToTrain, match="nothing to fine-tune on"):
        run_sampling_stage(config, [world_dump], tmp_path / "run", settings=settings, progress=False)
    records = read_attempts(tmp_path / "run" / "rollouts" / ATTEMPTS_FILE)
    assert len(records) == 2
    for record in records:
        served = [c for c in record.proxy_log if c.kind == "inference" and c.status == 200]
        assert served and all(c.model == tiny_model_dir.name and c.params["temperature"] == 1.0
                              for c in served)
    summary = json.loads((tmp_path / "run" / "rollouts" / "summary.json").read_text(encoding="utf-8"))
    assert summary["attempts"] == 2 and summary["kept"] == 0


def test_rejection_sampling_on_vllm_merges_the_adapter_and_serves_it_with_qwen3_parsers(
        teacher_run: tuple[Path, StageResult], world_dump: Path, small_world: SampleWorld,
        settings: HarnessSettings, fake_vllm: Path, tmp_path: Path) -> None:
    _, teacher = teacher_run  # its OUT/final is a LoRA adapter: what stage 2 starts from in a pipeline
    config = _config("rejection_tiny.yaml", catalog=small_world.catalog_dir)
    serving = config.rollouts.serving.model_copy(update={
        "backend": "vllm", "vllm_args": ["--max-model-len", "4096"], "startup_timeout_s": 120})
    config = config.model_copy(update={"model": str(teacher.final_dir),
                                       "rollouts": config.rollouts.model_copy(update={"serving": serving})})
    out = tmp_path / "run"
    with pytest.raises(NothingToTrain):
        run_sampling_stage(config, [world_dump], out, settings=settings, progress=False)
    assert (out / "merged" / "config.json").exists() and not (out / "merged" / "adapter_config.json").exists()
    argv = json.loads(fake_vllm.read_text(encoding="utf-8"))
    assert argv[:2] == ["serve", str(out / "merged")]
    assert argv[argv.index("--served-model-name") + 1] == "final"
    for flag in ("--enable-auto-tool-choice", "hermes", "qwen3", "--max-model-len"):
        assert flag in argv
    port = int(argv[argv.index("--port") + 1])
    with pytest.raises(httpx.TransportError):  # stopped when the rollouts ended
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
    records = read_attempts(out / "rollouts" / ATTEMPTS_FILE)
    assert len(records) == 2 and all(
        any(c.kind == "inference" and c.status == 200 and c.model == "final" for c in r.proxy_log)
        for r in records)


def test_a_vllm_that_fails_to_start_is_reported_with_its_log(tiny_model_dir: Path, fake_vllm: Path,
                                                             tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_VLLM_FAIL", "1")
    with pytest.raises(VllmError, match="unsupported architecture"), \
            running_vllm(tiny_model_dir, served_name="tiny", log_path=tmp_path / "vllm.log"):
        pass
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(VllmError, match="not on PATH"), \
            running_vllm(tiny_model_dir, served_name="tiny", log_path=tmp_path / "vllm.log"):
        pass
