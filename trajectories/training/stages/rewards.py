"""GRPO's rewards: the rules on one episode (pure) and the reward functions TRL calls with them.

An **episode** is what one rollout did in :mod:`environment`: its tool calls in order (name, arguments,
and for ``find_product`` the ids the search returned), the ids of the last ``recommend_product`` call and
whether ``terminate`` was called. A **step** is one tool call, for the model and the teacher alike.

Three components, each a separate TRL reward function (so each is logged per training step as
``rewards/<name>/mean``) combined by TRL's ``reward_weights``:

- ``outcome_reward``: the one scorer (``score_attempt`` with the :class:`Grader`'s catalog, embedder and
  profile, as the validator grades) on the episode's calls; the answer is the last recommendation, read
  exactly as an arena attempt's. Value ``success_share * success + (1 - success_share) * rule``: success
  is the headline (ASR) and jumps, rule gives partial credit for a product that meets some constraints.
- ``teacher_reward``: per-step agreement with the teacher's plan for the same problem (the best successful
  teacher attempt, :func:`best_teacher_attempts`): step i of the model against step i of the teacher,
  ``1 - argument_credit`` for the same tool plus ``argument_credit`` times the overlap of its key argument
  (:data:`KEY_ARGUMENTS`), 0 for another tool; summed over the aligned steps and divided by
  ``max(len(model), len(teacher))``, so missing and extra steps both cost. A problem without a teacher
  plan gets ``None``: TRL leaves the term out for those rollouts. A GRPO group is one problem, so its
  advantages then come from the other terms alone, at their own scale (nothing is re-weighted).
- ``hallucination_reward``: ``-h / (h + 1)`` for ``h`` product ids that a view or recommendation named but no
  earlier search of the episode returned (the rule of ``evaluation.hallucinations.count_unseen_ids``): 0 for
  none, -0.5 for one, towards -1 for many; it cannot be diluted by naming more real ids. The counts are also
  logged per step: ``hallucinations/ids`` (unseen ids named in the step's rollouts, per process),
  ``hallucinations/calls`` (calls naming one) and ``hallucinations/rollouts`` (share of rollouts with any).

That is the arena's own reward (``mode: arena``). ``mode: study_teacher_match`` is the study's (SPEC 7):
one reward function, ``study_teacher_reward``, the **per-step match with the teacher's tool choice** and
nothing else: step i of the rollout scores 1 when it calls the tool the teacher's plan calls at step i,
0 otherwise (another tool, or a step only one side has), over ``max(len(model), len(teacher))`` steps
(:func:`step_matches`). TRL's ``GRPOTrainer`` takes one scalar per rollout, so the rollout's reward is
the mean of its per-step matches (:func:`study_match`); arguments earn nothing (the study matches the tool
choice). Outcome and hallucinations are still measured and logged (``outcome/success``,
``hallucinations/ids``...) but never enter that reward.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shoppingbench.dialogue import ToolCall, create_dialogue_step
from shoppingbench.grading.grader import Grader
from shoppingbench.problems.models import Problem
from shoppingbench.records import AttemptRecord
from shoppingbench.scoring import AttemptScore, score_attempt
from shoppingbench.scoring.answer import tool_calls
from trajectories.training.evaluation.hallucinations import (
    Hallucinations,
    count_unseen_ids,
    named_product_ids,
)

LogMetric = Callable[[str, float], None]


@dataclass(frozen=True)
class ToolStep:
    """One tool call: the unit the model's episode and the teacher's plan are compared in."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EpisodeCall(ToolStep):
    returned_ids: tuple[str, ...] = ()
    """The product ids a ``find_product`` call returned (none for other tools or a refused search)."""


@dataclass
class Episode:
    """What one rollout did, in order."""

    calls: list[EpisodeCall] = field(default_factory=list)
    recommended: list[str] | None = None
    """Ids of the last ``recommend_product`` call (None: never called)."""
    terminated: bool = False


RewardMode = Literal["arena", "study_teacher_match"]
SHAPING_FIELDS = ("outcome", "teacher", "hallucination", "success_share", "argument_credit")


