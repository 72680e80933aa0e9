"""Alembic environment: runs on the connection ``trajectories.store.migrate`` hands over.

No ``alembic.ini`` is needed. Developers create a revision with ``alembic`` pointed at this directory
(``script_location = trajectories.store:migrations``).
"""

from __future__ import annotations

from trajectories.store.migrate import STORE
from trajectories.store.schema import Base

STORE.run_environment(Base.metadata)
