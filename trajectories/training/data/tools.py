"""The tool schemas and system prompt a trained model sees, in the OpenAI function format.

They live in the agent SDK (``shoppingbench.agent_sdk.shopping_tools``) so that the tool-calling reference
agent, which runs inside the sandbox, prompts with exactly what training renders: Qwen3's chat template puts
``tools`` inside ``<tools></tools>`` in the system turn and expects calls as
``<tool_call>{"name", "arguments"}</tool_call>``.
"""

from shoppingbench.agent_sdk.shopping_tools import SYSTEM_PROMPT, TOOL_SCHEMAS

__all__ = ["SYSTEM_PROMPT", "TOOL_SCHEMAS"]
