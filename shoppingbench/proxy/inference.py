"""``POST /inference/chat/completions``: checks, budgets, forwarding to the configured upstream, logging.

The agent's body is an OpenAI chat-completions request. The proxy enforces the model allowlist (403),
refuses streaming (400, the log needs the whole completion), a ``max_tokens`` (or
``max_completion_tokens``) that is not an integer from 1 to the cap (400: ``1e9``, ``"999999"``, ``true``)
and more than one completion per call (``n`` or ``best_of`` other than 1, 400), then admits the call
against the budgets (``budgets.Ledger``: 429 when a budget is spent or too many calls of the attempt are
in flight), sets the configured ``forced_params`` (e.g. a sampling temperature) and the ``max_tokens``
the budget granted, and forwards the rest unchanged to ``{base_url}/chat/completions`` (vLLM, a hosted
API, or the test stub). The upstream's answer goes back to the agent byte for byte.

A failure of the upstream itself, a 5xx answer, a timeout or a failed or dropped connection (502 to the
agent), is marked on the call's log entry as its ``provider_error`` (``http_5xx``, ``timeout``,
``connection``) and counted in the provider's health (``health.py``); the proxy's own refusals (400,
403, 429, 503 without an endpoint) and the upstream's 4xx are not provider errors.

An agent can make a provider fail on purpose (a request some servers answer with a 500), and an attempt
the provider failed is re-run rather than scored: so right after such a failure the proxy sends the
provider its own minimal request (``PROBE_MESSAGES``, one token) and records the answer as the call's
``provider_down``. Only a failure the probe confirms (the probe failed too) can make the attempt an
infrastructure failure (``shoppingbench.grading.outages`` has the whole rule); one the provider answers
the probe after is the agent's own doing. The probe has its own client and connections
(:data:`PROBE_CONNECTIONS`) and no part in the agent's budgets, so calls an agent keeps in flight cannot
make it wait or fail.

Runs that forward to one provider at once share it (``shares.py``): with ``concurrency`` (or
``tokens_in_flight``) configured, an admitted call waits at the proxy, for at most ``share_wait_s``, until
its run is under its even share of the provider and the provider under its total; only then does it go
upstream, and only then does the upstream timeout start. A call still waiting at the bound because its
own run holds its share answers 429 (``budget_busy``, retryable); one that other runs' load kept from the
provider for longer than the attempt may wait on others answers 503 and is logged as a timeout the proxy
itself confirmed (``provider_error`` ``timeout``, ``provider_down`` true, ``error`` starting with
:data:`CROWDED_OUT`): the provider had no room for the run, and the attempt is the provider's failure, not
the agent's. A refused call is given back to the budgets (it never reached the provider). Waiting for a
connection of the run's own pool is never a provider timeout either (429, like a call over its share).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import structlog
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from shoppingbench.proxy.budgets import InferenceBudgets, Ledger, Refusal, Reservation, Spending
from shoppingbench.proxy.health import observe_call
from shoppingbench.proxy.shares import Capacity, Granted, Refused, RunShare, provider_shares
from shoppingbench.records import ProviderErrorKind

log = structlog.get_logger(__name__)

TOKEN_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens")
PROBE_MESSAGES = ({"role": "user", "content": "Reply with OK."},)
"""The validator's own request that tells a provider that is down from one an agent's request broke."""
PROBE_TIMEOUT_S = 30.0
PROBE_CONNECTIONS = 4
"""Connections of the probe's own client: the agents' calls share another pool, so however many calls they
keep in flight, a probe never waits behind them for a connection."""
SINGLE_COMPLETION_FIELDS = ("n", "best_of")
CROWDED_OUT = "crowded out"
"""How the log entry's ``error`` of a call other runs' load kept from the provider begins."""


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
    concurrency: int | None = Field(default=None, ge=1, description=(
        "Calls the provider serves at once, split evenly among the runs forwarding to it at once "
        "(shares.py); None: no share of calls"))
    tokens_in_flight: int | None = Field(default=None, ge=1, description=(
        "Tokens the provider holds for calls in flight (prompt bound plus granted max_tokens), split "
        "evenly among the runs forwarding to it at once; None: no share of tokens"))
    share_wait_s: float = Field(default=60.0, gt=0, description=(
        "How long a call may wait for its run's share before it is refused, and how long in all the calls "
        "of one attempt may wait on other runs' load"))

    @property
    def default_model(self) -> str | None:
        return self.models[0] if self.models else None


@dataclass
class InferenceOutcome:
    """The answer for the agent and the fields of its log entry."""

    status: int
    body: bytes
    log_fields: dict[str, Any] = field(default_factory=dict)
    reached_provider: bool = True
    """``False`` when the call never got an answer or a failure from the provider (no connection came)."""

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens the upstream reported (0 when it reported none)."""
        return int(self.log_fields.get("prompt_tokens", 0) + self.log_fields.get("completion_tokens", 0))


