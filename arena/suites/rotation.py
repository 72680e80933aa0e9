"""Suite rotation over leak clusters: qualifying (public), race (hidden), held-out (never exposed).

Every cluster lies in one of two territories, decided from public data only so every validator
agrees: a cluster is *held-out territory* when any of its problems falls in the held-out lane (a hash
of the problem id below ``held_out_share``); the rest is *race territory*. Then:

- qualifying suites are drawn from race territory (they are public: their clusters get burnt);
- race suites are drawn from race territory clusters that were never exposed, at most one problem
  per cluster, from a seed nobody knows before the race (e.g. the race block's hash): every honest
  validator with the same bank and ledger draws the same problems;
- held-out sets are drawn from unexposed held-out territory with a validator-private seed;
- the training split of a dump is race territory, the held-out split held-out territory, so the two
  never share a cluster.
A merge can pull a held-out problem into a cluster that was exposed; :meth:`SuiteRotation.compromised`
finds such problems so a new held-out version can replace them.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.race.clock import UtcDatetime
from arena.suites.clusters import LeakClusters
from shoppingbench.files import write_file_atomically
from shoppingbench.problems.models import CATEGORIES, Category, Problem

Split = Literal["train", "held_out"]
_LANE_SPACE: Final = 2**64


class RotationConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    held_out_share: float = Field(default=0.05, ge=0, lt=1, description="Problems whose lane is held-out")


class HeldOutSet(BaseModel):
    """A small, versioned, never-exposed evaluation set."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    version: int = Field(ge=1)
    bank_version: str
    problem_ids: tuple[str, ...]
    seed_digest: str = Field(description="sha256 of the private seed: proves the draw without revealing it")
    created_at: UtcDatetime

    def save(self, directory: Path) -> Path:
        path = directory / f"{self.name}-v{self.version}.json"
        write_file_atomically(path, self.model_dump_json(indent=2).encode())
        return path

    @classmethod
    def load(cls, path: Path) -> HeldOutSet:
        return cls.model_validate_json(path.read_bytes())


def in_held_out_lane(problem_id: str, share: float) -> bool:
    digest = hashlib.sha256(b"held-out-lane\0" + problem_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") < share * _LANE_SPACE


def _rng(purpose: str, seed: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(f"{purpose}\0{seed}".encode()).digest(), "big"))


class SuiteRotation:
    """Territories and draws over one bank's problems and clusters."""

    def __init__(self, problems: Sequence[Problem], clusters: LeakClusters,
                 config: RotationConfig | None = None) -> None:
        self.config = config or RotationConfig()
        self.problems = {p.id: p for p in problems}
        missing = set(self.problems) - set(clusters.cluster_of)
        if missing:
            raise ValueError(f"{len(missing)} problems have no cluster: cluster the whole bank first")
        self.clusters = clusters
        self.held_out_clusters = frozenset(
            clusters.cluster_of[pid] for pid in self.problems
            if in_held_out_lane(pid, self.config.held_out_share))

    def split_of(self, problem_id: str) -> Split:
        return "held_out" if self.clusters.cluster_of[problem_id] in self.held_out_clusters else "train"

    def burnt(self, exposed: Iterable[str]) -> frozenset[str]:
        """Clusters any exposed problem belongs to (exposed ids outside the bank are ignored)."""
        return frozenset(self.clusters.cluster_of[pid] for pid in exposed if pid in self.clusters.cluster_of)

    def _draw(self, keys: Iterable[str], per_category: Mapping[Category, int],
              rng: random.Random) -> list[Problem]:
        """Up to ``per_category`` problems of each category, at most one per cluster."""
        order = sorted(keys)
        rng.shuffle(order)
        used: set[str] = set()
        suite: list[Problem] = []
        for category in CATEGORIES:
            wanted = per_category.get(category, 0)
            taken = 0
            for key in order:
                if taken == wanted:
                    break
                if key in used:
                    continue
                members = [pid for pid in self.clusters.members[key]
                           if pid in self.problems and self.problems[pid].category == category]
                if members:
                    used.add(key)
                    suite.append(self.problems[members[rng.randrange(len(members))]])
                    taken += 1
        return suite

    def _race_territory(self) -> set[str]:
        return {self.clusters.cluster_of[pid] for pid in self.problems} - self.held_out_clusters

    def draw_race_suite(self, seed: str, per_category: Mapping[Category, int],
                        exposed: Iterable[str]) -> list[Problem]:
        """The hidden suite of a race: unexposed race-territory clusters, drawn from ``seed``."""
        fresh = self._race_territory() - self.burnt(exposed)
        return self._draw(fresh, per_category, _rng("race", seed))

    def draw_qualifying_suite(self, version: str, per_category: Mapping[Category, int]) -> list[Problem]:
        """A public qualifying suite from race territory (its clusters are burnt once it is published)."""
        return self._draw(self._race_territory(), per_category, _rng("qualifying", version))

    def draw_held_out(self, name: str, version: int, private_seed: str, per_category: Mapping[Category, int],
                      exposed: Iterable[str], bank_version: str, at: datetime) -> HeldOutSet:
        fresh = self.held_out_clusters - self.burnt(exposed)
        drawn = self._draw(fresh, per_category, _rng(f"held-out\0{name}\0{version}", private_seed))
        return HeldOutSet(name=name, version=version, bank_version=bank_version,
                          problem_ids=tuple(p.id for p in drawn),
                          seed_digest=hashlib.sha256(private_seed.encode()).hexdigest(), created_at=at)

    def compromised(self, held_out: HeldOutSet, exposed: Iterable[str]) -> list[str]:
        """Problems of ``held_out`` that are now in a burnt cluster or outside held-out territory."""
        burnt = self.burnt(exposed)
        return [pid for pid in held_out.problem_ids
                if pid not in self.clusters.cluster_of or self.clusters.cluster_of[pid] in burnt
                or self.clusters.cluster_of[pid] not in self.held_out_clusters]
