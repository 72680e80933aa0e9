"""The slot budget shared by overlapping runs: never more sandboxes than units, and a finished run's slots
go to the run waiting for them. Asserted on the budget's events and counters, never on timing."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from shoppingbench.proxy import InferenceConfig
from shoppingbench.records import AttemptRecord
from shoppingbench.sandbox.budget import BudgetEvent, SlotBudget
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig, iter_attempts
from shoppingbench.search.engine import BM25SearchEngine
from tests.sandbox_support import TIGHT, UID_BASE, fake_grader, problem

ROOMY = TIGHT.model_copy(update={"timeout_s": 120.0})
"""The gated agent waits for the test, however slow the machine."""

GATED = ("import os, time\n"
         "def agent_main(problem):\n"
         "    gate = problem['query']\n"
         "    while gate.startswith('/') and not os.path.exists(gate):\n"
         "        time.sleep(0.01)\n"
         "    return []\n")
"""An agent that holds its slot until the file its problem's query names exists."""


class Events:
    """The budget's events, and a way to wait for one (a condition, not a clock)."""

    def __init__(self) -> None:
        self.seen: list[BudgetEvent] = []
        self._changed = threading.Condition()

    def __call__(self, event: BudgetEvent) -> None:
        with self._changed:
            self.seen.append(event)
            self._changed.notify_all()

    def wait_for(self, test: Callable[[list[BudgetEvent]], bool]) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: test(self.seen), timeout=120), self.seen


def test_units_are_served_first_come_first_served_and_a_cancelled_waiter_gives_up() -> None:
    events = Events()
    budget = SlotBudget(1, listener=events)
    assert budget.acquire("a", 0)
    cancelled = threading.Event()
    outcomes: dict[str, bool] = {}
    waiters = [threading.Thread(target=lambda: outcomes.__setitem__("b", budget.acquire("b", 0, cancelled))),
               threading.Thread(target=lambda: outcomes.__setitem__("c", budget.acquire("c", 0)))]
    waiters[0].start()
    events.wait_for(lambda seen: [e.run_id for e in seen if e.kind == "waiting"] == ["b"])
    waiters[1].start()
    events.wait_for(lambda seen: [e.run_id for e in seen if e.kind == "waiting"] == ["b", "c"])
    cancelled.set()
    budget.wake()
    waiters[0].join()
    assert outcomes == {"b": False}  # gave up without a unit; c still waits behind a
    budget.release("a", 0)
    waiters[1].join()
    assert outcomes == {"b": False, "c": True}
    assert [(e.kind, e.run_id) for e in events.seen if e.kind != "waiting"] == [
        ("acquired", "a"), ("released", "a"), ("acquired", "c")]
    assert budget.in_use == 1 and budget.peak_in_use == 1 and budget.acquisitions == 2
    with pytest.raises(ValueError):
        SlotBudget(0)
    budget.release("c", 0)
    with pytest.raises(RuntimeError, match="did not hold"):
        budget.release("c", 0)


def _consume(stream_of: Callable[[], list[AttemptRecord]], into: list[AttemptRecord]) -> threading.Thread:
    thread = threading.Thread(target=lambda: into.extend(stream_of()))
    thread.start()
    return thread


def test_overlapping_runs_never_exceed_the_budget_and_a_finished_runs_slots_go_to_the_waiting_run(
        small_engine: BM25SearchEngine, tmp_path: Path) -> None:
    agent_path = tmp_path / "gated.py"
    agent_path.write_text(GATED)
    agent = AgentFile.read(agent_path)
    gate = tmp_path / "gate"
    events = Events()
    budget = SlotBudget(2, listener=events)
    sandbox = SandboxConfig(backend="none", limits=ROOMY, uid_base=UID_BASE)

    def run(run_id: str, queries: list[str]) -> Callable[[], list[AttemptRecord]]:
        suite = [problem(f"{run_id}-{i}", query) for i, query in enumerate(queries)]
        return lambda: list(iter_attempts(agent, suite, small_engine, fake_grader(small_engine),
                                          inference=InferenceConfig(), sandbox=sandbox, workers=2,
                                          run_id=run_id, budget=budget))

    first: list[AttemptRecord] = []
    second: list[AttemptRecord] = []
    a = _consume(run("run-a", [str(gate)] * 4), first)
    events.wait_for(lambda seen: sum(e.kind == "acquired" for e in seen) == 2)  # run a holds every unit
    b = _consume(run("run-b", ["open", "open", "open"]), second)
    events.wait_for(lambda seen: any(e.kind == "waiting" and e.run_id == "run-b" for e in seen))
    assert budget.in_use == 2 and not any(e.run_id == "run-b" and e.kind == "acquired" for e in events.seen)
    gate.touch()  # run a drains its queue; each of its slots gives its unit back as it runs out
    a.join()
    b.join()

    assert sorted(r.problem_id for r in first) == [f"run-a-{i}" for i in range(4)]
    assert sorted(r.problem_id for r in second) == [f"run-b-{i}" for i in range(3)]
    assert budget.peak_in_use == 2 and max(e.in_use for e in events.seen) == 2 and budget.in_use == 0
    kinds = [(e.kind, e.run_id) for e in events.seen if e.kind != "waiting"]
    first_b = kinds.index(("acquired", "run-b"))
    assert ("released", "run-a") in kinds[:first_b]  # run b's first sandbox took a unit run a gave back
    assert kinds.count(("acquired", "run-a")) == kinds.count(("released", "run-a")) == 2
    # Every unit taken is given back (run b's second slot takes one only if a problem is left for it).
    assert kinds.count(("acquired", "run-b")) == kinds.count(("released", "run-b")) >= 1
