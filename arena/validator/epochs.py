"""The epoch in which a validator last set weights, kept in the arena database.

The chain refuses a second set within its rate limit, so a restarted validator must remember that it
already set this epoch's weights rather than retry at once.
"""

from __future__ import annotations

from sqlalchemy import Engine, String
from sqlalchemy.orm import Mapped, Session, mapped_column

from arena.storage import Base


class _WeightsEpochRow(Base):
    __tablename__ = "weights_epochs"
    hotkey: Mapped[str] = mapped_column(String(64), primary_key=True)
    netuid: Mapped[int] = mapped_column(primary_key=True)
    epoch: Mapped[int]
    block: Mapped[int]


class WeightsEpochs:
    """The last epoch (``block // tempo``) in which ``hotkey`` set weights on subnet ``netuid``."""

    def __init__(self, engine: Engine, hotkey: str, netuid: int) -> None:
        self._engine = engine
        self._key = (hotkey, netuid)

    def last(self) -> int | None:
        with Session(self._engine) as session:
            row = session.get(_WeightsEpochRow, self._key)
            return None if row is None else row.epoch

    def record(self, epoch: int, block: int) -> None:
        hotkey, netuid = self._key
        with Session(self._engine) as session, session.begin():
            session.merge(_WeightsEpochRow(hotkey=hotkey, netuid=netuid, epoch=epoch, block=block))
