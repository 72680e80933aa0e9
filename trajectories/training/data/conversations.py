"""From daily dump rows to Qwen3 tool-calling conversations, filtered and leak-cluster guarded.

A dump row (schema version 4 on) carries its conversation: ``messages`` and ``tools``, the LLM's own
conversation from the verified proxy log in Hugging Face chat format (:mod:`trajectories.dumps.chat`,
written once at export); it is read as it is, tool results cut to ``max_tool_chars``, and a row without
one (no LLM conversation) is skipped and counted. Rows of older dumps, and rewritten rows (their reasoning
is the teacher's, not the proxy log's), are built from their dialogue steps (``shoppingbench/dialogue.py``)
with the same turn builders: the system prompt and tool schemas of ``tools.py``, the user's query, then per
step one assistant turn (``reasoning_content`` = the step's think, ``tool_calls`` = its calls with ids,
``content`` = its response) and one ``tool`` message per call that returned a result. Only attempts the
structural filter labelled ``agentic`` (their calls were verified against the proxy log) are taken by
default, and never one whose answer failed the arena's verified-answer rule (``unverified_answer``,
``shoppingbench.grading.verified``); a row whose steps do not parse is skipped and counted, never fatal.
Dump files, rows and steps are read through :mod:`trajectories.dumps.reader`.

With ``include_rewritten`` the side datasets ``worker rewrite`` writes next to each dump
(``DUMP/rewritten/``: successful sub-task attempts whose verified tool calls and results a teacher gave
model-driven reasoning, :mod:`trajectories.training.rewrite`) are read too, under the same guard and
thresholds but for the label (their calls were checked against the proxy log when rewritten) and the
judge's quality (it scored the original's reasoning, which the rewrite replaces).

Leak-cluster guard: only rows of the ``train`` split are read, and a row is dropped when its cluster is
in the explicit held-out list or appears in a ``held_out`` row of any dump read, so a cluster placed
differently by two dumps' split rules can still never reach training.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from pydantic import BaseModel, ConfigDict, Field

from shoppingbench.agent_sdk import MAX_TOOL_CHARS, tool_result_text
from shoppingbench.dialogue import DialogueStep
from shoppingbench.grading.verified import UNVERIFIED_ANSWER
from shoppingbench.records import AttemptRecord
from trajectories.dumps.chat import assistant_turn, function_call, tool_turn
from trajectories.dumps.reader import dump_files, parse_steps, parse_steps_json, read_rows, rewritten_files
from trajectories.training.data.tools import SYSTEM_PROMPT, TOOL_SCHEMAS

log = structlog.get_logger(__name__)

_COLUMNS = ["attempt_id", "split", "problem_id", "category", "query", "leak_cluster", "success", "rule",
            "judge_quality", "filter_label", "failure_kind", "steps_json"]
_CHAT_COLUMNS = ["messages", "tools"]
"""Schema version 4 on: read where a file has them."""
NO_CONVERSATION = "no_conversation"


class DataFilter(BaseModel):
    """Which attempts become training conversations."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    labels: frozenset[str] = Field(default=frozenset({"agentic"}), description=(
        "Structural-filter labels to keep (agentic, sub_task, no_llm)"))
    require_success: bool = Field(default=False, description="Keep only attempts that solved the problem")
    min_rule: float | None = Field(default=None, ge=0, le=1, description="Minimum rule score")
    min_judge_quality: float | None = Field(default=None, ge=0, le=1, description=(
        "Minimum judge quality; an unjudged attempt fails any minimum"))
    max_tool_chars: int = Field(default=MAX_TOOL_CHARS, ge=16, description=(
        "Tool results longer than this are cut (the model reads them, it is not trained on them)"))
    include_rewritten: bool = Field(default=False, description=(
        "Also train on the dumps' rewritten sub-task attempts (DUMP/rewritten/, `worker rewrite`)"))


