"""Fixtures the battery's validator-level families share: a serving runner and a generator over the tests'
sample world, one each per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from arena.validator.runs import RunAgent
from shoppingbench.generator import ProblemGenerator
from shoppingbench.sample_world import SampleWorld
from tests.arena.validator.test_validator import serving_runner


@pytest.fixture(scope="module")
def runner(small_world: SampleWorld) -> Iterator[RunAgent]:
    with serving_runner(small_world.catalog_dir) as run_agent:
        yield run_agent


@pytest.fixture(scope="module")
def generator(small_world: SampleWorld) -> Iterator[ProblemGenerator]:
    with ProblemGenerator.open(small_world.catalog_dir) as opened:
        yield opened
