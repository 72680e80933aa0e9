"""Hand-built attempt records for the store, filter and dump tests.

They follow what the proxy logs (``shoppingbench/proxy``: search entries with the query parameters and
returned ids, inference entries with the request messages, completion text, native tool calls and
token counts) and the steps shape of ``shoppingbench.agent_sdk.create_dialogue_step``.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from shoppingbench.agent_sdk import create_dialogue_step
from shoppingbench.proxy.results import returned_product
from shoppingbench.records import AttemptFailure, AttemptRecord, ProxyCall, ReturnedProduct
from shoppingbench.scoring.attempt import AttemptScore
from shoppingbench.scoring.rules import FieldTally, TargetScore
from trajectories.store.entries import AttemptWrite
from trajectories.store.rows import attempt_parts, attempt_row

T0 = 1_790_000_000.0


class Log:
    """Builds a proxy log call by call, numbering ``seq`` as the proxy does."""

    def __init__(self, start: float = T0) -> None:
        self.calls: list[ProxyCall] = []
        self.clock = start

    def _next(self) -> dict[str, Any]:
        self.clock += 0.25
        return {"seq": len(self.calls), "started_at": self.clock, "duration_ms": 12.5}

    def infer(self, completion: str | None, *, messages: list[dict[str, Any]] | None = None,
              tool_calls: list[dict[str, Any]] | None = None, tokens: int | None = None, status: int = 200,
              reasoning: str | None = None) -> None:
        text = completion or ""
        self.calls.append(ProxyCall(
            **self._next(), kind="inference", method="POST", path="/inference/chat/completions",
            params={"model": "qwen3-4b", "temperature": 0.6}, status=status, model="qwen3-4b",
            request_messages=messages if messages is not None else [{"role": "user", "content": "hi"}],
            completion_text=completion, completion_tool_calls=tool_calls or [], reasoning_text=reasoning,
            prompt_tokens=120, completion_tokens=tokens if tokens is not None else max(1, len(text) // 4),
            error=None if status < 400 else f"upstream answered {status}"))

    def search(self, name: str, params: dict[str, Any], ids: list[str] | None = None, *,
               status: int = 200, results: list[ReturnedProduct] | None = None) -> None:
        answer = orjson.dumps([r.model_dump() for r in results or []])
        self.calls.append(ProxyCall(
            **self._next(), kind="search", method="GET", path=f"/search/{name}",
            params={k: str(v) for k, v in params.items()}, status=status, product_ids=ids or [],
            results=results or [], response_sha256=hashlib.sha256(answer).hexdigest(),
            error=None if status < 400 else "refused"))


def tool_call_text(name: str, parameters: dict[str, Any], think: str = "Let me look.") -> str:
    return (f"<think>{think}</think>\n"
            f"<tool_call>{orjson.dumps([{'name': name, 'parameters': parameters}]).decode()}</tool_call>")


def step(n: int, name: str, parameters: dict[str, Any], result: Any = None, think: str = "thinking",
         query: str = "q") -> dict[str, Any]:
    return create_dialogue_step(think, [{"name": name, "parameters": parameters, "tool_call_id": f"c{n}",
                                         "result": result}], None, query=query, step=n, timestamp=T0 + n)


def score(problem_id: str = "p1", *, success: bool = True, category: str = "voucher") -> AttemptScore:
    tally = FieldTally(hits=1, checks=1)
    target = TargetScore(index=0, target_product_id="1001", product_id="1001", found=True, shop_id="77",
                         product_price=459.5, gt=True, title=tally, price=tally,
                         service=FieldTally(hits=0, checks=0), sku_attr=FieldTally(hits=2, checks=3),
                         title_similarities=[0.8312345678901234])
    return AttemptScore(problem_id=problem_id, category=category,
                        success=success, gt=1.0, rule=1.0, found=1.0, title_rate=1.0, price_rate=1.0,
                        sku_attr_rate=2 / 3, shop=None, budget=True, format=0.875, length=0.2,
                        answer=["1001"], targets=[target])


def react_record(*, run_id: str = "run-1", agent_hash: str = "a" * 64, problem_id: str = "p1",
                 started_at: float = T0) -> AttemptRecord:
    """A small but complete ReAct attempt: every field of the record and the proxy log is set."""
    query = "Tìm bình nước “inox” dưới ₱500 — free shipping\u0000, budget 900"
    log = Log(started_at)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a shopper."},
                                      {"role": "user", "content": query}]
    steps = []
    ids = ["1001", "1002"]
    plan = [("find_product", {"q": "bình nước inox", "price": "-500", "service": "freeShipping"}),
            ("view_product_information", {"product_ids": "1001,1002"})]
    for n, (name, params) in enumerate(plan):
        completion = tool_call_text(name, params, think=f"step {n}: compare 1001 (₱459.5) with 1002")
        hits = [{"product_id": i, "title": f"Bình nước {i}", "price": 459.5, "service": ["freeShipping"],
                 "sold_count": 12} for i in ids]
        details = [{"product_id": i, "attributes": {"material": ["inox"]},
                    "sku_options": {"1": {"size": "m"}}, "description": None} for i in ids]
        result: Any = hits if name == "find_product" else details
        log.infer(completion, messages=list(messages), reasoning="hidden reasoning")
        log.search(name, params, ids, results=[returned_product(item) for item in result])
        steps.append(step(n, name, params, result, think=completion, query=query))
        messages += [{"role": "assistant", "content": completion},
                     {"role": "tool", "content": orjson.dumps(result).decode(), "tool_call_id": f"c{n}"}]
    final = {"product_ids": "1001"}
    log.infer(tool_call_text("recommend_product", final), messages=list(messages))
    log.calls.append(ProxyCall(seq=len(log.calls), kind="other", method="GET", path="/etc/passwd",
                               status=404, started_at=log.clock + 1, duration_ms=0.3,
                               error="GET /etc/passwd is not served"))
    steps.append(step(2, "recommend_product", final, None, query=query))
    steps.append(create_dialogue_step(None, [{"name": "terminate", "parameters": {"status": "success"},
                                              "tool_call_id": "c3", "result": None}], "Done 🎉", query=query,
                                      step=3, timestamp=None))
    steps[-1]["extra_info"]["timestamp"] = "not a number"  # agents return junk; it must survive as is
    return AttemptRecord(run_id=run_id, problem_id=problem_id, category="voucher", query=query,
                         agent_hash=agent_hash, steps=steps, proxy_log=log.calls, score=score(problem_id),
                         answer_verified=True, started_at=started_at, finished_at=started_at + 42.125,
                         stderr_tail="warning: ünïcode stderr\n")


def failed_record(*, run_id: str = "run-1", agent_hash: str = "b" * 64, problem_id: str = "p2",
                  started_at: float = T0 + 5) -> AttemptRecord:
    """A timed-out attempt: no steps, a partial proxy log, every grade 0."""
    log = Log(started_at)
    log.search("find_product", {"q": "kettle"}, ["9"])
    failure = AttemptFailure(kind="timeout", reason="wall-clock limit of 300 s reached")
    zero = AttemptScore(problem_id=problem_id, category="product", success=False, gt=0, rule=0, found=0,
                        format=0, length=0, error=failure.reason)
    return AttemptRecord(run_id=run_id, problem_id=problem_id, category="product", query="a kettle",
                         agent_hash=agent_hash, steps=[], proxy_log=log.calls, score=zero, failure=failure,
                         started_at=started_at, finished_at=started_at + 300)


def encode_attempt(write: AttemptWrite) -> dict[str, Any]:
    """The store's row of one attempt, as the store builds it (for tests writing rows by hand)."""
    return attempt_row(write, attempt_parts(write.record), len(write.record.echoed_calls()))
