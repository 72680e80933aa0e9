"""The network demo's own miners' agents, as agent files (demo doubles): the bundled reference agents are
public, nobody's original, so a miner races its own variant of one, or code of its own.

- :func:`tuned_react_source`: the ReAct agent with its miner's own prompt and step limit, an honest
  variant (compared with other miners' files on what it adds to the public agent).
- :data:`BAIT_PARSER`: a parser whose code makes every decision (the items, each search, the candidate
  it keeps, the answer) and has the model emit each call it chose (``TASK: CALL``) and say the code's
  comparison in its own words (``TASK: PARAPHRASE``), so every call that runs appears in a completion.
  The who-decided rule (``trajectories.filter.decided``) reads each of its requests as steered: no
  reasoning credit, never ``agentic``, and it ranks below the ReAct agent.
"""

from __future__ import annotations

import re
from typing import Final

TUNED_REACT_PROMPT: Final = '''You help a shopper on a large online marketplace. Work only through the tools \
below, and finish by recommending the products that satisfy everything the shopper asked for.

# Tools
1. find_product(q, page=1, shop_id=None, price=None, sort=None, service=None): keyword search, ten \
products a page, pages 1 to 5. Keep q short: the kind of product, a brand, one or two attributes. \
price is "low-high", "low-" or "-high" (both ends included). sort is "priceasc", "pricedesc" or "order" \
(most sold first). service lists "official", "freeShipping", "COD" or "flashsale", comma-separated, all \
of them required. shop_id searches one shop. Each hit has product_id, shop_id, title, price, service and \
sold_count.
2. view_product_information(product_ids): ids separated by commas; gives descriptions, sku_options and \
attributes. Confirm colour, size, material, brand and options here before you choose.
3. recommend_product(product_ids): the answer, ids separated by commas, one per item in the order the \
shopper named them. A one-shop request takes every item from the same shop; a voucher request must fit \
the budget once the voucher is applied.
4. terminate(status): "success" or "failure" ends the dialogue; recommend first.

# Method
- Search with a few keywords plus the stated price and service filters, then view the most promising hits.
- Before you recommend, weigh two or more candidates in <think> by their ids, prices and attributes, and \
say which one fits better and why.
- Results come back inside <obs>..</obs>. Nobody will answer questions: finish the task yourself.

# Answer format
Every answer is exactly:
<think>your reasoning</think>
<tool_call>[{"name": "tool name", "parameters": {"parameter": "value"}}]</tool_call>
Optionally followed by <response>a note for the shopper</response>.'''
"""The ReAct miner's own prompt: the same tools and format, its own words."""

_PROMPT_ASSIGNMENT = re.compile(r'^SYSTEM_PROMPT = """.*?"""\n', re.DOTALL | re.MULTILINE)


def tuned_react_source(react: str) -> bytes:
    """The bundled ReAct agent's file with the miner's own prompt and a step limit of 20."""
    tuned, count = _PROMPT_ASSIGNMENT.subn(lambda _: f"SYSTEM_PROMPT = {TUNED_REACT_PROMPT!r}\n", react)
    if count != 1 or "MAX_STEPS = 16\n" not in tuned:
        raise ValueError("the ReAct agent's file no longer has the prompt and step limit this variant tunes")
    return tuned.replace("MAX_STEPS = 16\n", "MAX_STEPS = 20\n").encode()


