"""The LLM judge: the gate prompt sent to OpenAI-compatible judge models, with rotation and fallbacks.

Per verdict, models are tried in the configured order at temperature 0. A 429, a 5xx, a timeout or a
connection failure moves on to the next model; after a full round without an answer the judge sleeps
(exponential, capped) and tries another round, up to ``max_rounds``. A model that answers 200 without
exactly one verdict (unparseable, two conflicting values, empty, a body that is not a completion) is
not asked again for that verdict, and is *benched* for ``bench_s`` seconds of the judge's clock (an
injected one in tests): while benched it is asked after the models that are not, never skipped. Such an
answer may come from the attempt's own text (a trajectory that makes a verbose model quote a second
verdict), so it cannot switch the judge off for later attempts, of this agent or any other: each verdict
asks the models again, and a model that answers properly leaves the bench. A 401 or 403 stops
everything: a wrong key does not fix itself and hammering the endpoint helps no one. When no model
answers, :class:`JudgeUnavailable` (with the calls made, all failed) lets the caller fall back to the
offline judge. A verdict counts the calls that failed before it (``failed_calls``), so a run can tell
when its judge failed for most of it; every call is counted in the ``judge`` provider's health
(``shoppingbench.proxy.health``).

Gate 1 is read straight off the verified proxy log before any call: an attempt without reasoning
tokens costs no judge call and no model can be talked into passing it. An answer must hold exactly one
verdict (``parsing``): one with conflicting values is unparseable like any other. A model's verdict
more than one gate above the offline rules' verdict on the same verified log is logged and capped at one
gate above it: the rules only credit citations of real tool results, so a much higher verdict is a model
that was talked into it, not a reading the rules missed. When the offline rules found echoed completions
(text the agent sent that its model only repeated) there is no lift at all: the model's verdict is
capped at the offline one, since the data in front of it reads like reasoning the model never wrote.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Final, Literal

import openai
import structlog
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from arena.judge.evidence import MIN_REASONING_TOKENS, JudgeInput, max_completion_tokens, passes_gate_one
from arena.judge.offline import judge_offline
from arena.judge.parsing import parse_answer
from arena.judge.prompt import judge_messages
from arena.judge.verdict import PROXY_LOG_RULE, QUALITY_LEVELS, JudgeVerdict
from shoppingbench.proxy.health import observe_call

log = structlog.get_logger(__name__)

MAX_GATES_ABOVE_OFFLINE: Final = 1
"""How many levels a model's verdict may sit above the offline rules' verdict on the same attempt."""

_TRANSIENT: Final = (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError,
                     openai.APIConnectionError)


class JudgeModel(BaseModel):
    """One judge model behind an OpenAI-compatible endpoint."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    base_url: str
    api_key: SecretStr = SecretStr("not-needed")


class JudgeRules(BaseModel):
    """What a judge model may answer: every validator must ask the same (it changes verdicts)."""

    model_config = ConfigDict(frozen=True)

    max_tokens: int = Field(default=2048, ge=16, description="Cap on the tokens of one verdict")


class JudgeCallConfig(BaseModel):
    """How the judge endpoint is called: timeouts and retries, tuned to one's provider."""

    model_config = ConfigDict(frozen=True)

    timeout_s: float = Field(default=60.0, gt=0)
    max_rounds: int = Field(default=3, ge=1, description="Passes over all usable models per verdict")
    backoff_base_s: float = Field(default=1.0, ge=0)
    backoff_cap_s: float = Field(default=30.0, ge=0)
    bench_s: float = Field(default=300.0, ge=0, description=(
        "Seconds a model that answered without exactly one verdict is asked after the others (0: never)"))


class JudgeAuthError(RuntimeError):
    """The judge endpoint refused our credentials (401/403): stop and fix the key."""


class JudgeUnavailable(RuntimeError):
    """No judge model produced a usable answer for this attempt (after ``calls`` failed calls)."""

    def __init__(self, message: str, calls: int = 0) -> None:
        super().__init__(message)
        self.calls = calls


def _error_kind(exc: openai.APIError) -> str:
    """A failed judge call as a provider-health error kind."""
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection"
    if isinstance(exc, openai.RateLimitError):
        return "rate_limited"
    status = getattr(exc, "status_code", 0)
    return "http_5xx" if isinstance(status, int) and status >= 500 else "http_4xx"


_Failure = Literal["failed", "no_verdict"]
"""A call without a verdict: the provider failed (``failed``), or the model answered none (``no_verdict``)."""


