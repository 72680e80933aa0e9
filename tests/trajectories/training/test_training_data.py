"""Dump rows to Qwen3 conversations: filters, the leak-cluster guard, and assistant-only labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
from transformers import AutoTokenizer

from tests.trajectories.training.conftest import HELD_OUT_CLUSTER
from trajectories.dumps.reader import read_held_out_clusters
from trajectories.training.data.conversations import DataFilter, select_conversations
from trajectories.training.data.tokens import IGNORE_INDEX, build_dataset, tokenize_conversation


def _rows(dump: Path) -> list[dict[str, Any]]:
    files = sorted((dump / "data").glob("*.parquet"))
    return [row for path in files for row in pq.read_table(path).to_pylist()]


def test_only_agentic_train_rows_outside_held_out_clusters_are_selected(tiny_dump: Path) -> None:
    rows = _rows(tiny_dump)
    assert {row["split"] for row in rows} == {"train", "held_out"}
    selection = select_conversations([tiny_dump])
    expected = {row["attempt_id"] for row in rows
                if row["split"] == "train" and row["filter_label"] == "agentic"}
    assert expected and {c.attempt_id for c in selection.conversations} == expected
    assert HELD_OUT_CLUSTER not in {c.leak_cluster for c in selection.conversations}
    assert selection.dropped["split:held_out"] == sum(row["split"] == "held_out" for row in rows)
    assert selection.dropped["label:sub_task"] > 0


def test_an_explicit_held_out_list_removes_train_clusters_too(tiny_dump: Path, tmp_path: Path) -> None:
    listed = tmp_path / "held_out.txt"
    listed.write_text("# published held-out set v1\ncluster-00002  # paraphrases of c-17\n\n",
                      encoding="utf-8")
    clusters = read_held_out_clusters(listed)
    assert clusters == {"cluster-00002"}
    selection = select_conversations([tiny_dump], held_out_clusters=clusters)
    kept = {c.leak_cluster for c in selection.conversations}
    assert kept and not kept & {"cluster-00002", HELD_OUT_CLUSTER}
    assert selection.held_out_clusters >= {"cluster-00002", HELD_OUT_CLUSTER}


def test_a_cluster_held_out_in_any_dump_is_never_trained_on(tiny_dump: Path, tmp_path: Path) -> None:
    """A second dump whose split rule put the held-out cluster on the train side cannot leak it."""
    other = tmp_path / "other"
    (other / "data").mkdir(parents=True)
    table = pq.read_table(next((tiny_dump / "data").glob("held_out-*.parquet")))
    relabelled = table.set_column(table.schema.get_field_index("split"), "split",
                                  [["train"] * table.num_rows])
    pq.write_table(relabelled, other / "data" / "train-00000.parquet")
    every_label = DataFilter(labels=frozenset({"agentic", "sub_task"}))
    selection = select_conversations([tiny_dump, other], every_label)
    assert HELD_OUT_CLUSTER not in {c.leak_cluster for c in selection.conversations}
    assert selection.dropped["held_out_cluster"] == table.num_rows


def test_score_thresholds_filter(tiny_dump: Path) -> None:
    rows = [row for row in _rows(tiny_dump) if row["split"] == "train" and row["filter_label"] == "agentic"]
    successes = {row["attempt_id"] for row in rows if row["success"]}
    assert 0 < len(successes) < len(rows)
    kept = select_conversations([tiny_dump], DataFilter(require_success=True)).conversations
    assert {c.attempt_id for c in kept} == successes
    high_rule = {row["attempt_id"] for row in rows if row["rule"] >= 0.5}
    kept = select_conversations([tiny_dump], DataFilter(min_rule=0.5)).conversations
    assert {c.attempt_id for c in kept} == high_rule
    unjudged = select_conversations([tiny_dump], DataFilter(min_judge_quality=0.1))
    assert not unjudged.conversations and unjudged.dropped["judge_quality_below_minimum"] == len(rows)


def test_conversations_follow_the_steps_in_qwen3_tool_format(tiny_dump: Path) -> None:
    rows = {row["attempt_id"]: row for row in _rows(tiny_dump)}
    conversation = select_conversations([tiny_dump]).conversations[0]
    steps = orjson.loads(rows[conversation.attempt_id]["steps_json"])
    messages = conversation.messages
    assert [m["role"] for m in messages[:2]] == ["system", "user"]
    assert messages[1]["content"] == rows[conversation.attempt_id]["query"]
    # The conversation the model had, as the proxy logged it: one assistant turn per answered call.
    assistants = [m for m in messages if m["role"] == "assistant"]
    assert len(assistants) == rows[conversation.attempt_id]["n_inference_calls"]
    first_call = steps[0]["completion"]["message"]["tool_call"][0]
    assert assistants[0]["reasoning_content"] == steps[0]["completion"]["message"]["think"]
    function = assistants[0]["tool_calls"][0]["function"]
    assert function["name"] == first_call["name"]
    assert json.loads(function["arguments"]) == first_call["parameters"]
    assert messages[3]["role"] == "tool" and messages[3]["content"].startswith('[{"product_id"')
    assert all(len(m["content"]) <= DataFilter().max_tool_chars + 3 for m in messages if m["role"] == "tool")


def test_hostile_steps_are_skipped_not_fatal(tiny_dump: Path, tmp_path: Path) -> None:
    table = pq.read_table(next((tiny_dump / "data").glob("train-*.parquet")))
    broken = ["not json", "[1, 2]", '{"a": 1}', "[" * 5000 + "]" * 5000]
    rows = table.to_pylist()
    agentic = [n for n, row in enumerate(rows) if row["filter_label"] == "agentic"]
    for n, text in zip(agentic, broken, strict=False):
        rows[n]["steps_json"] = text
    hostile = table.from_pylist(rows, schema=table.schema)
    # A dump with chat columns trains on them: the steps are not read at all.
    (tmp_path / "chat" / "data").mkdir(parents=True)
    pq.write_table(hostile, tmp_path / "chat" / "data" / "train-00000.parquet")
    assert len(select_conversations([tmp_path / "chat"]).conversations) == len(agentic)
    # A dump of the schema before them is read from its steps: the broken ones are skipped.
    out = tmp_path / "hostile"
    (out / "data").mkdir(parents=True)
    pq.write_table(hostile.drop_columns(["messages", "tools"]), out / "data" / "train-00000.parquet")
    selection = select_conversations([out])
    assert selection.dropped["unreadable_steps"] == len(broken)
    assert len(selection.conversations) == len(agentic) - len(broken)


def test_a_dump_without_data_is_refused_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="dump export"):
        select_conversations([tmp_path])


def test_labels_cover_exactly_the_assistant_turns(tiny_dump: Path, tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    conversation = select_conversations([tiny_dump]).conversations[0]
    example = tokenize_conversation(tokenizer, conversation, max_length=100_000)
    assert example is not None
    text = tokenizer.decode(example.input_ids)
    trained = [token for token in example.labels if token != IGNORE_INDEX]
    trained_text = tokenizer.decode(trained)
    # every assistant turn is trained: think, the tool call and the end-of-turn token the model must emit
    assistants = [m for m in conversation.messages if m["role"] == "assistant"]
    assert trained_text.count("<|im_end|>") == len(assistants)
    assert trained_text.count("<tool_call>") == sum(len(m["tool_calls"]) for m in assistants)
    assert assistants[0]["reasoning_content"] in trained_text
    # nothing the model does not generate is trained: system prompt, tools, query, tool results
    for message in conversation.messages:
        if message["role"] != "assistant":
            assert message["content"][:40] in text and message["content"][:40] not in trained_text
    assert "<tools>" not in trained_text and "<tool_response>" not in trained_text
    assert "<|im_start|>" not in trained_text
    masked = [token for token, label in zip(example.input_ids, example.labels, strict=True)
              if label == IGNORE_INDEX]
    tool_messages = sum(m["role"] == "tool" for m in conversation.messages)
    assert tokenizer.decode(masked).count("<tool_response>") == tool_messages


def test_truncation_keeps_the_start_and_drops_examples_with_nothing_to_learn(
        tiny_dump: Path, tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    conversations = select_conversations([tiny_dump]).conversations
    assert tokenize_conversation(tokenizer, conversations[0], max_length=64) is None  # only system prompt
    full = build_dataset(tokenizer, conversations, max_length=1_000_000)
    cut = max(len(ids) for ids in full["input_ids"]) - 1  # the longest conversation must be cut
    dataset = build_dataset(tokenizer, conversations, max_length=cut)
    assert len(dataset) == len(conversations)
    assert all(len(ids) <= cut for ids in dataset["input_ids"])
    longest = max(range(len(full)), key=lambda n: len(full["input_ids"][n]))
    assert dataset["input_ids"][longest] == full["input_ids"][longest][:cut]  # the start is kept
    assert all(any(label != IGNORE_INDEX for label in labels) for labels in dataset["labels"])
    with pytest.raises(ValueError, match="max_length"):
        build_dataset(tokenizer, conversations, max_length=64)
