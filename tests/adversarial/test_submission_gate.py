"""A miner playing the gate's verdict keys: a second file committed in the block of a rejected or an
accepted one must be answered for itself (never "accepted" without being raced, never the old
submission), and a database of verdicts keyed the old way stays readable."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from arena.storage import open_database
from arena.submissions.store import VerdictStore
from arena.validator import upload_verdicts
from tests.arena.submissions.test_submissions import AGENT, OTHER_AGENT, Net, post, refused
from tests.chain_support import RunningValidator, running_validator

OLD_SCHEMA = """
CREATE TABLE submission_verdicts (
    hotkey VARCHAR(64) NOT NULL, commitment_block INTEGER NOT NULL, sha256 VARCHAR(64) NOT NULL,
    commitment_time DATETIME NOT NULL, outcome VARCHAR(16) NOT NULL, name VARCHAR NOT NULL,
    size_bytes INTEGER NOT NULL, received_at DATETIME NOT NULL, PRIMARY KEY (hotkey, commitment_block));
CREATE TABLE submission_findings (
    hotkey VARCHAR(64) NOT NULL, commitment_block INTEGER NOT NULL, findings TEXT NOT NULL,
    PRIMARY KEY (hotkey, commitment_block))
"""
"""The verdict tables as releases before verdicts were keyed by file created them."""
CHEATER = b"def agent_main(problem):\n    return [{'id': 'B0SECRET01'}]\n"


@pytest.fixture
def net(tmp_path: Path) -> Net:
    return Net(tmp_path)


@pytest.fixture
def gate(net: Net) -> Iterator[RunningValidator]:
    with running_validator(net.chain, net.validator, net.root / "validator", clock=net.clock,
                           known_product_ids=frozenset({"B0SECRET01"})) as running:
        yield running


def test_a_clean_file_committed_in_the_block_of_a_rejected_one_waits_for_the_cooldown(
        net: Net, gate: RunningValidator) -> None:
    net.commit(CHEATER)
    rejected = refused(post(gate.url, *net.signed(CHEATER)), 422, "static_analysis")
    assert rejected["rejection"] == "integrity"
    net.commit(AGENT)  # the same block
    block = net.chain.latest_commitment(net.miner.hotkey.ss58_address).block  # type: ignore[union-attr]
    answer = refused(post(gate.url, *net.signed(AGENT)), 429, "cooldown")  # not 201 and never raced
    assert datetime.fromisoformat(answer["retry_at"]) == net.clock.now() + timedelta(hours=12)
    assert [(v.sha256, v.commitment_block, v.outcome) for v in gate.gate.verdicts.all()] \
        == [(hashlib.sha256(CHEATER).hexdigest(), block, "integrity")]


def test_another_file_committed_in_the_block_of_an_accepted_one_is_not_answered_with_it(
        net: Net, gate: RunningValidator) -> None:
    net.commit(AGENT)
    accepted = post(gate.url, *net.signed(AGENT))
    assert accepted.status_code == 201
    net.commit(OTHER_AGENT)  # the same block
    refused(post(gate.url, *net.signed(OTHER_AGENT)), 429, "cooldown")
    net.commit(AGENT)
    again = post(gate.url, *net.signed(AGENT))
    assert again.status_code == 200 and again.json() == accepted.json()


def test_a_rejected_file_is_answered_with_its_recorded_verdict(net: Net, gate: RunningValidator) -> None:
    net.commit(CHEATER)
    first = refused(post(gate.url, *net.signed(CHEATER)), 422, "static_analysis")
    again = refused(post(gate.url, *net.signed(CHEATER)), 422, "static_analysis")
    assert again["findings"] == first["findings"] and again["rejection"] == "integrity"


def test_verdicts_keyed_by_hotkey_and_block_stay_readable(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'arena.sqlite3'}"
    with open_database(url).begin() as connection:  # a database of a release before the re-keyed tables
        connection.execute(text("DROP TABLE arena_alembic_version"))  # and before migrations
        connection.execute(text("DROP TABLE submission_judgements"))
        connection.execute(text("DROP TABLE submission_judgement_findings"))
        for statement in OLD_SCHEMA.split(";"):
            connection.execute(text(statement))
        connection.execute(text(
            "INSERT INTO submission_verdicts VALUES ('5Hot', 7, :sha, '2026-11-20 10:00:00', 'integrity', "
            "'a.py', 10, '2026-11-20 10:00:05')"), {"sha": "ab" * 32})
        connection.execute(text(
            "INSERT INTO submission_findings VALUES ('5Hot', 7, '[{\"rule\": \"embedded_product_id\", "
            "\"line\": 2, \"category\": \"integrity\", \"message\": \"B0SECRET01\"}]')"))
    engine = open_database(url)  # a new release opening the old database
    for _ in range(2):  # adopted once, not twice
        (verdict,) = upload_verdicts(engine)
    key = (verdict.hotkey, verdict.sha256, verdict.commitment_block, verdict.outcome)
    assert key == ("5Hot", "ab" * 32, 7, "integrity")
    assert [f.rule for f in verdict.findings] == ["embedded_product_id"]
    judged = VerdictStore(engine).judged("5Hot", "ab" * 32, 7)
    assert judged is not None and judged[1] == verdict
    with engine.connect() as connection:  # the old tables are left as they were
        assert connection.execute(text("SELECT count(*) FROM submission_verdicts")).scalar() == 1