def _content(response: object) -> str | None:
    """The answer text of a chat completion; ``None`` for anything else a 200 may carry (text, junk)."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        return None
    content = getattr(getattr(choices[0], "message", None), "content", None)
    return content if isinstance(content, str) else None


class LLMJudge:
    def __init__(self, models: Sequence[JudgeModel], config: JudgeCallConfig | None = None, *,
                 rules: JudgeRules | None = None, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not models:
            raise ValueError("the LLM judge needs at least one judge model")
        self.models = list(models)
        self.config = config = config or JudgeCallConfig()
        self.rules = rules or JudgeRules()
        self._sleep = sleep
        self._clock = clock
        self._bench: dict[str, float] = {}  # model name -> until when (on ``clock``)
        self._lock = threading.Lock()  # verdicts are asked from several threads (``arena.validator.judging``)
        self._clients = {m.name: openai.OpenAI(base_url=m.base_url, api_key=m.api_key.get_secret_value(),
                                               timeout=config.timeout_s, max_retries=0) for m in self.models}

    @property
    def benched(self) -> set[str]:
        """The models benched now: they answered without exactly one verdict less than ``bench_s`` ago, and
        are asked after the others until then."""
        now = self._clock()
        with self._lock:
            return {name for name, until in self._bench.items() if until > now}

    @property
    def blacklisted(self) -> set[str]:
        """The same as :attr:`benched`."""
        return self.benched

    def _bench_model(self, name: str) -> None:
        if self.config.bench_s > 0:
            with self._lock:
                self._bench[name] = self._clock() + self.config.bench_s

    def _unbench(self, name: str) -> None:
        with self._lock:
            self._bench.pop(name, None)

    def _order(self) -> list[JudgeModel]:
        """The models in the configured order, the benched ones last."""
        benched = self.benched
        return ([m for m in self.models if m.name not in benched]
                + [m for m in self.models if m.name in benched])

    def judge(self, item: JudgeInput) -> JudgeVerdict:
        if not passes_gate_one(item.written_calls):
            return JudgeVerdict(
                quality=QUALITY_LEVELS[0], judge=PROXY_LOG_RULE, offline=False, attempts=0,
                echoed_completions=len(item.echoed), steered_completions=len(item.steered),
                explanation=f"gate 1: no answered inference call wrote {MIN_REASONING_TOKENS} completion "
                            f"tokens (most: {max_completion_tokens(item.written_calls)})")
        messages = judge_messages(item)
        attempts = 0
        tried: list[str] = []
        no_verdict: list[str] = []  # models that answered this attempt without one verdict: not asked again
        order = self._order()
        for round_index in range(self.config.max_rounds):
            usable = [m for m in order if m.name not in no_verdict]
            if not usable:
                break
            if round_index:
                backoff = self.config.backoff_base_s * 2 ** (round_index - 1)
                self._sleep(min(self.config.backoff_cap_s, backoff))
            for model in usable:
                attempts += 1
                tried.append(model.name)
                answer = self._ask(model, messages, attempts, tuple(tried))
                if isinstance(answer, JudgeVerdict):
                    return capped(answer, judge_offline(item))
                if answer == "no_verdict":
                    no_verdict.append(model.name)
        raise JudgeUnavailable(f"no judge model answered after {attempts} calls "
                               f"(no verdict from: {', '.join(no_verdict) or 'none'})", calls=attempts)

    def _ask(self, model: JudgeModel, messages: list[dict[str, str]], attempts: int,
             tried: tuple[str, ...]) -> JudgeVerdict | _Failure:
        started = time.perf_counter()

        def observed(error: str | None) -> None:
            observe_call("judge", seconds=time.perf_counter() - started, error=error, at=time.time())

        try:
            response = self._clients[model.name].chat.completions.create(
                model=model.name, messages=messages,  # type: ignore[arg-type]
                temperature=0, max_tokens=self.rules.max_tokens)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            observed("http_4xx")
            raise JudgeAuthError(f"judge endpoint {model.base_url} refused the API key for {model.name} "
                                 f"({exc.status_code}); set ARENA_JUDGE_API_KEY") from exc
        except _TRANSIENT as exc:
            observed(_error_kind(exc))
            log.warning("judge_call_failed", model=model.name, error=type(exc).__name__)
            return "failed"
        except openai.APIStatusError as exc:
            observed(_error_kind(exc))
            log.warning("judge_call_refused", model=model.name, status=exc.status_code)
            return "failed"
        except openai.APIResponseValidationError:
            response = None
        content = _content(response)
        parsed = parse_answer(content)
        observed(None if parsed is not None else "junk")
        if parsed is None:
            self._bench_model(model.name)
            log.warning("judge_model_benched", model=model.name, reason="no single verdict in the answer",
                        seconds=self.config.bench_s, answer=(content or "")[:200])
            return "no_verdict"
        self._unbench(model.name)
        return JudgeVerdict(quality=parsed.quality, judge=model.name, offline=False,
                            explanation=parsed.explanation, attempts=attempts, failed_calls=attempts - 1,
                            models_tried=tried)


def capped(verdict: JudgeVerdict, offline: JudgeVerdict) -> JudgeVerdict:
    """``verdict`` lowered to ``MAX_GATES_ABOVE_OFFLINE`` levels above ``offline``'s, or to ``offline``'s
    own level when the offline rules found echoed or steered completions (logged when it is lowered)."""
    lift = 0 if offline.undecided_completions else MAX_GATES_ABOVE_OFFLINE
    ceiling = QUALITY_LEVELS[min(len(QUALITY_LEVELS) - 1, QUALITY_LEVELS.index(offline.quality) + lift)]
    flagged = verdict.model_copy(update={"echoed_completions": offline.echoed_completions,
                                         "steered_completions": offline.steered_completions})
    if verdict.quality <= ceiling:
        return flagged
    log.warning("judge_verdict_capped", model=verdict.judge, quality=verdict.quality, offline=offline.quality,
                ceiling=ceiling, echoed_completions=offline.echoed_completions)
    note = f"capped from {verdict.quality}: the offline rules gave {offline.quality}"
    if offline.undecided_completions:
        note += (f" and found {offline.echoed_completions} echoed and {offline.steered_completions} steered "
                 "completion(s)")
    return flagged.model_copy(update={"quality": ceiling, "explanation": f"{verdict.explanation} ({note})"})
