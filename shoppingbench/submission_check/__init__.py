"""Static analysis of submitted agent files (SPEC 4): what cannot be safe or fair is rejected unrun.

``check_agent(source, known_product_ids=...)`` returns a :class:`CheckReport`; each :class:`Finding`
names its rule, line and category (``security`` or ``integrity``). The rules are in ``rules.py`` and
documented in ``docs/agents.md``.
"""

from shoppingbench.submission_check.check import MAX_AGENT_BYTES, check_agent
from shoppingbench.submission_check.models import Category, CheckReport, Finding
from shoppingbench.submission_check.rules import RULES, describe

__all__ = ["MAX_AGENT_BYTES", "RULES", "Category", "CheckReport", "Finding", "check_agent", "describe"]
