"""Dump splits by leak cluster: a cluster is wholly ``train`` or wholly ``held_out`` (SPEC 5).

The rule depends on the cluster id alone, never on the day or on which attempts a dump holds, so a
cluster lands on the same side in every dump ever made with the same rule:

1. a cluster listed in ``held_out_clusters`` is ``held_out``;
2. otherwise it is ``held_out`` when the first 8 bytes of ``sha256(salt + ":" + cluster)``, read as a
   big-endian integer, fall below ``held_out_fraction`` of 2**64;
3. a problem registered without a cluster id cannot be placed safely (it might be a disguised copy of
   a held-out problem): its attempts go to a separate ``unclustered`` split.

Cluster ids are data written with each problem by whoever registers it (the arena computes them);
this module knows nothing of how they are computed.

A validator's dumps are split by its exposure ledger instead: :class:`LedgerSplits` gives each problem's
cluster and split as the ledger placed it, once and for every day (``arena.suites.placement``); a problem
the ledger does not hold goes to ``unclustered``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Split = Literal["train", "held_out", "unclustered"]
SPLITS: tuple[Split, ...] = ("train", "held_out", "unclustered")
DEFAULT_SALT = "shopping-arena-split-v1"


class SplitRule(BaseModel):
    model_config = ConfigDict(frozen=True)

    held_out_fraction: float = Field(default=0.1, ge=0, le=1, description=(
        "Share of cluster ids (by hash) that are held out"))
    salt: str = Field(default=DEFAULT_SALT, description="Changing it reshuffles every cluster: keep it fixed")
    held_out_clusters: frozenset[str] = Field(default_factory=frozenset, description=(
        "Cluster ids held out whatever their hash (e.g. the clusters of a published held-out set)"))

    def split_of(self, cluster: str | None) -> Split:
        if cluster is None or cluster == "":
            return "unclustered"
        if cluster in self.held_out_clusters:
            return "held_out"
        digest = hashlib.sha256(f"{self.salt}:{cluster}".encode()).digest()
        return "held_out" if int.from_bytes(digest[:8], "big") < self.held_out_fraction * 2**64 else "train"

    def describe(self) -> dict[str, object]:
        """The rule as the manifest records it (the explicit list by count and hash, not by content)."""
        listed = "\n".join(sorted(self.held_out_clusters)).encode()
        return {"source": "cluster_hash", "held_out_fraction": self.held_out_fraction, "salt": self.salt,
                "held_out_clusters": len(self.held_out_clusters),
                "held_out_clusters_sha256": hashlib.sha256(listed).hexdigest()}


@dataclass(frozen=True)
class ProblemSplit:
    """A problem's leak cluster and split as the exposure ledger placed it."""

    cluster: str
    split: Split


@dataclass(frozen=True)
class LedgerSplits:
    """Every problem the exposure ledger placed: the split of a dump made with it."""

    of: Mapping[str, ProblemSplit]

    def placed(self, problem_id: str) -> tuple[str | None, Split]:
        found = self.of.get(problem_id)
        return (found.cluster, found.split) if found is not None else (None, "unclustered")

    def describe(self) -> dict[str, object]:
        """What the manifest records: the source only, since the ledger grows after a dump was made and
        a dump's own clusters are counted by split in its statistics."""
        return {"source": "exposure_ledger"}
