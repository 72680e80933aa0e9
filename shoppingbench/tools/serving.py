"""Run an ASGI app under uvicorn in a background thread for the length of a ``with`` block.

The demo, ``miner test`` and the tests all need a real HTTP server next to the code that calls it:

    with running_server(app) as base_url:
        httpx.get(f"{base_url}/health")
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn

SHUTDOWN_TIMEOUT_S = 15.0


@contextmanager
def running_server(app: Any, *, host: str = "127.0.0.1", port: int = 0, startup_timeout: float = 20.0,
                   log_level: str = "warning") -> Iterator[str]:
    """Serve ``app`` on ``host:port`` (port 0 picks a free one) and yield its base URL.

    The socket is bound here and handed to uvicorn, so no other process can take the port between
    choosing and binding it. The URL is yielded only once the server has answered one HTTP request
    (any status), and the server is shut down and its thread joined on exit.
    """
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and without
    # it every keep-alive response waits ~40 ms for the client's delayed ACK (Nagle).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, timeout_graceful_shutdown=5))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{bound_port}",
                              daemon=True)
    thread.start()
    base_url = f"http://{host}:{bound_port}"
    try:
        _wait_until_answering(base_url, thread, startup_timeout)
        yield base_url
    finally:
        server.should_exit = True
        thread.join(timeout=SHUTDOWN_TIMEOUT_S)
        sock.close()
        if thread.is_alive():
            raise RuntimeError(f"uvicorn on {base_url} did not shut down within {SHUTDOWN_TIMEOUT_S} s")


def _wait_until_answering(base_url: str, thread: threading.Thread, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if not thread.is_alive():
            raise RuntimeError(f"uvicorn on {base_url} stopped during startup (see its log above)")
        try:
            httpx.get(f"{base_url}/", timeout=2.0)
            return
        except httpx.TransportError as exc:
            if time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn on {base_url} did not answer within {timeout} s") from exc
            time.sleep(0.05)
