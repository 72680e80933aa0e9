"""The hallucination counter on hand-built dialogues and verified proxy logs."""

from __future__ import annotations

from typing import Any

from shoppingbench.dialogue import ToolCall, create_dialogue_step
from shoppingbench.records import ProxyCall
from trajectories.training.evaluation.hallucinations import count_hallucinations


def _search(seq: int, ids: list[str], status: int = 200, path: str = "/search/find_product") -> ProxyCall:
    return ProxyCall(seq=seq, kind="search", method="GET", path=path, status=status, started_at=float(seq),
                     duration_ms=1.0, product_ids=ids)


def _step(index: int, *calls: tuple[str, dict[str, Any], Any]) -> dict[str, Any]:
    tool_calls = [ToolCall(tool_call_id=f"c{index}-{n}", name=name, parameters=parameters, result=result)
                  for n, (name, parameters, result) in enumerate(calls)]
    return create_dialogue_step(index, "a query", think="thinking", tool_calls=tool_calls)


def test_ids_seen_in_an_earlier_verified_search_are_not_hallucinated() -> None:
    log = [_search(0, ["p1", "p2"]), _search(1, ["p3"], path="/search/view_product_information")]
    steps = [
        _step(0, ("find_product", {"q": "toy"}, [{"product_id": "p1"}])),
        _step(1, ("view_product_information", {"product_ids": "p1,p2"}, [])),
        _step(2, ("recommend_product", {"product_ids": "p1"}, "ok"),
              ("terminate", {"status": "success"}, "ok")),
    ]
    counted = count_hallucinations(steps, log)
    assert counted.model_dump() == {"steps": 3, "steps_hallucinated": 0, "ids_checked": 3,
                                    "ids_hallucinated": 0, "per_step": [0, 0, 0]}


def test_unseen_ids_count_per_step_and_claimed_results_are_not_trusted() -> None:
    # The step claims its search returned p9; the verified log says p1. A view (p3) reveals nothing.
    log = [_search(0, ["p1"]), _search(1, ["p3"], path="/search/view_product_information")]
    steps = [
        _step(0, ("view_product_information", {"product_ids": ["p1"]}, [])),        # before any search
        _step(1, ("find_product", {"q": "toy"}, [{"product_id": "p9"}])),
        _step(2, ("view_product_information", {"product_ids": ["p3", "p1"]}, [])),  # p3 unseen
        _step(3, ("recommend_product", {"product_ids": "p9, p1"}, "ok")),            # p9 unseen
    ]
    counted = count_hallucinations(steps, log)
    assert counted.per_step == [1, 0, 1, 1]
    assert (counted.steps, counted.steps_hallucinated) == (4, 3)
    assert (counted.ids_checked, counted.ids_hallucinated) == (5, 3)


def test_failed_searches_and_searches_missing_from_the_log_reveal_nothing() -> None:
    log = [_search(0, ["p1"], status=422)]
    steps = [_step(0, ("find_product", {"q": "a"}, []), ("find_product", {"q": "b"}, [])),
             _step(1, ("recommend_product", {"product_ids": "p1"}, "ok"))]
    assert count_hallucinations(steps, log).per_step == [0, 1]


def test_hostile_steps_count_as_steps_naming_nothing() -> None:
    nested: Any = []
    for _ in range(5000):
        nested = [nested]
    steps: list[Any] = ["junk", {"completion": 7}, nested,
                        _step(3, ("recommend_product", {"product_ids": {"not": "ids"}}, "ok"))]
    counted = count_hallucinations(steps, [])
    assert counted.steps == 4 and counted.ids_checked == 0 and counted.ids_hallucinated == 0
