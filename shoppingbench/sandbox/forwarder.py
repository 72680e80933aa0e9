"""Inside the sandbox: relay ``127.0.0.1:PORT`` to the proxy's Unix socket (stdlib only).

The sandbox has no network but its own loopback; the proxy's socket is bind-mounted in (docker) or
reached through an inherited descriptor's ``/proc/self/fd`` path (namespace). Agents keep
using an ordinary ``http://127.0.0.1:PORT`` URL (``SANDBOX_PROXY_URL``), and every byte they send
still reaches the host only through this slot's socket, which is how the proxy attributes it.

It runs as a thread of the bootstrap process (not a process of its own), so killing every other
process between problems leaves it alone, and it never runs agent code. Between problems the bootstrap
drops every relay still open (their clients are dead): a relay task left pending when the next problem
is forked would be destroyed in the child ("Task was destroyed but it is pending!" in its stderr).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading

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


class Forwarder:
    """The relay server's event loop (in its own thread) and the relays in flight on it."""

    def __init__(self, port: int, socket_path: str) -> None:
        self.port = port
        self.socket_path = socket_path
        self.loop: asyncio.AbstractEventLoop | None = None
        self._relays: set[asyncio.Task[None]] = set()

    async def serve(self, ready: threading.Event) -> None:
        self.loop = asyncio.get_running_loop()
        server = await asyncio.start_server(self._relay, "127.0.0.1", self.port, backlog=128)
        ready.set()
        async with server:
            await server.serve_forever()

    def drop_connections(self, timeout_s: float = 5.0) -> bool:
        """Cancel every relay in flight and wait until each has ended; False if they did not in time."""
        if self.loop is None:
            return True
        try:
            asyncio.run_coroutine_threadsafe(self._cancel_relays(), self.loop).result(timeout_s)
        except concurrent.futures.TimeoutError:
            return False
        return True

    async def _cancel_relays(self) -> None:
        relays = list(self._relays)
        for relay in relays:
            relay.cancel()
        await asyncio.gather(*relays, return_exceptions=True)

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        me = asyncio.current_task()
        assert me is not None  # start_server runs each connection's callback as a task
        self._relays.add(me)
        try:
            await _relay(self.socket_path, client_reader, client_writer)
        except asyncio.CancelledError:
            pass  # dropped between problems; asyncio would log a connection task that ends cancelled
        finally:
            self._relays.discard(me)


async def _relay(socket_path: str, client_reader: asyncio.StreamReader,
                 client_writer: asyncio.StreamWriter) -> None:
    try:
        upstream_reader, upstream_writer = await asyncio.open_unix_connection(socket_path)
    except OSError:
        client_writer.close()
        return
    writers = (client_writer, upstream_writer)
    try:
        await asyncio.gather(_pipe(client_reader, upstream_writer), _pipe(upstream_reader, client_writer))
    finally:
        for writer in writers:
            with contextlib.suppress(OSError):
                writer.close()
        # Closed for good (sockets released) before the relay's task ends, even when it was cancelled.
        await asyncio.gather(*(writer.wait_closed() for writer in writers), return_exceptions=True)


def start(port: int, socket_path: str, timeout_s: float = 10.0) -> Forwarder:
    """Start relaying in a daemon thread; returns once the port is listening (or raises)."""
    forwarder = Forwarder(port, socket_path)
    ready = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(forwarder.serve(ready))
        except BaseException as exc:  # reported to the caller, who reports it to the host
            failure.append(exc)
            ready.set()

    threading.Thread(target=run, name="proxy-forwarder", daemon=True).start()
    if not ready.wait(timeout_s):
        raise RuntimeError(f"the proxy forwarder did not start listening on port {port}")
    if failure:
        raise RuntimeError(f"the proxy forwarder failed: {failure[0]!r}")
    return forwarder
