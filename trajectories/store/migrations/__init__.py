"""Alembic environment and revisions of the trajectory store (run through ``trajectories.store.migrate``)."""
