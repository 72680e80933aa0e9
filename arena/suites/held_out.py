"""Held-out suites for research: versioned, generated from a validator-private seed, never raced or
exported (SPEC 5).

A held-out suite is generated like a race suite, but from a seed only its validator knows, and with every
product burnt by a public suite excluded. Each version is stored as its problems with their leak-cluster
ids (``shoppingbench.problems.held_out`` names the files). Public suites keep coming (a race cannot avoid a
seed it does not know), so a held-out problem can later fall into a cluster with a public one:
:func:`compromised` finds those, and the next version replaces them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, Field

from arena.race.clock import UtcDatetime
from arena.suites.clusters import LeakConfig, cluster_problems
from arena.suites.public import SuiteSource
from shoppingbench.files import write_file_atomically
from shoppingbench.problems.held_out import problems_file
from shoppingbench.problems.loaders import load_problems
from shoppingbench.problems.models import Category, Problem


class HeldOutSuite(BaseModel):
    """One version of a held-out suite: its problems, their leak clusters and proof of the seed."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    version: int = Field(ge=1)
    source_key: str = Field(description="The generator version and catalog fingerprint it was made from")
    seed_digest: str = Field(description="sha256 of the private seed: proves the draw without revealing it")
    created_at: UtcDatetime
    problems: tuple[Problem, ...]
    leak_clusters: dict[str, str] = Field(description="Problem id -> leak-cluster id")

    def save(self, directory: Path) -> Path:
        """Write the problems file, then the metadata beside it; returns the problems file."""
        directory.mkdir(parents=True, exist_ok=True)
        problems = problems_file(directory, self.name, self.version)
        lines = (orjson.dumps({"id": p.id, "category": p.category, **p.to_shoppingbench(),
                               "leak_cluster": self.leak_clusters[p.id]}) for p in self.problems)
        write_file_atomically(problems, b"".join(line + b"\n" for line in lines))
        metadata = self.model_dump(mode="json", exclude={"problems", "leak_clusters"})
        write_file_atomically(problems.with_suffix(".json"),
                              orjson.dumps(metadata, option=orjson.OPT_INDENT_2))
        return problems

    @classmethod
    def load(cls, problems: Path) -> HeldOutSuite:
        """Read a version back from its problems file and the metadata beside it."""
        metadata = orjson.loads(problems.with_suffix(".json").read_bytes())
        clusters = {str(line["id"]): str(line["leak_cluster"]) for line in map(orjson.loads,
                    problems.read_bytes().splitlines()) if line}
        return cls.model_validate({**metadata, "problems": load_problems(problems),
                                   "leak_clusters": clusters})


def generate_held_out(source: SuiteSource, *, name: str, version: int, private_seed: str,
                      per_category: Mapping[Category, int], burnt: Iterable[str], source_key: str,
                      at: datetime, leak_config: LeakConfig | None = None) -> HeldOutSuite:
    """Version ``version`` of held-out suite ``name``, none of its targets among ``burnt`` products."""
    seed = f"held-out/{name}/{version}/{private_seed}"
    problems = tuple(source.generate(seed, per_category, exclude_products=frozenset(burnt)))
    clusters = cluster_problems(problems, leak_config)
    return HeldOutSuite(name=name, version=version, source_key=source_key,
                        seed_digest=hashlib.sha256(private_seed.encode()).hexdigest(), created_at=at,
                        problems=problems, leak_clusters=dict(clusters.cluster_of))


def compromised(held_out: HeldOutSuite, public: Iterable[Problem],
                leak_config: LeakConfig | None = None) -> list[str]:
    """Held-out problems that now share a leak cluster with a public problem."""
    own = {p.id for p in held_out.problems}
    others = {p.id: p for p in public if p.id not in own}
    clusters = cluster_problems([*held_out.problems, *others.values()], leak_config)
    exposed = {clusters.cluster_of[pid] for pid in others}
    return [p.id for p in held_out.problems if clusters.cluster_of[p.id] in exposed]
