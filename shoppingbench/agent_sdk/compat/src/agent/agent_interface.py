"""``src.agent.agent_interface`` of the reference arena, served by ``shoppingbench.agent_sdk``.

Same names and signatures: ``Tool``, ``register_tool``, ``get_tool``, ``list_tools``,
``generate_tool_call_id``, ``format_content``, ``create_dialogue_step(think, tool_results, response,
query, step)``, ``execute_tool_call(tool_name, parameters)``, ``ToolCallResult`` and the registry
``_TOOL_REGISTRY`` (the SDK's own dict, so tools registered either way are one set).
"""

from typing import Any

from shoppingbench.agent_sdk.steps import ToolCallResult, create_dialogue_step, format_content
from shoppingbench.agent_sdk.tools import (
    _TOOL_REGISTRY,
    Tool,
    execute_tool_call,
    generate_tool_call_id,
    get_tool,
    list_tools,
    register_tool,
)

AgentOutput = list[dict[str, Any]]
ToolResult = Any

__all__ = [
    "_TOOL_REGISTRY",
    "AgentOutput",
    "Tool",
    "ToolCallResult",
    "ToolResult",
    "create_dialogue_step",
    "execute_tool_call",
    "format_content",
    "generate_tool_call_id",
    "get_tool",
    "list_tools",
    "register_tool",
]
