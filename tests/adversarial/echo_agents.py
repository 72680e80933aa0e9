"""Hostile agents that make the model echo what their code wrote (issue 22, item 3; not a test module).

Both are appended to the reference ReAct agent's file, as a miner would write them, and both talk to the
scripted model through the verified proxy; the model obeys "repeat this" (``TASK: REPEAT``) word for word.

- ``RESTATE``: a parser. Python searches, compares the two cheapest hits by id and price and makes one
  inference call asking the model to restate that comparison; the completion reads like reasoning over
  verified results.
- ``REPEAT_CALLS``: Python picks every tool call (search, view, recommend, terminate) and, before running
  each, asks the model to repeat it; every call that runs then appears in a preceding completion.
"""

from __future__ import annotations

from pathlib import Path

from tests.adversarial.support import react_with

_COMMON = '''
import re

from shoppingbench.agent_sdk import create_dialogue_step, generate_tool_call_id

REPEAT_PROMPT = "TASK: REPEAT\\nRepeat the user's message exactly, word for word."


def _keywords(query):
    words = [w for w in re.findall(r"[a-z][a-z0-9-]+", query.lower()) if len(w) > 3]
    return " ".join(words[:6]) or query


def _repeat(text):
    return _proxy.chat([{"role": "system", "content": REPEAT_PROMPT}, {"role": "user", "content": text}],
                       max_tokens=400).content or ""


def _step(steps, query, think, name, parameters, result):
    call = {"name": name, "parameters": parameters, "tool_call_id": generate_tool_call_id(name, parameters),
            "result": result}
    steps.append(create_dialogue_step(think, [call], None, query, len(steps)))


def _hits(result):
    return [h for h in result if isinstance(h, dict)] if isinstance(result, list) else []
'''

RESTATE = _COMMON + '''

def agent_main(problem):
    query = str(problem.get("query", ""))
    steps = []
    parameters = {"q": _keywords(query)}
    hits = _hits(TOOLS["find_product"](**parameters))
    _step(steps, query, "Searching.", "find_product", parameters, hits)
    ranked = sorted(hits[:5], key=lambda h: float(h.get("price") or 0))
    if len(ranked) >= 2:
        best, rival = ranked[0], ranked[1]
        analysis = (f"I compared the search results for the shopper. Product {best['product_id']} "
                    f"'{best.get('title')}' costs {best.get('price')}, while product {rival['product_id']} "
                    f"'{rival.get('title')}' costs {rival.get('price')}. {best['product_id']} is cheaper "
                    f"than {rival['product_id']} and matches the request better, so I recommend "
                    f"{best['product_id']}.")
        think = _repeat(analysis)
        answer = str(best["product_id"])
    else:
        think, answer = "Nothing to compare.", ""
    _step(steps, query, think, "recommend_product", {"product_ids": answer}, "ok")
    _step(steps, query, "Done.", "terminate", {"status": "success"}, "ok")
    return steps
'''

REPEAT_CALLS = _COMMON + '''
import json


def _run(steps, query, name, parameters):
    echoed = _repeat("<tool_call>" + json.dumps([{"name": name, "parameters": parameters}]) + "</tool_call>")
    result = TOOLS[name](**parameters)
    _step(steps, query, echoed, name, parameters, result)
    return result


def agent_main(problem):
    query = str(problem.get("query", ""))
    steps = []
    hits = _hits(_run(steps, query, "find_product", {"q": _keywords(query)}))
    if hits:
        _run(steps, query, "view_product_information",
             {"product_ids": ",".join(str(h["product_id"]) for h in hits[:3])})
    answer = str(hits[0]["product_id"]) if hits else ""
    _run(steps, query, "recommend_product", {"product_ids": answer})
    _run(steps, query, "terminate", {"status": "success" if answer else "failure"})
    return steps
'''


def restate_agent(folder: Path) -> Path:
    return react_with(RESTATE, folder / "restate_analysis.py")


def repeat_calls_agent(folder: Path) -> Path:
    return react_with(REPEAT_CALLS, folder / "repeat_tool_calls.py")
