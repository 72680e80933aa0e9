"""How a sandbox slot is started: bubblewrap namespaces, Docker, or (trusted debugging only) nothing.

Every backend runs the same bootstrap (``bootstrap.py``) with the same limits; they differ in how the
process is isolated and how the proxy is reached:

- ``namespace``: bubblewrap with new PID, network, IPC and UTS namespaces, a read-only view of the
  interpreter's installation at ``/opt/sandbox/python``, the venv's site-packages at
  ``/opt/sandbox/lib``, copies of the bootstrap and SDK made in the run's workspace (as for docker) and
  the agent file, a private size-limited /tmp, and a path-only descriptor of the proxy's Unix socket
  (relayed to ``127.0.0.1:PORT`` by the bootstrap, which connects through ``/proc/self/fd``). The
  bootstrap, the SDK and the agent file are not bind-mounted:
  bubblewrap copies each file's bytes from a descriptor into a read-only file of its own (``--ro-bind-data``),
  so no mount source names the run's workspace. Every mount lands at a neutral path, so the command line, the
  mount table's mount points, ``sys.path``, ``sys.executable`` and every ``__file__`` name no host
  virtualenv, interpreter or repository path (the interpreter's own run path is set by
  ``LD_LIBRARY_PATH``, since a shared build's RUNPATH names its host prefix), and the interpreter and
  site-packages are mounted from a hard-linked mirror (``runtime``), so neither do the mount sources
  ``/proc/self/mountinfo`` shows. As
  root, each slot runs under its own unprivileged uid (``setpriv``; leased per run host-wide, see
  ``uids``) so ``RLIMIT_NPROC`` holds; otherwise bubblewrap maps the caller into a user namespace. The
  bootstrap itself is the PID namespace's pid 1 (``--as-pid-1``): no bubblewrap init stays inside whose
  ``/proc/1/cmdline`` would show the agent its host paths (the sources of every mount).
- ``docker``: the same layout in a container of the ``docker/sandbox`` image with ``--network none``,
  a read-only root, cgroup memory and pids limits.
- ``none``: a plain subprocess with rlimits, reaching the proxy over loopback TCP. No isolation.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, Protocol

import structlog

from shoppingbench.proxy.server import Channel, ChannelTransport
from shoppingbench.sandbox import runtime
from shoppingbench.sandbox.limits import SandboxLimits

log = structlog.get_logger(__name__)

BackendName = Literal["namespace", "docker", "none"]

HERE: Final = Path(__file__).resolve().parent
BOOTSTRAP: Final = HERE / "bootstrap.py"
FORWARDER: Final = HERE / "forwarder.py"
SDK_DIR: Final = HERE.parent / "agent_sdk"
COMPAT_SRC: Final = SDK_DIR / "compat" / "src"

# Paths inside a namespace or Docker sandbox.
BOOT_DIR: Final = "/sandbox/boot"
SDK_ROOT: Final = "/sandbox/sdk"
AGENT_PATH: Final = "/sandbox/agent/agent.py"
PROXY_SOCKET: Final = "/run/proxy.sock"
PROXY_PORT: Final = 8765
SANDBOX_PYTHON: Final = "/opt/sandbox/python"
"""Where the namespace backend mounts the interpreter's installation (``sys.base_prefix``)."""
SANDBOX_LIB: Final = "/opt/sandbox/lib"
"""Where the namespace backend mounts each site-packages directory."""
DOCKER_PYTHON: Final = "/opt/venv/bin/python3"
DOCKER_SITE_PACKAGES: Final = "/opt/venv/lib/python3.11/site-packages"

WARM_MODULES: Final = ("json", "re", "httpx", "httpcore", "h11", "anyio", "certifi", "importlib.resources",
                       "encodings.idna", "shoppingbench.agent_sdk", "src.agent.agent_interface",
                       "src.agent.proxy_client")
"""Imported once per slot before any problem, so each problem's fork starts with them loaded (httpx
imports its transport modules lazily, on the first client: ~30 ms that every problem would pay)."""


@dataclass(frozen=True)
class SlotSpec:
    """Everything a backend needs to start slot ``index`` of a run."""

    run_id: str
    index: int
    agent_file: Path
    """Host path of the run's read-only copy of the agent file."""
    workspace: Path
    """A host directory private to this run (the ``none`` backend builds its SDK view there)."""
    channel: Channel
    limits: SandboxLimits
    agent_env: dict[str, str]
    """``SANDBOX_*`` variables for the agent; nothing else of the host environment goes in."""
    uid: int


