"""Run an ASGI app under a real uvicorn server for a test, so requests go through real HTTP.

    with running_server(app) as base_url:
        httpx.get(f"{base_url}/health")

The helper is the one the demo and ``miner test`` use, so the tests exercise the same serving code.
"""

from shoppingbench.tools.serving import running_server

__all__ = ["running_server"]
