"""Problem banks: a race day's problems written offline (by a model, as ShoppingBench writes its own) and
sealed until the day's race slot, so a race can measure the real task with no model at race time and no
one, validators included, knowing its problems in advance (SPEC 5; docs/validity.md).

A bank is a list of problems over the subnet's catalog. A subnet owner writes one per race day
(``arena bank build``), seals it with timelock encryption to the drand round of that day's race slot
(:mod:`arena.suites.sealed_bank`) and publishes the sealed file beside the catalog; every validator pins
its sha256 for that day. Once the round's signature exists, every validator opens the same bytes and
draws the day's race suite from them with the chain seed, excluding burnt targets exactly as the
generator does (:class:`BankSource`). Qualifying and practice suites stay with the generator: they are
public after their runs, and a bank is sealed until its day.

Everything here is pure: the rules a validator checks, the timing of drand rounds, and the draw.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import UTC, date, datetime, timedelta
from typing import Final, Literal

import structlog
from pydantic import BaseModel, ConfigDict, Field, model_validator

from shoppingbench.problems.models import CATEGORIES, Category, Problem

log = structlog.get_logger(__name__)

BANK_FORMAT: Final = "arena-problem-bank-1"

QUICKNET_CHAIN_HASH: Final = "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971"
"""drand's quicknet, the network whose public key ``bittensor_core``'s timelock encryption uses (and whose
pulses subtensor stores for commit-reveal weights)."""
QUICKNET_GENESIS: Final = datetime.fromtimestamp(1692803367, UTC)
QUICKNET_PERIOD: Final = timedelta(seconds=3)

REVEAL_LATEST: Final = timedelta(hours=2)
"""How long after the slot a bank may still be sealed: the race waits for it, so not for long."""


class BankError(ValueError):
    """A bank (or its sealed file) this validator cannot use: the message says what and what to do."""


class BankNotOpen(RuntimeError):
    """The bank's round is not emitted yet (or no drand relay answers): the race waits for it."""


class ProblemBank(BaseModel):
    """One race day's problems over the catalog whose fingerprint it names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["arena-problem-bank-1"] = BANK_FORMAT
    catalog_fingerprint: str = Field(min_length=1)
    problems: tuple[Problem, ...] = Field(min_length=1)
    writers: dict[str, str] | None = None
    """Which writer wrote each problem's request, by problem id (``model-rewrite/<model>``, or the lexicon
    writer's key where its draft stands); absent in banks written before it was recorded."""

    @model_validator(mode="after")
    def _ids_unique(self) -> ProblemBank:
        ids = [p.id for p in self.problems]
        if len(set(ids)) != len(ids):
            repeated = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(f"a bank's problem ids must be unique; repeated: {repeated[:5]}")
        unknown = sorted(set(self.writers or {}) - set(ids))
        if unknown:
            raise ValueError(f"a bank's writers name problems it does not hold: {unknown[:5]}")
        return self

    def counts(self) -> dict[Category, int]:
        return {c: sum(p.category == c for p in self.problems) for c in CATEGORIES}


LEXICON_RACE_WARNING: Final = (
    "this validator races on a real network with no problem bank pinned (ARENA_PROBLEM_BANKS), so its "
    "race problems are worded by the deterministic lexicon writer: a parser written against that "
    "writer's wording gains 0.40 in success on its requests over real ones, against about 0.07 on "
    "model-written bank requests (docs/validity.md), so the race rewards parsing the writer as well as "
    "shopping. To race banks, the subnet owner writes and seals one per race day (`arena bank build`, "
    "`arena bank seal`) and each validator installs and pins them (`arena bank install`, docs/validity.md)")


def lexicon_race_warning(real_network: bool, banks_pinned: bool) -> str | None:
    """What a validator tells its operator and its API's readers when it races the lexicon writer where it
    counts: on a real network (the embedded chain is for demos and tests) with no bank pinned."""
    return LEXICON_RACE_WARNING if real_network and not banks_pinned else None


