"""Where the exposure ledger places a problem: its leak cluster and that cluster's side (SPEC 5, 6).

A side is decided once, when a cluster first enters the ledger, and never changes, so a cluster held
out on any day is held out on every day:

- a new problem linked to no problem of the ledger starts a cluster (keyed by its smallest problem id,
  as :func:`arena.suites.clusters.cluster_problems` keys them) on the side the caller names: a held-out
  suite's problems are held out, a public problem's side comes from the split rule's hash of its key;
- a new problem linked to clusters of one side only joins the smallest of them: a cluster once held out
  stays held out, a cluster once on the train side never becomes held out;
- a new problem linked to both sides (or to a contested cluster) can be placed on neither without
  putting a disguised copy of a held-out problem next to training data: it is ``contested``, and the
  dumps put its attempts in their ``unclustered`` split.

Placed problems keep their cluster for good: clusters that a later problem links are not merged, only
joined by it, so what a dump already said about a problem stays true.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from arena.suites.clusters import FactsIndex, LeakConfig, cluster_problems
from shoppingbench.problems.models import Problem
from trajectories.dumps.splits import ProblemSplit, Split

Side = Literal["train", "held_out", "contested"]
SPLIT_OF_SIDE: dict[Side, Split] = {"train": "train", "held_out": "held_out", "contested": "unclustered"}


@dataclass(frozen=True)
class Placement:
    cluster: str
    side: Side

    def split(self) -> ProblemSplit:
        return ProblemSplit(cluster=self.cluster, split=SPLIT_OF_SIDE[self.side])


class ClusterBook:
    """Every placed problem's cluster, the side of every cluster, and the indexes that link a new problem
    to them (shared targets, and wording through :class:`FactsIndex`)."""

    def __init__(self, config: LeakConfig) -> None:
        self.config = config
        self.placements: dict[str, Placement] = {}
        self._wording = FactsIndex(config)
        self._by_target: dict[str, list[str]] = defaultdict(list)

    def load(self, placed: Iterable[tuple[Problem, Placement]]) -> None:
        """Take problems placed before (the ledger's rows) into the indexes as they are."""
        loaded = []
        for problem, placement in placed:
            self._index(problem, placement)
            loaded.append(problem)
        self._wording.add(loaded)

    def place(self, problems: Sequence[Problem], new_side: Callable[[str], Side]) -> dict[str, Placement]:
        """Place the problems not placed yet; ``new_side(key)`` is the side of a cluster they start.
        Returns the new placements."""
        fresh = list({p.id: p for p in problems if p.id not in self.placements}.values())
        by_id = {p.id: p for p in fresh}
        placed: dict[str, Placement] = {}
        for key, members in cluster_problems(fresh, self.config).members.items():
            group = [by_id[pid] for pid in members]
            placement = self._decide(key, self._linked_clusters(group), new_side)
            for problem in group:
                self._index(problem, placement)
                placed[problem.id] = placement
            self._wording.add(group)
        return placed

    def _decide(self, key: str, linked: dict[str, Side], new_side: Callable[[str], Side]) -> Placement:
        if not linked:
            return Placement(key, new_side(key))
        sides = set(linked.values())
        if len(sides) == 1:
            (side,) = sides
            return Placement(min(linked), side)
        contested = [cluster for cluster, side in linked.items() if side == "contested"]
        return Placement(min(contested, default=key), "contested")

    def _linked_clusters(self, group: Sequence[Problem]) -> dict[str, Side]:
        """The clusters of placed problems that share targets or wording with a problem of ``group``."""
        linked: set[str] = set()
        for problem in group:
            shared = Counter(pid for product in {t.product_id for t in problem.targets}
                             for pid in self._by_target.get(product, ()))
            linked.update(pid for pid, count in shared.items() if count >= self.config.min_shared_targets)
            linked.update(self._wording.links(problem))
        return {self.placements[pid].cluster: self.placements[pid].side for pid in linked}

    def _index(self, problem: Problem, placement: Placement) -> None:
        self.placements[problem.id] = placement
        for product in {t.product_id for t in problem.targets}:
            self._by_target[product].append(problem.id)
