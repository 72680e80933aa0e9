"""The record of one attempt as the harness produces it: steps, verified proxy log, scores, failure.

This is the one shape the runner writes, the judge and the structural filter read, and the trajectory
store persists (SPEC 3 and 6). The steps are the agent's own, untrusted words; the proxy log is what
the sandbox's proxy saw the agent do, written only by the proxy and never by agent code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from shoppingbench.echo import echoed_calls
from shoppingbench.scoring.attempt import AttemptScore

ProxyCallKind = Literal["search", "inference", "other"]
ProviderErrorKind = Literal[
    "http_5xx",    # the inference provider answered a 5xx
    "timeout",     # it did not answer within the proxy's timeout
    "connection",  # the connection failed or dropped before a whole answer
]
FailureKind = Literal[
    "crash",          # agent_main raised, or the interpreter died
    "timeout",        # wall-clock limit of the problem reached
    "memory",         # address-space/memory limit hit
    "output_limit",   # stdout/stderr or returned steps over the byte limit
    "bad_output",     # steps not JSON-able or not a list of dicts
    "sandbox_error",  # the sandbox itself could not start or run the agent
    "rejected",       # static analysis refused the agent file before it ran
    "unverified_answer",  # arena rule: a recommended id no tool returned to this attempt (SPEC 3)
]


class ReturnedProduct(BaseModel):
    """What a ``find_product`` or ``view_product_information`` answer said about one product, as the proxy
    read it from the tool server's response (the agent cannot forge it)."""

    model_config = ConfigDict(frozen=True)

    product_id: str
    title: str | None = None
    price: float | None = None
    shop_id: str | None = None
    service: list[str] = Field(default_factory=list)
    values: list[str] = Field(default_factory=list,
                              description="Lower-case sku option and attribute values (view answers)")
    sold_count: int | None = None
    texts: list[str] = Field(default_factory=list, description=(
        "The answer's other texts, each cut (view answers: short description, description, the sku "
        "option and attribute keys): what a rendering of the result may show"))


REFUSAL_STATUSES: Final = frozenset({403, 429})
"""Statuses of a proxy refusal: the model is not allowed (403), a budget is spent (429)."""


class ProxyCall(BaseModel):
    """One request the sandboxed agent made through the verified proxy, as the proxy saw it."""

    model_config = ConfigDict(frozen=True)

    seq: int = Field(ge=0, description="Order of the call within its attempt, from 0")
    kind: ProxyCallKind
    method: str
    path: str
    params: dict[str, Any] = Field(default_factory=dict,
                                   description="Query or body parameters (for inference: all but messages)")
    status: int = Field(description="HTTP status the proxy answered")
    started_at: float = Field(description="Unix time the proxy received the request")
    duration_ms: float = Field(ge=0)
    error: str | None = Field(default=None, description="Why the proxy refused or failed the call")
    provider_error: ProviderErrorKind | None = Field(
        default=None, description="The inference provider failed this call (never the proxy's own refusals, "
                                  "budgets or a 4xx of the provider)")
    provider_down: bool | None = Field(
        default=None, description="After a provider error: whether the proxy's own probe failed too (the "
                                  "provider was down: retried attempts are made of these) or was answered "
                                  "(the agent's request broke the provider: its own failure)")
    queued_ms: float = Field(default=0.0, ge=0, description=(
        "Inference: how long the call waited for its run's share of the provider before it went or was "
        "refused"))
    crowded_out: bool = Field(default=False, description=(
        "Inference: the proxy refused the call itself because other runs held the provider's capacity "
        "while it waited (it never reached the provider)"))
    # search
    product_ids: list[str] = Field(default_factory=list,
                                   description="Ids the search/view answer returned, in order")
    results: list[ReturnedProduct] = Field(default_factory=list,
                                           description="What the answer said about each of those products")
    response_sha256: str | None = Field(default=None, description="sha256 of the full answer body")
    # inference
    model: str | None = None
    request_messages: list[dict[str, Any]] | None = None
    completion_text: str | None = Field(default=None, description="The assistant message content")
    completion_tool_calls: list[dict[str, Any]] = Field(
        default_factory=list, description="Native tool calls of the completion: {name, arguments}")
    reasoning_text: str | None = Field(default=None, description="Reasoning content, if the server sends it")
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class AttemptFailure(BaseModel):
    """Why an attempt scores as a failure: it produced no usable dialogue, or (``unverified_answer``) the
    arena refused its answer."""

    model_config = ConfigDict(frozen=True)

    kind: FailureKind
    reason: str


ECHO_MEASURE_KEY: Final = "_echo_measure"
"""Where a record keeps its echo measure: in its ``__dict__`` beside the fields, never a field itself, so
no JSON, dump or ``model_validate`` input can set it and no ``model_dump`` writes it."""


@dataclass(frozen=True, slots=True, eq=False)
class EchoMeasure:
    """The echo measure (:func:`shoppingbench.echo.echoed_calls`) of a record, taken when it was built,
    with what it was taken on: it is used only while the record still holds that query and those very
    proxy-log entries (a copy with another query or another log measures again)."""

    query: str
    calls: tuple[ProxyCall, ...]
    echoed: tuple[int, ...]

    def fits(self, query: str, proxy_log: list[ProxyCall]) -> bool:
        return (query == self.query and len(proxy_log) == len(self.calls)
                and all(mine is theirs for mine, theirs in zip(proxy_log, self.calls, strict=True)))

    def __eq__(self, other: object) -> bool:
        # A cache, not part of the record's value: a record equals its copy read back from JSON (which
        # has none) whether or not it carries one (pydantic compares ``__dict__`` keys beyond the fields).
        return True

    __hash__ = None  # type: ignore[assignment]


