"""Which attempts the inference provider failed: the rule that makes an attempt ``infra_failed``.

An infra-failed attempt is re-run instead of scored (a bounded number of times; then it counts as the
agent's failure: ``arena.validator.runs``), so the rule must not let an agent turn a problem it is failing
into one: an outage counts only when nothing the agent did can explain it. An attempt that did not succeed
is infra-failed when all of these hold (:func:`rule_outage`, a pure function of the record):

1. one of its calls has a provider error the proxy's probe confirmed (``ProxyCall.provider_down``: the
   provider failed the proxy's own one-token request right after, so it was down);
2. it gave no answer (no ``recommend_product`` call in its steps): an attempt that answered is scored on
   that answer, whatever failed before or after it (an agent that keeps calls going after answering
   cannot turn its answer into an outage);
3. no provider error of the attempt was answered by the probe (``provider_down`` false): once an agent's
   own request has broken the provider, the attempt is its own failure, whatever else failed;
4. the provider answered no other call of the attempt that was in flight when it failed one: a provider
   that answers the agent's calls beside the failing one was not down (the agent's own load broke it).
   A call the proxy *crowded out* is exempt (:func:`crowded_out`: other runs' load kept it from the
   provider past the bound, ``shoppingbench.proxy.shares``): the provider had no room for the run, whatever
   it answered the attempt's calls that had their place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from shoppingbench.records import AttemptRecord, ProxyCall
from shoppingbench.scoring.answer import as_steps, tool_calls

OutageReason = Literal[
    "succeeded",          # the attempt succeeded: nothing to re-run
    "no_outage",          # no provider error the probe confirmed
    "answered",           # the attempt gave an answer: it is scored on it
    "broke_the_provider", # a provider error the probe answered: the agent's request broke the provider
    "answered_beside",    # the provider answered a call of the attempt in flight beside a failed one
    "outage",             # infra-failed: the provider was down
]

ANSWER_TOOL: Final = "recommend_product"


@dataclass(frozen=True)
class OutageRuling:
    """Whether an attempt is an infrastructure failure, and which clause of the rule decided it."""

    infra_failed: bool
    reason: OutageReason


def _end(call: ProxyCall) -> float:
    return call.started_at + call.duration_ms / 1000.0


def answered(steps: object) -> bool:
    """The steps hold a ``recommend_product`` call (whatever ids it names)."""
    return any(call.get("name") == ANSWER_TOOL for step in as_steps(steps) for call in tool_calls(step))


def answered_beside(failed: ProxyCall, proxy_log: list[ProxyCall]) -> bool:
    """Another inference call of the attempt was in flight when ``failed`` ended and the provider answered
    it (a 2xx, no provider error)."""
    moment = _end(failed)
    return any(call is not failed and call.kind == "inference" and call.provider_error is None
               and 200 <= call.status < 300 and call.started_at <= moment <= _end(call)
               for call in proxy_log)


def crowded_out(call: ProxyCall) -> bool:
    """The proxy kept ``call`` from the provider because other runs held its capacity (the proxy's own
    confirmed timeout: it never reached the provider)."""
    return call.crowded_out


def rule_outage(record: AttemptRecord) -> OutageRuling:
    """The outage rule of the module doc applied to one graded attempt."""
    if record.score.success:
        return OutageRuling(False, "succeeded")
    errors = record.provider_errors()
    confirmed = [call for call in errors if call.provider_down]
    if not confirmed:
        return OutageRuling(False, "no_outage")
    if answered(record.steps) or record.score.answer:
        return OutageRuling(False, "answered")
    if any(call.provider_down is False for call in errors):
        return OutageRuling(False, "broke_the_provider")
    if any(answered_beside(call, record.proxy_log) for call in errors if not crowded_out(call)):
        return OutageRuling(False, "answered_beside")
    return OutageRuling(True, "outage")
