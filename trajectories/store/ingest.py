"""Encoding attempts for the store in bulk, on every core: a pipeline behind ``write_attempts``.

An attempt's row costs three kinds of work. The JSON of its parts (``orjson``, holding the GIL) runs
in the calling thread. Compression and hashing release the GIL, so they run on ``ENCODE_WORKERS``
threads. The echo measure (``shoppingbench.echo``) is pure Python and the largest share: on a write of
more than one batch it runs in ``ECHO_PROCESSES`` worker processes, from the proxy log's JSON
(:func:`~trajectories.store.rows.echoed_in_json`, the same count as on the record), while the calling
thread encodes the next batch and the writer commits the previous one. A write of one batch (the
recorder's attempt at a time) measures in the calling thread: no process is started for it.

Worker processes are started with ``spawn`` (no fork of a threaded process) and only receive JSON bytes
and the shopper's query; they never see the database. As always with ``spawn``, a script that writes
in bulk keeps its work under ``if __name__ == "__main__":``. A daemonic process (a
``multiprocessing.Pool`` worker) cannot start processes and measures in its own thread.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any

from shoppingbench.echo import echoed_calls
from trajectories.store.entries import AttemptWrite
from trajectories.store.rows import AttemptParts, attempt_parts, attempt_row, echoed_in_json

ENCODE_WORKERS = 2
"""Compression and hashing release the GIL: on two threads they run beside the Python work."""
ENCODE_CHUNK = 20
"""Attempts per compression task. One task per attempt cost 5-15% more CPU (queue hand-offs, thread
wake-ups); one task per worker leaves a worker idle whenever its share of a batch ends early."""
ECHO_PROCESSES = 2
"""Processes measuring echoes on a bulk write: the machines this runs on have two cores or more."""

Store = Callable[[list[AttemptWrite], list[dict[str, Any]]], None]


def batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _may_start_processes() -> bool:
    """A daemonic process (a ``multiprocessing.Pool`` worker) may not start processes: it measures
    in its own thread."""
    return not multiprocessing.current_process().daemon


def _echo_counts(items: list[tuple[bytes, str]]) -> list[int]:
    """The echo measure of each (proxy log JSON, query): runs in a worker process."""
    return [echoed_in_json(proxy_log, query) for proxy_log, query in items]


def _rows(writes: list[AttemptWrite], parts: list[AttemptParts], echoed: list[int]) -> list[dict[str, Any]]:
    return [attempt_row(w, p, e) for w, p, e in zip(writes, parts, echoed, strict=True)]


@dataclass
class _Encoding:
    """One batch on its way: its JSON done, its echo counts and rows being computed."""

    writes: list[AttemptWrite]
    parts: list[AttemptParts]
    echoed: list[Future[list[int]]]


class BulkEncoder:
    """Encodes batches and hands each, in order, to ``store`` on a writer thread (one batch committing
    while the next ones are encoded)."""

    def __init__(self, store: Store, stack: ExitStack) -> None:
        self._store = store
        self._stack = stack
        self._threads = stack.enter_context(ThreadPoolExecutor(ENCODE_WORKERS))
        self._writer = stack.enter_context(ThreadPoolExecutor(1))
        self._processes: Executor | None = None
        self._writing: Future[None] | None = None

    def _echo_pool(self) -> Executor:
        if self._processes is None:
            self._processes = self._stack.enter_context(
                ProcessPoolExecutor(ECHO_PROCESSES, mp_context=multiprocessing.get_context("spawn"))
            )
        return self._processes

    def start(self, writes: list[AttemptWrite], *, in_processes: bool) -> _Encoding:
        parts = [attempt_parts(w.record) for w in writes]
        if not in_processes:
            done: Future[list[int]] = Future()
            done.set_result([len(echoed_calls(w.record.proxy_log, w.record.query)) for w in writes])
            return _Encoding(writes, parts, [done])
        items = [(p.proxy_log, w.record.query) for w, p in zip(writes, parts, strict=True)]
        share = -(-len(items) // ECHO_PROCESSES)
        pool = self._echo_pool()
        return _Encoding(writes, parts, [pool.submit(_echo_counts, chunk) for chunk in batches(items, share)])

    def finish(self, encoding: _Encoding) -> None:
        """Compress the batch on the threads, then queue it for the writer after the one before."""
        echoed = list(chain.from_iterable(f.result() for f in encoding.echoed))
        tasks = [
            self._threads.submit(
                _rows,
                encoding.writes[i : i + ENCODE_CHUNK],
                encoding.parts[i : i + ENCODE_CHUNK],
                echoed[i : i + ENCODE_CHUNK],
            )
            for i in range(0, len(encoding.writes), ENCODE_CHUNK)
        ]
        rows = [row for task in tasks for row in task.result()]
        self.wait()
        self._writing = self._writer.submit(self._store, encoding.writes, rows)

    def wait(self) -> None:
        """Wait for the batch being written; raises what the writer raised."""
        if self._writing is not None:
            writing, self._writing = self._writing, None
            writing.result()


def write_batches(store: Store, writes: Iterable[AttemptWrite], batch_size: int) -> int:
    """Encode ``writes`` and hand them to ``store`` ``batch_size`` at a time, in order; returns how many.

    Whatever fails (the source, an encoding, the database), the batches wholly received before are
    written (as when each batch was written before the next was read) and the failing one is not.
    """
    written = 0
    with ExitStack() as stack:
        encoder = BulkEncoder(store, stack)
        source = batches(writes, batch_size)
        pending: _Encoding | None = None
        try:
            first = next(source, None)
            if first is None:
                return 0
            try:
                following = next(source, None)
            except BaseException:
                pending = encoder.start(first, in_processes=False)  # received whole: written below
                raise
            pending = encoder.start(first, in_processes=following is not None and _may_start_processes())
            for batch in chain([following] if following is not None else [], source):
                current = encoder.start(batch, in_processes=_may_start_processes())
                # Not pending while it is finished: a batch whose write failed is not finished again.
                done, pending = pending, None
                encoder.finish(done)
                written += len(done.writes)
                pending = current
        finally:
            # Even when the source or an encoding failed: the batch received before is written.
            if pending is not None:
                encoder.finish(pending)
                written += len(pending.writes)
            encoder.wait()
    return written
