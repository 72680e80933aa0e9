"""A judge model when one answers, the offline rules when none does, labelled either way."""

from __future__ import annotations

import structlog

from arena.judge.evidence import JudgeInput
from arena.judge.llm import JudgeUnavailable, LLMJudge
from arena.judge.offline import judge_offline
from arena.judge.verdict import JudgeVerdict

log = structlog.get_logger(__name__)


class FallbackJudge:
    """:class:`LLMJudge` first; on :class:`JudgeUnavailable` the offline verdict, saying why.

    The fallback verdict keeps the failed calls (``attempts`` = ``failed_calls``), whether the provider
    failed them or the models answered without exactly one verdict, so the run can tell a judge that
    failed for most of it (``arena.validator.runs``). Auth errors are not caught: a refused
    key is the operator's to fix, not a reason to quietly switch every score of a run to the offline
    rules.
    """

    def __init__(self, primary: LLMJudge) -> None:
        self.primary = primary

    def judge(self, item: JudgeInput) -> JudgeVerdict:
        try:
            return self.primary.judge(item)
        except JudgeUnavailable as exc:
            log.warning("judge_fallback_offline", reason=str(exc))
            verdict = judge_offline(item)
            return verdict.model_copy(update={"explanation": f"{verdict.explanation} (fallback: {exc})",
                                              "attempts": exc.calls, "failed_calls": exc.calls})
