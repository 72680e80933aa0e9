"""Tiny daily dumps (synthetic attempts through the real store and exporter) and a saved tiny Qwen3."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from shoppingbench.sample_world import SampleWorld
from trajectories.doubles.sample_dumps import write_sample_dump, write_world_dump
from trajectories.training.dev.tiny import save_tiny_model

HELD_OUT_CLUSTER = "cluster-00001"
"""Held out by the dump's split rule (no hash-based share, so it is the only one)."""


@pytest.fixture(scope="session")
def tiny_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 problems in 4 clusters; a react (agentic) and a sub-task agent attempt every problem."""
    return write_sample_dump(tmp_path_factory.mktemp("dump") / "dump",
                             held_out_clusters=frozenset({HELD_OUT_CLUSTER}))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


WORLD_HELD_OUT_CLUSTER = "cluster-00000"


@pytest.fixture(scope="session")
def world_dump(small_world: SampleWorld, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six real ``small_world`` problems (two per category) registered with their rewards, one problem per
    leak cluster, the first cluster held out; one synthetic ReAct attempt each."""
    return write_world_dump(tmp_path_factory.mktemp("world-dump") / "dump", small_world.suite(2),
                            held_out_clusters=frozenset({WORLD_HELD_OUT_CLUSTER}))


@pytest.fixture
def fake_vllm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``vllm`` on PATH is the test double ``tests/fake_vllm.py``; returns the file of its recorded argv."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    executable = bin_dir / "vllm"
    executable.write_text(f"#!/bin/sh\nexec {sys.executable} -m tests.fake_vllm \"$@\"\n", encoding="utf-8")
    executable.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[3]))
    argv = tmp_path / "argv.json"
    monkeypatch.setenv("FAKE_VLLM_ARGV", str(argv))
    return argv
