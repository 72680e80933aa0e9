"""The bank, the exposure ledger and suite rotation over leak clusters (SPEC 5)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.suites import (
    HeldOutSet,
    MemoryExposureLedger,
    ProblemBank,
    Provenance,
    RotationConfig,
    SqlExposureLedger,
    SuiteRotation,
    cluster_problems,
    exposures,
)
from benchmarks.leakclusters import disguise
from shoppingbench.problems.models import Category, Problem
from shoppingbench.sample_world import SampleWorld

AT = datetime(2026, 11, 22, 12, tzinfo=UTC)
PER_CATEGORY: dict[Category, int] = {"product": 6, "shop": 3, "voucher": 3}


@pytest.fixture(scope="module")
def bank(small_world: SampleWorld) -> list[Problem]:
    return small_world.suite(10_000)


@pytest.fixture(scope="module")
def rotation(bank: list[Problem]) -> SuiteRotation:
    return SuiteRotation(bank, cluster_problems(bank), RotationConfig(held_out_share=0.2))


def copy_of(problem: Problem, seed: int) -> Problem:
    return Problem(category=problem.category, query=disguise(problem.query, random.Random(seed)),
                   targets=[t.model_copy(update={"product_id": f"{t.product_id}-c{seed}"})
                            for t in problem.targets], voucher=problem.voucher)


def test_bank_ids_revisions_versions_and_files(bank: list[Problem], tmp_path: Path) -> None:
    store = ProblemBank()
    world = Provenance(source="sample-world:3000:seed0", generator="shoppingbench.world", added_at=AT)
    assert store.add(bank[:100], world) == [p.id for p in bank[:100]]
    assert store.add(bank[50:120], world) == [p.id for p in bank[100:120]]
    assert store.add(bank[:10], world) == [] and store.revision == 2 and len(store) == 120
    assert store.entry(bank[110].id).revision == 2 and store.entry(bank[0].id).provenance == world
    other = ProblemBank()
    other.add(reversed(bank[:120]), world)
    assert other.version.split("-")[1] == store.version.split("-")[1]  # same problems, same digest
    store.save(tmp_path / "bank.jsonl")
    loaded = ProblemBank.load(tmp_path / "bank.jsonl")
    assert loaded.version == store.version and loaded.problems() == store.problems()


def test_race_suites_are_deterministic_fresh_and_cluster_disjoint(rotation: SuiteRotation) -> None:
    def ids(seed: str) -> list[str]:
        return [p.id for p in rotation.draw_race_suite(seed, PER_CATEGORY, exposed=[])]

    first = rotation.draw_race_suite("0xabc", PER_CATEGORY, exposed=[])
    assert [p.id for p in first] == ids("0xabc") != ids("0xabd")
    counts = {c: sum(p.category == c for p in first) for c in PER_CATEGORY}
    assert counts == PER_CATEGORY
    keys = [rotation.clusters.cluster_of[p.id] for p in first]
    assert len(set(keys)) == len(keys) and all(rotation.split_of(p.id) == "train" for p in first)
    # Once raced, those clusters are burnt: the next race shares none of them.
    second = rotation.draw_race_suite("0xabc", PER_CATEGORY, exposed=[p.id for p in first])
    assert not {rotation.clusters.cluster_of[p.id] for p in second} & set(keys)


def test_qualifying_suites_stay_out_of_held_out_territory(rotation: SuiteRotation) -> None:
    suite = rotation.draw_qualifying_suite("q-2026-11", {"product": 40, "shop": 20, "voucher": 20})
    assert len(suite) == 80 and all(rotation.split_of(p.id) == "train" for p in suite)
    assert [p.id for p in suite] == [p.id for p in rotation.draw_qualifying_suite("q-2026-11",
                                                                                  {"product": 40, "shop": 20,
                                                                                   "voucher": 20})]


@given(share=st.floats(0.0, 0.9))
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_train_and_held_out_never_share_a_cluster(bank: list[Problem], share: float) -> None:
    clusters = cluster_problems(bank)
    rotation = SuiteRotation(bank, clusters, RotationConfig(held_out_share=share))
    for members in clusters.members.values():
        assert len({rotation.split_of(pid) for pid in members}) == 1


def test_a_disguised_copy_of_a_held_out_problem_is_caught(bank: list[Problem],
                                                          rotation: SuiteRotation) -> None:
    held = rotation.draw_held_out("heldout-a", 1, "validator-secret",
                                  {"product": 5, "shop": 2, "voucher": 2}, exposed=[], bank_version="r1",
                                  at=AT)
    assert len(held.problem_ids) == 9
    assert all(rotation.split_of(pid) == "held_out" for pid in held.problem_ids)
    assert held.seed_digest != "validator-secret" and "validator-secret" not in held.model_dump_json()
    victim = next(p for p in bank if p.id == held.problem_ids[0])
    leaked = copy_of(victim, 42)  # the same problem reworded, e.g. published in someone's dump
    grown = [*bank, leaked]
    regrown = SuiteRotation(grown, cluster_problems(grown), rotation.config)
    assert regrown.clusters.same_cluster(victim.id, leaked.id)
    assert regrown.compromised(held, exposed=[leaked.id]) == [victim.id]
    assert regrown.compromised(held, exposed=[]) == []
    # ... and a fresh version never draws from the burnt cluster again.
    again = regrown.draw_held_out("heldout-a", 2, "validator-secret",
                                  {"product": 50, "shop": 20, "voucher": 20}, exposed=[leaked.id],
                                  bank_version="r2", at=AT)
    assert victim.id not in again.problem_ids


def test_an_unrelated_exposure_burns_nothing_held_out(bank: list[Problem], rotation: SuiteRotation) -> None:
    held = rotation.draw_held_out("heldout-b", 1, "s", {"product": 5}, exposed=[], bank_version="r1", at=AT)
    public = [p.id for p in rotation.draw_race_suite("0x1", PER_CATEGORY, exposed=[])]
    assert rotation.compromised(held, exposed=public) == []


def test_held_out_sets_round_trip(tmp_path: Path, rotation: SuiteRotation) -> None:
    held = rotation.draw_held_out("heldout-c", 3, "s", {"shop": 2}, exposed=[], bank_version="r1", at=AT)
    assert HeldOutSet.load(held.save(tmp_path)) == held and (tmp_path / "heldout-c-v3.json").exists()




@pytest.mark.parametrize("backend", ["memory", "sqlite", "postgres"])
def test_the_ledger_remembers_every_exposure(backend: str, tmp_path: Path,
                                             request: pytest.FixtureRequest) -> None:
    if backend == "memory":
        ledger: MemoryExposureLedger | SqlExposureLedger = MemoryExposureLedger()
    else:
        url = (f"sqlite:///{tmp_path / 'ledger.sqlite3'}" if backend == "sqlite"
               else request.getfixturevalue("scratch_postgres_url"))
        ledger = SqlExposureLedger.open(url)
    ledger.record(exposures(["p1", "p2"], "qualifying", "q-v1", AT))
    ledger.record(exposures(["p2", "p3"], "race", "2026-11-22", AT))
    assert ledger.exposed_ids() == {"p1", "p2", "p3"}
    if isinstance(ledger, SqlExposureLedger):
        assert SqlExposureLedger(ledger.engine).exposed_ids() == {"p1", "p2", "p3"}
