"""The reasoning judge (SPEC 3): gates, the LLM judge with rotation, the offline rules, final scores."""

from arena.judge.evidence import JudgeInput
from arena.judge.fallback import FallbackJudge
from arena.judge.llm import (
    JudgeAuthError,
    JudgeCallConfig,
    JudgeModel,
    JudgeRules,
    JudgeUnavailable,
    LLMJudge,
)
from arena.judge.offline import OfflineJudge, judge_offline
from arena.judge.score import FinalScore, ProblemOutcome, final_score, quality_coefficient, suite_score
from arena.judge.verdict import OFFLINE_JUDGE, QUALITY_LEVELS, Judge, JudgeVerdict

__all__ = [
    "OFFLINE_JUDGE",
    "QUALITY_LEVELS",
    "FallbackJudge",
    "FinalScore",
    "Judge",
    "JudgeAuthError",
    "JudgeCallConfig",
    "JudgeInput",
    "JudgeModel",
    "JudgeRules",
    "JudgeUnavailable",
    "JudgeVerdict",
    "LLMJudge",
    "OfflineJudge",
    "ProblemOutcome",
    "final_score",
    "judge_offline",
    "quality_coefficient",
    "suite_score",
]
