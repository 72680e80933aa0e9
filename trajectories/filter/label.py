"""The structural-quality filter (SPEC 6): was the tool loop driven by the model or by Python code?

- ``agentic``: the tool calls that ran (the proxy's ``search`` entries) were emitted by the model:
  each appears, by tool name and normalised arguments, in an LLM completion that preceded it; and so
  was the answer: the final ``recommend_product`` of the steps (which the proxy never sees) names only
  ids some verified completion recommended. An echoed completion (``shoppingbench.echo``: the model
  only repeated its request, e.g. code asked it to repeat the call the code had chosen) emits nothing,
  and neither does a steered one (``trajectories.filter.decided``: its request held text the agent's
  code wrote, so the code, not the model, decided what it answered).
- ``sub_task``: the LLM was used, but code issued the calls; its completions only chose, classified
  or narrated (typically short picks: an id, yes/no).
- ``no_llm``: no inference call was answered.

Only the verified proxy log decides who issued a call. The agent's own steps are untrusted: they are
checked against the proxy log, and steps that claim calls the proxy never saw keep an attempt from
being ``agentic`` (training on invented tool results would teach hallucination).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shoppingbench.echo import echoed_calls
from shoppingbench.scoring import extract_answer
from trajectories.filter.calls import (
    CallIndex,
    CallSignature,
    LoggedCall,
    emitted_calls,
    executed_call,
    signature,
    step_calls,
)
from trajectories.filter.decided import describe

Label = Literal["agentic", "sub_task", "no_llm"]
LABELS: tuple[Label, ...] = ("agentic", "sub_task", "no_llm")
FILTER_NAME = "structural-v4"
RECOMMEND = "recommend_product"


class FilterConfig(BaseModel):
    """Thresholds of the filter. The defaults are the arena's; the verdict records the ones used."""

    model_config = ConfigDict(frozen=True)

    min_matched_share: float = Field(default=0.8, ge=0, le=1, description=(
        "Share of executed tool calls that must appear in a preceding completion for 'agentic'"))
    min_executed_calls: int = Field(default=1, ge=0, description=(
        "Fewer executed tool calls than this cannot be 'agentic' (nothing shows a tool loop)"))
    min_query_jaccard: float = Field(default=0.8, ge=0, le=1, description=(
        "Term-set similarity at which an executed find_product query matches an emitted one"))
    max_unverified_step_share: float = Field(default=0.25, ge=0, le=1, description=(
        "Share of the steps' search/view calls allowed without a matching proxy entry for 'agentic'"))
    short_completion_tokens: int = Field(default=30, ge=0, description=(
        "A completion without a tool call and at most this many tokens counts as a short pick"))
    short_completion_chars: int = Field(default=120, ge=0, description=(
        "The same, in characters, when the endpoint reported no token count"))
    proxied_tools: tuple[str, ...] = Field(default=("find_product", "view_product_information"), description=(
        "Step tool calls that must go through the proxy (recommend_product and terminate do not)"))


class FilterEvidence(BaseModel):
    """The counts a label was decided from."""

    model_config = ConfigDict(frozen=True)

    inference_calls: int
    answered_inference_calls: int
    completion_tokens: int
    emitted_tool_calls: int
    executed_tool_calls: int
    matched_tool_calls: int
    short_completions: int
    step_tool_calls: int
    unverified_step_calls: int
    unmatched_examples: list[str] = Field(default_factory=list, description="Up to 3 executed calls "
                                          "no completion emitted, as name(arguments)")
    echoed_completions: int = Field(default=0, description=(
        "Answered completions that only repeated their request: their tool calls count as nobody's"))
    steered_completions: int = Field(default=0, description=(
        "Answered completions whose request held the agent's code's own text (trajectories.filter.decided): "
        "their tool calls count as nobody's"))
    steered_requests: list[str] = Field(default_factory=list, description=(
        "The first steered requests, as 'seq N: why'"))
    recommendation_emitted: bool = Field(default=True, description=(
        "The final recommendation's ids appear in a recommend_product call of a completion (or there is "
        "no recommendation)"))

    @property
    def matched_share(self) -> float:
        return self.matched_tool_calls / self.executed_tool_calls if self.executed_tool_calls else 0.0

    @property
    def unverified_share(self) -> float:
        return self.unverified_step_calls / self.step_tool_calls if self.step_tool_calls else 0.0


class FilterVerdict(BaseModel):
    """A label, why, and the thresholds it was decided with."""

    model_config = ConfigDict(frozen=True)

    label: Label
    reasons: list[str]
    evidence: FilterEvidence
    filter: str = FILTER_NAME
    config: FilterConfig = Field(default_factory=FilterConfig)


def _describe(call: CallSignature) -> str:
    def show(value: Any) -> str:
        return ",".join(sorted(value)) if isinstance(value, frozenset) else str(value)

    text = f"{call.name}(" + ", ".join(f"{k}={show(v)}" for k, v in call.args) + ")"
    return text[:200]


def _is_short(call: LoggedCall, emitted: int, config: FilterConfig) -> bool:
    if emitted:
        return False
    if call.completion_tokens is not None:
        return call.completion_tokens <= config.short_completion_tokens
    return len((call.completion_text or "").strip()) <= config.short_completion_chars


