"""The outage rule (``shoppingbench.grading.outages.rule_outage``): which attempts the inference provider
failed, on records built by hand (a pure function of the record)."""

from __future__ import annotations

from typing import Any

from shoppingbench.grading.outages import answered_beside, rule_outage
from shoppingbench.records import AttemptFailure, AttemptRecord, ProviderErrorKind, ProxyCall
from shoppingbench.scoring.attempt import AttemptScore
from tests.sandbox_support import problem

PROBLEM = problem("p-1", "red shoes under 30")


def step(name: str, **parameters: Any) -> dict[str, Any]:
    return {"completion": {"message": {"tool_call": [{"name": name, "parameters": parameters}]}}}


ANSWER_STEP = step("recommend_product", product_ids="sku-9")
SEARCH_STEP = step("find_product", q="red shoes")


def call(seq: int, at: float, seconds: float = 1.0, *, error: ProviderErrorKind | None = None,
         down: bool | None = None) -> ProxyCall:
    return ProxyCall(seq=seq, kind="inference", method="POST", path="/inference/chat/completions",
                     status=200 if error is None else 503, started_at=at, duration_ms=seconds * 1000,
                     provider_error=error, provider_down=down)


def outage(seq: int, at: float, seconds: float = 1.0) -> ProxyCall:
    return call(seq, at, seconds, error="http_5xx", down=True)


def record(proxy_log: list[ProxyCall], steps: list[Any] | None = None, *, success: bool = False,
           answer: list[str] | None = None) -> AttemptRecord:
    score = AttemptScore.failure(PROBLEM, "test").model_copy(
        update={"success": success, "answer": answer or [], "error": None})
    return AttemptRecord(run_id="run", problem_id=PROBLEM.id, category=PROBLEM.category, query=PROBLEM.query,
                         agent_hash="a" * 64, steps=steps or [], proxy_log=proxy_log, score=score,
                         failure=None if steps else AttemptFailure(kind="crash", reason="gave up"),
                         started_at=0.0, finished_at=100.0)


def test_a_confirmed_outage_of_an_attempt_that_never_answered_is_infra_failed() -> None:
    ruling = rule_outage(record([call(0, 1.0), outage(1, 3.0), outage(2, 5.0)], [SEARCH_STEP]))
    assert (ruling.infra_failed, ruling.reason) == (True, "outage")
    assert rule_outage(record([outage(0, 1.0)])).infra_failed  # a crash with no steps at all


def test_success_and_errors_the_probe_did_not_confirm_are_never_outages() -> None:
    assert rule_outage(record([outage(0, 1.0)], [ANSWER_STEP], success=True)).reason == "succeeded"
    assert rule_outage(record([call(0, 1.0)])).reason == "no_outage"
    unprobed = call(0, 1.0, error="timeout", down=None)  # a record from before the probe
    assert rule_outage(record([unprobed])).reason == "no_outage"
    assert rule_outage(record([call(0, 1.0, error="http_5xx", down=False)])).reason == "no_outage"


def test_an_attempt_that_answered_is_scored_on_its_answer() -> None:
    """Slow calls kept in flight after the answer and one more call the provider fails: the answer stands."""
    after = record([call(0, 1.0), call(1, 4.0, 60.0), outage(2, 5.0)], [SEARCH_STEP, ANSWER_STEP])
    assert (rule_outage(after).infra_failed, rule_outage(after).reason) == (False, "answered")
    junk_ids = step("recommend_product", product_ids=7)
    assert rule_outage(record([outage(0, 1.0)], [junk_ids])).reason == "answered"
    # an unverified answer keeps its ids in the score, its steps in the record
    assert rule_outage(record([outage(0, 1.0)], answer=["sku-9"])).reason == "answered"


def test_an_agent_that_broke_the_provider_once_owns_the_attempt() -> None:
    broke = call(1, 2.0, error="http_5xx", down=False)  # the probe was answered: the request broke it
    ruling = rule_outage(record([call(0, 1.0), broke, outage(2, 4.0), outage(3, 6.0)], [SEARCH_STEP]))
    assert (ruling.infra_failed, ruling.reason) == (False, "broke_the_provider")


def test_a_provider_answering_the_agents_other_calls_was_not_down() -> None:
    slow = call(0, 1.0, 10.0)  # in flight from 1 s to 11 s, answered
    failed = outage(1, 4.0)  # failed at 5 s, while the slow call was in flight
    assert answered_beside(failed, [slow, failed])
    assert rule_outage(record([slow, failed], [SEARCH_STEP])).reason == "answered_beside"
    before = call(0, 1.0, 2.0)  # answered at 3 s, before the failure: a provider that went down later
    assert not answered_beside(failed, [before, failed])
    assert rule_outage(record([before, failed], [SEARCH_STEP])).infra_failed
    cut = call(0, 1.0, 10.0, error="connection", down=True)  # in flight beside it, failed too: down
    assert rule_outage(record([cut, failed], [SEARCH_STEP])).infra_failed
