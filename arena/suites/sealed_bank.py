"""Sealed problem banks: timelock-encrypted to a drand round, published as files beside the catalog,
pinned by sha256 per race day, opened at the race (SPEC 5; the rules are :mod:`arena.suites.bank`).

A sealed file is JSON: ``{"format", "day", "drand_chain", "reveal_round", "ciphertext"}`` where the
ciphertext (base64) is ``bittensor_core.encrypt_at_round`` of the bank's JSON. Nobody can decrypt it
before quicknet emits ``reveal_round``; then the round's signature (public, from any drand relay)
opens it on every validator alike. The sealed files a validator's configuration pins live in
``<catalog>/banks/<sha256>.json``; they are checked when the suite sources open (present, hashing to the
pin, for the day they are pinned for, sealed to a round from that day's slot to two hours after it), long
before their day.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from datetime import date, datetime, time
from pathlib import Path
from typing import Final, Literal, Protocol, TypeVar

import bittensor_core
import orjson
import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arena.race.calendar import race_slot
from arena.suites.bank import (
    QUICKNET_CHAIN_HASH,
    BankError,
    BankNotOpen,
    BankSource,
    ProblemBank,
    bank_key,
    check_reveal,
    round_time,
)
from shoppingbench.files import write_file_atomically
from shoppingbench.problems.models import Category, Problem

log = structlog.get_logger(__name__)

SEALED_FORMAT: Final = "arena-sealed-bank-1"
_Model = TypeVar("_Model", bound=BaseModel)
BANK_ARCHIVE: Final = "banks"


class RoundSignatures(Protocol):
    """Where round signatures come from: :class:`arena.chain.drand.DrandBeacon`."""

    def signature(self, round_number: int) -> str | None: ...

    def forget(self, round_number: int) -> None: ...


class SealedBank(BaseModel):
    """The published file: the day it is for, the round that opens it and the ciphertext."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["arena-sealed-bank-1"] = SEALED_FORMAT
    day: date
    drand_chain: str = QUICKNET_CHAIN_HASH
    reveal_round: int = Field(ge=1)
    ciphertext: str = Field(min_length=1, description="base64 of the timelock ciphertext")

    def to_bytes(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)


def bank_bytes(bank: ProblemBank) -> bytes:
    return orjson.dumps(bank.model_dump(mode="json", exclude_none=True), option=orjson.OPT_SORT_KEYS)


def _validated(model: type[_Model], data: bytes, what: str) -> _Model:
    """``data`` as ``model``, or :class:`BankError` naming ``what`` it is not and its first fault."""
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BankError(f"not {what} ({exc.error_count()} errors; first: {first['msg']} at "
                        f"{'.'.join(map(str, first['loc']))})") from exc


def read_bank(data: bytes) -> ProblemBank:
    return _validated(ProblemBank, data, "a problem bank")


def seal(bank: ProblemBank, day: date, reveal_round: int) -> SealedBank:
    """``bank`` encrypted so that only quicknet's signature of ``reveal_round`` opens it."""
    ciphertext, _ = bittensor_core.encrypt_at_round(bank_bytes(bank), reveal_round)
    return SealedBank(day=day, reveal_round=reveal_round, ciphertext=base64.b64encode(ciphertext).decode())


def read_sealed(data: bytes) -> SealedBank:
    return _validated(SealedBank, data, "a sealed problem bank")


def unseal(sealed: SealedBank, signature_hex: str) -> ProblemBank:
    """The bank inside ``sealed``, opened with its round's signature; :class:`BankError` when the signature
    does not open it (another round's, or forged) or what it holds is not a bank."""
    try:
        ciphertext = base64.b64decode(sealed.ciphertext, validate=True)
        plain = bittensor_core.decrypt_with_signature(ciphertext, signature_hex)
    except (ValueError, binascii.Error) as exc:
        raise BankError(f"the signature given for drand round {sealed.reveal_round} does not open the bank "
                        f"of {sealed.day}: {exc}") from exc
    return read_bank(bytes(plain))


def pinned_file(catalog_dir: Path, sha256: str) -> Path:
    return catalog_dir / BANK_ARCHIVE / f"{sha256}.json"


