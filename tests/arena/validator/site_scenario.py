"""A small validator history for the submission page and attempt viewer tests, on real stores: the race
engine writes the SQL race log, the trajectory store (SQLite) holds synthetic attempts (shaped like real
agents' by ``trajectories.doubles.synthetic``) under the run and suite names the validator uses.

alice qualifies and wins the race of 2026-11-18 (promoted, code under embargo until the next day);
bob has submitted and his qualifying run has stored attempts but is not scored (hidden); carol's file was
rejected by static analysis; alice's agent also has held-out attempts (never shown). One race attempt of
alice's carries ``XSS`` in its reasoning and in a tool result, and claims a search the proxy never saw.
"""

from __future__ import annotations

import copy
import hashlib
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from pathlib import Path
from typing import Any

from arena.judge import ProblemOutcome
from arena.race import ManualClock, RaceEngine, RaceRules, Rejection, SqlEventStore
from arena.race.state import submission_id
from arena.storage import open_database
from arena.submissions.store import FileStore
from arena.validator.api import ArenaView
from arena.validator.runs import challenger_run, entrant_run
from shoppingbench.records import AttemptRecord, ReturnedProduct
from shoppingbench.submission_check import check_agent
from trajectories.doubles.synthetic import make_attempt, make_problems
from trajectories.filter import label_attempt
from trajectories.store import AttemptKey, AttemptWrite, JudgeVerdict, RunEntry, TrajectoryStore

T0 = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)
RACE_DAY = "2026-11-18"
XSS = "<script>alert(1)</script>"
INVENTED = "A product the agent invented"
CAROL_CODE = b"import socket\n\n\ndef agent_main(problem):\n    return []\n"
ALICE_CODE = b"def agent_main(problem):\n    # pick the <b>cheapest</b>\n    return []\n"


@dataclass
class Scenario:
    view: ArenaView
    writer: RaceEngine
    clock: ManualClock
    alice: str
    bob: str
    carol: str
    attempts: dict[str, list[int]] = field(default_factory=dict)
    """Attempt ids by part: ``qualifying``, ``race``, ``xss``, ``held_out``, ``bob``."""

    def close(self) -> None:
        self.view.store.close()


def _xss(record: AttemptRecord) -> AttemptRecord:
    """``XSS`` in the first step's reasoning and in a tool result the proxy logged; and a search the
    agent's steps claim with an invented result, which the proxy never saw."""
    steps: list[Any] = copy.deepcopy(record.steps)
    message = steps[0]["completion"]["message"]
    message["think"] = f"I think {XSS} is best"
    message["tool_call"].append(
        {
            "name": "find_product",
            "parameters": {"q": "never searched"},
            "result": [{"product_id": "invented", "title": INVENTED}],
        }
    )
    calls = list(record.proxy_log)
    first = next(i for i, c in enumerate(calls) if c.kind == "search")
    calls[first] = calls[first].model_copy(
        update={
            "results": [
                ReturnedProduct(product_id=calls[first].product_ids[0], title=f"Lamp {XSS}", price=9.5)
            ]
        }
    )
    return record.model_copy(update={"steps": steps, "proxy_log": calls})


def write_run(
    store: TrajectoryStore,
    rng: random.Random,
    *,
    run: RunEntry,
    agent: str,
    count: int,
    xss: bool = False,
) -> list[int]:
    """``count`` synthetic attempts of ``agent`` on fresh problems of the suite of ``run``, judged and
    labelled; their ids."""
    problems = make_problems(rng, count, suite=run.suite)
    store.register_problems(problems)
    store.register_run(run.model_copy(update={"started_at": T0.timestamp()}))
    run_id = run.id
    writes = []
    for n, problem in enumerate(problems):
        record = make_attempt(
            rng, "react", problem, run_id=run_id, agent_hash=agent, started_at=T0.timestamp() + n
        )
        if xss and n == 0:
            record = _xss(record)
        writes.append(
            AttemptWrite(
                record=record,
                label=label_attempt(record.proxy_log, record.steps),
                judge=JudgeVerdict(
                    model="offline-rules",
                    offline=True,
                    quality=(0.1, 0.5, 0.9)[n % 3],
                    gates_passed=(0, 2, 4)[n % 3],
                    explanation=f"level {n}",
                ),
            )
        )
    store.write_attempts(writes)
    keys = {(w.record.run_id, w.record.agent_hash, w.record.problem_id) for w in writes}
    return sorted(a.id for a in (store.get_attempt(AttemptKey(*k)) for k in keys) if a is not None)


def build_scenario(tmp_path: Path, *, finish_race: bool = True) -> Scenario:
    """The history above; ``finish_race`` off leaves the race running (alice's result not recorded)."""
    clock = ManualClock(T0)
    database = open_database(f"sqlite:///{tmp_path / 'arena.sqlite3'}")
    writer = RaceEngine(SqlEventStore(database), RaceRules(), clock)
    files = FileStore(tmp_path / "agents")
    alice_hash = hashlib.sha256(ALICE_CODE).hexdigest()
    files.put(alice_hash, ALICE_CODE)
    alice = writer.submit("alice", alice_hash, commitment_block=7).submission_id
    bob = writer.submit("bob", "b" * 64, commitment_block=8).submission_id
    assert alice is not None and bob is not None
    report = check_agent(CAROL_CODE)
    writer.submit("carol", report.sha256, Rejection.from_report(report))
    carol = submission_id("carol", report.sha256, clock.now())
    store = TrajectoryStore.open(f"sqlite:///{tmp_path / 'trajectories.sqlite3'}")
    rng = random.Random(11)
    scenario = Scenario(
        view=ArenaView(events=SqlEventStore(database), store=store, files=files, clock=clock),
        writer=writer,
        clock=clock,
        alice=alice,
        bob=bob,
        carol=carol,
    )
    scenario.attempts["qualifying"] = write_run(
        store,
        rng,
        run=challenger_run(alice, ["q"]),
        agent=alice_hash,
        count=6,
    )
    writer.record_qualifying(alice, 0.5)
    scenario.attempts["bob"] = write_run(
        store,
        rng,
        run=challenger_run(bob, ["q"]),
        agent="b" * 64,
        count=2,
    )
    scenario.attempts["held_out"] = write_run(
        store, rng, run=RunEntry(id="held-out-alice", kind="held_out", suite="held-out-v1"), agent=alice_hash,
        count=2
    )
    clock.advance(datetime.combine(T0.date(), time(16), tzinfo=UTC) - clock.now())
    started = writer.start_race("0xseed", ["p1", "p2"])
    assert started.type == "race_started"
    race_run = entrant_run(alice, RACE_DAY, ["p1", "p2"])
    scenario.attempts["xss"] = write_run(
        store,
        rng,
        run=race_run,
        agent=alice_hash,
        count=1,
        xss=True,
    )
    scenario.attempts["race"] = write_run(
        store, rng, run=race_run, agent=alice_hash, count=6
    )
    if finish_race:
        finish_the_race(scenario)
    return scenario


def finish_the_race(scenario: Scenario) -> None:
    """Record alice's race result: the race finishes and promotes her."""
    outcomes = [
        ProblemOutcome(problem_id="p1", success=True, quality=0.9),
        ProblemOutcome(problem_id="p2", success=False, quality=0.5),
    ]
    scenario.writer.record_race_result(scenario.alice, 0.4, outcomes)
    reign = scenario.writer.state.reign
    assert reign is not None and reign.submission_id == scenario.alice
