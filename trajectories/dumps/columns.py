"""The columns of a dump: one row per attempt, one per agent. Parquet and JSONL carry the same columns.

Large and free-form parts (steps, proxy log, full score, verdicts) are JSON text columns, so one schema
fits every attempt however odd its untrusted content. ``proxy_log_json`` is the store's compact form:
each inference entry lists only the request messages that are new since the previous inference entry
and says in ``request_messages_prefix`` how many leading messages it shares with it.

``messages`` is the attempt's LLM conversation in Hugging Face chat format (:mod:`trajectories.dumps.chat`),
a Parquet list of structs that ``datasets`` loads as a list of dicts; ``tools`` is JSON text, because the
tools' JSON schemas differ in shape and a struct column would give every schema every other one's keys.
``KTO_SCHEMA`` is the ``kto`` view: the same conversation cut into ``prompt`` and ``completion`` with a
``label``. Schema version 4 added ``messages``, ``tools`` and the view; older dumps lack them.
"""

from __future__ import annotations

import pyarrow as pa

from trajectories.dumps.chat import MESSAGES_TYPE

SCHEMA_VERSION = 4
_METADATA = {b"shopping_arena.schema_version": str(SCHEMA_VERSION).encode()}

_text, _f64, _i32, _bool = pa.string(), pa.float64(), pa.int32(), pa.bool_()

ATTEMPT_SCHEMA = pa.schema([
    ("attempt_id", _text), ("split", _text),
    ("run_id", _text), ("run_kind", _text), ("validator", _text), ("run_suite", _text),
    ("problem_id", _text), ("problem_version", _i32), ("category", _text), ("query", _text),
    ("leak_cluster", _text), ("problem_suite", _text), ("reward_json", _text),
    ("agent_hash", _text), ("hotkey", _text),
    ("started_at", _f64), ("finished_at", _f64),
    ("success", _bool), ("answer_verified", _bool), ("reference_success", _bool),
    ("gt", _f64), ("rule", _f64), ("found", _f64), ("format", _f64), ("length", _f64),
    ("title_rate", _f64), ("price_rate", _f64), ("service_rate", _f64), ("sku_attr_rate", _f64),
    ("shop", _bool), ("budget", _bool), ("answer", pa.list_(_text)), ("score_json", _text),
    ("failure_kind", _text), ("failure_reason", _text),
    ("judge_model", _text), ("judge_quality", _f64), ("judge_json", _text),
    ("filter_label", _text), ("filter_reasons", pa.list_(_text)), ("filter_json", _text),
    ("echoed_completions", _i32),
    ("n_steps", _i32), ("n_proxy_calls", _i32), ("n_inference_calls", _i32),
    ("completion_tokens", pa.int64()),
    ("steps_json", _text), ("proxy_log_json", _text),
    ("messages", MESSAGES_TYPE), ("tools", _text),
], metadata=_METADATA)

KTO_SCHEMA = pa.schema([
    ("attempt_id", _text), ("split", _text), ("problem_id", _text), ("category", _text),
    ("leak_cluster", _text), ("agent_hash", _text), ("filter_label", _text), ("success", _bool),
    ("answer_verified", _bool), ("failure_kind", _text), ("rule", _f64), ("judge_quality", _f64),
    ("prompt", MESSAGES_TYPE), ("completion", MESSAGES_TYPE), ("label", _bool), ("tools", _text),
], metadata=_METADATA)

AGENT_SCHEMA = pa.schema([
    ("agent_hash", _text), ("hotkey", _text), ("submitted_at", _f64), ("embargo_until", _f64),
    ("published_at", _f64), ("code_published", _bool), ("code", _text),
], metadata=_METADATA)

DESCRIPTIONS: dict[str, str] = {
    "attempt_id": "sha256 of run_id/agent_hash/problem_id (first 24 hex digits): stable across dumps",
    "split": "train, held_out or unclustered, from the problem's leak cluster",
    "run_kind": "qualifying, race, local_test or held_out (null if the run was never registered)",
    "validator": "hotkey of the validator that ran the attempt",
    "leak_cluster": "the problem's leak-cluster id: problems in one cluster are the same problem in disguise",
    "reward_json": "the problem's verifiable reward (and voucher) in ShoppingBench format, when registered",
    "agent_hash": "sha256 of the agent file",
    "started_at": "Unix seconds (UTC)",
    "success": "the attempt solved the problem (SPEC 2) under the arena's verified-answer rule (SPEC 3)",
    "answer_verified": "every recommended id was returned to the attempt by a tool, per the verified proxy "
                       "log; false: failure_kind unverified_answer, never trained on (null: not checked)",
    "reference_success": "what the exact reference scorer said, before the arena's rules",
    "score_json": "every grade of the attempt (shoppingbench AttemptScore)",
    "judge_quality": "reasoning quality from the judge, one of 0.1/0.3/0.5/0.7/0.9 (null if not judged)",
    "filter_label": "agentic, sub_task or no_llm (structural filter)",
    "filter_json": "the filter's reasons, evidence counts and thresholds",
    "echoed_completions": "LLM completions of the attempt that only repeated the text the agent sent "
                          "(word n-grams of the completion inside its request): they earn no judge credit "
                          "and no agentic label; > 0 marks an attempt whose model was made to echo",
    "steps_json": "the agent's dialogue steps (untrusted agent output)",
    "proxy_log_json": "the verified proxy log: every search and inference call the sandbox made "
                      "(compact form)",
    "messages": "the conversation the agent's LLM had, from the verified proxy log, in Hugging Face chat "
                "format: the last answered inference request plus its completion as the final assistant "
                "turn; assistant `reasoning_content` and `tool_calls` (`id`, `type`, `function.name`, "
                "`function.arguments` as JSON text), `tool` turns with `tool_call_id` (empty: no LLM "
                "conversation)",
    "tools": "JSON text: the tool schemas the agent offered its LLM (the request's `tools`, else the "
             "arena SDK's four), `[]` without a conversation; `json.loads` it for `apply_chat_template`",
}

KTO_DESCRIPTIONS: dict[str, str] = {
    "prompt": "the conversation's turns before its final assistant turn (chat format, as `messages`)",
    "completion": "the final assistant turn, alone in a list",
    "label": "desirable completion: the attempt succeeded (`success`)",
    "tools": "JSON text, as in the default config",
}
