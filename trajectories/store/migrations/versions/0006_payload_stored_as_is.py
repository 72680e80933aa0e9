"""PostgreSQL stores the attempts' payload as it is: out of line, without compressing it again.

The payload is already zstd-compressed (``blobs.compress``). PostgreSQL's default storage for a large
``bytea`` (``EXTENDED``) runs its own compressor over every value before moving it out of line, which
finds nothing to gain in compressed bytes and only costs the server's CPU: on a 2-core machine that work
was a quarter of the time an ingest of a day's attempts took (``python -m benchmarks.store``).
``EXTERNAL`` keeps the out-of-line storage and skips the compressor. Only values written from now on are
affected; stored rows stay as they are and read the same. SQLite has no such setting: nothing to do.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def _set_payload_storage(storage: str) -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE attempts ALTER COLUMN payload SET STORAGE {storage}")


def upgrade() -> None:
    _set_payload_storage("EXTERNAL")


def downgrade() -> None:
    _set_payload_storage("EXTENDED")
