"""Hostile agents in the namespace and docker sandboxes: each ends as a recorded failure with a reason,
the run goes on, and the host is unaffected (no escaped connection, file or process)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoppingbench.problems.models import public_id
from shoppingbench.sandbox.backends import BackendName
from shoppingbench.search.engine import BM25SearchEngine
from tests.sandbox_support import (
    HOSTILE_AGENTS,
    SLOT_UIDS,
    TIGHT,
    leftover_processes,
    problem,
    run_agent,
    sandbox_backends,
)

pytestmark = pytest.mark.parametrize("backend", sandbox_backends())


@pytest.fixture(scope="module")
def engine(small_engine: BM25SearchEngine) -> BM25SearchEngine:
    return small_engine


@pytest.fixture(autouse=True)
def no_process_survives() -> Iterator[None]:
    yield
    assert leftover_processes(SLOT_UIDS) == [], "a sandbox process outlived its run"


class _Listener:
    """A real TCP server on the host that records every connection it gets."""

    def __init__(self, host: str) -> None:
        self.sock = socket.create_server((host, 0))
        self.sock.settimeout(0.2)
        self.address = f"{host}:{self.sock.getsockname()[1]}"
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


def _host_address() -> str:
    """This host's first non-loopback IPv4 address (falls back to loopback when it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            return str(probe.getsockname()[0])
        except OSError:
            return "127.0.0.1"


def test_outside_addresses_are_unreachable(
        backend: BackendName, engine: BM25SearchEngine) -> None:
    listeners = [_Listener("127.0.0.1"), _Listener(_host_address())]
    try:
        query = ",".join([*(listener.address for listener in listeners), "1.1.1.1:53"])
        (record,) = run_agent(HOSTILE_AGENTS / "network.py", [problem("net", query)], engine, backend=backend)
    finally:
        for listener in listeners:
            listener.close()
    assert [listener.connections for listener in listeners] == [0, 0]
    assert record.failure is not None and record.failure.kind == "crash"
    assert "blocked" in record.failure.reason and "reached" not in record.failure.reason
    assert "dns blocked" in record.failure.reason
    assert not record.score.success


