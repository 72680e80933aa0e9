"""The conversation an attempt's LLM had, in Hugging Face chat format, from the verified proxy log.

The conversation is the last answered inference request's messages plus its completion as the final
assistant turn, normalised to what ``tokenizer.apply_chat_template(messages, tools=tools)`` renders for
Qwen3 unchanged:

- ``system``, ``user``, ``assistant`` and ``tool`` turns, ``content`` always a string (text parts of a
  multi-part content joined);
- assistant turns carry the model's reasoning in ``reasoning_content`` (what Qwen3's template reads; a
  ``<think>`` block in the content is moved there) and their calls in ``tool_calls``:
  ``{"id", "type": "function", "function": {"name", "arguments"}}`` with ``arguments`` a JSON string;
- ``tool`` turns carry the ``tool_call_id`` of the call they answer and the tool's name.

Tagged-text agents (``<tool_call>[..]</tool_call>`` in the assistant's content, results sent back in a user
turn as ``<obs>[{"tool_call_id", "name", "result"}]</obs>`` or ``<tool_response>..</tool_response>``
blocks) are converted to that shape when every block reads; otherwise the turn stays plain content. Calls
without an id (tagged calls, and native calls of the completion, which the proxy logs without ids) get
``call_N``, numbered through the conversation.

The same turn builders (:func:`assistant_turn`, :func:`tool_turn`) make the training conversations of
recorded dialogue steps (``trajectories.training.data.conversations``): one shape everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pyarrow as pa

from shoppingbench.agent_sdk import TOOL_SCHEMAS
from shoppingbench.agent_sdk.parsing import normalise_call, parse_model_output

_text = pa.string()
TOOL_CALL_TYPE: Final = pa.struct([
    ("id", _text), ("type", _text), ("function", pa.struct([("name", _text), ("arguments", _text)]))])
MESSAGE_TYPE: Final = pa.struct([
    ("role", _text), ("content", _text), ("reasoning_content", _text),
    ("tool_calls", pa.list_(TOOL_CALL_TYPE)), ("tool_call_id", _text), ("name", _text)])
"""One chat turn as Parquet stores it: keys a turn does not have come back as null."""
MESSAGES_TYPE: Final = pa.list_(MESSAGE_TYPE)

_ROLES: Final = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
                 "tool": "tool", "function": "tool"}
_OBS: Final = "obs"
_TOOL_RESPONSE: Final = "tool_response"


def arguments_text(arguments: Any) -> str:
    """A call's arguments as the JSON-string ``arguments`` of the OpenAI tools protocol."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {}, ensure_ascii=False, default=str)


def function_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments_text(arguments)}}


