"""A tiny daily dump (synthetic attempts through the real store and exporter) and a saved tiny Qwen3."""

from __future__ import annotations

from pathlib import Path

import pytest

from trajectories.training.sample import write_sample_dump
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
