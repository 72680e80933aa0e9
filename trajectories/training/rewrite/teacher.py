"""The rewriting teacher: any OpenAI-compatible chat endpoint (a hosted model through a gateway, or an
open-weights model served by vLLM), asked once per attempt.

A failed call is a recorded discard (``teacher_error``) of that attempt, never a crash of the run, except
an authentication or permission error, which would fail every attempt alike and stops the run
(:class:`TeacherAuthError`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import openai
from pydantic import SecretStr


class TeacherAuthError(RuntimeError):
    """The endpoint refused the key: no attempt can be rewritten."""


class TeacherUnavailable(RuntimeError):
    """One call failed (network, rate limit, server error): that attempt is discarded."""


class Teacher(Protocol):
    """Answers one rewrite request with text (untrusted)."""

    @property
    def model(self) -> str: ...

    def complete(self, messages: list[dict[str, str]]) -> str: ...


@dataclass
class EndpointTeacher:
    """A chat model behind an OpenAI-compatible ``base_url`` (``.../v1``)."""

    base_url: str
    model: str
    api_key: SecretStr = field(default_factory=lambda: SecretStr("not-needed"))
    temperature: float = 0.3
    max_tokens: int = 8192
    timeout_s: float = 300.0
    max_retries: int = 2

    def __post_init__(self) -> None:
        self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key.get_secret_value(),
                                     timeout=self.timeout_s, max_retries=self.max_retries)

    def complete(self, messages: list[dict[str, str]]) -> str:
        try:
            answer = self._client.chat.completions.create(
                model=self.model, messages=messages,  # type: ignore[arg-type]
                temperature=self.temperature, max_tokens=self.max_tokens)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise TeacherAuthError(f"the teacher endpoint {self.base_url} refused the key: {exc}") from exc
        except openai.OpenAIError as exc:
            raise TeacherUnavailable(f"{type(exc).__name__}: {exc}"[:300]) from exc
        if not answer.choices:
            return ""
        return answer.choices[0].message.content or ""