def sandbox_environment(spec: SlotSpec, home: str, proxy_url: str) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
            "SANDBOX_PROXY_URL": proxy_url, **spec.agent_env}


def bootstrap_config(spec: SlotSpec, *, agent_path: str, python_paths: list[str], proxy_socket: str | None,
                     isolated: bool, with_nproc: bool) -> str:
    """The bootstrap's argument. Isolated sandboxes have a private /tmp (nothing is mounted under it),
    emptied after every problem."""
    config: dict[str, Any] = {
        "agent_path": agent_path, "python_paths": python_paths, "proxy_socket": proxy_socket,
        "scratch_dir": "/tmp" if isolated else None,
        "proxy_port": PROXY_PORT, "isolated": isolated, "rlimits": spec.limits.rlimits(with_nproc=with_nproc),
        "cpu_s": spec.limits.effective_cpu_s, "result_bytes": spec.limits.result_bytes,
        "warm_modules": list(WARM_MODULES),
    }
    return json.dumps(config)


class SandboxUnavailable(RuntimeError):
    """The chosen backend cannot run on this host; the message says what to install or choose."""


class Backend(Protocol):
    name: BackendName
    transport: ChannelTransport
    isolated: bool

    def check(self) -> None:
        """Raise :class:`SandboxUnavailable` if this backend cannot run here."""

    def command(self, spec: SlotSpec) -> list[str]: ...

    def environment(self, spec: SlotSpec) -> dict[str, str]:
        """The environment of the launched process."""

    def kill(self, spec: SlotSpec, process: subprocess.Popen[bytes]) -> None:
        """Kill the slot and everything in it."""

    def inherited_fds(self, spec: SlotSpec) -> tuple[int, ...]:
        """The file descriptors the last :meth:`command` for ``spec`` names, to be passed to the launched
        process; the caller closes them once it is launched (or could not be)."""


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _code_mounts(spec: SlotSpec, code: Path | None = None) -> list[tuple[str, str]]:
    """(host path, sandbox path) of the bootstrap, the SDK and the agent file; all mounted read-only.
    ``code``: a directory of copies (:func:`_staged_code`) to mount instead of the installed package."""
    bootstrap, forwarder, sdk = (BOOTSTRAP, FORWARDER, SDK_DIR) if code is None else (
        code / BOOTSTRAP.name, code / FORWARDER.name, code / SDK_DIR.name)
    return [(str(bootstrap), f"{BOOT_DIR}/bootstrap.py"), (str(forwarder), f"{BOOT_DIR}/forwarder.py"),
            (str(sdk), f"{SDK_ROOT}/shoppingbench/agent_sdk"), (str(sdk / COMPAT_SRC.relative_to(SDK_DIR)),
                                                                f"{SDK_ROOT}/src"),
            (str(spec.agent_file), AGENT_PATH)]


def _data_files(spec: SlotSpec, code: Path) -> list[tuple[Path, str]]:
    """(host file, sandbox path) of every file of the bootstrap, the forwarder, the SDK (under both its
    package and its ``src`` compatibility path) and the agent: what the namespace sandbox is given the
    bytes of (``--ro-bind-data``) rather than bind mounts, whose sources the mount table would name."""
    files: list[tuple[Path, str]] = []
    for source, target in _code_mounts(spec, code):
        root = Path(source)
        if root.is_dir():
            files += [(path, f"{target}/{path.relative_to(root)}") for path in sorted(root.rglob("*"))
                      if path.is_file() and "__pycache__" not in path.parts]
        else:
            files.append((root, target))
    return files


def _staged_code(workspace: Path) -> Path:
    """Copies of the bootstrap, the forwarder and the SDK in the run's workspace, made once per run.

    Both isolating backends mount these, never the repository: a bind mount's source shows in the
    sandbox's ``/proc/self/mountinfo``. And the docker engine resolves bind-mount sources on its own
    host: a validator in a container has its package where the host has nothing, but its workspace
    (under ``TMPDIR``) can be a host directory mounted at the same path (docker/compose.yaml), so
    everything mounted lives there.
    """
    staged = workspace / "code"
    if staged.is_dir():
        return staged
    scratch = Path(tempfile.mkdtemp(prefix="code-", dir=workspace))
    shutil.copy2(BOOTSTRAP, scratch / BOOTSTRAP.name)
    shutil.copy2(FORWARDER, scratch / FORWARDER.name)
    shutil.copytree(SDK_DIR, scratch / SDK_DIR.name, ignore=shutil.ignore_patterns("__pycache__"))
    scratch.chmod(0o755)
    try:
        scratch.rename(staged)
    except OSError:  # another slot of the run staged it first
        shutil.rmtree(scratch, ignore_errors=True)
    return staged


