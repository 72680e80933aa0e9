"""A request-writing model for tests of problem banks: no hosted model can be reached from here.

It answers the chat request a bank's :class:`~shoppingbench.generator.writer.rewrite.ChatModelRewrites`
sends (an OpenAI chat completion whose last message lists each product's requirements as ``- fact``
lines, the title among them in one of the pools' title forms) the way a model following those
instructions would at its plainest: one sentence naming each product by its title's last word and stating
every number of its requirements with the word after it, in its own words rather than the prompt's.
Served by :func:`shoppingbench.doubles.llm_server.create_app`, which speaks the OpenAI chat protocol over
HTTP.
"""

from __future__ import annotations

import re
from typing import Any

from shoppingbench.generator.writer.prompt_style import load_pools
from shoppingbench.problems.models import CATEGORIES, Category

_NUMBER_AND_WORD = re.compile(r"\d+(?:\.\d+)?(?: ?[^\W\d_]+)?")


def requirements(prompt: str) -> list[tuple[str, list[str]]]:
    """Each product's (title, other stated facts) from a requirements prompt, in order."""
    title_forms = [form.partition("{title}")[0] for form in load_pools().title_facts]
    products: list[tuple[str, list[str]]] = []
    in_block = False
    for line in prompt.splitlines():
        if not line.startswith("- "):
            in_block = False
            continue
        if not in_block:
            products.append(("", []))
            in_block = True
        fact = line.removeprefix("- ")
        form = next((f for f in title_forms if fact.startswith(f)), None)
        if form is None:
            products[-1][1].append(fact)
        else:
            products[-1] = (fact.removeprefix(form), products[-1][1])
    return products


def prompt_category(prompt: str) -> Category:
    """The category a requirements prompt asks for (by its first line, one of the pools' asks)."""
    ask = prompt.split("\n", 1)[0]
    return next(c for c in CATEGORIES if ask in load_pools().asks[c])


def _numbers(facts: list[str]) -> str:
    return ", ".join(_NUMBER_AND_WORD.findall(" ".join(facts)))


def plain_query(body: dict[str, Any]) -> str:
    """The query a plain model writes for the chat request ``body``."""
    products = requirements(body["messages"][-1]["content"])
    named = [f"a {title.split()[-1].lower()} ({_numbers(facts) or 'any'})"
             for title, facts in products]
    return f"I am looking for {' and '.join(named)}."
