"""Fixtures any test may use. Feature-specific fixtures belong in their own test modules."""

from __future__ import annotations

from pathlib import Path

import pytest

SAMPLES_DIR = Path(__file__).resolve().parent / "fixtures" / "samples"
"""Copies of ``shared/samples``: a few real lines of each ShoppingBench file format."""


@pytest.fixture(scope="session")
def shared_samples() -> Path:
    """A few lines of each real ShoppingBench file format (catalog, problems, reference suite)."""
    return SAMPLES_DIR
