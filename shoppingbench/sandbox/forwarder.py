"""Inside the sandbox: relay ``127.0.0.1:PORT`` to the proxy's Unix socket (stdlib only).

The sandbox has no network but its own loopback; the proxy's socket is bind-mounted in. Agents keep
using an ordinary ``http://127.0.0.1:PORT`` URL (``SANDBOX_PROXY_URL``), and every byte they send
still reaches the host only through this slot's socket, which is how the proxy attributes it.

It runs as a thread of the bootstrap process (not a process of its own), so killing every other
process between problems leaves it alone, and it never runs agent code.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from functools import partial

CHUNK = 64 * 1024


async def _pipe(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(CHUNK):
            target.write(data)
            await target.drain()
        if target.can_write_eof():
            target.write_eof()
    except (ConnectionError, OSError):
        target.close()


async def _relay(socket_path: str, client_reader: asyncio.StreamReader,
                 client_writer: asyncio.StreamWriter) -> None:
    try:
        upstream_reader, upstream_writer = await asyncio.open_unix_connection(socket_path)
    except OSError:
        client_writer.close()
        return
    try:
        await asyncio.gather(_pipe(client_reader, upstream_writer), _pipe(upstream_reader, client_writer))
    finally:
        for writer in (client_writer, upstream_writer):
            with contextlib.suppress(OSError):
                writer.close()


async def _serve(port: int, socket_path: str, ready: threading.Event) -> None:
    server = await asyncio.start_server(partial(_relay, socket_path), "127.0.0.1", port, backlog=128)
    ready.set()
    async with server:
        await server.serve_forever()


def start(port: int, socket_path: str, timeout_s: float = 10.0) -> None:
    """Start relaying in a daemon thread; returns once the port is listening (or raises)."""
    ready = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(_serve(port, socket_path, ready))
        except BaseException as exc:  # reported to the caller, who reports it to the host
            failure.append(exc)
            ready.set()

    threading.Thread(target=run, name="proxy-forwarder", daemon=True).start()
    if not ready.wait(timeout_s):
        raise RuntimeError(f"the proxy forwarder did not start listening on port {port}")
    if failure:
        raise RuntimeError(f"the proxy forwarder failed: {failure[0]!r}")
