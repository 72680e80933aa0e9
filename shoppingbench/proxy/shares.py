"""Fair shares of an inference provider among the runs that forward to it at once.

A validator computes several runs at once (a challenger's qualifying run, race entrants), each behind its
own verified proxy, and they all forward to one provider. A provider serves a limited number of calls at
once; without shares, a run that keeps many long calls in flight would take all of it, and the calls of
the run beside it would wait, time out or be refused by the provider: the other run's agent would be
scored on the hostile run's load.

So the proxies of one process that forward to the same upstream (``InferenceConfig.base_url``) share its
capacity, as their configuration states it: ``concurrency`` calls at once and ``tokens_in_flight`` tokens
held by calls in flight (a call holds its prompt bound plus the ``max_tokens`` it was granted:
``budgets.Reservation.held``). Each *active* run (one whose proxy is up) gets an even share of both:
``max(1, total // active runs)`` (:func:`share_of`). A call is forwarded when its run is under its share
and the provider under its total (:func:`blocked_by`, a pure rule; a run's first call in flight and the
provider's first always fit the token share, so no call is too large to ever go). Otherwise it waits at
the proxy until calls return and make room, for at most ``share_wait_s``:

- a call waiting because its own run has its share in flight waits on its own run's load: past the
  bound it is refused like a call over the attempt's in-flight budget (429, retryable);
- a call waiting while its run is under its share waits on *other* runs' load (a run still over the share
  it had before this one started): that time is not the agent's. Every attempt may wait on others for at
  most ``share_wait_s`` in all; a call that would wait longer is answered a 503 and logged as a provider
  timeout the proxy confirmed itself (*crowded out*: ``inference.CROWDED_OUT``), which makes a failed
  attempt an infrastructure failure, re-run rather than scored (``shoppingbench.grading.outages``).

Waiting for a share never counts toward the provider's timeout: the upstream timeout starts when the call
is forwarded. The proxy's probe (``inference.PROBE_MESSAGES``) takes no share: it must reach the provider
however full the runs keep it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

import structlog

log = structlog.get_logger(__name__)

WaitReason = Literal["own", "others"]
"""Why a call cannot go now: its own run has its share in flight, or other runs hold the provider."""


@dataclass(frozen=True)
class Capacity:
    """What a provider serves at once, as a run's configuration states it; ``None``: no limit."""

    calls: int | None = None
    tokens: int | None = None

    @property
    def limited(self) -> bool:
        return self.calls is not None or self.tokens is not None


@dataclass
class Load:
    """Calls in flight and the tokens they hold (of one run, or of the whole provider)."""

    calls: int = 0
    tokens: int = 0


