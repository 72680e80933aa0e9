"""Inference budgets: how many calls and tokens an attempt, and a whole run, may spend.

Tokens are ``prompt + completion`` as the upstream reports them, charged after each call; a call is
refused (429) once a budget is spent, never cut off half-way.
"""

from __future__ import annotations

import threading

from pydantic import BaseModel, ConfigDict, Field


class InferenceBudgets(BaseModel):
    """``None`` means unlimited."""

    model_config = ConfigDict(frozen=True)

    attempt_calls: int | None = Field(default=100, ge=1)
    attempt_tokens: int | None = Field(default=400_000, ge=1)
    run_calls: int | None = Field(default=None, ge=1)
    run_tokens: int | None = Field(default=None, ge=1)


def refusal(budgets: InferenceBudgets, *, attempt_calls: int, attempt_tokens: int, run_calls: int,
            run_tokens: int) -> str | None:
    """Why one more inference call is refused given what was spent so far, or None if it may go."""
    checks = (
        (budgets.attempt_calls, attempt_calls, "inference calls of this attempt"),
        (budgets.attempt_tokens, attempt_tokens, "inference tokens of this attempt"),
        (budgets.run_calls, run_calls, "inference calls of this run"),
        (budgets.run_tokens, run_tokens, "inference tokens of this run"),
    )
    for limit, spent, what in checks:
        if limit is not None and spent >= limit:
            return f"budget spent: {spent} of {limit} {what}"
    return None


class Spending:
    """Calls and tokens spent so far (by one attempt, or by a whole run); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.tokens = 0

    def charge(self, *, calls: int = 0, tokens: int = 0) -> None:
        with self._lock:
            self.calls += calls
            self.tokens += tokens
