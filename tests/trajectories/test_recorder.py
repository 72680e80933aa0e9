"""The run recorder labels each attempt as ``dump label`` does: the shopper's query is fair to repeat, so
a model restating the request is not an echo on the way in either (the recorder once left it out)."""

from __future__ import annotations

from pathlib import Path

from shoppingbench.problems.models import Problem, RewardTarget
from shoppingbench.records import AttemptRecord
from tests.trajectories.records import Log, score, step, tool_call_text
from trajectories.labelling import label_stored
from trajectories.recorder import RunRecorder
from trajectories.store import AgentEntry, AttemptKey, RunEntry, TrajectoryStore

QUERY = ("I am looking for a stainless steel insulated water bottle of one litre that keeps drinks cold "
         "for a whole day, with a leak proof lid and a carrying loop, under five hundred pesos and with "
         "free shipping to my city please")
SEARCH = {"q": "water bottle"}


def restating_record() -> AttemptRecord:
    """The model restates the whole request before its own search: copied text, but only the query's."""
    log = Log()
    log.infer(tool_call_text("find_product", SEARCH, think=QUERY),
              messages=[{"role": "user", "content": QUERY}])
    log.search("find_product", SEARCH, ["1001"])
    return AttemptRecord(run_id="run-q", problem_id="p1", category="product", query=QUERY,
                         agent_hash="c" * 64, steps=[step(0, "find_product", SEARCH, query=QUERY)],
                         proxy_log=log.calls, score=score("p1"), started_at=log.calls[0].started_at,
                         finished_at=log.clock + 1)


def test_the_recorder_labels_as_dump_label_does(tmp_path: Path) -> None:
    record = restating_record()
    problem = Problem(id="p1", category="product", query=QUERY, targets=[RewardTarget(product_id="1001")])
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 's.sqlite3'}") as store:
        with RunRecorder(store, RunEntry(id="run-q", kind="race"), agent=AgentEntry(code_hash="c" * 64),
                         problems=[problem]) as recorder:
            recorder.record(record)
        recorded = store.get_attempt(AttemptKey.of(record))
        assert recorded is not None and recorded.label is not None
        assert recorded.label.evidence.echoed_completions == 0
        on_the_way_in = recorded.label.label
        label_stored(store, progress=False)
        relabelled = store.get_attempt(AttemptKey.of(record))
    assert relabelled is not None and relabelled.label is not None
    assert relabelled.label.label == on_the_way_in
    assert relabelled.label.evidence.echoed_completions == 0
