"""Qualifying redraw: a hostile miner grinds its qualifying draw. Each draw is public chain data (the hash of
the first final block after the commitment's upload window), so the miner tries to learn it before the file
is fixed and uploaded:
- once its file failed qualifying (or its draw looked hard) it commits the same file hash again, uploads it
  through the real gate and waits for another draw: a submission's qualifying problems come from its
  hotkey's first commitment of that file hash, so the re-committed file runs on the problems it had, while
  a different file gets its own draw;
- it commits, reads the draw as soon as the next block is public, and when the draw does not suit it
  changes a byte and commits again without uploading, uploading only a commitment whose draw it liked: an
  upload is accepted only within the commitment's upload window and the draw is a block after that window,
  so no draw exists while the file can still be uploaded, and an upload after it is refused."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from bittensor import http_auth

from arena.chain import Commitment
from arena.race.state import Submission
from arena.submissions import SubmissionGate, UploadBody
from arena.submissions.models import SUBMISSIONS_PATH, RefusalCode, SubmissionRefused
from arena.suites.public import RaceSeed
from arena.validator import upload_verdicts
from arena.validator.ingest import fed_submissions, ingest_uploads
from shoppingbench.doubles.demo_miners import BAIT_PARSER
from shoppingbench.generator import ProblemGenerator
from shoppingbench.problems.models import Problem
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.sandbox.runner import AgentFile
from tests.adversarial.arena_support import OneValidator, one_validator
from tests.arena.validator.test_validator import TUNED_REACT

CHANGED_BYTE = TUNED_REACT + b"\n# another draw\n"
"""The same agent with one more line: another file hash, so another commitment and another draw."""


def _never_run(agent: AgentFile, problems: Sequence[Problem], run_id: str) -> Iterator[AttemptRecord]:
    raise AssertionError("this attack is about which problems are drawn: nothing runs")


@dataclass
class Grinder:
    """One validator with its real upload gate, and one miner committing and uploading to it."""

    arena: OneValidator
    gate: SubmissionGate
    signed: int = 0

    def commit(self, source: bytes) -> Commitment:
        return self.arena.chain.commit(self.arena.miners["miner"], hashlib.sha256(source).hexdigest())

    def send(self, source: bytes) -> None:
        """Upload ``source`` through the gate now, signed as a miner whose clock is the chain's."""
        self.signed += 1  # the clock stands still: step the nonce by a microsecond
        body = UploadBody.of("agent.py", source).model_dump_json().encode()
        headers = http_auth.sign(self.arena.miners["miner"], method="POST", path=SUBMISSIONS_PATH, body=body,
                                 receiver_ss58=self.arena.validator.hotkey,
                                 nonce_ns=int(self.arena.clock.now().timestamp() * 1e9) + self.signed * 1_000)
        _, new = self.gate.receive(headers, body)
        assert new

    def upload(self, source: bytes) -> Submission:
        """Upload ``source`` now and ingest the verdict: the race engine's new submission."""
        validator = self.arena.validator
        self.send(source)
        before = set(validator.race.state.submissions)
        fed = fed_submissions(validator.race.store.load())
        assert ingest_uploads(upload_verdicts(validator.arena_db), validator.race, fed) == 1
        (sid,) = set(validator.race.state.submissions) - before
        return validator.race.state.submissions[sid]

    def commit_and_upload(self, source: bytes) -> Submission:
        """Commit ``source``'s hash, upload it at once and let its qualifying seed become final."""
        self.commit(source)
        submission = self.upload(source)
        self.arena.past_upload_window()
        return submission

    def next_block(self) -> None:
        self.arena.clock.advance(timedelta(seconds=self.arena.chain.block_seconds()))

    def draw(self, submission: Submission) -> list[str]:
        suite = self.arena.validator.qualifying_suite(submission)
        assert suite is not None
        return [p.id for p in suite]

    def draws_known_since(self, block: int) -> list[list[str]]:
        """Every qualifying draw the miner can compute now from a block made since ``block``: the public
        suite code run on each existing block's hash."""
        chain, suites = self.arena.chain, self.arena.validator.suites
        hotkey = self.arena.hotkey("miner")
        return [[p.id for p in suites.qualifying_suite(hotkey, RaceSeed(block=n, hash=chain.block_hash(n)),
                                                        chain.block_time(n).date())]
                for n in range(block, chain.block() + 1)]

    def fail_qualifying(self, submission: Submission) -> None:
        validator = self.arena.validator
        validator.race.record_qualifying(submission.submission_id, 0.0)
        self.arena.clock.advance(validator.race.rules.cooldown + timedelta(minutes=1))


