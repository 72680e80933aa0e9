"""The behaviour side of the copy rule at the validator's edge: re-run the earlier submissions closest in
code to a challenger on the challenger's qualifying problems and refuse the challenger as a copy of the
first it acts as (the decision is ``arena.submissions.behaviour``'s, a pure function of the traces).

An original is re-run as the reigning winner is on challengers' problems: through the validator's own
suite run (sandbox, verified proxy, grader, judge), its attempts stored in the trajectory store under a
run named by the original alone (:func:`behaviour_run_id`), so each (original, problem) runs once, and
a restarted validator, or a second evaluation of the same draw, runs only the problems it has no attempt
of. An attempt the inference provider failed is retried as any qualifying attempt; one still failed
says nothing about behaviour and is left out of the comparison.

A challenger found a copy is recorded as the code rule records one: the gate's verdicts of the file
marked ``copy`` (its re-upload and pre-check answer so) and a ``SubmissionCopied`` event in the race
log, carrying ``CopyOf`` with ``basis`` ``behaviour`` and the original's submission id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import structlog
from sqlalchemy import Engine

from arena.race import RaceEngine
from arena.race.events import CopyOf
from arena.race.rules import chain_order
from arena.race.state import Submission
from arena.submissions.behaviour import behaviour_copy, behaviour_suspects
from arena.submissions.copies import ProblemTrace, bundled_agents, file_features, public_union, trace_of
from arena.submissions.store import FileStore, VerdictStore
from arena.validator.runs import SuiteRun, challenger_run, qualifying_suite_name
from shoppingbench.problems.models import Problem
from shoppingbench.sandbox.runner import AgentFile
from trajectories.store import AttemptKey, RunEntry

log = structlog.get_logger(__name__)

_NEVER_ORIGINALS = ("rejected", "copy")
"""Statuses of submissions that are nobody's original."""


def behaviour_run_id(original: Submission) -> str:
    """The run holding ``original``'s attempts on challengers' qualifying problems: named by the original
    only, so each (original, problem) is run once, whichever challengers and restarts meet it."""
    return f"behaviour-{original.submission_id}"


@dataclass
class BehaviourCheck:
    """Runs originals through the validator's suite run (``runs``: the path of its qualifying runs) and
    reads every attempt back from its trajectory store."""

    files: FileStore
    runs: SuiteRun

    def copy_of(self, race: RaceEngine, challenger: Submission, suite: Sequence[Problem]) -> CopyOf | None:
        """The original ``challenger`` acts as on its qualifying problems ``suite`` (its run there being
        stored), each suspect run on the problems it has no attempt of; ``None`` when it acts as none."""
        suspects = self.suspects(race, challenger)
        if not suspects:
            return None
        run_id = challenger_run(challenger.submission_id, [p.id for p in suite]).id
        later = self._traces(run_id, challenger.code_hash, suite)
        originals = [(CopyOf(hotkey=s.hotkey, code_hash=s.code_hash, commitment_block=s.commitment_block or 0,
                             similarity=0.0, basis="behaviour", submission_id=s.submission_id),
                      self.original_traces(s, challenger, suite)) for s in suspects]
        return behaviour_copy(later, originals)

    def suspects(self, race: RaceEngine, challenger: Submission) -> list[Submission]:
        """Other hotkeys' submissions committed before ``challenger`` that may be its original, the closest
        in code (``behaviour_suspects``), their files still stored."""
        mine = file_features(challenger.code_hash, self.files.path)
        if mine is None or challenger.commitment_block is None:
            return []
        earlier = sorted((s for s in race.state.submissions.values()
                          if s.hotkey != challenger.hotkey and s.status not in _NEVER_ORIGINALS
                          and s.commitment_block is not None and chain_order(s) < chain_order(challenger)),
                         key=chain_order)
        featured = [(s, f) for s in earlier if (f := file_features(s.code_hash, self.files.path)) is not None]
        return behaviour_suspects(mine, featured, public_union(bundled_agents()))

    def original_traces(self, original: Submission, challenger: Submission,
                        suite: Sequence[Problem]) -> list[ProblemTrace]:
        """``original``'s traces on ``challenger``'s qualifying problems ``suite``, running those it has no
        attempt of; ``RetriesPending`` while attempts the provider failed await their retries."""
        run = RunEntry(id=behaviour_run_id(original), kind="qualifying", submission_id=original.submission_id,
                       role="original", suite=qualifying_suite_name(challenger.submission_id))
        self.runs.judged(run, agent=AgentFile.read(self.files.path(original.code_hash)),
                         hotkey=original.hotkey, submitted_at=original.submitted_at.timestamp(), suite=suite)
        return self._traces(run.id, original.code_hash, suite)

    def _traces(self, run_id: str, code_hash: str, suite: Sequence[Problem]) -> list[ProblemTrace]:
        """The stored attempts' traces, those the provider failed left out (they show no behaviour)."""
        stored = [self.runs.store.get_attempt(AttemptKey(run_id, code_hash, p.id)) for p in suite]
        return [trace_of(a.record) for a in stored if a is not None and not a.record.infra_failed]


def record_copy(arena_db: Engine, race: RaceEngine, challenger: Submission, copy_of: CopyOf) -> None:
    """Record ``challenger`` as a copy of ``copy_of`` where the code rule records its copies: the gate's
    verdicts of the file (``arena_db``) and the race log."""
    verdicts = VerdictStore(arena_db)
    keys = [e.key for e, _ in verdicts.code_entries()
            if (e.hotkey, e.sha256) == (challenger.hotkey, challenger.code_hash)]
    verdicts.mark_copies(dict.fromkeys(keys, copy_of))
    race.submit(challenger.hotkey, challenger.code_hash, commitment_block=challenger.commitment_block,
                copy_of=copy_of)
    log.info("submission_copy_by_behaviour", submission_id=challenger.submission_id,
             original=copy_of.submission_id, similarity=copy_of.similarity)
