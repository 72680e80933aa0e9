"""A local OpenAI-compatible server that plays scripted policies: a test double for hosted LLMs."""

from shoppingbench.llm_stub.server import Policy, StubReply, count_tokens, create_app

__all__ = ["Policy", "StubReply", "count_tokens", "create_app"]
