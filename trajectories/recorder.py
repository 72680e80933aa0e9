"""Record one evaluation run in the store as it happens: the run, its agent, its problems, every attempt.

Whoever runs agents (a validator's suite runs, and ``miner test`` through the same code) hands each
finished attempt to :meth:`RunRecorder.record` the moment the runner yields it, so a crash loses at most
the attempt in flight. Each attempt is labelled by the structural filter on the way in, and labelled
again (:meth:`RunRecorder.relabel`) once the whole run shows which request text was the agent's static
instructions (``trajectories.filter.decided``); failures are stored like any other attempt.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from types import TracebackType

import structlog

from shoppingbench.problems.models import Problem
from shoppingbench.records import AttemptRecord
from trajectories.filter import FilterConfig, FilterVerdict, label_attempt
from trajectories.store import (
    AgentEntry,
    AttemptKey,
    AttemptWrite,
    ProblemEntry,
    RunEntry,
    TrajectoryStore,
)

log = structlog.get_logger(__name__)


class RunRecorder:
    """Writes one run's attempts to ``store``; safe to call from the runner's worker threads."""

    def __init__(self, store: TrajectoryStore, run: RunEntry, *, agent: AgentEntry,
                 problems: Sequence[Problem], leak_clusters: Mapping[str, str] | None = None,
                 filter_config: FilterConfig | None = None) -> None:
        """``run``: the run as its creator knows it (its problems are registered under its suite; it
        starts now unless it says when). ``leak_clusters`` maps problem ids to the cluster ids the arena
        computed (the store only keeps them: dumps split by them)."""
        self.store = store
        self.run_id = run.id
        self.labels: Counter[str] = Counter()
        self._label_of: dict[str, str] = {}
        self._filter = filter_config or FilterConfig()
        self._lock = threading.Lock()
        store.register_agent(agent)
        clusters = leak_clusters or {}
        store.register_problems(ProblemEntry.of(p, suite=run.suite, leak_cluster=clusters.get(p.id))
                                for p in problems)
        started = run.started_at if run.started_at is not None else time.time()
        store.register_run(run.model_copy(update={"started_at": started}))

    def record(self, attempt: AttemptRecord) -> None:
        """Store ``attempt`` the moment it finished, labelled with what is known of it alone (the run's
        static text is known only once the run is complete: :meth:`relabel` then)."""
        if attempt.run_id != self.run_id:
            raise ValueError(f"attempt of run {attempt.run_id} handed to the recorder of run {self.run_id}")
        verdict = self._label(attempt)
        with self._lock:
            self.store.write_attempt(AttemptWrite(record=attempt, label=verdict))
            self._count(attempt, verdict.label)

    def relabel(self, attempt: AttemptRecord) -> None:
        """Label a stored attempt again, now with its steered requests
        (:meth:`~shoppingbench.records.AttemptRecord.carried_steering`, taken over the whole run)."""
        verdict = self._label(attempt)
        with self._lock:
            self.store.set_label(AttemptKey.of(attempt), verdict)
            self._count(attempt, verdict.label)

    def _label(self, attempt: AttemptRecord) -> FilterVerdict:
        return label_attempt(attempt.proxy_log, attempt.steps, self._filter, query=attempt.query,
                             echoed_seqs=attempt.echoed_calls(), steered=attempt.carried_steering())

    def _count(self, attempt: AttemptRecord, label: str) -> None:
        previous = self._label_of.get(attempt.problem_id)
        if previous is not None:
            self.labels[previous] -= 1
        self._label_of[attempt.problem_id] = label
        self.labels[label] += 1

    def finish(self) -> None:
        self.store.finish_run(self.run_id, time.time())
        log.info("run_recorded", run_id=self.run_id, attempts=sum(self.labels.values()), **self.labels)

    def __enter__(self) -> RunRecorder:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        # An interrupted run keeps what it recorded but stays unfinished, so nobody takes it as complete.
        if exc_type is None:
            self.finish()
