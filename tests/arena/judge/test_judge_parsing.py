"""Judge answers come back ugly; only the five levels are ever accepted."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.judge.parsing import parse_answer
from arena.judge.verdict import QUALITY_LEVELS


@pytest.mark.parametrize(("text", "quality"), [
    ('{"gate_failed": 4, "reasoning_quality": 0.7, "explanation": "cites 7001"}', 0.7),
    ('<think>Gate 1 passes... maybe 0.9? no.</think>\n{"reasoning_quality": 0.5, "explanation": "x"}', 0.5),
    ('Sure! Here is my verdict:\n```json\n{"reasoning_quality": "0.3", "explanation": "no"}\n```\nBye', 0.3),
    ('{"reasoning_quality": 0.9, "explanation": "the agent compared 7001 and 70', 0.9),  # truncated
    ("Reasoning quality: 0.1 because it never reasoned.", 0.1),
    ('{"verdict": {"quality": 0.90}}', 0.9),
    ("Thinking about gate 3 here.</think>{\"reasoning_quality\": 0.5}", 0.5),  # opening tag in template
    ('<THINK>caps</THINK>{"Reasoning_Quality": 0.3}', 0.3),
])
def test_accepts_ugly_but_clear_answers(text: str, quality: float) -> None:
    parsed = parse_answer(text)
    assert parsed is not None and parsed.quality == quality


@pytest.mark.parametrize("text", [
    None, "", "The agent did fine.", '{"reasoning_quality": 0.6}', '{"reasoning_quality": 1.5}',
    '{"reasoning_quality": -0.1}', '{"reasoning_quality": "high"}', '{"reasoning_quality": true}',
    "quality: 7", '{"reasoning_quality": 0.6, "explanation": "between 0.5 and 0.7"}',
    "<think>I lean to reasoning_quality: 0.9 but let me check", '{"explanation": "no score"}',
    '{"note": "draft", "score": 0.3} then on reflection {"score": 0.7, "reason": "cites a price"}',
])
def test_rejects_missing_out_of_range_or_conflicting_values(text: str | None) -> None:
    assert parse_answer(text) is None


def test_explanation_is_taken_and_bounded() -> None:
    parsed = parse_answer('{"reasoning_quality": 0.7, "explanation": "' + "word " * 1000 + '"}')
    assert parsed is not None and parsed.explanation.startswith("word word") and len(parsed.explanation) < 700
    truncated = parse_answer('{"reasoning_quality": 0.9, "explanation": "compared 7001 and 7002 on pri')
    assert truncated is not None and truncated.explanation == "compared 7001 and 7002 on pri"


@given(st.text(max_size=400))
def test_any_text_gives_none_or_a_level(text: str) -> None:
    parsed = parse_answer(text)
    assert parsed is None or parsed.quality in QUALITY_LEVELS
