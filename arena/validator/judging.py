"""Verdicts asked concurrently, stored in order of arrival from the run's own thread.

A judge is a remote model whose calls take seconds: asked one attempt after another, it caps a run at
a few thousand attempts a day whatever the sandbox holds (``benchmarks.capacity``). The verdicts are
independent of each other, so they are asked on a small thread pool; the store is written only from the
thread that runs the suite (SQLite wants one writer), each verdict as soon as it is back.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

from arena.judge import Judge, JudgeInput, JudgeVerdict
from shoppingbench.records import AttemptRecord

Keep = Callable[[AttemptRecord, JudgeVerdict], None]
"""Stores one verdict (with its record) and notes it in the run's progress."""


class ConcurrentJudging:
    """``with ConcurrentJudging(judge, keep, concurrency) as judging: judging.ask(record)``; every verdict
    asked is kept by the time the block ends. A judge that raises (a refused API key) raises from the
    ``ask`` or the block's end that collects it; the verdicts not yet asked are dropped."""

    def __init__(self, judge: Judge, keep: Keep, concurrency: int) -> None:
        self._judge = judge
        self._keep = keep
        self._pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="judge")
        self._pending: dict[str, tuple[AttemptRecord, Future[JudgeVerdict]]] = {}

    def __enter__(self) -> ConcurrentJudging:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        try:
            if exc_type is None:
                self._collect(wait=True)
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def ask(self, record: AttemptRecord) -> None:
        """Ask the judge about ``record`` on the pool, and keep the verdicts already back."""
        self._pending[record.problem_id] = (record, self._pool.submit(self._judge.judge,
                                                                       JudgeInput.from_record(record)))
        self._collect(wait=False)

    def _collect(self, *, wait: bool) -> None:
        for problem_id, (record, future) in list(self._pending.items()):
            if wait or future.done():
                verdict = future.result()
                del self._pending[problem_id]
                self._keep(record, verdict)