BUDGET_EXHAUSTED = "budget_exhausted"
"""Error code of the 429 for a spent budget: unlike a rate limit, retrying it cannot succeed."""
BUDGET_BUSY = "budget_busy"
"""Error code of the 429 for a call that must wait for calls of its attempt (or run) still in flight."""


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


def _parameter_error(body: dict[str, Any], cap: int) -> str | None:
    """Why the request's token limit or completion count is refused, or ``None``."""
    for name in TOKEN_LIMIT_FIELDS:
        value = body.get(name)
        if value is not None and (type(value) is not int or not 1 <= value <= cap):
            return f"{name!r} must be an integer from 1 to {cap}, got {value!r}"
    for name in SINGLE_COMPLETION_FIELDS:
        value = body.get(name)
        if value is not None and (type(value) is not int or value != 1):
            return f"{name!r} must be 1 (one completion per call), got {value!r}"
    return None


def _asked_tokens(body: dict[str, Any], cap: int) -> int:
    """The completion tokens the request asks for: its smallest token limit, the cap when it names none."""
    return min([body[name] for name in TOKEN_LIMIT_FIELDS if body.get(name) is not None], default=cap)


class InferenceForwarder:
    """Forwards checked chat-completion requests upstream. Lives in the proxy's event loop."""

    def __init__(self, config: InferenceConfig) -> None:
        self.config = config
        self.ledger = Ledger(config.budgets)
        self._client: httpx.AsyncClient | None = None
        self._probe_client: httpx.AsyncClient | None = None
        self._share: RunShare | None = None

    async def start(self) -> None:
        if self.config.base_url:
            headers = {"Authorization": f"Bearer {self.config.api_key.get_secret_value()}"}
            # Waiting for a connection of this run's pool is bounded like a share (a 429, never a timeout).
            self._client = httpx.AsyncClient(
                base_url=self.config.base_url.rstrip("/"), headers=headers,
                timeout=httpx.Timeout(self.config.timeout_s, pool=self.config.share_wait_s),
                limits=httpx.Limits(max_connections=max(100, self.config.concurrency or 0)))
            self._probe_client = httpx.AsyncClient(
                base_url=self.config.base_url.rstrip("/"), headers=headers,
                timeout=min(self.config.timeout_s, PROBE_TIMEOUT_S),
                limits=httpx.Limits(max_connections=PROBE_CONNECTIONS, max_keepalive_connections=1))
            capacity = Capacity(calls=self.config.concurrency, tokens=self.config.tokens_in_flight)
            if capacity.limited:
                self._share = provider_shares(self.config.base_url).join(capacity)

    async def aclose(self) -> None:
        if self._share is not None:
            self._share.leave()
            self._share = None
        for client in (self._client, self._probe_client):
            if client is not None:
                await client.aclose()
        self._client = self._probe_client = None

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
        if not isinstance(model, str):
            return _error(400, "'model' must be a string", fields)
        if not self.config.any_model and model not in self.config.models:
            return _error(403, f"model {model!r} is not allowed; allowed: {', '.join(self.config.models)}",
                          fields)
        if body.get("stream"):
            return _error(400, "streaming is not supported: send stream=false", fields)
        invalid = _parameter_error(body, self.config.max_tokens)
        if invalid is not None:
            return _error(400, invalid, fields)
        admitted = self.ledger.reserve(attempt, prompt_bound=len(raw_body),
                                       max_tokens=_asked_tokens(body, self.config.max_tokens))
        if isinstance(admitted, Refusal):
            code = BUDGET_EXHAUSTED if admitted.final else BUDGET_BUSY
            return _error(429, admitted.message, fields, code=code)
        granted = await self._await_share(attempt, admitted, fields)
        if isinstance(granted, InferenceOutcome):
            return granted
        outcome: InferenceOutcome | None = None
        try:
            outcome = await self._forward(body, model, fields, admitted)
            if not outcome.reached_provider:
                self.ledger.cancel(attempt, admitted)
            return outcome
        finally:  # a call cut off before its answer keeps its whole reservation
            if granted is not None and self._share is not None:
                self._share.release(granted)
            if outcome is None or outcome.reached_provider:
                self.ledger.settle(attempt, admitted, admitted.held if outcome is None else outcome.tokens)

    async def _await_share(self, attempt: Spending, admitted: Reservation,
                           fields: dict[str, Any]) -> Granted | InferenceOutcome | None:
        """Wait for the run's share of the provider (``shares.py``): the share taken (``None`` when the
        provider is not shared), or the refusal to answer, the call given back to the budgets."""
        if self._share is None:
            return None
        allowance = self.ledger.others_allowance(attempt, self.config.share_wait_s)
        waited = await self._share.acquire(admitted.held, self.config.share_wait_s, allowance)
        self.ledger.waited_on_others(attempt, waited.others_s)
        fields["queued_ms"] = round(waited.waited_s * 1000, 3)
        if isinstance(waited, Granted):
            return waited
        self.ledger.cancel(attempt, admitted)
        assert isinstance(waited, Refused)
        if waited.reason == "own":
            return _error(429, f"this run has its share of the inference provider in flight (waited "
                               f"{waited.waited_s:.1f} s): wait for one of its calls to return", fields,
                          code=BUDGET_BUSY)
        log.warning("inference_crowded_out", waited_s=round(waited.waited_s, 3),
                    others_s=round(waited.others_s, 3))
        message = (f"{CROWDED_OUT}: other runs held the inference provider's capacity while this attempt "
                   f"waited {attempt.waited_on_others_s:.1f} s for it")
        return _error(503, message, {**fields, "provider_error": "timeout", "provider_down": True,
                                     "crowded_out": True})

    async def _forward(self, body: dict[str, Any], model: str, fields: dict[str, Any],
                       admitted: Reservation) -> InferenceOutcome:
        assert self._client is not None
        forwarded = {**body, **self.config.forced_params, "model": model, "stream": False}
        named = [name for name in TOKEN_LIMIT_FIELDS if forwarded.get(name) is not None]
        for name in named or ["max_tokens"]:
            forwarded[name] = admitted.max_tokens
        fields["params"] = {k: v for k, v in forwarded.items() if k != "messages"}
        started = time.perf_counter()
        outcome = await self._post(forwarded, fields)
        if not outcome.reached_provider:
            return outcome
        kind = outcome.log_fields.get("provider_error")
        observe_call("inference", seconds=time.perf_counter() - started, error=kind, at=time.time())
        if kind is not None:
            down = await self._provider_down(model)
            outcome.log_fields["provider_down"] = down
            log.warning("inference_provider_probed", provider_error=kind, provider_down=down)
        return outcome

    async def _provider_down(self, model: str) -> bool:
        """Whether the provider fails the proxy's own minimal request too (a 5xx, a timeout or a failed
        connection): asked right after an agent's call failed, on the probe's own client (its own
        connections, outside every budget of the agent's: never charged to it, never waiting for its calls
        in flight)."""
        assert self._probe_client is not None
        probe = {**self.config.forced_params, "model": model, "messages": list(PROBE_MESSAGES),
                 "max_tokens": 1, "stream": False}
        try:
            response = await self._probe_client.post("/chat/completions", content=orjson.dumps(probe),
                                                     headers={"Content-Type": "application/json"})
        except httpx.HTTPError:
            return True
        return response.status_code >= 500

    async def _post(self, forwarded: dict[str, Any], fields: dict[str, Any]) -> InferenceOutcome:
        assert self._client is not None
        try:
            response = await self._client.post("/chat/completions", content=orjson.dumps(forwarded),
                                               headers={"Content-Type": "application/json"})
        except httpx.PoolTimeout:
            outcome = _error(429, "too many inference calls of this run are in flight: wait for one to "
                                  "return", fields, code=BUDGET_BUSY)
            outcome.reached_provider = False
            return outcome
        except httpx.HTTPError as exc:
            kind = transport_error_kind(exc)
            log.warning("inference_upstream_failed", error=repr(exc), provider_error=kind)
            return _error(502, f"inference upstream failed: {type(exc).__name__}: {exc}",
                          {**fields, "provider_error": kind})
        if response.status_code >= 500:
            fields["provider_error"] = "http_5xx"
            log.warning("inference_upstream_failed", status=response.status_code, provider_error="http_5xx")
        try:
            answer = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            return _error(502, f"inference upstream answered {response.status_code} with a non-JSON body",
                          fields)
        fields.update(_completion_fields(answer))
        if response.status_code >= 400:
            fields["error"] = f"inference upstream answered {response.status_code}"
        return InferenceOutcome(response.status_code, response.content, fields)


def transport_error_kind(exc: httpx.HTTPError) -> ProviderErrorKind:
    """A failed exchange with the upstream as a provider error: ``timeout`` (connect, read, write or pool
    timeout) or ``connection`` (refused, reset, dropped mid-answer, unreadable)."""
    return "timeout" if isinstance(exc, httpx.TimeoutException) else "connection"
