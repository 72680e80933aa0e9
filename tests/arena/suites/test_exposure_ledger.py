"""The exposure ledger (SPEC 5, 6): every public problem and held-out cluster, each cluster's side decided
once and kept across restarts, the one source of held-out burns, the gate's known answers and dump splits."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from arena.suites import SqlExposureLedger
from shoppingbench.problems.models import Problem, RewardTarget
from trajectories.dumps import ProblemSplit, SplitRule

AT = datetime(2026, 11, 22, 16, tzinfo=UTC)
RULE = SplitRule(held_out_fraction=0, held_out_clusters=frozenset({"h-1"}))
"""Holds out the cluster a public problem ``h-1`` starts, and no other by hash."""


def problem(problem_id: str, *targets: str) -> Problem:
    # The title shares no word with the query: problems link by their targets only.
    return Problem(id=problem_id, category="product" if len(targets) == 1 else "shop",
                   query=f"something for {problem_id}",
                   targets=[RewardTarget(product_id=t, title=["zzz"]) for t in targets])


def open_ledger(url: str) -> SqlExposureLedger:
    return SqlExposureLedger.open(url, rule=RULE)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_side_is_decided_once_and_survives_a_restart(backend: str, tmp_path: Path,
                                                        request: pytest.FixtureRequest) -> None:
    url = (f"sqlite:///{tmp_path / 'arena.sqlite3'}" if backend == "sqlite"
           else request.getfixturevalue("scratch_postgres_url"))
    first = open_ledger(url)
    first.expose([problem("t-1", "A"), problem("h-1", "B")], "race", "race-1", AT)
    first.expose([problem("t-1", "A")], "qualifying", "sub-1", AT)  # already public: nothing new
    assert first.exposed_ids() == {"t-1", "h-1"}

    again = open_ledger(url)  # a restarted validator: nothing of the first one's memory
    # Disguised copies join the clusters they copy, whatever their own keys' hash would say.
    again.expose([problem("h-2", "B"), problem("t-2", "A")], "race", "race-2", AT)
    # Linked to a train and a held-out cluster: neither side is safe.
    again.expose([problem("b-1", "A", "B", "C")], "race", "race-3", AT)
    again.expose([problem("c-1", "C")], "race", "race-4", AT)
    assert again.splits().of == {
        "t-1": ProblemSplit("t-1", "train"), "t-2": ProblemSplit("t-1", "train"),
        "h-1": ProblemSplit("h-1", "held_out"), "h-2": ProblemSplit("h-1", "held_out"),
        "b-1": ProblemSplit("b-1", "unclustered"), "c-1": ProblemSplit("b-1", "unclustered")}
    assert again.known_targets() == {"A", "B", "C"}
    assert [p.id for p in again.public_problems()] == ["b-1", "c-1", "h-1", "h-2", "t-1", "t-2"]


def test_held_out_clusters_stay_held_out_and_public_ones_never_become_held_out(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'arena.sqlite3'}"
    ledger = open_ledger(url)
    ledger.expose([problem("t-1", "A")], "race", "race-1", AT)
    clusters = ledger.hold_out([problem("x-1", "D"), problem("x-2", "A")], "held-out/study/1", AT)
    assert clusters == {"x-1": "x-1", "x-2": "t-1"}
    assert ledger.known_targets() == {"A"}, "a held-out suite is never public"
    assert ledger.exposed_ids() == {"t-1"}

    later = open_ledger(url)
    later.expose([problem("r-1", "D"), problem("x-1", "D")], "race", "race-2", AT)
    splits = later.splits().of
    # x-2 linked to a public cluster: it stays on the train side's cluster, not held out.
    assert splits["x-2"] == ProblemSplit("t-1", "train")
    # A race that hit a held-out cluster is held out with it; the held-out problem raced is public now.
    assert splits["r-1"] == splits["x-1"] == ProblemSplit("x-1", "held_out")
    assert later.known_targets() == {"A", "D"} and later.exposed_ids() == {"t-1", "r-1", "x-1"}


def test_a_ledger_sees_what_another_process_placed(tmp_path: Path) -> None:
    """``validator held-out`` writes the ledger beside the running validator: the running one reads it
    before it places anything, so a race never starts a train cluster over a held-out suite's target."""
    url = f"sqlite:///{tmp_path / 'arena.sqlite3'}"
    running = open_ledger(url)
    running.expose([problem("t-1", "A")], "race", "race-1", AT)
    open_ledger(url).hold_out([problem("x-1", "D")], "held-out/study/1", AT)
    running.expose([problem("r-1", "D")], "race", "race-2", AT)
    assert running.splits().of["r-1"] == ProblemSplit("x-1", "held_out")
