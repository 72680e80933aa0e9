"""The problems of a dump split, rebuilt with their rewards, under the leak-cluster guard.

Rejection sampling, teacher trajectories and GRPO roll out on the problems of the dumps' ``train`` split;
evaluation uses the ``held_out`` split. A problem comes back from a row's ``problem_id``, ``category``,
``query`` and ``reward_json``; rows registered without a reward are skipped and counted. For ``train``,
a problem whose cluster is held out anywhere (the explicit list, or a ``held_out`` row of any dump read)
is never returned, so no stage can roll out on what evaluation measures.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import structlog

from shoppingbench.problems.models import Problem
from trajectories.dumps.reader import split_files

log = structlog.get_logger(__name__)

_COLUMNS = ["problem_id", "category", "query", "leak_cluster", "reward_json"]


@dataclass(frozen=True)
class DumpProblems:
    """Distinct problems of one split, each with its leak cluster, and why other rows gave none."""

    problems: list[Problem]
    clusters: dict[str, str]
    """problem id -> leak cluster"""
    skipped: Counter[str]


def held_out_clusters_of(dumps: Sequence[Path]) -> frozenset[str]:
    """Every cluster that appears in a ``held_out`` row of any of ``dumps``."""
    clusters: set[str] = set()
    for dump in dumps:
        for path in split_files(dump, "held_out"):
            table = pq.read_table(path, columns=["leak_cluster"])
            clusters.update(c for c in table.column("leak_cluster").to_pylist() if c)
    return frozenset(clusters)


def dump_problems(dumps: Sequence[Path], split: str = "train", *,
                  held_out_clusters: frozenset[str] = frozenset()) -> DumpProblems:
    """The distinct problems of ``split`` across ``dumps`` (first occurrence wins), guarded as above."""
    guard = held_out_clusters | held_out_clusters_of(dumps) if split != "held_out" else frozenset()
    problems: dict[str, Problem] = {}
    clusters: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    files = [path for dump in dumps for path in split_files(dump, split)]
    if not files:
        raise FileNotFoundError(f"no data/{split}-*.parquet in {', '.join(map(str, dumps))}: "
                                f"the dumps hold no {split} split")
    for path in files:
        for row in pq.read_table(path, columns=_COLUMNS).to_pylist():
            problem_id = row["problem_id"]
            if problem_id in problems:
                continue
            if not row["leak_cluster"] or row["leak_cluster"] in guard:
                skipped["held_out_cluster" if row["leak_cluster"] else "no_cluster"] += 1
                continue
            if not row["reward_json"]:
                skipped["without_reward"] += 1
                continue
            reward = json.loads(row["reward_json"])
            problems[problem_id] = Problem.from_shoppingbench(
                {**reward, "id": problem_id, "query": row["query"], "category": row["category"]})
            clusters[problem_id] = row["leak_cluster"]
    log.info("training.dump_problems", split=split, problems=len(problems), skipped=dict(skipped),
             dumps=len(dumps))
    return DumpProblems(problems=list(problems.values()), clusters=clusters, skipped=skipped)
