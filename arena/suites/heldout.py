"""Held-out suites for research: versioned, generated from a validator-private seed, never raced or
exported (SPEC 5).

A held-out suite is generated like a race suite, but from a seed only its validator knows, and with every
product burnt by a public suite excluded. Its problems are stored with their leak-cluster ids in one JSON
file per version. Public suites keep coming (a race cannot avoid a seed it does not know), so a held-out
problem can later fall into a cluster with a public one: :func:`compromised` finds those, and the next
version replaces them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from arena.race.clock import UtcDatetime
from arena.suites.clusters import LeakConfig, cluster_problems
from arena.suites.public import SuiteSource
from shoppingbench.files import write_file_atomically
from shoppingbench.problems.models import Category, Problem

_FILE: Final = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)-v(?P<version>\d+)\.json$")


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

    @property
    def file_name(self) -> str:
        return f"{self.name}-v{self.version}.json"

    def save(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / self.file_name
        write_file_atomically(path, self.model_dump_json(indent=1).encode())
        return path

    @classmethod
    def load(cls, path: Path) -> HeldOutSuite:
        return cls.model_validate_json(path.read_bytes())


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


def latest_held_out(directory: Path, name: str) -> Path | None:
    """The newest version's file of held-out suite ``name`` in ``directory``, if any."""
    versions = [(int(match["version"]), path) for path in directory.glob(f"{name}-v*.json")
                if (match := _FILE.match(path.name)) and match["name"] == name]
    return max(versions)[1] if versions else None
