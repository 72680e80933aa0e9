"""The tool registry: name -> function, and executing a tool call into a step's record.

Agents register their tools with ``@Tool`` (or ``@Tool("name")``) and run a model's call with
``execute_tool_call(name, parameters)``. Names and behaviour follow the reference arena's
``agent_interface`` so its agents work unchanged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

from shoppingbench.agent_sdk.steps import ToolCallResult

F = TypeVar("F", bound=Callable[..., Any])

_TOOL_REGISTRY: dict[str, Callable[..., Any]] = {}
"""Registered tools by name (one registry per process, like the reference arena's)."""


class ToolNotFoundError(ValueError):
    """``execute_tool_call`` was asked for a name nobody registered."""


def register_tool(name: str, func: Callable[..., Any]) -> None:
    """Register ``func`` as the tool ``name``; a later registration of the same name replaces it."""
    _TOOL_REGISTRY[name] = func


@overload
def Tool(name: F) -> F: ...
@overload
def Tool(name: str | None = None) -> Callable[[F], F]: ...


def Tool(name: str | Callable[..., Any] | None = None) -> Any:
    """Decorator registering a function as a tool (capitalised like the reference arena's).

    ``@Tool`` registers it under its ``__name__``, ``@Tool("x")`` as ``x``."""
    if callable(name):
        register_tool(name.__name__, name)
        return name

    def decorator(func: F) -> F:
        register_tool(name if name is not None else func.__name__, func)
        return func

    return decorator


def get_tool(name: str, tools: Mapping[str, Callable[..., Any]] | None = None) -> Callable[..., Any]:
    """The tool ``name`` from ``tools``, or from the process-wide registry when ``tools`` is ``None``."""
    registry = _TOOL_REGISTRY if tools is None else tools
    try:
        return registry[name]
    except KeyError:
        available = ", ".join(sorted(registry)) or "(none)"
        raise ToolNotFoundError(f"tool {name!r} is not registered; registered tools: {available}") from None


def list_tools() -> list[str]:
    return list(_TOOL_REGISTRY)


def generate_tool_call_id(name: str, parameters: Any, length: int = 8) -> str:
    """A short id derived from the call itself, so the same call always gets the same id."""
    return hashlib.sha256(f"{name}\n{parameters}".encode(errors="replace")).hexdigest()[:length]


def execute_tool_call(tool_name: str, parameters: dict[str, Any],
                      tools: Mapping[str, Callable[..., Any]] | None = None) -> ToolCallResult:
    """Run a tool with ``parameters`` as keyword arguments and record the call.

    The tool comes from ``tools`` if given (an agent's own table, immune to other modules registering
    the same names), else from the registry ``@Tool`` fills. Raises :class:`ToolNotFoundError` for an
    unknown name and lets the tool's own exceptions (e.g. a model passing a parameter the tool does not
    take) propagate: the agent decides what to tell the model.
    """
    result = get_tool(tool_name, tools)(**parameters)
    return {"name": tool_name, "parameters": parameters,
            "tool_call_id": generate_tool_call_id(tool_name, parameters), "result": result}
