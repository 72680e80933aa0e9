"""One sandbox slot, host side: start it, hand it problems one at a time, read its answers with bounds.

The slot's process is started once and reused while it behaves; a timeout it did not handle itself,
an output flood, junk on the protocol or its death make it killed and started afresh for the next
problem. Nothing the sandbox sends is trusted beyond its shape and size, and whatever happens becomes
an :class:`AgentRun` (steps or a failure), never an exception.
"""

from __future__ import annotations

import collections
import os
import selectors
import subprocess
import time
import uuid
from dataclasses import dataclass
from typing import Any, Final

import orjson
import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shoppingbench.records import AttemptFailure, FailureKind
from shoppingbench.sandbox.backends import Backend, SlotSpec

log = structlog.get_logger(__name__)

MAX_HEADER_BYTES: Final = 64 * 1024
READ_CHUNK: Final = 1 << 20
AGENT_FAILURE_KINDS: Final[frozenset[str]] = frozenset(
    {"crash", "timeout", "memory", "output_limit", "bad_output"})


class ReadyFrame(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str
    python: str = ""
    warm_failed: dict[str, str] = Field(default_factory=dict)
    agent_error: str | None = None


class FailureInfo(BaseModel):
    kind: str
    reason: str


class ResultHeader(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str
    nonce: str
    payload_bytes: int = Field(ge=0)
    failure: FailureInfo | None = None
    exit: str = ""
    agent_ms: float | None = None
    cpu_s: float | None = None
    max_rss_kb: int | None = None
    clean: bool = True


@dataclass
class AgentRun:
    """What one problem in the sandbox produced."""

    steps: list[Any] | None
    failure: AttemptFailure | None
    started_at: float
    finished_at: float
    stderr_tail: str = ""
    agent_ms: float | None = None
    """Time the bootstrap measured from fork to answer (reported by the sandbox: informative only)."""


class _SlotBroken(Exception):
    """The slot must be killed; ``kind``/``reason`` say what the current problem's failure is."""

    def __init__(self, kind: FailureKind, reason: str) -> None:
        super().__init__(reason)
        self.kind: FailureKind = kind
        self.reason = reason


def _tail(data: collections.deque[bytes], limit: int) -> str:
    text = b"".join(data)[-limit:] if limit else b""
    return text.decode("utf-8", "replace")


class Slot:
    def __init__(self, spec: SlotSpec, backend: Backend) -> None:
        self.spec = spec
        self.backend = backend
        self.process: subprocess.Popen[bytes] | None = None
        self.ready: ReadyFrame | None = None
        self._selector: selectors.DefaultSelector | None = None
        self._buffer = bytearray()
        self._stderr: collections.deque[bytes] = collections.deque()
        self._stderr_kept = 0
        self._stderr_total = 0
        self.restarts = 0

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> ReadyFrame:
        """Launch the sandbox and wait for its ``ready`` frame; raises ``RuntimeError`` with the reason."""
        self.stop()
        self._reset_stderr()
        self._buffer.clear()
        try:
            command = self.backend.command(self.spec)
        finally:
            fds = self.backend.inherited_fds(self.spec)
        try:
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, env=self.backend.environment(self.spec),
                                            start_new_session=True, pass_fds=fds)
        except OSError as exc:
            raise RuntimeError(f"sandbox slot {self.spec.index} could not be launched: {exc}") from exc
        finally:
            for fd in fds:  # the launched process has its own copies
                os.close(fd)
        assert self.process.stdout is not None and self.process.stderr is not None
        self._selector = selectors.DefaultSelector()
        for stream in (self.process.stdout, self.process.stderr):
            os.set_blocking(stream.fileno(), False)
            self._selector.register(stream, selectors.EVENT_READ)
        deadline = time.monotonic() + self.spec.limits.startup_timeout_s
        try:
            line = self._read_line(deadline, output_limit=self.spec.limits.output_bytes)
            frame = ReadyFrame.model_validate(orjson.loads(line))
            if frame.type != "ready":
                raise _SlotBroken("sandbox_error", f"the sandbox sent {frame.type!r} instead of 'ready'")
        except (_SlotBroken, orjson.JSONDecodeError, ValidationError) as exc:
            stderr = _tail(self._stderr, 4000)
            self.stop()
            raise RuntimeError(f"sandbox slot {self.spec.index} did not start: {exc}\n{stderr}") from None
        if frame.warm_failed:
            log.info("sandbox_warmup_partial", slot=self.spec.index, failed=frame.warm_failed)
        self.ready = frame
        log.debug("sandbox_slot_ready", slot=self.spec.index, backend=self.backend.name, python=frame.python)
        return frame

    def stop(self) -> None:
        """Kill the slot's process tree (no-op when not running)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.backend.kill(self.spec, self.process)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            log.error("sandbox_slot_unkillable", slot=self.spec.index, pid=self.process.pid)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        self.process = None
        self.ready = None

    def kill(self) -> None:
        """Kill the slot's processes from any thread; the thread running a problem in it then sees it die."""
        process = self.process
        if process is not None and process.poll() is None:
            self.backend.kill(self.spec, process)

    def close(self) -> None:
        """Ask the bootstrap to exit, then make sure everything is gone."""
        if self.process is not None and self.process.stdin is not None and self.process.poll() is None:
            try:
                self.process.stdin.write(b'{"type": "exit"}\n')
                self.process.stdin.flush()
                self.process.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.stop()

    # --- one problem ----------------------------------------------------------------------------

    def run(self, problem: dict[str, Any]) -> AgentRun:
        """Run ``problem`` (its public view) and return the steps or the recorded failure."""
        started_at = time.time()
        if self.process is None or self.process.poll() is not None:
            try:
                if self.process is not None:
                    self.restarts += 1
                self.start()
            except RuntimeError as exc:
                return self._failed(started_at, "sandbox_error", str(exc)[:2000])
        self._reset_stderr()
        nonce = uuid.uuid4().hex
        limits = self.spec.limits
        try:
            self._send({"type": "run", "nonce": nonce, "problem": problem, "timeout_s": limits.timeout_s})
            deadline = time.monotonic() + limits.timeout_s + limits.kill_grace_s
            header = self._read_header(deadline, nonce)
            payload = self._read_exactly(header.payload_bytes, deadline)
            self._drain_stderr()
        except _SlotBroken as broken:
            self.stop()
            return self._failed(started_at, broken.kind, broken.reason)
        if not header.clean:
            # Some process of the problem could not be killed: never let it into the next problem.
            log.warning("sandbox_slot_dirty", slot=self.spec.index)
            self.stop()
        run = AgentRun(steps=None, failure=None, started_at=started_at, finished_at=time.time(),
                       stderr_tail=_tail(self._stderr, limits.stderr_tail_bytes), agent_ms=header.agent_ms)
        if header.failure is not None:
            run.failure = _agent_failure(header.failure.kind, header.failure.reason)
            return run
        run.steps, run.failure = _parse_payload(payload)
        return run

    # --- protocol ---------------------------------------------------------------------------------

    def _failed(self, started_at: float, kind: FailureKind, reason: str) -> AgentRun:
        return AgentRun(steps=None, failure=AttemptFailure(kind=kind, reason=reason), started_at=started_at,
                        finished_at=time.time(),
                        stderr_tail=_tail(self._stderr, self.spec.limits.stderr_tail_bytes))

    def _send(self, command: dict[str, Any]) -> None:
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write(orjson.dumps(command) + b"\n")
            self.process.stdin.flush()
        except OSError as exc:
            raise _SlotBroken("crash", f"the sandbox is gone ({exc})") from None

    def _reset_stderr(self) -> None:
        self._stderr.clear()
        self._stderr_kept = 0
        self._stderr_total = 0

    def _keep_stderr(self, chunk: bytes, output_limit: int) -> None:
        self._stderr_total += len(chunk)
        self._stderr.append(chunk)
        self._stderr_kept += len(chunk)
        keep = max(self.spec.limits.stderr_tail_bytes, 4000)
        while self._stderr_kept - len(self._stderr[0]) >= keep:
            self._stderr_kept -= len(self._stderr.popleft())
        if self._stderr_total > output_limit:
            raise _SlotBroken("output_limit", f"the agent printed more than {output_limit} bytes")

    def _pump(self, deadline: float, output_limit: int) -> None:
        """Wait for and read whatever arrives on stdout (kept) or stderr (counted, tail kept)."""
        assert self.process is not None and self._selector is not None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _SlotBroken("timeout", f"no answer within {self.spec.limits.timeout_s} s "
                                         f"(the sandbox was killed)")
        for key, _ in self._selector.select(remaining):
            stream = key.fileobj
            assert not isinstance(stream, int)
            chunk = os.read(stream.fileno(), READ_CHUNK)
            if not chunk:
                self._selector.unregister(stream)
                if stream is self.process.stdout:
                    raise _SlotBroken("crash", "the sandbox exited before answering (did the agent kill it?)")
            elif stream is self.process.stdout:
                self._buffer += chunk
            else:
                self._keep_stderr(chunk, output_limit)

    def _drain_stderr(self) -> None:
        """What the agent printed just before answering may still be in the pipe."""
        assert self.process is not None and self.process.stderr is not None
        try:
            while chunk := os.read(self.process.stderr.fileno(), READ_CHUNK):
                self._keep_stderr(chunk, self.spec.limits.output_bytes)
        except BlockingIOError:
            pass

    def _read_line(self, deadline: float, output_limit: int) -> bytes:
        while (end := self._buffer.find(b"\n")) < 0:
            if len(self._buffer) > MAX_HEADER_BYTES:
                raise _SlotBroken("sandbox_error", "the sandbox sent an over-long protocol line")
            self._pump(deadline, output_limit)
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        return line

    def _read_header(self, deadline: float, nonce: str) -> ResultHeader:
        line = self._read_line(deadline, self.spec.limits.output_bytes)
        try:
            header = ResultHeader.model_validate(orjson.loads(line))
        except (orjson.JSONDecodeError, ValidationError):
            raise _SlotBroken("sandbox_error", "the sandbox sent a malformed result header") from None
        if header.type != "result" or header.nonce != nonce:
            raise _SlotBroken("sandbox_error", "the sandbox answered for another request")
        if header.payload_bytes > self.spec.limits.result_bytes + 4096:
            raise _SlotBroken("output_limit", f"the steps are {header.payload_bytes} bytes; the limit is "
                                              f"{self.spec.limits.result_bytes}")
        return header

    def _read_exactly(self, size: int, deadline: float) -> bytes:
        while len(self._buffer) < size:
            self._pump(deadline, self.spec.limits.output_bytes)
        payload = bytes(self._buffer[:size])
        del self._buffer[:size]
        return payload


def _agent_failure(kind: str, reason: str) -> AttemptFailure:
    known: FailureKind = kind if kind in AGENT_FAILURE_KINDS else "crash"  # type: ignore[assignment]
    return AttemptFailure(kind=known, reason=reason[:2000])


def _parse_payload(payload: bytes) -> tuple[list[Any] | None, AttemptFailure | None]:
    """The child's answer: steps, or the failure it reported. Junk is a bad_output failure."""
    try:
        answer = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        return None, AttemptFailure(kind="bad_output", reason=f"the answer is not valid JSON: {exc}")
    if not isinstance(answer, dict):
        return None, AttemptFailure(kind="bad_output", reason="the answer is not a JSON object")
    if answer.get("ok") is True:
        steps = answer.get("steps")
        if isinstance(steps, list) and all(isinstance(step, dict) for step in steps):
            return steps, None
        return None, AttemptFailure(kind="bad_output", reason="the steps are not a list of objects")
    kind, reason = answer.get("kind"), answer.get("reason")
    return None, _agent_failure(kind if isinstance(kind, str) else "crash",
                                reason if isinstance(reason, str) else "the agent failed")
