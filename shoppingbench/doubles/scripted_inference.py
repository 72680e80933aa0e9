"""The scripted shopping policy served as a run's inference endpoint: the ``--scripted-llm`` test double
for runs without an LLM endpoint, an :data:`~shoppingbench.sandbox.runner.InferenceProvider` the entry
points inject."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from shoppingbench.doubles.llm_server import create_app
from shoppingbench.doubles.scripted_policies import shopping_policy
from shoppingbench.proxy.inference import InferenceConfig
from shoppingbench.sandbox.runner import inference_config
from shoppingbench.settings import HarnessSettings
from shoppingbench.tools.serving import running_server

SCRIPTED_MODEL = "scripted-shopper"
"""The model name under which :func:`scripted_inference` serves the scripted shopping policy."""


@contextmanager
def scripted_inference(settings: HarnessSettings) -> Iterator[InferenceConfig]:
    """The scripted shopping policy served on loopback for as long as the block runs, in place of the
    configured endpoint. It answers to whatever model an agent names; its default (``SANDBOX_MODEL``) is
    the first configured model, else :data:`SCRIPTED_MODEL`."""
    with running_server(create_app(shopping_policy, models=None)) as url:
        models = settings.allowed_models() or [SCRIPTED_MODEL]
        yield inference_config(settings).model_copy(update={"base_url": f"{url}/v1", "models": models,
                                                             "any_model": True})