def _evidence(proxy_log: Sequence[LoggedCall], steps: Any, config: FilterConfig, query: str,
              echoed_seqs: Iterable[int] | None, steered: Mapping[int, str]) -> FilterEvidence:
    echoed = frozenset(echoed_calls(proxy_log, query) if echoed_seqs is None else echoed_seqs)
    not_decided = echoed | steered.keys()
    emitted = CallIndex(config.min_query_jaccard)
    executed = CallIndex(1.0)
    matched = short = inference = answered = tokens = 0
    unmatched: list[str] = []
    for call in sorted(proxy_log, key=lambda c: c.seq):
        if call.kind == "inference":
            inference += 1
            if call.status >= 400 or not (call.completion_text or call.completion_tool_calls):
                continue
            answered += 1
            tokens += call.completion_tokens or 0
            if call.seq in not_decided:
                continue
            calls = emitted_calls(call)
            short += _is_short(call, len(calls), config)
            for emitted_call in calls:
                emitted.add(emitted_call)
        elif call.kind == "search" and call.status < 500:
            # A 5xx never reached the tools; it is a failed attempt to call, not a call that ran.
            if (sig := executed_call(call)) is None:
                continue
            executed.add(sig)
            if emitted.matches(sig):
                matched += 1
            elif len(unmatched) < 3:
                unmatched.append(_describe(sig))
    proxied = set(config.proxied_tools)
    claimed = [c for c in step_calls(steps) if c.name in proxied]
    # A step's ids must all have been fetched by one executed call; its query must be that call's query.
    unverified = sum(1 for c in claimed if not executed.matches(c))
    answer = [pid for pid in extract_answer(steps) if pid]
    final = signature(RECOMMEND, {"product_ids": ",".join(answer)})
    return FilterEvidence(
        inference_calls=inference, answered_inference_calls=answered, completion_tokens=tokens,
        emitted_tool_calls=emitted.size, executed_tool_calls=executed.size, matched_tool_calls=matched,
        short_completions=short, step_tool_calls=len(claimed), unverified_step_calls=unverified,
        unmatched_examples=unmatched, echoed_completions=len(echoed),
        steered_completions=len(steered), steered_requests=describe(steered),
        recommendation_emitted=not answer or (final is not None and emitted.matches(final)))


def decide(evidence: FilterEvidence, config: FilterConfig) -> tuple[Label, list[str]]:
    """The label and its reasons from the evidence: a pure rule over counts and thresholds."""
    e = evidence
    if e.answered_inference_calls == 0:
        failed = e.inference_calls
        return "no_llm", ["no inference call was answered" + (f" ({failed} failed)" if failed else "")]
    matched = (f"{e.matched_tool_calls} of {e.executed_tool_calls} executed tool calls appear in a preceding "
               f"completion ({e.matched_share:.0%}; 'agentic' needs {config.min_matched_share:.0%})")
    reasons: list[str] = []
    if e.executed_tool_calls < max(config.min_executed_calls, 1):
        reasons.append(f"{e.executed_tool_calls} tool call(s) ran through the proxy; 'agentic' needs "
                       f"{max(config.min_executed_calls, 1)}")
    elif e.matched_share < config.min_matched_share:
        reasons.append(matched)
    if not e.recommendation_emitted:
        reasons.append("the final recommendation names ids no completion recommended: code chose the answer")
    if e.unverified_share > config.max_unverified_step_share:
        reasons.append(f"{e.unverified_step_calls} of {e.step_tool_calls} search/view calls in the steps "
                       f"have no matching proxy entry (over {config.max_unverified_step_share:.0%})")
    if not reasons:
        return "agentic", [matched]
    if e.echoed_completions:
        reasons.append(f"{e.echoed_completions} of {e.answered_inference_calls} completions only repeated "
                       "text the agent sent: their tool calls are not the model's")
    if e.steered_completions:
        reasons.append(f"{e.steered_completions} of {e.answered_inference_calls} completions answered a "
                       "request holding the code's own text: their tool calls are the code's "
                       f"({'; '.join(e.steered_requests[:2])})")
    if e.short_completions:
        reasons.append(f"{e.short_completions} of {e.answered_inference_calls} completions are short picks "
                       f"without a tool call (<= {config.short_completion_tokens} tokens)")
    return "sub_task", reasons


def label_attempt(proxy_log: Sequence[LoggedCall], steps: Any, config: FilterConfig | None = None, *,
                  query: str = "", echoed_seqs: Iterable[int] | None = None,
                  steered: Mapping[int, str] | None = None) -> FilterVerdict:
    """Label one attempt from its verified proxy log (each inference entry with its full request
    messages), its (untrusted) steps and the shopper's ``query`` (text fair to repeat, see
    ``shoppingbench.echo``). ``echoed_seqs``: the echo measure already taken on this log and query (a
    record's :meth:`~shoppingbench.records.AttemptRecord.echoed_calls`), else it is measured here.
    ``steered``: the steered requests of the attempt (``trajectories.filter.decided.steered_calls`` with
    the run's static text), by ``seq`` with why; none when the run's requests were not measured."""
    config = config or FilterConfig()
    evidence = _evidence(proxy_log, steps, config, query, echoed_seqs, steered or {})
    label, reasons = decide(evidence, config)
    return FilterVerdict(label=label, reasons=reasons, evidence=evidence, config=config)
