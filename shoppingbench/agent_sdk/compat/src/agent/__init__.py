"""``src.agent``: the reference arena's agent helpers, provided by ``shoppingbench.agent_sdk``."""
