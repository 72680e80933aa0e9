"""The in-process evaluator: crashes are recorded failures, scoring errors abort, steps recorded as scored."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from shoppingbench.catalog.models import Product
from shoppingbench.evaluation import evaluate
from shoppingbench.problems.models import Problem, public_id
from shoppingbench.scoring import ORIGINAL
from tests.shoppingbench.scoring.test_scoring_support import (
    FakeEmbedder,
    answered,
    lookup,
    product,
    product_problem,
    target,
)


def _suite(n: int) -> list[Problem]:
    return [product_problem(target(f"p{i}", service=["COD"]), id=f"problem-{i}") for i in range(n)]


def test_a_crash_is_that_problems_failure_under_the_runs_profile() -> None:
    def agent(problem: dict[str, Any]) -> list[dict[str, Any]]:
        if problem["id"] == public_id("problem-1"):
            raise RuntimeError("boom")
        return answered("p0")

    result = evaluate(agent, _suite(2), lookup(product("p0", service=["COD"])), FakeEmbedder(), ORIGINAL,
                      workers=2, progress=False)
    crashed = result.attempts[1].score
    assert crashed.error == "agent raised RuntimeError: boom" and crashed.profile == ORIGINAL.name
    assert result.attempts[0].score.success and result.suite.success_rate == 0.5


def test_steps_are_recorded_exactly_as_scored() -> None:
    returned = tuple(answered("p0"))

    def agent(problem: dict[str, Any]) -> Any:
        return returned

    result = evaluate(agent, _suite(1), lookup(product("p0", service=["COD"])), FakeEmbedder(), ORIGINAL,
                      workers=1, progress=False)
    (attempt,) = result.attempts
    assert attempt.score.format == 1.0 and attempt.score.success
    assert attempt.steps == list(returned)


def test_a_catalog_outage_aborts_the_run_instead_of_grading_it() -> None:
    calls = 0
    lock = threading.Lock()

    def agent(problem: dict[str, Any]) -> list[dict[str, Any]]:
        nonlocal calls
        with lock:
            calls += 1
        return answered("p0")

    def broken_catalog(ids: list[str]) -> dict[str, Product]:
        raise ConnectionError("catalog unreachable")

    with pytest.raises(ConnectionError):
        evaluate(agent, _suite(30), broken_catalog, FakeEmbedder(), ORIGINAL, workers=1, progress=False)
    assert calls == 1  # the one worker starts no problem after the first failed to grade
