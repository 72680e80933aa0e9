"""`worker import-sft`: the public corpus's chat-format SFT rows become a dump that `datasets` loads and the
worker trains on together with an arena dump."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml
from datasets import load_dataset
from transformers import AutoTokenizer
from typer.testing import CliRunner

from neurons.worker import app
from trajectories.doubles.sample_dumps import write_sample_dump
from trajectories.training.data.conversations import DataFilter, select_conversations
from trajectories.training.data.tokens import build_dataset
from trajectories.training.dev.tiny import save_tiny_model

FIXTURE = Path(__file__).parents[1] / "fixtures" / "public_sft" / "shopping_sft.jsonl"
SFT_TINY = Path(__file__).parents[2] / "trajectories" / "training" / "configs" / "sft_tiny.yaml"


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("public") / "dump"
    result = CliRunner().invoke(app, ["import-sft", str(FIXTURE), "--out", str(out)])
    assert result.exit_code == 0, result.output
    manifest = orjson.loads(result.output.strip().splitlines()[-1])
    assert manifest["splits"] == {"train": 4} and manifest["source"]["file"] == FIXTURE.name
    return out


@pytest.fixture(scope="module")
def arena_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sample_dump(tmp_path_factory.mktemp("arena") / "dump")


def test_the_imported_dump_loads_with_datasets(imported: Path, tmp_path: Path) -> None:
    train = load_dataset(str(imported), cache_dir=str(tmp_path / "hf"))["train"]
    assert train.num_rows == 4 and set(train["run_kind"]) == {"imported"}
    assert train[1]["messages"][0]["role"] == "system" and train[1]["messages"][2]["tool_calls"]
    kto = load_dataset(str(imported), "kto", cache_dir=str(tmp_path / "hf"))["train"]
    assert kto.num_rows == 4 and set(kto["label"]) == {True}
    assert [turn["role"] for turn in kto[0]["completion"]] == ["assistant"]


def test_the_worker_trains_on_the_public_rows_and_an_arena_dump_together(
        imported: Path, arena_dump: Path, tmp_path: Path) -> None:
    arena_only = select_conversations([arena_dump], DataFilter(labels=frozenset({"agentic"})))
    both = select_conversations([imported, arena_dump], DataFilter(labels=frozenset({"agentic"})))
    public = [c for c in both.conversations if c.problem_id.startswith(("sft-", "shopping_sft-"))]
    assert len(public) == 4 and len(both.conversations) == 4 + len(arena_only.conversations)
    assert public[0].tools[0]["function"]["name"] == "find_product"  # the row's own schemas, not the SDK's
    tokenizer = AutoTokenizer.from_pretrained(save_tiny_model(tmp_path / "tiny"))
    dataset = build_dataset(tokenizer, public, max_length=1024)
    assert dataset.num_rows == 4 and all(any(label != -100 for label in row) for row in dataset["labels"])

    raw = yaml.safe_load(SFT_TINY.read_text(encoding="utf-8"))
    raw["trainer"].update(max_steps=1, save_steps=1)
    config = tmp_path / "sft.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    result = CliRunner().invoke(app, ["train", "--config", str(config), "--dump", str(imported), "--dump",
                                      str(arena_dump), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    summary = orjson.loads(result.output.strip().splitlines()[-1])
    assert summary["examples"] == len(both.conversations) and summary["global_step"] == 1


def test_a_malformed_row_exits_2_naming_its_line(tmp_path: Path) -> None:
    source = tmp_path / "rows.jsonl"
    source.write_text(FIXTURE.read_text(encoding="utf-8").splitlines()[0] + '\n{"messages": []}\n',
                      encoding="utf-8")
    result = CliRunner().invoke(app, ["import-sft", str(source), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "rows.jsonl:2:" in result.output and "`messages`" in result.output
    assert not (tmp_path / "out").exists()
