"""The program each sandbox runs (stdlib only): a fork server that runs one problem at a time.

Started as ``python -I -S -B bootstrap.py CONFIG_JSON`` so that no ``.pth`` file (our editable
install) is processed: only the paths CONFIG lists (the agent SDK, third-party site-packages) are
importable. It then

1. applies its rlimits, keeps stdin/stdout for the protocol and points fd 0 at /dev/null and fd 1 at
   stderr (so nothing the agent prints can look like a frame),
2. starts the loopback->proxy forwarder thread when CONFIG names a socket,
3. imports the warm-up modules (httpx, the SDK) once, compiles the agent file, and reports ``ready``,
4. for each ``run`` command forks a child that applies the per-problem CPU limit, sets ``PROBLEM_DATA``
   to the problem as JSON (as the reference arena does), executes the agent file as a fresh module,
   calls ``agent_main(problem)``, checks the steps' shape, serialises them and
   writes them to a pipe; the parent enforces the wall-clock limit and the size of the answer,
   then kills every other process of the sandbox and empties its /tmp (so nothing outlives its
   problem), ends the problem's proxy connections and answers.

Protocol (host -> sandbox, one JSON line each): ``{"type": "run", "nonce", "problem", "timeout_s"}``
or ``{"type": "exit"}``. Sandbox -> host: ``{"type": "ready", ...}\\n``, and per run a header line
``{"type": "result", "nonce", "payload_bytes", "failure", "exit", "agent_ms", "cpu_s", "max_rss_kb"}\\n``
followed by ``payload_bytes`` bytes of the child's JSON answer (``{"ok": true, "steps": [...]}`` or
``{"ok": false, "kind", "reason"}``). The host trusts none of it beyond its shape: agent code shares this
uid and could tamper with the process, which can only ever affect its own attempts.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import shutil
import signal
import sys
import time
import traceback
import types
from typing import Any

REASON_CHARS = 1000
CLEANUP_TIMEOUT_S = 5.0
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


def _describe(exc: BaseException) -> str:
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:  # a hostile __str__
        text = type(exc).__name__
    return text[:REASON_CHARS]


def _failure(kind: str, reason: str) -> dict[str, Any]:
    return {"ok": False, "kind": kind, "reason": reason[:REASON_CHARS]}


def _set_rlimits(limits: dict[str, int]) -> None:
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, value))


def _prctl(option: int, value: int) -> None:
    """Best effort: a subreaper collects orphans; non-dumpable stops same-uid ptrace of this process."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _steps_shape_error(steps: object) -> str | None:
    if not isinstance(steps, list | tuple):
        return f"agent_main must return a list of step dicts, got {type(steps).__name__}"
    for index, step in enumerate(steps):
        if not isinstance(step, dict):
            return f"step {index} is a {type(step).__name__}, not a dict"
    return None


def _run_agent(code: types.CodeType, agent_path: str, problem: dict[str, Any]) -> dict[str, Any]:
    module = types.ModuleType("agent")
    module.__file__ = agent_path
    sys.modules["agent"] = module
    try:
        exec(code, module.__dict__)
    except MemoryError:
        return _failure("memory", "importing the agent file ran out of memory")
    except BaseException as exc:
        traceback.print_exc()
        return _failure("crash", f"importing the agent file failed: {_describe(exc)}")
    agent_main = module.__dict__.get("agent_main")
    if not callable(agent_main):
        return _failure("crash", "the agent file defines no agent_main(problem) function")
    try:
        steps = agent_main(problem)
    except MemoryError:
        return _failure("memory", "agent raised MemoryError (memory limit reached)")
    except BaseException as exc:
        traceback.print_exc()
        return _failure("crash", f"agent raised {_describe(exc)}")
    shape_error = _steps_shape_error(steps)
    if shape_error is not None:
        return _failure("bad_output", shape_error)
    return {"ok": True, "steps": list(steps)}


