"""Daily dumps: deterministic bytes, leak-cluster-isolated splits, the embargo, chat-format conversations and
their `kto` view, and `datasets` loads them."""

from __future__ import annotations

import gzip
import hashlib
import random
import re
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
from sqlalchemy import update

from shoppingbench.agent_sdk import MAX_TOOL_CHARS, SYSTEM_PROMPT, TOOL_SCHEMAS
from shoppingbench.records import AttemptRecord
from tests.trajectories.conftest import fresh_store_url
from tests.trajectories.records import T0, Log, failed_record, react_record
from trajectories.doubles.synthetic import Style, agent_code, make_attempt, make_problems
from trajectories.dumps import DumpWindow, ExportOptions, SplitRule, attempt_id, export_dump
from trajectories.dumps.export import EmptyWindow
from trajectories.labelling import label_stored
from trajectories.store import AgentEntry, ProblemEntry, RunEntry, TrajectoryStore, blobs
from trajectories.store.schema import ATTEMPTS
from trajectories.training.data.conversations import dump_messages, select_conversations

DAY = date(2026, 11, 21)
SINCE = datetime(2026, 11, 21, tzinfo=UTC).timestamp()
UNTIL = SINCE + 86_400
STYLES: tuple[Style, ...] = ("react", "sub_task", "scripted")
OPTIONS = ExportOptions(split_rule=SplitRule(held_out_clusters=frozenset({"cluster-00001"})))
"""Holds one of the four clusters out whatever its hash, so every split has rows."""


def _world() -> tuple[list[ProblemEntry], list[AgentEntry], list[AttemptRecord]]:
    """12 problems in 4 clusters plus one without a cluster; 3 agents; every agent on every problem,
    plus attempts just outside the day (and one exactly at each edge)."""
    rng = random.Random(5)
    problems = make_problems(rng, 12, per_cluster=3)
    problems.append(ProblemEntry(id="lone", category="product", query="a lone kettle", leak_cluster=None))
    agents = []
    for i, (style, published) in enumerate(zip(STYLES, (SINCE - 3600, UNTIL + 3600, None), strict=True)):
        code = agent_code(i, style)
        agents.append(AgentEntry(code_hash=hashlib.sha256(code.encode()).hexdigest(), hotkey=f"5Hk{i}",
                                 code=code, submitted_at=SINCE - 86_400, embargo_until=published,
                                 published_at=published))
    records = []
    for a, (agent, style) in enumerate(zip(agents, STYLES, strict=True)):
        for p, problem in enumerate(problems):
            started = SINCE + 600 * (a * len(problems) + p)
            records.append(make_attempt(rng, style, problem, run_id=f"run-{a}", agent_hash=agent.code_hash,
                                        started_at=SINCE if (a, p) == (0, 0) else started))
    outside = [(-1.0, "before"), (UNTIL - SINCE, "at-until"), (UNTIL - SINCE + 5, "after")]
    for offset, run in outside:
        records.append(make_attempt(rng, "react", problems[0], run_id=run, agent_hash=agents[0].code_hash,
                                    started_at=SINCE + offset))
    return problems, agents, records


def _fill(store: TrajectoryStore, problems: list[ProblemEntry], agents: list[AgentEntry],
          records: list[AttemptRecord]) -> None:
    store.register_problems(problems)
    for agent in agents:
        store.register_agent(agent)
    for run in sorted({r.run_id for r in records}):
        store.register_run(RunEntry(id=run, kind="qualifying", validator="5Val", suite="qual-1"))
    store.write_attempts(records, batch_size=7)


@pytest.fixture(scope="module")
def world() -> tuple[list[ProblemEntry], list[AgentEntry], list[AttemptRecord]]:
    return _world()


@pytest.fixture
def filled(store: TrajectoryStore, world: Any) -> TrajectoryStore:
    _fill(store, *world)
    return store


