"""The dump's writers and the chat rendering's block finder give what the plain conversions give: a row
group read back from its JSON lines equals the table Arrow builds from the Python rows, and tool-result
blocks are found as the lazy regular expression finds them."""

from __future__ import annotations

import random
import re
from typing import Any

import orjson
import pyarrow as pa

from trajectories.dumps.chat import _tagged_blocks, _without_blocks
from trajectories.dumps.columns import ATTEMPT_SCHEMA, KTO_SCHEMA
from trajectories.dumps.writers import row_group_table


def _row(rng: random.Random, schema: pa.Schema) -> dict[str, Any]:
    """A row of ``schema`` with awkward values: nulls, floats that print long, text beyond ASCII with
    quotes and newlines, messages with and without tool calls."""
    text = "".join(rng.choice(['"', "\\", "\n", "é", "😀", "a", "<obs>", "\u2028"]) for _ in range(12))
    call = {"id": "call_0", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}
    messages = [{"role": "system", "content": text}, {"role": "user", "content": ""},
                {"role": "assistant", "content": text, "reasoning_content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_0", "name": "search", "content": text}]
    values: dict[str, Any] = {}
    for field in schema:
        if rng.random() < 0.2 and field.name not in ("messages", "prompt", "completion"):
            values[field.name] = None
        elif pa.types.is_string(field.type):
            values[field.name] = text
        elif pa.types.is_floating(field.type):
            values[field.name] = rng.choice([0.1, 1 / 3, 1763683200.123456, 5e-324, -0.0, 1e300])
        elif pa.types.is_integer(field.type):
            values[field.name] = rng.choice([0, -1, 2**31 - 1])
        elif pa.types.is_boolean(field.type):
            values[field.name] = rng.random() < 0.5
        elif field.type.value_type == pa.string():
            values[field.name] = [text] * rng.randint(0, 2)
        else:
            values[field.name] = messages[:rng.randint(0, len(messages))]
    return values


def test_row_group_read_back_from_its_lines_equals_the_table_of_its_rows() -> None:
    rng = random.Random(7)
    for schema in (ATTEMPT_SCHEMA, KTO_SCHEMA):
        rows = [_row(rng, schema) for _ in range(40)]
        lines = b"".join(orjson.dumps({**row, "not_a_column": 1}) + b"\n" for row in rows)
        read = row_group_table(lines, schema)
        assert read.schema.equals(schema, check_metadata=True)
        assert read.equals(pa.Table.from_pylist(rows, schema=schema))
        assert all(column.num_chunks == 1 for column in read.columns)


def test_tagged_blocks_are_the_lazy_pattern_matches() -> None:
    rng = random.Random(3)
    pieces = ["<obs>", "</obs>", "<tool_response>", "</tool_response>", "x", "\n", "<", "obs>", "</"]
    for tag in ("obs", "tool_response"):
        pattern = re.compile(rf"<{tag}>(.*?)</{tag}>", re.DOTALL)
        for _ in range(5000):
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
            blocks = _tagged_blocks(text, tag)
            assert [text[start:end] for _, start, end, _ in blocks] == pattern.findall(text), text
            assert _without_blocks(text, blocks) == pattern.sub("", text), text
