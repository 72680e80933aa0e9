"""A day's dump as a researcher gets it: export time, size with and without the chat columns, the load
through ``datasets``, and how many agentic conversations survive Qwen3's chat template.

    python -m benchmarks.dumps [--attempts 27000]

The day is the store benchmark's (``benchmarks.store``: a synthetic day of ReAct, sub-task and scripted
agents, 60 agents, about 20 steps per attempt), written to a SQLite store and labelled (``dump label``),
then timed: ``export_s`` (``dump export`` of the day: Parquet, JSONL.gz, the ``kto`` view, manifest) and
``load_dataset_s`` (``datasets.load_dataset(DUMP)`` into a fresh cache; ``load_dataset_kto_s`` the same
for the ``kto`` config). ``bytes_per_attempt`` gives the Parquet bytes per attempt of ``data/`` as written
with the schema-4 columns (``messages``, ``tools``) and the ``kto`` view (``with_chat_columns``), of
``data/`` rewritten with the same Parquet settings without them (``without_chat_columns``), and of every
file of the dump (``dump_total``, JSONL.gz included). ``chat_render_share`` is the share of agentic
attempts whose ``messages`` render through Qwen3's chat template with their ``tools`` and parse back to
the same tool calls (:mod:`trajectories.training.data.round_trip`), over ``--render-sample`` of them
evenly spaced (default 1,000; 0: every one; about 80 ms of CPU each). Each timed phase reports its CPU
seconds and the 1-minute load average beside its wall time, and ``encode_cpu_ms_per_attempt`` is the
store benchmark's calibration (one thread's CPU time to encode an attempt's row): the machine's speed,
so figures from machines or hours of different speed compare. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq

from benchmarks.store import AGENTS, CALIBRATION_ATTEMPTS, DAY_START, encode_cpu_ms, phase
from shoppingbench.logs import configure_logging
from trajectories.doubles.synthetic import synthetic_day
from trajectories.dumps import DumpWindow, export_dump
from trajectories.dumps.reader import read_rows
from trajectories.dumps.writers import PARQUET_OPTIONS
from trajectories.labelling import label_stored
from trajectories.store import TrajectoryStore

CHAT_COLUMNS = ("messages", "tools")
"""The columns schema version 4 added to every attempt row."""


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _write_store(url: str, attempts: int, figures: dict[str, Any]) -> None:
    day = synthetic_day(day_start=DAY_START.timestamp(), problems=math.ceil(attempts / AGENTS), agents=AGENTS)
    records = list(day.attempts(attempts, measure_echoes=True))
    figures["encode_cpu_ms_per_attempt"] = encode_cpu_ms(records[:CALIBRATION_ATTEMPTS])
    with TrajectoryStore.open(url) as store, phase("store", figures):
        store.register_problems(day.problems)
        for agent in day.agents:
            store.register_agent(agent.entry)
        for run in day.runs():
            store.register_run(run)
        store.write_attempts(records)
        label_stored(store, progress=False)


def parquet_bytes(dump: Path, scratch: Path) -> dict[str, int]:
    """Parquet bytes of ``data/`` as written (with the ``kto`` view), and rewritten without the chat
    columns."""
    data = sorted((dump / "data").glob("*.parquet"))
    with_chat = sum(path.stat().st_size for path in [*data, *sorted((dump / "kto").glob("*.parquet"))])
    without = 0
    for path in data:
        table = pq.read_table(path)
        target = scratch / path.name
        pq.write_table(table.drop_columns(list(CHAT_COLUMNS)), target, row_group_size=256,
                       **PARQUET_OPTIONS)
        without += target.stat().st_size
        target.unlink()
    return {"with_chat_columns": with_chat, "without_chat_columns": without}


def chat_render_share(dump: Path, sample: int) -> dict[str, Any]:
    """How many agentic attempts' conversations round-trip through Qwen3's chat template: every one, or
    ``sample`` of them evenly spaced in the dump's order (0: all)."""
    from trajectories.training.data.round_trip import round_trips
    from trajectories.training.dev.tiny import qwen3_tokenizer

    files = sorted((dump / "data").glob("*.parquet"))
    agentic = sum(1 for row in read_rows(files, ["filter_label"]) if row["filter_label"] == "agentic")
    step = max(1, agentic // sample) if sample else 1
    tokenizer = qwen3_tokenizer()
    seen = checked = passed = calls = 0
    for row in read_rows(files, ["filter_label", "messages", "tools"]):
        if row["filter_label"] != "agentic":
            continue
        seen += 1
        if (seen - 1) % step or (sample and checked == sample):
            continue
        checked += 1
        passed += round_trips(tokenizer, row["messages"], orjson.loads(row["tools"] or "[]"))
        calls += sum(len(m.get("tool_calls") or []) for m in row["messages"] if m["role"] == "assistant")
    return {"chat_render_share": round(passed / checked, 6) if checked else None, "agentic_attempts": agentic,
            "chat_rendered_attempts": checked, "chat_rendered_tool_calls": calls}


def _load(dump: Path, cache: Path, config: str | None) -> int:
    from datasets import load_dataset

    loaded = load_dataset(str(dump), config, cache_dir=str(cache))
    return sum(split.num_rows for split in loaded.values())


def run(attempts: int, root: Path, render_sample: int) -> dict[str, Any]:
    figures: dict[str, Any] = {"attempts": attempts}
    _write_store(f"sqlite:///{root / 'store.sqlite3'}", attempts, figures)
    _say(f"  stored and labelled {attempts} attempts in {figures['store_wall_s']} s")
    dump = root / "dump"
    with TrajectoryStore.open(f"sqlite:///{root / 'store.sqlite3'}") as store, phase("export", figures):
        manifest = export_dump(store, DumpWindow.day(DAY_START.date()), dump, progress=False)
    figures["export_s"] = figures["export_wall_s"]
    sizes = parquet_bytes(dump, root)
    total = sum(entry["bytes"] for entry in manifest["files"].values())
    figures["bytes_per_attempt"] = {**{name: round(size / attempts) for name, size in sizes.items()},
                                    "dump_total": round(total / attempts)}
    _say(f"  export: {figures['export_s']} s; bytes per attempt {figures['bytes_per_attempt']}")
    with phase("load_dataset", figures):
        figures["load_dataset_rows"] = _load(dump, root / "hf", None)
    figures["load_dataset_s"] = figures["load_dataset_wall_s"]
    with phase("load_dataset_kto", figures):
        figures["load_dataset_kto_rows"] = _load(dump, root / "hf", "kto")
    figures["load_dataset_kto_s"] = figures["load_dataset_kto_wall_s"]
    _say(f"  load_dataset: {figures['load_dataset_s']} s (kto {figures['load_dataset_kto_s']} s)")
    with phase("render", figures):
        figures.update(chat_render_share(dump, render_sample))
    _say(f"  chat template: {figures['chat_render_share']} of {figures['chat_rendered_attempts']} agentic "
         f"attempts (of {figures['agentic_attempts']}) in {figures['render_wall_s']} s")
    return figures


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=27_000)
    parser.add_argument("--render-sample", type=int, default=1000, help=(
        "agentic attempts rendered through the chat template, evenly spaced (0: every one)"))
    args = parser.parse_args(argv)
    configure_logging("console", "warning")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    results: dict[str, Any] = {"cpus": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 2),
                               "python": f"{platform.python_version()} ({sys.executable})"}
    with tempfile.TemporaryDirectory(prefix="bench-dumps-") as tmp:
        results.update(run(args.attempts, Path(tmp), args.render_sample))
    print(orjson.dumps(results).decode())
    return results


if __name__ == "__main__":
    main()
