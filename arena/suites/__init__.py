"""Problem suites (SPEC 5): the bank, leak clusters, the exposure ledger and suite rotation."""

from arena.suites.bank import BankEntry, ProblemBank, Provenance
from arena.suites.clusters import LeakClusters, LeakConfig, cluster_problems, request_facts
from arena.suites.ledger import (
    Exposure,
    ExposureLedger,
    MemoryExposureLedger,
    SqlExposureLedger,
    exposures,
)
from arena.suites.rotation import HeldOutSet, RotationConfig, SuiteRotation, in_held_out_lane

__all__ = [
    "BankEntry",
    "Exposure",
    "ExposureLedger",
    "HeldOutSet",
    "LeakClusters",
    "LeakConfig",
    "MemoryExposureLedger",
    "ProblemBank",
    "Provenance",
    "RotationConfig",
    "SqlExposureLedger",
    "SuiteRotation",
    "cluster_problems",
    "exposures",
    "in_held_out_lane",
    "request_facts",
]
