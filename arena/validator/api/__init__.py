"""The validator's public HTTP API: race state, qualifiers, winner, scores, embargo, published code,
a server-rendered leaderboard, ``/metrics`` (Prometheus) and ``/health``; plus the submissions router."""

from arena.validator.api.app import ArenaView, EmbargoEntry, TickMetrics, create_app

__all__ = ["ArenaView", "EmbargoEntry", "TickMetrics", "create_app"]