def round_at(instant: datetime) -> int:
    """The first quicknet round emitted at or after ``instant`` (round 1 is emitted at genesis)."""
    if instant.tzinfo is None:
        raise ValueError("give the instant with its time zone (e.g. 2026-12-01T16:00:00+00:00)")
    elapsed = instant - QUICKNET_GENESIS
    return max(1, -(-elapsed // QUICKNET_PERIOD) + 1)


def round_time(round_number: int) -> datetime:
    """When quicknet emits ``round_number`` (its signature, which opens what was sealed to it)."""
    return QUICKNET_GENESIS + (round_number - 1) * QUICKNET_PERIOD


def earliest_reveal(slot: datetime) -> datetime:
    """The earliest a bank for the race of ``slot`` may open: the slot itself.

    The race's entrants are fixed before it: a challenger enters only when committed at least ``tempo``
    blocks (``tempo`` >= 1) before the race's seed block, the first block at or after the slot
    (``arena.race.rules.may_race``), so every entrant's commitment is in a block made before the slot.
    A bank opening at or after the slot therefore opens after every commitment that can race on it,
    whatever the subnet's tempo and however the blocks were spaced; a bank opening earlier would let a
    miner read its problems and still commit an agent for them in time (at a tempo of 100 blocks, 20
    minutes before the slot). Nothing waits for the bank: validators draw the race suite once the seed
    block is final, which is after the slot's round is emitted.
    """
    return slot


def check_reveal(round_number: int, slot: datetime) -> None:
    """Raise :class:`BankError` unless a bank sealed to ``round_number`` opens near the race ``slot``: not
    before it (:func:`earliest_reveal`: earlier, a miner could read the problems and still commit an agent
    that races on them) and at most :data:`REVEAL_LATEST` after it (later, the race would wait for it)."""
    opens = round_time(round_number)
    sealed_to = f"the bank is sealed to drand round {round_number}, which opens at {opens.isoformat()}"
    if opens < earliest_reveal(slot):
        raise BankError(f"{sealed_to}, before its race slot {slot.isoformat()}: anyone could read its "
                        f"problems and still commit an agent that races on them; seal it to round "
                        f"{round_at(slot)} or later")
    if opens > slot + REVEAL_LATEST:
        raise BankError(f"{sealed_to}, more than {REVEAL_LATEST} after its race slot {slot.isoformat()}; "
                        f"seal it to round {round_at(slot)}")


def add_pins(pinned: Mapping[date, str], installed: Sequence[tuple[date, str]]) -> dict[date, str]:
    """The pins ``pinned`` with each (day, sealed sha256) of ``installed`` added, ordered by day.

    A day pins one file: :class:`BankError` when one of ``installed`` is for a day pinned (or given) with
    another file, since validators pinning different files for a day would race different suites.
    """
    pins = dict(pinned)
    for day, sha256 in installed:
        if pins.get(day, sha256) != sha256:
            raise BankError(f"{day} is pinned to the bank {pins[day]}, not {sha256}: a day races one "
                            f"bank. If the subnet replaced that day's bank, remove {day} from "
                            f"ARENA_PROBLEM_BANKS first")
        pins[day] = sha256
    return dict(sorted(pins.items()))


def _draw_order(seed: str, problem: Problem) -> bytes:
    return hashlib.sha256(f"{seed}\n{problem.id}".encode()).digest()


def draw(problems: Sequence[Problem], seed: str, per_category: Mapping[Category, int],
         exclude_products: AbstractSet[str]) -> list[Problem]:
    """Up to ``per_category`` problems of each category, in the order ``seed`` shuffles them, skipping any
    with a target in ``exclude_products`` or sharing a target with one drawn before; category by
    category, as the generator orders a suite. Fewer when the bank runs out."""
    drawn: list[Problem] = []
    taken = set(exclude_products)
    for category in CATEGORIES:
        wanted = per_category.get(category, 0)
        candidates = sorted((p for p in problems if p.category == category),
                            key=lambda p: _draw_order(seed, p))
        picked = 0
        for problem in candidates:
            if picked == wanted:
                break
            targets = {t.product_id for t in problem.targets}
            if targets & taken:
                continue
            drawn.append(problem)
            taken |= targets
            picked += 1
        if picked < wanted:
            log.warning("bank_exhausted", seed=seed, category=category, wanted=wanted, drawn=picked)
    return drawn


def bank_key(sealed_sha256: str) -> str:
    """The suite-source key of a bank: its sealed file's sha256, so a suite drawn from a bank is never
    confused with one the generator made, and validators pinning another file for the day disagree
    visibly."""
    return f"bank/{sealed_sha256}"


class BankSource:
    """A suite source over one opened bank: the day's race suite is drawn from it (:func:`draw`)."""

    def __init__(self, bank: ProblemBank, sealed_sha256: str) -> None:
        self.bank = bank
        self._key = bank_key(sealed_sha256)

    @property
    def key(self) -> str:
        return self._key

    def generate(self, seed: str, per_category: Mapping[Category, int], *,
                 exclude_products: AbstractSet[str] = frozenset()) -> list[Problem]:
        return draw(self.bank.problems, seed, per_category, exclude_products)
