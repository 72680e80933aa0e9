"""The tools TRL's ``GRPOTrainer(environment_factory=...)`` finds on an environment: every public function
of its class but ``reset``, in ``inspect.getmembers`` order (by name), bound to the instance."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def trl_tools(environment: object) -> list[Callable[..., Any]]:
    names = [name for name, _ in inspect.getmembers(type(environment), inspect.isfunction)
             if not name.startswith("_") and name != "reset"]
    return [getattr(environment, name) for name in names]
