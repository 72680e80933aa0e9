"""Encoding attempts for the store in bulk, on every core: a pipeline behind ``write_attempts``.

An attempt's row costs three kinds of work. The JSON of its parts (``orjson``, holding the GIL) runs
in the calling thread. Compression and hashing release the GIL, so they run on ``ENCODE_WORKERS``
threads. The echo measure (``shoppingbench.echo``, pure Python) would cost more than both together, so
it is not taken here when the record carries it: the harness's grader measures every record it builds
(``AttemptRecord.measure_echoes``), on the runner's thread while the sandbox waits on the model, and the
store takes that count as it is (:func:`carried_count`). Only records without one (read from JSON: a
file, a dump, an older store; or changed since they were measured) are measured here: on a write of
more than one batch in ``ECHO_PROCESSES`` worker processes, from the proxy log's JSON
(:func:`~trajectories.store.rows.echoed_in_json`, the same count as on the record), while the calling
thread encodes the next batch and the writer commits the previous one. A write of one batch (the
recorder's attempt at a time) measures in the calling thread: no process is started for it, nor for a
bulk write whose records all carry their count.

Worker processes are started with ``spawn`` (no fork of a threaded process) and only receive JSON bytes
and the shopper's query; they never see the database. As always with ``spawn``, a script that writes
in bulk keeps its work under ``if __name__ == "__main__":``. A daemonic process (a
``multiprocessing.Pool`` worker) cannot start processes and measures in its own thread. A worker whose
writer was killed (it could not shut its pool down) ends itself (:func:`_end_with_parent`) instead of
waiting for work forever.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any

from shoppingbench.echo import echoed_calls
from shoppingbench.records import AttemptRecord
from trajectories.store.entries import AttemptWrite
from trajectories.store.rows import AttemptParts, attempt_parts, attempt_row, echoed_in_json

ENCODE_WORKERS = 2
"""Compression and hashing release the GIL: on two threads they run beside the Python work."""
ENCODE_CHUNK = 20
"""Attempts per compression task. One task per attempt cost 5-15% more CPU (queue hand-offs, thread
wake-ups); one task per worker leaves a worker idle whenever its share of a batch ends early."""
ECHO_PROCESSES = 2
"""Processes measuring echoes on a bulk write: the machines this runs on have two cores or more."""
PARENT_CHECK_S = 1.0
"""How often an echo process looks whether the process that started it is still there."""

Store = Callable[[list[AttemptWrite], list[dict[str, Any]]], None]


def batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _may_start_processes() -> bool:
    """A daemonic process (a ``multiprocessing.Pool`` worker) may not start processes: it measures
    in its own thread."""
    return not multiprocessing.current_process().daemon


def _end_with_parent(parent: int) -> None:
    """Runs first in each echo process: ends it once ``parent``, the process that started it, is gone.
    A killed writer cannot shut its pool down, and a pool worker holds its own end of the queue it
    reads, so it would otherwise wait for work forever, an orphan per kill."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(0)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


def _echo_counts(items: list[tuple[bytes, str]]) -> list[int]:
    """The echo measure of each (proxy log JSON, query): runs in a worker process."""
    return [echoed_in_json(proxy_log, query) for proxy_log, query in items]


def carried_count(record: AttemptRecord) -> int | None:
    """The echo count the record carries (``AttemptRecord.measure_echoes``, taken when the runner built
    it), or ``None``: a record read from JSON carries none, and one whose query or proxy log changed since
    carries none that still fits."""
    carried = record.carried_echoes()
    return None if carried is None else len(carried)


def _rows(writes: list[AttemptWrite], parts: list[AttemptParts], echoed: list[int]) -> list[dict[str, Any]]:
    return [attempt_row(w, p, e) for w, p, e in zip(writes, parts, echoed, strict=True)]


def _counts(encoding: _Encoding) -> list[int]:
    """The batch's echo counts: those its records carry, and the measured ones in their places."""
    counts = list(encoding.echoed)
    for indexes, measuring in encoding.measuring:
        for i, count in zip(indexes, measuring.result(), strict=True):
            counts[i] = count
    known = [c for c in counts if c is not None]
    if len(known) != len(counts):
        raise RuntimeError("an attempt of the batch was neither carrying nor given its echo count")
    return known


@dataclass
class _Encoding:
    """One batch on its way: its JSON done, its echo counts (those the records carry) and the others
    being measured (``measuring``: the batch's indexes and their counts to come)."""

    writes: list[AttemptWrite]
    parts: list[AttemptParts]
    echoed: list[int | None]
    measuring: list[tuple[list[int], Future[list[int]]]]


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
                ProcessPoolExecutor(ECHO_PROCESSES, mp_context=multiprocessing.get_context("spawn"),
                                    initializer=_end_with_parent, initargs=(os.getpid(),))
            )
        return self._processes

    def start(self, writes: list[AttemptWrite], *, in_processes: bool) -> _Encoding:
        parts = [attempt_parts(w.record) for w in writes]
        counts = [carried_count(w.record) for w in writes]
        missing = [i for i, count in enumerate(counts) if count is None]
        if not missing:  # every record carries its measure (the runner's): nothing to measure here
            return _Encoding(writes, parts, counts, [])
        if not in_processes:
            done: Future[list[int]] = Future()
            done.set_result([len(echoed_calls(writes[i].record.proxy_log, writes[i].record.query))
                             for i in missing])
            return _Encoding(writes, parts, counts, [(missing, done)])
        share = -(-len(missing) // ECHO_PROCESSES)
        pool = self._echo_pool()
        return _Encoding(writes, parts, counts, [
            (chunk, pool.submit(_echo_counts, [(parts[i].proxy_log, writes[i].record.query) for i in chunk]))
            for chunk in batches(missing, share)])

    def finish(self, encoding: _Encoding) -> None:
        """Compress the batch on the threads and hand it to the writer once the batch before is written.
        The writer waits for the compression, not the calling thread, which goes on with the next
        batch's JSON meanwhile (it waited for the compression before: a third less throughput). A batch
        whose compression or write failed raises (here or at :meth:`wait`) before a later one is handed
        over."""
        echoed = _counts(encoding)
        tasks = [
            self._threads.submit(
                _rows,
                encoding.writes[i : i + ENCODE_CHUNK],
                encoding.parts[i : i + ENCODE_CHUNK],
                echoed[i : i + ENCODE_CHUNK],
            )
            for i in range(0, len(encoding.writes), ENCODE_CHUNK)
        ]
        self.wait()
        self._writing = self._writer.submit(self._store_when_encoded, encoding.writes, tasks)

    def _store_when_encoded(self, writes: list[AttemptWrite], tasks: list[Future[list[dict[str, Any]]]],
                            ) -> None:
        """The writer's job for one batch: its rows once compressed, then the transaction."""
        rows = [row for task in tasks for row in task.result()]
        self._store(writes, rows)

    def wait(self) -> None:
        """Wait for the batch being written; raises what its compression or the writer raised."""
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
