"""The validator's run pool: outcomes taken in the order asked, size 1 as a sequential loop, runs sharing a
run id never computed at once. Asserted with events and counters, never with timing."""

from __future__ import annotations

import threading

import pytest

from arena.validator.concurrent import RunPool


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
