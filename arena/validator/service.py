"""The validator's work loop as one explicit step, ``Validator.tick()``.

Everything it decides is in the race engine's event log, the exposure ledger and the trajectory store,
so a validator killed anywhere and restarted over the same databases owes exactly the work it had not
recorded: qualifying and race runs without a result event, and within a run the attempts not stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import structlog
from bittensor import Wallet
from pydantic import BaseModel, ConfigDict
from sqlalchemy import Engine

from arena.chain import Chain, ChainError, Metagraph
from arena.judge import FinalScore, final_score
from arena.race import RaceEngine, race_slot
from arena.race.events import RaceStarted
from arena.race.state import Submission
from arena.submissions.store import FileStore
from arena.suites import ExposureLedger, LeakClusters, SuiteRotation, exposures
from arena.validator.epochs import WeightsEpochs
from arena.validator.ingest import fed_submissions, ingest_uploads, upload_verdicts
from arena.validator.runs import SuiteRun, run_id_for
from arena.validator.seeds import ChainSeeds
from arena.weights import WeightRules, WeightVector, compute_weights
from shoppingbench.problems.models import Category, Problem
from shoppingbench.sandbox.runner import AgentFile
from trajectories.store import RunKind

log = structlog.get_logger(__name__)


class ValidatorConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    bank_version: str
    qualifying_per_category: Mapping[Category, int]
    race_per_category: Mapping[Category, int]
    weight_rules: WeightRules = WeightRules()


class TickReport(BaseModel):
    """What one tick did (also the validator's last-known status for the API)."""

    block: int
    ingested: int = 0
    qualifying_runs: int = 0
    qualified: list[str] = []
    race_started: str | None = None
    race_results: list[str] = []
    weights_set_at: int | None = None


@dataclass
class Validator:
    """One validator: chain and wallet, race engine, ledger, gate verdicts, stored files, suite runner."""

    chain: Chain
    wallet: Wallet
    race: RaceEngine
    ledger: ExposureLedger
    arena_db: Engine
    files: FileStore
    runs: SuiteRun
    bank: Sequence[Problem]
    clusters: LeakClusters
    rotation: SuiteRotation
    seeds: ChainSeeds
    config: ValidatorConfig
    metagraph: Metagraph | None = field(default=None, init=False)
    last_weights: WeightVector | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._by_id = {p.id: p for p in self.bank}
        self._fed_at = fed_submissions(self.race.store.load())
        self._weights_epochs = WeightsEpochs(self.arena_db, self.hotkey, self.chain.netuid)
        self._weights_epoch = self._weights_epochs.last()
        self.qualifying_suite = self.rotation.draw_qualifying_suite(self.config.bank_version,
                                                                    self.config.qualifying_per_category)

    @property
    def hotkey(self) -> str:
        return str(self.wallet.hotkey.ss58_address)

    def tick(self) -> TickReport:
        """One pass: sync, ingest, qualify, race, weights. Safe to repeat and to interrupt anywhere."""
        self.metagraph = self.chain.metagraph()
        report = TickReport(block=self.metagraph.block)
        report.ingested = ingest_uploads(upload_verdicts(self.arena_db), self.race, self._fed_at)
        for submission in self.race.pending_qualifying():
            score = self._score(submission, "qualifying", self.qualifying_suite)
            outcome = self.race.record_qualifying(submission.submission_id, score.score)
            report.qualifying_runs += 1
            if outcome.qualified:
                report.qualified.append(submission.submission_id)
        self.race.settle()
        report.race_started = self._start_race_if_due()
        running = self.race.state.running
        if running is not None:
            self._expose_race(running.race_id, running.suite_ids)
            suite = [self._problem(pid) for pid in running.suite_ids]
            for submission_id in self.race.pending_race_runs():
                result = self._score(self.race.state.submissions[submission_id], "race", suite)
                self.race.record_race_result(submission_id, result.score, result.outcomes)
                report.race_results.append(submission_id)
        report.weights_set_at = self._set_weights_each_tempo(self.metagraph)
        log.info("validator_tick", **report.model_dump())
        return report

    def _problem(self, problem_id: str) -> Problem:
        try:
            return self._by_id[problem_id]
        except KeyError:
            raise RuntimeError(f"the running race uses problem {problem_id}, which is not in this "
                               "validator's bank: start it with the bank the race was drawn from") from None

    def _start_race_if_due(self) -> str | None:
        day = self.race.race_due()
        if day is None:
            return None
        seed = self.seeds.seed_at(race_slot(day, self.race.rules.race_time))
        if seed is None:  # no final block has reached the slot yet: the next tick asks again
            return None
        suite = self.rotation.draw_race_suite(seed, self.config.race_per_category, self.ledger.exposed_ids())
        started = self.race.start_race(seed, [p.id for p in suite])
        if not isinstance(started, RaceStarted):
            return None
        self._expose_race(started.race_id, started.suite_ids)
        return started.race_id

    def _expose_race(self, race_id: str, suite_ids: Sequence[str]) -> None:
        # Also on resume: a crash between the race's start and this write must not leave its clusters unburnt.
        missing = set(suite_ids) - self.ledger.exposed_ids()
        if missing:
            self.ledger.record(exposures(sorted(missing), "race", race_id, self.race.clock.now()))

    def _score(self, submission: Submission, kind: RunKind, suite: Sequence[Problem]) -> FinalScore:
        path = self.files.path(submission.code_hash)
        if not path.exists():
            # Our gate stores every accepted file before recording it; a missing one is lost storage.
            log.error("agent_file_missing", submission_id=submission.submission_id, path=str(path))
            return final_score(0.0, [])
        ids = [p.id for p in suite]
        if kind == "qualifying":
            self.ledger.record(exposures(ids, "qualifying", submission.submission_id, self.race.clock.now()))
        running = self.race.state.running
        suite_name = (f"race-{running.race_id}" if kind == "race" and running is not None
                      else f"qualifying-{self.config.bank_version}")
        return self.runs.score(
            kind=kind, run_id=run_id_for(kind, submission.submission_id, ids), suite_name=suite_name,
            agent=AgentFile.read(path), hotkey=submission.hotkey,
            submitted_at=submission.submitted_at.timestamp(), suite=suite)

    def _set_weights_each_tempo(self, metagraph: Metagraph) -> int | None:
        epoch = metagraph.block // self.chain.tempo()
        if epoch == self._weights_epoch:
            return None
        finishers, winner = self.race.weights_input()
        vector = compute_weights(finishers, winner, metagraph.hotkeys, self.config.weight_rules)
        try:
            block = self.chain.set_weights(self.wallet, vector)
        except ChainError as exc:  # e.g. the rate limit: the next tick tries again
            log.warning("weights_not_set", error=str(exc), winner=winner)
            return None
        self._weights_epochs.record(epoch, block)
        self._weights_epoch = epoch
        self.last_weights = vector
        log.info("weights_set", block=block, winner=winner, uids=list(vector.uids),
                 weights=list(vector.weights))
        return block
