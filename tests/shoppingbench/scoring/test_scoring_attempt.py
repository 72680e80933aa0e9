"""Whole attempts: reading the answer, pairing ids with targets, shop, failures and junk input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shoppingbench.catalog.models import Product
from shoppingbench.problems.loaders import load_problems
from shoppingbench.problems.models import Problem
from shoppingbench.scoring import ORIGINAL, PRODUCTION_STRICT, AttemptScore, extract_answer, score_attempt
from shoppingbench.scoring.answer import production_scorer_fails
from shoppingbench.scoring.attempt import UNREADABLE_STEPS
from tests.shoppingbench.scoring.test_scoring_support import (
    TERMINATE,
    FakeEmbedder,
    answered,
    lookup,
    product,
    product_problem,
    recommend,
    shop_problem,
    step,
    target,
)

COD = {"service": ["COD"]}


def two_targets() -> Problem:
    return shop_problem(target("t1", **COD), target("t2", **COD))


def cod(pid: str, shop: str = "s1") -> Product:
    return product(pid, shop=shop, service=["COD"])


def test_answer_is_split_stripped_and_deduplicated() -> None:
    assert extract_answer(answered(" a , b,a ,c ")) == ["a", "b", "c"]


def test_empty_entries_keep_their_position_but_trailing_ones_go() -> None:
    assert extract_answer(answered("a,,c,, ")) == ["a", "", "c"]
    assert extract_answer(answered(" , ,")) == []


def test_a_skipped_position_scores_zero_and_later_ids_keep_their_targets_in_the_original() -> None:
    problem = shop_problem(target("t1", **COD), target("t2", **COD), target("t3", **COD))
    catalog = lookup(cod("t1"), cod("t3"))
    score = score_attempt(problem, answered("t1,,t3"), catalog, FakeEmbedder(), ORIGINAL)
    assert [t.gt for t in score.targets] == [True, False, True]
    assert score.rule == pytest.approx(2 / 3) and not score.success
    assert catalog.asked == [["t1", "t3"]]  # type: ignore[attr-defined]


def test_last_recommend_call_counts() -> None:
    steps = [step(recommend("good")), step(recommend("bad"), ("find_product", {"q": "x"})), step(TERMINATE)]
    assert extract_answer(steps) == ["bad"]


def test_last_recommend_call_with_junk_ids_answers_nothing() -> None:
    steps = [step(recommend("good")), step(recommend({"not": "ids"}))]
    assert extract_answer(steps) == []


def test_list_and_integer_ids_are_tolerated_by_the_original_profile() -> None:
    assert extract_answer(answered(["a", " b", 7, None, ["nested"]])) == ["a", "b", "7"]
    assert extract_answer(answered(4410867766)) == ["4410867766"]


@pytest.mark.parametrize("ids", [["t"], 4410867766, None], ids=["json-list", "integer", "null"])
def test_production_answers_only_a_string_as_the_reference_production_scorer(ids: object) -> None:
    """``ProblemScorer._extract_recommended_product``: a ``product_ids`` that is not a str answers nothing."""
    assert extract_answer(answered(ids), production=True) == []
    problem = product_problem(target("t", **COD))
    strict = score_attempt(problem, answered(["t"]), lookup(cod("t")), FakeEmbedder(), PRODUCTION_STRICT)
    original = score_attempt(problem, answered(["t"]), lookup(cod("t")), FakeEmbedder(), ORIGINAL)
    assert (strict.success, strict.gt) == (False, 0) and (original.success, original.gt) == (True, 1)


def test_production_drops_empty_entries_so_later_ids_move_up() -> None:
    """``a,,b,c``: the production scorer skips the empty entry (``if pid and pid not in seen``), so b pairs
    with the second target; the original keeps the position, so b pairs with the third."""
    assert extract_answer(answered("t1,,t2, ,t1"), production=True) == ["t1", "t2"]
    assert extract_answer(answered("t1,,t2, ,t1")) == ["t1", "", "t2"]
    problem, products = two_targets(), lookup(cod("t1"), cod("t2"))
    strict = score_attempt(problem, answered("t1,,t2"), products, FakeEmbedder(), PRODUCTION_STRICT)
    original = score_attempt(problem, answered("t1,,t2"), products, FakeEmbedder(), ORIGINAL)
    assert strict.answer == ["t1", "t2"] and strict.success and strict.gt == 1
    assert original.answer == ["t1", "", "t2"] and not original.success and original.gt == 0.5


def with_calls(*calls: object) -> dict[str, Any]:
    """A well-formed step whose ``tool_call`` list holds exactly ``calls``, junk included."""
    built = step(TERMINATE)
    built["completion"]["message"]["tool_call"] = list(calls)
    return built


RECOMMEND_U: dict[str, Any] = {"name": "recommend_product", "parameters": {"product_ids": "u"}}


def scored_both_ways(steps: list[Any]) -> tuple[AttemptScore, AttemptScore]:
    problem = product_problem(target("t", **COD))
    catalog = lookup(cod("t"), product("u"))  # u misses the COD the target asks
    return (score_attempt(problem, steps, catalog, FakeEmbedder(), PRODUCTION_STRICT),
            score_attempt(problem, steps, catalog, FakeEmbedder(), ORIGINAL))


@pytest.mark.parametrize("malformed", [{"name": "recommend_product", "parameters": "u"},
                                       {"name": "recommend_product", "parameters": None},
                                       {"name": "recommend_product"}], ids=["string", "null", "missing"])
def test_production_ignores_a_malformed_recommend_after_a_correct_one(malformed: dict[str, Any]) -> None:
    """``ProblemScorer._extract_recommended_product``: ``command["parameters"].get`` raises on it and the
    handler skips the step, so the earlier answer stands; the original overwrites it with nothing."""
    steps = [step(recommend("t")), with_calls(malformed), step(TERMINATE)]
    assert extract_answer(steps, production=True) == ["t"] and extract_answer(steps) == []
    strict, original = scored_both_ways(steps)
    assert strict.success and not original.success


@pytest.mark.parametrize("nameless", [{"parameters": {"q": "kettle"}}, "find_product", None])
def test_production_drops_the_rest_of_a_step_after_a_nameless_call(nameless: object) -> None:
    """``command["name"]`` raises on a call without a name (or not an object): the step's later
    recommend never counts in the reference, so the earlier answer stands."""
    steps = [step(recommend("t")), with_calls(nameless, RECOMMEND_U), step(TERMINATE)]
    assert extract_answer(steps, production=True) == ["t"] and extract_answer(steps) == ["u"]
    strict, original = scored_both_ways(steps)
    assert strict.success and not original.success


def test_calls_before_an_unreadable_one_still_count() -> None:
    steps = [with_calls(RECOMMEND_U, {"no": "name"}), step(TERMINATE)]
    assert extract_answer(steps, production=True) == ["u"]


UNREADABLE_STEPSS: list[object] = [
    "done",
    None,
    ["step"],
    {"extra_info": {}},
    {"completion": "text"},
    {"completion": {"content": "no message"}},
    {"completion": {"message": 7}},
    {"completion": {"message": "see tool_call"}},
    {"completion": {"message": {"tool_call": {"name": "terminate"}}}},
    {"completion": {"message": {"tool_call": [{"name": "terminate"}, {"parameters": {}}]}}},
    {"completion": {"message": {"tool_call": ["terminate"]}}},
]


@pytest.mark.parametrize("last", UNREADABLE_STEPSS)
def test_production_fails_the_attempt_when_the_reference_cannot_read_the_last_step(last: object) -> None:
    """The reference's ``length_reward`` indexes ``steps[-1]["completion"]["message"]`` and each final
    tool call's ``name``; it raises on these, and its validator counts the problem failed."""
    steps = [step(recommend("t")), last]
    assert production_scorer_fails(steps)
    strict, original = scored_both_ways(steps)
    assert strict.error == UNREADABLE_STEPS and not strict.success and strict.answer == []
    assert (strict.rule, strict.gt, strict.format, strict.length) == (0, 0, 0, 0)
    assert original.success and original.error is None