@dataclass
class Conversation:
    """One training example in the conversational format TRL and ``apply_chat_template`` take."""

    attempt_id: str
    problem_id: str
    leak_cluster: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=lambda: TOOL_SCHEMAS)


@dataclass
class Selection:
    """The conversations kept and why the others were not."""

    conversations: list[Conversation]
    dropped: Counter[str]
    held_out_clusters: frozenset[str]


@dataclass(frozen=True)
class GradedConversation:
    """A conversation with how its attempt went, for the stages that compare attempts of one problem (DPO)."""

    conversation: Conversation
    success: bool
    rule: float | None
    judge_quality: float | None
    filter_label: str
    reward: float | None = None
    """a rollout's reward (:func:`~trajectories.training.data.weighting.sample_reward`); None for dump rows"""


@dataclass
class GradedSelection:
    """The graded conversations kept and why the others were not."""

    graded: list[GradedConversation]
    dropped: Counter[str]
    held_out_clusters: frozenset[str]


def steps_to_messages(query: str, steps: list[DialogueStep], max_tool_chars: int) -> list[dict[str, Any]]:
    """The Qwen3 conversation of one attempt (see the module docstring)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                      {"role": "user", "content": query}]
    used: set[str] = set()
    for step in steps:
        message = step.completion.message
        calls = message.tool_call
        if not calls and not message.response:
            continue
        ids = []
        for call in calls:
            # the step's id unless it repeats (ids derived from name and arguments do): calls need unique ones
            call_id = call.tool_call_id if call.tool_call_id and call.tool_call_id not in used \
                else f"call_{len(used)}"
            used.add(call_id)
            ids.append(call_id)
        # arguments as a JSON string: a dict column would be unified across rows by Arrow, adding nulls
        messages.append(assistant_turn(message.response, message.think, [
            function_call(call_id, call.name, call.parameters)
            for call_id, call in zip(ids, calls, strict=True)]))
        messages.extend(tool_turn(call_id, call.name, tool_result_text(call.result, max_tool_chars))
                        for call_id, call in zip(ids, calls, strict=True) if call.result is not None)
    return messages


def dump_messages(messages: list[dict[str, Any]], max_tool_chars: int) -> list[dict[str, Any]]:
    """A dump row's ``messages`` for training: keys a turn does not have (null in Parquet) dropped, tool
    results cut to ``max_tool_chars`` as :func:`tool_result_text` cuts them."""
    turns = []
    for message in messages:
        turn = {key: value for key, value in message.items() if value is not None}
        if turn.get("role") == "tool":
            turn["content"] = tool_result_text(turn.get("content") or "", max_tool_chars)
        turns.append(turn)
    return turns


def _row_tools(text: str | None) -> list[dict[str, Any]]:
    try:
        tools = json.loads(text or "null")
    except (ValueError, RecursionError):
        return TOOL_SCHEMAS
    return tools if isinstance(tools, list) and tools else TOOL_SCHEMAS


def _reject(row: dict[str, Any], data: DataFilter, held_out: frozenset[str], *,
            rewritten: bool = False) -> str | None:
    """Why ``row`` may not be trained on, or None."""
    if row["failure_kind"] == UNVERIFIED_ANSWER:  # its answer came from outside the dialogue
        return UNVERIFIED_ANSWER
    if row["split"] != "train":
        return f"split:{row['split']}"
    if not row["leak_cluster"] or row["leak_cluster"] in held_out:
        return "held_out_cluster"
    if not rewritten and row["filter_label"] not in data.labels:
        return f"label:{row['filter_label']}"
    if data.require_success and not row["success"]:
        return "not_successful"
    if data.min_rule is not None and (row["rule"] is None or row["rule"] < data.min_rule):
        return "rule_below_minimum"
    if not rewritten and data.min_judge_quality is not None and (row["judge_quality"] is None
                                               or row["judge_quality"] < data.min_judge_quality):
        return "judge_quality_below_minimum"
    return None


def _graded(row: dict[str, Any], data: DataFilter, held_out: frozenset[str], *,
            rewritten: bool = False) -> GradedConversation | str:
    """The row's conversation and grades, or why there is none."""
    reason = _reject(row, data, held_out, rewritten=rewritten)
    if reason is not None:
        return reason
    if not rewritten and row.get("messages") is not None:  # the conversation the dump carries
        if not row["messages"]:
            return NO_CONVERSATION
        conversation = Conversation(attempt_id=row["attempt_id"], problem_id=row["problem_id"],
                                    leak_cluster=row["leak_cluster"],
                                    messages=dump_messages(row["messages"], data.max_tool_chars),
                                    tools=_row_tools(row.get("tools")))
        return GradedConversation(conversation=conversation, success=bool(row["success"]), rule=row["rule"],
                                  judge_quality=row["judge_quality"], filter_label=row["filter_label"])
    steps = parse_steps_json(row["steps_json"])
    if not steps:
        return "unreadable_steps"
    conversation = Conversation(attempt_id=row["attempt_id"], problem_id=row["problem_id"],
                                leak_cluster=row["leak_cluster"],
                                messages=steps_to_messages(row["query"], steps, data.max_tool_chars))
    return GradedConversation(conversation=conversation, success=bool(row["success"]), rule=row["rule"],
                              judge_quality=row["judge_quality"], filter_label=row["filter_label"])


