"""Serve one run's verified proxy on one channel per sandbox slot, in a background thread.

A channel is a listening socket of its own: a Unix socket (bind-mounted into a namespace or Docker
sandbox) or, for the unsandboxed debugging mode, a loopback TCP port. The proxy attributes a request
to whatever attempt the runner has begun on the channel it arrived on.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

import uvicorn

from shoppingbench.proxy.app import VerifiedProxy
from shoppingbench.proxy.calllog import ChannelRegistry
from shoppingbench.proxy.inference import InferenceConfig, InferenceForwarder
from shoppingbench.records import ProxyCall
from shoppingbench.search.base import SearchEngine

STARTUP_TIMEOUT_S = 20.0
SHUTDOWN_TIMEOUT_S = 15.0

ChannelTransport = Literal["unix", "tcp"]


@dataclass(frozen=True)
class Channel:
    key: str
    """What the proxy sees as the request's server address (``app.channel_of``)."""
    unix_path: Path | None
    """The socket file to mount into a sandbox (unix channels)."""
    url: str
    """``http://127.0.0.1:PORT`` for tcp channels; for unix ones, any URL with ``unix_path`` as transport."""


class ProxyServer:
    """The verified proxy of one run. Use as a context manager; ``begin``/``end`` frame each attempt."""

    def __init__(self, engine: SearchEngine, inference: InferenceConfig, *, channels: int,
                 transport: ChannelTransport = "unix") -> None:
        self.registry = ChannelRegistry()
        self.forwarder = InferenceForwarder(inference)
        self._app = VerifiedProxy(engine, self.registry, self.forwarder)
        self._count = channels
        self._transport = transport
        self._sockets: list[socket.socket] = []
        self._socket_dir: Path | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.channels: list[Channel] = []

    def __enter__(self) -> ProxyServer:
        try:
            self._bind()
            self._start()
        except BaseException:
            self._cleanup()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def begin(self, slot: int, run_id: str, problem_id: str) -> None:
        self.registry.begin(self.channels[slot].key, run_id, problem_id)

    def end(self, slot: int) -> list[ProxyCall]:
        return self.registry.end(self.channels[slot].key)

    def _bind(self) -> None:
        if self._transport == "unix":
            # Short path: AF_UNIX paths are limited to 107 bytes. Only root (the runner) may enter it;
            # each sandbox sees just its own socket, bind-mounted.
            self._socket_dir = Path(tempfile.mkdtemp(prefix="sb-proxy-"))
            os.chmod(self._socket_dir, 0o700)
        for index in range(self._count):
            if self._socket_dir is not None:
                path = self._socket_dir / f"slot-{index}.sock"
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.bind(str(path))
                os.chmod(path, 0o666)  # the sandbox's unprivileged uid must be able to connect
                self._sockets.append(sock)
                self.channels.append(Channel(key=str(path), unix_path=path, url="http://proxy"))
            else:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
                sock.bind(("127.0.0.1", 0))
                self._sockets.append(sock)
                port = sock.getsockname()[1]
                self.channels.append(Channel(key=f"127.0.0.1:{port}", unix_path=None,
                                             url=f"http://127.0.0.1:{port}"))

    def _start(self) -> None:
        config = uvicorn.Config(self._app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5,
                                log_config=None)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": self._sockets},
                                        name="verified-proxy", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the verified proxy stopped during startup (see its log above)")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the verified proxy did not start within {STARTUP_TIMEOUT_S} s")
            time.sleep(0.01)

    def close(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=SHUTDOWN_TIMEOUT_S)
            if self._thread.is_alive():
                raise RuntimeError(f"the verified proxy did not shut down within {SHUTDOWN_TIMEOUT_S} s")
        self._cleanup()

    def _cleanup(self) -> None:
        for sock in self._sockets:
            sock.close()
        self._sockets.clear()
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None
        self._server = None
        self._thread = None