STEERING_KEY: Final = "_steering_measure"
"""Where a record keeps its steered requests, as :data:`ECHO_MEASURE_KEY` keeps the echo measure."""


@dataclass(frozen=True, slots=True, eq=False)
class SteeringMeasure:
    """A record's steered requests with the proxy-log entries they were measured on."""

    calls: tuple[ProxyCall, ...]
    steered: dict[int, str]

    def fits(self, proxy_log: list[ProxyCall]) -> bool:
        return len(proxy_log) == len(self.calls) and all(
            mine is theirs for mine, theirs in zip(proxy_log, self.calls, strict=True))

    def __eq__(self, other: object) -> bool:
        return True  # a cache, not part of the record's value (see EchoMeasure)

    __hash__ = None  # type: ignore[assignment]


class AttemptRecord(BaseModel):
    """One agent x problem x run: everything needed to score, judge, filter and train on it.

    A record built by the harness (:class:`shoppingbench.grading.grader.Grader`) also carries its echo
    measure (:meth:`measure_echoes`), computed while the sandbox waits on the model, so the store and
    the judges need not measure again. It lives in memory only (copies and pickles keep it): a record
    read from JSON (a file, a dump, a stored row) has none and is measured when asked.
    """

    run_id: str
    problem_id: str
    category: str
    query: str
    agent_hash: str = Field(description="sha256 of the agent file's bytes")
    steps: list[Any] = Field(default_factory=list, description="The agent's dialogue steps, as returned")
    proxy_log: list[ProxyCall] = Field(default_factory=list)
    score: AttemptScore = Field(description="The arena's grades: what success rates and races count")
    reference_score: AttemptScore | None = Field(
        default=None, description="The exact reference scorer's grades when an arena rule overrode them "
                                  "(None: ``score`` is the reference's)")
    answer_verified: bool | None = Field(
        default=None, description="Every recommended id was returned to this attempt by a tool, per the "
                                  "verified proxy log (None: not checked, for want of a verified log or of a "
                                  "dialogue)")
    failure: AttemptFailure | None = None
    started_at: float
    finished_at: float
    stderr_tail: str = Field(default="", description="Last bytes the agent printed to stderr (bounded)")
    agent_ms: float | None = Field(
        default=None, description="Agent start to answer as the sandbox measured it (informative only: "
                                  "reported from inside the sandbox); started_at/finished_at are the host's")
    infra_failed: bool = Field(
        default=False, description="The inference provider was down for at least one call of an attempt "
                                   "that did not succeed, and nothing the agent did explains it "
                                   "(``shoppingbench.grading.outages``): re-run later, a bounded number of "
                                   "times, then counted as the agent's failure")
    infra_retries: int = Field(default=0, ge=0, description=(
        "How many earlier tries of this attempt were infrastructure failures (it is the re-run of those)"))

    def provider_errors(self) -> list[ProxyCall]:
        """The calls the inference provider failed (5xx, timeout, dropped connection)."""
        return [call for call in self.proxy_log if call.provider_error is not None]

    def provider_outages(self) -> list[ProxyCall]:
        """The provider errors the proxy's probe confirmed: the provider was down, not broken by the call."""
        return [call for call in self.provider_errors() if call.provider_down]

    def measure_echoes(self) -> AttemptRecord:
        """Take the echo measure now and keep it with the record (see the class doc); returns ``self``."""
        echoed = tuple(echoed_calls(self.proxy_log, self.query))
        self.__dict__[ECHO_MEASURE_KEY] = EchoMeasure(self.query, tuple(self.proxy_log), echoed)
        return self

    def carried_echoes(self) -> list[int] | None:
        """The ``seq`` of the echoed calls as :meth:`measure_echoes` took them, if it did on this query
        and proxy log; ``None`` when there is no measure to trust (read from JSON, log or query changed)."""
        measure = self.__dict__.get(ECHO_MEASURE_KEY)
        if not isinstance(measure, EchoMeasure) or not measure.fits(self.query, self.proxy_log):
            return None
        return list(measure.echoed)

    def echoed_calls(self) -> list[int]:
        """``shoppingbench.echo.echoed_calls`` of this record: the carried measure, else computed now."""
        carried = self.carried_echoes()
        return carried if carried is not None else echoed_calls(self.proxy_log, self.query)

    def carry_steering(self, steered: Mapping[int, str]) -> AttemptRecord:
        """Keep the attempt's steered requests (``seq`` -> why, measured over its whole run by
        ``trajectories.filter.decided``) with the record, in memory only as the echo measure is; returns
        ``self``."""
        self.__dict__[STEERING_KEY] = SteeringMeasure(tuple(self.proxy_log), dict(steered))
        return self

    def carried_steering(self) -> dict[int, str] | None:
        """The steered requests :meth:`carry_steering` kept, while the record holds that very proxy log;
        ``None`` when the run's requests were not measured."""
        measure = self.__dict__.get(STEERING_KEY)
        if not isinstance(measure, SteeringMeasure) or not measure.fits(self.proxy_log):
            return None
        return dict(measure.steered)

    def refused_calls(self) -> list[ProxyCall]:
        """The calls the proxy refused: a model not allowed (403) or a spent budget (429)."""
        return [call for call in self.proxy_log if call.status in REFUSAL_STATUSES]