def _digests(directory: Path) -> dict[str, str]:
    return {p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def _rows(out: Path, split: str) -> list[dict[str, Any]]:
    return pq.read_table(sorted((out / "data").glob(f"{split}-*.parquet"))).to_pylist()


def test_the_same_day_gives_the_same_bytes_on_every_backend_and_insert_order(
        request: pytest.FixtureRequest, world: Any, tmp_path: Path) -> None:
    problems, agents, records = world
    outputs = []
    for n, (backend, order) in enumerate([("sqlite", 1), ("postgresql", -1), ("sqlite", -1)]):
        url = fresh_store_url(backend, request, name=f"det{n}")
        with TrajectoryStore.open(url) as store:
            _fill(store, problems, agents, records[::order])
            label_stored(store, since=SINCE, until=SINCE + 43_200, progress=False)  # half labelled, half not
            export_dump(store, DumpWindow.day(DAY), tmp_path / f"out{n}", options=OPTIONS, progress=False)
        outputs.append(_digests(tmp_path / f"out{n}"))
    assert outputs[0] == outputs[1] == outputs[2]
    assert {"README.md", "manifest.json", "agents.parquet", "agents.jsonl.gz", "data/train-00000.parquet",
            "data/held_out-00000.parquet", "data/unclustered-00000.jsonl.gz"} <= set(outputs[0])


def test_splits_follow_leak_clusters_and_the_manifest_adds_up(filled: TrajectoryStore, tmp_path: Path,
                                                               ) -> None:
    rule = SplitRule(held_out_fraction=0.3, held_out_clusters=frozenset({"cluster-00000"}))
    manifest = export_dump(filled, DumpWindow.day(DAY), tmp_path / "out",
                           options=ExportOptions(split_rule=rule), progress=False)
    rows = {split: _rows(tmp_path / "out", split) for split in ("train", "held_out", "unclustered")}
    clusters = {split: {r["leak_cluster"] for r in split_rows} for split, split_rows in rows.items()}
    assert clusters["train"] and clusters["held_out"], "this rule and data must fill both splits"
    assert not clusters["train"] & clusters["held_out"]
    assert "cluster-00000" in clusters["held_out"]
    assert clusters["unclustered"] == {None}
    for split, split_rows in rows.items():
        assert all(r["split"] == split == rule.split_of(r["leak_cluster"]) for r in split_rows)
    # The day holds 3 agents x 13 problems and the attempt starting exactly at midnight; not the others.
    assert sum(len(r) for r in rows.values()) == manifest["stats"]["attempts"] == 39
    assert {r["run_id"] for split_rows in rows.values() for r in split_rows} == {"run-0", "run-1", "run-2"}
    assert manifest["splits"] == {split: len(r) for split, r in rows.items()}
    counts = manifest["stats"]["counts"]
    assert counts["label"] == {"agentic": 13, "no_llm": 13, "sub_task": 13}
    categories = Counter(r["category"] for split_rows in rows.values() for r in split_rows)
    assert counts["category"] == dict(sorted(categories.items()))
    assert counts["leak_clusters"] == {split: len(c - {None}) for split, c in clusters.items() if c - {None}}
    assert manifest["stats"]["filter"]["sub_task"]["labels_from"] == {"computed": 13}
    for name, entry in manifest["files"].items():
        data = (tmp_path / "out" / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["bytes"]
    # A row is the attempt: same id, same steps and proxy log as the store holds.
    row = rows["train"][0]
    assert row["attempt_id"] == attempt_id(row["run_id"], row["agent_hash"], row["problem_id"])
    assert isinstance(orjson.loads(row["steps_json"]), list)
    assert row["started_at"] < row["finished_at"]


def test_a_cluster_lands_on_the_same_side_whatever_else_is_in_the_dump() -> None:
    rule = SplitRule(held_out_fraction=0.25)
    sides = {f"c{i}": rule.split_of(f"c{i}") for i in range(2000)}
    assert 0.2 < sum(s == "held_out" for s in sides.values()) / 2000 < 0.3
    assert all(SplitRule(held_out_fraction=0.25).split_of(c) == s for c, s in sides.items())
    assert SplitRule(held_out_fraction=0.0).split_of("c1") == "train"
    assert SplitRule(held_out_fraction=1.0).split_of("c1") == "held_out"
    assert rule.split_of(None) == rule.split_of("") == "unclustered"


def test_code_leaves_the_store_only_after_its_publication(filled: TrajectoryStore, tmp_path: Path,
                                                          world: Any) -> None:
    _, agents, _ = world
    export_dump(filled, DumpWindow.day(DAY), tmp_path / "out", options=OPTIONS, progress=False)
    exported = {r["agent_hash"]: r for r in pq.read_table(tmp_path / "out" / "agents.parquet").to_pylist()}
    assert set(exported) == {a.code_hash for a in agents}
    published, embargoed, private = agents
    assert exported[published.code_hash]["code"] == published.code
    assert exported[published.code_hash]["code_published"] is True
    for agent in (embargoed, private):
        assert exported[agent.code_hash]["code"] is None
        assert exported[agent.code_hash]["published_at"] is None
        assert exported[agent.code_hash]["code_published"] is False
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    everything = b"".join(gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
                          for p in files)
    assert embargoed.code is not None and embargoed.code.encode() not in everything
    # A later dump, after the publication, carries the code.
    later_window = DumpWindow(datetime.fromtimestamp(SINCE, UTC), datetime.fromtimestamp(UNTIL + 7200, UTC))
    export_dump(filled, later_window, tmp_path / "later", progress=False)
    later = {r["agent_hash"]: r for r in pq.read_table(tmp_path / "later" / "agents.parquet").to_pylist()}
    assert later[embargoed.code_hash]["code"] == embargoed.code


def test_datasets_loads_the_dump(filled: TrajectoryStore, tmp_path: Path) -> None:
    from datasets import load_dataset

    out = tmp_path / "out"
    manifest = export_dump(filled, DumpWindow.day(DAY), out, options=OPTIONS, progress=False)
    files = {split: str(out / "data" / f"{split}-*.parquet") for split in manifest["splits"]}
    loaded = load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "hf1"))
    assert {split: loaded[split].num_rows for split in loaded} == manifest["splits"]
    assert set(loaded["train"].unique("split")) == {"train"}
    by_card = load_dataset(str(out), cache_dir=str(tmp_path / "hf2"))  # the README's YAML configs
    assert {split: by_card[split].num_rows for split in by_card} == manifest["splits"]
    jsonl = load_dataset("json", data_files={"train": str(out / "data" / "train-*.jsonl.gz")},
                         cache_dir=str(tmp_path / "hf3"))
    assert jsonl["train"]["attempt_id"] == loaded["train"]["attempt_id"]


