"""A validator's held-out suites for research: the next version, generated from its private seed away from
every product of a problem its exposure ledger holds as public, its clusters then held out in the ledger;
and the check that says which problems of the latest version a public problem has caught since (SPEC 5).
The ledger, not the suite cache, says what was public: the cache can be deleted and regenerated."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

import structlog

from arena.settings import ArenaSettings
from arena.suites import HeldOutSuite, SuiteSource, compromised, generate_held_out, targets_of
from shoppingbench.problems.held_out import HELD_OUT_DIR, latest_held_out
from shoppingbench.problems.models import Category, Problem

log = structlog.get_logger(__name__)

SEED_FILE = ".private-seed"


def held_out_dir(settings: ArenaSettings) -> Path:
    return settings.root / HELD_OUT_DIR


def private_seed(settings: ArenaSettings) -> str:
    """``ARENA_HELD_OUT_SEED``, else a random seed made once and kept (mode 0600) beside the suites."""
    if settings.held_out_seed is not None:
        return settings.held_out_seed.get_secret_value()
    path = held_out_dir(settings) / SEED_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_hex(32))
    return path.read_text().strip()


def public_problems(settings: ArenaSettings) -> list[Problem]:
    """Every problem the exposure ledger holds as public (qualifying, race and practice suites)."""
    ledger = settings.exposure_ledger()
    try:
        return ledger.public_problems()
    finally:
        ledger.engine.dispose()


def create_held_out(settings: ArenaSettings, generator: SuiteSource, *, name: str,
                    per_category: Mapping[Category, int], at: datetime) -> Path:
    """Generate and save the next version of held-out suite ``name``; returns its problems file."""
    directory = held_out_dir(settings)
    latest = latest_held_out(directory, name)
    version = HeldOutSuite.load(latest).version + 1 if latest is not None else 1
    directory.mkdir(parents=True, exist_ok=True)  # under ARENA_HOME, where the ledger's database lives
    ledger = settings.exposure_ledger()
    try:
        suite = generate_held_out(generator, name=name, version=version, private_seed=private_seed(settings),
                                  per_category=per_category, burnt=targets_of(ledger.public_problems()),
                                  source_key=generator.key, at=at, leak_config=settings.leak_clusters)
        # Saved with the ledger's cluster ids: the ones the dumps split by.
        clusters = ledger.hold_out(suite.problems, f"held-out/{name}/{version}", at)
    finally:
        ledger.engine.dispose()
    path = suite.model_copy(update={"leak_clusters": clusters}).save(directory)
    log.info("held_out_created", name=name, version=version, problems=len(suite.problems), path=str(path))
    return path


def check_held_out(settings: ArenaSettings, name: str) -> tuple[Path, list[str]] | None:
    """The latest version of ``name`` and its problems that now share a leak cluster with a public one."""
    latest = latest_held_out(held_out_dir(settings), name)
    if latest is None:
        return None
    return latest, compromised(HeldOutSuite.load(latest), public_problems(settings), settings.leak_clusters)
