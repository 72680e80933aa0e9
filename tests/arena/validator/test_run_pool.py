"""The validator's run pool: outcomes taken in the order asked, size 1 as a sequential loop, runs sharing a
run id never computed at once, a run asked for after another never beside it (the defending winner's
re-run after the challenger's run it measures). Asserted with events and counters, never with timing."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from arena.judge import FinalScore, final_score
from arena.race.state import Submission
from arena.validator.concurrent import RunPool
from arena.validator.runs import defender_run_id
from arena.validator.service import Validator
from tests.sandbox_support import problem
from trajectories.store import RunEntry


def test_size_one_computes_each_run_when_its_outcome_is_taken() -> None:
    computed: list[str] = []

    def compute(name: str) -> str:
        computed.append(name)
        return name.upper()

    with RunPool(1) as pool:
        first = pool.submit("a", lambda: compute("a"))
        second = pool.submit("b", lambda: compute("b"))
        assert computed == []  # nothing runs ahead of the tick
        assert second.result() == "B" and first.result() == "A"
    assert computed == ["b", "a"]
    with pytest.raises(ValueError):
        RunPool(0)


def test_outcomes_come_back_in_the_order_asked_whatever_finishes_first() -> None:
    second_done = threading.Event()

    def slow_first() -> str:
        assert second_done.wait(timeout=60)  # finishes only after the run asked after it
        return "first"

    def second() -> str:
        second_done.set()
        return "second"

    with RunPool(2) as pool:
        pending = [pool.submit("r1", slow_first), pool.submit("r2", second)]
        assert [p.result() for p in pending] == ["first", "second"]


def test_runs_sharing_a_run_id_are_computed_one_at_a_time() -> None:
    inside = 0
    most = 0
    order: list[str] = []
    lock = threading.Lock()
    release = threading.Event()

    def defender(name: str) -> None:
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
            order.append(name)
            holds = len(order) == 1
        if holds:
            release.wait(timeout=60)  # the first one in stays in while the third run completes
        with lock:
            inside -= 1

    with RunPool(3) as pool:
        first = pool.submit("qualifying-defender-x", lambda: defender("first"))
        second = pool.submit("qualifying-defender-x", lambda: defender("second"))
        other = pool.submit("qualifying-y", lambda: "other")
        assert other.result() == "other"  # a third thread was free: the pool itself was not the limit
        release.set()
        first.result()
        second.result()
    assert most == 1 and sorted(order) == ["first", "second"]


def test_an_error_reaches_the_tick_once_the_running_runs_are_done() -> None:
    finished: list[str] = []

    def failing() -> None:
        raise RuntimeError("broken run")

    with pytest.raises(RuntimeError, match="broken run"), RunPool(2) as pool:
        running = pool.submit("b", lambda: finished.append("b"))
        pool.submit("a", failing).result()
    running.result()
    assert finished == ["b"]


def test_a_run_asked_after_another_starts_only_once_that_one_is_over() -> None:
    release = threading.Event()
    first_over = threading.Event()

    def first() -> str:
        assert release.wait(timeout=60)
        first_over.set()
        raise RuntimeError("the first run failed")  # its outcome is its taker's: the next still runs

    def then() -> bool:
        return first_over.is_set()

    with RunPool(3) as pool:
        earlier = pool.submit("challenger", first)
        later = pool.submit("defender", then, after=earlier)
        other = pool.submit("another", lambda: "other")
        assert other.result() == "other"  # a thread was free: only the order held the later run back
        release.set()
        assert later.result() is True
        with pytest.raises(RuntimeError, match="first run failed"):
            earlier.result()


def test_size_one_computes_a_run_asked_after_another_after_it_and_each_once() -> None:
    computed: list[str] = []

    def compute(name: str) -> str:
        computed.append(name)
        return name.upper()

    with RunPool(1) as pool:
        earlier = pool.submit("a", lambda: compute("a"))
        later = pool.submit("b", lambda: compute("b"), after=earlier)
        assert later.result() == "B" and earlier.result() == "A" and earlier.result() == "A"
    assert computed == ["a", "b"]


def _submission(sid: str, code: str) -> Submission:
    return Submission(submission_id=sid, hotkey=f"5{sid}", code_hash=code * 64,
                      submitted_at=datetime(2026, 1, 1, tzinfo=UTC), commitment_block=1)


def test_the_winners_re_run_on_a_challengers_problems_never_runs_beside_the_challengers_run() -> None:
    """The validator asks for a challenger's qualifying run and the reigning winner's on its problems: at
    two runs at a time the winner's still starts only once the challenger's is over."""
    challenger, winner = _submission("challenger", "c"), _submission("winner", "w")
    events: list[str] = []
    winner_started = threading.Event()

    asked: list[RunEntry] = []

    def score(submission: Submission, run: RunEntry, suite: Any, *, final: bool = False) -> FinalScore:
        asked.append(run)
        events.append(f"{submission.submission_id} started")
        if submission is challenger:
            # Beside it, the winner's run would start meanwhile; after it, it cannot.
            winner_started.wait(timeout=2)
        else:
            winner_started.set()
        events.append(f"{submission.submission_id} over")
        return final_score(0.5, [])

    validator: Any = object.__new__(Validator)
    validator.qualifying_suite = lambda _submission: (problem("p-1", "red shoes"),)
    validator.ledger = SimpleNamespace(expose=lambda *_args: None)
    validator.race = SimpleNamespace(clock=SimpleNamespace(now=lambda: datetime(2026, 1, 2, tzinfo=UTC)),
                                     state=SimpleNamespace(reign=SimpleNamespace(submission_id="winner"),
                                                           submissions={"winner": winner}))
    validator._score = score
    with RunPool(2) as pool:
        runs = Validator._qualifying_runs(validator, pool, challenger)
        assert runs is not None and runs[1] is not None
        assert runs[0].result().success_rate == runs[1].result().success_rate == 0.5
    assert events == ["challenger started", "challenger over", "winner started", "winner over"]
    assert defender_run_id(winner.code_hash).startswith("qualifying-defender-")
    # Each run says whose it is and in what role; the winner's is on the challenger's problems.
    assert [(r.submission_id, r.role, r.suite) for r in asked] == [
        ("challenger", "challenger", "qualifying-challenger"),
        ("winner", "defender", "qualifying-challenger"),
    ]
