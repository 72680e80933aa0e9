"""``src.agent.proxy_client`` of the reference arena, served by ``shoppingbench.agent_sdk``.

``ProxyClient(proxy_url=None, timeout=120, max_retries=3, ...)`` with ``.get(path, params)`` and
``.post(path, json_data)`` answering the decoded JSON or ``None`` after the last failed attempt.
"""

from shoppingbench.agent_sdk.proxy_client import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_RATE_LIMIT_RETRY_DELAY_S,
    DEFAULT_RETRY_DELAY_S,
    DEFAULT_TIMEOUT_S,
    ProxyClient,
    ProxyError,
)

DEFAULT_TIMEOUT = DEFAULT_TIMEOUT_S
DEFAULT_MAX_RETRIES = DEFAULT_MAX_RETRIES
DEFAULT_RETRY_DELAY = DEFAULT_RETRY_DELAY_S
DEFAULT_RATE_LIMIT_RETRY_DELAY = DEFAULT_RATE_LIMIT_RETRY_DELAY_S

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_RATE_LIMIT_RETRY_DELAY",
    "DEFAULT_RETRY_DELAY",
    "DEFAULT_TIMEOUT",
    "ProxyClient",
    "ProxyError",
]
