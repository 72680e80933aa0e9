"""A small daily dump of synthetic attempts, written through the real store and exporter.

For CPU runs of the stages (tests, ``benchmarks.training --tiny``, trying the worker without arena
data): ReAct agents give ``agentic`` trajectories, sub-task agents ``sub_task`` ones, and the listed
clusters land in the ``held_out`` split.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, date, datetime
from pathlib import Path

from trajectories.dumps import DumpWindow, ExportOptions, SplitRule, export_dump
from trajectories.store import TrajectoryStore
from trajectories.synthetic import Style, synthetic_day

SAMPLE_DAY = date(2026, 11, 21)


def write_sample_dump(out: Path, *, problems: int = 12, styles: tuple[Style, ...] = ("react", "sub_task"),
                      held_out_clusters: frozenset[str] = frozenset({"cluster-00001"}), seed: int = 7,
                      ) -> Path:
    """Every agent (one per style) attempts every problem (3 per leak cluster); returns ``out``."""
    start = datetime.combine(SAMPLE_DAY, datetime.min.time(), tzinfo=UTC).timestamp()
    day = synthetic_day(day_start=start, problems=problems, agents=len(styles), seed=seed, styles=styles)
    with tempfile.TemporaryDirectory(prefix="sample-store-") as scratch, \
            TrajectoryStore.open(f"sqlite:///{Path(scratch) / 'store.sqlite3'}") as store:
        store.register_problems(day.problems)
        for agent in day.agents:
            store.register_agent(agent.entry)
        store.write_attempts(day.attempts(problems * len(styles)))
        options = ExportOptions(jsonl=False, split_rule=SplitRule(
            held_out_fraction=0.0, held_out_clusters=held_out_clusters))
        export_dump(store, DumpWindow.day(SAMPLE_DAY), out, options=options, progress=False)
    return out