def _encode(answer: dict[str, Any], limit: int) -> bytes:
    try:
        data = json.dumps(answer, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except MemoryError:
        answer = _failure("memory", "serialising the steps ran out of memory")
    except (TypeError, ValueError, RecursionError, UnicodeEncodeError) as exc:
        answer = _failure("bad_output", f"the steps are not JSON-serialisable: {_describe(exc)}")
    except BaseException as exc:  # e.g. a hostile __repr__ inside the steps
        answer = _failure("bad_output", f"the steps could not be serialised: {_describe(exc)}")
    else:
        if len(data) <= limit:
            return data
        answer = _failure("output_limit", f"the steps are {len(data)} bytes as JSON; the limit is {limit}")
    return json.dumps(answer).encode("utf-8")


def _child(config: dict[str, Any], code: types.CodeType | None, compile_error: str | None,
           problem: dict[str, Any], answer_fd: int) -> None:
    """Runs in the forked child; never returns."""
    me = os.getpid()
    try:
        # The protocol pipes, the forwarder's sockets: nothing but the answer pipe stays open for the agent.
        os.closerange(3, answer_fd)
        os.closerange(answer_fd + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        if not config["isolated"]:
            os.setsid()  # no PID namespace: a process group of its own is what gets killed afterwards
        _prctl(PR_SET_DUMPABLE, 1)
        cpu = int(config["cpu_s"])
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        os.environ["PROBLEM_DATA"] = json.dumps(problem)  # as the reference arena's sandbox sets it
        if code is None:
            answer = _failure("crash", compile_error or "the agent file could not be compiled")
        else:
            answer = _run_agent(code, config["agent_path"], problem)
        data = _encode(answer, int(config["result_bytes"]))
        if os.getpid() == me:  # a copy the agent forked never answers for it
            _write_all(answer_fd, data)
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(0)


def _exit_description(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


def _failure_from_status(status: int, cpu_s: float, cpu_limit: int) -> dict[str, str]:
    """Why a child that wrote no answer ended."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        # RLIMIT_CPU sends SIGXCPU at the soft limit and SIGKILL at the hard one.
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_s >= cpu_limit):
            return {"kind": "timeout", "reason": f"CPU time limit of {cpu_limit} s reached "
                    f"(agent process {_exit_description(status)})"}
        if sig == signal.SIGXFSZ:
            return {"kind": "output_limit", "reason": "file size limit reached (SIGXFSZ)"}
    return {"kind": "crash", "reason": f"the agent process {_exit_description(status)} before answering"}


def _kill_the_rest(config: dict[str, Any], child: int) -> bool:
    """Kill every process left from the problem; True once none is left."""
    deadline = time.monotonic() + CLEANUP_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if config["isolated"]:
                os.kill(-1, signal.SIGKILL)  # every process of the namespace this uid may signal but us
            else:
                os.killpg(child, signal.SIGKILL)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        time.sleep(0.001)
    return False


def _wipe(directory: str) -> bool:
    """Empty the scratch directory, so nothing a problem wrote is there for the next; True if empty."""
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
    return not os.listdir(directory)


class _Reading:
    """The child's answer pipe, read with a size bound until EOF or the child's exit."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd = fd
        self.limit = limit
        self.data = bytearray()
        self.eof = False
        self.over = False

    def read_available(self) -> None:
        while not (self.eof or self.over):
            try:
                chunk = os.read(self.fd, 1 << 20)
            except BlockingIOError:
                return
            if not chunk:
                self.eof = True
            self.data += chunk
            self.over = len(self.data) > self.limit


def _run_problem(config: dict[str, Any], code: types.CodeType | None, compile_error: str | None,
                 command: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(config, code, compile_error, command["problem"], write_fd)
    os.close(write_fd)
    os.set_blocking(read_fd, False)
    reading = _Reading(read_fd, int(config["result_bytes"]) + 4096)
    pidfd = os.pidfd_open(pid)
    deadline = started + float(command["timeout_s"])
    failure: dict[str, str] | None = None
    exited = False
    while not (exited or reading.over):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            failure = {"kind": "timeout", "reason": f"no answer within {command['timeout_s']} s"}
            break
        watched = [pidfd] if reading.eof else [read_fd, pidfd]
        ready, _, _ = select.select(watched, [], [], remaining)
        if read_fd in ready:
            reading.read_available()
        if pidfd in ready:
            exited = True
            reading.read_available()  # what the child wrote before exiting is in the pipe already
    agent_ms = (time.monotonic() - started) * 1000
    if reading.over:
        failure = {"kind": "output_limit", "reason": f"the answer exceeds {config['result_bytes']} bytes"}
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    _, status, usage = os.wait4(pid, 0)
    os.close(pidfd)
    os.close(read_fd)
    scratch = config.get("scratch_dir")
    clean = _kill_the_rest(config, pid) and (not scratch or _wipe(scratch))
    payload = b"" if failure else bytes(reading.data)
    cpu_s = usage.ru_utime + usage.ru_stime
    if failure is None and not payload:
        failure = _failure_from_status(status, cpu_s, int(config["cpu_s"]))
    header = {"type": "result", "nonce": command["nonce"], "payload_bytes": len(payload), "failure": failure,
              "exit": _exit_description(status), "agent_ms": agent_ms, "cpu_s": cpu_s,
              "max_rss_kb": usage.ru_maxrss, "clean": clean}
    return header, payload


def _warm_up(modules: list[str]) -> dict[str, str]:
    failed: dict[str, str] = {}
    for name in modules:
        try:
            __import__(name)
        except BaseException as exc:
            failed[name] = _describe(exc)
    return failed


def _compile_agent(path: str) -> tuple[types.CodeType | None, str | None]:
    try:
        with open(path, "rb") as handle:
            return compile(handle.read(), path, "exec", dont_inherit=True), None
    except MemoryError:
        return None, "compiling the agent file ran out of memory"
    except BaseException as exc:
        return None, f"the agent file does not compile: {_describe(exc)}"


def main() -> None:
    config: dict[str, Any] = json.loads(sys.argv[1])
    # The loader needed it to find libpython at its sandbox path; the agent gets the sandbox environment.
    os.environ.pop("LD_LIBRARY_PATH", None)
    _set_rlimits(config["rlimits"])
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_DUMPABLE, 0)
    protocol_in = os.fdopen(os.dup(0), "rb")
    protocol_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    here = os.path.dirname(os.path.abspath(__file__))
    forwarder = None
    if config.get("proxy_socket"):
        sys.path.insert(0, here)
        from forwarder import start  # a sibling file, mounted next to this one

        forwarder = start(int(config["proxy_port"]), config["proxy_socket"])
    # Only the configured paths and the standard library: not this directory, not the working directory.
    sys.path[:] = [*config["python_paths"], *(p for p in sys.path if p and p != here)]
    warm_failed = _warm_up(config.get("warm_modules", []))
    code, compile_error = _compile_agent(config["agent_path"])
    _write_all(protocol_out, json.dumps({
        "type": "ready", "python": sys.version.split()[0], "warm_failed": warm_failed,
        "agent_error": compile_error}).encode() + b"\n")
    for line in protocol_in:
        command = json.loads(line)
        if command.get("type") != "run":
            break
        header, payload = _run_problem(config, code, compile_error, command)
        # The problem's processes are dead: its connections end now, not inside the next problem's fork.
        if forwarder is not None and not forwarder.drop_connections():
            header["clean"] = False
        _write_all(protocol_out, json.dumps(header).encode() + b"\n" + payload)


if __name__ == "__main__":
    main()
