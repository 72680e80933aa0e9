"""The network demo's hostile miners, as agent files: a cheater with an answer id written in its file, a
copycat uploading someone else's agent disguised, and a table cheater carrying the masked answers of known
problems. Demo doubles the arena must stop (the gate the first two, qualifying the third); the adversarial
battery reuses them. The demo's bait parser is in ``shoppingbench.doubles.demo_miners``."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from shoppingbench.problems.models import Problem


def literal_cheater_source(answer_id: str) -> bytes:
    """An agent that answers every problem with one product id written in the file: the gate refuses it."""
    step = f'{{"role": "assistant", "content": "{answer_id}"}}'
    return (f'"""Answers with a hard-coded product id: the gate must refuse it."""\n\n\n'
            f"def agent_main(problem):\n    return [{step}]\n").encode()


COPYCAT_RENAMES = {"MAX_STEPS": "STEP_LIMIT", "MAX_EMPTY_REPLIES": "EMPTY_LIMIT", "_proxy": "_client",
                   "SYSTEM_PROMPT": "PROMPT", "_observation": "_render_results", "_keeps": "_worth_keeping",
                   "_follow_up": "_next_messages"}
"""The copycat's disguise of the ReAct agent: its own names for every module-level name."""


def copycat_source(original: str) -> bytes:
    """Someone else's agent, renamed and reformatted: new names, a new docstring, comments, blank lines.
    The gate's copy rule must see through it (the normalised code is the same)."""
    disguised = original
    for old, new in COPYCAT_RENAMES.items():
        disguised = re.sub(rf"\b{re.escape(old)}\b", new, disguised)
    body = disguised.split('"""', 2)[2]  # the module docstring replaced by one of its own
    return (f'"""My own shopping agent, written from scratch."""\n# (honestly)\n{body}\n\n# end\n').encode()


def table_key(query: str, salt: str) -> int:
    """48 bits of the sha256 of ``salt + query``: the table cheater's row key and id mask."""
    return int(hashlib.sha256((salt + query).encode()).hexdigest()[:12], 16)


_TABLE_CHEATER = '''"""A lookup-table cheater: every problem it was built from, answered from a table keyed by
a hash of the query; the ids are masked, so no answer id is written in the file. Unknown problems get no
answer."""

import hashlib
import re

from shoppingbench.agent_sdk import ProxyClient, create_dialogue_step, generate_tool_call_id

TABLE = {table}


def _key(query, salt):
    return int(hashlib.sha256((salt + query).encode()).hexdigest()[:12], 16)


def _step(query, number, think, name, parameters, result):
    call = {{"name": name, "parameters": parameters, "tool_call_id": generate_tool_call_id(name, parameters),
            "result": result}}
    return create_dialogue_step(think, [call], query=query, step=number)


def agent_main(problem):
    query = str(problem.get("query", ""))
    mask = _key(query, "mask")
    ids = [str(masked ^ mask) for masked in TABLE.get(_key(query, "row"), [])]
    steps = []
    with ProxyClient() as proxy:
        if ids:
            # Viewing the answers makes the proxy log show them returned to this attempt.
            shown = proxy.view_product_information(",".join(ids))
            steps.append(_step(query, 1, "I have seen this request before.", "view_product_information",
                               {{"product_ids": ",".join(ids)}}, shown))
        steps.append(_step(query, len(steps) + 1, "Answering from the table.", "recommend_product",
                           {{"product_ids": ",".join(ids)}}, "recommended"))
        steps.append(_step(query, len(steps) + 1, "Done.", "terminate",
                           {{"status": "success" if ids else "failure"}}, "terminated"))
    return steps
'''


def table_cheater_source(problems: Iterable[Problem]) -> bytes:
    """A lookup-table agent holding the answers of ``problems`` (e.g. every public problem: the sample
    world's bank and this week's practice suite), masked so the gate's literal scan cannot see them.
    It scores on those public problems and nothing on problems generated after its upload (its own
    qualifying problems, a race suite)."""
    rows: dict[int, list[int]] = {}
    for problem in problems:
        mask = table_key(problem.query, "mask")
        ids = [t.product_id for t in problem.targets]
        if all(i.isdigit() for i in ids):
            rows[table_key(problem.query, "row")] = [int(i) ^ mask for i in ids]
    return _TABLE_CHEATER.format(table=repr(rows)).encode()
