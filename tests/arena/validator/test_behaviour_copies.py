"""Copies judged by behaviour in the validator's tick (``arena.validator.behaviour``): a miner's agent
rewritten just under the code threshold qualifies on its score, but the validator re-runs the closest
earlier agent on the same problems, finds it acts the same and refuses it as a copy; an agent of one's
own qualifies without any re-run. The originals' attempts are kept: neither a second evaluation nor a
restarted validator runs them again.

Real pieces: the bubblewrap sandbox behind the verified proxy with the scripted shopping policy as the
agents' LLM, the offline judge, SQLite arena databases and trajectory stores, the local chain."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from arena.race.state import Submission
from arena.submissions.behaviour import behaviour_copy
from arena.submissions.copies import BEHAVIOUR_COPY_THRESHOLD, behaviour_similarity, trace_of
from arena.validator import Validator, run_id_for
from arena.validator.behaviour import BehaviourCheck, behaviour_run_id
from arena.validator.runs import RunAgent
from shoppingbench.generator import ProblemGenerator
from shoppingbench.problems.models import Problem
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.sandbox.runner import AgentFile
from tests.arena.validator.test_validator import Arena, serving_runner
from tests.arena.validator.test_validator import arena as arena
from tests.chain_support import make_wallet, past_upload_window, register
from tests.fixtures.copy_rewrites import HONEST, UNDER_THRESHOLD, apply, tuned_react
from trajectories.store import AttemptKey

TUNED = tuned_react()
NEAR_COPY = apply(TUNED, UNDER_THRESHOLD)
OWN_AGENT = HONEST["oro_style_agent"]
"""An agent of its own (a template agent's tool-calling loop): nothing like the tuned ReAct in code."""


class CountingRunner:
    """The validator's runner, counting the problems each run id was asked to run."""

    def __init__(self, run_agent: RunAgent) -> None:
        self._run_agent = run_agent
        self.asked: dict[str, int] = {}

    def __call__(self, agent: AgentFile, problems: Sequence[Problem], run_id: str) -> Iterator[AttemptRecord]:
        self.asked[run_id] = self.asked.get(run_id, 0) + len(problems)
        return self._run_agent(agent, problems, run_id)

    def behaviour_runs(self) -> dict[str, int]:
        return {run_id: n for run_id, n in self.asked.items() if run_id.startswith("behaviour-")}


@pytest.fixture(scope="module")
def generator(small_world: SampleWorld) -> Iterator[ProblemGenerator]:
    with ProblemGenerator.open(small_world.catalog_dir) as opened:
        yield opened


@pytest.fixture(scope="module")
def runner(small_world: SampleWorld) -> Iterator[RunAgent]:
    with serving_runner(small_world.catalog_dir) as run_agent:
        yield run_agent


def _of(validator: Validator, sha: str) -> Submission:
    (found,) = [s for s in validator.race.state.submissions.values() if s.code_hash == sha]
    return found


def _suite(validator: Validator, submission: Submission) -> tuple[Problem, ...]:
    suite = validator.qualifying_suite(submission)
    assert suite is not None
    return suite


def test_a_near_copy_under_the_code_threshold_is_refused_by_behaviour_and_an_own_agent_qualifies(
        arena: Arena, generator: ProblemGenerator, runner: RunAgent) -> None:
    arena.miners["carol"] = make_wallet(arena.root / "wallets", "carol", seed="carol")
    register(arena.chain, arena.miners["carol"])
    counting = CountingRunner(runner)
    validator = arena.validator("validator", generator, counting, per_category=3)
    alice_sha = arena.upload(validator, "alice", TUNED.encode())
    past_upload_window(arena.clock, arena.chain)
    first = validator.tick()
    alice = _of(validator, alice_sha)
    assert first.qualified == [alice.submission_id] and counting.behaviour_runs() == {}

    bob_sha = arena.upload(validator, "bob", NEAR_COPY.encode())
    carol_sha = arena.upload(validator, "carol", OWN_AGENT.encode())
    past_upload_window(arena.clock, arena.chain)
    report = validator.tick()
    bob, carol = _of(validator, bob_sha), _of(validator, carol_sha)
    assert report.copies == [bob.submission_id] and report.qualified == [carol.submission_id]
    assert bob.status == "copy" and bob.copy_of is not None and bob.qualifying_score is None
    assert (bob.copy_of.basis, bob.copy_of.submission_id, bob.copy_of.hotkey) == (
        "behaviour", alice.submission_id, alice.hotkey)
    assert bob.copy_of.summary().startswith(f"copy of {alice.submission_id} (behaviour:")
    assert bob.submission_id not in {s.submission_id for s in validator.race.challengers()}
    # Alice's agent ran Bob's problems once; Carol's is nothing like it in code: no re-run for hers.
    bob_suite = _suite(validator, bob)
    assert counting.behaviour_runs() == {behaviour_run_id(alice): len(bob_suite)}

    # A second evaluation of Bob, and a restarted validator over the same databases, use the kept traces.
    check = BehaviourCheck(validator.files, validator.runs)
    assert check.copy_of(validator.race, bob, bob_suite) == bob.copy_of
    restarted = arena.validator("validator", generator, counting, per_category=3)
    again = BehaviourCheck(restarted.files, restarted.runs)
    assert again.copy_of(restarted.race, bob, bob_suite) == bob.copy_of
    assert counting.behaviour_runs() == {behaviour_run_id(alice): len(bob_suite)}

    # Carol's agent acts otherwise than Alice's on Carol's problems (measured here at the cost of one more
    # run: the validator never needs it).
    carol_suite = _suite(validator, carol)
    theirs = again.original_traces(alice, carol, carol_suite)
    run_id = run_id_for("qualifying", carol.submission_id, [p.id for p in carol_suite])
    stored = [validator.runs.store.get_attempt(AttemptKey(run_id, carol_sha, p.id)) for p in carol_suite]
    mine = [trace_of(a.record) for a in stored if a is not None]
    assert len(mine) == len(theirs) == len(carol_suite)
    similarity = behaviour_similarity(mine, theirs)
    assert similarity is not None and similarity < BEHAVIOUR_COPY_THRESHOLD - 0.2  # 0.60 measured
    assert behaviour_copy(mine, [(bob.copy_of, theirs)]) is None