def assistant_turn(content: str | None, reasoning: str | None,
                   calls: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """An assistant turn; ``calls`` are :func:`function_call` dicts."""
    turn: dict[str, Any] = {"role": "assistant", "content": content or "",
                            "reasoning_content": reasoning or ""}
    if calls:
        turn["tool_calls"] = list(calls)
    return turn


def tool_turn(call_id: str, name: str | None, content: str) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": content}
    if name:
        turn["name"] = name
    return turn


def content_text(content: Any) -> str:
    """A message's content as text: strings as they are, the text parts of a part list joined."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(part["text"] for part in content
                       if isinstance(part, dict) and isinstance(part.get("text"), str))
    return json.dumps(content, ensure_ascii=False, default=str)


def _result_text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)


@dataclass
class _Builder:
    messages: list[dict[str, Any]] = field(default_factory=list)
    pending: list[tuple[str, str]] = field(default_factory=list)
    """(id, name) of the last assistant turn's calls not answered yet."""
    numbered: int = 0

    def next_id(self) -> str:
        call_id = f"call_{self.numbered}"
        self.numbered += 1
        return call_id

    def assistant(self, content: Any, reasoning: Any, native_calls: Any) -> None:
        text = content_text(content)
        thought = reasoning if isinstance(reasoning, str) else None
        calls: list[dict[str, Any]] = []
        for raw in native_calls if isinstance(native_calls, list) else []:
            read = normalise_call(raw)
            if read is None:
                continue
            function = raw.get("function") if isinstance(raw.get("function"), Mapping) else raw
            arguments = function.get("arguments", read["parameters"])
            raw_id = raw.get("id")
            calls.append(function_call(raw_id if isinstance(raw_id, str) and raw_id else self.next_id(),
                                       read["name"], read["parameters"] if not isinstance(arguments, str)
                                       else arguments))
        if not calls and "<tool_call>" in text:
            parsed = parse_model_output(text, thought)
            if parsed.tool_calls and not parsed.problems:
                calls = [function_call(self.next_id(), c["name"], c["parameters"]) for c in parsed.tool_calls]
                text, thought = parsed.response or "", parsed.think
        if thought is None and "</think>" in text:
            parsed = parse_model_output(text)
            head, _, tail = text.partition("</think>")
            thought, text = (parsed.think or head.replace("<think>", "")).strip(), tail.strip()
        self.messages.append(assistant_turn(text, thought, calls))
        self.pending = [(c["id"], c["function"]["name"]) for c in calls]

    def tool(self, message: Mapping[str, Any]) -> None:
        call_id = message.get("tool_call_id")
        name = message.get("name") if isinstance(message.get("name"), str) else None
        known = dict(self.pending)
        if isinstance(call_id, str) and call_id in known:
            self.pending = [p for p in self.pending if p[0] != call_id]
            name = name or known[call_id]
        elif self.pending:  # no id, or one the call was not given (a tagged call): the next call's
            call_id, pending_name = self.pending.pop(0)
            name = name or pending_name
        elif not isinstance(call_id, str) or not call_id:
            call_id = self.next_id()
        self.messages.append(tool_turn(call_id, name, content_text(message.get("content"))))

    def user(self, text: str) -> None:
        if self.pending and self._tool_results(text):
            return
        self.pending = []
        self.messages.append({"role": "user", "content": text})

    def _tool_results(self, text: str) -> bool:
        """``text`` as tool turns answering the pending tagged calls (and what is left as a user turn)."""
        blocks = _tagged_blocks(text, _OBS)
        results = _obs_results(text, blocks, self.pending)
        if results is None:
            blocks = _tagged_blocks(text, _TOOL_RESPONSE)
            results = ([text[start:end].strip() for _, start, end, _ in blocks]
                       if len(blocks) == len(self.pending) else None)
        if results is None:
            return False
        for (call_id, name), result in zip(self.pending, results, strict=True):
            self.messages.append(tool_turn(call_id, name, result))
        self.pending = []
        rest = _without_blocks(text, blocks).strip()
        if rest:
            self.messages.append({"role": "user", "content": rest})
        return True


_Block = tuple[int, int, int, int]
"""Where a ``<tag>body</tag>`` block is in a text: its start, its body's start and end, its end."""


def _tagged_blocks(text: str, tag: str) -> list[_Block]:
    """Every ``<tag>..</tag>`` block, each closed by the first closing tag after it (what the regular
    expression ``<tag>(.*?)</tag>`` with DOTALL finds, by ``str.find``: tool results are long texts, and
    the lazy pattern tries the closing tag at every character of them)."""
    opener, closer = f"<{tag}>", f"</{tag}>"
    blocks: list[_Block] = []
    position = 0
    while (start := text.find(opener, position)) != -1:
        body = start + len(opener)
        end = text.find(closer, body)
        if end == -1:  # no closing tag after this opener, so none after any later one either
            break
        position = end + len(closer)
        blocks.append((start, body, end, position))
    return blocks


def _without_blocks(text: str, blocks: Sequence[_Block]) -> str:
    kept, position = [], 0
    for start, _, _, end in blocks:
        kept.append(text[position:start])
        position = end
    kept.append(text[position:])
    return "".join(kept)


def _obs_results(text: str, blocks: Sequence[_Block], pending: Sequence[tuple[str, str]]) -> list[str] | None:
    """The results of the one ``<obs>`` block of ``text`` (``blocks``), one per pending call, or None when
    it does not read as that."""
    if len(blocks) != 1:
        return None
    _, start, end, _ = blocks[0]
    try:
        entries = json.loads(text[start:end])
    except (ValueError, RecursionError):
        return None
    if not isinstance(entries, list) or len(entries) != len(pending):
        return None
    results = []
    for entry, (_, name) in zip(entries, pending, strict=True):
        if not isinstance(entry, dict) or entry.get("name", name) != name:
            return None
        results.append(_result_text(entry.get("result", entry.get("results"))))
    return results


def _feed(builder: _Builder, messages: Iterable[Any]) -> None:
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = _ROLES.get(str(message.get("role")), "user")
        if role == "assistant":
            reasoning = message.get("reasoning_content", message.get("reasoning"))
            builder.assistant(message.get("content"), reasoning, message.get("tool_calls"))
        elif role == "tool":
            builder.tool(message)
        elif role == "user":
            builder.user(content_text(message.get("content")))
        else:
            builder.pending = []
            builder.messages.append({"role": role, "content": content_text(message.get("content"))})


def normalise_messages(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """Chat turns of any OpenAI-style conversation, normalised (see the module docstring)."""
    builder = _Builder()
    _feed(builder, messages)
    return builder.messages


def chat_messages(request: Iterable[Any], completion: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``request`` (the messages as sent) plus ``completion`` (``completion_text``, ``reasoning_text``,
    ``completion_tool_calls`` of a proxy-log entry), normalised (see the module docstring)."""
    builder = _Builder()
    _feed(builder, request)
    native = [{"function": call} for call in completion.get("completion_tool_calls") or []
              if isinstance(call, Mapping)]
    builder.assistant(completion.get("completion_text"), completion.get("reasoning_text"), native)
    return builder.messages


@dataclass(frozen=True)
class Conversation:
    """An attempt's LLM conversation and the tool schemas it was offered (empty when it had none)."""

    messages: list[dict[str, Any]]
    tools: list[Any]


NO_CONVERSATION: Final = Conversation([], [])


def _answered(entry: Any) -> bool:
    return (isinstance(entry, Mapping) and entry.get("kind") == "inference"
            and isinstance(entry.get("status"), int) and entry["status"] < 400
            and isinstance(entry.get("request_messages"), list)
            and bool(entry.get("completion_text") or entry.get("completion_tool_calls")))


def proxy_conversation(proxy_log: Any) -> Conversation:
    """The conversation of an expanded proxy log (a list of entry dicts): the last answered inference
    request with a completion; its request's ``tools`` parameter, else the SDK's ``TOOL_SCHEMAS``."""
    entries = [entry for entry in proxy_log if _answered(entry)] if isinstance(proxy_log, list) else []
    if not entries:
        return NO_CONVERSATION
    last = max(entries, key=lambda entry: entry.get("seq", 0))
    params = last.get("params")
    offered = params.get("tools") if isinstance(params, Mapping) else None
    tools = offered if isinstance(offered, list) and offered else TOOL_SCHEMAS
    return Conversation(chat_messages(last["request_messages"], last), list(tools))


def kto_view(messages: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """``(prompt, completion)``: every turn before the final assistant turn, and that turn; None when the
    conversation does not end on an assistant turn after a prompt."""
    if len(messages) < 2 or messages[-1].get("role") != "assistant":
        return None
    return list(messages[:-1]), [messages[-1]]
