"""Leak clusters catch the same problem in disguise, and nothing else (SPEC 5)."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.suites import FactsIndex, LeakConfig, cluster_problems, request_facts
from benchmarks.leakclusters import disguise, pair_scores, synthetic_bank
from shoppingbench.problems.models import Problem
from shoppingbench.sample_world import SampleWorld


@pytest.fixture(scope="module")
def bank(small_world: SampleWorld) -> list[Problem]:
    return small_world.suite(10_000)  # every problem of the 3,000-product world


def copy_of(problem: Problem, seed: int, *, new_ids: bool = True) -> Problem:
    """A disguised copy: reworded, reordered, and (``new_ids``) aimed at other listings."""
    targets = [t.model_copy(update={"product_id": f"{t.product_id}-copy{seed}"}) if new_ids else t
               for t in problem.targets]
    return Problem(category=problem.category, query=disguise(problem.query, random.Random(seed)),
                   targets=targets, voucher=problem.voucher)


@given(data=st.data())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_disguised_copy_joins_its_original_and_nothing_else(bank: list[Problem],
                                                              data: st.DataObject) -> None:
    original = data.draw(st.sampled_from(bank))
    copy = copy_of(original, data.draw(st.integers(0, 10_000)))
    before = cluster_problems(bank)
    after = cluster_problems([*bank, copy])
    assert after.same_cluster(original.id, copy.id)
    members = set(after.members[after.cluster_of[copy.id]])
    assert members == set(before.members[before.cluster_of[original.id]]) | {copy.id}


def test_reordered_sub_requests_are_the_same_problem(bank: list[Problem]) -> None:
    shop = next(p for p in bank if p.category == "shop" and len(p.targets) >= 3)
    reordered = Problem(category="shop", query=disguise(shop.query, random.Random(1)),
                        targets=list(reversed(shop.targets)))
    assert request_facts(reordered) == request_facts(shop)
    assert cluster_problems([shop, reordered]).same_cluster(shop.id, reordered.id)


def test_shared_targets_link_whatever_the_words(bank: list[Problem]) -> None:
    one, other = bank[0], next(p for p in bank if p.category == "product" and p.id != bank[0].id)
    same_target = Problem(category="product", query="Totally different words about garden furniture.",
                          targets=[one.targets[0]])
    clusters = cluster_problems([one, other, same_target])
    assert clusters.same_cluster(one.id, same_target.id) and not clusters.same_cluster(one.id, other.id)
    assert clusters.target_links == 1 and clusters.text_links == 0


def test_min_shared_targets(bank: list[Problem]) -> None:
    shop = next(p for p in bank if p.category == "shop" and len(p.targets) >= 2)
    partial = Problem(category="shop", query="Unrelated request text for a shop.",
                      targets=[shop.targets[0],
                               shop.targets[0].model_copy(update={"product_id": "elsewhere"})])
    assert cluster_problems([shop, partial]).same_cluster(shop.id, partial.id)
    assert not cluster_problems([shop, partial], LeakConfig(min_shared_targets=2)).same_cluster(
        shop.id, partial.id)


def test_clusters_do_not_depend_on_input_order(bank: list[Problem]) -> None:
    extended = [*bank[:150], *(copy_of(p, i) for i, p in enumerate(bank[:40]))]
    shuffled = list(extended)
    random.Random(3).shuffle(shuffled)
    first, second = cluster_problems(extended), cluster_problems(shuffled)
    assert dict(first.cluster_of) == dict(second.cluster_of)
    assert all(key == min(members) for key, members in first.members.items())


def test_thresholds_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="lsh_threshold"):
        LeakConfig(lsh_threshold=0.9, same_reward_jaccard=0.8)
    with pytest.raises(ValueError, match="unique"):
        cluster_problems([synthetic_bank(2, duplicate_share=0.0).problems[0]] * 2)


def test_the_benchmark_bank_is_clustered_well() -> None:
    bank = synthetic_bank(3_000, duplicate_share=0.1, seed=7)
    clusters = cluster_problems(bank.problems)
    recall, precision, true_pairs, _ = pair_scores(dict(clusters.cluster_of), bank.group_of)
    assert true_pairs > 300 and recall >= 0.99 and precision >= 0.99


def test_the_facts_index_finds_a_disguised_copy_until_its_original_leaves(bank: list[Problem]) -> None:
    index = FactsIndex()
    original, other = bank[0], next(p for p in bank if p.category == "shop")
    index.add([original, other])
    copy = copy_of(original, 3)
    assert index.linked(copy) == original.id and index.linked(original) == original.id
    assert cluster_problems([original, copy]).same_cluster(original.id, copy.id)  # the same rule
    unrelated = next(p for p in bank if p.category == "voucher")
    assert index.linked(unrelated) is None
    index.add([original])  # held by two suites now
    index.remove([original.id])
    assert index.linked(copy) == original.id
    index.remove([original.id])
    assert index.linked(copy) is None and len(index) == 1
