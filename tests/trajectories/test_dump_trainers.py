"""A dump trains with TRL as it is: `load_dataset`, a filter and a trainer, no code of this project.

A small store of ReAct attempts (tagged-text calls, results sent back as tool turns; half of them
successful) and a timed-out attempt without a conversation is exported; a script
run in a fresh interpreter, importing only `datasets`, `transformers` and `trl`, loads the dump, keeps
the agentic successes and runs `SFTTrainer` on `messages`/`tools`, then `KTOTrainer` on the `kto` config,
each for two steps on the tiny Qwen3.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.trajectories.records import T0, failed_record, react_record, score
from trajectories.dumps import DumpWindow, ExportOptions, SplitRule, export_dump
from trajectories.labelling import label_stored
from trajectories.store import ProblemEntry, RunEntry, TrajectoryStore
from trajectories.training.dev.tiny import save_tiny_model

PROBLEMS = 8

SCRIPT = textwrap.dedent('''
    import json
    import sys

    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import KTOConfig, KTOTrainer, SFTConfig, SFTTrainer

    dump, model_dir, out = sys.argv[1:4]
    common = dict(max_steps=2, per_device_train_batch_size=2, logging_steps=1, report_to="none",
                  save_strategy="no", use_cpu=True, bf16=False, max_length=1024)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)

    ds = load_dataset(dump, cache_dir=out + "/hf")
    train = ds["train"].filter(lambda row: row["filter_label"] == "agentic" and row["success"])
    sft = train.select_columns(["messages", "tools"])
    first = sft[0]
    text = tokenizer.apply_chat_template(first["messages"], tools=json.loads(first["tools"]), tokenize=False)
    sft_trainer = SFTTrainer(model=AutoModelForCausalLM.from_pretrained(model_dir),
                             args=SFTConfig(output_dir=out + "/sft", **common),
                             train_dataset=sft, processing_class=tokenizer)
    sft_result = sft_trainer.train()

    kto = load_dataset(dump, "kto", cache_dir=out + "/hf")["train"]
    kto = kto.filter(lambda row: row["filter_label"] == "agentic").select_columns(
        ["prompt", "completion", "label", "tools"])
    kto_trainer = KTOTrainer(model=AutoModelForCausalLM.from_pretrained(model_dir),
                             args=KTOConfig(output_dir=out + "/kto", **common),
                             train_dataset=kto, processing_class=tokenizer)
    kto_result = kto_trainer.train()

    project = sorted(name for name in sys.modules
                     if name.split(".")[0] in {"trajectories", "shoppingbench", "arena", "neurons"})
    print(json.dumps({"sft_rows": len(sft), "sft_steps": sft_result.global_step,
                      "sft_loss": sft_result.training_loss, "kto_rows": len(kto),
                      "kto_labels": sorted(set(kto["label"])), "kto_steps": kto_result.global_step,
                      "kto_loss": kto_result.training_loss, "rendered_calls": text.count("<tool_call>"),
                      "rendered_results": text.count("<tool_response>"), "project_modules": project}))
''')


def write_dump(root: Path) -> Path:
    """Eight ReAct attempts (every other one failed), one per leak cluster, the first cluster held out; and
    a timed-out attempt; labelled, then exported."""
    records = []
    for n in range(PROBLEMS):
        record = react_record(problem_id=f"p{n}", started_at=T0 + 60 * n)
        records.append(record.model_copy(update={"score": score(f"p{n}", success=n % 2 == 0)}))
    records.append(failed_record(problem_id="p-timeout", started_at=T0 + 3600))
    with TrajectoryStore.open(f"sqlite:///{root / 'store.sqlite3'}") as store:
        store.register_problems([ProblemEntry(id=r.problem_id, category=r.category, query=r.query,
                                              leak_cluster=f"cluster-{n}") for n, r in enumerate(records)])
        store.register_run(RunEntry(id="run-1", kind="race", validator="5Val", suite="race-1"))
        store.write_attempts(records)
        label_stored(store, progress=False)
        day = DumpWindow.day(datetime.fromtimestamp(T0, UTC).date())
        options = ExportOptions(split_rule=SplitRule(held_out_fraction=0.0,
                                                     held_out_clusters=frozenset({"cluster-0"})))
        export_dump(store, day, root / "dump", options=options, progress=False)
    return root / "dump"


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dump(tmp_path_factory.mktemp("dump"))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def test_sft_and_kto_train_from_load_dataset_alone(dump: Path, model_dir: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    done = subprocess.run([sys.executable, str(script), str(dump), str(model_dir), str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["project_modules"] == [], "the training script must not need this project"
    assert result["sft_rows"] > 0 and result["sft_steps"] == 2 and result["sft_loss"] > 0
    assert result["kto_rows"] > 0 and result["kto_steps"] == 2
    assert result["kto_labels"] == [False, True], "the view must hold desirable and undesirable completions"
    # three calls (two in Qwen3's instructions for the tools); the two searches answered in tool turns
    assert result["rendered_calls"] == 2 + 3 and result["rendered_results"] == 2
