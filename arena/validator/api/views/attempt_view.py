"""One public attempt as the attempt viewer shows it, built from the stored record (pure: no I/O).

The agent's steps are its own, untrusted words: each reasoning block is shown as text, and each tool
call it claims is paired with the verified proxy log's entry of that call (same tool, same normalised
arguments: the structural filter's rule), whose results are the ones shown; a claimed call the proxy
never saw is marked so, and its claimed result is not shown. Long texts are cut (the page must stay
small whatever an agent returned).
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel, Field

from arena.judge.verdict import GATES
from shoppingbench.records import ProxyCall, ReturnedProduct
from shoppingbench.scoring.rules import TargetScore
from trajectories.filter.calls import executed_call, matches, signature
from trajectories.filter.label import FilterConfig
from trajectories.store.site_reads import AttemptInContext

MAX_TEXT = 20_000
"""Characters of one text shown before it is cut."""
MAX_STEPS = 200
MAX_CALLS = 400
_CUT = " … [cut]"


def cut(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + _CUT


def _json(value: Any) -> str:
    try:
        return cut(orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode(), 4000)
    except TypeError:
        return cut(repr(value), 4000)


class StepToolCall(BaseModel):
    name: str
    arguments: str = Field(description="The arguments the agent's step gives, as JSON")
    proxy_seq: int | None = Field(
        description="The verified proxy-log call it matches (None: the proxy never "
        "saw this call; the agent's claimed result is not shown)"
    )


class StepView(BaseModel):
    index: int
    reasoning: str = Field(description="The step's reasoning content and <think> text, untrusted")
    content: str
    response: str
    tool_calls: list[StepToolCall]


class ProxyCallView(BaseModel):
    seq: int
    kind: str
    path: str
    status: int
    error: str | None
    duration_ms: float
    arguments: str
    results: list[ReturnedProduct] = Field(description="What the tool answered, as the proxy read it")
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    completion: str = ""
    reasoning: str = ""
    completion_tool_calls: str = ""


class TargetView(BaseModel):
    index: int
    target_product_id: str
    product_id: str | None
    found: bool
    gt: bool
    hit: bool = Field(description="rule > 0: the recommended product meets this target at least in part")
    rule: float
    checks: dict[str, str] = Field(
        description="Per kind of constraint: hits/checks (title, price, service, "
        "sku_attr), the kinds the target states"
    )


class Recommendation(BaseModel):
    answer: list[str]
    success: bool
    gt: float
    rule: float
    shop: bool | None
    budget: bool | None
    answer_verified: bool | None
    reference_success: bool | None = Field(
        description="The reference scorer's verdict when an arena rule overrode it (None: not overridden)"
    )
    failure: str | None
    targets: list[TargetView]


class JudgeView(BaseModel):
    model: str
    offline: bool
    quality: float
    stopped_at_gate: int | None = Field(description="The first gate failed (1..4); None: passed them all")
    gate: str = Field(description="What that gate asks, or that all passed")
    explanation: str


class FilterView(BaseModel):
    label: str
    filter: str
    reasons: list[str]
    evidence: dict[str, Any]


class AttemptDetail(BaseModel):
    id: int
    run_id: str
    run_kind: str | None
    problem_id: str
    category: str
    query: str
    agent_hash: str
    hotkey: str | None
    submission_id: str | None
    started_at: float
    finished_at: float
    steps: list[StepView]
    steps_total: int
    proxy_calls: list[ProxyCallView]
    proxy_calls_total: int
    model_calls: int
    prompt_tokens: int
    completion_tokens: int
    recommendation: Recommendation
    judge: JudgeView | None
    filter: FilterView | None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return cut(value) if isinstance(value, str) else ""


def _step(index: int, step: Any, searches: list[ProxyCall], used: set[int]) -> StepView:
    completion = _dict(_dict(step).get("completion"))
    message = _dict(completion.get("message"))
    reasoning = "\n\n".join(
        t for t in (_text(completion.get("reasoning_content")), _text(message.get("think"))) if t
    )
    calls = []
    raw = message.get("tool_call")
    for item in (raw if isinstance(raw, list) else [])[:50]:
        call = _dict(item)
        name, arguments = call.get("name"), call.get("parameters", call.get("arguments", {}))
        claimed = signature(name, arguments)
        seq = None
        if claimed is not None:
            for proxied in searches:
                if proxied.seq in used:
                    continue
                executed = executed_call(proxied)
                if executed is not None and matches(
                    executed, claimed, min_query_jaccard=FilterConfig().min_query_jaccard
                ):
                    used.add(proxied.seq)
                    seq = proxied.seq
                    break
        calls.append(StepToolCall(name=cut(str(name), 200), arguments=_json(arguments), proxy_seq=seq))
    return StepView(
        index=index,
        reasoning=reasoning,
        content=_text(completion.get("content")),
        response=_text(message.get("response")),
        tool_calls=calls,
    )


def _proxy_call(call: ProxyCall) -> ProxyCallView:
    return ProxyCallView(
        seq=call.seq,
        kind=call.kind,
        path=cut(call.path, 200),
        status=call.status,
        error=call.error,
        duration_ms=call.duration_ms,
        arguments=_json(call.params),
        results=call.results[:50],
        model=call.model,
        prompt_tokens=call.prompt_tokens,
        completion_tokens=call.completion_tokens,
        completion=_text(call.completion_text),
        reasoning=_text(call.reasoning_text),
        completion_tool_calls=_json(call.completion_tool_calls) if call.completion_tool_calls else "",
    )


def _target(target: TargetScore) -> TargetView:
    tallies = {
        "title": target.title,
        "price": target.price,
        "service": target.service,
        "sku_attr": target.sku_attr,
    }
    return TargetView(
        index=target.index,
        target_product_id=target.target_product_id,
        product_id=target.product_id,
        found=target.found,
        gt=target.gt,
        hit=target.rule > 0,
        rule=target.rule,
        checks={k: f"{t.hits}/{t.checks}" for k, t in tallies.items() if t.checks},
    )


def _judge(found: AttemptInContext) -> JudgeView | None:
    verdict = found.attempt.judge
    if verdict is None:
        return None
    passed = verdict.gates_passed
    gate = passed + 1 if passed is not None and passed < len(GATES) else None
    asked = GATES[gate - 1] if gate else "passed all four gates" if passed is not None else "not recorded"
    return JudgeView(
        model=verdict.model,
        offline=verdict.offline,
        quality=verdict.quality,
        stopped_at_gate=gate,
        gate=asked,
        explanation=cut(verdict.explanation),
    )


def attempt_detail(found: AttemptInContext, submission_id: str | None) -> AttemptDetail:
    """The viewer's model of ``found`` (``submission_id``: the submission whose agent made it, if known)."""
    record = found.attempt.record
    searches = [c for c in record.proxy_log if c.kind == "search"]
    used: set[int] = set()
    steps = [_step(i, s, searches, used) for i, s in enumerate(record.steps[:MAX_STEPS])]
    inference = [c for c in record.proxy_log if c.kind == "inference"]
    score = record.score
    overridden = record.reference_score is not None
    label = found.attempt.label
    return AttemptDetail(
        id=found.attempt.id,
        run_id=record.run_id,
        run_kind=found.run_kind,
        problem_id=record.problem_id,
        category=record.category,
        query=cut(record.query),
        agent_hash=record.agent_hash,
        hotkey=found.hotkey,
        submission_id=submission_id,
        started_at=record.started_at,
        finished_at=record.finished_at,
        steps=steps,
        steps_total=len(record.steps),
        proxy_calls=[_proxy_call(c) for c in record.proxy_log[:MAX_CALLS]],
        proxy_calls_total=len(record.proxy_log),
        model_calls=len(inference),
        prompt_tokens=sum(c.prompt_tokens or 0 for c in inference),
        completion_tokens=sum(c.completion_tokens or 0 for c in inference),
        recommendation=Recommendation(
            answer=score.answer[:50],
            success=score.success,
            gt=score.gt,
            rule=score.rule,
            shop=score.shop,
            budget=score.budget,
            answer_verified=record.answer_verified,
            reference_success=record.reference_score.success
            if overridden and record.reference_score
            else None,
            failure=f"{record.failure.kind}: {cut(record.failure.reason, 2000)}" if record.failure else None,
            targets=[_target(t) for t in score.targets],
        ),
        judge=_judge(found),
        filter=None
        if label is None
        else FilterView(
            label=label.label,
            filter=label.filter,
            reasons=label.reasons,
            evidence=label.evidence.model_dump(mode="json"),
        ),
    )