def _parent_dirs(targets: list[str]) -> list[str]:
    """``--dir`` arguments creating every mount target's missing ancestors world-readable (bwrap would
    otherwise create them 0700, unreadable by the sandbox's unprivileged uid)."""
    ancestors: set[str] = set()
    for target in targets:
        parent = Path(target).parent
        while str(parent) != "/":
            ancestors.add(str(parent))
            parent = parent.parent
    argv: list[str] = []
    for directory in sorted(ancestors, key=lambda d: (d.count("/"), d)):
        if directory != "/usr":
            argv += ["--perms", "0755", "--dir", directory]
    return argv


def _host_python() -> tuple[str, str, list[str]]:
    """The real interpreter, its installation (which holds it and the standard library), and the
    site-packages to import from."""
    interpreter = os.path.realpath(sys.executable)
    site_packages = list(dict.fromkeys(sysconfig.get_path(name) for name in ("purelib", "platlib")))
    return interpreter, os.path.realpath(sys.base_prefix), site_packages


def _neutral_python() -> tuple[str, list[tuple[str, str]], list[str]]:
    """The interpreter's path inside the namespace sandbox, the (host, sandbox) mounts that put the
    installation at :data:`SANDBOX_PYTHON` and each site-packages under :data:`SANDBOX_LIB`, and the
    sandbox's site-packages paths, in order. The host side is the hard-linked mirror (``runtime``) where
    one can be made, so not even the mount table names the originals."""
    interpreter, prefix, site_packages = _host_python()
    if not Path(interpreter).is_relative_to(prefix):
        raise SandboxUnavailable(f"the interpreter {interpreter} is not inside its installation {prefix}")
    mounted = [str(runtime.mirror(Path(source)) or source) for source in [prefix, *site_packages]]
    inside = [f"{SANDBOX_LIB}/site-packages" + (f"-{i}" if i else "") for i in range(len(site_packages))]
    mounts = list(zip(mounted, [SANDBOX_PYTHON, *inside], strict=True))
    return f"{SANDBOX_PYTHON}/{Path(interpreter).relative_to(prefix)}", mounts, inside


