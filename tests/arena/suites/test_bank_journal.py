"""An interrupted `arena bank build` resumes where it stopped: the journal, a resumed build equal to an
uninterrupted one, and Ctrl-C during a model-written build (the model is the OpenAI-protocol double)."""

from __future__ import annotations

import _thread
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from arena.suites.bank import ProblemBank
from arena.suites.bank_build import build_bank
from arena.suites.bank_journal import BankJournal, journal_path
from arena.suites.sealed_bank import bank_bytes
from neurons.cli import app as arena_app
from shoppingbench.doubles.llm_server import StubReply, create_app
from shoppingbench.generator import catalog_fingerprint
from shoppingbench.problems.models import Category
from shoppingbench.sample_world import SampleWorld
from shoppingbench.tools.serving import running_server
from tests.writing_model import plain_query

SIZES: dict[Category, int] = {"product": 3, "shop": 2, "voucher": 2}


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def test_a_resumed_build_writes_the_bank_an_uninterrupted_one_writes(small_world: SampleWorld,
                                                                      tmp_path: Path) -> None:
    whole = tmp_path / "whole.partial"
    uninterrupted = build_bank(small_world.catalog_dir, SIZES, models=[], journal=whole, seed="resume-test")
    lines = _lines(whole)
    assert len(lines) == 1 + sum(SIZES.values())  # the header, then a line per slot
    cut = tmp_path / "cut.partial"  # a crash after three slots, in the middle of writing the fourth
    cut.write_bytes(b"\n".join(lines[:4]) + b"\n" + lines[4][:25])
    resumed = build_bank(small_world.catalog_dir, SIZES, models=[], journal=cut)
    assert resumed.resumed == 3
    assert bank_bytes(resumed.bank) == bank_bytes(uninterrupted.bank)
    assert _lines(cut) == lines  # the cut line dropped, the rest written after the three kept


def test_a_journal_of_another_build_or_no_journal_is_refused(small_world: SampleWorld,
                                                              tmp_path: Path) -> None:
    fingerprint = catalog_fingerprint(small_world.catalog_dir)
    path = tmp_path / "bank.json.partial"
    BankJournal.open(path, catalog_fingerprint=fingerprint, per_category={"product": 3, "shop": 2}).close()
    with pytest.raises(ValueError, match="journal of another bank"):
        BankJournal.open(path, catalog_fingerprint=fingerprint, per_category={"product": 5})
    with pytest.raises(ValueError, match="journal of another bank"):
        BankJournal.open(path, catalog_fingerprint="other", per_category={"product": 3, "shop": 2})
    reopened = BankJournal.open(path, catalog_fingerprint=fingerprint,
                                per_category={"product": 3, "shop": 2, "voucher": 0})
    assert reopened.written == {} and reopened.header.seed.startswith("bank/")
    reopened.close()
    path.write_text("not a journal\n")
    with pytest.raises(ValueError, match="is not a bank journal"):
        BankJournal.open(path, catalog_fingerprint=fingerprint, per_category={"product": 3, "shop": 2})


class InterruptingModel:
    """Writes requests as :func:`plain_query` does and presses Ctrl-C (interrupts the main thread, where
    the build runs) while answering request number ``interrupt_at``; counts the requests it answers."""

    def __init__(self, interrupt_at: int | None) -> None:
        self.interrupt_at = interrupt_at
        self.answered = 0

    def __call__(self, body: dict[str, Any]) -> StubReply:
        self.answered += 1
        if self.answered == self.interrupt_at:
            _thread.interrupt_main()
        return StubReply(content=json.dumps({"query": plain_query(body)}))


def _build(catalog: Path, out: Path, model: InterruptingModel) -> Any:
    with running_server(create_app(model)) as base_url:
        return CliRunner().invoke(arena_app, ["bank", "build", "--catalog", str(catalog), "--out", str(out),
                                              "--per-category", "2", "--llm-url", f"{base_url}/v1",
                                              "--llm-model", "writer"])


def test_ctrl_c_keeps_what_the_model_wrote_and_the_same_command_resumes(small_world: SampleWorld,
                                                                        tmp_path: Path) -> None:
    out = tmp_path / "bank.json"
    first = InterruptingModel(interrupt_at=4)
    stopped = _build(small_world.catalog_dir, out, first)
    assert stopped.exit_code == 130, stopped.output
    assert "run the same command to resume" in stopped.output and not out.exists()
    kept = [json.loads(line) for line in _lines(journal_path(out))[1:]]
    assert 1 <= len(kept) < 6
    assert all(entry["problem"]["query"].startswith("I am looking for") for entry in kept)

    second = InterruptingModel(interrupt_at=None)
    finished = _build(small_world.catalog_dir, out, second)
    assert finished.exit_code == 0, finished.output
    assert f"resuming from {journal_path(out)}" in finished.output
    assert f"({len(kept)} slots from the journal)" in finished.output
    bank = ProblemBank.model_validate_json(out.read_bytes())
    assert [p.model_dump(mode="json", exclude_none=True) for p in bank.problems[:len(kept)]] == \
        [entry["problem"] for entry in kept]  # the slots written before Ctrl-C, as they were written
    assert len(bank.problems) == 6 and not journal_path(out).exists()
    assert second.answered == 6 - len(kept)  # the model asked only for the slots not yet written
