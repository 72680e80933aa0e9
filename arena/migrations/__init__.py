"""Alembic environment and revisions of the arena database (run through ``arena.storage``)."""

from __future__ import annotations

from importlib import import_module
from typing import Final

from sqlalchemy import MetaData

from arena.storage import Base

MODEL_MODULES: Final = ("arena.race.store", "arena.submissions.store", "arena.suites.ledger",
                        "arena.suites.public", "arena.validator.epochs")
"""The modules that declare the arena's tables (models on ``arena.storage.Base``); a module declaring a
new one is added here."""


def arena_metadata() -> MetaData:
    """Every arena table's model: the modules of :data:`MODEL_MODULES` imported, whatever else the caller
    imported."""
    for name in MODEL_MODULES:
        import_module(name)
    return Base.metadata