class NamespaceBackend:
    name: BackendName = "namespace"
    transport: ChannelTransport = "unix"
    isolated = True

    def __init__(self, bwrap: str = "bwrap", setpriv: str = "setpriv") -> None:
        self.bwrap = shutil.which(bwrap) or bwrap
        self.setpriv = shutil.which(setpriv) or setpriv
        self.as_root = os.geteuid() == 0
        self._fds: dict[tuple[str, int], tuple[int, ...]] = {}
        self._fds_lock = threading.Lock()

    def inherited_fds(self, spec: SlotSpec) -> tuple[int, ...]:
        with self._fds_lock:
            return self._fds.pop((spec.run_id, spec.index), ())

    def _open_data(self, spec: SlotSpec, files: list[tuple[Path, str]],
                   socket: Path | None) -> tuple[list[str], int | None]:
        """``--ro-bind-data`` arguments giving the sandbox ``files`` (world-readable, read-only), each from
        a descriptor opened now and kept for :meth:`inherited_fds`, and a path-only descriptor of the
        proxy's ``socket`` (if any) that the sandbox inherits."""
        fds: list[int] = []
        argv: list[str] = []
        try:
            for source, target in files:
                fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
                fds.append(fd)
                argv += ["--perms", "0444", "--ro-bind-data", str(fd), target]
            socket_fd = None if socket is None else os.open(socket, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        if socket_fd is not None:
            fds.append(socket_fd)
        with self._fds_lock:
            for fd in self._fds.pop((spec.run_id, spec.index), ()):  # a command never launched
                os.close(fd)
            self._fds[(spec.run_id, spec.index)] = tuple(fds)
        return argv, socket_fd

    def check(self) -> None:
        if shutil.which(self.bwrap) is None:
            raise SandboxUnavailable("bubblewrap (bwrap) is not installed: `apt-get install bubblewrap`, or "
                                     "choose --sandbox docker")
        if self.as_root and shutil.which(self.setpriv) is None:
            raise SandboxUnavailable("setpriv (util-linux) is not installed: `apt-get install util-linux`")
        if not SDK_DIR.is_dir():
            raise SandboxUnavailable(f"the agent SDK is missing at {SDK_DIR}")

    def environment(self, spec: SlotSpec) -> dict[str, str]:
        return {**sandbox_environment(spec, "/tmp", f"http://127.0.0.1:{PROXY_PORT}"),
                "LD_LIBRARY_PATH": f"{SANDBOX_PYTHON}/lib"}

    def command(self, spec: SlotSpec) -> list[str]:
        interpreter, python_mounts, site_packages = _neutral_python()
        argv = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--as-pid-1",
                "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--hostname", "sandbox"]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(top):
                argv += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                argv += ["--ro-bind", top, top]
        argv += ["--ro-bind", "/usr", "/usr"]
        # The mount table's fourth field (mountinfo's root) names each bind mount's source: our code and
        # the agent file come in as bytes (copies in the run's workspace, not the repository's files).
        # The proxy's socket is not mounted either (its mount would name the host's socket directory): the
        # bootstrap, pid 1 and not dumpable, inherits a path-only descriptor of it and connects through
        # /proc/self/fd; the agents it forks keep no descriptor but their answer pipe.
        data = _data_files(spec, _staged_code(spec.workspace))
        argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(spec.limits.tmp_bytes),
                 "--tmpfs", "/tmp"]
        argv += _parent_dirs([target for _, target in [*python_mounts, *data]])
        for source, target in python_mounts:
            argv += ["--ro-bind", source, target]
        data_argv, socket_fd = self._open_data(spec, data, spec.channel.unix_path)
        argv += [*data_argv, "--chdir", "/tmp"]
        config = bootstrap_config(spec, agent_path=AGENT_PATH, python_paths=[SDK_ROOT, *site_packages],
                                  proxy_socket=None if socket_fd is None else f"/proc/self/fd/{socket_fd}",
                                  isolated=True, with_nproc=self.as_root)
        python = [interpreter, "-I", "-S", "-B", f"{BOOT_DIR}/bootstrap.py", config]
        if self.as_root:
            # A uid of its own per slot: RLIMIT_NPROC is not enforced for root, and slots cannot signal or
            # trace each other. bwrap keeps only what setpriv needs to switch to it.
            return [*argv, "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                    self.setpriv, f"--reuid={spec.uid}", f"--regid={spec.uid}", "--clear-groups",
                    "--no-new-privs", "--inh-caps=-all", *python]
        return [*argv, "--unshare-user", "--uid", "65534", "--gid", "65534", "--", *python]

    def kill(self, spec: SlotSpec, process: subprocess.Popen[bytes]) -> None:
        # The bootstrap is the PID namespace's pid 1 and dies with bwrap, its parent (--die-with-parent);
        # the kernel then kills every process of the namespace.
        _kill_group(process)


