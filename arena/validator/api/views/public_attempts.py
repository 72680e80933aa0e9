"""Each submission's public attempts (ids and counts), read from the store once and kept until the race
log or the store grows.

What is public changes only with the race log (a qualifying run scored, a race finished), and what a
public suite holds only with new attempts (all written before the event that makes their suite public);
so an entry keyed by the log's length and the store's latest attempt id stays right until one of them
moves. A page of attempts is then a slice of the ids, read by primary key: no count and no ``OFFSET``
walk per request. (A relabelling of stored attempts shows once either moves.)
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from arena.race import RaceState
from arena.race.state import Submission
from arena.validator.api.views.submission_view import public_scope, submission_runs
from trajectories.store.site_reads import AgentIndex, SiteReads

KEPT_SUBMISSIONS = 256
"""Submissions whose public attempts are kept (least recently asked for goes first)."""


class PublicAttempts:
    """The public attempts of submissions over one store; thread-safe."""

    def __init__(self, reads: SiteReads, *, kept: int = KEPT_SUBMISSIONS) -> None:
        self.reads = reads
        self.kept = kept
        self._entries: OrderedDict[str, tuple[tuple[int, int], AgentIndex]] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, state: RaceState, submission: Submission) -> AgentIndex:
        """``submission``'s public attempts under ``state``, read again only if the log or store grew."""
        key = (state.events, self.reads.latest_attempt_id())
        sid = submission.submission_id
        with self._lock:
            found = self._entries.get(sid)
            if found is not None and found[0] == key:
                self._entries.move_to_end(sid)
                return found[1]
        index = self.reads.agent_index(
            submission.code_hash, public_scope(state), runs=submission_runs(submission)
        )
        with self._lock:
            self._entries[sid] = (key, index)
            self._entries.move_to_end(sid)
            while len(self._entries) > self.kept:
                self._entries.popitem(last=False)
        return index
