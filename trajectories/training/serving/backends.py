"""A saved checkpoint served for the length of a ``with`` block, on the backend the host supports: the
proxy's inference config for rollouts (``stages/rollouts.py``) and held-out evaluation
(``evaluation/held_out.py``).

``hf`` serves it on loopback with transformers' generate (:func:`local_inference` over :mod:`hf_server`;
CPU and tests); ``vllm`` starts
``vllm serve`` with Qwen3's parsers (:mod:`vllm_server`; a LoRA adapter is merged first, into
``out/merged``); ``auto`` is ``vllm`` where CUDA and the ``vllm`` executable are present, else ``hf``
(:func:`vllm_server.choose_backend`). The sampling temperature is forced on every call by the proxy.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from shoppingbench.proxy.budgets import InferenceBudgets
from shoppingbench.proxy.inference import InferenceConfig
from shoppingbench.tools.serving import running_server
from trajectories.training.serving.vllm_server import (
    ServingBackend,
    choose_backend,
    merged_model,
    running_vllm,
)


@contextmanager
def local_inference(model_dir: Path, *, temperature: float, max_tokens: int, served_name: str | None = None,
                    budgets: InferenceBudgets | None = None) -> Iterator[InferenceConfig]:
    """Serve ``model_dir`` on loopback (:mod:`hf_server`) for as long as the block runs; yield the proxy's
    inference config pointing at it, with ``served_name`` (default the directory name) the only model."""
    from trajectories.training.serving.hf_server import LocalModel, ServingConfig, create_app

    name = served_name or model_dir.resolve().name
    config = ServingConfig(served_name=name, temperature=temperature, max_tokens_cap=max_tokens)
    with running_server(create_app(LocalModel.load(model_dir), config)) as url:
        yield InferenceConfig(base_url=f"{url}/v1", models=[name], max_tokens=max_tokens,
                              budgets=budgets or InferenceBudgets())


@contextmanager
def served_checkpoint(model_dir: Path, *, backend: ServingBackend, out: Path, temperature: float,
                      max_tokens: int, budgets: InferenceBudgets, served_name: str | None = None,
                      vllm_args: Sequence[str] = (), startup_timeout_s: float = 900.0,
                      ) -> Iterator[InferenceConfig]:
    """Serve ``model_dir`` as ``served_name`` (default its directory name); yield the proxy's config."""
    name = served_name or model_dir.resolve().name
    forced = {"temperature": temperature}
    if choose_backend(backend) == "hf":
        with local_inference(model_dir, temperature=temperature, max_tokens=max_tokens, served_name=name,
                             budgets=budgets) as inference:
            yield inference.model_copy(update={"forced_params": forced})
        return
    with running_vllm(merged_model(model_dir, out / "merged"), served_name=name, log_path=out / "vllm.log",
                      extra_args=vllm_args, startup_timeout_s=startup_timeout_s) as url:
        yield InferenceConfig(base_url=url, models=[name], max_tokens=max_tokens, budgets=budgets,
                              forced_params=forced)
