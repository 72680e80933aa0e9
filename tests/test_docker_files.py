"""What can be checked of docker/ without a Docker engine: the compose files' services and wiring, that
every COPY source and bind-mounted file exists, that entrypoints and commands are real CLIs and
settings, and that the sandbox image has a mount point for every bind mount of the docker backend.
Building and running them is scripts/docker-check.sh's job (and the docker-marked tests')."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from neurons.validator import app as validator_app
from neurons.validator_service import ValidatorSettings
from neurons.worker import app as worker_app
from shoppingbench.proxy.server import Channel
from shoppingbench.sandbox.backends import DOCKER_PYTHON, DOCKER_SITE_PACKAGES, DockerBackend, SlotSpec
from shoppingbench.sandbox.limits import MiB, SandboxLimits
from trajectories.settings import StoreSettings

REPO = Path(__file__).resolve().parent.parent
DOCKER = REPO / "docker"
SCRIPTS: dict[str, str] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
# Dockerfile -> its build context, as docker/README.md and the compose file build them.
IMAGES = {"validator": (DOCKER / "validator" / "Dockerfile", REPO),
          "worker": (DOCKER / "worker" / "Dockerfile", REPO),
          "sandbox": (DOCKER / "sandbox" / "Dockerfile", DOCKER / "sandbox"),
          "postgres": (DOCKER / "postgres" / "Dockerfile", DOCKER / "postgres")}


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    logical: list[str] = []
    pending = ""
    for line in dockerfile.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or not stripped:
            continue
        pending += stripped.removesuffix("\\").strip() + " " if stripped.endswith("\\") else stripped
        if not stripped.endswith("\\"):
            logical.append(pending)
            pending = ""
    assert not pending, f"{dockerfile} ends inside a continued line"
    return [(head.upper(), rest.strip()) for head, _, rest in (entry.partition(" ") for entry in logical)]


COMPOSE_FILES = ("compose.yaml", "compose.gpu.yaml", "compose.namespace-sandbox.yaml",
                 "checks/compose.check.yaml")


def _load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DOCKER / name).read_text())
    return loaded


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return _load("compose.yaml")


@pytest.fixture(scope="module")
def gpu() -> dict[str, Any]:
    return _load("compose.gpu.yaml")


def test_compose_has_postgres_and_the_validator_and_the_gpu_file_vllm_and_the_worker(
        compose: dict[str, Any], gpu: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"postgres", "validator"}
    assert set(gpu["services"]) == {"validator", "vllm", "worker"}
    # Compose v1 (Debian's docker-compose) reads both: no top-level name, no `required:` dependencies.
    assert "name" not in compose and "name" not in gpu
    assert gpu["services"]["validator"] == {"depends_on": {"vllm": {"condition": "service_healthy"}}}
    for name in ("vllm", "worker"):
        devices = gpu["services"][name]["deploy"]["resources"]["reservations"]["devices"]
        assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
    assert gpu["services"]["vllm"]["image"].startswith("vllm/vllm-openai:")
    assert "${VLLM_MODEL" in " ".join(gpu["services"]["vllm"]["command"])
    postgres = compose["services"]["postgres"]
    assert postgres["image"] == "${POSTGRES_IMAGE:-postgres:16-bookworm}"
    assert any(v.endswith(":/var/lib/postgresql/data") for v in postgres["volumes"])
    assert postgres["healthcheck"]["test"]
    named = {v.split(":")[0] for loaded in (compose, gpu) for s in loaded["services"].values()
             for v in s.get("volumes", []) if not v.startswith((".", "$", "/", "~"))}
    assert named and set(compose["volumes"]) | set(gpu["volumes"]) >= named


def test_the_validator_reaches_postgres_mounts_the_wallet_read_only_and_runs_agents_in_docker(
        compose: dict[str, Any]) -> None:
    validator = compose["services"]["validator"]
    assert validator["depends_on"]["postgres"]["condition"] == "service_healthy"
    env = validator["environment"]
    for key in ("ARENA_STORE_URL", "ARENA_DATABASE_URL"):
        assert env[key].startswith("postgresql+psycopg://") and "@postgres:5432/" in env[key]
    assert env["ARENA_STORE_URL"] != env["ARENA_DATABASE_URL"]
    wallet = next(v for v in validator["volumes"] if ":/wallets" in v)
    assert wallet.endswith(":/wallets:ro") and env["ARENA_WALLET_PATH"] == "/wallets"
    assert "arena-data:/data" in validator["volumes"] and env["ARENA_HOME"] == "/data"
    assert validator["ports"] == [f"${{API_PORT:-8090}}:{env['ARENA_API_PORT']}"]
    # The docker backend through the host's engine: the socket, and the run workspaces (TMPDIR) on a
    # host directory mounted at the same path, since the engine resolves bind-mount sources on the host.
    assert env["ARENA_SANDBOX"] == "docker"
    assert "/var/run/docker.sock:/var/run/docker.sock" in validator["volumes"]
    share = env["TMPDIR"]
    assert f"{share}:{share}" in validator["volumes"]
    assert "cap_add" not in validator and "security_opt" not in validator


def test_the_namespace_overlay_grants_what_bubblewrap_needs() -> None:
    validator = _load("compose.namespace-sandbox.yaml")["services"]["validator"]
    assert validator["environment"]["ARENA_SANDBOX"] == "namespace" and validator["cap_add"] == ["SYS_ADMIN"]
    assert set(validator["security_opt"]) == {"seccomp=unconfined", "apparmor=unconfined",
                                              "systempaths=unconfined"}


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_every_arena_variable_in_compose_is_a_real_setting(name: str) -> None:
    known = {*ValidatorSettings.model_fields, *ValidatorSettings.FLAT_NAMES, *StoreSettings.model_fields}
    for service_name, service in _load(name)["services"].items():
        for key in service.get("environment", {}):
            if key.startswith("ARENA_"):
                assert key.removeprefix("ARENA_").lower() in known, f"{service_name}: {key} is not a setting"


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_compose_builds_and_bind_mounts_name_files_that_exist(name: str) -> None:
    for service_name, service in _load(name)["services"].items():
        if "build" in service:
            context = (DOCKER / service["build"]["context"]).resolve()
            assert (context / service["build"]["dockerfile"]).is_file(), service_name
            assert (context, context / service["build"]["dockerfile"]) in {
                (c.resolve(), d.resolve()) for d, c in IMAGES.values()}
        for volume in service.get("volumes", []):
            if volume.startswith("."):  # relative to the first file's directory, docker/
                assert (DOCKER / volume.split(":")[0]).exists(), f"{service_name}: {volume}"


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_every_copy_source_exists_in_the_build_context(image: str) -> None:
    dockerfile, context = IMAGES[image]
    copies = [shlex.split(args) for op, args in instructions(dockerfile) if op in ("COPY", "ADD")]
    assert copies, f"{image} copies nothing"
    for words in copies:
        sources = [w for w in words[:-1] if not w.startswith("--")]
        assert sources and all((context / source).exists() for source in sources), words
    ignore = dockerfile.with_name("Dockerfile.dockerignore")
    if ignore.exists():  # a COPY source the ignore file excludes would be missing at build time
        kept = {line[1:] for line in ignore.read_text().splitlines() if line.startswith("!")}
        assert all(w in kept for words in copies for w in words[:-1] if not w.startswith("--")), kept


@pytest.mark.parametrize(("image", "cli"), [("validator", validator_app), ("worker", worker_app)])
def test_entrypoint_and_commands_are_declared_console_scripts_that_accept_them(
        compose: dict[str, Any], gpu: dict[str, Any], image: str, cli: Any) -> None:
    steps = dict(instructions(IMAGES[image][0]))
    entrypoint = json.loads(steps["ENTRYPOINT"])
    assert entrypoint[:2] == ["tini", "--"] and entrypoint[2] in SCRIPTS
    assert SCRIPTS[entrypoint[2]].startswith(f"neurons.{image}:")
    service = (compose if image == "validator" else gpu)["services"][image]
    for command in (json.loads(steps["CMD"]), service["command"]):
        args = [*command, "--help"] if command != ["--help"] else command
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, (command, result.output)


def test_the_sandbox_image_has_a_mount_point_for_every_docker_backend_mount(tmp_path: Path) -> None:
    limits = SandboxLimits(timeout_s=30, memory_bytes=512 * MiB, processes=40, output_bytes=4096,
                           result_bytes=2 * MiB, tmp_bytes=32 * MiB, open_files=128)
    spec = SlotSpec(run_id="0123456789abcdef", index=0, agent_file=tmp_path / "agent.py", workspace=tmp_path,
                    channel=Channel(key="k", unix_path=tmp_path / "s.sock", url="http://proxy"),
                    limits=limits, uid=61000, agent_env={})
    argv = DockerBackend("img").command(spec)
    targets = [argv[i + 1].split(":")[1] for i, arg in enumerate(argv[:-1]) if arg == "-v"]
    steps = instructions(IMAGES["sandbox"][0])
    created: set[str] = set()
    for op, args in steps:
        if op == "RUN":
            for command in re.split(r"&&|;", args):
                words = shlex.split(command, comments=True)
                if words[:2] == ["mkdir", "-p"] or words[:1] == ["touch"]:
                    created.update(w for w in words[1:] if w.startswith("/"))
                if words[:3] == ["python3", "-m", "venv"]:
                    created.add(words[3])
    assert targets and all(target in created for target in targets), (targets, created)
    # The interpreter the argv runs: the image's virtualenv, on the Python version of the default base.
    venv = str(Path(DOCKER_PYTHON).parents[1])
    assert venv in created and DOCKER_SITE_PACKAGES.startswith(f"{venv}/lib/")
    base = next(args for op, args in steps if op == "ARG" and args.startswith("BASE_IMAGE="))
    version = DOCKER_SITE_PACKAGES.split("/")[-2].removeprefix("python")
    assert base.startswith(f"BASE_IMAGE=python:{version}-")
