"""Small daily dumps of synthetic attempts, written through the real store and exporter.

For CPU runs of the stages (tests, ``benchmarks.training --tiny``, trying the worker without arena
data): ReAct agents give ``agentic`` trajectories, sub-task agents ``sub_task`` ones, and the listed
clusters land in the ``held_out`` split. :func:`write_sample_dump` invents its problems (no rewards:
enough for SFT and DPO on the dump's attempts); :func:`write_world_dump` registers real problems of a
catalog with their rewards, for the stages that roll out on a dump's problems (rejection sampling,
teacher trajectories, GRPO) and for held-out evaluation.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path

from shoppingbench.problems.models import Problem
from shoppingbench.records import AttemptRecord
from trajectories.doubles.synthetic import Style, SyntheticDay, make_agents, make_attempt, synthetic_day
from trajectories.dumps import DumpWindow, ExportOptions, SplitRule, export_dump
from trajectories.store import ProblemEntry, TrajectoryStore
from trajectories.store.entries import AgentEntry

SAMPLE_DAY = date(2026, 11, 21)


def write_sample_dump(out: Path, *, problems: int = 12, styles: tuple[Style, ...] = ("react", "sub_task"),
                      held_out_clusters: frozenset[str] = frozenset({"cluster-00001"}), seed: int = 7,
                      ) -> Path:
    """Every agent (one per style) attempts every problem (3 per leak cluster); returns ``out``."""
    day = synthetic_day(day_start=_day_start(), problems=problems, agents=len(styles), seed=seed,
                        styles=styles)
    return _export(out, day.problems, [agent.entry for agent in day.agents],
                   day.attempts(problems * len(styles)), held_out_clusters)


def write_world_dump(out: Path, problems: Sequence[Problem], *, per_cluster: int = 1,
                     held_out_clusters: frozenset[str] = frozenset({"cluster-00000"}),
                     styles: tuple[Style, ...] = ("react",), seed: int = 7) -> Path:
    """A dump over real ``problems`` (registered with their rewards; each run of ``per_cluster`` consecutive
    problems shares a leak cluster ``cluster-NNNNN``) with one synthetic attempt per agent style each."""
    entries = [ProblemEntry.of(p, suite="world-sample", leak_cluster=f"cluster-{i // per_cluster:05d}")
               for i, p in enumerate(problems)]
    day = SyntheticDay(day_start=_day_start(), problems=entries,
                       agents=make_agents(len(styles), day_start=_day_start(), styles=styles), seed=seed)
    rng = random.Random(seed)
    attempts = (make_attempt(random.Random(rng.random()), agent.style, problem, run_id=day.run_id(index),
                             agent_hash=agent.entry.code_hash, started_at=day.day_start + n)
                for n, problem in enumerate(entries) for index, agent in enumerate(day.agents))
    return _export(out, entries, [agent.entry for agent in day.agents], attempts, held_out_clusters)


def _day_start() -> float:
    return datetime.combine(SAMPLE_DAY, datetime.min.time(), tzinfo=UTC).timestamp()


def _export(out: Path, problems: list[ProblemEntry], agents: list[AgentEntry],
            attempts: Iterable[AttemptRecord], held_out_clusters: frozenset[str]) -> Path:
    with tempfile.TemporaryDirectory(prefix="sample-store-") as scratch, \
            TrajectoryStore.open(f"sqlite:///{Path(scratch) / 'store.sqlite3'}") as store:
        store.register_problems(problems)
        for agent in agents:
            store.register_agent(agent)
        store.write_attempts(attempts)
        options = ExportOptions(jsonl=False, split_rule=SplitRule(
            held_out_fraction=0.0, held_out_clusters=held_out_clusters))
        export_dump(store, DumpWindow.day(SAMPLE_DAY), out, options=options, progress=False)
    return out
