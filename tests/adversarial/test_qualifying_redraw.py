"""Qualifying redraw: a hostile miner grinds its qualifying draw. Each draw is public chain data (the hash of
the first final block after the commitment), so once its file failed qualifying (or its draw looked hard)
the miner commits the same file hash again, uploads it through the real gate and waits for another draw.
A submission's qualifying problems come from its hotkey's first commitment of that file hash: the
re-committed file is run on the problems it already had, while a different file gets its own draw."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bittensor import Wallet, http_auth

from arena.chain import LocalChain
from arena.race import ManualClock
from arena.race.state import Submission
from arena.settings import ArenaSettings
from arena.submissions import SubmissionGate, UploadBody
from arena.submissions.models import SUBMISSIONS_PATH
from arena.suites.public import FixedSource
from arena.validator import Validator, open_validator, upload_verdicts
from arena.validator.ingest import fed_submissions, ingest_uploads
from shoppingbench.doubles.demo_miners import BAIT_PARSER
from shoppingbench.generator import ProblemGenerator
from shoppingbench.problems.models import Problem
from shoppingbench.records import AttemptRecord
from shoppingbench.sandbox.runner import AgentFile
from tests.arena.validator.test_validator import TUNED_REACT
from tests.chain_support import make_wallet, register
from trajectories.store import TrajectoryStore

START = datetime(2026, 11, 19, 9, 0, tzinfo=UTC)


def _never_run(agent: AgentFile, problems: Sequence[Problem], run_id: str) -> Iterator[AttemptRecord]:
    raise AssertionError("this attack is about which problems are drawn: nothing runs")


@dataclass
class Grinder:
    """One validator with its real upload gate, and one miner committing and uploading to it."""

    clock: ManualClock
    chain: LocalChain
    miner: Wallet
    validator: Validator
    gate: SubmissionGate
    signed: int = 0

    def commit_and_upload(self, source: bytes) -> Submission:
        """Commit ``source``'s hash, upload it through the gate, ingest the verdict and let the seed block
        become final; the race engine's new submission."""
        self.chain.commit(self.miner, hashlib.sha256(source).hexdigest())
        self.signed += 1
        body = UploadBody.of("agent.py", source).model_dump_json().encode()
        headers = http_auth.sign(self.miner, method="POST", path=SUBMISSIONS_PATH, body=body,
                                 receiver_ss58=self.validator.hotkey,
                                 nonce_ns=int(self.clock.now().timestamp() * 1e9) + self.signed * 1_000)
        _, new = self.gate.receive(headers, body)
        assert new
        before = set(self.validator.race.state.submissions)
        fed = fed_submissions(self.validator.race.store.load())
        assert ingest_uploads(upload_verdicts(self.validator.arena_db), self.validator.race, fed) == 1
        (sid,) = set(self.validator.race.state.submissions) - before
        self.clock.advance(timedelta(seconds=12))  # the block after the commitment is final
        return self.validator.race.state.submissions[sid]

    def draw(self, submission: Submission) -> list[str]:
        suite = self.validator.qualifying_suite(submission)
        assert suite is not None
        return [p.id for p in suite]

    def fail_qualifying(self, submission: Submission) -> None:
        self.validator.race.record_qualifying(submission.submission_id, 0.0)
        self.clock.advance(self.validator.race.rules.cooldown + timedelta(minutes=1))


@contextmanager
def grinder(root: Path, generator: ProblemGenerator) -> Iterator[Grinder]:
    clock = ManualClock(START)
    chain = LocalChain(root / "chain.sqlite3", clock=clock, tempo=100)
    names = ("owner", "miner", "validator")
    wallets = {name: make_wallet(root / "wallets", name, seed=name) for name in names}
    for name, wallet in wallets.items():
        register(chain, wallet, validator_permit=name == "validator")
    settings = ArenaSettings(home=root / "validator", qualifying_suite_per_category=3,
                             race_suite_per_category=1)
    settings.home.mkdir(parents=True)
    store = TrajectoryStore.open(f"sqlite:///{root / 'trajectories.sqlite3'}")
    validator = open_validator(settings=settings, chain=chain, wallet=wallets["validator"], clock=clock,
                               sources=FixedSource(generator), run_agent=_never_run, store=store)
    gate = SubmissionGate(chain=chain, validator_hotkey=validator.hotkey, engine=validator.arena_db,
                          files_dir=validator.files.root, rules=validator.race.rules, clock=clock)
    try:
        yield Grinder(clock=clock, chain=chain, miner=wallets["miner"], validator=validator, gate=gate)
    finally:
        store.close()
        validator.arena_db.dispose()
        chain.close()


def test_recommitting_the_same_file_draws_the_same_qualifying_problems(
        tmp_path: Path, generator: ProblemGenerator) -> None:
    with grinder(tmp_path, generator) as arena:
        first = arena.commit_and_upload(TUNED_REACT)
        drawn = arena.draw(first)
        arena.fail_qualifying(first)
        for _ in range(3):  # each re-commitment lands in a later block, with another block after it
            again = arena.commit_and_upload(TUNED_REACT)
            assert again.submission_id != first.submission_id and again.status == "qualifying"
            assert arena.draw(again) == drawn
            arena.fail_qualifying(again)


def test_another_file_gets_its_own_draw(tmp_path: Path, generator: ProblemGenerator) -> None:
    with grinder(tmp_path, generator) as arena:
        first = arena.commit_and_upload(TUNED_REACT)
        drawn = arena.draw(first)
        arena.fail_qualifying(first)
        other = arena.commit_and_upload(BAIT_PARSER.encode())
        assert arena.draw(other) != drawn
        arena.fail_qualifying(other)
        back = arena.commit_and_upload(TUNED_REACT)  # going back to the first file: its first draw again
        assert arena.draw(back) == drawn
