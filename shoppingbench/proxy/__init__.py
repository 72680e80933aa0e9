"""The verified proxy: the sandbox's only door to the catalog and the LLM, and the log the judge trusts.

``ProxyServer`` serves one run on one channel per sandbox slot; ``begin``/``end`` frame each attempt
and ``end`` returns the attempt's calls as :class:`shoppingbench.records.ProxyCall` entries.
"""

from shoppingbench.proxy.budgets import InferenceBudgets
from shoppingbench.proxy.inference import InferenceConfig
from shoppingbench.proxy.server import Channel, ProxyServer

__all__ = ["Channel", "InferenceBudgets", "InferenceConfig", "ProxyServer"]
