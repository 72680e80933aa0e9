"""Builders shared by the sandbox, proxy and miner CLI tests (not a test module itself)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from shoppingbench.grading.grader import Grader
from shoppingbench.problems.models import Problem, RewardTarget
from shoppingbench.proxy.inference import InferenceConfig
from shoppingbench.records import AttemptRecord
from shoppingbench.sandbox.backends import BackendName
from shoppingbench.sandbox.limits import MiB, SandboxLimits
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig, iter_attempts
from shoppingbench.scoring import ORIGINAL
from shoppingbench.search.base import SearchEngine
from tests.shoppingbench.scoring.test_scoring_support import FakeEmbedder

HOSTILE_AGENTS = Path(__file__).resolve().parent / "hostile_agents"

UID_BASE = 100_000 + (os.getpid() % 10_000) * 16
"""Slot uids of this test session: apart from any other session's, so process checks see only ours."""

TIGHT = SandboxLimits(timeout_s=6, memory_bytes=1024 * MiB, processes=64, output_bytes=256 * 1024,
                      result_bytes=2 * MiB, tmp_bytes=16 * MiB, startup_timeout_s=30, kill_grace_s=3)
"""Small limits so hostile agents hit them fast."""


def problem(problem_id: str, query: str, target: str = "no-such-product") -> Problem:
    return Problem(id=problem_id, category="product", query=query,
                   targets=[RewardTarget(product_id=target, title=["anything"])])


def fake_grader(engine: SearchEngine) -> Grader:
    """Grades against the real catalog with a stand-in embedder: these tests are about the sandbox."""
    return Grader(engine.get_products, FakeEmbedder(), ORIGINAL)


def run_agent(agent: Path, problems: Sequence[Problem], engine: SearchEngine, grader: Grader | None = None, *,
              limits: SandboxLimits = TIGHT, workers: int = 1, backend: BackendName = "namespace",
              inference: InferenceConfig | None = None, uid_base: int = UID_BASE) -> list[AttemptRecord]:
    """Run ``agent`` over ``problems`` in the sandbox; the records in suite order."""
    sandbox = SandboxConfig(backend=backend, limits=limits, uid_base=uid_base)
    records = list(iter_attempts(AgentFile.read(agent), problems, engine, grader or fake_grader(engine),
                                 inference=inference or InferenceConfig(), sandbox=sandbox, workers=workers))
    by_id = {r.problem_id: r for r in records}
    assert len(by_id) == len(problems), "every problem gets exactly one record"
    return [by_id[p.id] for p in problems]


def leftover_processes(uids: range, wait_s: float = 3.0) -> list[int]:
    """Processes of ``uids`` still there after ``wait_s`` (the kernel reaps a killed namespace quickly
    but not instantly)."""
    deadline = time.monotonic() + wait_s
    while (found := processes_of_uids(uids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def processes_of_uids(uids: range) -> list[int]:
    """Host pids of processes running as any of ``uids`` (what a leaked sandbox process would be)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Uid:") and int(line.split()[1]) in uids:
                found.append(int(entry))
    return found


SLOT_UIDS = range(UID_BASE, UID_BASE + 16)

SANDBOX_IMAGE = "shopping-arena-sandbox:latest"


@functools.cache
def docker_unavailable() -> str | None:
    """Why the docker backend cannot run here (no CLI, no engine, no sandbox image), or None if it can."""
    if shutil.which("docker") is None:
        return "no docker CLI on PATH: install an engine and run scripts/docker-check.sh"
    try:
        info = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True,
                              check=False, timeout=30)
        image = subprocess.run(["docker", "image", "inspect", SANDBOX_IMAGE], capture_output=True,
                               check=False, timeout=30)
    except subprocess.TimeoutExpired:
        return "the docker engine did not answer within 30 s"
    if info.returncode != 0:
        return "no docker engine is running (scripts/docker-check.sh installs and starts one)"
    if image.returncode != 0:
        return f"the image {SANDBOX_IMAGE} is not built (scripts/docker-check.sh builds it)"
    return None


def sandbox_backends() -> list[Any]:
    """Both isolating backends as test parameters; the docker one marked, and skipped where it cannot run."""
    reason = docker_unavailable()
    docker_marks = [pytest.mark.docker, pytest.mark.skipif(reason is not None, reason=reason or "")]
    return [pytest.param("namespace", id="namespace"),
            pytest.param("docker", id="docker", marks=docker_marks)]
