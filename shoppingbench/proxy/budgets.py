"""Inference budgets: how many calls and tokens an attempt, and a whole run, may spend, and how many calls
of one attempt may be in flight at once.

Tokens are ``prompt + completion``. A call is admitted only if its worst case fits: before it is
forwarded it reserves an upper bound of its prompt plus the ``max_tokens`` it may write against every
token budget, and when it returns the reservation is settled to the tokens the upstream reports. So
however many calls run in parallel, what is spent plus what is reserved never passes a budget (unless
an upstream writes more than it was allowed, which is logged). When less is left than a call asks for,
its ``max_tokens`` is lowered to what is left; when not even one completion token fits, or a call
budget is spent, the call is refused (429), never cut off half-way. An admitted call that never reaches
the provider (no share of it came, ``shares.py``) is given back whole: :meth:`Ledger.cancel`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

import structlog
from pydantic import BaseModel, ConfigDict, Field

log = structlog.get_logger(__name__)


class InferenceBudgets(BaseModel):
    """``None`` means unlimited."""

    model_config = ConfigDict(frozen=True)

    attempt_calls: int | None = Field(default=100, ge=1)
    attempt_tokens: int | None = Field(default=400_000, ge=1)
    attempt_in_flight: int | None = Field(default=4, ge=1, description="Calls of one attempt at once")
    run_calls: int | None = Field(default=None, ge=1)
    run_tokens: int | None = Field(default=None, ge=1)


@dataclass
class Spending:
    """What an attempt, or a whole run, has used: guarded by the :class:`Ledger` that admits its calls."""

    calls: int = 0
    tokens: int = 0
    """Settled: reported by the upstream for calls that returned."""
    reserved: int = 0
    """Held by calls in flight (their prompt bound plus their ``max_tokens``)."""
    in_flight: int = 0
    waited_on_others_s: float = 0.0
    """Seconds its calls waited for the provider while other runs' load held it (``shares.py``)."""


@dataclass(frozen=True)
class Reservation:
    """An admitted call: the ``max_tokens`` it is forwarded with and the tokens it holds until settled."""

    max_tokens: int
    held: int


@dataclass(frozen=True)
class Refusal:
    """Why a call is not admitted; ``final`` when no retry can succeed (a budget is spent)."""

    message: str
    final: bool


class Ledger:
    """Admits, reserves and settles the inference calls of one run against its budgets; thread-safe."""

    def __init__(self, budgets: InferenceBudgets) -> None:
        self.budgets = budgets
        self.run = Spending()
        self._lock = threading.Lock()

    def reserve(self, attempt: Spending, *, prompt_bound: int, max_tokens: int) -> Reservation | Refusal:
        """Admit a call of ``attempt`` whose prompt has at most ``prompt_bound`` tokens and which asks for
        ``max_tokens``, or say why not."""
        with self._lock:
            refused = self._call_refusal(attempt)
            if refused is not None:
                return refused
            room, settled_room, what = self._token_room(attempt)
            granted = int(min(max_tokens, room - prompt_bound))
            if granted < 1:
                final = settled_room - prompt_bound < 1
                return Refusal(f"budget {'spent' if final else 'reserved by calls in flight'}: {what} leave "
                               f"{max(room, 0)} tokens, this prompt may take up to {prompt_bound}", final)
            held = prompt_bound + granted
            for spending in (attempt, self.run):
                spending.calls += 1
                spending.reserved += held
                spending.in_flight += 1
            return Reservation(max_tokens=granted, held=held)

    def settle(self, attempt: Spending, reservation: Reservation, used: int) -> None:
        """Replace a returned call's reservation with the ``used`` tokens the upstream reported."""
        if used > reservation.held:
            log.warning("inference_usage_above_reservation", used=used, reserved=reservation.held)
        with self._lock:
            for spending in (attempt, self.run):
                spending.reserved -= reservation.held
                spending.tokens += used
                spending.in_flight -= 1

    def cancel(self, attempt: Spending, reservation: Reservation) -> None:
        """Give back an admitted call that never reached the provider: its call, its reservation."""
        with self._lock:
            for spending in (attempt, self.run):
                spending.calls -= 1
                spending.reserved -= reservation.held
                spending.in_flight -= 1

    def others_allowance(self, attempt: Spending, bound_s: float) -> float:
        """How much longer ``attempt``'s calls may wait on other runs' load, of ``bound_s`` in all."""
        with self._lock:
            return max(0.0, bound_s - attempt.waited_on_others_s)

    def waited_on_others(self, attempt: Spending, seconds: float) -> None:
        with self._lock:
            attempt.waited_on_others_s += seconds
            self.run.waited_on_others_s += seconds

    def _call_refusal(self, attempt: Spending) -> Refusal | None:
        budgets = self.budgets
        for limit, spent, what in ((budgets.attempt_calls, attempt.calls, "inference calls of this attempt"),
                                   (budgets.run_calls, self.run.calls, "inference calls of this run")):
            if limit is not None and spent >= limit:
                return Refusal(f"budget spent: {spent} of {limit} {what}", final=True)
        if budgets.attempt_in_flight is not None and attempt.in_flight >= budgets.attempt_in_flight:
            return Refusal(f"{attempt.in_flight} inference calls of this attempt are in flight, the most "
                           "allowed: wait for one to return", final=False)
        return None

    def _token_room(self, attempt: Spending) -> tuple[float, float, str]:
        """Tokens left beside the reservations, tokens left once they settle, and which budget is tightest."""
        limits = list(self._token_limits(attempt))
        if not limits:
            return float("inf"), float("inf"), "no token budget"
        room, limit, spending, what = min(limits, key=lambda entry: entry[0])
        return room, limit - spending.tokens, f"{spending.tokens + spending.reserved} of {limit} {what}"

    def _token_limits(self, attempt: Spending) -> Iterator[tuple[int, int, Spending, str]]:
        budgets = self.budgets
        for limit, spending, what in ((budgets.attempt_tokens, attempt, "inference tokens of this attempt"),
                                      (budgets.run_tokens, self.run, "inference tokens of this run")):
            if limit is not None:
                yield limit - spending.tokens - spending.reserved, limit, spending, what
