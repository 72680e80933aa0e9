"""The dumps benchmark on a tiny day: every figure present, the chat columns measured, every agentic
conversation round-tripping through Qwen3's template."""

from __future__ import annotations

import orjson
import pytest

from benchmarks import dumps


def test_a_tiny_day_gives_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    dumps.main(["--attempts", "120", "--render-sample", "0"])
    result = orjson.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["attempts"] == 120 and result["load_dataset_rows"] == 120
    assert result["export_s"] > 0 and result["load_dataset_s"] > 0 and result["encode_cpu_ms_per_attempt"] > 0
    sizes = result["bytes_per_attempt"]
    assert sizes["dump_total"] > sizes["with_chat_columns"] > sizes["without_chat_columns"] > 0
    assert result["agentic_attempts"] == result["chat_rendered_attempts"] > 0  # --render-sample 0: all
    assert result["chat_rendered_tool_calls"] > result["chat_rendered_attempts"]
    assert result["chat_render_share"] == 1.0
    assert 0 < result["load_dataset_kto_rows"] <= 120


def test_the_render_sample_is_evenly_spaced_and_capped(capsys: pytest.CaptureFixture[str]) -> None:
    dumps.main(["--attempts", "60", "--render-sample", "7"])
    result = orjson.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["chat_rendered_attempts"] == 7 < result["agentic_attempts"]