@pytest.mark.parametrize("last", [{"completion": {"message": None}},
                                  {"completion": {"message": "plain text"}},
                                  {"completion": {"message": {"think": "done"}}},
                                  {"completion": {"message": {"tool_call": []}}}, step(TERMINATE)])
def test_a_last_step_the_reference_reads_is_scored(last: object) -> None:
    steps = [step(recommend("t")), last]
    assert not production_scorer_fails(steps) and not production_scorer_fails([])
    strict, _ = scored_both_ways(steps)
    assert strict.success and strict.error is None


def test_product_problem_scores_the_first_id_only() -> None:
    problem = product_problem(target("t", **COD))
    catalog = lookup(product("wrong"), cod("right"))
    score = score_attempt(problem, answered("wrong,right"), catalog, FakeEmbedder())
    assert score.rule == 0 and not score.success
    assert catalog.asked == [["wrong"]]  # type: ignore[attr-defined]


def test_ids_pair_with_targets_by_position() -> None:
    score = score_attempt(two_targets(), answered("a,b"), lookup(cod("a"), product("b")), FakeEmbedder())
    assert [t.rule for t in score.targets] == [1, 0]
    assert score.rule == 0.5


def test_missing_ids_score_zero() -> None:
    score = score_attempt(two_targets(), answered("a"), lookup(cod("a"), cod("b")), FakeEmbedder())
    assert score.targets[1].product_id is None and not score.targets[1].found
    assert score.rule == 0.5 and score.found == 0.5 and score.shop is False


