"""The structural filter gives no ``agentic`` label for tool calls only echoed completions carry, and the
store and the dumps count echoed completions (``echoed_completions``), old rows included."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from sqlalchemy import insert, select

from shoppingbench.records import AttemptRecord
from tests.trajectories.records import Log, encode_attempt, react_record, score, step, tool_call_text
from trajectories.doubles.synthetic import make_attempt, make_problems
from trajectories.dumps.export import DumpWindow, ExportOptions, export_dump
from trajectories.dumps.splits import SplitRule
from trajectories.filter import label_attempt
from trajectories.labelling import label_stored
from trajectories.store import AttemptKey, ProblemEntry, TrajectoryStore
from trajectories.store.engine import make_engine
from trajectories.store.entries import AttemptWrite
from trajectories.store.migrate import upgrade
from trajectories.store.schema import AGENTS, ATTEMPTS, PROBLEMS, RUNS

QUERY = "A steel water bottle under 500 pesos with free shipping."
PLAN: list[tuple[str, dict[str, Any]]] = [
    ("find_product", {"q": "steel water bottle", "price": "-500", "service": "freeShipping"}),
    ("view_product_information", {"product_ids": "1001,1002"}),
]


def laundered_record(problem_id: str = "p-echo") -> AttemptRecord:
    """Code picks each call and has the model repeat it before running it."""
    log, steps = Log(), []
    for n, (name, params) in enumerate(PLAN):
        chosen = tool_call_text(name, params, think="Next call.")
        log.infer(chosen, messages=[{"role": "system", "content": "Repeat the user's message exactly."},
                                    {"role": "user", "content": chosen}])
        log.search(name, params, ["1001", "1002"])
        steps.append(step(n, name, params, query=QUERY))
    return AttemptRecord(run_id="run-1", problem_id=problem_id, category="product", query=QUERY,
                         agent_hash="e" * 64, steps=steps, proxy_log=log.calls, score=score(problem_id),
                         started_at=log.calls[0].started_at, finished_at=log.clock + 1)


def test_tool_calls_the_model_only_repeated_are_not_agentic() -> None:
    record = laundered_record()
    verdict = label_attempt(record.proxy_log, record.steps, query=record.query)
    assert verdict.label == "sub_task"
    assert (verdict.evidence.echoed_completions, verdict.evidence.matched_tool_calls) == (2, 0)
    # The same log with the model choosing: the request did not hold the calls.
    honest = [c.model_copy(update={"request_messages": [{"role": "user", "content": QUERY}]})
              for c in record.proxy_log]
    assert label_attempt(honest, record.steps, query=QUERY).label == "agentic"


def test_honest_attempts_keep_their_labels_and_no_echo() -> None:
    record = react_record()
    verdict = label_attempt(record.proxy_log, record.steps, query=record.query)
    assert (verdict.label, verdict.evidence.echoed_completions) == ("agentic", 0)
    rng = random.Random(5)
    for problem in make_problems(rng, 6):
        synthetic = make_attempt(rng, "react", problem, run_id="r", agent_hash="h", started_at=1.0e9)
        labelled = label_attempt(synthetic.proxy_log, synthetic.steps, query=synthetic.query)
        assert (labelled.label, labelled.evidence.echoed_completions) == ("agentic", 0), labelled.reasons


def _register(store: TrajectoryStore, records: list[AttemptRecord]) -> None:
    store.register_problems(ProblemEntry(id=r.problem_id, category=r.category, query=_query(r),
                                         leak_cluster=f"c-{r.problem_id}") for r in records)


def _query(record: AttemptRecord) -> str:
    return record.query.replace("\x00", "")  # a problem's query is text PostgreSQL can hold


def test_the_store_counts_echoed_completions_and_relabelling_reads_them(tmp_path: Path) -> None:
    records = [laundered_record(), react_record()]
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 's.sqlite3'}") as store:
        _register(store, records)
        store.write_attempts(records)
        assert label_stored(store, progress=False) == {"sub_task": 1, "agentic": 1}
        with store.engine.connect() as connection:
            counts = dict(connection.execute(
                select(ATTEMPTS.c.problem_id, ATTEMPTS.c.echoed_completions)).all())
        stored = store.get_attempt(AttemptKey.of(records[0]))
    assert counts == {"p-echo": 2, "p1": 0}
    assert stored is not None and stored.label is not None and stored.label.evidence.echoed_completions == 2


LATER_COLUMNS = ("echoed_completions", "infra_failed", "judge_gates_passed")
"""Columns migrations after 0003 added (0004, 0005, 0007): a 0003-era writer wrote none of them."""


def test_upgrading_a_0003_store_keeps_its_rows_and_the_dump_measures_them(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    records = [laundered_record(), react_record()]
    engine = make_engine(url)
    try:
        upgrade(engine, "0003")
        with engine.begin() as connection:  # what a 0003-era writer stored: no echo column
            connection.execute(insert(PROBLEMS).values(
                [{"id": r.problem_id, "version": 1, "category": r.category, "query": _query(r)}
                 for r in records]))
            connection.execute(insert(AGENTS).values([{"code_hash": r.agent_hash} for r in records]))
            connection.execute(insert(RUNS).values(id="run-1"))
            connection.execute(insert(ATTEMPTS).values(
                [{k: v for k, v in encode_attempt(AttemptWrite(record=r)).items()
                  if k not in LATER_COLUMNS} for r in records]))
        upgrade(engine)
        with engine.connect() as connection:
            assert set(connection.execute(select(ATTEMPTS.c.echoed_completions)).scalars()) == {None}
    finally:
        engine.dispose()
    with TrajectoryStore.open(url) as store:
        for record in records:
            stored = store.get_attempt(AttemptKey.of(record))
            assert stored is not None and stored.record == record
        dump = tmp_path / "dump"
        window = DumpWindow(datetime.fromtimestamp(0, UTC), datetime.fromtimestamp(2e9, UTC))
        export_dump(store, window, dump, progress=False,
                    options=ExportOptions(split_rule=SplitRule(held_out_fraction=0)))
    rows = [row for path in sorted((dump / "data").glob("*.parquet"))
            for row in pq.read_table(path).to_pylist()]
    assert {r["problem_id"]: (r["echoed_completions"], r["filter_label"]) for r in rows} == {
        "p-echo": (2, "sub_task"), "p1": (0, "agentic")}
    manifest = (dump / "manifest.json").read_text()
    assert '"echoed_attempts":1' in manifest.replace(" ", "")
    assert "echoed_completions" in (dump / "README.md").read_text()
