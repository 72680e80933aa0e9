"""Fixtures tests in several folders use; a folder's own fixtures live in its conftest.py, a test's own in
its module."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from shoppingbench.catalog_dir import open_catalog
from shoppingbench.sample_world import SampleWorld, ensure_sample_world
from shoppingbench.search.engine import BM25SearchEngine

# Property tests draw the same examples on every run (a CI result must not depend on the luck of the
# draw); `HYPOTHESIS_PROFILE=explore pytest ...` searches new ones when hunting for bugs.
settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

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


@pytest.fixture(scope="session")
def small_engine(small_world: SampleWorld) -> Iterator[BM25SearchEngine]:
    """The search engine over ``small_world``'s catalog, opened once per test session."""
    engine = open_catalog(small_world.catalog_dir)
    yield engine
    engine.close()
