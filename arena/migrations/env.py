"""Alembic environment: runs on the connection ``arena.storage.open_database`` hands over.

No ``alembic.ini`` is needed. Developers create a revision with ``alembic`` pointed at this directory
(``script_location = arena:migrations``, ``version_table = arena_alembic_version``): docs/validator.md,
"The arena database".
"""

from __future__ import annotations

from arena.migrations import arena_metadata
from arena.storage import MIGRATIONS

MIGRATIONS.run_environment(arena_metadata())
