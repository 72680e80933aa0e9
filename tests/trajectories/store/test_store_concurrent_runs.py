"""Several runs recorded and judged at once, as a validator computing concurrent runs writes them: every
run's recorder and the verdicts of its judging pool from many threads, on SQLite and PostgreSQL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from shoppingbench.problems.models import Problem, RewardTarget
from tests.trajectories.records import react_record
from trajectories.recorder import RunRecorder
from trajectories.store import AgentEntry, AttemptKey, JudgeVerdict, RunEntry, TrajectoryStore

RUNS = 3
PROBLEMS = 8
THREADS = 2 * (8 + 1) + 6
"""Two concurrent runs' recorder and judging pool (ARENA_JUDGE_CONCURRENCY 8) and then some: more
threads than PostgreSQL's default connection pool holds at once."""


def _problem(n: int) -> Problem:
    return Problem(id=f"cp{n}", category="product", query=f"query {n}",
                   targets=[RewardTarget(product_id=f"t{n}", title=["anything"])])


def test_runs_recorded_and_judged_from_many_threads_store_every_attempt_once(store: TrajectoryStore) -> None:
    suite = [_problem(n) for n in range(PROBLEMS)]
    agents = [f"{n:x}" * 64 for n in range(10, 10 + RUNS)]

    def one_run(run: int) -> None:
        # Every run registers the same problems at once (a challenger's and the winner's run share them).
        recorder = RunRecorder(store, RunEntry(id=f"run-{run}", kind="qualifying", suite="qualifying-x"),
                               agent=AgentEntry(code_hash=agents[run][:64]), problems=suite)
        with ThreadPoolExecutor(max_workers=THREADS // RUNS) as judging:
            for problem in suite:
                record = react_record(run_id=f"run-{run}", agent_hash=agents[run][:64], problem_id=problem.id)
                recorder.record(record)
                judging.submit(store.set_judge_verdict, AttemptKey.of(record),
                               JudgeVerdict(model="judge", quality=0.5, details={"run": run}))
        recorder.finish()

    with ThreadPoolExecutor(max_workers=RUNS) as runs:
        for future in [runs.submit(one_run, run) for run in range(RUNS)]:
            future.result()

    assert store.count_attempts() == RUNS * PROBLEMS
    for run in range(RUNS):
        for problem in suite:
            attempt = store.get_attempt(AttemptKey(f"run-{run}", agents[run][:64], problem.id))
            assert attempt is not None and attempt.judge is not None
            assert attempt.judge.details == {"run": run}
