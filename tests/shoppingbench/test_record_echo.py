"""The echo measure a record carries (``AttemptRecord.measure_echoes``): taken by the grader when it builds
the record, equal to the measure taken again, in memory only (never read from JSON), and dropped as soon
as the record's query or proxy log is no longer the one it was taken on."""

from __future__ import annotations

import pickle
from typing import Any

import orjson

from shoppingbench.echo import echoed_calls
from shoppingbench.grading.grader import Grader
from shoppingbench.records import ECHO_MEASURE_KEY, AttemptFailure, AttemptRecord, ProxyCall
from shoppingbench.scoring import ORIGINAL
from tests.sandbox_support import problem
from tests.shoppingbench.scoring.test_scoring_support import FakeEmbedder
from tests.shoppingbench.test_echo import ANALYSIS, HONEST, QUERY, call, react_messages

ECHOING = [{"role": "system", "content": "Repeat the user's message."}, {"role": "user", "content": ANALYSIS}]


def _log() -> list[ProxyCall]:
    """One honest completion, one echoed one: the measure finds seq 1."""
    return [call(0, HONEST, react_messages()), call(1, ANALYSIS, ECHOING)]


def _graded(proxy_log: list[ProxyCall], query: str = QUERY) -> AttemptRecord:
    grader = Grader(lambda ids: {}, FakeEmbedder(), ORIGINAL)
    return grader.record(run_id="run-1", agent_hash="a" * 64, problem=problem("p-1", query), steps=[],
                         failure=AttemptFailure(kind="crash", reason="test"), started_at=1.0, finished_at=2.0,
                         proxy_log=proxy_log)


def test_the_grader_builds_records_carrying_the_measure_taken_again() -> None:
    record = _graded(_log())
    assert record.carried_echoes() == echoed_calls(record.proxy_log, record.query) == [1]
    assert record.echoed_calls() == [1]
    honest = _graded([call(0, HONEST, react_messages())])
    assert honest.carried_echoes() == [] == echoed_calls(honest.proxy_log, honest.query)


def test_a_record_read_from_json_carries_none_and_is_measured() -> None:
    record = _graded(_log())
    dumped: dict[str, Any] = record.model_dump(mode="json")
    assert ECHO_MEASURE_KEY not in dumped and ECHO_MEASURE_KEY not in record.model_dump_json()
    read = AttemptRecord.model_validate(dumped)
    assert read.carried_echoes() is None
    assert read.echoed_calls() == [1]
    assert read == record, "the measure is a cache: it does not change what the record equals"


def test_a_forged_measure_in_the_json_is_ignored() -> None:
    """Whatever a file or dump says, the measure is the one taken in memory, never one read."""
    fields = orjson.loads(_graded(_log()).model_dump_json())
    fields[ECHO_MEASURE_KEY] = {"query": QUERY, "calls": [], "echoed": []}
    fields["echo_measure"] = []
    forged = AttemptRecord.model_validate(fields)
    assert forged.carried_echoes() is None
    assert forged.echoed_calls() == [1]


def test_copies_keep_the_measure_only_while_query_and_log_are_the_same() -> None:
    record = _graded(_log())
    flagged = record.model_copy(update={"infra_failed": True, "infra_retries": 2})
    assert flagged.carried_echoes() == [1], "the runner's and the validator's copies keep it"
    assert pickle.loads(pickle.dumps(record)).carried_echoes() == [1], "a worker's pickled record keeps it"
    # The copies of another query or another log (the same log rebuilt, even) are measured again.
    assert record.model_copy(update={"query": ANALYSIS}).carried_echoes() is None
    assert record.model_copy(update={"query": ANALYSIS}).echoed_calls() == []  # copying the query is fair
    rebuilt = [c.model_copy() for c in record.proxy_log]
    assert record.model_copy(update={"proxy_log": rebuilt}).carried_echoes() is None
    assert record.model_copy(update={"proxy_log": rebuilt[:1]}).echoed_calls() == []


def test_a_log_changed_in_place_after_the_measure_is_measured_again() -> None:
    record = _graded(_log()[:1])
    assert record.carried_echoes() == []
    record.proxy_log.append(call(1, ANALYSIS, ECHOING))
    assert record.carried_echoes() is None
    assert record.echoed_calls() == [1]
    record.proxy_log[1] = call(1, HONEST, react_messages())
    assert record.measure_echoes().carried_echoes() == []
