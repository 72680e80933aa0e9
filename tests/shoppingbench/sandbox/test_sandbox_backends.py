"""The command lines the backends build from one limits config. Docker cannot run here, so its argv is
checked as data; the namespace argv is also exercised for real by the other sandbox tests."""

from __future__ import annotations

import json
import os
import socket
import sys
import sysconfig
from pathlib import Path

import pytest

from shoppingbench.proxy.server import Channel
from shoppingbench.sandbox import runtime
from shoppingbench.sandbox.backends import (
    AGENT_PATH,
    BOOTSTRAP,
    DOCKER_PYTHON,
    FORWARDER,
    PROXY_SOCKET,
    SANDBOX_LIB,
    SANDBOX_PYTHON,
    SDK_DIR,
    SDK_ROOT,
    DockerBackend,
    NamespaceBackend,
    NoSandboxBackend,
    SlotSpec,
)
from shoppingbench.sandbox.limits import MiB, SandboxLimits
from shoppingbench.settings import HarnessSettings

REPOSITORY = Path(__file__).resolve().parents[3]
LIMITS = SandboxLimits(timeout_s=30, memory_bytes=1536 * MiB, processes=40, output_bytes=4096,
                       result_bytes=2 * MiB, tmp_bytes=32 * MiB, open_files=128)


def _spec(tmp_path: Path) -> SlotSpec:
    socket_path = tmp_path / "slot-3.sock"
    return SlotSpec(run_id="0123456789abcdef0123", index=3, agent_file=tmp_path / "agent.py",
                    workspace=tmp_path, channel=Channel(key=str(socket_path), unix_path=socket_path,
                                                        url="http://proxy"),
                    limits=LIMITS, uid=61003,
                    agent_env={"SANDBOX_DEFAULT_MODEL": "m1", "SANDBOX_ALLOWED_MODELS": "m1,m2"})


def _option_values(argv: list[str], option: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == option]


