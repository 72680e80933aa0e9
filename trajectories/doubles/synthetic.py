"""Synthetic attempt records shaped like what the three kinds of agent produce through the proxy.

For the store benchmark and for tests that need many realistic attempts without running agents:

- ``react``: an LLM ReAct loop. Each turn the model's completion holds ``<think>`` and a
  ``<tool_call>``, the agent executes exactly that call, and feeds the result back as a message. The
  proxy log therefore repeats the growing conversation in every inference request.
- ``sub_task``: Python parses the request, searches and views candidates itself, and asks the LLM
  only to pick an id among candidates (short completions).
- ``scripted``: no LLM at all (the scripted baseline).

Search calls are logged as the proxy logs them: the returned products' fields (``results``) and the
answer's digest, read from the answer body.

Everything derives from a seed: the same arguments give the same records.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from shoppingbench.agent_sdk import create_dialogue_step
from shoppingbench.problems.models import CATEGORIES
from shoppingbench.proxy.results import digest, tool_results
from shoppingbench.records import AttemptFailure, AttemptRecord, ProxyCall
from shoppingbench.scoring.attempt import AttemptScore
from trajectories.store.entries import AgentEntry, ProblemEntry, RunEntry

Style = Literal["react", "sub_task", "scripted"]
STYLES: tuple[Style, ...] = ("react", "sub_task", "scripted")
MODEL = "Qwen/Qwen3-4B"
SYSTEM_PROMPT = (
    "You are a shopping assistant. Use the tools to find products that satisfy every constraint of the "
    "user's request. Tools: find_product(q, page, shop_id, price, sort, service) searches the catalog; "
    "view_product_information(product_ids) shows details, sku options and attributes; "
    "recommend_product(product_ids) gives your answer; terminate(status) ends the dialogue. Answer with "
    "<think>...</think> then <tool_call>[{\"name\": ..., \"parameters\": {...}}]</tool_call>. ") * 3

_ADJECTIVES = ["stainless", "waterproof", "leather", "kids", "heavy duty", "portable", "wireless", "cotton",
               "vintage", "ergonomic", "foldable", "organic", "insulated", "compact", "premium", "slim"]
_NOUNS = ["water bottle", "belt", "rubber wheel", "toner", "nail remover", "sneakers", "notebook", "kettle",
          "air freshener", "backpack", "desk lamp", "phone case", "yoga mat", "rice cooker", "umbrella"]
_COLOURS = ["black", "silver", "blue", "red", "brown", "white", "green", "pink"]
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "pe", "da", "gu", "ba", "shi", "an", "or", "el")
_VOCABULARY = sorted({"".join(random.Random(i).choices(_SYLLABLES, k=1 + i % 4)) for i in range(6000)})
_ZIPF = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(_VOCABULARY))))
"""Descriptions draw words Zipf-distributed from a few thousand, so they compress like real text."""
_SERVICES = ["official", "freeShipping", "COD", "flashsale"]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(_VOCABULARY, cum_weights=_ZIPF, k=n))


def _product(rng: random.Random) -> dict[str, Any]:
    adjective, noun = rng.choice(_ADJECTIVES), rng.choice(_NOUNS)
    return {
        "product_id": str(rng.randrange(10**8, 10**10)), "shop_id": str(rng.randrange(10**4, 10**6)),
        "title": f"{adjective.title()} {noun.title()} {rng.choice(_COLOURS)} "
                 f"{_words(rng, rng.randint(4, 9))}",
        "price": round(rng.uniform(50, 5000), 2), "service": sorted(rng.sample(_SERVICES, rng.randint(0, 3))),
        "sold_count": rng.randrange(0, 20_000),
    }


def _details(rng: random.Random, product_id: str) -> dict[str, Any]:
    return {
        "product_id": product_id, "short_description": _words(rng, rng.randint(8, 20)),
        "description": _words(rng, rng.randint(60, 220)),
        "sku_options": {str(k + 1): {"color_family": rng.choice(_COLOURS), "size": rng.choice("sml")}
                        for k in range(rng.randint(0, 4))},
        "attributes": {"material": [rng.choice(["steel", "plastic", "cotton", "leather"])],
                       "brand": [rng.choice(["acme", "zenit", "nova", "no brand"])]},
    }


def _query(rng: random.Random, category: str) -> str:
    items = [f"a {rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)} in {rng.choice(_COLOURS)}"
             for _ in range(1 if category == "product" else rng.randint(2, 3))]
    text = "I'm looking for " + ", and ".join(items) + f" under {rng.randrange(300, 3000)} pesos"
    if category == "shop":
        text += ", all from the same shop"
    if category == "voucher":
        text += f". My budget is {rng.randrange(2000, 9000)} and I have a 10% platform voucher"
    return text + "."


@dataclass
class _Attempt:
    """Builds one attempt: the steps the agent returns and the proxy log the proxy writes."""

    rng: random.Random
    query: str
    clock: float
    steps: list[dict[str, Any]] = field(default_factory=list)
    calls: list[ProxyCall] = field(default_factory=list)

    def _tick(self, seconds: float) -> float:
        self.clock += seconds
        return self.clock

    def search(self, name: str, parameters: dict[str, Any]) -> Any:
        """Run a tool through the "proxy": log it and return a plausible result."""
        if name == "find_product":
            result: Any = [_product(self.rng) for _ in range(10)]
            ids = [hit["product_id"] for hit in result]
        else:
            ids = [i for i in str(parameters["product_ids"]).split(",") if i]
            result = [_details(self.rng, i) for i in ids]
        # What the proxy records of the answer body: the returned products' fields and its digest.
        body = orjson.dumps(result)
        self.calls.append(ProxyCall(
            seq=len(self.calls), kind="search", method="GET", path=f"/search/{name}",
            params={k: str(v) for k, v in parameters.items()}, status=200, started_at=self._tick(0.05),
            duration_ms=self.rng.uniform(2, 40), product_ids=ids, results=tool_results(body),
            response_sha256=digest(body)))
        return result

    def infer(self, messages: list[dict[str, Any]], completion: str) -> None:
        """Log an inference call. Its messages are parsed from the request's JSON, as the proxy reads them
        (``shoppingbench.proxy.inference``): each call's conversation is a new copy, none shared with the
        call before, as in a real proxy log."""
        self.calls.append(ProxyCall(
            seq=len(self.calls), kind="inference", method="POST", path="/inference/chat/completions",
            params={"model": MODEL, "temperature": 0.6}, status=200, started_at=self._tick(0.5),
            duration_ms=self.rng.uniform(300, 4000), model=MODEL,
            request_messages=orjson.loads(orjson.dumps(messages)),
            completion_text=completion,
            prompt_tokens=sum(len(str(m.get("content", ""))) for m in messages) // 4,
            completion_tokens=max(1, len(completion) // 4)))

    def step(self, think: str | None, calls: list[dict[str, Any]], response: str | None = None) -> None:
        self.steps.append(create_dialogue_step(think, calls, response, query=self.query, step=len(self.steps),
                                               timestamp=self._tick(0.1)))


def _react(a: _Attempt, problem: ProblemEntry) -> list[str]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                      {"role": "user", "content": problem.query}]
    seen: list[str] = []
    for turn in range(a.rng.randint(14, 20)):
        if turn % 2 == 0 or not seen:
            name, parameters = "find_product", {"q": f"{a.rng.choice(_ADJECTIVES)} {a.rng.choice(_NOUNS)}"}
            if a.rng.random() < 0.3:
                parameters["price"] = f"-{a.rng.randrange(300, 3000)}"
        else:
            ids = ",".join(seen[-a.rng.randint(1, 3):])
            name, parameters = "view_product_information", {"product_ids": ids}
        think = (f"Turn {turn}: comparing candidates {', '.join(seen[-2:]) or 'none yet'}; "
                 + _words(a.rng, a.rng.randint(25, 60)))
        completion = (f"<think>{think}</think>\n<tool_call>"
                      f"{orjson.dumps([{'name': name, 'parameters': parameters}]).decode()}</tool_call>")
        a.infer(messages, completion)
        result = a.search(name, parameters)
        if name == "find_product":
            seen.extend(hit["product_id"] for hit in result[:3])
        a.step(think, [{"name": name, "parameters": parameters, "tool_call_id": f"call_{turn}",
                        "result": result}])
        feedback = f"<tool_response>{orjson.dumps(result).decode()}</tool_response>"
        messages += [{"role": "assistant", "content": completion}, {"role": "user", "content": feedback}]
    answer = seen[:1] if problem.category == "product" else seen[:3]
    final = [{"name": "recommend_product", "parameters": {"product_ids": ",".join(answer)}},
             {"name": "terminate", "parameters": {"status": "success"}}]
    think = f"{answer[0]} fits the price and the attributes better than {seen[-1]}; " + _words(a.rng, 20)
    a.infer(messages, f"<think>{think}</think>\n<tool_call>{orjson.dumps(final).decode()}</tool_call>")
    a.step(think, [{**final[0], "tool_call_id": "call_final", "result": None}])
    a.step(None, [{**final[1], "tool_call_id": "call_end", "result": None}], response="Done.")
    return answer


def _code_driven(a: _Attempt, problem: ProblemEntry, use_llm: bool) -> list[str]:
    answer: list[str] = []
    for item in range(1 if problem.category == "product" else a.rng.randint(2, 3)):
        candidates: list[dict[str, Any]] = []
        for page in range(1, a.rng.randint(4, 7)):
            parameters: dict[str, Any] = {"q": f"{a.rng.choice(_ADJECTIVES)} {a.rng.choice(_NOUNS)}",
                                          "page": page}
            hits = a.search("find_product", parameters)
            a.step(f"Searching page {page} for item {item}.", [{
                "name": "find_product", "parameters": parameters, "tool_call_id": f"s{item}{page}",
                "result": hits}])
            candidates.extend(hits[:2])
            ids = ",".join(h["product_id"] for h in hits[:3])
            details = a.search("view_product_information", {"product_ids": ids})
            a.step("Checking candidate details.", [{"name": "view_product_information",
                                                    "parameters": {"product_ids": ids},
                                                    "tool_call_id": f"v{item}{page}", "result": details}])
        pick = a.rng.choice(candidates)["product_id"]
        if use_llm:
            listing = "\n".join(f"{c['product_id']}: {c['title']} ({c['price']})" for c in candidates)
            a.infer([{"role": "system", "content": "Reply with the best product id only."},
                     {"role": "user", "content": f"Request: {problem.query}\nCandidates:\n{listing}"}], pick)
            check = f"Does {pick} satisfy '{problem.query}'? Answer yes or no."
            a.infer([{"role": "user", "content": check}], a.rng.choice(["yes", "no", "Yes."]))
        answer.append(pick)
    a.step("Recommending.", [{"name": "recommend_product", "parameters": {"product_ids": ",".join(answer)},
                              "tool_call_id": "r", "result": None}])
    a.step("Done.", [{"name": "terminate", "parameters": {"status": "success"}, "tool_call_id": "t",
                      "result": None}])
    return answer


_SUCCESS_RATE: dict[Style, float] = {"react": 0.45, "sub_task": 0.6, "scripted": 0.35}


def make_attempt(rng: random.Random, style: Style, problem: ProblemEntry, *, run_id: str, agent_hash: str,
                 started_at: float) -> AttemptRecord:
    """One synthetic attempt of an agent of ``style`` at ``problem``."""
    a = _Attempt(rng=rng, query=problem.query, clock=started_at)
    answer = _react(a, problem) if style == "react" else _code_driven(a, problem, use_llm=style == "sub_task")
    failure = None
    if rng.random() < 0.02:
        failure = AttemptFailure(kind="timeout", reason="wall-clock limit of 300 s reached")
        a.steps = []
    success = failure is None and rng.random() < _SUCCESS_RATE[style]
    rule = 1.0 if success else round(rng.random() * 0.9, 3)
    score = AttemptScore(problem_id=problem.id, category=problem.category, success=success,
                         gt=float(success and rng.random() < 0.7), rule=rule, found=1.0 if answer else 0.0,
                         format=0.0 if failure else round(rng.uniform(0.8, 1), 3),
                         length=0.0 if failure else 1 / max(len(a.steps), 1),
                         answer=[] if failure else answer,
                         error=failure.reason if failure else None)
    # The steps as the runner holds them: parsed from the JSON answer the agent wrote
    # (``shoppingbench.sandbox.slot``), not the objects the agent built them from.
    steps = orjson.loads(orjson.dumps(a.steps))
    return AttemptRecord(run_id=run_id, problem_id=problem.id, category=problem.category,
                         query=problem.query, agent_hash=agent_hash, steps=steps, proxy_log=a.calls,
                         score=score, failure=failure, started_at=started_at,
                         finished_at=max(a.clock, started_at))


def make_problems(rng: random.Random, count: int, *, per_cluster: int = 3, suite: str = "race-synthetic",
                  ) -> list[ProblemEntry]:
    """``count`` problems; each run of ``per_cluster`` consecutive problems shares a leak cluster."""
    problems = []
    for i in range(count):
        category = CATEGORIES[i % 3]
        query = _query(rng, category)
        problems.append(ProblemEntry(id=hashlib.sha256(f"{i}:{query}".encode()).hexdigest()[:16],
                                     category=category, query=query, suite=suite,
                                     leak_cluster=f"cluster-{i // per_cluster:05d}"))
    return problems


def agent_code(index: int, style: Style) -> str:
    return f"# synthetic {style} agent {index}\n\ndef agent_main(problem):\n    return []\n"


@dataclass(frozen=True)
class SyntheticAgent:
    entry: AgentEntry
    style: Style


def make_agents(count: int, *, day_start: float, styles: tuple[Style, ...] = STYLES) -> list[SyntheticAgent]:
    """``count`` agents cycling through ``styles``; every third one was published the day before."""
    agents = []
    for i in range(count):
        style = styles[i % len(styles)]
        code = agent_code(i, style)
        agents.append(SyntheticAgent(style=style, entry=AgentEntry(
            code_hash=hashlib.sha256(code.encode()).hexdigest(), hotkey=f"5Hotkey{i:04d}", code=code,
            submitted_at=day_start - 3 * 86_400, published_at=day_start - 86_400 if i % 3 == 0 else None)))
    return agents


@dataclass
class SyntheticDay:
    """A day of traffic: problems, agents, one qualifying run per agent, and the attempts."""

    day_start: float
    problems: list[ProblemEntry]
    agents: list[SyntheticAgent]
    seed: int = 0

    def run_id(self, agent_index: int) -> str:
        return f"qualifying-{int(self.day_start)}-{agent_index:04d}"

    def runs(self) -> list[RunEntry]:
        return [RunEntry(id=self.run_id(i), kind="qualifying", validator="5Validator", suite="race-synthetic",
                         started_at=self.day_start) for i in range(len(self.agents))]

    def attempts(self, count: int, *, templates: int = 100, measure_echoes: bool = False,
                 ) -> Iterator[AttemptRecord]:
        """``count`` attempts, each agent working through the problems in order.

        Only ``templates`` distinct attempts per style are generated; the rest are copies under new
        keys and times, which keeps generation cheap and memory flat for large days. ``measure_echoes``:
        each attempt carries its echo measure as the harness's grader makes them
        (``AttemptRecord.measure_echoes``, taken on each copy: its query is the copy's own).
        """
        rng = random.Random(self.seed)
        cache: dict[tuple[Style, int], AttemptRecord] = {}
        span = 86_000.0
        for n in range(count):
            agent_index, problem_index = n % len(self.agents), n // len(self.agents)
            agent = self.agents[agent_index]
            problem = self.problems[problem_index % len(self.problems)]
            started_at = self.day_start + span * n / max(count, 1)
            slot = (agent.style, n % templates)
            template = cache.get(slot)
            if template is None:
                template = make_attempt(random.Random(rng.random()), agent.style, problem,
                                        run_id=self.run_id(agent_index), agent_hash=agent.entry.code_hash,
                                        started_at=started_at)
                cache[slot] = template
            shift = started_at - template.started_at
            attempt = template.model_copy(update={
                "run_id": self.run_id(agent_index), "agent_hash": agent.entry.code_hash,
                "problem_id": problem.id, "category": problem.category, "query": problem.query,
                "started_at": started_at, "finished_at": template.finished_at + shift,
                "score": template.score.model_copy(update={"problem_id": problem.id,
                                                           "category": problem.category})})
            yield attempt.measure_echoes() if measure_echoes else attempt


def synthetic_day(*, day_start: float, problems: int = 450, agents: int = 60, seed: int = 0,
                  styles: tuple[Style, ...] = STYLES) -> SyntheticDay:
    rng = random.Random(seed)
    return SyntheticDay(day_start=day_start, problems=make_problems(rng, problems),
                        agents=make_agents(agents, day_start=day_start, styles=styles), seed=seed)
