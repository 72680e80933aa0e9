"""Tiny daily dumps (synthetic attempts through the real store and exporter) and a saved tiny Qwen3."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoppingbench.sample_world import SampleWorld
from trajectories.training.sample import write_sample_dump, write_world_dump
from trajectories.training.tiny import save_tiny_model

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
