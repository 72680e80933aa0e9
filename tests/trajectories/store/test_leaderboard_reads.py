"""The leaderboard's reads of the store (``trajectories.store.leaderboard_reads``), on SQLite and on the
loopback PostgreSQL: categories of a race's problems by primary key, in chunks, unknown ids left out."""

from __future__ import annotations

from sqlalchemy import event

from shoppingbench.problems.models import CATEGORIES
from trajectories.store import ProblemEntry, TrajectoryStore
from trajectories.store.leaderboard_reads import CHUNK, problem_categories


def test_problem_categories_by_primary_key_in_chunks(store: TrajectoryStore) -> None:
    ids = [f"p{n:05d}" for n in range(CHUNK + 7)]
    store.register_problems(
        ProblemEntry(id=p, category=CATEGORIES[n % 3], query="q") for n, p in enumerate(ids)
    )
    statements: list[str] = []

    def seen(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    event.listen(store.engine, "before_cursor_execute", seen)
    try:
        found = problem_categories(store, [*ids, "never-registered", ids[0]])
    finally:
        event.remove(store.engine, "before_cursor_execute", seen)
    assert found == {p: CATEGORIES[n % 3] for n, p in enumerate(ids)}
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 2 and all("problems.id IN" in s for s in selects)  # two chunks, by key
    assert problem_categories(store, []) == {}
