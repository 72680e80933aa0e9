"""Chat-format SFT rows of the study's released shape into a dump: the fields mapped, the rows' chat format,
and malformed rows refused by line with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
from transformers import AutoTokenizer

from trajectories.dumps.columns import ATTEMPT_SCHEMA, KTO_SCHEMA, SCHEMA_VERSION
from trajectories.dumps.public_sft import MalformedRow, import_sft, read_rows, tools_in_prompt
from trajectories.training.data.round_trip import round_trips
from trajectories.training.dev.tiny import save_tiny_model

FIXTURE = Path(__file__).parents[1] / "fixtures" / "public_sft" / "shopping_sft.jsonl"


def test_every_field_of_the_fixture_is_mapped_into_the_dump_columns() -> None:
    rows = list(read_rows(FIXTURE))
    assert [row["problem_id"] for row in rows] == ["sft-0001", "sft-0002", "sft-0003", "shopping_sft-000004"]
    assert {row["split"] for row in rows} == {"train"} and {row["run_kind"] for row in rows} == {"imported"}
    assert {row["run_id"] for row in rows} == {"imported:shopping_sft.jsonl"}
    assert all(row["success"] for row in rows)
    assert [row["category"] for row in rows] == ["product", "shop", "voucher", None]
    assert len({row["attempt_id"] for row in rows}) == 4 and all(r["leak_cluster"] for r in rows)
    first, in_prompt, as_text, last = rows
    assert first["query"].startswith("I need a stainless steel water bottle")
    assert [m["role"] for m in first["messages"]][:3] == ["system", "user", "assistant"]
    assert first["messages"][2]["reasoning_content"].startswith("Search for steel bottles")
    assert [t["function"]["name"] for t in json.loads(first["tools"])] == [
        "find_product", "recommend_product", "terminate"]
    # tools given in the system prompt: read from its <tools> block, the prompt keeps its own text
    names = [t["function"]["name"] for t in json.loads(in_prompt["tools"])]
    assert names == ["find_product", "recommend_product"]
    assert in_prompt["messages"][0] == {"role": "system",
                                        "content": "You are a shopping assistant for an online marketplace."}
    calls = [m for m in in_prompt["messages"] if m.get("tool_calls")]
    assert calls[0]["reasoning_content"] == "Look for the case first and note its shop."  # <think> moved
    ids = [call["id"] for turn in calls for call in turn["tool_calls"]]
    answered = [m["tool_call_id"] for m in in_prompt["messages"] if m["role"] == "tool"]
    assert ids == answered == ["call_0", "call_1", "call_2"]  # calls without ids numbered, results paired
    assert json.loads(calls[1]["tool_calls"][0]["function"]["arguments"]) == {"q": "screen protector",
                                                                              "shop_id": "12"}
    assert [t["function"]["name"] for t in json.loads(as_text["tools"])] == ["find_product", "terminate"]
    assert as_text["messages"][0]["content"].startswith("You are a careful shopping assistant")
    assert last["filter_label"] == "agentic" and last["n_steps"] == 2
    assert set(rows[0]) == set(ATTEMPT_SCHEMA.names)


def test_a_prompt_without_a_tools_block_is_kept_whole() -> None:
    assert tools_in_prompt("You are a shopping assistant.") == ([], "You are a shopping assistant.")
    listed = tools_in_prompt('Help.\n<tools>\n[{"name": "terminate", "parameters": {}}]\n</tools>\nCall.')
    assert listed == ([{"type": "function", "function": {"name": "terminate", "parameters": {}}}], "Help.")


def test_the_imported_conversations_render_through_qwen3s_template_and_parse_back(tmp_path: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(save_tiny_model(tmp_path / "tiny"))
    rows = list(read_rows(FIXTURE))
    assert all(round_trips(tokenizer, row["messages"], json.loads(row["tools"])) for row in rows)
    broken = [dict(turn) for turn in rows[0]["messages"]]
    broken[2] = {**broken[2], "tool_calls": [{"id": "x", "type": "function",
                                              "function": {"name": "find_product", "arguments": "{oops"}}]}
    assert not round_trips(tokenizer, broken, json.loads(rows[0]["tools"]))


def test_the_dump_has_the_export_layout_and_schema(tmp_path: Path) -> None:
    out = tmp_path / "public"
    manifest = import_sft(FIXTURE, out)
    assert manifest["schema_version"] == SCHEMA_VERSION and manifest["splits"] == {"train": 4}
    assert manifest["kto_splits"] == {"train": 4} and manifest["source"]["rows"] == 4
    assert pq.read_schema(out / "data" / "train-00000.parquet").names == ATTEMPT_SCHEMA.names
    assert pq.read_schema(out / "kto" / "train-00000.parquet").names == KTO_SCHEMA.names
    files = orjson.loads((out / "manifest.json").read_bytes())["files"]
    assert files["data/train-00000.parquet"]["rows"] == 4
    assert "config_name: kto" in (out / "README.md").read_text(encoding="utf-8")
    with pytest.raises(FileExistsError, match="not empty"):
        import_sft(FIXTURE, out)


BAD_ROWS = [
    ("{not json", "not a chat-format SFT row"),
    ('["a list"]', "not a JSON object"),
    ('{"system": "s"}', "`messages` is missing"),
    ('{"messages": [{"role": "user", "content": "hi"}]}', "a user turn and an assistant turn"),
    ('{"messages": [{"role": "robot", "content": "hi"}]}', "turn 0 is not a chat turn"),
    ('{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", '
     '"tool_calls": [{"function": {}}]}]}', "turn 1: a tool call names no function"),
    ('{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": '
     '[{"function": {"name": "find_product", "arguments": "{oops"}}]}]}', "not a chat-format SFT row"),
    ('{"tools": {"a": 1}, "messages": [{"role": "user", "content": "q"}, '
     '{"role": "assistant", "content": "a"}]}', "`tools` is not a list"),
]


@pytest.mark.parametrize(("line", "why"), BAD_ROWS)
def test_a_malformed_row_is_refused_naming_its_line_and_nothing_is_written(line: str, why: str,
                                                                          tmp_path: Path) -> None:
    source = tmp_path / "rows.jsonl"
    good = FIXTURE.read_text(encoding="utf-8").splitlines()[0]
    source.write_text(f"{good}\n\n{line}\n", encoding="utf-8")
    with pytest.raises(MalformedRow, match=f"rows.jsonl:3: .*{why}"):
        import_sft(source, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out*"))