def test_extra_ids_are_ignored() -> None:
    catalog = lookup(cod("a"), cod("b"), cod("c"))
    score = score_attempt(two_targets(), answered("a,b,c"), catalog, FakeEmbedder())
    assert score.success and score.answer == ["a", "b", "c"]
    assert catalog.asked == [["a", "b"]]  # type: ignore[attr-defined]


def test_duplicate_ids_collapse_before_pairing() -> None:
    # "a,a,b" is ["a", "b"]: b pairs with the second target.
    score = score_attempt(two_targets(), answered("a,a,b"), lookup(cod("a"), cod("b")), FakeEmbedder())
    assert [t.product_id for t in score.targets] == ["a", "b"] and score.success


def test_ids_not_in_catalog_score_zero() -> None:
    score = score_attempt(two_targets(), answered("ghost,b"), lookup(cod("b")), FakeEmbedder())
    assert not score.targets[0].found and score.targets[0].rule == 0
    assert score.rule == 0.5 and score.found == 0.5


def test_shop_problem_needs_one_shop() -> None:
    split = score_attempt(
        two_targets(), answered("a,b"), lookup(cod("a", "s1"), cod("b", "s2")), FakeEmbedder()
    )
    assert split.rule == 1 and split.shop is False and not split.success
    same = score_attempt(
        two_targets(), answered("a,b"), lookup(cod("a", "s1"), cod("b", "s1")), FakeEmbedder()
    )
    assert same.shop is True and same.success


def test_shop_needs_every_target_hit() -> None:
    score = score_attempt(two_targets(), answered("a,b"), lookup(cod("a"), product("b")), FakeEmbedder())
    assert score.shop is False


def test_field_rates_count_targets_without_such_constraints_as_zero() -> None:
    # The reference arena divides by every target; one that states no such constraint adds 0.
    problem = shop_problem(target("t1", service=["COD"]), target("t2", price=[{"less than": [None, 50]}]))
    score = score_attempt(
        problem, answered("a,b"), lookup(cod("a"), product("b", price=80.0)), FakeEmbedder()
    )
    assert score.service_rate == 0.5 and score.price_rate == 0 and score.title_rate is None


def test_one_met_price_among_three_targets_rates_a_third() -> None:
    # The example: 0.333 in the reference, 1.0 when averaged over the targets with checks only.
    problem = shop_problem(target("t1", price=[{"less than": [None, 50]}]), target("t2"), target("t3"))
    score = score_attempt(problem, answered("a,b,c"), lookup(product("a", price=20.0), product("b"),
                                                             product("c")), FakeEmbedder())
    assert score.price_rate == pytest.approx(1 / 3) and score.service_rate is None


