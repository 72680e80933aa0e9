"""The capacity benchmark's stand-ins for what cannot run here: a hosted LLM with realistic latency, and an
agent that calls it a realistic number of times. TEST DOUBLES, documented in docs/benchmarks.md.

- :class:`LatencyPolicy`: a policy for the OpenAI-compatible double (``shoppingbench.doubles.llm_server``)
  that waits a lognormal time per call, fitted to a p50 and a p95 (sigma = ln(p95 / p50) / 1.645) and
  drawn from a seeded generator, then answers: the judge model a verdict the judge parses, any other
  model a short ReAct-style thought of about 80 tokens.
- :func:`served_double`: the double in a process of its own (the validator's CPU and RSS figures must not
  include it), for as long as the block runs.
- :func:`agent_source`: the scripted baseline agent file with a preamble run per problem: ``N`` model
  calls through the proxy, each followed by a catalog search whose result goes into the next message, ``N``
  drawn in ``[low, high]`` from a hash of the seed and the problem's query (so the same problem makes as
  many calls on every run); then the baseline's own tool calls and answer, which the grader scores.
"""

from __future__ import annotations

import math
import multiprocessing
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shoppingbench.agents import scripted_baseline
from shoppingbench.doubles.llm_server import StubReply, create_app
from shoppingbench.tools.serving import running_server

AGENT_MODEL = "capacity-agent-model"
JUDGE_MODEL = "capacity-judge-model"
Z95 = 1.6448536269514722
"""The standard normal's 95th percentile: a lognormal's p95 is exp(mu + Z95 * sigma)."""

THOUGHT = ("<think>The shopper wants the items listed in the request. I compared the candidates the last "
           "search returned by price, shop, rating and the attributes asked for; two of them fit the budget "
           "and one ships free from an official store, so I will look at the next item before I decide."
           "</think>")
VERDICT = ('<think>The agent searched each item, compared candidates by price and attributes and cited the '
           'ids it recommends.</think>{"reasoning_quality": 0.9, "explanation": "compares cited candidates"}')


@dataclass(frozen=True)
class Latency:
    """Per-call latency: lognormal with this median and 95th percentile, seeded."""

    p50_s: float
    p95_s: float
    seed: int = 0

    @property
    def sigma(self) -> float:
        return math.log(self.p95_s / self.p50_s) / Z95 if self.p95_s > self.p50_s > 0 else 0.0

    @property
    def mean_s(self) -> float:
        """The distribution's mean (a lognormal's is above its median: exp(mu + sigma^2 / 2))."""
        return self.p50_s * math.exp(self.sigma ** 2 / 2)


@dataclass
class LatencyPolicy:
    """Answers every call after a lognormal wait (the agent's and the judge's models may differ)."""

    agent: Latency
    judge: Latency
    _rng: random.Random | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:  # sent to the double's process: the lock stays here
        return {"agent": self.agent, "judge": self.judge}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["agent"], state["judge"])  # type: ignore[misc]

    def delay(self, latency: Latency) -> float:
        with self._lock:
            if self._rng is None:
                self._rng = random.Random(self.agent.seed)
            if latency.p50_s <= 0:
                return 0.0
            return self._rng.lognormvariate(math.log(latency.p50_s), latency.sigma)

    def __call__(self, body: dict[str, Any]) -> StubReply:
        if body.get("model") == JUDGE_MODEL:
            return StubReply(content=VERDICT, delay_s=self.delay(self.judge))
        return StubReply(content=THOUGHT, delay_s=self.delay(self.agent))


def _serve(policy: LatencyPolicy, urls: Any, stop: Any) -> None:
    with running_server(create_app(policy), log_level="error") as url:
        urls.put(url)
        stop.wait()


@contextmanager
def served_double(policy: LatencyPolicy) -> Iterator[tuple[str, int]]:
    """The latency double on loopback in a child process: its base URL (no ``/v1``) and pid."""
    context = multiprocessing.get_context("spawn")
    urls, stop = context.Queue(), context.Event()
    process = context.Process(target=_serve, args=(policy, urls, stop), name="capacity-llm-double",
                              daemon=True)
    process.start()
    try:
        url = urls.get(timeout=60)
        assert process.pid is not None
        yield str(url), process.pid
    finally:
        stop.set()
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
            process.join()


_PREAMBLE = '''

# --- The capacity benchmark's preamble (benchmarks/capacity/llm.py): model calls before the answer. ---
import hashlib as _hashlib
import json as _json

_scripted_agent_main = agent_main


def agent_main(problem, client=None):
    """{calls_low} to {calls_high} model calls, each followed by a search, then the scripted answer."""
    proxy = client or ProxyClient()
    query = str(problem.get("query", ""))
    digest = int(_hashlib.sha256(("{seed}:" + query).encode()).hexdigest()[:8], 16)
    calls = {calls_low} + digest % ({calls_high} - {calls_low} + 1)
    keywords = [request.keywords for request in parse_requests(query)] or [query]
    messages = [{{"role": "system", "content": "You are a shopping assistant. Think, then search."}},
                {{"role": "user", "content": query}}]
    for turn in range(calls):
        reply = proxy.chat(messages, max_tokens=512)
        messages.append({{"role": "assistant", "content": reply.content}})
        hits = proxy.find_product(keywords[turn % len(keywords)], page=1 + turn // len(keywords))
        messages.append({{"role": "user", "content": "<obs>" + _json.dumps(hits)[:1500] + "</obs>"}})
    return _scripted_agent_main(problem, proxy)
'''


def agent_source(*, seed: int, calls_low: int, calls_high: int) -> bytes:
    """The benchmark's agent file: the scripted baseline with the model-calling preamble."""
    if not 1 <= calls_low <= calls_high:
        raise ValueError(f"calls per problem: need 1 <= low <= high, got [{calls_low}, {calls_high}]")
    baseline = Path(scripted_baseline.__file__).read_text(encoding="utf-8")
    preamble = _PREAMBLE.format(seed=int(seed), calls_low=int(calls_low), calls_high=int(calls_high))
    return (baseline + preamble).encode()
