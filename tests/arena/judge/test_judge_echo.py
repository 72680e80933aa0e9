"""The judges give no reasoning credit to echoed completions (SPEC 3), and the LLM judge gets no lift above
an offline verdict that found some."""

from __future__ import annotations

import pytest

from arena.judge import JudgeInput, JudgeVerdict, final_score, judge_offline
from arena.judge.llm import capped
from arena.judge.prompt import attempt_document
from arena.validator.runs import _arena, stored_verdict
from shoppingbench.records import AttemptRecord, AttemptScore
from tests.arena.judge.test_judge_support import COMPARES, QUERY, attempt


def echoing(item: JudgeInput, seq: int, sent: str) -> JudgeInput:
    """``item`` with the inference call ``seq`` answering a request that held ``sent``."""
    log = [call.model_copy(update={"request_messages": [{"role": "user", "content": sent}]})
           if call.seq == seq else call for call in item.proxy_log]
    return JudgeInput(query=item.query, proxy_log=log, steps=item.steps)


def test_a_comparison_the_model_wrote_earns_the_top_level_and_an_echoed_one_nothing() -> None:
    written = attempt(COMPARES)
    assert judge_offline(written).quality == 0.9 and judge_offline(written).echoed_completions == 0
    # The same words, but the agent had sent them: the comparison is its code's, not the model's.
    echoed = judge_offline(echoing(written, 4, f"Restate this: {COMPARES}"))
    assert (echoed.quality, echoed.echoed_completions) == (0.3, 1)
    assert "echoed" in echoed.explanation


def test_citing_what_the_agent_sent_is_not_echo() -> None:
    """The request holding the tool results (ids, prices) does not make a comparison of them an echo."""
    results = "7001 Spigen Rugged Armor Case Matte Black 249.0; 7002 Spigen Liquid Crystal Glitter Case 289.5"
    verdict = judge_offline(echoing(attempt(COMPARES), 4, f"{QUERY}\n<obs>{results}</obs>"))
    assert (verdict.quality, verdict.echoed_completions) == (0.9, 0)


def test_gate_one_counts_only_the_tokens_of_written_completions() -> None:
    first = attempt(COMPARES).proxy_log[0].completion_text or ""
    item = echoing(echoing(attempt(COMPARES), 4, COMPARES), 0, first)
    verdict = judge_offline(item)
    assert verdict.quality == 0.1 and verdict.echoed_completions == 2
    summary = attempt_document(item)["verified_proxy_log"]["summary"]
    assert summary["echoed_completions"] == 2 and summary["max_completion_tokens"] == 20


def _verdict(quality: float, echoed: int = 0, judge: str = "offline-rules") -> JudgeVerdict:
    return JudgeVerdict(quality=quality, judge=judge, offline=judge == "offline-rules", explanation="x",
                        attempts=0, echoed_completions=echoed)


def test_no_lift_above_an_offline_verdict_that_found_echoes() -> None:
    model = _verdict(0.9, judge="model-a")
    assert capped(model, _verdict(0.3)).quality == 0.5  # one gate above, as before
    held = capped(model, _verdict(0.3, echoed=1))
    assert (held.quality, held.echoed_completions) == (0.3, 1)
    assert "echoed" in held.explanation
    lower = capped(_verdict(0.1, judge="model-a"), _verdict(0.3, echoed=1))
    assert (lower.quality, lower.echoed_completions) == (0.1, 1)


def test_scores_and_stored_verdicts_keep_the_echo_count() -> None:
    verdicts = [_verdict(0.1, echoed=2), _verdict(0.9), _verdict(0.3, echoed=1)]
    assert final_score(1.0, verdicts).echoed_verdicts == 2
    stored = stored_verdict(verdicts[0])
    assert stored.details["echoed_completions"] == 2
    assert _arena(stored) == verdicts[0]


def test_a_judged_record_brings_its_echo_measure(monkeypatch: pytest.MonkeyPatch) -> None:
    """``JudgeInput.from_record`` takes the measure the grader left on the record instead of measuring
    again; a record read back from JSON (no measure) is measured, with the same result."""
    item = echoing(attempt(COMPARES), 4, f"Restate this: {COMPARES}")
    record = AttemptRecord(run_id="run-1", problem_id="p1", category="product", query=item.query,
                           agent_hash="a" * 64, steps=item.steps, proxy_log=item.proxy_log,
                           score=AttemptScore(problem_id="p1", category="product", success=True, gt=1.0,
                                              rule=1.0, found=1.0, format=1.0, length=1.0),
                           started_at=1.0, finished_at=2.0).measure_echoes()
    from_json = AttemptRecord.model_validate_json(record.model_dump_json())
    measured = JudgeInput.from_record(from_json)
    assert measured.echoed == frozenset({4})

    def no_second_measure(*_: object) -> list[int]:
        raise AssertionError("the record's echo measure was taken again")

    monkeypatch.setattr("arena.judge.evidence.echoed_calls", no_second_measure)
    monkeypatch.setattr("shoppingbench.records.echoed_calls", no_second_measure)
    carried = JudgeInput.from_record(record)
    assert carried.echoed == measured.echoed
    assert judge_offline(carried) == judge_offline(measured)
    assert judge_offline(carried).echoed_completions == 1
