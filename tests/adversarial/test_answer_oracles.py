"""Nothing an agent is given lets it test a candidate answer: the problem it sees carries no hash of the
reward, and a race problem does not exist before its seed block (the suites' own tests cover that)."""

from __future__ import annotations

import orjson

from shoppingbench.problems.models import Problem, content_id
from shoppingbench.sample_world import SampleWorld


def test_the_problem_an_agent_sees_cannot_confirm_a_guessed_answer(small_world: SampleWorld) -> None:
    problem = small_world.suite(1)[0]
    seen = problem.public_view()
    assert set(seen) == {"problem_id", "id", "category", "query", "difficulty", "title"}
    # The attack: rebuild the reward from the query and a candidate id, hash it, compare with an id.
    guessed = content_id(problem.category, problem.query, problem.reward_json())  # even the true answer
    for key in ("id", "problem_id"):
        assert seen[key] != guessed and seen[key] != problem.id
    assert seen["problem_id"] == seen["id"]
    # Nothing else it gets names a target or carries the reward (PROBLEM_DATA is this same dict as JSON).
    shown = orjson.dumps(seen).decode()
    for target in problem.targets:
        assert target.product_id not in shown and all(title not in shown for title in target.title)
    assert seen["id"] == problem.public_view()["id"]  # stable within the run: logs still name the problem
    copy = Problem.model_validate({**problem.model_dump(), "id": ""})
    assert copy.public_view()["id"] == seen["id"]
