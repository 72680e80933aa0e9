"""What callers hand the store and get back: pydantic models at the store's boundary."""

from __future__ import annotations

import hashlib
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shoppingbench.problems.models import Category, Problem
from shoppingbench.records import AttemptRecord
from trajectories.filter import FilterVerdict

RunKind = Literal["qualifying", "race", "local_test", "held_out"]
RunRole = Literal["challenger", "defender", "original", "entrant"]
"""The part a run's agent plays in the arena: a submission on its own qualifying problems (``challenger``),
the reigning winner's code on a challenger's (``defender``), a suspected original re-run on a challenger's
to compare behaviour (``original``), a submission in a race (``entrant``). Runs outside the contest (a
miner's local test) have none."""


class AttemptKey(NamedTuple):
    """An attempt's identity: writing the same key again updates the attempt."""

    run_id: str
    agent_hash: str
    problem_id: str

    @classmethod
    def of(cls, record: AttemptRecord) -> AttemptKey:
        return cls(record.run_id, record.agent_hash, record.problem_id)


class ProblemEntry(BaseModel):
    """A problem as its registrar knows it. ``leak_cluster`` is computed by the arena (SPEC 5)."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1, max_length=128)
    category: Category
    query: str
    version: int = Field(default=1, ge=1)
    suite: str | None = Field(default=None, max_length=128)
    leak_cluster: str | None = Field(default=None, max_length=128)
    reward: Any = Field(default=None, description="The ShoppingBench reward (and voucher), when known")

    @classmethod
    def of(cls, problem: Problem, *, version: int = 1, suite: str | None = None,
           leak_cluster: str | None = None) -> ProblemEntry:
        raw = problem.to_shoppingbench()
        return cls(id=problem.id, category=problem.category, query=problem.query, version=version,
                   suite=suite, leak_cluster=leak_cluster,
                   reward={k: v for k, v in raw.items() if k != "query"})


class AgentEntry(BaseModel):
    """An agent file. Its code is exported in dumps only once ``published_at`` is set and not later
    than the dump's cut-off (the embargo, SPEC 4)."""

    model_config = ConfigDict(frozen=True)

    code_hash: str = Field(min_length=1, max_length=64, description="sha256 hex of the file's bytes")
    hotkey: str | None = Field(default=None, max_length=64)
    submitted_at: float | None = None
    embargo_until: float | None = Field(default=None, description="When the embargo is due to lift")
    published_at: float | None = Field(default=None, description="When the code was actually published")
    code: str | None = None

    @model_validator(mode="after")
    def _code_matches_hash(self) -> AgentEntry:
        if self.code is not None and "\x00" in self.code:
            raise ValueError("the code contains NUL characters: it is not Python source")
        if self.code is not None and hashlib.sha256(self.code.encode()).hexdigest() != self.code_hash:
            raise ValueError(f"the code does not hash to {self.code_hash}: store the exact submitted file")
        return self


class RunEntry(BaseModel):
    """One run as its creator knows it: what it is is said by its fields, never read out of its id."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1, max_length=128)
    kind: RunKind
    submission_id: str | None = Field(default=None, max_length=64,
                                      description="The submission whose agent the run runs")
    race_id: str | None = Field(default=None, max_length=32, description="The race of a race run")
    role: RunRole | None = None
    validator: str | None = Field(default=None, max_length=64, description="Hotkey of the validator")
    suite: str | None = Field(default=None, max_length=128)
    started_at: float | None = None
    finished_at: float | None = None


class JudgeVerdict(BaseModel):
    """The reasoning judge's verdict on one attempt (SPEC 3), as the store keeps it."""

    model_config = ConfigDict(frozen=True)

    model: str = Field(min_length=1, max_length=128, description="Judge model, or the offline judge's name")
    quality: float = Field(ge=0, le=1)
    gates_passed: int | None = Field(default=None, ge=0, le=4, description=(
        "How many of the four gates the attempt passed, as the judge decided (4: all; None: not said)"))
    offline: bool = Field(default=False, description="Decided by offline rules, not by a judge model")
    explanation: str = ""
    details: dict[str, Any] = Field(default_factory=dict, description="Anything else the judge reports")


class AttemptWrite(BaseModel):
    """One attempt to store, with the verdicts known at write time."""

    record: AttemptRecord
    judge: JudgeVerdict | None = None
    label: FilterVerdict | None = None


class StoredAttempt(BaseModel):
    """An attempt read back: the record exactly as written, and its verdicts."""

    id: int
    record: AttemptRecord
    judge: JudgeVerdict | None = None
    label: FilterVerdict | None = None


# One agent's attempts in one run on the problems of one category, summed up. (No docstring: the
# validator API serves this model, and a docstring would change its OpenAPI schema.)
class CategoryScore(BaseModel):
    run_id: str
    kind: str
    suite: str | None
    agent_hash: str
    hotkey: str | None
    category: str
    attempts: int
    success_rate: float
    mean_quality: float | None