class RewardSettings(BaseModel):
    """The reward ``mode``; for ``arena`` the weights (TRL's ``reward_weights``, in the order outcome,
    teacher, hallucination) and shaping. ``study_teacher_match`` takes none of them (one term, weight 1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: RewardMode = Field(default="arena", description=(
        "arena: outcome + per-step teacher agreement + hallucination penalty, weighted; "
        "study_teacher_match: the study's per-step match with the teacher's tool choice only"))
    outcome: float = Field(default=1.0, ge=0, description="Weight of the scorer's outcome")
    teacher: float = Field(default=0.5, ge=0, description="Weight of the per-step agreement with the teacher")
    hallucination: float = Field(default=1.0, ge=0, description="Weight of the hallucination penalty")
    success_share: float = Field(default=0.5, ge=0, le=1, description=(
        "Outcome = success_share * success + (1 - success_share) * rule"))
    argument_credit: float = Field(default=0.5, ge=0, le=1, description=(
        "Share of a step's teacher credit for its key argument (0: the tool name alone)"))

    @model_validator(mode="after")
    def _study_takes_no_shaping(self) -> RewardSettings:
        given = sorted(set(SHAPING_FIELDS) & self.model_fields_set)
        if self.mode == "study_teacher_match" and given:
            raise ValueError(f"rewards.mode study_teacher_match is the teacher match alone: remove {given}")
        return self

    def weights(self) -> list[float]:
        if self.mode == "study_teacher_match":
            return [1.0]
        return [self.outcome, self.teacher, self.hallucination]


# -- outcome ---------------------------------------------------------------------------------------------

def episode_steps(query: str, episode: Episode) -> list[dict[str, Any]]:
    """The episode as dialogue steps (one per call), the shape the scorer reads an arena attempt in."""
    return [create_dialogue_step(index, query, tool_calls=[
        ToolCall(name=call.name, parameters=dict(call.arguments), tool_call_id=f"call-{index}")])
        for index, call in enumerate(episode.calls)]


def score_episode(problem: Problem, episode: Episode, grader: Grader) -> AttemptScore:
    """The validator's score of the episode (its format and length grades mean nothing here)."""
    return score_attempt(problem, episode_steps(problem.query, episode), grader.products, grader.embedder,
                         grader.profile)


def outcome_value(score: AttemptScore, success_share: float) -> float:
    return success_share * float(score.success) + (1 - success_share) * score.rule


# -- teacher ---------------------------------------------------------------------------------------------

KEY_ARGUMENTS: Mapping[str, str] = {"find_product": "q", "view_product_information": "product_ids",
                                    "recommend_product": "product_ids", "terminate": "status"}
"""The argument that says what a call is about; the others (page, filters) get no credit of their own."""

_WORD = re.compile(r"\w+")


def _argument_terms(name: str, value: Any) -> frozenset[str]:
    if name == "product_ids":
        return frozenset(named_product_ids(value))
    return frozenset(_WORD.findall(value.lower())) if isinstance(value, str) else frozenset()


def argument_agreement(model: ToolStep, teacher: ToolStep) -> float:
    """Jaccard overlap of the key argument's terms (query words, ids, status); 1 when neither has any."""
    key = KEY_ARGUMENTS.get(teacher.name)
    if key is None:
        return 1.0
    ours, theirs = (_argument_terms(key, step.arguments.get(key)) for step in (model, teacher))
    union = ours | theirs
    return len(ours & theirs) / len(union) if union else 1.0


def step_agreement(model: ToolStep, teacher: ToolStep, argument_credit: float) -> float:
    if model.name != teacher.name:
        return 0.0
    return 1 - argument_credit + argument_credit * argument_agreement(model, teacher)


def teacher_agreement(model: Sequence[ToolStep], teacher: Sequence[ToolStep],
                      argument_credit: float) -> float:
    """Step i against step i, summed, over ``max(len(model), len(teacher))`` steps (both empty: 1)."""
    longest = max(len(model), len(teacher))
    if not longest:
        return 1.0
    aligned = zip(model, teacher, strict=False)
    return sum(step_agreement(ours, theirs, argument_credit) for ours, theirs in aligned) / longest


def step_matches(model: Sequence[ToolStep], teacher: Sequence[ToolStep]) -> list[float]:
    """The study's per-step reward: for each step of the longer sequence, 1.0 when the model's i-th call
    names the teacher's i-th tool, else 0.0 (another tool, a missing step or an extra one)."""
    longest = max(len(model), len(teacher))
    return [1.0 if i < len(model) and i < len(teacher) and model[i].name == teacher[i].name else 0.0
            for i in range(longest)]


def study_match(model: Sequence[ToolStep], teacher: Sequence[ToolStep]) -> float:
    """The rollout's reward in ``study_teacher_match`` mode: the mean of :func:`step_matches`."""
    return _mean_match(step_matches(model, teacher))


def _mean_match(matches: Sequence[float]) -> float:
    """The mean of per-step matches; 1.0 for no step on either side (which a teacher plan never is)."""
    return sum(matches) / len(matches) if matches else 1.0


def attempt_plan(record: AttemptRecord) -> list[ToolStep]:
    """The teacher's tool calls in order (steps that are not well-formed contribute none)."""
    plan: list[ToolStep] = []
    for step in record.steps:
        for call in tool_calls(step):
            name, parameters = call.get("name"), call.get("parameters")
            if isinstance(name, str):
                plan.append(ToolStep(name, parameters if isinstance(parameters, dict) else {}))
    return plan


def _preference(record: AttemptRecord) -> tuple[float, int, float, float, str]:
    # Exact products first, then the shortest plan, the best format; time and run only break ties
    return (-record.score.gt, len(attempt_plan(record)), -record.score.format, record.started_at,
            record.run_id)


