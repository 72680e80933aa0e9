"""The validator's public HTTP API: race state, qualifiers, winner, scores, embargo, published code,
the rules fingerprint (``/rules``), a server-rendered leaderboard, ``/metrics`` (Prometheus) and
``/health``; plus the submissions router.

``create_app`` (``app.py``) mounts one router per resource (``routes/``) over an :class:`ArenaView`
(``view.py``); the leaderboard page is ``templates/leaderboard.html``.
"""

from arena.validator.api.app import create_app
from arena.validator.api.views.models import EmbargoEntry
from arena.validator.api.views.monitoring import TickMetrics
from arena.validator.api.views.view import ArenaView

__all__ = ["ArenaView", "EmbargoEntry", "TickMetrics", "create_app"]
