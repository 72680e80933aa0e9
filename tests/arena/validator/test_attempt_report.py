"""The per-attempt report of a local test: which attempts a long suite's table lists, and the JSONL
rewrite that adds each line's verdict and filter label without ever leaving half a file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from rich.console import Console

from arena.judge import QUALITY_LEVELS, JudgeVerdict
from arena.validator.attempt_report import AttemptExplanation, attempt_table, rewrite_with_explanations
from trajectories.filter import FilterVerdict, Label, label_attempt


def _explanation(problem_id: str, *, success: bool = True, quality: float = 0.9,
                 label: Label = "agentic") -> AttemptExplanation:
    verdict = JudgeVerdict(quality=quality, judge="offline-rules", offline=True, attempts=0,
                           explanation=f"why {problem_id} got {quality}")
    evidence = label_attempt([], []).evidence
    return AttemptExplanation(problem_id=problem_id, category="product", success=success, verdict=verdict,
                              label=FilterVerdict(label=label, reasons=[f"{label} because"],
                                                  evidence=evidence))


def _rendered(explanations: list[AttemptExplanation], out: Path) -> tuple[str, str | None]:
    table, note = attempt_table(explanations, out)
    console = Console(record=True, width=300)
    console.print(table)
    return console.export_text(), note


def test_a_short_suite_lists_every_attempt_in_suite_order(tmp_path: Path) -> None:
    explanations = [_explanation(f"p{i:02}", success=i % 2 == 0) for i in range(30)]
    text, note = _rendered(explanations, tmp_path / "out.jsonl")
    positions = [text.index(f" p{i:02} ") for i in range(30)]
    assert note is None and positions == sorted(positions)


def test_a_long_suite_lists_the_attempts_that_did_not_pass_first_and_says_what_it_left_out(
        tmp_path: Path) -> None:
    passing = [_explanation(f"ok{i:02}") for i in range(31)]
    failing = [_explanation("failed", success=False), _explanation("gate3", quality=QUALITY_LEVELS[2]),
               _explanation("subtask", label="sub_task")]
    out = tmp_path / "out.jsonl"
    text, note = _rendered([*passing, *failing], out)
    assert all(f" {name} " in text for name in ("failed", "gate3", "subtask"))
    assert "3: no specific datum (product id, price, attribute) cited" in text and "why gate3 got 0.5" in text
    assert sum(f" ok{i:02} " in text for i in range(31)) == 27  # 30 rows: the 3 first, then 27 that passed
    assert note is not None and note.startswith("4 of 34 attempts not shown") and str(out) in note


def test_a_narrow_console_leaves_the_reasons_to_the_jsonl(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    explanations = [_explanation("p00"), _explanation("gate3", quality=QUALITY_LEVELS[2])]
    table, note = attempt_table(explanations, out, width=80)
    console = Console(record=True, width=80)
    console.print(table)
    text = console.export_text()
    assert "gate3" in text and "3: no specific" in " ".join(text.split())
    assert "why gate3 got 0.5" not in text and "judge reason" not in text
    assert note is not None and "140 columns wide" in note and str(out) in note
    assert max(len(line) for line in text.splitlines()) <= 80


def _attempt_lines(out: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in out.read_bytes().splitlines()]


def test_the_rewrite_adds_verdict_and_filter_to_each_line_in_the_order_written(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_bytes(b'{"problem_id": "b", "score": 1}\n{"problem_id": "a", "score": 0}\n')
    rewrite_with_explanations(out, [_explanation("a", success=False, quality=0.3), _explanation("b")])
    first, second = _attempt_lines(out)
    assert (first["problem_id"], first["score"], second["problem_id"]) == ("b", 1, "a")
    assert first["verdict"] == {"quality": 0.9, "failed_gate": None, "gate": "passed",
                                "reason": "why b got 0.9", "judge": "offline-rules", "offline": True}
    assert second["verdict"]["failed_gate"] == 2 and second["verdict"]["gate"].startswith("2: thinking")
    assert second["filter"] == {"label": "agentic", "reasons": ["agentic because"], "filter": "structural-v4"}
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_an_interrupted_rewrite_leaves_the_file_as_it_was(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The interruption is injected at the flush to disk (a Ctrl-C cannot be timed there otherwise)."""
    out = tmp_path / "out.jsonl"
    written = b'{"problem_id": "a", "score": 0}\n'
    out.write_bytes(written)

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        rewrite_with_explanations(out, [_explanation("a")])
    assert out.read_bytes() == written and [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]