def test_a_missing_recommendation_still_counts_in_the_denominator() -> None:
    problem = shop_problem(target("t1", service=["COD"]), target("t2", service=["COD"]))
    score = score_attempt(problem, answered("a"), lookup(cod("a")), FakeEmbedder())
    assert score.service_rate == 0.5


JUNK_STEPS: list[object] = [
    None,
    "steps",
    42,
    {"completion": {}},
    [None, "x", 3, []],
    [{"completion": "text"}],
    [{"completion": {"message": "text"}}],
    [{"completion": {"message": {"tool_call": "recommend_product"}}}],
    [{"completion": {"message": {"tool_call": [None, "x", {"name": 5}, {"name": "recommend_product"}]}}}],
    [{"completion": {"message": {"tool_call": [{"name": "recommend_product", "parameters": "a,b"}]}}}],
    [
        {
            "completion": {
                "message": {"tool_call": [{"name": "recommend_product", "parameters": {"product_ids": 3.5}}]}
            },
            "extra_info": "now",
        }
    ],
    [{"completion": {"content": 17, "message": None}, "extra_info": {"timestamp": float("nan")}}],
]


@pytest.mark.parametrize("steps", JUNK_STEPS)
def test_junk_steps_never_crash(steps: object) -> None:
    score = score_attempt(two_targets(), steps, lookup(cod("a")), FakeEmbedder())
    assert score.answer == [] and score.rule == 0 and score.format == 0 and score.length == 0
    assert not score.success


def test_junk_steps_next_to_good_ones_only_cost_their_share() -> None:
    steps = [step(recommend("a,b")), None, "noise", step(TERMINATE)]
    score = score_attempt(two_targets(), steps, lookup(cod("a"), cod("b")), FakeEmbedder())
    assert score.success and score.format == 0.5 and score.length == 0.25


def test_production_fails_the_attempt_when_the_first_step_is_not_an_object() -> None:
    """The reference's scoring pool reads ``dialogue[0].get("extra_info")`` before it scores: a first step
    that is not an object raises there, and the problem counts failed."""
    steps = [None, step(recommend("a,b")), step(TERMINATE)]
    assert production_scorer_fails(steps)
    products = lookup(cod("a"), cod("b"))
    strict = score_attempt(two_targets(), steps, products, FakeEmbedder(), PRODUCTION_STRICT)
    original = score_attempt(two_targets(), steps, products, FakeEmbedder(), ORIGINAL)
    assert strict.error == UNREADABLE_STEPS and not strict.success
    assert original.success and original.format == pytest.approx(2 / 3)


def test_failure_scores_everything_zero() -> None:
    score = AttemptScore.failure(two_targets(), "timeout after 300 s")
    assert score.error == "timeout after 300 s"
    assert (score.success, score.gt, score.rule, score.format, score.length, score.found) == (
        False,
        0,
        0,
        0,
        0,
        0,
    )
    assert score.shop is False and score.service_rate == 0 and len(score.targets) == 2


def test_real_sample_scores_ground_truth_and_a_near_miss(shared_samples: Path) -> None:
    problem = load_problems(shared_samples / "shoppingbench_product_sample.jsonl")[2]
    gt = problem.targets[0]
    twin = Product(
        product_id=gt.product_id,
        shop_id="1",
        title=gt.title[0],
        price=30.0,
        service=["official"],
        attributes={"color_family": ["silver"]},
    )
    cheap = twin.model_copy(update={"product_id": "other", "price": 20.0})
    catalog = lookup(twin, cheap)
    exact = score_attempt(problem, answered(gt.product_id), catalog, FakeEmbedder())
    assert exact.success and exact.gt == 1
    near = score_attempt(problem, answered("other"), catalog, FakeEmbedder())
    # Same title and colour and service; only "priced above 26" fails: 3 of 4 checks.
    assert near.rule == 0.75 and not near.success and near.price_rate == 0
