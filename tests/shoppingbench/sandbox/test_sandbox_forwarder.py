"""The sandbox's loopback->proxy forwarder ends every relay between problems, so nothing of a finished
problem's connections is left pending when the next problem is forked (where it would be destroyed and
logged into that problem's stderr)."""

from __future__ import annotations

from pathlib import Path

from shoppingbench.search.engine import BM25SearchEngine
from tests.sandbox_support import problem, run_agent

# Keeps its keep-alive connection open when it returns, and collects garbage in the next problem's fork:
# a relay task copied pending into the fork would be destroyed there.
KEEP_ALIVE_AGENT = '''
import gc
import os

import httpx

_clients = []


def agent_main(problem):
    gc.collect()
    client = httpx.Client(base_url=os.environ["SANDBOX_PROXY_URL"])
    _clients.append(client)
    for _ in range(3):
        client.post("/search/find_product", json={"q": "mug"}).raise_for_status()
    return [{"completion": {"content": "done"}}]
'''


def test_relays_end_cleanly_between_problems(small_engine: BM25SearchEngine, tmp_path: Path) -> None:
    agent = tmp_path / "keep_alive.py"
    agent.write_text(KEEP_ALIVE_AGENT)

    records = run_agent(agent, [problem(f"p{i}", "mug") for i in range(12)], small_engine)

    assert all(r.failure is None for r in records), [(r.failure, r.stderr_tail) for r in records]
    assert all(len(r.proxy_log) == 3 for r in records)
    for record in records:
        assert "Task was destroyed but it is pending!" not in record.stderr_tail
        assert "CancelledError" not in record.stderr_tail
        assert "Exception in callback" not in record.stderr_tail
