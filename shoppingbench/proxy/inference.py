"""``POST /inference/chat/completions``: checks, budgets, forwarding to the configured upstream, logging.

The agent's body is an OpenAI chat-completions request. The proxy enforces the model allowlist (403),
the call and token budgets (429), refuses streaming (400, the log needs the whole completion), caps
``max_tokens``, sets the configured ``forced_params`` (e.g. a sampling temperature) and forwards the
rest unchanged to ``{base_url}/chat/completions`` (vLLM, a hosted API, or the test stub). The
upstream's answer goes back to the agent byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import structlog
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from shoppingbench.proxy.budgets import InferenceBudgets, Spending, refusal

log = structlog.get_logger(__name__)

TOKEN_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens")


class InferenceConfig(BaseModel):
    """Where inference goes and what agents may ask of it. No ``base_url``: every call answers 503."""

    model_config = ConfigDict(frozen=True)

    base_url: str | None = None
    api_key: SecretStr = SecretStr("not-needed")
    models: list[str] = Field(default_factory=list, description="Allowlist; the first is the default")
    any_model: bool = Field(default=False, description=(
        "Forward whatever model the agent names (a test double that answers to every name); "
        "``models`` then only names the default"))
    max_tokens: int = Field(default=4096, ge=1, description="Cap on max_tokens/max_completion_tokens")
    timeout_s: float = Field(default=300.0, gt=0)
    budgets: InferenceBudgets = Field(default_factory=InferenceBudgets)
    forced_params: dict[str, Any] = Field(default_factory=dict, description=(
        "Request fields set on every forwarded call whatever the agent asked, e.g. a sampling temperature "
        "when the same agent is rolled out k times (pass@k, rejection sampling); never model or messages"))

    @property
    def default_model(self) -> str | None:
        return self.models[0] if self.models else None


@dataclass
class InferenceOutcome:
    """The answer for the agent and the fields of its log entry."""

    status: int
    body: bytes
    log_fields: dict[str, Any] = field(default_factory=dict)


BUDGET_EXHAUSTED = "budget_exhausted"
"""Error code of the 429 for a spent budget: unlike a rate limit, retrying it cannot succeed."""


def _error(status: int, message: str, log_fields: dict[str, Any],
           code: str | int | None = None) -> InferenceOutcome:
    body = orjson.dumps({"error": {"message": message, "type": "proxy_error",
                                   "code": status if code is None else code}})
    return InferenceOutcome(status, body, {**log_fields, "error": message})


def _text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        # Content given as parts: [{"type": "text", "text": ...}, ...]
        return "".join(str(p.get("text", "")) for p in value if isinstance(p, dict)) or None
    return None


def _arguments(raw: object) -> object:
    """Tool-call arguments as an object when they are a JSON object string (OpenAI sends a string)."""
    if isinstance(raw, str):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
        return parsed if isinstance(parsed, dict) else raw
    return raw


def _completion_fields(answer: object) -> dict[str, Any]:
    """Completion text, native tool calls, reasoning and usage out of an upstream answer (any junk)."""
    fields: dict[str, Any] = {}
    if not isinstance(answer, dict):
        return fields
    choices = answer.get("choices")
    message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(
        choices[0], dict) else None
    if isinstance(message, dict):
        fields["completion_text"] = _text(message.get("content"))
        reasoning = message.get("reasoning_content", message.get("reasoning"))
        fields["reasoning_text"] = reasoning if isinstance(reasoning, str) else None
        calls = message.get("tool_calls")
        fields["completion_tool_calls"] = [
            {"name": call["function"].get("name"), "arguments": _arguments(call["function"].get("arguments"))}
            for call in (calls if isinstance(calls, list) else [])
            if isinstance(call, dict) and isinstance(call.get("function"), dict)
        ]
    usage = answer.get("usage")
    if isinstance(usage, dict):
        for name in ("prompt_tokens", "completion_tokens"):
            value = usage.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                fields[name] = value
    return fields


class InferenceForwarder:
    """Forwards checked chat-completion requests upstream. Lives in the proxy's event loop."""

    def __init__(self, config: InferenceConfig) -> None:
        self.config = config
        self.run_spending = Spending()
        self._client: httpx.AsyncClient | None = None

    async def start(self) -> None:
        if self.config.base_url:
            headers = {"Authorization": f"Bearer {self.config.api_key.get_secret_value()}"}
            self._client = httpx.AsyncClient(base_url=self.config.base_url.rstrip("/"), headers=headers,
                                             timeout=self.config.timeout_s)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def complete(self, raw_body: bytes, attempt: Spending) -> InferenceOutcome:
        try:
            body = orjson.loads(raw_body)
        except orjson.JSONDecodeError as exc:
            return _error(400, f"the body is not JSON: {exc}", {})
        if not isinstance(body, dict):
            return _error(400, "the body must be a JSON object (an OpenAI chat-completions request)", {})
        messages = body.get("messages")
        model = body.get("model") or self.config.default_model
        fields: dict[str, Any] = {
            "model": model if isinstance(model, str) or model is None else repr(model),
            "request_messages": messages if isinstance(messages, list) else None,
            "params": {k: v for k, v in body.items() if k != "messages"},
        }
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            return _error(400, "'messages' must be a list of message objects", fields)
        if self._client is None:
            return _error(503, "no inference endpoint is configured for this run", fields)
        if not self.config.any_model and model not in self.config.models:
            return _error(403, f"model {model!r} is not allowed; allowed: {', '.join(self.config.models)}",
                          fields)
        if body.get("stream"):
            return _error(400, "streaming is not supported: send stream=false", fields)
        refused = refusal(self.config.budgets, attempt_calls=attempt.calls, attempt_tokens=attempt.tokens,
                          run_calls=self.run_spending.calls, run_tokens=self.run_spending.tokens)
        if refused is not None:
            return _error(429, refused, fields, code=BUDGET_EXHAUSTED)
        attempt.charge(calls=1)
        self.run_spending.charge(calls=1)
        forwarded = {**body, **self.config.forced_params, "model": model, "stream": False}
        for name in TOKEN_LIMIT_FIELDS:
            value = forwarded.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > self.config.max_tokens:
                forwarded[name] = self.config.max_tokens
        if not any(name in forwarded for name in TOKEN_LIMIT_FIELDS):
            forwarded["max_tokens"] = self.config.max_tokens
        fields["params"] = {k: v for k, v in forwarded.items() if k != "messages"}
        try:
            response = await self._client.post("/chat/completions", content=orjson.dumps(forwarded),
                                               headers={"Content-Type": "application/json"})
        except httpx.HTTPError as exc:
            log.warning("inference_upstream_failed", error=repr(exc))
            return _error(502, f"inference upstream failed: {type(exc).__name__}: {exc}", fields)
        try:
            answer = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            return _error(502, f"inference upstream answered {response.status_code} with a non-JSON body",
                          fields)
        fields.update(_completion_fields(answer))
        tokens = fields.get("prompt_tokens", 0) + fields.get("completion_tokens", 0)
        attempt.charge(tokens=tokens)
        self.run_spending.charge(tokens=tokens)
        if response.status_code >= 400:
            fields["error"] = f"inference upstream answered {response.status_code}"
        return InferenceOutcome(response.status_code, response.content, fields)
