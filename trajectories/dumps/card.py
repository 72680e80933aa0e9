"""The dataset card (``README.md``) of a dump: Hugging Face YAML header, then what a researcher needs."""

from __future__ import annotations

from typing import Any

import orjson

from trajectories.dumps.columns import ATTEMPT_SCHEMA, DESCRIPTIONS, SCHEMA_VERSION


def _yaml_list(splits: list[str]) -> str:
    return "\n".join(f"  - split: {s}\n    path: data/{s}-*.parquet" for s in splits)


def render_card(manifest: dict[str, Any]) -> str:
    # Only splits with rows have files: `datasets` refuses a split that matches no data.
    splits = list(manifest["splits"])
    counts = manifest["stats"]["counts"]
    columns = "\n".join(f"| `{f.name}` | {f.type} | {DESCRIPTIONS.get(f.name, '')} |" for f in ATTEMPT_SCHEMA)
    rule = manifest["split_rule"]
    window = manifest["window"]
    return f"""---
license: mit
pretty_name: ShoppingBench arena trajectories {window["label"]}
task_categories:
- text-generation
tags:
- agents
- tool-use
- shopping
configs:
- config_name: default
  data_files:
{_yaml_list(splits)}
---

# ShoppingBench arena trajectories: {window["label"]}

Every attempt the arena's validators ran between {window["since"]} and {window["until"]} (UTC, by the
attempt's start): a shopping agent working on one ShoppingBench problem through the search tools and an
LLM, with its outcome grades, the reasoning judge's verdict and the structural-filter label.
Schema version {SCHEMA_VERSION}; `manifest.json` holds counts, filter statistics, score distributions
and the sha256 of every file.

## Load

```python
from datasets import load_dataset
ds = load_dataset("parquet", data_files={{{", ".join(f'"{s}": "data/{s}-*.parquet"' for s in splits)}}})
agentic_train = ds["train"].filter(lambda row: row["filter_label"] == "agentic")
```

The same rows are in `data/*.jsonl.gz` (one JSON object per line, same columns) when exported.

## Splits

Splits follow the problems' leak clusters (problems that are the same request in disguise share a
cluster): a cluster is wholly in `train` or wholly in `held_out`, in this and every other dump made with
the same rule. A cluster is held out when it is listed explicitly ({rule["held_out_clusters"]} listed) or
when the first 8 bytes of `sha256("{rule["salt"]}:" + cluster_id)` as a big-endian integer fall below
{rule["held_out_fraction"]} x 2^64. Attempts at problems registered without a cluster id are in
`unclustered`: they cannot be placed safely, keep them out of evaluation.

Counts: {orjson.dumps(counts["split"]).decode()} by split; {orjson.dumps(counts["label"]).decode()} by
filter label; {orjson.dumps(counts["category"]).decode()} by category.

## Filter labels

- `agentic`: the tool calls that ran were emitted by the model (each executed call appears, by tool and
  normalised arguments, in an LLM completion that preceded it). Use these to train agents.
- `sub_task`: Python drove the tool loop; the LLM only picked, classified or narrated.
- `no_llm`: no LLM was used.

`filter_json` has the reasons, the evidence counts and the thresholds of each label.
`echoed_completions` counts the attempt's LLM completions that only repeated text the agent had sent
(code asking the model to restate its own analysis, or to repeat the tool call the code chose): they
earn no judge credit and their tool calls do not count as the model's, so such attempts are never
`agentic` on their account. {counts["echoed_attempts"]} attempt(s) here have one or more.

## Columns

| column | type | meaning |
| --- | --- | --- |
{columns}

`proxy_log_json` is compact: an inference entry lists only the request messages that are new since the
previous inference entry, and `request_messages_prefix` says how many leading messages it shares with
that entry. To restore full requests:

```python
import json
def expand(proxy_log_json):
    previous, calls = [], json.loads(proxy_log_json)
    for call in calls:
        if isinstance(call.get("request_messages"), list):
            shared = previous[:call.pop("request_messages_prefix", 0)]
            previous = call["request_messages"] = shared + call["request_messages"]
    return calls
```

`steps_json` is the agent's own account of its dialogue and is untrusted; the proxy log is what the
sandbox verified. Agents' code is in `agents.parquet` only once the code was published (the winner's code
is under embargo until then): {manifest["agents"]["code_published"]} of {manifest["agents"]["agents"]}
agents here.
"""