def test_files_and_environment_of_the_host_stay_invisible(
        backend: BackendName, engine: BM25SearchEngine, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    wallet = tmp_path / "wallets" / "miner" / "hotkeys" / "default"
    wallet.parent.mkdir(parents=True)
    wallet.write_text("SECRET-MNEMONIC-abandon-abandon")
    monkeypatch.setenv("ARENA_WALLET_PASSWORD", "SECRET-PASSWORD")
    (record,) = run_agent(HOSTILE_AGENTS / "read_secrets.py", [problem("wallet", str(wallet))], engine,
                          backend=backend)
    assert record.failure is not None and record.failure.kind == "crash"
    reason = record.failure.reason
    assert "FileNotFoundError" in reason and "home=/tmp" in reason
    dumped = record.model_dump_json()
    assert "SECRET" not in dumped and "ARENA_" not in dumped
    # Only what the sandbox is given: the SANDBOX_* variables and a bare minimum.
    assert "SANDBOX_PROXY_URL" in reason and "SANDBOX_DEFAULT_MODEL" in reason


def test_writes_outside_the_private_tmp_fail(
        backend: BackendName, engine: BM25SearchEngine, tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    agent = HOSTILE_AGENTS / "write_outside.py"
    before = agent.read_bytes()
    (record,) = run_agent(agent, [problem("write", str(target))], engine, backend=backend)
    assert record.failure is not None and record.failure.kind == "crash"
    assert "written" not in record.failure.reason
    assert "Read-only file system" in record.failure.reason or "OSError" in record.failure.reason
    assert not any(path.exists() for path in (target, Path("/usr/lib/escaped.txt"), Path("/escaped.txt")))
    assert agent.read_bytes() == before


def test_a_fork_bomb_is_contained_and_the_slot_recovers(
        backend: BackendName, engine: BM25SearchEngine) -> None:
    started = time.monotonic()
    problems = [problem("bomb", "bomb"), problem("calm", "calm")]
    bomb, calm = run_agent(HOSTILE_AGENTS / "fork_bomb.py", problems, engine, backend=backend)
    assert bomb.failure is not None and bomb.failure.kind == "crash"
    assert "BlockingIOError" in bomb.failure.reason
    assert calm.failure is None and len(calm.steps) == 1
    assert time.monotonic() - started < 60
    if os.fork() == 0:  # the host can still fork
        os._exit(0)
    os.wait()


def test_allocating_8_gb_is_a_memory_failure(
        backend: BackendName, engine: BM25SearchEngine) -> None:
    (record,) = run_agent(HOSTILE_AGENTS / "memory_hog.py", [problem("hog", "hog")], engine, backend=backend)
    assert record.failure is not None and record.failure.kind == "memory"
    assert "MemoryError" in record.failure.reason


def test_spinning_forever_times_out_and_leaves_nothing_behind(
        backend: BackendName, engine: BM25SearchEngine) -> None:
    # The CPU limit defaults to the timeout, and a spinner burns a CPU second per second: which of the two
    # fired first would depend on the machine's load. This test is about the wall clock.
    limits = TIGHT.model_copy(update={"timeout_s": 2.0, "cpu_s": 60})
    started = time.monotonic()
    spin, after = run_agent(HOSTILE_AGENTS / "spin.py", [problem("spin", "spin"), problem("after", "after")],
                            engine, limits=limits, backend=backend)
    elapsed = time.monotonic() - started
    assert spin.failure is not None and spin.failure.kind == "timeout"
    assert "2.0 s" in spin.failure.reason
    assert spin.finished_at - spin.started_at < 2.0 + limits.kill_grace_s + 1
    # The next problem in the same slot sees none of the spinner's processes.
    assert after.failure is None and after.steps == [{"other_pids": []}]
    assert elapsed < 30


def test_printing_1_gb_is_an_output_limit_failure(
        backend: BackendName, engine: BM25SearchEngine) -> None:
    started = time.monotonic()
    (record,) = run_agent(HOSTILE_AGENTS / "print_flood.py", [problem("flood", "flood")], engine,
                          backend=backend)
    assert record.failure is not None and record.failure.kind == "output_limit"
    assert str(TIGHT.output_bytes) in record.failure.reason
    assert len(record.stderr_tail) <= TIGHT.stderr_tail_bytes
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(("kind", "failure", "reason"), [
    ("set", "bad_output", "not JSON-serialisable"),
    ("nan", "bad_output", "not JSON-serialisable"),
    ("object", "bad_output", "not JSON-serialisable"),
    ("surrogate", "bad_output", "not JSON-serialisable"),
    ("circular", "bad_output", "Circular reference"),
    ("dict", "bad_output", "got dict"),
    ("ints", "bad_output", "step 0 is a int"),
    ("none", "bad_output", "got NoneType"),
    ("huge", "output_limit", "the limit is"),
    ("junk_fds", "bad_output", "not valid JSON"),
    ("exit", "crash", "exited with status 7"),
    ("raise", "crash", "SystemExit"),
])
def test_junk_answers_are_recorded_failures(
        backend: BackendName, engine: BM25SearchEngine, kind: str, failure: str,
                                            reason: str) -> None:
    (record,) = run_agent(HOSTILE_AGENTS / "bad_output.py", [problem(kind, kind)], engine, backend=backend)
    assert record.failure is not None, record.steps
    assert (record.failure.kind, reason in record.failure.reason) == (failure, True), record.failure
    assert record.steps == [] and not record.score.success and record.score.error == record.failure.reason


def test_forged_log_text_never_reaches_the_verified_log(
        backend: BackendName, engine: BM25SearchEngine) -> None:
    problems = [problem(f"forger-{i}", "forge") for i in range(4)]
    records = run_agent(HOSTILE_AGENTS / "forger.py", problems, engine, workers=2, backend=backend)
    for record in records:
        assert record.failure is None
        # Exactly the two searches this attempt made, each for its own problem's id, nothing forged.
        seen_id = public_id(record.problem_id)
        assert [(c.kind, c.method, c.path, c.params.get("q")) for c in record.proxy_log] == [
            ("search", "GET", "/search/find_product", seen_id),
            ("search", "POST", "/search/find_product", seen_id)]
        assert all(c.model is None for c in record.proxy_log)
        assert '"type": "result"' in record.stderr_tail  # what it printed is only ever agent output
        assert record.steps[0]["proxy_log"][0]["model"] == "gpt-forged"  # untrusted steps, kept as data


def test_an_agent_cannot_freeze_its_bootstrap_and_simply_times_out(
        backend: BackendName, engine: BM25SearchEngine) -> None:
    """The bootstrap is the PID namespace's init: SIGSTOP from inside is ignored, so the bootstrap's own
    wall-clock limit ends the problem (the host's kill of a frozen slot stays as the last resort)."""
    limits = TIGHT.model_copy(update={"timeout_s": 2.0, "kill_grace_s": 1.0})
    stalled, after = run_agent(HOSTILE_AGENTS / "stall_bootstrap.py",
                               [problem("stall", "stall"), problem("after", "after")], engine, limits=limits,
                               backend=backend)
    assert stalled.failure is not None and stalled.failure.kind == "timeout"
    assert "no answer within 2.0 s" in stalled.failure.reason
    assert stalled.finished_at - stalled.started_at < 2.0 + 1.0 + 2
    assert after.failure is None and after.steps == []
