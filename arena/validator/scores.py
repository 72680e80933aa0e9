"""Per-agent, per-category scores of the validator's own runs, read from the trajectory store."""

from __future__ import annotations

from pydantic import BaseModel
from sqlalchemy import Integer, cast, func, select

from trajectories.store import TrajectoryStore
from trajectories.store.schema import AgentRow, AttemptRow, ProblemRow, RunRow


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


def category_scores(store: TrajectoryStore, *,
                    kinds: tuple[str, ...] = ("qualifying", "race")) -> list[CategoryScore]:
    query = (select(AttemptRow.run_id, RunRow.kind, RunRow.suite, AttemptRow.agent_hash, AgentRow.hotkey,
                    ProblemRow.category, func.count().label("attempts"),
                    func.sum(cast(AttemptRow.success, Integer)).label("successes"),
                    func.avg(AttemptRow.judge_quality).label("mean_quality"))
             .join(RunRow, RunRow.id == AttemptRow.run_id)
             .join(ProblemRow, ProblemRow.id == AttemptRow.problem_id)
             .join(AgentRow, AgentRow.code_hash == AttemptRow.agent_hash)
             .where(RunRow.kind.in_(kinds))
             .group_by(AttemptRow.run_id, RunRow.kind, RunRow.suite, AttemptRow.agent_hash, AgentRow.hotkey,
                       ProblemRow.category)
             .order_by(AttemptRow.run_id, ProblemRow.category))
    with store.engine.connect() as connection:
        rows = connection.execute(query).all()
    return [CategoryScore(run_id=r.run_id, kind=r.kind, suite=r.suite, agent_hash=r.agent_hash,
                          hotkey=r.hotkey, category=r.category, attempts=r.attempts,
                          success_rate=(r.successes or 0) / r.attempts,
                          mean_quality=None if r.mean_quality is None else float(r.mean_quality))
            for r in rows]
