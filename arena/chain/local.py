"""The embedded chain: a persistent registry of one subnet in a SQLite file, with a 12 s block clock.

It plays the chain for a local network and for tests: hotkeys and their uids, validator permits, stake
(an operator action here, as staking is outside this arena), published axons, commitments, weights with
their rate limit and the rules version (``version_key``) they were set under, refused below the subnet's
``weights_version_key`` as subtensor refuses them, and the subnet's weight limits (``MinAllowedWeights``,
``MaxWeightsLimit``: subtensor's new-subnet defaults unless set), a row that breaks them refused as
subtensor refuses it (``apply_weights``) while ``set_weights`` first processes the vector to meet them. Every
write is signed by the wallet's sr25519 hotkey and the signature verified before it lands, as an
extrinsic would be; registration is an operator action (``register``), as burning TAO for a uid is
outside this arena.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from pathlib import Path

import structlog
from bittensor import Wallet
from bittensor.sp_core import CRYPTO_SR25519
from bittensor.sp_core import verify as verify_signature
from sqlalchemy import Engine, String, UniqueConstraint, create_engine, func, inspect, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from arena.chain.models import (
    AxonInfo,
    ChainError,
    Commitment,
    Metagraph,
    Neuron,
    ValidatorWeights,
    weight_shares,
)
from arena.race.clock import Clock, SystemClock
from arena.weights import WeightLimits, WeightVector, limits_violation, process_weights

log = structlog.get_logger(__name__)

_LIMITS_KEY = "weight_limits"
MAX_COMMITMENT_BYTES = 128
"""The Raw data field of a commitment on subtensor holds at most this many bytes."""


class _Base(DeclarativeBase):
    pass


class _Meta(_Base):
    __tablename__ = "chain_meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str]


class _NeuronRow(_Base):
    __tablename__ = "neurons"
    __table_args__ = (UniqueConstraint("netuid", "hotkey"),)
    netuid: Mapped[int] = mapped_column(primary_key=True)
    uid: Mapped[int] = mapped_column(primary_key=True)
    hotkey: Mapped[str] = mapped_column(String(64))
    coldkey: Mapped[str] = mapped_column(String(64))
    validator_permit: Mapped[bool]
    registered_block: Mapped[int]
    axon: Mapped[str | None]


class _StakeRow(_Base):
    __tablename__ = "stakes"
    netuid: Mapped[int] = mapped_column(primary_key=True)
    hotkey: Mapped[str] = mapped_column(String(64), primary_key=True)
    stake: Mapped[float]


class _CommitmentRow(_Base):
    __tablename__ = "commitments"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    netuid: Mapped[int] = mapped_column(index=True)
    hotkey: Mapped[str] = mapped_column(String(64), index=True)
    data: Mapped[str]
    block: Mapped[int]


class _WeightsRow(_Base):
    __tablename__ = "weights"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    netuid: Mapped[int] = mapped_column(index=True)
    hotkey: Mapped[str] = mapped_column(String(64), index=True)
    block: Mapped[int]
    vector: Mapped[str]
    version_key: Mapped[int] = mapped_column(default=0, server_default="0")


def _add_version_key(engine: Engine) -> None:
    """Give a chain file made before weights carried their version the column (0: set without one)."""
    if "version_key" not in {column["name"] for column in inspect(engine).get_columns("weights")}:
        with engine.begin() as connection:
            connection.execute(text("ALTER TABLE weights ADD COLUMN version_key INTEGER NOT NULL DEFAULT 0"))


def _signed_origin(wallet: Wallet, call: str) -> str:
    """The hotkey that signed ``call``: the wallet signs, the chain verifies, as for an extrinsic."""
    keypair = wallet.hotkey
    payload = call.encode()
    signature = bytes(keypair.sign(payload))
    hotkey: str = keypair.ss58_address
    if not verify_signature(payload, signature, hotkey, CRYPTO_SR25519):
        raise ChainError(f"bad signature from {hotkey} on {call.splitlines()[0]}")
    return hotkey


class LocalChain:
    """One subnet of the embedded chain, persisted in ``path`` (created on first use).

    Block ``n`` starts at ``genesis + n * block_seconds``; genesis is the clock's time when the file
    was created, so a ``ManualClock`` fast-forwards the chain. ``weights_version_key`` is the subnet's
    ``WeightsVersionKey``: weights set under an older rules version are refused.
    """

    def __init__(self, path: Path, *, netuid: int = 1, clock: Clock | None = None, tempo: int = 360,
                 weights_rate_limit: int = 100, block_seconds: float = 12.0,
                 weights_version_key: int = 0, weight_limits: WeightLimits | None = None) -> None:
        self.netuid = netuid
        self.path = path
        self._clock = clock or SystemClock()
        self._tempo = tempo
        self._weights_rate_limit = weights_rate_limit
        self._weights_version_key = weights_version_key
        self._block_seconds = block_seconds
        path.parent.mkdir(parents=True, exist_ok=True)
        self._engine: Engine = create_engine(f"sqlite:///{path}")
        _Base.metadata.create_all(self._engine)
        _add_version_key(self._engine)
        with Session(self._engine) as session, session.begin():
            row = session.get(_Meta, "genesis")
            if row is None:
                row = _Meta(key="genesis", value=self._clock.now().isoformat())
                session.add(row)
            self.genesis = datetime.fromisoformat(row.value)
        if weight_limits is not None:
            self.set_weight_limits(weight_limits)

    def close(self) -> None:
        self._engine.dispose()

    # -- clock ---------------------------------------------------------------------------------------
    def block(self) -> int:
        elapsed = (self._clock.now() - self.genesis) / timedelta(seconds=self._block_seconds)
        return max(0, int(elapsed))

    def finalized_block(self) -> int:
        return self.block()  # one author and no forks: every block is final at once

    def block_time(self, block: int) -> datetime:
        return self.genesis + block * timedelta(seconds=self._block_seconds)

    def block_hash(self, block: int) -> str:
        """A stand-in (this chain keeps no block contents to hash): the hash of the subnet and number."""
        if not 0 <= block <= self.block():
            raise ChainError(f"block {block} does not exist yet (the local chain is at block {self.block()})")
        return hashlib.sha256(f"local-chain/{self.netuid}/{block}".encode()).hexdigest()

    def block_seconds(self) -> float:
        return self._block_seconds

    def tempo(self) -> int:
        return self._tempo

    # -- registry ------------------------------------------------------------------------------------
    def register(self, hotkey: str, coldkey: str, *, validator_permit: bool = False) -> int:
        """Give ``hotkey`` the next uid (an operator action); an already registered hotkey keeps its uid
        and gets the given permit."""
        with Session(self._engine) as session, session.begin():
            row = session.scalar(select(_NeuronRow).where(_NeuronRow.netuid == self.netuid,
                                                          _NeuronRow.hotkey == hotkey))
            if row is None:
                uid = session.scalar(select(func.count()).select_from(_NeuronRow)
                                     .where(_NeuronRow.netuid == self.netuid)) or 0
                row = _NeuronRow(netuid=self.netuid, uid=uid, hotkey=hotkey, coldkey=coldkey,
                                 validator_permit=validator_permit, registered_block=self.block(), axon=None)
                session.add(row)
            row.validator_permit = validator_permit
            uid = row.uid
        log.info("chain_registered", netuid=self.netuid, uid=uid, hotkey=hotkey,
                 validator_permit=validator_permit)
        return uid

    def set_stake(self, hotkey: str, stake: float) -> None:
        """Give a registered hotkey ``stake`` (alpha; an operator action: a hotkey without one has 0)."""
        self._registered(hotkey)
        with Session(self._engine) as session, session.begin():
            session.merge(_StakeRow(netuid=self.netuid, hotkey=hotkey, stake=float(stake)))
        log.info("chain_stake_set", netuid=self.netuid, hotkey=hotkey, stake=stake)

    def metagraph(self) -> Metagraph:
        with Session(self._engine) as session:
            rows = session.scalars(select(_NeuronRow).where(_NeuronRow.netuid == self.netuid)
                                   .order_by(_NeuronRow.uid)).all()
            neurons = tuple(Neuron(uid=r.uid, hotkey=r.hotkey, coldkey=r.coldkey,
                                   validator_permit=r.validator_permit,
                                   axon=AxonInfo.model_validate_json(r.axon) if r.axon else None)
                            for r in rows)
        return Metagraph(netuid=self.netuid, block=self.block(), neurons=neurons)

    def is_registered(self, hotkey: str) -> bool:
        return self._neuron(hotkey) is not None

    def validator_weights(self) -> tuple[ValidatorWeights, ...]:
        metagraph = self.metagraph()
        with Session(self._engine) as session:
            stakes = {hotkey: stake for hotkey, stake in session.execute(
                select(_StakeRow.hotkey, _StakeRow.stake).where(_StakeRow.netuid == self.netuid))}
        found = []
        for neuron in metagraph.neurons:
            latest = self.weights(neuron.hotkey)
            if not neuron.validator_permit and latest is None:
                continue
            shares = {} if latest is None else weight_shares(zip(latest.uids, latest.weights, strict=True))
            found.append(ValidatorWeights(uid=neuron.uid, hotkey=neuron.hotkey,
                                          stake=stakes.get(neuron.hotkey, 0.0),
                                          validator_permit=neuron.validator_permit, axon=neuron.axon,
                                          weights=shares))
        return tuple(found)

    def _neuron(self, hotkey: str) -> Neuron | None:
        return self.metagraph().neuron(hotkey)

    def _registered(self, hotkey: str) -> Neuron:
        neuron = self._neuron(hotkey)
        if neuron is None:
            raise ChainError(f"hotkey {hotkey} is not registered on subnet {self.netuid}: register it first")
        return neuron

    # -- writes --------------------------------------------------------------------------------------
    def commit(self, wallet: Wallet, data: str) -> Commitment:
        if len(data.encode()) > MAX_COMMITMENT_BYTES:
            raise ChainError(f"a commitment holds at most {MAX_COMMITMENT_BYTES} bytes")
        hotkey = _signed_origin(wallet, f"Commitments.set_commitment\n{self.netuid}\n{data}")
        self._registered(hotkey)
        block = self.block()
        with Session(self._engine) as session, session.begin():
            row = _CommitmentRow(netuid=self.netuid, hotkey=hotkey, data=data, block=block)
            session.add(row)
            session.flush()
            commitment = self._commitment(session, row)
        log.info("chain_committed", netuid=self.netuid, hotkey=hotkey, block=block)
        return commitment

    def latest_commitment(self, hotkey: str) -> Commitment | None:
        with Session(self._engine) as session:
            row = session.scalars(select(_CommitmentRow).where(_CommitmentRow.netuid == self.netuid,
                                                               _CommitmentRow.hotkey == hotkey)
                                  .order_by(_CommitmentRow.id.desc()).limit(1)).first()
            return None if row is None else self._commitment(session, row)

    def _commitment(self, session: Session, row: _CommitmentRow) -> Commitment:
        """The row as a commitment; its extrinsic index counts the block's commitments made before it."""
        earlier = (_CommitmentRow.netuid == self.netuid, _CommitmentRow.block == row.block,
                   _CommitmentRow.id < row.id)
        index = session.scalar(select(func.count()).select_from(_CommitmentRow).where(*earlier))
        return Commitment(hotkey=row.hotkey, data=row.data, block=row.block, time=self.block_time(row.block),
                          extrinsic_index=index)

    def serve_axon(self, wallet: Wallet, axon: AxonInfo) -> None:
        hotkey = _signed_origin(wallet,
                                f"SubtensorModule.serve_axon\n{self.netuid}\n{axon.model_dump_json()}")
        uid = self._registered(hotkey).uid
        with Session(self._engine) as session, session.begin():
            row = session.get_one(_NeuronRow, (self.netuid, uid))
            row.axon = axon.model_dump_json()
        log.info("chain_axon_served", netuid=self.netuid, uid=uid, url=axon.url)

    def set_weight_limits(self, limits: WeightLimits) -> None:
        """Set the subnet's ``MinAllowedWeights`` and ``MaxWeightsLimit`` (the subnet owner's action)."""
        with Session(self._engine) as session, session.begin():
            session.merge(_Meta(key=_LIMITS_KEY, value=limits.model_dump_json()))

    def weight_limits(self) -> WeightLimits:
        with Session(self._engine) as session:
            row = session.get(_Meta, _LIMITS_KEY)
            return WeightLimits() if row is None else WeightLimits.model_validate_json(row.value)

    def set_weights(self, wallet: Wallet, weights: WeightVector, *, version_key: int) -> int:
        metagraph = self.metagraph()
        neuron = metagraph.neuron(wallet.hotkey.ss58_address)
        try:
            processed = process_weights(weights, self.weight_limits(), n_uids=len(metagraph.neurons),
                                        self_uid=None if neuron is None else neuron.uid)
        except ValueError as exc:
            raise ChainError(f"weights for subnet {self.netuid}: {exc}") from exc
        if processed != weights:
            log.info("chain_weights_processed", netuid=self.netuid, limits=self.weight_limits().model_dump(),
                     uids=len(processed.uids))
        return self.apply_weights(wallet, processed, version_key=version_key)

    def apply_weights(self, wallet: Wallet, weights: WeightVector, *, version_key: int) -> int:
        """The ``set_weights`` extrinsic as sent: refused, as subtensor refuses it, when the row breaks
        the subnet's weight limits."""
        call = f"SubtensorModule.set_weights\n{self.netuid}\n{weights.to_bytes().hex()}\n{version_key}"
        hotkey = _signed_origin(wallet, call)
        metagraph = self.metagraph()
        neuron = metagraph.neuron(hotkey)
        if neuron is None:
            raise ChainError(f"hotkey {hotkey} is not registered on subnet {self.netuid}: register it first")
        if not neuron.validator_permit:
            raise ChainError(f"hotkey {hotkey} has no validator permit on subnet {self.netuid}")
        if version_key < self._weights_version_key:
            raise ChainError(f"weights version {version_key} is below subnet {self.netuid}'s "
                             f"WeightsVersionKey {self._weights_version_key}: upgrade the validator")
        unknown = [uid for uid in weights.uids if uid >= len(metagraph.neurons)]
        if unknown:
            raise ChainError(f"weights name uids not on subnet {self.netuid}: {unknown}")
        refused = limits_violation(weights, self.weight_limits(), n_uids=len(metagraph.neurons),
                                   self_uid=neuron.uid)
        if refused is not None:
            raise ChainError(f"weights refused on subnet {self.netuid}: {refused}")
        block = self.block()
        last = self.last_weights_block(hotkey)
        if last is not None and block < last + self._weights_rate_limit:
            raise ChainError(f"weights rate limit: set at block {last}, next allowed at block "
                             f"{last + self._weights_rate_limit} (now {block})")
        with Session(self._engine) as session, session.begin():
            session.add(_WeightsRow(netuid=self.netuid, hotkey=hotkey, block=block,
                                    vector=weights.model_dump_json(), version_key=version_key))
        log.info("chain_weights_set", netuid=self.netuid, hotkey=hotkey, block=block, uids=len(weights.uids),
                 version_key=version_key)
        return block

    # -- reads beyond the interface (operators, tests) -------------------------------------------------
    def last_weights_block(self, hotkey: str) -> int | None:
        with Session(self._engine) as session:
            return session.scalar(select(func.max(_WeightsRow.block)).where(_WeightsRow.netuid == self.netuid,
                                                                           _WeightsRow.hotkey == hotkey))

    def weights(self, hotkey: str) -> WeightVector | None:
        """The validator's latest weights, as set."""
        with Session(self._engine) as session:
            row = session.scalars(select(_WeightsRow).where(_WeightsRow.netuid == self.netuid,
                                                            _WeightsRow.hotkey == hotkey)
                                  .order_by(_WeightsRow.id.desc()).limit(1)).first()
            return None if row is None else WeightVector.model_validate_json(row.vector)

    def weights_version(self, hotkey: str) -> int | None:
        """The ``version_key`` the validator's latest weights were set under."""
        with Session(self._engine) as session:
            return session.scalars(select(_WeightsRow.version_key).where(_WeightsRow.netuid == self.netuid,
                                                                         _WeightsRow.hotkey == hotkey)
                                   .order_by(_WeightsRow.id.desc()).limit(1)).first()