def load_pinned(catalog_dir: Path, day: date, sha256: str, slot: datetime) -> SealedBank:
    """The sealed file pinned for ``day``, checked: present, hashing to ``sha256``, sealed for ``day`` to a
    round opening near its race ``slot`` (:func:`arena.suites.bank.check_reveal`)."""
    path = pinned_file(catalog_dir, sha256)
    if not path.is_file():
        raise BankError(f"the problem bank pinned for {day} is not at {path}: copy the sealed file the "
                        f"subnet published for that day there")
    data = path.read_bytes()
    found = hashlib.sha256(data).hexdigest()
    if found != sha256:
        raise BankError(f"{path} has sha256 {found}, not the {sha256} pinned for {day}: fetch the file again")
    sealed = read_sealed(data)
    if sealed.day != day:
        raise BankError(f"{path} is sealed for {sealed.day}, but it is pinned for {day}")
    check_sealed(sealed, slot, f"{path} (pinned for {day})")
    return sealed


def check_sealed(sealed: SealedBank, slot: datetime, where: str) -> None:
    """``sealed`` is sealed to quicknet, to a round opening near its race ``slot``
    (:func:`arena.suites.bank.check_reveal`); else :class:`BankError` naming ``where``."""
    if sealed.drand_chain != QUICKNET_CHAIN_HASH:
        raise BankError(f"{where} is sealed to drand chain {sealed.drand_chain}; only quicknet "
                        f"({QUICKNET_CHAIN_HASH}) is supported")
    try:
        check_reveal(sealed.reveal_round, slot)
    except BankError as exc:
        raise BankError(f"{where}: {exc}") from exc


def install_sealed(catalog_dir: Path, data: bytes, race_time: time, where: str) -> tuple[date, str]:
    """A published sealed file (``data``, read from ``where``) checked as a validator checks its pins and
    stored where they are looked for (:func:`pinned_file`); its race day and the sha256 to pin for it.

    The file is written whole or not at all (:func:`~shoppingbench.files.write_file_atomically`), so a
    validator never reads half of one; one already there with the same sha256 is left as it is.
    """
    sealed = read_sealed(data)
    check_sealed(sealed, race_slot(sealed.day, race_time), f"{where} (for {sealed.day})")
    sha256 = hashlib.sha256(data).hexdigest()
    target = pinned_file(catalog_dir, sha256)
    if not target.is_file() or hashlib.sha256(target.read_bytes()).hexdigest() != sha256:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_file_atomically(target, data)
    log.info("bank_installed", day=sealed.day.isoformat(), sha256=sha256, path=str(target))
    return sealed.day, sha256


class SealedBankSource:
    """The suite source of one race day with a pinned bank: opened at the first draw, once its round's
    signature exists; its key (the sealed file's sha256) is known before."""

    def __init__(self, sealed: SealedBank, sha256: str, *, catalog_fingerprint: str,
                 signatures: RoundSignatures) -> None:
        self.sealed = sealed
        self.sha256 = sha256
        self.catalog_fingerprint = catalog_fingerprint
        self._signatures = signatures
        self._opened: BankSource | None = None

    @property
    def key(self) -> str:
        return bank_key(self.sha256)

    def open(self) -> BankSource:
        """The opened bank; :class:`BankNotOpen` while its round is not emitted or no relay answers,
        :class:`BankError` when what it holds cannot serve this validator."""
        if self._opened is None:
            self._opened = self._open()
        return self._opened

    def _open(self) -> BankSource:
        round_number = self.sealed.reveal_round
        try:
            signature = self._signatures.signature(round_number)
        except RuntimeError as exc:
            raise BankNotOpen(f"the bank of {self.sealed.day} waits for drand round {round_number}: "
                              f"{exc}") from exc
        if signature is None:
            raise BankNotOpen(f"the bank of {self.sealed.day} opens with drand round {round_number}, emitted "
                              f"at {round_time(round_number).isoformat()}")
        try:
            bank = unseal(self.sealed, signature)
        except BankError:
            self._signatures.forget(round_number)
            raise
        if bank.catalog_fingerprint != self.catalog_fingerprint:
            raise BankError(f"the bank of {self.sealed.day} was written over catalog "
                            f"{bank.catalog_fingerprint}, this validator's is {self.catalog_fingerprint}")
        log.info("bank_opened", day=self.sealed.day.isoformat(), round=round_number, sha256=self.sha256,
                 problems=bank.counts())
        return BankSource(bank, self.sha256)

    def generate(self, seed: str, per_category: Mapping[Category, int], *,
                 exclude_products: AbstractSet[str] = frozenset()) -> list[Problem]:
        return self.open().generate(seed, per_category, exclude_products=exclude_products)
