"""Chat-format SFT rows (one JSON object a line, the shape of the study's released SFT split) as a dump.

``worker import-sft FILE --out DIR`` writes ``DIR`` in the dump format ``dump export`` writes (schema
version 4: ``data/train-*.parquet`` with every attempt column, the ``kto`` view, ``manifest.json`` and a
dataset card), so the public corpus loads with ``datasets.load_dataset`` and trains in the worker next to
the arena's own dumps. A row's fields are mapped as follows:

- ``messages`` (required): the conversation, normalised to the dumps' chat format
  (:func:`trajectories.dumps.chat.normalise_messages`): assistant ``tool_calls`` with JSON-text
  ``arguments`` and ids (``call_N`` where a call has none), ``tool`` turns with the ``tool_call_id`` of
  their call, ``<think>`` blocks moved to ``reasoning_content``. It needs a user and an assistant turn;
- ``system`` or ``system_prompt`` (or a first ``system`` turn): the system turn, first in ``messages``;
- ``tools``: the tool schemas, a list or its JSON text, each OpenAI-style
  (``{"type": "function", "function": {...}}``) or bare (``{"name", "description", "parameters"}``,
  wrapped); without ``tools``, a ``<tools>...</tools>`` block of the system prompt (one schema a line, or
  a JSON list, as Qwen3's template writes it) is read as the schemas and the prompt keeps only its text
  before that block's ``# Tools`` section (the chat template writes the section back when rendering);
- ``id`` (or ``problem_id``) -> ``problem_id`` (default ``<file stem>-<line>``); ``category`` ->
  ``category``; ``query`` -> ``query`` (default the first user turn).

Every row is ``split`` ``train``, ``run_kind`` ``imported`` with ``run_id`` ``imported:<file name>`` (the
source), ``success`` true (the released split holds the trajectories the study trained on), and
``filter_label`` ``agentic`` when an assistant turn calls a tool (else ``no_tool_calls``); its
``leak_cluster`` is ``imported-`` plus a hash of the query, so rows with one query share a cluster.
Grades the source does not give (judge quality, rule, steps, proxy log) are null: a stage filter with a
minimum judge quality or rule drops imported rows as it drops any ungraded attempt. A malformed row stops
the import with :class:`MalformedRow` naming its line; nothing is written then.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections import Counter
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from trajectories.dumps.card import dataset_configs
from trajectories.dumps.chat import normalise_messages
from trajectories.dumps.columns import ATTEMPT_SCHEMA, KTO_SCHEMA, SCHEMA_VERSION
from trajectories.dumps.export import KTO_DIR, attempt_id, kto_row
from trajectories.dumps.writers import SplitWriter

RUN_KIND = "imported"
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_TOOLS_BLOCK = re.compile(r"<tools>\s*([\[{].*?)</tools>", re.DOTALL)
"""A ``<tools>`` block holding schemas (Qwen3's prompt also names the tags in its text, empty)."""
_TOOLS_HEADING = re.compile(r"^#\s*Tools\s*$", re.MULTILINE)


class MalformedRow(ValueError):
    """A line of the file is not a chat-format SFT row; the message names the file, the line and why."""


def _schema(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ValueError(f"a tool schema is not an object: {str(raw)[:80]}")
    function = raw.get("function") if raw.get("type") == "function" else raw
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise ValueError(f"a tool schema has no function name: {orjson.dumps(raw).decode()[:80]}")
    return {"type": "function", "function": dict(function)}


def _schemas(raw: Any) -> list[dict[str, Any]]:
    if isinstance(raw, str):
        raw = orjson.loads(raw)
    if not isinstance(raw, list):
        raise ValueError("`tools` is not a list of tool schemas")
    return [_schema(item) for item in raw]


def tools_in_prompt(system: str) -> tuple[list[dict[str, Any]], str]:
    """The schemas of the prompt's ``<tools>`` block and the prompt's text before its tools section
    (``([], system)`` when it has no block)."""
    block = _TOOLS_BLOCK.search(system)
    if block is None:
        return [], system
    body = block.group(1).strip()
    schemas = _schemas(body) if body.startswith("[") else [
        _schema(orjson.loads(line)) for line in body.splitlines() if line.strip()]
    headings = [h for h in _TOOLS_HEADING.finditer(system) if h.start() < block.start()]
    cut = headings[-1].start() if headings else block.start()
    return schemas, system[:cut].rstrip()


def _check_calls(message: Mapping[str, Any], turn: int) -> int:
    """How many calls the assistant turn ``message`` makes; refuses one that names no function."""
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ValueError(f"turn {turn}: `tool_calls` is not a list")
    for call in calls:
        function = call.get("function", call) if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise ValueError(f"turn {turn}: a tool call names no function")
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            orjson.loads(arguments or "{}")  # JSON text the template can parse, or an error naming the turn
    return len(calls)


def _conversation(row: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """(normalised messages with the system turn first, tool schemas, tool calls made)."""
    raw = row.get("messages")
    if not isinstance(raw, list) or not raw:
        raise ValueError("`messages` is missing or not a non-empty list of turns")
    calls = 0
    for turn, message in enumerate(raw):
        if not isinstance(message, Mapping) or message.get("role") not in ROLES:
            raise ValueError(f"turn {turn} is not a chat turn with a role of {', '.join(sorted(ROLES))}")
        if message["role"] == "assistant":
            calls += _check_calls(message, turn)
    roles = {message["role"] for message in raw}
    if "user" not in roles or "assistant" not in roles:
        raise ValueError("the conversation needs a user turn and an assistant turn")
    system = row.get("system", row.get("system_prompt"))
    if raw[0]["role"] in ("system", "developer"):
        system, raw = raw[0].get("content"), raw[1:]
    if system is not None and not isinstance(system, str):
        raise ValueError("the system prompt is not text")
    tools = _schemas(row["tools"]) if row.get("tools") is not None else []
    if not tools and system:
        tools, system = tools_in_prompt(system)
    head = [{"role": "system", "content": system}] if system else []
    return normalise_messages([*head, *raw]), tools, calls


def attempt_row(raw: Any, *, source: str, line: int) -> dict[str, Any]:
    """The dump row (every ``ATTEMPT_SCHEMA`` column) of one imported SFT row."""
    if not isinstance(raw, Mapping):
        raise ValueError("the line is not a JSON object")
    messages, tools, calls = _conversation(raw)
    query = raw.get("query")
    if not isinstance(query, str):
        query = next(m["content"] for m in messages if m["role"] == "user")
    named = raw.get("id", raw.get("problem_id"))
    problem_id = str(named) if isinstance(named, (str, int)) else f"{Path(source).stem}-{line:06d}"
    run_id = f"{RUN_KIND}:{source}"
    category = raw.get("category") if isinstance(raw.get("category"), str) else None
    label = "agentic" if calls else "no_tool_calls"
    row: dict[str, Any] = dict.fromkeys(ATTEMPT_SCHEMA.names)
    row.update({
        "attempt_id": attempt_id(run_id, RUN_KIND, f"{problem_id}/{line}"), "split": "train",
        "run_id": run_id, "run_kind": RUN_KIND, "run_suite": source, "problem_id": problem_id,
        "category": category, "query": query,
        "leak_cluster": f"{RUN_KIND}-{hashlib.sha256(query.encode()).hexdigest()[:16]}",
        "success": True, "answer": [], "filter_label": label,
        "filter_reasons": [f"imported from {source} line {line}: {calls} tool call(s)"],
        "n_steps": sum(1 for m in messages if m["role"] == "assistant"),
        "messages": messages, "tools": orjson.dumps(tools).decode(),
    })
    return row


def read_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The dump rows of every non-blank line of ``path``; :class:`MalformedRow` at the first bad one."""
    with path.open("rb") as lines:
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                yield attempt_row(orjson.loads(text), source=path.name, line=number)
            except (ValueError, TypeError, KeyError, StopIteration) as exc:
                raise MalformedRow(f"{path}:{number}: not a chat-format SFT row: {exc}") from exc


def _card(manifest: dict[str, Any]) -> str:
    source = manifest["source"]
    return (f"---\nlicense: other\npretty_name: {source['file']} (imported SFT rows)\nconfigs:\n"
            f"{dataset_configs(manifest)}\n---\n\n# {source['file']}, imported\n\n"
            f"{source['rows']} chat-format SFT rows of `{source['file']}` (sha256 {source['sha256']}) in the "
            f"arena's dump format, schema version {SCHEMA_VERSION}: every row is in `train` with "
            f"`run_kind` `{RUN_KIND}`. Load with `datasets.load_dataset(\"DIR\")`; `messages` and `tools` "
            "as in the arena's dumps.\n")


def import_sft(path: Path, out: Path, *, rows_per_file: int = 10_000, jsonl: bool = True) -> dict[str, Any]:
    """Write the rows of ``path`` as a dump in ``out`` (refused when ``out`` holds anything); its manifest."""
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty: choose another --out")
    staging = out.with_name(f".{out.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    files: dict[str, dict[str, Any]] = {}

    def written(file: Path, rows: int) -> None:
        with file.open("rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
        files[file.relative_to(staging).as_posix()] = {"rows": rows, "bytes": file.stat().st_size,
                                                        "sha256": digest}

    labels: Counter[str] = Counter()
    try:
        for directory in ("data", KTO_DIR):
            (staging / directory).mkdir(parents=True)
        with ThreadPoolExecutor(1) as parquet_thread, ThreadPoolExecutor(2) as gzippers:
            writers = [SplitWriter(staging / directory, "train", schema, rows_per_file=rows_per_file,
                                   row_group_rows=256, parquet_thread=parquet_thread,
                                   jsonl_pool=gzippers if jsonl else None, on_file=written)
                       for directory, schema in (("data", ATTEMPT_SCHEMA), (KTO_DIR, KTO_SCHEMA))]
            for row in read_rows(path):
                writers[0].add(row)
                labels[row["filter_label"]] += 1
                if (kto := kto_row(row)) is not None:
                    writers[1].add(kto)
            for writer in writers:
                writer.close()
        if not writers[0].rows:
            raise MalformedRow(f"{path} holds no row: nothing to import")
        with path.open("rb") as handle:
            source_sha = hashlib.file_digest(handle, "sha256").hexdigest()
        manifest: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "source": {"kind": RUN_KIND, "file": path.name, "sha256": source_sha, "rows": writers[0].rows},
            "splits": {"train": writers[0].rows},
            "kto_splits": {"train": writers[1].rows} if writers[1].rows else {},
            "stats": {"attempts": writers[0].rows, "counts": {"label": dict(sorted(labels.items()))}},
            "files": dict(sorted(files.items())),
        }
        if not writers[1].rows:
            shutil.rmtree(staging / KTO_DIR)
        (staging / "README.md").write_text(_card(manifest), encoding="utf-8")
        (staging / "manifest.json").write_bytes(
            orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
        if out.exists():
            out.rmdir()
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest
