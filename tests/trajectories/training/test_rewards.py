"""GRPO's reward rules on hand-built episodes: the scorer's outcome on a real small-world problem, the
per-step agreement with the teacher, the hallucination penalty, the teacher plan chosen, the TRL adapters;
and the study's reward, the per-step match with the teacher's tool choice alone."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from trl.trainer.utils import get_callable_name

from shoppingbench.dialogue import ToolCall, create_dialogue_step
from shoppingbench.grading.grader import Grader
from shoppingbench.problems.models import Problem
from shoppingbench.records import AttemptFailure, AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.scoring import PRODUCTION_STRICT, AttemptScore, CachedEmbedder, MiniLMEmbedder
from shoppingbench.search.engine import BM25SearchEngine
from trajectories.training.stages.rewards import (
    Episode,
    EpisodeCall,
    RewardSettings,
    ToolStep,
    attempt_plan,
    best_teacher_attempts,
    episode_hallucinations,
    episode_steps,
    hallucination_penalty,
    hallucination_reward,
    outcome_reward,
    outcome_value,
    parse_plan,
    plan_json,
    reward_functions,
    score_episode,
    step_agreement,
    step_matches,
    study_match,
    study_teacher_reward,
    teacher_agreement,
    teacher_reward,
)


@pytest.fixture(scope="module")
def grader(small_engine: BM25SearchEngine, tmp_path_factory: pytest.TempPathFactory) -> Grader:
    cache = tmp_path_factory.mktemp("embeddings") / "titles.sqlite3"
    return Grader(small_engine.get_products, CachedEmbedder(MiniLMEmbedder(), cache), PRODUCTION_STRICT)


@pytest.fixture(scope="module")
def product_problem(small_world: SampleWorld) -> Problem:
    problem = small_world.suite(1)[0]
    assert problem.category == "product"
    return problem


def _search(*ids: str, q: str = "toy") -> EpisodeCall:
    return EpisodeCall("find_product", {"q": q, "page": 1}, ids)


def _named(name: str, ids: str) -> EpisodeCall:
    return EpisodeCall(name, {"product_ids": ids})


def _recommend(ids: str) -> EpisodeCall:
    return _named("recommend_product", ids)


def _episode(*calls: EpisodeCall) -> Episode:
    return Episode(calls=list(calls))


@dataclass
class _Rollout:
    """What the TRL reward functions read from an environment."""

    problem: Problem
    episode: Episode
    grader: Grader


@dataclass
class _Metrics:
    logged: dict[str, list[float]] = field(default_factory=dict)

    def __call__(self, name: str, value: float) -> None:
        self.logged.setdefault(name, []).append(value)


# -- outcome ---------------------------------------------------------------------------------------------

def test_the_outcome_is_the_validators_score_of_the_last_recommendation(
        product_problem: Problem, grader: Grader, small_world: SampleWorld) -> None:
    target = product_problem.targets[0].product_id
    elsewhere = next(p.targets[0].product_id for p in small_world.suite(3)[1:3])  # another product's target
    right = _episode(_search(target, elsewhere), _recommend(target),
                     EpisodeCall("terminate", {"status": "success"}))
    wrong = _episode(_search(target, elsewhere), _recommend(target), _recommend(elsewhere))
    scores = {name: score_episode(product_problem, episode, grader)
              for name, episode in (("right", right), ("wrong", wrong), ("none", _episode(_search(target))))}
    assert scores["right"].success and scores["right"].gt == 1 and scores["right"].rule == 1
    assert scores["wrong"].answer == [elsewhere] and not scores["wrong"].success and scores["wrong"].rule < 1
    assert scores["none"].answer == [] and scores["none"].rule == 0
    # the same score the validator's path gives the same dialogue
    for name, episode in (("right", right), ("wrong", wrong)):
        record = grader.record(run_id="r", agent_hash="a", problem=product_problem,
                               steps=episode_steps(product_problem.query, episode), failure=None,
                               started_at=0.0, finished_at=1.0)
        assert (record.score.success, record.score.rule) == (scores[name].success, scores[name].rule)
    assert outcome_value(scores["right"], 0.5) == 1.0
    assert outcome_value(scores["wrong"], 0.5) == 0.5 * scores["wrong"].rule < 0.5
    assert outcome_value(scores["wrong"], 1.0) == 0.0 and outcome_value(scores["none"], 0.0) == 0.0

    metrics = _Metrics()
    rollouts = [_Rollout(product_problem, right, grader), _Rollout(product_problem, wrong, grader)]
    values = outcome_reward(environments=rollouts, log_metric=metrics, success_share=0.5, prompts=[],
                            completions=[])
    assert values == [1.0, outcome_value(scores["wrong"], 0.5)]
    assert metrics.logged == {"outcome/success": [0.5], "outcome/rule": [(1 + scores["wrong"].rule) / 2]}


# -- teacher ---------------------------------------------------------------------------------------------

TEACHER = [ToolStep("find_product", {"q": "cotton plush toy"}),
           ToolStep("recommend_product", {"product_ids": "a,b"}),
           ToolStep("terminate", {"status": "success"})]
TEACHER_CALLS = [EpisodeCall(s.name, dict(s.arguments)) for s in TEACHER]


def test_a_plan_that_matches_the_teacher_step_by_step_scores_one() -> None:
    same = [ToolStep(s.name, dict(s.arguments)) for s in TEACHER]
    assert teacher_agreement(same, TEACHER, 0.5) == 1.0
    # ids are compared as sets, query words case-insensitively
    reordered = [ToolStep("find_product", {"q": "Plush TOY cotton"}),
                 ToolStep("recommend_product", {"product_ids": ["b", "a"]}),
                 ToolStep("terminate", {"status": "success"})]
    assert teacher_agreement(reordered, TEACHER, 0.5) == 1.0


def test_the_right_tool_with_other_arguments_gets_partial_credit() -> None:
    model = [ToolStep("find_product", {"q": "plush dog"}),
             ToolStep("recommend_product", {"product_ids": "c"}),
             ToolStep("terminate", {"status": "failure"})]
    # per step: half for the tool, half times the Jaccard overlap of the key argument
    expected = [0.5 + 0.5 * (1 / 4), 0.5 + 0.5 * 0, 0.5 + 0.5 * 0]
    assert step_agreement(model[0], TEACHER[0], 0.5) == expected[0]
    assert teacher_agreement(model, TEACHER, 0.5) == pytest.approx(sum(expected) / 3)
    assert teacher_agreement(model, TEACHER, 0.0) == 1.0  # the tool names alone


def test_other_tools_missing_and_extra_steps_all_cost() -> None:
    other = [ToolStep("view_product_information", {"product_ids": "a"}),
             ToolStep("terminate", {"status": "x"}),
             ToolStep("find_product", {"q": "toy"})]
    assert teacher_agreement(other, TEACHER, 0.5) == 0.0
    exact = [ToolStep(s.name, dict(s.arguments)) for s in TEACHER]
    # shorter: the teacher's third step is unmatched; longer: the model's extra steps count against it
    assert teacher_agreement(exact[:1], TEACHER, 0.5) == pytest.approx(1 / 3)
    longer = [*exact, ToolStep("find_product", {"q": "more"}), ToolStep("terminate", {"status": "success"})]
    assert teacher_agreement(longer, TEACHER, 0.5) == pytest.approx(3 / 5)
    assert teacher_agreement([], TEACHER, 0.5) == 0.0 and teacher_agreement([], [], 0.5) == 1.0


def test_a_problem_without_a_teacher_plan_gets_no_teacher_term() -> None:
    rollouts = [_Rollout(problem=None, episode=_episode(*TEACHER_CALLS), grader=None)  # type: ignore[arg-type]
                for _ in range(2)]
    values = teacher_reward(environments=rollouts, teacher_plan=[plan_json(TEACHER), None],
                            argument_credit=0.5)
    assert values == [1.0, None]


# -- the study's reward: the per-step teacher tool match alone ---------------------------------------------

def test_the_study_reward_matches_the_teachers_tool_choice_step_by_step() -> None:
    # arguments earn nothing: the right tools with other arguments match at every step
    others = [ToolStep("find_product", {"q": "kettle"}), ToolStep("recommend_product", {"product_ids": "z"}),
              ToolStep("terminate", {"status": "failure"})]
    assert step_matches(others, TEACHER) == [1.0, 1.0, 1.0] and study_match(others, TEACHER) == 1.0
    # step i against step i: a view where the teacher recommended breaks steps 2 and 3
    detour = [ToolStep("find_product", {"q": "toy"}),
              ToolStep("view_product_information", {"product_ids": "a"}),
              ToolStep("recommend_product", {"product_ids": "a"}),
              ToolStep("terminate", {"status": "success"})]
    assert step_matches(detour, TEACHER) == [1.0, 0.0, 0.0, 0.0]
    assert study_match(detour, TEACHER) == 0.25  # 4 steps: the model's extra step counts against it
    assert step_matches(others[:1], TEACHER) == [1.0, 0.0, 0.0]  # missing steps cost as well
    assert study_match([], TEACHER) == 0.0 and study_match([], []) == 1.0
    # unlike the arena's teacher term, which gives half a step for the tool and half for the argument
    assert teacher_agreement(others, TEACHER, 0.5) < study_match(others, TEACHER)


def test_the_study_reward_function_is_the_match_alone_and_logs_outcome_and_hallucinations_aside(
        product_problem: Problem, grader: Grader) -> None:
    target = product_problem.targets[0].product_id
    guessed = _episode(_recommend(target), EpisodeCall("terminate", {"status": "success"}))  # unseen id
    planned = _episode(_search(target, q="x"), _recommend(target), EpisodeCall("terminate", {"status": "s"}))
    rollouts = [_Rollout(product_problem, planned, grader), _Rollout(product_problem, guessed, grader),
                _Rollout(product_problem, planned, grader)]
    metrics = _Metrics()
    values = study_teacher_reward(environments=rollouts, teacher_plan=[plan_json(TEACHER)] * 2 + [None],
                                  log_metric=metrics, prompts=[], completions=[])
    # planned: all three tools in the teacher's order; guessed: recommend/terminate against find/recommend
    assert values == [1.0, 0.0, None]
    # the right answer was named without a search: the arena's reward would penalise it, the study's not
    assert hallucination_penalty(episode_hallucinations(guessed).ids_hallucinated) == -0.5
    assert metrics.logged["teacher/step_match"] == [3 / 6]
    assert metrics.logged["hallucinations/ids"] == [1]
    assert metrics.logged["hallucinations/rollouts"] == [1 / 3]
    assert metrics.logged["outcome/success"] == [1.0]  # measured on every rollout, never rewarded


def test_the_study_mode_is_one_reward_of_weight_one_and_refuses_the_arenas_shaping() -> None:
    study = RewardSettings(mode="study_teacher_match")
    assert study.weights() == [1.0]
    assert [get_callable_name(f) for f in reward_functions(study)] == ["study_teacher_reward"]
    for shaping in ({"outcome": 1.0}, {"hallucination": 0.0}, {"argument_credit": 0.0}):
        with pytest.raises(ValueError, match="teacher match alone"):
            RewardSettings.model_validate({"mode": "study_teacher_match", **shaping})
    with pytest.raises(ValueError, match="mode"):
        RewardSettings.model_validate({"mode": "outcome_only"})
    assert RewardSettings().mode == "arena" and len(reward_functions(RewardSettings())) == 3


# -- hallucination ---------------------------------------------------------------------------------------

def test_viewed_or_recommended_ids_no_earlier_search_returned_are_hallucinated() -> None:
    honest = _episode(_search("a", "b"), _named("view_product_information", "a"), _recommend("b, a"))
    assert episode_hallucinations(honest).ids_hallucinated == 0
    viewed = _episode(_named("view_product_information", "a, z"), _search("a"), _recommend("a"))
    counted = episode_hallucinations(viewed)
    assert counted.per_step == [2, 0, 0]  # a was searched only later
    recommended = _episode(_search("a"), _recommend("a,x,y"), _search("x"),
                           _named("view_product_information", "y"))
    assert episode_hallucinations(recommended).per_step == [0, 2, 0, 1]
    assert [hallucination_penalty(n) for n in (0, 1, 3)] == [0.0, -0.5, -0.75]

    metrics = _Metrics()
    rollouts = [_Rollout(None, episode, None) for episode in (honest, viewed, recommended)]  # type: ignore[arg-type]
    values = hallucination_reward(environments=rollouts, log_metric=metrics, trainer_state=None)
    assert values == [0.0, -2 / 3, -0.75]
    assert metrics.logged == {"hallucinations/ids": [5], "hallucinations/calls": [3],
                              "hallucinations/rollouts": [2 / 3]}


# -- teacher plans from stage 3's attempts ---------------------------------------------------------------

def _attempt(problem_id: str, calls: list[tuple[str, dict[str, Any]]], *, success: bool = True,
             gt: float = 1.0, started_at: float = 0.0,
             failure: AttemptFailure | None = None) -> AttemptRecord:
    steps: list[Any] = [create_dialogue_step(i, "q", tool_calls=[ToolCall(name=name, parameters=parameters)])
                        for i, (name, parameters) in enumerate(calls)]
    score = AttemptScore(problem_id=problem_id, category="product", success=success, gt=gt,
                         rule=1.0 if success else 0.0, found=1.0, format=1.0, length=0.0)
    return AttemptRecord(run_id=f"run-{started_at}", problem_id=problem_id, category="product", query="q",
                         agent_hash="teacher", steps=steps, score=score, failure=failure,
                         started_at=started_at, finished_at=started_at + 1)


SEARCH_AND_ANSWER = [("find_product", {"q": "toy"}), ("recommend_product", {"product_ids": "a"})]


def test_the_best_successful_teacher_attempt_is_chosen_whatever_the_file_order() -> None:
    records = [
        _attempt("p1", SEARCH_AND_ANSWER, success=False),                                  # failed: never
        _attempt("p1", [("find_product", {"q": "x"}), *SEARCH_AND_ANSWER], started_at=1),  # longer
        _attempt("p1", SEARCH_AND_ANSWER, started_at=3),                                   # shortest, later
        _attempt("p1", SEARCH_AND_ANSWER, started_at=2),                                   # shortest, first
        _attempt("p2", SEARCH_AND_ANSWER, gt=0.0),                                         # right, not exact
        _attempt("p2", [("find_product", {"q": "y"}), *SEARCH_AND_ANSWER], started_at=5),  # exact product
        _attempt("p3", SEARCH_AND_ANSWER, failure=AttemptFailure(kind="timeout", reason="t")),
        _attempt("p4", []),                                                                # no call to follow
    ]
    best = best_teacher_attempts(records)
    assert {pid: record.started_at for pid, record in best.items()} == {"p1": 2.0, "p2": 5.0}
    for seed in range(3):
        shuffled = records[:]
        random.Random(seed).shuffle(shuffled)
        assert best_teacher_attempts(shuffled) == best
    plan = attempt_plan(best["p2"])
    assert plan == [ToolStep("find_product", {"q": "y"}), ToolStep("find_product", {"q": "toy"}),
                    ToolStep("recommend_product", {"product_ids": "a"})]
    assert parse_plan(plan_json(plan)) == plan


def test_malformed_teacher_steps_contribute_no_calls() -> None:
    record = _attempt("p", SEARCH_AND_ANSWER)
    record.steps.extend(["junk", {"completion": {"message": {"tool_call": [{"name": 3}, "x"]}}}])
    assert [step.name for step in attempt_plan(record)] == ["find_product", "recommend_product"]


def test_the_reward_functions_follow_the_weights_order() -> None:
    settings = RewardSettings(outcome=1.0, teacher=0.25, hallucination=2.0)
    assert settings.weights() == [1.0, 0.25, 2.0]
    assert [get_callable_name(f) for f in reward_functions(settings)] == [
        "outcome_reward", "teacher_reward", "hallucination_reward"]

