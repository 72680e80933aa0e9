"""The stored proxy log is the proxy's record, compacted: each entry is the call's JSON dump, and the
repeated conversation comes back whole, whatever shape the conversation takes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from shoppingbench.records import AttemptRecord, ProxyCall
from tests.trajectories.records import Log, failed_record, react_record
from trajectories.doubles.synthetic import synthetic_day
from trajectories.store import AttemptKey, TrajectoryStore, blobs

DAY_START = 1_790_035_200.0


def _expected_entries(calls: list[ProxyCall]) -> list[dict[str, Any]]:
    """The compact form as documented: ``model_dump(mode="json")`` of each call with
    ``request_messages`` moved last and cut to the messages new since the previous inference entry."""
    previous: list[dict[str, Any]] = []
    entries = []
    for call in calls:
        entry = call.model_dump(mode="json", exclude={"request_messages"})
        messages = call.request_messages
        entry["request_messages"] = messages
        if messages is not None:
            shared = 0
            while shared < min(len(messages), len(previous)) and messages[shared] == previous[shared]:
                shared += 1
            entry["request_messages"] = messages[shared:]
            if shared:
                entry["request_messages_prefix"] = shared
            previous = messages
        entries.append(entry)
    return entries


def _conversations() -> list[list[ProxyCall]]:
    """Proxy logs whose conversations grow, restart, shrink, get rewritten and repeat."""
    system = {"role": "system", "content": "You shop."}
    user = {"role": "user", "content": "a kettle, ₱900 max"}
    reply = {"role": "assistant", "content": "<tool_call>[]</tool_call>"}
    log = Log()
    log.infer("a", messages=[system, user])
    log.search("find_product", {"q": "kettle"}, ["1", "2"])
    log.infer("b", messages=[system, user, reply])                                      # grows
    log.infer("c", messages=[{"role": "user", "content": "pick one"}])                 # restarts
    log.infer("d", messages=[system, user, reply, {"role": "tool", "content": "[]"}])  # restarts again
    log.infer("e", messages=[system, user])                                            # shrinks
    log.infer("f", messages=[system, {**user, "content": "a kettle, ₱800 max"}, reply])  # history rewritten
    log.infer("g", messages=[system, {**user, "content": "a kettle, ₱800 max"}, reply])  # equal copies
    log.infer("h", messages=[])
    return [log.calls]


def _sample_logs() -> list[list[ProxyCall]]:
    day = synthetic_day(day_start=DAY_START, problems=6, agents=3, seed=5)
    synthetic = [record.proxy_log for record in day.attempts(6, templates=2)]
    return [react_record().proxy_log, failed_record().proxy_log, *synthetic, *_conversations()]


@pytest.mark.parametrize("calls", _sample_logs())
def test_the_compact_proxy_log_is_the_calls_json_dump_with_new_messages_only(calls: list[ProxyCall]) -> None:
    compact = blobs.compact_proxy_log(calls)
    assert orjson.dumps(compact) == orjson.dumps(_expected_entries(calls)), "bytes, key order included"
    restored = blobs.expand_proxy_log(orjson.loads(orjson.dumps(compact)))
    assert [ProxyCall.model_validate(entry) for entry in restored] == calls


def test_a_day_written_in_many_batches_and_chunks_reads_back_exactly(store: TrajectoryStore) -> None:
    """More attempts than one encoding chunk per batch, and a batch size the count does not divide."""
    day = synthetic_day(day_start=DAY_START, problems=20, agents=6, seed=9)
    records: list[AttemptRecord] = list(day.attempts(110, templates=4))
    assert store.write_attempts(records, batch_size=60) == len(records)
    stored = store.load(store.attempt_ids())
    assert len(stored) == len(records)
    by_key = {AttemptKey.of(r): r for r in records}
    for attempt in stored:
        assert attempt.record == by_key[AttemptKey.of(attempt.record)]
