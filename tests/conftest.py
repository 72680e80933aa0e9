"""Fixtures any test may use. Feature-specific fixtures belong in their own test modules."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoppingbench.sample_world import SampleWorld, ensure_sample_world

SAMPLES_DIR = Path(__file__).resolve().parent / "fixtures" / "samples"
"""Copies of ``shared/samples``: a few real lines of each ShoppingBench file format."""


@pytest.fixture(scope="session")
def shared_samples() -> Path:
    """A few lines of each real ShoppingBench file format (catalog, problems, reference suite)."""
    return SAMPLES_DIR


@pytest.fixture(scope="session")
def small_world(tmp_path_factory: pytest.TempPathFactory) -> SampleWorld:
    """A real 3,000-product sample world (catalog, index, 400 problems), built once per test session."""
    return ensure_sample_world(tmp_path_factory.mktemp("small-world"), products=3_000, seed=0, progress=False)