def share_of(total: int | None, active: int) -> int | None:
    """One run's even share of ``total`` among ``active`` runs: at least 1, ``None`` without a limit."""
    return None if total is None else max(1, total // max(1, active))


def blocked_by(capacity: Capacity, active: int, run: Load, provider: Load, tokens: int) -> WaitReason | None:
    """Why a call holding ``tokens`` of a run with ``run`` in flight, on a provider with ``provider`` in
    flight shared by ``active`` runs, cannot be forwarded now; ``None`` when it can."""
    calls_share, tokens_share = share_of(capacity.calls, active), share_of(capacity.tokens, active)
    if calls_share is not None and run.calls >= calls_share:
        return "own"
    if tokens_share is not None and run.calls and run.tokens + tokens > tokens_share:
        return "own"
    if capacity.calls is not None and provider.calls >= capacity.calls:
        return "others"
    if capacity.tokens is not None and provider.calls and provider.tokens + tokens > capacity.tokens:
        return "others"
    return None


@dataclass(frozen=True)
class Granted:
    """A call may go: release it with :meth:`RunShare.release` once it returned."""

    tokens: int
    waited_s: float
    others_s: float
    """Of ``waited_s``, the time its run was under its share (other runs' load)."""


@dataclass(frozen=True)
class Refused:
    """A call that waited ``waited_s`` (``others_s`` of it on other runs' load) and may not go."""

    reason: WaitReason
    waited_s: float
    others_s: float


@dataclass(eq=False)
class _Waiter:
    loop: asyncio.AbstractEventLoop
    event: asyncio.Event

    def wake(self) -> None:
        with contextlib.suppress(RuntimeError):  # its loop closed meanwhile: nobody waits there any more
            self.loop.call_soon_threadsafe(self.event.set)


class ProviderShares:
    """The runs forwarding to one provider and their calls in flight. Thread-safe: each run's proxy has
    its own thread and event loop."""

    def __init__(self, key: str) -> None:
        self.key = key
        self._lock = threading.Lock()
        self._runs: dict[int, tuple[Capacity, Load]] = {}
        self._next_run = 0
        self._load = Load()
        self._waiters: set[_Waiter] = set()

    def join(self, capacity: Capacity) -> RunShare:
        """A run starts forwarding here with ``capacity`` (the provider's, as its configuration says)."""
        with self._lock:
            number = self._next_run
            self._next_run += 1
            self._runs[number] = (capacity, Load())
            active = len(self._runs)
            self._wake_all()
        log.info("inference_share_joined", provider=self.key, active_runs=active)
        return RunShare(self, number)

    def active(self) -> int:
        with self._lock:
            return len(self._runs)

    def load(self) -> Load:
        with self._lock:
            return Load(self._load.calls, self._load.tokens)

    def _leave(self, run: int) -> None:
        with self._lock:
            entry = self._runs.pop(run, None)
            if entry is not None:
                self._load.calls -= entry[1].calls
                self._load.tokens -= entry[1].tokens
            self._wake_all()

    def _capacity(self) -> Capacity:
        """The tightest capacity the active runs state (runs configured alike state the same)."""
        calls = [c.calls for c, _ in self._runs.values() if c.calls is not None]
        tokens = [c.tokens for c, _ in self._runs.values() if c.tokens is not None]
        return Capacity(min(calls, default=None), min(tokens, default=None))

    def _try(self, run: int, tokens: int) -> WaitReason | None:
        """Under the lock: take the call's place and return ``None``, or say why it must wait."""
        entry = self._runs.get(run)
        if entry is None:  # the run left (its proxy is closing): let the call go, it is the last
            return None
        reason = blocked_by(self._capacity(), len(self._runs), entry[1], self._load, tokens)
        if reason is None:
            for load in (entry[1], self._load):
                load.calls += 1
                load.tokens += tokens
        return reason

    def _release(self, run: int, tokens: int) -> None:
        with self._lock:
            entry = self._runs.get(run)
            if entry is not None:
                for load in (entry[1], self._load):
                    load.calls -= 1
                    load.tokens -= tokens
            self._wake_all()

    def _wake_all(self) -> None:
        for waiter in self._waiters:
            waiter.wake()


@dataclass
class RunShare:
    """One run's membership of a provider's shares: :meth:`acquire` before forwarding a call,
    :meth:`release` after, :meth:`leave` when the run's proxy closes."""

    provider: ProviderShares
    run: int
    _left: bool = field(default=False)

    async def acquire(self, tokens: int, wait_s: float, others_allowance_s: float) -> Granted | Refused:
        """Wait until a call holding ``tokens`` may go: at most ``wait_s`` in all, and at most
        ``others_allowance_s`` of it while other runs' load keeps it (what its attempt has left)."""
        started = last = time.monotonic()
        others = 0.0
        waiter = _Waiter(asyncio.get_running_loop(), asyncio.Event())
        shares = self.provider
        try:
            while True:
                with shares._lock:
                    waiter.event.clear()
                    reason = shares._try(self.run, tokens)
                    if reason is None:
                        now = time.monotonic()
                        return Granted(tokens, now - started, others)
                    shares._waiters.add(waiter)
                remaining = min(started + wait_s, last + others_allowance_s - others) - time.monotonic() \
                    if reason == "others" else started + wait_s - time.monotonic()
                if remaining <= 0:
                    return Refused(reason, time.monotonic() - started, others)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(waiter.event.wait(), timeout=remaining)
                now = time.monotonic()
                if reason == "others":
                    others += now - last
                last = now
        finally:
            with shares._lock:
                shares._waiters.discard(waiter)

    def release(self, granted: Granted) -> None:
        self.provider._release(self.run, granted.tokens)

    def leave(self) -> None:
        if not self._left:
            self._left = True
            self.provider._leave(self.run)


_PROVIDERS: dict[str, ProviderShares] = {}
_PROVIDERS_LOCK = threading.Lock()


def provider_shares(base_url: str) -> ProviderShares:
    """The process's shares of the provider at ``base_url`` (one per URL, made on first use)."""
    key = base_url.rstrip("/")
    with _PROVIDERS_LOCK:
        return _PROVIDERS.setdefault(key, ProviderShares(key))
