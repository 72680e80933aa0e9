"""The agent SDK: everything a miner's agent file needs, and nothing else of the arena.

A miner's agent is one Python file defining ``agent_main(problem: dict) -> list[dict]``: ``problem``
is ``{"id", "category", "query"}`` (never the reward) and the result is the dialogue steps built with
:func:`create_dialogue_step`. Tools and the LLM are reached only through :class:`ProxyClient`.

This package is self-contained (standard library and ``httpx`` only): the sandbox mounts it alone as
``shoppingbench.agent_sdk``, with :data:`COMPAT_DIR` providing the reference arena's module paths
(``src.agent.agent_interface``, ``src.agent.proxy_client``). See ``docs/agents.md``.
"""

from pathlib import Path

from shoppingbench.agent_sdk.loop import tool_loop
from shoppingbench.agent_sdk.parsing import ParsedOutput, normalise_call, parse_model_output
from shoppingbench.agent_sdk.proxy_client import (
    FIND_PRODUCT_PATH,
    INFERENCE_PATH,
    VIEW_PRODUCT_PATH,
    ChatReply,
    ProxyClient,
    ProxyError,
    allowed_models,
    default_model,
)
from shoppingbench.agent_sdk.shopping_tools import (
    MAX_FIELD_CHARS,
    MAX_TOOL_CHARS,
    SYSTEM_PROMPT,
    TOOL_SCHEMAS,
    compact_fields,
    proxy_tools,
    run_tool_call,
    tool_result_text,
    turn_messages,
)
from shoppingbench.agent_sdk.steps import ToolCallResult, create_dialogue_step, format_content
from shoppingbench.agent_sdk.tools import (
    Tool,
    ToolNotFoundError,
    execute_tool_call,
    generate_tool_call_id,
    get_tool,
    list_tools,
    register_tool,
)

COMPAT_DIR = Path(__file__).resolve().parent / "compat"
"""Put this directory on ``sys.path`` to make ``src.agent.agent_interface`` and ``src.agent.proxy_client``
importable (the sandbox mounts its ``src`` next to the SDK instead)."""

__all__ = [
    "COMPAT_DIR",
    "FIND_PRODUCT_PATH",
    "INFERENCE_PATH",
    "MAX_FIELD_CHARS",
    "MAX_TOOL_CHARS",
    "SYSTEM_PROMPT",
    "TOOL_SCHEMAS",
    "VIEW_PRODUCT_PATH",
    "ChatReply",
    "ParsedOutput",
    "ProxyClient",
    "ProxyError",
    "Tool",
    "ToolCallResult",
    "ToolNotFoundError",
    "allowed_models",
    "compact_fields",
    "create_dialogue_step",
    "default_model",
    "execute_tool_call",
    "format_content",
    "generate_tool_call_id",
    "get_tool",
    "list_tools",
    "normalise_call",
    "parse_model_output",
    "proxy_tools",
    "register_tool",
    "run_tool_call",
    "tool_loop",
    "tool_result_text",
    "turn_messages",
]
