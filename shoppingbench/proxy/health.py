"""Provider health: calls, provider errors by kind, latency and the last success, per LLM provider.

Two providers are watched: ``inference`` (the endpoint the proxy forwards agents' calls to) and
``judge`` (the judge models). Both record into :data:`PROVIDER_REGISTRY`, a Prometheus registry of the
process (the proxy runs in a thread of the validator), which the validator's ``/metrics`` exposes beside
its own. A provider error is what the provider did wrong (a 5xx, a timeout, a dropped connection), never
a refusal of ours (budgets, the model allowlist) nor a 4xx answer to a bad request.
"""

from __future__ import annotations

from typing import Final, Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

Provider = Literal["inference", "judge"]

PROVIDER_REGISTRY: Final = CollectorRegistry(auto_describe=True)
"""Where every provider's health is counted (process-wide)."""

LATENCY_BUCKETS_S: Final = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0, 300.0)

_CALLS = Counter("arena_provider_calls", "Calls sent to an LLM provider", ["provider"],
                 registry=PROVIDER_REGISTRY)
_ERRORS = Counter("arena_provider_errors", "Calls the LLM provider failed, by kind (http_5xx, timeout, "
                  "connection, junk)", ["provider", "kind"], registry=PROVIDER_REGISTRY)
_LATENCY = Histogram("arena_provider_latency_seconds", "Time to the provider's answer or failure",
                     ["provider"], buckets=LATENCY_BUCKETS_S, registry=PROVIDER_REGISTRY)
_LAST_SUCCESS = Gauge("arena_provider_last_success_timestamp_seconds",
                      "Unix time of the provider's last successful answer", ["provider"],
                      registry=PROVIDER_REGISTRY)


def observe_call(provider: Provider, *, seconds: float, error: str | None, at: float) -> None:
    """Count one call to ``provider`` that took ``seconds`` and ended at Unix time ``at``: failed with a
    provider error of kind ``error``, or (``None``) answered."""
    _CALLS.labels(provider).inc()
    _LATENCY.labels(provider).observe(max(0.0, seconds))
    if error is None:
        _LAST_SUCCESS.labels(provider).set(at)
    else:
        _ERRORS.labels(provider, error).inc()