def select_graded(dumps: Iterable[Path], data: DataFilter | None = None, *,
                  held_out_clusters: frozenset[str] = frozenset()) -> GradedSelection:
    """Conversations with their grades of the dumps' ``train`` rows that pass ``data`` and the leak-cluster
    guard."""
    data = data or DataFilter()
    dumps = list(dumps)
    files = dump_files(dumps)
    held_out = held_out_clusters | frozenset(
        row["leak_cluster"] for row in read_rows(files, _COLUMNS)
        if row["split"] == "held_out" and row["leak_cluster"])
    kept: list[GradedConversation] = []
    dropped: Counter[str] = Counter()
    for row in read_rows(files, _COLUMNS, optional=_CHAT_COLUMNS):
        result = _graded(row, data, held_out)
        if isinstance(result, str):
            dropped[result] += 1
        else:
            kept.append(result)
    rewritten = rewritten_files(dumps) if data.include_rewritten else []
    for row in read_rows(rewritten, _COLUMNS):
        result = _graded(row, data, held_out, rewritten=True)
        if isinstance(result, str):
            dropped[f"rewritten:{result}"] += 1
        else:
            kept.append(result)
    log.info("training.conversations_selected", kept=len(kept), dropped=dict(dropped),
             held_out_clusters=len(held_out), files=len(files), rewritten_files=len(rewritten))
    return GradedSelection(graded=kept, dropped=dropped, held_out_clusters=held_out)


def select_conversations(dumps: Iterable[Path], data: DataFilter | None = None, *,
                         held_out_clusters: frozenset[str] = frozenset()) -> Selection:
    """Training conversations of the dumps' ``train`` rows that pass ``data`` and the leak-cluster guard."""
    selection = select_graded(dumps, data, held_out_clusters=held_out_clusters)
    return Selection(conversations=[graded.conversation for graded in selection.graded],
                     dropped=selection.dropped, held_out_clusters=selection.held_out_clusters)


def record_conversation(record: AttemptRecord, leak_cluster: str, max_tool_chars: int) -> Conversation | None:
    """The conversation of a rolled-out attempt (``worker evaluate``, the sampling stages), identified as
    ``run_id/problem_id``; None when its steps do not parse."""
    steps = parse_steps(record.steps)
    if not steps:
        return None
    return Conversation(attempt_id=f"{record.run_id}/{record.problem_id}", problem_id=record.problem_id,
                        leak_cluster=leak_cluster,
                        messages=steps_to_messages(record.query, steps, max_tool_chars))