def test_the_cards_recipe_restores_full_inference_requests(filled: TrajectoryStore, tmp_path: Path) -> None:
    export_dump(filled, DumpWindow.day(DAY), tmp_path / "out", options=OPTIONS, progress=False)
    card = (tmp_path / "out" / "README.md").read_text()
    recipe = re.search(r"```python\n(import json\ndef expand.*?)```", card, re.DOTALL)
    assert recipe is not None
    namespace: dict[str, Any] = {}
    exec(recipe.group(1), namespace)
    react = next(r for r in _rows(tmp_path / "out", "train") if r["filter_label"] == "agentic")
    compact = orjson.loads(react["proxy_log_json"])
    assert any("request_messages_prefix" in c for c in compact)
    assert namespace["expand"](react["proxy_log_json"]) == blobs.expand_proxy_log(compact)
    stored = filled.load(filled.attempt_ids())
    original = next(s.record for s in stored if s.record.run_id == react["run_id"]
                    and s.record.problem_id == react["problem_id"])
    expected = [c.model_dump(mode="json") for c in original.proxy_log]
    assert namespace["expand"](react["proxy_log_json"]) == expected


def test_output_is_never_half_written(filled: TrajectoryStore, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export_dump(filled, DumpWindow.day(DAY), out, progress=False, options=ExportOptions(jsonl=False))
    before = _digests(out)
    assert not any(name.endswith(".jsonl.gz") for name in before)
    with pytest.raises(FileExistsError, match="--overwrite"):
        export_dump(filled, DumpWindow.day(DAY), out, progress=False)
    with filled.engine.begin() as connection:  # a damaged attempt in the middle of the day
        victim = filled.attempt_ids(SINCE, UNTIL)[20]
        connection.execute(update(ATTEMPTS).where(ATTEMPTS.c.id == victim).values(payload=b"not zstd"))
    with pytest.raises(OSError):
        export_dump(filled, DumpWindow.day(DAY), out, progress=False, overwrite=True)
    assert _digests(out) == before, "a failed export must leave the previous dump as it was"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")], "staging left behind"


def test_an_empty_window_is_refused(filled: TrajectoryStore, tmp_path: Path) -> None:
    with pytest.raises(EmptyWindow, match="nothing to export"):
        export_dump(filled, DumpWindow.day(date(2026, 1, 1)), tmp_path / "empty", progress=False)
    assert not (tmp_path / "empty").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")], "staging left behind"


def _one_attempt_dump(store: TrajectoryStore, records: list[AttemptRecord], out: Path,
                      ) -> list[dict[str, Any]]:
    store.register_problems([ProblemEntry(id=r.problem_id, category=r.category, query=r.query,
                                          leak_cluster=f"c-{r.problem_id}") for r in records])
    store.write_attempts(records)
    day = DumpWindow.day(datetime.fromtimestamp(T0, UTC).date())
    export_dump(store, day, out, progress=False,
                options=ExportOptions(split_rule=SplitRule(held_out_fraction=0.0)))
    return _rows(out, "train")


def test_messages_are_the_proxy_logged_conversation_in_chat_format(store: TrajectoryStore, tmp_path: Path,
                                                                   ) -> None:
    record = react_record()
    react, failed = _one_attempt_dump(store, [record, failed_record()], tmp_path / "out")
    last = [c for c in record.proxy_log if c.kind == "inference"][-1]
    assert last.request_messages is not None
    messages = react["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant", "tool",
                                             "assistant"]
    assert [m["content"] for m in messages[:2]] == [m["content"] for m in last.request_messages[:2]]
    calls = [(m["tool_calls"], messages[n + 1]) for n, m in enumerate(messages[:-1])
             if m["role"] == "assistant"]
    for (n, (name, params)), (tool_calls, answer) in zip(enumerate(
            [("find_product", {"q": "bình nước inox", "price": "-500", "service": "freeShipping"}),
             ("view_product_information", {"product_ids": "1001,1002"})]), calls, strict=True):
        assert len(tool_calls) == 1 and tool_calls[0]["type"] == "function"
        assert tool_calls[0]["function"]["name"] == name
        assert orjson.loads(tool_calls[0]["function"]["arguments"]) == params
        assert answer["tool_call_id"] == tool_calls[0]["id"] and answer["name"] == name
        assert answer["content"] == last.request_messages[3 + 2 * n]["content"]
        assert messages[2 + 2 * n]["reasoning_content"] == f"step {n}: compare 1001 (₱459.5) with 1002"
        assert messages[2 + 2 * n]["content"] == ""
    final = messages[-1]
    assert final["tool_calls"][0]["function"]["name"] == "recommend_product"
    assert final["reasoning_content"] == "Let me look." and final["tool_call_id"] is None
    assert len({m["tool_calls"][0]["id"] for m in messages if m["role"] == "assistant"}) == 3
    assert orjson.loads(react["tools"]) == TOOL_SCHEMAS
    assert failed["messages"] == [] and failed["tools"] == "[]"


def test_native_calls_keep_their_ids_and_the_request_tools(store: TrajectoryStore, tmp_path: Path) -> None:
    offered = [TOOL_SCHEMAS[0]]
    log = Log(T0)
    sent: list[dict[str, Any]] = [{"role": "system", "content": [{"type": "text", "text": "Shop."}]},
            {"role": "user", "content": "a kettle"},
            {"role": "assistant", "content": None, "reasoning_content": "search first",
             "tool_calls": [{"id": "x1", "type": "function",
                             "function": {"name": "find_product", "arguments": '{"q": "kettle"}'}}]},
            {"role": "tool", "tool_call_id": "x1", "content": '[{"product_id": "9"}]'}]
    log.infer(None, messages=sent, reasoning="9 is a kettle", tokens=5,
              tool_calls=[{"name": "recommend_product", "arguments": {"product_ids": "9"}}])
    log.calls[-1] = log.calls[-1].model_copy(update={"params": {**log.calls[-1].params, "tools": offered}})
    record = react_record().model_copy(update={"proxy_log": log.calls})
    (row,) = _one_attempt_dump(store, [record], tmp_path / "out")
    assert [(m["role"], m["content"]) for m in row["messages"][:2]] == [("system", "Shop."),
                                                                         ("user", "a kettle")]
    assert row["messages"][2]["tool_calls"][0]["id"] == "x1" and row["messages"][3]["tool_call_id"] == "x1"
    assert row["messages"][2]["reasoning_content"] == "search first"
    final = row["messages"][-1]
    assert final["reasoning_content"] == "9 is a kettle"
    assert final["tool_calls"][0]["function"] == {"name": "recommend_product",
                                                  "arguments": '{"product_ids": "9"}'}
    assert orjson.loads(row["tools"]) == offered


def test_the_kto_config_and_the_worker_read_the_conversations(filled: TrajectoryStore, tmp_path: Path,
                                                              ) -> None:
    from datasets import load_dataset

    out = tmp_path / "out"
    manifest = export_dump(filled, DumpWindow.day(DAY), out, options=OPTIONS, progress=False)
    card = (out / "README.md").read_text()
    assert "- config_name: kto" in card and "path: kto/train-*.parquet" in card
    with_llm = {split: sum(bool(r["messages"]) for r in _rows(out, split)) for split in manifest["splits"]}
    assert manifest["kto_splits"] == {split: n for split, n in with_llm.items() if n}
    kto = load_dataset(str(out), "kto", cache_dir=str(tmp_path / "hf"))
    train = {r["attempt_id"]: r for r in _rows(out, "train")}
    for row in kto["train"]:
        messages = train[row["attempt_id"]]["messages"]
        assert row["prompt"] + row["completion"] == messages
        assert row["label"] == train[row["attempt_id"]]["success"]
    # The worker takes the dump's conversations; without the columns (older dumps) it builds them from steps.
    selection = select_conversations([out])
    assert selection.conversations
    for conversation in selection.conversations:
        expected = dump_messages(train[conversation.attempt_id]["messages"], MAX_TOOL_CHARS)
        assert conversation.messages == expected
    old = tmp_path / "old"
    (old / "data").mkdir(parents=True)
    for path in (out / "data").glob("*.parquet"):
        table = pq.read_table(path)
        pq.write_table(table.drop_columns(["messages", "tools"]), old / "data" / path.name)
    older = select_conversations([old])
    assert {c.attempt_id for c in older.conversations} == {c.attempt_id for c in selection.conversations}
    assert all(c.messages[0]["content"] == SYSTEM_PROMPT for c in older.conversations)
