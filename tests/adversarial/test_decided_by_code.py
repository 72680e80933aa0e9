"""Code that makes every decision and has the model emit or say it (issue 43, item 1; SPEC 3 and 6:
reasoning counts, and a call is the model's, only where the model decided).

Seen: a parser describing each call in words for the model to emit, and having it restate the code's
comparison in its own words, got judge quality 0.9 and ``agentic`` on every attempt, and won races.
Through the real namespace sandbox, verified proxy and scripted model, each attempt's requests are read
against the run's static text (``trajectories.filter.decided``, as the validator's suite runs do): every
such attack is steered, never ``agentic``, and its completions earn no reasoning credit; the honest ReAct
agent, run the same way, keeps ``agentic`` and its verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from arena.judge import JudgeInput, judge_offline, suite_score
from shoppingbench.doubles.demo_miners import BAIT_PARSER
from shoppingbench.problems.models import Problem
from shoppingbench.proxy import InferenceConfig
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.search.engine import BM25SearchEngine
from tests.adversarial.decided_agents import filtered_agent, worded_calls_agent
from tests.adversarial.echo_agents import repeat_calls_agent, restate_agent
from tests.adversarial.support import REACT_AGENT, ROOMY, inference
from tests.sandbox_support import run_agent
from trajectories.filter import label_attempt
from trajectories.filter.decided import carry_run_steering

__all__ = ["inference"]



def bait_parser_agent(folder: Path) -> Path:
    """The network demo's bait parser: code that decides every call and has the model emit and narrate it."""
    path = folder / "bait_parser.py"
    path.write_text(BAIT_PARSER)
    return path


ATTACKS: dict[str, Callable[[Path], Path]] = {
    "worded_calls_and_paraphrase": worded_calls_agent, "filtered_results": filtered_agent,
    "restate": restate_agent, "repeat_calls": repeat_calls_agent, "bait_parser": bait_parser_agent}


@pytest.fixture(scope="module")
def suite(small_world: SampleWorld) -> list[Problem]:
    return small_world.suite(2)


def _run(agent: Path, suite: list[Problem], engine: BM25SearchEngine,
         inference: InferenceConfig) -> list[AttemptRecord]:
    records = run_agent(agent, suite, engine, limits=ROOMY, workers=2, inference=inference)
    assert all(r.failure is None for r in records), [r.stderr_tail for r in records]
    carry_run_steering(records)
    return records


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_code_that_decides_is_never_the_model_deciding(attack: str, suite: list[Problem],
                                                        small_engine: BM25SearchEngine,
                                                        inference: InferenceConfig,
                                                        tmp_path: Path) -> None:
    records = _run(ATTACKS[attack](tmp_path), suite, small_engine, inference)
    for record in records:
        steered = record.carried_steering()
        assert steered, f"{attack}: no request of {record.problem_id} read as steered"
        verdict = label_attempt(record.proxy_log, record.steps, query=record.query,
                                echoed_seqs=record.echoed_calls(), steered=steered)
        assert verdict.label != "agentic", verdict.reasons
        assert verdict.evidence.steered_completions == len(steered)
        judged = judge_offline(JudgeInput.from_record(record))
        assert judged.quality <= 0.3 and judged.steered_completions == len(steered), judged.explanation


def test_the_paraphrase_escapes_the_echo_measure_but_not_the_rule(suite: list[Problem],
                                                                  small_engine: BM25SearchEngine,
                                                                  inference: InferenceConfig,
                                                                  tmp_path: Path) -> None:
    records = _run(worded_calls_agent(tmp_path), suite, small_engine, inference)
    assert all(not r.echoed_calls() for r in records)  # new words: nothing for the echo measure
    # Only a call the code words the same way in every problem (``terminate`` with status success) reads
    # as a static instruction; every call carrying the code's choice of words, ids or prices is steered.
    assert all(len(r.carried_steering() or {}) >= 2 for r in records)
    assert all(judge_offline(JudgeInput.from_record(r)).quality <= 0.3 for r in records)


def test_the_honest_react_agent_run_the_same_way_keeps_its_label_and_verdict(
        suite: list[Problem], small_engine: BM25SearchEngine, inference: InferenceConfig) -> None:
    records = _run(REACT_AGENT, suite, small_engine, inference)
    for record in records:
        assert record.carried_steering() == {}
        verdict = label_attempt(record.proxy_log, record.steps, query=record.query,
                                steered=record.carried_steering())
        assert verdict.label == "agentic", verdict.reasons
        assert judge_offline(JudgeInput.from_record(record)).quality >= 0.7


def test_the_bait_parser_ranks_below_the_react_agent(small_world: SampleWorld, small_engine: BM25SearchEngine,
                                                     inference: InferenceConfig, tmp_path: Path) -> None:
    """Race-style: the same problems for both, each run measured as a whole, success x coefficient."""
    problems = small_world.suite(3)
    scores = {}
    for name, agent in (("bait", bait_parser_agent(tmp_path)), ("react", REACT_AGENT)):
        records = _run(agent, problems, small_engine, inference)
        verdicts = [judge_offline(JudgeInput.from_record(r)) for r in records]
        scores[name] = suite_score([r.score.success for r in records], verdicts,
                                   [r.problem_id for r in records])
    assert scores["bait"].mean_quality <= 0.3 < scores["react"].mean_quality
    assert scores["bait"].score < scores["react"].score, scores