@contextmanager
def grinder(root: Path, world: SampleWorld, generator: ProblemGenerator) -> Iterator[Grinder]:
    with one_validator(root, world, generator, _never_run, ("miner",)) as arena:
        yield Grinder(arena=arena, gate=arena.gate())


def test_recommitting_the_same_file_draws_the_same_qualifying_problems(
        tmp_path: Path, small_world: SampleWorld, generator: ProblemGenerator) -> None:
    with grinder(tmp_path, small_world, generator) as arena:
        first = arena.commit_and_upload(TUNED_REACT)
        drawn = arena.draw(first)
        arena.fail_qualifying(first)
        for _ in range(3):  # each re-commitment lands in a later block, with another window after it
            again = arena.commit_and_upload(TUNED_REACT)
            assert again.submission_id != first.submission_id and again.status == "qualifying"
            assert arena.draw(again) == drawn
            arena.fail_qualifying(again)


def test_another_file_gets_its_own_draw(
        tmp_path: Path, small_world: SampleWorld, generator: ProblemGenerator) -> None:
    with grinder(tmp_path, small_world, generator) as arena:
        first = arena.commit_and_upload(TUNED_REACT)
        drawn = arena.draw(first)
        arena.fail_qualifying(first)
        other = arena.commit_and_upload(BAIT_PARSER.encode())
        assert arena.draw(other) != drawn
        arena.fail_qualifying(other)
        back = arena.commit_and_upload(TUNED_REACT)  # going back to the first file: its first draw again
        assert arena.draw(back) == drawn


def test_a_draw_read_before_uploading_is_never_the_one_that_counts(
        tmp_path: Path, small_world: SampleWorld, generator: ProblemGenerator) -> None:
    """Commit, read the draw, recommit a changed file without uploading: the miner uploads the commitment
    whose next block it has seen, yet its draw is none it could compute when it uploaded."""
    with grinder(tmp_path, small_world, generator) as arena:
        discarded = arena.commit(TUNED_REACT)  # its draw did not suit: never uploaded
        arena.next_block()
        liked = arena.commit(CHANGED_BYTE)
        arena.next_block()  # the blocks after both commitments are public and final
        known = arena.draws_known_since(discarded.block)
        submission = arena.upload(CHANGED_BYTE)  # inside its window: accepted, the cooldown runs
        assert submission.commitment_block == liked.block
        assert arena.arena.validator.qualifying_suite(submission) is None  # no seed at upload time
        arena.arena.past_upload_window()
        assert arena.draw(submission) not in known


def test_an_upload_after_its_window_is_refused_and_costs_nothing(
        tmp_path: Path, small_world: SampleWorld, generator: ProblemGenerator) -> None:
    """The miner commits, waits until the commitment's draw is public, and uploads only then: refused
    (nothing recorded, no cooldown); committing again and uploading at once is accepted, on a draw that
    did not exist at the upload."""
    with grinder(tmp_path, small_world, generator) as arena:
        late = arena.commit(TUNED_REACT)
        arena.arena.past_upload_window()  # the draw of the commitment at ``late.block`` is public now
        with pytest.raises(SubmissionRefused) as refused:
            arena.send(TUNED_REACT)
        assert refused.value.code == RefusalCode.UPLOAD_WINDOW_CLOSED and refused.value.status == 409
        assert "`miner submit --recommit`" in refused.value.detail
        assert arena.gate.verdicts.history(arena.arena.hotkey("miner")) == []  # no verdict, no cooldown
        answer = arena.gate.precheck(arena.arena.hotkey("miner"), UploadBody.of("agent.py", TUNED_REACT),
                                     TUNED_REACT)
        assert answer.upload_window_closed and not answer.commitment_ok and answer.new_commitment_ok

        arena.commit(TUNED_REACT)  # what `miner submit --recommit` does: a new commitment, uploaded at once
        known = arena.draws_known_since(late.block)
        submission = arena.upload(TUNED_REACT)
        arena.arena.past_upload_window()
        assert arena.draw(submission) not in known
