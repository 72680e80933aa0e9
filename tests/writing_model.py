"""A request-writing model for tests of problem banks: no hosted model can be reached from here.

It answers the chat request a bank's :class:`~shoppingbench.generator.writer.rewrite.ChatModelRewrites`
sends (an OpenAI chat completion whose last message lists each product's requirements as ``- key: value``
lines) the way a model following those instructions would at its plainest: one sentence stating every
requirement but the title, each product named by its title's last word. Served by
:func:`shoppingbench.doubles.llm_server.create_app`, which speaks the OpenAI chat protocol over HTTP.
"""

from __future__ import annotations

from typing import Any


def requirements(prompt: str) -> list[tuple[str, list[str]]]:
    """Each product's (title, stated requirements) from a requirements prompt, in order."""
    products: list[tuple[str, list[str]]] = []
    for line in prompt.splitlines():
        if line.startswith("- title: "):
            products.append((line.removeprefix("- title: "), []))
        elif line.startswith("- ") and products:
            products[-1][1].append(line.partition(": ")[2])
    return products


def plain_query(body: dict[str, Any]) -> str:
    """The query a plain model writes for the chat request ``body``."""
    products = requirements(body["messages"][-1]["content"])
    named = [f"a {title.split()[-1].lower()} ({', '.join(stated) or 'any'})" for title, stated in products]
    return f"I am looking for {' and '.join(named)}."
