"""The problem bank: every problem the arena may ever use, with stable ids, revisions and provenance.

A problem's id is the hash of its content (``Problem.id``, unless its source file gave one), so the
same problem added twice, by any validator, is one entry. The bank's version names its revision (how
many additions changed it) and a digest of its ids: two validators with the same version hold the same
problems, which is what lets them draw the same race suite from the same seed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, Field

from arena.race.clock import UtcDatetime
from shoppingbench.files import write_file_atomically
from shoppingbench.problems.models import Problem


class Provenance(BaseModel):
    """Where a problem came from: the source (file, world, generator) and when it entered the bank."""

    model_config = ConfigDict(frozen=True)

    source: str = Field(min_length=1, description="e.g. 'sample-world:50000:seed0' or a file name")
    generator: str | None = Field(default=None, description="Generator name and version, when generated")
    added_at: UtcDatetime


class BankEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    problem: Problem
    provenance: Provenance
    revision: int = Field(ge=1, description="The bank revision that added it")


class ProblemBank:
    """An append-only set of problems keyed by content id."""

    def __init__(self, entries: Iterable[BankEntry] = ()) -> None:
        self._entries: dict[str, BankEntry] = {}
        for entry in entries:
            if entry.problem.id in self._entries:
                raise ValueError(f"problem {entry.problem.id} appears twice in the bank")
            self._entries[entry.problem.id] = entry
        self.revision = max((e.revision for e in self._entries.values()), default=0)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, problem_id: object) -> bool:
        return problem_id in self._entries

    def add(self, problems: Iterable[Problem], provenance: Provenance) -> list[str]:
        """Add the problems not already present, as one new revision; returns the new ids."""
        fresh = {p.id: p for p in problems if p.id not in self._entries}
        if fresh:
            self.revision += 1
            for problem_id, problem in fresh.items():
                self._entries[problem_id] = BankEntry(problem=problem, provenance=provenance,
                                                      revision=self.revision)
        return list(fresh)

    def entry(self, problem_id: str) -> BankEntry:
        return self._entries[problem_id]

    def problems(self) -> list[Problem]:
        """Every problem, ordered by id (the order every validator sees)."""
        return [self._entries[pid].problem for pid in sorted(self._entries)]

    @property
    def version(self) -> str:
        digest = hashlib.sha256("\n".join(sorted(self._entries)).encode()).hexdigest()[:12]
        return f"r{self.revision}-{digest}"

    def save(self, path: Path) -> None:
        """Write the bank as JSONL (one entry a line, by id), atomically."""
        lines = (orjson.dumps(self._entries[pid].model_dump(mode="json")) for pid in sorted(self._entries))
        write_file_atomically(path, b"\n".join(lines) + b"\n" if self._entries else b"")

    @classmethod
    def load(cls, path: Path) -> ProblemBank:
        lines = path.read_bytes().splitlines()
        return cls(BankEntry.model_validate_json(line) for line in lines if line.strip())