BAIT_PARSER: Final = '''"""A shopping parser: the code decides every step; the model says them."""

import re

from shoppingbench.agent_sdk import (ProxyClient, create_dialogue_step, generate_tool_call_id,
                                     parse_model_output)

CALL_PROMPT = "TASK: CALL\\nYou are a careful shopping assistant: make the call the user describes."
SAY_PROMPT = "TASK: PARAPHRASE\\nSay the user's message in your own words, as your own reasoning."
SKIP = set("i im looking for find me a an the with and that is in of to please show want need can you "
           "some also which should be it its one on my under below over above between than less more "
           "priced price cost costs pesos php budget shop shops offering products product".split())
SERVICES = {"free shipping": "freeShipping", "cash on delivery": "COD", "pay on delivery": "COD",
            "lazmall": "official", "official": "official", "lazflash": "flashsale", "flash sale": "flashsale"}

client = ProxyClient(timeout=60.0, max_retries=2, retry_delay=0.5)


def ask(system, text):
    reply = client.chat([{"role": "system", "content": system}, {"role": "user", "content": text}],
                        max_tokens=400)
    return reply.content or ""


def items_of(query):
    wish = query.split("My budget", 1)[0]
    parts = re.split(r"(?i)[;]|\\balso\\b|\\badditionally\\b|\\bsecond(?:ly)?\\b|\\bthird(?:ly)?\\b"
                     r"|\\bnext\\b", wish)
    return [p for p in parts if re.search(r"[a-z]{3}", p.lower())] or [wish]


def filters_of(text):
    lowered = text.lower()
    found = {}
    numbers = [float(n) for n in re.findall(r"(\\d+(?:\\.\\d+)?)\\s*(?:pesos|php)", lowered)]
    if "between" in lowered and len(numbers) >= 2:
        found["price"] = f"{min(numbers[:2]):g}-{max(numbers[:2]):g}"
    elif numbers and re.search(r"under|below|less than|up to", lowered):
        found["price"] = f"-{numbers[0]:g}"
    elif numbers and re.search(r"over|above|more than", lowered):
        found["price"] = f"{numbers[0]:g}-"
    wanted = sorted({code for phrase, code in SERVICES.items() if phrase in lowered})
    if wanted:
        found["service"] = ",".join(wanted)
    words = [w for w in re.findall(r"[a-z][a-z0-9-]+", lowered) if w not in SKIP]
    return " ".join(words[:5]) or text.strip(), found


class Steps:
    def __init__(self, query):
        self.query = query
        self.steps = []

    def run(self, name, parameters):
        worded = "; ".join(f"{key}={value}" for key, value in parameters.items())
        said = parse_model_output(ask(CALL_PROMPT, f"Next, call {name} with {worded}."))
        call = said.tool_calls[0] if said.tool_calls else {"name": name, "parameters": parameters}
        arguments = call.get("parameters") or parameters
        if call["name"] == "find_product":
            result = client.find_product(**arguments)
        elif call["name"] == "view_product_information":
            result = client.view_product_information(arguments["product_ids"])
        else:
            result = "ok"
        entry = {"name": call["name"], "parameters": arguments,
                 "tool_call_id": generate_tool_call_id(call["name"], arguments), "result": result}
        self.steps.append(create_dialogue_step(said.think or "", [entry], None, self.query, len(self.steps)))
        return result


def fit(words, detail, hit):
    text = " ".join([str(hit.get("title", "")), str(detail.get("sku_options", "")),
                     str(detail.get("attributes", ""))]).lower()
    return sum(word in text for word in words.split())


def pick(steps, text):
    words, found = filters_of(text)
    hits = steps.run("find_product", {"q": words, **found}) or steps.run("find_product", {"q": words})
    hits = [h for h in hits if isinstance(h, dict)][:5]
    if not hits:
        return ""
    details = {d.get("product_id"): d for d in steps.run(
        "view_product_information", {"product_ids": ",".join(str(h["product_id"]) for h in hits)})
        if isinstance(d, dict)}
    ranked = sorted(hits, key=lambda h: (-fit(words, details.get(h["product_id"], {}), h), h["price"]))
    if len(ranked) >= 2:
        best, rival = ranked[0], ranked[1]
        ask(SAY_PROMPT, f"Product {best['product_id']} costs {best['price']} and product "
                        f"{rival['product_id']} costs {rival['price']}; {best['product_id']} matches the "
                        f"request better than "
                        f"{rival['product_id']}, so it is the one to recommend.")
    return str(ranked[0]["product_id"])


def agent_main(problem):
    query = str(problem.get("query", ""))
    steps = Steps(query)
    answer = [pick(steps, text) for text in items_of(query)]
    steps.run("recommend_product", {"product_ids": ",".join(answer)})
    steps.run("terminate", {"status": "success" if any(answer) else "failure"})
    return steps.steps
'''
"""The bait parser's file (standalone: the standard library and the agent SDK)."""
