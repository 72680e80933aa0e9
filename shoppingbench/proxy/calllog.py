"""The verified call log: which attempt a request belongs to, and every call it made.

Attribution never trusts the request: a sandbox slot reaches the proxy only through its own listening
socket (its *channel*), and the runner tells the registry which attempt is running on that channel.
A request on a channel with no running attempt is refused. Only the proxy process writes here.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import structlog

from shoppingbench.proxy.budgets import Spending
from shoppingbench.records import ProxyCall

log = structlog.get_logger(__name__)

LATE_CALL_WAIT_S = 2.0
"""How long closing an attempt waits for calls still in flight, so the log holds every call made."""


@dataclass
class AttemptLog:
    """The calls of one attempt, in arrival order. Thread-safe: the proxy records from many threads."""

    run_id: str
    problem_id: str
    channel: str
    calls: list[ProxyCall] = field(default_factory=list)
    spending: Spending = field(default_factory=Spending)
    _next_seq: int = 0
    _in_flight: int = 0
    _closed: bool = False
    """No new calls: the attempt ended."""
    _sealed: bool = False
    """Its log was handed out: a call still finishing now is dropped (its sandbox was killed meanwhile)."""
    _lock: threading.Condition = field(default_factory=threading.Condition)

    def open_call(self) -> int | None:
        """Reserve the next sequence number for a request that just arrived; None once closed."""
        with self._lock:
            if self._closed:
                return None
            seq = self._next_seq
            self._next_seq += 1
            self._in_flight += 1
            return seq

    def finish_call(self, call: ProxyCall) -> None:
        with self._lock:
            self._in_flight -= 1
            if self._sealed:
                log.warning("proxy_late_call_dropped", run_id=self.run_id, problem_id=self.problem_id,
                            path=call.path, seq=call.seq)
            else:
                self.calls.append(call)
            self._lock.notify_all()

    def close(self, wait_s: float = LATE_CALL_WAIT_S) -> list[ProxyCall]:
        """Stop accepting calls, wait (bounded) for the ones in flight, and return the log by ``seq``."""
        deadline = time.monotonic() + wait_s
        with self._lock:
            self._closed = True
            while self._in_flight and (remaining := deadline - time.monotonic()) > 0:
                self._lock.wait(remaining)
            self._sealed = True
            return sorted(self.calls, key=lambda c: c.seq)


class ChannelRegistry:
    """Which attempt is running on which channel right now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: dict[str, AttemptLog] = {}

    def begin(self, channel: str, run_id: str, problem_id: str) -> AttemptLog:
        attempt = AttemptLog(run_id=run_id, problem_id=problem_id, channel=channel)
        with self._lock:
            previous = self._current.get(channel)
            if previous is not None:
                raise RuntimeError(f"channel {channel} is still serving problem {previous.problem_id}")
            self._current[channel] = attempt
        return attempt

    def end(self, channel: str) -> list[ProxyCall]:
        """Detach the channel's attempt (later requests on it are refused) and return its calls."""
        with self._lock:
            attempt = self._current.pop(channel, None)
        return attempt.close() if attempt is not None else []

    def current(self, channel: str) -> AttemptLog | None:
        with self._lock:
            return self._current.get(channel)