class DockerBackend:
    name: BackendName = "docker"
    transport: ChannelTransport = "unix"
    isolated = True

    def __init__(self, image: str, docker: str = "docker") -> None:
        self.image = image
        self.docker = docker

    def check(self) -> None:
        if shutil.which(self.docker) is None:
            raise SandboxUnavailable("the docker CLI is not installed; use --sandbox namespace")
        probe = subprocess.run([self.docker, "image", "inspect", self.image], capture_output=True,
                               check=False)
        if probe.returncode != 0:
            raise SandboxUnavailable(f"docker image {self.image} is not available: build it with "
                                     f"`docker build -t {self.image} docker/sandbox`")

    def inherited_fds(self, spec: SlotSpec) -> tuple[int, ...]:
        return ()

    def container_name(self, spec: SlotSpec) -> str:
        # The slot's uid, leased host-wide for the run, keeps names apart when runs overlap: run ids share
        # their first characters ("qualifying-...") and two runs of one process both have a slot 0.
        return f"sb-{spec.run_id[:12]}-{spec.uid}"

    def environment(self, spec: SlotSpec) -> dict[str, str]:
        # The docker CLI itself needs the host environment (DOCKER_HOST, ...); the container gets only -e.
        return dict(os.environ)

    def command(self, spec: SlotSpec) -> list[str]:
        limits = spec.limits
        argv = [self.docker, "run", "--rm", "-i", "--name", self.container_name(spec),
                "--network", "none", "--read-only", "--ipc", "none",
                # The runner reads output from the attached stream; an engine-side log copy of it would
                # let an agent fill the host's disk (and slows a flood down to the logger's pace).
                "--log-driver", "none",
                "--tmpfs", f"/tmp:rw,nosuid,nodev,size={limits.tmp_bytes},mode=1777",
                "--user", f"{spec.uid}:{spec.uid}", "--cap-drop", "ALL",
                "--security-opt", "no-new-privileges",
                "--pids-limit", str(limits.processes),
                "--memory", str(limits.memory_bytes), "--memory-swap", str(limits.memory_bytes),
                "--ulimit", f"nofile={limits.open_files}:{limits.open_files}",
                "--ulimit", f"fsize={limits.tmp_bytes}:{limits.tmp_bytes}", "--ulimit", "core=0",
                "--workdir", "/tmp"]
        for source, target in _code_mounts(spec, _staged_code(spec.workspace)):
            argv += ["-v", f"{source}:{target}:ro"]
        if spec.channel.unix_path is not None:
            argv += ["-v", f"{spec.channel.unix_path}:{PROXY_SOCKET}"]
        # The cgroup (--pids-limit) bounds processes; RLIMIT_NPROC would count the uid across containers.
        config = bootstrap_config(spec, agent_path=AGENT_PATH, python_paths=[SDK_ROOT, DOCKER_SITE_PACKAGES],
                                  proxy_socket=PROXY_SOCKET, isolated=True, with_nproc=False)
        # `env -i`: the agent gets exactly the sandbox environment, not the engine's additions (HOSTNAME)
        # nor the image's ENV; env execs the interpreter, which stays the container's pid 1.
        environment = sandbox_environment(spec, "/tmp", f"http://127.0.0.1:{PROXY_PORT}")
        pairs = [f"{key}={value}" for key, value in environment.items()]
        return [*argv, self.image, "/usr/bin/env", "-i", *pairs,
                DOCKER_PYTHON, "-I", "-S", "-B", f"{BOOT_DIR}/bootstrap.py", config]

    def kill(self, spec: SlotSpec, process: subprocess.Popen[bytes]) -> None:
        # Killing the CLI does not stop the container, so the engine is asked too; the CLI goes first: while
        # it is attached and not read (a flooding agent), the engine's kill waits on the blocked stream.
        _kill_group(process)
        try:
            subprocess.run([self.docker, "kill", self.container_name(spec)], capture_output=True, check=False,
                           timeout=30)
        except subprocess.TimeoutExpired:
            log.warning("sandbox_docker_kill_timeout", container=self.container_name(spec))


class NoSandboxBackend:
    """Runs the agent as a plain subprocess: for debugging agents you trust, never for miners' code."""

    name: BackendName = "none"
    transport: ChannelTransport = "tcp"
    isolated = False

    def check(self) -> None:
        log.warning("sandbox_disabled", detail="--sandbox none runs the agent WITHOUT isolation: it can read "
                    "your files and reach the network. Use it only for agents you trust.")

    def inherited_fds(self, spec: SlotSpec) -> tuple[int, ...]:
        return ()

    def sdk_root(self, spec: SlotSpec) -> Path:
        """The sandbox's SDK layout, as symlinks in the run's workspace."""
        root = spec.workspace / "sdk"
        (root / "shoppingbench").mkdir(parents=True, exist_ok=True)
        for link, target in ((root / "shoppingbench" / "agent_sdk", SDK_DIR), (root / "src", COMPAT_SRC)):
            with contextlib.suppress(FileExistsError):  # another slot of the run made it already
                link.symlink_to(target, target_is_directory=True)
        return root

    def environment(self, spec: SlotSpec) -> dict[str, str]:
        home = spec.workspace / f"home-{spec.index}"
        home.mkdir(exist_ok=True)
        return sandbox_environment(spec, str(home), spec.channel.url)

    def command(self, spec: SlotSpec) -> list[str]:
        interpreter, _, site_packages = _host_python()
        config = bootstrap_config(spec, agent_path=str(spec.agent_file),
                                  python_paths=[str(self.sdk_root(spec)), *site_packages], proxy_socket=None,
                                  isolated=False, with_nproc=False)
        return [interpreter, "-I", "-S", "-B", str(BOOTSTRAP), config]

    def kill(self, spec: SlotSpec, process: subprocess.Popen[bytes]) -> None:
        _kill_group(process)


def make_backend(name: BackendName, *, docker_image: str = "shopping-arena-sandbox:latest") -> Backend:
    if name == "namespace":
        return NamespaceBackend()
    if name == "docker":
        return DockerBackend(docker_image)
    return NoSandboxBackend()
