"""``vllm serve`` for the length of a ``with`` block: how the sampling stages roll out a checkpoint on GPUs.

vLLM is started with Qwen3's parsers (``--enable-auto-tool-choice --tool-call-parser hermes
--reasoning-parser qwen3``), so its answers carry ``tool_calls`` and ``reasoning_content`` exactly as the
loopback HF server (:mod:`hf_server`) gives them on CPU. Its output goes to a log file whose tail is
quoted when it fails to start. The process runs in its own session and is stopped with its children (the
engine core and workers) on exit. A LoRA adapter directory is merged into its base model first, since the
rolled-out model is the trained one.

vLLM is the project's ``gpu`` extra (``pip install .[gpu]``: ``vllm`` pinned to the release whose torch pin
is the project's torch). :func:`choose_backend` picks the serving backend of rollouts and held-out
evaluation: ``auto`` is ``vllm`` where CUDA and the ``vllm`` executable are both present (on ``PATH`` or
next to this interpreter, as a virtualenv installs it), else ``hf`` (transformers' generate, CPU).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import httpx
import structlog

from trajectories.training.serving.checkpoints import ADAPTER_CONFIG, load_causal_lm

log = structlog.get_logger(__name__)

QWEN3_PARSER_ARGS = ("--enable-auto-tool-choice", "--tool-call-parser", "hermes",
                     "--reasoning-parser", "qwen3")
STOP_GRACE_S = 30.0
LOG_TAIL_LINES = 30


ServingBackend = Literal["auto", "hf", "vllm"]


class VllmError(RuntimeError):
    """vLLM could not be started; the message quotes its log."""


def vllm_executable(name: str = "vllm") -> str | None:
    """The ``vllm`` command: on ``PATH``, else next to this interpreter (an unactivated virtualenv)."""
    found = shutil.which(name)
    if found is not None:
        return found
    sibling = Path(sys.executable).parent / name
    return str(sibling) if sibling.is_file() and os.access(sibling, os.X_OK) else None


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def choose_backend(requested: ServingBackend, *, cuda: Callable[[], bool] | None = None,
                   executable: Callable[[], str | None] | None = None) -> Literal["hf", "vllm"]:
    """``requested``, with ``auto`` resolved: ``vllm`` when CUDA and the ``vllm`` executable are present
    (the probes default to :func:`cuda_available` and :func:`vllm_executable`)."""
    if requested != "auto":
        return requested
    has_cuda = (cuda or cuda_available)()
    chosen: Literal["hf", "vllm"] = "vllm" if has_cuda and (executable or vllm_executable)() else "hf"
    log.info("training.serving_backend", requested=requested, chosen=chosen)
    return chosen


def merged_model(model: Path, out: Path) -> Path:
    """``model`` itself, or for a LoRA adapter directory its merge into the base model, saved under ``out``
    (reused when already there)."""
    if not (model / ADAPTER_CONFIG).exists():
        return model
    if (out / "config.json").exists():
        return out
    merged, tokenizer = load_causal_lm(model)
    merged.save_pretrained(out)
    tokenizer.save_pretrained(out)
    log.info("training.adapter_merged", adapter=str(model), merged=str(out))
    return out


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def _tail(path: Path) -> str:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(lines[-LOG_TAIL_LINES:])


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _wait_healthy(process: subprocess.Popen[bytes], base_url: str, log_path: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        code = process.poll()
        if code is not None:
            raise VllmError(f"vllm exited with status {code} while starting; the end of {log_path}:\n"
                            f"{_tail(log_path)}")
        try:
            if httpx.get(f"{base_url}/health", timeout=5.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise VllmError(f"vllm did not answer /health within {timeout_s:.0f} s; the end of {log_path}:\n"
                            f"{_tail(log_path)}")
        time.sleep(1.0)


@contextmanager
def running_vllm(model: Path | str, *, served_name: str, log_path: Path, extra_args: Sequence[str] = (),
                 executable: str = "vllm", host: str = "127.0.0.1", startup_timeout_s: float = 900.0,
                 ) -> Iterator[str]:
    """Serve ``model`` with vLLM on a free loopback port; yield the OpenAI base URL (``.../v1``)."""
    found = vllm_executable(executable)
    if found is None:
        raise VllmError(f"{executable!r} is not on PATH: install vLLM (`pip install .[gpu]`; the worker "
                        "image has it), or serve with backend hf (CPU) or endpoint (a vLLM you started "
                        "yourself)")
    port = _free_port(host)
    argv = [found, "serve", str(model), "--served-model-name", served_name, "--host", host,
            "--port", str(port), *QWEN3_PARSER_ARGS, *extra_args]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as output:
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    base_url = f"http://{host}:{port}"
    log.info("training.vllm_starting", argv=argv, log=str(log_path))
    try:
        _wait_healthy(process, base_url, log_path, startup_timeout_s)
        log.info("training.vllm_ready", url=base_url, model=str(model))
        yield f"{base_url}/v1"
    finally:
        _stop(process)
