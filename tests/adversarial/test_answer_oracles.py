"""Nothing an agent is given lets it test a candidate answer: the problem it sees carries no hash of the
reward, and a race problem does not exist before its seed block (the suites' own tests cover that)."""

from __future__ import annotations

from shoppingbench.problems.models import Problem, content_id
from shoppingbench.sample_world import SampleWorld


def test_the_problem_an_agent_sees_cannot_confirm_a_guessed_answer(small_world: SampleWorld) -> None:
    problem = small_world.suite(1)[0]
    seen = problem.public_view()
    assert set(seen) == {"id", "category", "query"}
    # The attack: rebuild the reward from the query and a candidate id, hash it, compare with the id.
    guessed = content_id(problem.category, problem.query, problem.reward_json())  # even the true answer
    assert seen["id"] != guessed and seen["id"] != problem.id
    assert seen["id"] == problem.public_view()["id"]  # stable within the run: logs still name the problem
    copy = Problem.model_validate({**problem.model_dump(), "id": ""})
    assert copy.public_view()["id"] == seen["id"]
