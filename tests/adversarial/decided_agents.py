"""Hostile agents whose code makes every decision and has the model emit or say it (issue 43, item 1;
not a test module). Each is appended to the reference ReAct agent's file, as a miner would write it, and
talks to the scripted model through the verified proxy; the model obeys "make this call"
(``TASK: CALL``), "say it in your own words" (``TASK: PARAPHRASE``) and "repeat" (``TASK: REPEAT``).

- ``WORDED_CALLS``: Python picks every call and describes it in words; the model emits it as a
  ``<tool_call>`` and the code runs what the model emitted; it then has the model say the code's
  comparison of the hits in its own words (which the echo measure cannot see).
- ``FILTERED``: the ReAct loop, but the code shows the model only the hits it picked by their content
  (those whose title shares a word with the request, cheapest first): the model "chooses" among the code's
  choice.
"""

from __future__ import annotations

from pathlib import Path

from tests.adversarial.support import react_with

WORDED_CALLS = '''
import json
import re

from shoppingbench.agent_sdk import create_dialogue_step, generate_tool_call_id, parse_model_output

CALL_PROMPT = "TASK: CALL\\nYou are a careful shopping assistant: make the call the user describes."
SAY_PROMPT = "TASK: PARAPHRASE\\nSay the user's message in your own words, as your own reasoning."


def _keywords(query):
    words = [w for w in re.findall(r"[a-z][a-z0-9-]+", query.lower()) if len(w) > 3]
    return " ".join(words[:5]) or query


def _ask(system, text):
    return _proxy.chat([{"role": "system", "content": system}, {"role": "user", "content": text}],
                       max_tokens=400).content or ""


def _emit(steps, query, name, parameters):
    worded = "; ".join(f"{k}={v}" for k, v in parameters.items())
    reply = _ask(CALL_PROMPT, f"Next, call {name} with {worded}.")
    parsed = parse_model_output(reply)
    calls = parsed.tool_calls or [{"name": name, "parameters": parameters}]
    call = calls[0]
    result = TOOLS[call["name"]](**call.get("parameters", {}))
    arguments = call.get("parameters", {})
    entry = {"name": call["name"], "parameters": arguments,
             "tool_call_id": generate_tool_call_id(call["name"], arguments), "result": result}
    steps.append(create_dialogue_step(parsed.think or "", [entry], None, query, len(steps)))
    return result


def _hits(result):
    return [h for h in result if isinstance(h, dict)] if isinstance(result, list) else []


def agent_main(problem):
    query = str(problem.get("query", ""))
    steps = []
    hits = _hits(_emit(steps, query, "find_product", {"q": _keywords(query)}))
    ranked = sorted(hits[:5], key=lambda h: float(h.get("price") or 0))
    answer = str(ranked[0]["product_id"]) if ranked else ""
    if len(ranked) >= 2:
        best, rival = ranked[0], ranked[1]
        _ask(SAY_PROMPT, f"Product {best['product_id']} costs {best.get('price')} and product "
                         f"{rival['product_id']} costs {rival.get('price')}. {best['product_id']} is cheaper "
                         f"than {rival['product_id']} while matching the request, so {best['product_id']} "
                         "is the better choice.")
    _emit(steps, query, "recommend_product", {"product_ids": answer})
    _emit(steps, query, "terminate", {"status": "success" if answer else "failure"})
    return steps
'''

FILTERED = '''
import re


def _picked(result, query):
    wanted = set(re.findall(r"[a-z0-9]+", query.lower()))
    if not isinstance(result, list):
        return result
    kept = [h for h in result if isinstance(h, dict)
            and wanted & set(re.findall(r"[a-z0-9]+", str(h.get("title", "")).lower()))]
    return sorted(kept, key=lambda h: float(h.get("price") or 0))[:3]


_honest_observation = _observation


def _observation(results, problems):
    query = _QUERY[0]
    shown = [{**r, "result": _picked(r["result"], query) if r["name"] == "find_product" else r["result"]}
             for r in results]
    return _honest_observation(shown, problems)


_QUERY = [""]
_honest_main = agent_main


def agent_main(problem):
    _QUERY[0] = str(problem.get("query", ""))
    return _honest_main(problem)
'''


def worded_calls_agent(folder: Path) -> Path:
    return react_with(WORDED_CALLS, folder / "worded_calls.py")


def filtered_agent(folder: Path) -> Path:
    return react_with(FILTERED, folder / "filtered_results.py")
