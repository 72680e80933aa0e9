"""The validator's public HTTP API: race state, qualifiers, winner, scores, embargo, published code,
the rules fingerprint (``/rules``), ``/metrics`` (Prometheus) and ``/health``; plus the submissions
router; and the public site: server-rendered pages (the leaderboard at ``/``, the dumps index at
``/dumps``) with their JSON under ``/api/``.

``create_app`` (``app.py``) mounts one router per resource (``routes/``) over an :class:`ArenaView`
(``views/view.py``); pages are ``templates/*.html`` rendered by ``site/pages.py``, styled by
``static/site.css``.
"""

from arena.validator.api.app import create_app
from arena.validator.api.views.models import EmbargoEntry
from arena.validator.api.views.monitoring import TickMetrics
from arena.validator.api.views.view import ArenaView

__all__ = ["ArenaView", "EmbargoEntry", "TickMetrics", "create_app"]
