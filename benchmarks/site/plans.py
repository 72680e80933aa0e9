"""The query plans behind the site's pages: every SELECT the API sends while it serves, explained.

The server process records each distinct statement (with the parameters of its first execution) on the
engines it reads; when it stops, each is sent again under ``EXPLAIN QUERY PLAN`` (SQLite) or ``EXPLAIN``
(PostgreSQL). A plan that reads a whole table of attempts or problems (``SCAN attempts`` without an
index, ``Seq Scan on attempts``) is flagged: those grow with the store and have no place in a page.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Engine, event

BIG_TABLES = ("attempts", "problems")
"""Tables that grow with every attempt: scanning one of them per request is the thing to find."""
_SQLITE_SCAN = re.compile(r"^SCAN (\w+)(?! USING (?:COVERING )?INDEX)")
_PG_SCAN = re.compile(r"Seq Scan on (\w+)")


def full_scans(plan: list[str]) -> list[str]:
    """The big tables ``plan`` reads whole."""
    found = []
    for line in plan:
        match = _SQLITE_SCAN.match(line.strip()) or _PG_SCAN.search(line)
        if match and match.group(1) in BIG_TABLES:
            found.append(match.group(1))
    return found


class PlanRecorder:
    """Records the SELECTs sent on ``engines`` (first parameters of each) and explains them on demand."""

    def __init__(self, engines: list[Engine]) -> None:
        self.seen: dict[tuple[int, str], tuple[Engine, Any]] = {}
        for engine in engines:
            event.listen(engine, "before_cursor_execute", self._record(engine))

    def _record(self, engine: Engine) -> Any:
        def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
            if not many and statement.lstrip().upper().startswith("SELECT"):
                self.seen.setdefault((id(engine), statement), (engine, parameters))

        return record

    def explain(self) -> list[dict[str, Any]]:
        """Each statement (its first 400 characters), its plan and the big tables it scans."""
        plans = []
        for (_, statement), (engine, parameters) in list(self.seen.items()):
            prefix = "EXPLAIN QUERY PLAN " if engine.dialect.name == "sqlite" else "EXPLAIN "
            with engine.connect() as connection:
                rows = connection.exec_driver_sql(prefix + statement, parameters).all()
            plan = [str(row[-1]) for row in rows]
            plans.append({"sql": " ".join(statement.split())[:400], "plan": plan, "scans": full_scans(plan)})
        return plans