def best_teacher_attempts(records: Iterable[AttemptRecord]) -> dict[str, AttemptRecord]:
    """Per problem, the best successful attempt with at least one call; independent of the records' order."""
    best: dict[str, AttemptRecord] = {}
    for record in records:
        if not record.score.success or record.failure is not None or not attempt_plan(record):
            continue
        current = best.get(record.problem_id)
        if current is None or _preference(record) < _preference(current):
            best[record.problem_id] = record
    return best


def plan_json(plan: Sequence[ToolStep]) -> str:
    """A plan as a dataset cell (JSON text, so Arrow never unifies argument dicts across rows)."""
    return json.dumps([{"name": step.name, "arguments": dict(step.arguments)} for step in plan],
                      ensure_ascii=False, default=str)


def parse_plan(text: str) -> list[ToolStep]:
    return [ToolStep(step["name"], step["arguments"]) for step in json.loads(text)]


# -- hallucination ---------------------------------------------------------------------------------------

def episode_hallucinations(episode: Episode) -> Hallucinations:
    """Ids viewed or recommended that no earlier search of the episode returned (one step per call)."""
    searches = iter([list(call.returned_ids) for call in episode.calls if call.name == "find_product"])
    return count_unseen_ids(([(call.name, call.arguments)] for call in episode.calls), searches)


def hallucination_penalty(unseen_ids: int) -> float:
    return -unseen_ids / (unseen_ids + 1)


# -- TRL reward functions ----------------------------------------------------------------------------------
# TRL calls each with the batch's completions, the dataset columns (problem_id, problem, teacher_plan), the
# rollouts' environments and ``log_metric``; it logs each under its function name (partials unwrapped).

class EpisodeSource(Protocol):
    """What the reward functions read from an environment after its rollout."""

    @property
    def problem(self) -> Problem: ...

    @property
    def episode(self) -> Episode: ...

    @property
    def grader(self) -> Grader: ...


def _logged_scores(environments: Sequence[EpisodeSource], log_metric: LogMetric) -> list[AttemptScore]:
    scores = [score_episode(env.problem, env.episode, env.grader) for env in environments]
    log_metric("outcome/success", sum(score.success for score in scores) / len(scores))
    log_metric("outcome/rule", sum(score.rule for score in scores) / len(scores))
    return scores


def _logged_hallucinations(environments: Sequence[EpisodeSource],
                           log_metric: LogMetric) -> list[Hallucinations]:
    counts = [episode_hallucinations(env.episode) for env in environments]
    log_metric("hallucinations/ids", sum(c.ids_hallucinated for c in counts))
    log_metric("hallucinations/calls", sum(c.steps_hallucinated for c in counts))
    log_metric("hallucinations/rollouts", sum(1 for c in counts if c.ids_hallucinated) / len(counts))
    return counts


def outcome_reward(*, environments: Sequence[EpisodeSource], log_metric: LogMetric, success_share: float,
                   **_: Any) -> list[float | None]:
    return [outcome_value(score, success_share) for score in _logged_scores(environments, log_metric)]


def teacher_reward(*, environments: Sequence[EpisodeSource], teacher_plan: Sequence[str | None],
                   argument_credit: float, **_: Any) -> list[float | None]:
    return [None if plan is None else teacher_agreement(env.episode.calls, parse_plan(plan), argument_credit)
            for env, plan in zip(environments, teacher_plan, strict=True)]


def hallucination_reward(*, environments: Sequence[EpisodeSource], log_metric: LogMetric,
                         **_: Any) -> list[float | None]:
    counts = _logged_hallucinations(environments, log_metric)
    return [hallucination_penalty(c.ids_hallucinated) for c in counts]


def study_teacher_reward(*, environments: Sequence[EpisodeSource], teacher_plan: Sequence[str | None],
                         log_metric: LogMetric, **_: Any) -> list[float | None]:
    """The study's reward: per rollout the mean per-step match with the teacher's tool choice (None
    without a plan; the study stage trains only on problems that have one). Also logs
    ``teacher/step_match`` (matched steps / all steps of the batch) and, for watching only, the outcome
    and hallucination counts, which are not part of the reward."""
    matches = [None if plan is None else step_matches(env.episode.calls, parse_plan(plan))
               for env, plan in zip(environments, teacher_plan, strict=True)]
    steps = [value for found in matches if found is not None for value in found]
    log_metric("teacher/step_match", sum(steps) / len(steps) if steps else 0.0)
    _logged_scores(environments, log_metric)
    _logged_hallucinations(environments, log_metric)
    return [None if found is None else _mean_match(found) for found in matches]


def reward_functions(settings: RewardSettings) -> list[Callable[..., list[float | None]]]:
    """The reward functions in the order of ``settings.weights()``."""
    if settings.mode == "study_teacher_match":
        return [study_teacher_reward]
    return [functools.partial(outcome_reward, success_share=settings.success_share),
            functools.partial(teacher_reward, argument_credit=settings.argument_credit),
            hallucination_reward]
