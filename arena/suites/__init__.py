"""Problem suites (SPEC 5): public suites generated from chain seeds by the generator the schedule names
for their day, held-out suites from private seeds, leak clusters and the exposure ledger."""

from arena.suites.clusters import (
    FactsIndex,
    LeakClusters,
    LeakConfig,
    cluster_problems,
    request_facts,
    text_links,
)
from arena.suites.held_out import HeldOutSuite, compromised, generate_held_out
from arena.suites.ledger import (
    Exposure,
    ExposureLedger,
    SqlExposureLedger,
    exposures,
)
from arena.suites.placement import ClusterBook, Placement, Side
from arena.suites.public import (
    FixedSource,
    PublicSuites,
    RaceSeed,
    RaceSuite,
    SourceSchedule,
    SuiteCache,
    SuitePlan,
    SuiteSource,
    practice_seed,
    practice_week,
    qualifying_seed,
    targets_of,
)
from arena.suites.schedule import GeneratorSchedule, GeneratorSpec, ScheduleEntry, ScheduleError

__all__ = [
    "ClusterBook",
    "Exposure",
    "ExposureLedger",
    "FactsIndex",
    "FixedSource",
    "GeneratorSchedule",
    "GeneratorSpec",
    "HeldOutSuite",
    "LeakClusters",
    "LeakConfig",
    "Placement",
    "PublicSuites",
    "RaceSeed",
    "RaceSuite",
    "ScheduleEntry",
    "ScheduleError",
    "Side",
    "SourceSchedule",
    "SqlExposureLedger",
    "SuiteCache",
    "SuitePlan",
    "SuiteSource",
    "cluster_problems",
    "compromised",
    "exposures",
    "generate_held_out",
    "practice_seed",
    "practice_week",
    "qualifying_seed",
    "request_facts",
    "targets_of",
    "text_links",
]
