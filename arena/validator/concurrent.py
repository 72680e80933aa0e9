"""Runs computed on a few threads at once, their outcomes taken back in the order they were asked for.

A validator tick owes several runs (challengers' qualifying runs with the defending winner's run on the
same problems, race entrants' runs). Computing them one after another leaves most sandbox slots idle
in each run's last wave; computing ``size`` at once over one shared slot budget
(``shoppingbench.sandbox.budget``) lets a finishing run's slots go to the next. The tick's own thread
still records every outcome, in the order the runs were asked for, so the race log does not depend on
which run finished first. With ``size`` 1 nothing runs ahead: each run is computed when its outcome is
taken, exactly as a sequential loop would.

Runs sharing a run id (the defending winner's run on several challengers' problems) are computed one at
a time: the same run must never be resumed by two threads at once. A run asked for ``after`` another
(the defending winner's re-run on a challenger's problems, after the challenger's run) starts only once
that one is over, so the two never share the inference provider or the sandboxes: a run measured against
another is never computed beside it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Pending(Generic[T]):
    """A run asked for: its outcome (or exception) once :meth:`result` is called."""

    def __init__(self, future: Future[T] | None, compute: Callable[[], T]) -> None:
        self._future = future
        self._compute = compute
        self._lock = threading.Lock()

    def result(self) -> T:
        if self._future is None:  # size 1: computed now, in the caller's thread, once
            with self._lock:
                if self._future is None:
                    done: Future[T] = Future()
                    try:
                        done.set_result(self._compute())
                    except BaseException as exc:
                        done.set_exception(exc)
                    self._future = done
        return self._future.result()

    def wait(self) -> None:
        """Until the run is over, whatever its outcome (computing it now at size 1)."""
        with contextlib.suppress(Exception):  # its outcome is for whoever takes it; only its end matters
            self.result()


class RunPool:
    """Computes up to ``size`` runs at once; ``submit`` order is the order outcomes are taken in."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"concurrent runs must be at least 1, not {size}")
        self.size = size
        self._executor: ThreadPoolExecutor | None = None
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def __enter__(self) -> RunPool:
        if self.size > 1:
            self._executor = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="validator-run")
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._executor is not None:
            # On an error (or a kill of the tick) runs not started yet are dropped; those running finish,
            # their attempts stored, and the next tick resumes them.
            self._executor.shutdown(wait=True, cancel_futures=exc_type is not None)
            self._executor = None

    def submit(self, run_id: str, compute: Callable[[], T], *, after: Pending[Any] | None = None
               ) -> Pending[T]:
        """Ask for the run ``run_id`` that ``compute`` scores; with ``after`` (a run asked for earlier of
        this pool), not before that run is over."""
        def serialised() -> T:
            if after is not None:
                # Asked for earlier, so taken by a thread earlier (first in, first out): no deadlock.
                after.wait()
            with self._lock_of(run_id):
                return compute()
        if self._executor is None:
            return Pending(None, serialised)
        return Pending(self._executor.submit(serialised), serialised)

    def _lock_of(self, run_id: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(run_id, threading.Lock())
