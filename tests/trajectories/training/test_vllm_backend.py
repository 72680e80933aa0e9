"""The vLLM serving path without a GPU: backend selection, and held-out evaluation through ``vllm serve``
played by its documented test double (``tests/fake_vllm.py``: vLLM's command line and OpenAI-compatible
protocol over the project's transformers server)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shoppingbench.sample_world import SampleWorld
from shoppingbench.settings import HarnessSettings
from tests.sandbox_support import UID_BASE
from trajectories.training.evaluation.held_out import evaluate_checkpoint
from trajectories.training.serving import vllm_server
from trajectories.training.serving.vllm_server import QWEN3_PARSER_ARGS, choose_backend, vllm_executable
from trajectories.training.stages.sampling_config import ServingSettings
from trajectories.training.stages.stage import for_installed_transformers

REPO = Path(__file__).parents[3]


def _never() -> str | None:
    return None


def test_auto_is_vllm_only_where_cuda_and_vllm_both_are() -> None:
    def found() -> str:
        return "/usr/bin/vllm"

    assert choose_backend("auto", cuda=lambda: True, executable=found) == "vllm"
    assert choose_backend("auto", cuda=lambda: False, executable=found) == "hf"
    assert choose_backend("auto", cuda=lambda: True, executable=_never) == "hf"
    assert choose_backend("vllm", cuda=lambda: False, executable=_never) == "vllm"  # explicit wins
    assert choose_backend("hf", cuda=lambda: True, executable=found) == "hf"
    assert ServingSettings().backend == "auto"
    assert choose_backend("auto") == "hf"  # this host: no CUDA


def test_the_vllm_executable_is_found_next_to_the_interpreter(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`pip install .[gpu]` in a virtualenv puts `vllm` beside its python, which need not be on PATH."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "vllm").write_text("#!/bin/sh\n", encoding="utf-8")
    (bin_dir / "vllm").chmod(0o755)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    assert vllm_executable() == str(bin_dir / "vllm")
    (bin_dir / "vllm").chmod(0o644)
    assert vllm_executable() is None


def _fake(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tests.fake_vllm", *argv], capture_output=True, text=True,
                          cwd=REPO, timeout=60, check=False)


def test_the_double_refuses_what_vllm_refuses() -> None:
    assert _fake("--version").stdout.strip() == "0.31.0"
    unknown = _fake("serve", "model", "--no-such-flag")
    assert unknown.returncode == 2 and "unrecognized arguments: --no-such-flag" in unknown.stderr
    parser = _fake("serve", "model", "--tool-call-parser", "mistral")
    assert parser.returncode == 2 and "invalid choice" in parser.stderr
    missing = _fake("serve", "model", "--enable-auto-tool-choice")
    assert missing.returncode == 1 and "requires --tool-call-parser" in missing.stderr


def test_held_out_evaluation_on_a_gpu_host_serves_the_checkpoint_with_vllm(
        fake_vllm: Path, tiny_model_dir: Path, small_world: SampleWorld, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``serving: auto`` on a host that reports CUDA (the probe is the test's) and has ``vllm``: the
    checkpoint is served by ``vllm serve`` with Qwen3's parsers, the agent's calls reach it through the
    proxy, and the server is stopped afterwards."""
    monkeypatch.setattr(vllm_server, "cuda_available", lambda: True)
    settings = HarnessSettings(home=tmp_path / "home", sandbox_uid_base=UID_BASE, sandbox_timeout_s=90,
                               inference_attempt_calls=1)
    run = evaluate_checkpoint(str(tiny_model_dir), small_world.suite(1)[:1], catalog=small_world.catalog_dir,
                              out=tmp_path / "eval", k=1, settings=settings, max_tokens=8, workers=1,
                              progress=False)
    argv = json.loads(fake_vllm.read_text(encoding="utf-8"))
    assert argv[:2] == ["serve", str(tiny_model_dir)] and set(QWEN3_PARSER_ARGS) <= set(argv)
    assert argv[argv.index("--served-model-name") + 1] == tiny_model_dir.resolve().name
    record = json.loads((tmp_path / "eval" / "attempts.jsonl").read_text(encoding="utf-8").splitlines()[0])
    inference = [c for c in record["proxy_log"] if c["kind"] == "inference"]
    assert inference[0]["status"] == 200 and inference[0]["model"] == tiny_model_dir.resolve().name
    assert inference[0]["params"].get("temperature") == 1.0  # forced by the proxy
    assert "fake vllm 0.31.0 serving" in (tmp_path / "eval" / "vllm.log").read_text(encoding="utf-8")
    assert run.report.k == 1


def test_activation_checkpointing_is_renamed_for_a_transformers_that_predates_it() -> None:
    """The gpu extra's vLLM 0.31 caps transformers below 5.18, whose TrainingArguments has only
    ``gradient_checkpointing``; newer ones have ``activation_checkpointing``."""
    old = frozenset({"output_dir", "gradient_checkpointing"})
    new = old | {"activation_checkpointing"}
    asked = {"output_dir": "x", "activation_checkpointing": True}
    assert for_installed_transformers(asked, old) == {"output_dir": "x", "gradient_checkpointing": True}
    assert for_installed_transformers(asked, new) == asked
    assert asked == {"output_dir": "x", "activation_checkpointing": True}  # not changed in place
    assert "activation_checkpointing" in for_installed_transformers(asked)  # the installed transformers
