"""The tool calls and results of an attempt that the verified proxy log vouches for, in order.

A sub-task attempt's steps are the agent's own, untrusted words; its proxy log is what the sandbox saw.
Every successful (status 200) ``find_product``/``view_product_information`` entry of the log is one
verified call. Its arguments are those of the step call that asked for it (the same call under the
structural filter's normalisation, :func:`trajectories.filter.calls.signature`), and its result is that
step's result, accepted only when it is the answer the proxy saw: its JSON, serialised as the tool server
sends it, hashes to the entry's ``response_sha256`` (entries logged without a digest need the same product
ids in the same order). The dialogue then ends with ``recommend_product`` of the scored answer (verified
by the arena's rule) and ``terminate("success")``. An attempt whose calls cannot all be verified is not
rewritten.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from shoppingbench.dialogue import DialogueStep
from shoppingbench.records import ProxyCall
from trajectories.filter.calls import CallSignature, signature

RECOMMEND = "recommend_product"
TERMINATE = "terminate"


@dataclass(frozen=True)
class VerifiedCall:
    """One tool call of the rewritten dialogue: name, arguments and result, none of them the teacher's."""

    name: str
    arguments: dict[str, Any]
    result: Any = None

    def canonical(self) -> tuple[str, bytes]:
        """Name and arguments in a form two equal calls share (sorted-key JSON)."""
        return self.name, canonical_json(self.arguments)


def canonical_json(value: Any) -> bytes:
    """``value`` as sorted-key JSON bytes (anything JSON cannot hold as its ``str``)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, sort_keys=True, default=str).encode()


def _digests(result: Any) -> set[str]:
    """sha256 of ``result`` serialised as the tool server may have sent it (compact JSON, UTF-8)."""
    found = set()
    with contextlib.suppress(TypeError, ValueError, RecursionError):
        found.add(hashlib.sha256(json.dumps(result, ensure_ascii=False, separators=(",", ":"),
                                            allow_nan=False).encode()).hexdigest())
    with contextlib.suppress(TypeError, orjson.JSONEncodeError):
        found.add(hashlib.sha256(orjson.dumps(result)).hexdigest())
    return found


def result_matches(result: Any, entry: ProxyCall) -> bool:
    """Whether a step's claimed ``result`` is the answer the proxy logged in ``entry``."""
    if entry.response_sha256:
        return entry.response_sha256 in _digests(result)
    if not isinstance(result, list):
        return False
    ids = [str(item.get("product_id")) for item in result if isinstance(item, dict)]
    return bool(ids) and ids == entry.product_ids


@dataclass(frozen=True)
class _StepCall:
    signature: CallSignature
    arguments: dict[str, Any]
    result: Any


def _step_calls(steps: Sequence[DialogueStep]) -> list[_StepCall]:
    calls = []
    for step in steps:
        for call in step.completion.message.tool_call:
            sig = signature(call.name, call.parameters)
            if sig is not None:
                calls.append(_StepCall(sig, call.parameters, call.result))
    return calls


def verified_calls(proxy_log: Sequence[ProxyCall], steps: Sequence[DialogueStep],
                   answer: Sequence[str]) -> list[VerifiedCall] | str:
    """The attempt's verified tool calls in order, or why they cannot all be verified."""
    claimed = _step_calls(steps)
    position = 0
    calls: list[VerifiedCall] = []
    for entry in sorted(proxy_log, key=lambda c: c.seq):
        if entry.kind != "search" or entry.status != 200:
            continue
        wanted = signature(entry.path, entry.params)
        if wanted is None or wanted.name not in ("find_product", "view_product_information"):
            continue
        match = next((i for i in range(position, len(claimed))
                      if claimed[i].signature == wanted and result_matches(claimed[i].result, entry)), None)
        if match is None:
            return "result_unverified"
        calls.append(VerifiedCall(wanted.name, dict(claimed[match].arguments), claimed[match].result))
        position = match + 1
    if not calls:
        return "no_verified_call"
    ids = [pid for pid in answer if pid]
    if not ids:
        return "no_answer"
    calls.append(VerifiedCall(RECOMMEND, {"product_ids": ",".join(ids)}))
    calls.append(VerifiedCall(TERMINATE, {"status": "success"}))
    return calls
