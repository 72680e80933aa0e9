"""Problems of a dump split rebuilt with their rewards, and the leak-cluster guard on the train side."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoppingbench.sample_world import SampleWorld
from tests.trajectories.training.conftest import WORLD_HELD_OUT_CLUSTER
from trajectories.doubles.sample_dumps import write_world_dump
from trajectories.training.data.problems import dump_problems, held_out_clusters_of


def test_train_problems_come_back_with_their_rewards_and_never_from_a_held_out_cluster(
        world_dump: Path, small_world: SampleWorld) -> None:
    expected = {p.id: p for p in small_world.suite(2)}
    train = dump_problems([world_dump], "train")
    held_out = dump_problems([world_dump], "held_out")
    assert held_out_clusters_of([world_dump]) == {WORLD_HELD_OUT_CLUSTER}
    assert {held_out.clusters[p.id] for p in held_out.problems} == {WORLD_HELD_OUT_CLUSTER}
    assert WORLD_HELD_OUT_CLUSTER not in train.clusters.values()
    assert len(train.problems) + len(held_out.problems) == len(expected) == 6
    for problem in [*train.problems, *held_out.problems]:
        assert problem == expected[problem.id]  # the reward, voucher and category survive the dump


def test_an_explicit_or_other_dumps_held_out_cluster_removes_train_problems(
        world_dump: Path, small_world: SampleWorld, tmp_path: Path) -> None:
    train = dump_problems([world_dump], "train")
    first = train.problems[0]
    explicit = dump_problems([world_dump], "train", held_out_clusters=frozenset({train.clusters[first.id]}))
    assert first.id not in {p.id for p in explicit.problems}
    assert explicit.skipped["held_out_cluster"] == 1
    # Another day's dump holds the same problems out under its own split rule: the union guards
    other = write_world_dump(tmp_path / "other", small_world.suite(2),
                             held_out_clusters=frozenset({train.clusters[first.id]}))
    both = dump_problems([world_dump, other], "train")
    assert first.id not in {p.id for p in both.problems}


def test_a_directory_that_is_not_a_dump_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="dump export"):
        dump_problems([tmp_path])
    (tmp_path / "data").mkdir()
    with pytest.raises(FileNotFoundError, match="no train split"):
        dump_problems([tmp_path])