def test_docker_argv_carries_every_limit_and_no_network(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    argv = DockerBackend("arena-sandbox:test").command(spec)
    assert argv[:4] == ["docker", "run", "--rm", "-i"]
    assert _option_values(argv, "--network") == ["none"] and "--read-only" in argv
    assert _option_values(argv, "--user") == ["61003:61003"] and _option_values(argv, "--cap-drop") == ["ALL"]
    assert _option_values(argv, "--security-opt") == ["no-new-privileges"]
    assert _option_values(argv, "--pids-limit") == ["40"]
    assert _option_values(argv, "--memory") == [str(1536 * MiB)] == _option_values(argv, "--memory-swap")
    assert _option_values(argv, "--tmpfs") == [f"/tmp:rw,nosuid,nodev,size={32 * MiB},mode=1777"]
    assert set(_option_values(argv, "--ulimit")) == {"nofile=128:128", f"fsize={32 * MiB}:{32 * MiB}",
                                                     "core=0"}
    assert _option_values(argv, "--name") == ["sb-0123456789ab-61003"]
    image_at = argv.index("arena-sandbox:test")
    assert argv[image_at + 1:image_at + 3] == ["/usr/bin/env", "-i"] and "-e" not in argv[:image_at]
    python_at = argv.index(DOCKER_PYTHON)
    env = dict(value.split("=", 1) for value in argv[image_at + 3:python_at])
    assert env == {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
                   "LANG": "C.UTF-8", "SANDBOX_PROXY_URL": "http://127.0.0.1:8765",
                   "SANDBOX_DEFAULT_MODEL": "m1", "SANDBOX_ALLOWED_MODELS": "m1,m2"}
    volumes = _option_values(argv, "-v")
    assert f"{spec.agent_file}:{AGENT_PATH}:ro" in volumes
    # Every mounted source is in the run's workspace (which a containerised validator shares with the
    # engine's host at the same path): copies of the bootstrap, forwarder and SDK, the agent, the socket.
    assert f"{spec.workspace}/code/agent_sdk:/sandbox/sdk/shoppingbench/agent_sdk:ro" in volumes
    assert all(v.startswith(f"{spec.workspace}/") for v in volumes)  # the test's socket is in it too
    staged = spec.workspace / "code"
    assert (staged / "bootstrap.py").read_bytes() == BOOTSTRAP.read_bytes()
    assert (staged / "forwarder.py").read_bytes() == FORWARDER.read_bytes()
    assert (staged / "agent_sdk" / "compat" / "src").is_dir()
    assert DockerBackend("arena-sandbox:test").command(spec) == argv  # staged once per run, then reused
    assert f"{spec.channel.unix_path}:{PROXY_SOCKET}" in volumes  # the only writable mount: a socket
    assert all(v.endswith(":ro") for v in volumes if not v.endswith(PROXY_SOCKET))
    assert argv[python_at:python_at + 3] == ["/opt/venv/bin/python3", "-I", "-S"]
    config = json.loads(argv[-1])
    assert config["isolated"] and config["proxy_socket"] == PROXY_SOCKET and "NPROC" not in config["rlimits"]
    assert config["rlimits"]["AS"] == 1536 * MiB and config["cpu_s"] == 30


def test_namespace_argv_isolates_and_mounts_read_only(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    spec.agent_file.write_text("def agent_main(problem):\n    return []\n")
    assert spec.channel.unix_path is not None
    proxy = socket.socket(socket.AF_UNIX)
    proxy.bind(str(spec.channel.unix_path))
    backend = NamespaceBackend()
    argv = backend.command(spec)
    fds = backend.inherited_fds(spec)
    try:
        for flag in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent",
                     "--new-session"):
            assert flag in argv
        assert "--bind" not in argv  # every host path is read-only; only /tmp (a tmpfs) is writable
        binds = {argv[i + 1]: argv[i + 2] for i, arg in enumerate(argv) if arg == "--ro-bind"}
        config = json.loads(argv[-1])
        # The proxy's socket is not mounted (its source would name the host's socket directory): the
        # bootstrap inherits a path-only descriptor of it and connects through /proc/self/fd.
        assert str(spec.channel.unix_path) not in binds and PROXY_SOCKET not in argv
        socket_fd = int(config["proxy_socket"].removeprefix("/proc/self/fd/"))
        assert os.path.samestat(os.stat(f"/proc/self/fd/{socket_fd}"), os.stat(spec.channel.unix_path))
        # Our code (copies of the bootstrap and the SDK) and the agent come in as bytes, one read-only file
        # each from a descriptor passed to bwrap: no mount source names the workspace or the repository.
        data = {argv[i + 2]: int(argv[i + 1]) for i, arg in enumerate(argv) if arg == "--ro-bind-data"}
        assert sorted([*data.values(), socket_fd]) == sorted(fds) and backend.inherited_fds(spec) == ()
        assert all(argv[i - 2:i] == ["--perms", "0444"]
                   for i, arg in enumerate(argv) if arg == "--ro-bind-data")
        staged = spec.workspace / "code"
        assert (staged / "bootstrap.py").read_bytes() == BOOTSTRAP.read_bytes()
        assert {AGENT_PATH, "/sandbox/boot/bootstrap.py", "/sandbox/boot/forwarder.py",
                f"{SDK_ROOT}/shoppingbench/agent_sdk/__init__.py",
                f"{SDK_ROOT}/src/agent/proxy_client.py"} <= set(data)
        assert os.read(data[AGENT_PATH], 100) == spec.agent_file.read_bytes()
        # ... the interpreter and site-packages at neutral paths, mounted from their hard-linked mirrors,
        # so the mount table names no venv nor interpreter path; of the system its read-only basics.
        python, site = (runtime.mirror(Path(p)) for p in (os.path.realpath(sys.base_prefix),
                                                         sysconfig.get_path("purelib")))
        assert python is not None and site is not None
        assert binds[str(python)] == SANDBOX_PYTHON and binds[str(site)] == f"{SANDBOX_LIB}/site-packages"
        expected = {"/usr", str(python), str(site)}
        assert set(binds) - expected <= {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}
        assert not any(str(REPOSITORY) in arg or sys.prefix in arg for arg in argv[argv.index("--"):])
        assert _option_values(argv, "--size") == [str(32 * MiB)]
        assert _option_values(argv, "--tmpfs") == ["/tmp"]
        if backend.as_root:
            assert "--reuid=61003" in argv and "--no-new-privs" in argv
            assert config["rlimits"]["NPROC"] == 40
        assert config["isolated"] and config["python_paths"][0] == "/sandbox/sdk"
        assert backend.environment(spec)["SANDBOX_PROXY_URL"] == "http://127.0.0.1:8765"
    finally:
        proxy.close()
        for fd in fds:
            os.close(fd)


def test_the_unsandboxed_backend_uses_the_channel_url_and_no_forwarder(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    tcp = SlotSpec(**{**spec.__dict__, "channel": Channel(key="127.0.0.1:4000", unix_path=None,
                                                          url="http://127.0.0.1:4000")})
    backend = NoSandboxBackend()
    config = json.loads(backend.command(tcp)[-1])
    assert config["proxy_socket"] is None and not config["isolated"] and "NPROC" not in config["rlimits"]
    env = backend.environment(tcp)
    assert env["SANDBOX_PROXY_URL"] == "http://127.0.0.1:4000" and env["HOME"].startswith(str(tmp_path))
    assert (tmp_path / "sdk" / "src").resolve() == SDK_DIR / "compat" / "src"


def test_limits_come_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_SANDBOX_TIMEOUT_S", "12.5")
    monkeypatch.setenv("ARENA_SANDBOX_MEMORY_MB", "700")
    limits = SandboxLimits.from_settings(HarnessSettings())
    assert (limits.timeout_s, limits.memory_bytes, limits.effective_cpu_s) == (12.5, 700 * MiB, 13)


def test_the_runtime_limits_default_to_the_rule_settings() -> None:
    """``SandboxLimits`` (bytes) takes its defaults from ``SandboxRules`` (the fingerprinted settings)."""
    assert SandboxLimits() == SandboxLimits.from_settings(HarnessSettings(_env_file=None))
