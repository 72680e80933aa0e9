"""Verdicts are asked concurrently and stored from the run's own thread (``arena/validator/judging.py``)."""

from __future__ import annotations

import random
import threading

import pytest

from arena.judge import JudgeInput, JudgeVerdict, OfflineJudge
from arena.validator.judging import ConcurrentJudging
from shoppingbench.records import AttemptRecord
from trajectories.doubles.synthetic import make_attempt, make_problems

BARRIER_TIMEOUT_S = 60.0
"""Only reached when the calls are serial (the barrier then breaks): never part of a passing run."""


def records(count: int) -> list[AttemptRecord]:
    rng = random.Random(3)
    return [make_attempt(rng, "react", problem, run_id="run", agent_hash="a" * 64, started_at=1e9 + i)
            for i, problem in enumerate(make_problems(rng, count))]


class MeetingJudge:
    """The offline judge, but each call waits until ``parties`` calls are in flight at once."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=BARRIER_TIMEOUT_S)
        self.threads: set[int] = set()

    def judge(self, item: JudgeInput) -> JudgeVerdict:
        self.threads.add(threading.get_ident())
        self.barrier.wait()
        return OfflineJudge().judge(item)


def test_verdicts_are_asked_at_once_and_kept_from_the_calling_thread() -> None:
    attempts = records(8)
    judge = MeetingJudge(parties=4)
    kept: dict[str, tuple[JudgeVerdict, int]] = {}

    def keep(record: AttemptRecord, verdict: JudgeVerdict) -> None:
        kept[record.problem_id] = (verdict, threading.get_ident())

    with ConcurrentJudging(judge, keep, concurrency=4) as judging:
        for record in attempts:
            judging.ask(record)
    assert set(kept) == {r.problem_id for r in attempts}  # every verdict, none lost
    assert {thread for _, thread in kept.values()} == {threading.get_ident()}
    assert threading.get_ident() not in judge.threads and len(judge.threads) == 4
    offline = OfflineJudge()
    assert all(kept[r.problem_id][0] == offline.judge(JudgeInput.from_record(r)) for r in attempts)


def test_a_judge_that_raises_raises_from_the_run() -> None:
    class Refused(RuntimeError):
        pass

    class RefusingJudge:
        def judge(self, item: JudgeInput) -> JudgeVerdict:
            raise Refused("the judge endpoint refused the API key")

    judging = ConcurrentJudging(RefusingJudge(), lambda record, verdict: None, concurrency=2)
    with pytest.raises(Refused), judging:
        for record in records(3):
            judging.ask(record)
