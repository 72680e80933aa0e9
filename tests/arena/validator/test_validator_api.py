"""The public API follows the race log another writer appends to: the real SQL log (instrumented to
count what the API loads), the real race engine writing it, the API app on loopback."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import httpx
from sqlalchemy import Engine
from structlog.testing import capture_logs

from arena.chain import LocalChain
from arena.judge import ProblemOutcome
from arena.race import ManualClock, RaceEngine, RaceEvent, RaceRules, Rejection, SqlEventStore, replay
from arena.rules_fingerprint import RULES_VERSION, RulesFingerprint, fingerprint_of
from arena.settings import ArenaSettings
from arena.stack import open_validator_stack
from arena.storage import open_database
from arena.submissions.store import FileStore
from arena.suites import FixedSource
from arena.suites.bank import lexicon_race_warning
from arena.validator.api import ArenaView, create_app
from neurons.validator_service import ValidatorSettings, race_warnings
from shoppingbench.problems.models import Category, Problem
from shoppingbench.records import AttemptRecord
from shoppingbench.sandbox.runner import AgentFile
from shoppingbench.submission_check import check_agent
from shoppingbench.tools.serving import running_server
from tests.chain_support import make_wallet, register
from trajectories.store import TrajectoryStore

T0 = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)


class CountingEventStore(SqlEventStore):
    """The SQL race log, recording how many events each ``load`` returned."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.loaded: list[int] = []

    def load(self, start: int = 0) -> list[RaceEvent]:
        events = super().load(start)
        self.loaded.append(len(events))
        return events


def test_requests_fold_in_new_events_and_an_unchanged_log_is_not_reloaded(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    database = open_database(f"sqlite:///{tmp_path / 'arena.sqlite3'}")
    writer = RaceEngine(SqlEventStore(database), RaceRules(), clock)  # the work loop's engine
    alice = writer.submit("alice", "ab" * 32).submission_id
    assert alice is not None
    read = CountingEventStore(database)
    store = TrajectoryStore.open(f"sqlite:///{tmp_path / 'trajectories.sqlite3'}")
    view = ArenaView(events=read, store=store, files=FileStore(tmp_path / "agents"), clock=clock)

    with running_server(create_app(view)) as url, httpx.Client(base_url=url) as http:
        assert [s["submission_id"] for s in http.get("/submissions").json()] == [alice]
        for path in ("/race", "/health", "/qualifiers", "/metrics", "/", "/submissions"):
            assert http.get(path).status_code == 200
        assert read.loaded == [1]  # one replay; every later request found the log unchanged

        writer.record_qualifying(alice, 0.5)
        clock.advance(timedelta(minutes=1))
        report = check_agent(b"import socket\n\ndef agent_main(problem):\n    return []\n")
        writer.submit("bob", report.sha256, Rejection.from_report(report))
        submissions = {s["hotkey"]: s for s in http.get("/submissions").json()}
        assert read.loaded == [1, 2]  # only the two new events
        alice_now, bob = submissions["alice"], submissions["bob"]
        assert (alice_now["status"], alice_now["qualifying_score"]) == ("qualified", 0.5)
        assert bob["status"] == "rejected"
        assert bob["rejection"]["findings"][0]["rule"] == report.findings[0].rule
        assert "arena_race_events 3.0" in http.get("/metrics").text
        assert 'arena_submissions{status="rejected"} 1.0' in http.get("/metrics").text
        assert read.loaded == [1, 2]
    assert view.state() == replay(SqlEventStore(database).load())  # folding equals a full replay
    store.close()
    database.dispose()


def test_the_race_and_the_leaderboard_show_why_a_challenger_was_not_promoted(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    database = open_database(f"sqlite:///{tmp_path / 'arena.sqlite3'}")
    engine = RaceEngine(SqlEventStore(database), RaceRules(), clock)
    runs = {"alice": "1" * 33 + "0" * 27, "bob": "1" * 24 + "0" * 9 + "1" * 12 + "0" * 15}  # 33 vs 36 of 60
    for day, hotkeys in enumerate((["alice"], ["bob"])):
        for hotkey in hotkeys:
            sid = engine.submit(hotkey, f"{hotkey}-code", commitment_block=day).submission_id
            winner_score = None if engine.state.reign is None else 0.5  # on bob's problems, as bob
            assert sid is not None and engine.record_qualifying(sid, 0.5, winner_score=winner_score).qualified
        clock.advance(datetime.combine(clock.now().date(), time(16), tzinfo=UTC) - clock.now())
        engine.start_race(f"0xseed{day}", [f"p{i}" for i in range(60)])
        for sid in engine.pending_race_runs():
            run = runs[engine.state.submissions[sid].hotkey]
            engine.record_race_result(sid, run.count("1") / 60,
                                      [ProblemOutcome(problem_id=f"p{i}", success=c == "1", quality=0.9)
                                       for i, c in enumerate(run)])
        clock.advance(timedelta(hours=17))
    store = TrajectoryStore.open(f"sqlite:///{tmp_path / 'trajectories.sqlite3'}")
    view = ArenaView(events=SqlEventStore(database), store=store, files=FileStore(tmp_path / "agents"),
                     clock=clock)
    with running_server(create_app(view)) as url, httpx.Client(base_url=url) as http:
        last = http.get("/race").json()["last_race"]
        assert last["promoted"] is False and last["lead_lower_bound"] < 0 < 0.05 - last["required_margin"]
        assert "lower bound on the best challenger's lead -0.0667" in http.get("/").text
    store.close()
    database.dispose()


class KeyedSource:
    """A generator that makes nothing, under a key of its own (no suite is generated when a stack opens)."""

    key = "sbgen-2/catalog-abc/config-def/lexicon-123"

    def generate(self, seed: str, per_category: Mapping[Category, int], *,
                 exclude_products: AbstractSet[str] = frozenset()) -> list[Problem]:
        return []


def no_runs(agent: AgentFile, problems: Sequence[Problem], run_id: str) -> Iterator[AttemptRecord]:
    return iter(())


def test_the_stack_serves_its_rules_at_rules_and_in_metrics(tmp_path: Path) -> None:
    """``arena.stack`` hands the API the fingerprint of the validator's settings, suite plan and generators;
    ``/rules`` lists it with its parts (and is in the OpenAPI document), ``/metrics`` has the info gauge."""
    clock = ManualClock(T0)
    chain = LocalChain(tmp_path / "chain.sqlite3", clock=clock)
    wallet = make_wallet(tmp_path / "wallets", "validator")
    register(chain, wallet, validator_permit=True)
    settings = ArenaSettings(home=tmp_path / "home", race_epoch=date(2026, 11, 16), judge_models="judge-a")
    with open_validator_stack(settings, chain=chain, wallet=wallet, clock=clock,
                              sources=FixedSource(KeyedSource()), run_agent=no_runs) as stack, \
            running_server(stack.api) as url, httpx.Client(base_url=url) as http:
        served = http.get("/rules").json()
        assert served == {**stack.rules.model_dump(mode="json"), "warnings": []}
        assert served["version"] == RULES_VERSION
        assert served["parts"]["generators"] == {"0001-01-01": KeyedSource.key}
        parts = served["parts"]
        assert parts["race_epoch"] == "2026-11-16" and parts["judge_models"] == ["judge-a"]
        assert served["fingerprint"] == fingerprint_of(served["parts"]).fingerprint
        assert "/rules" in http.get("/openapi.json").json()["paths"]
        assert (f'arena_rules_info{{fingerprint="{served["fingerprint"]}",version="{RULES_VERSION}"}} 1.0'
                in http.get("/metrics").text)
    chain.close()


def test_a_validator_racing_the_lexicon_writer_on_a_real_network_warns_at_start_and_on_rules(
        tmp_path: Path) -> None:
    """The warning is for a real network with no bank pinned (the embedded chain is for demos and tests);
    the stack logs what it is given at start and serves it on ``/rules``, outside the hashed parts, so
    peers' fingerprints still compare. A real network cannot be reached from here: the stack runs on the
    embedded chain with the warning a real network's start computes."""
    assert lexicon_race_warning(real_network=False, banks_pinned=False) is None
    assert lexicon_race_warning(real_network=True, banks_pinned=True) is None
    warning = lexicon_race_warning(real_network=True, banks_pinned=False)
    assert warning is not None and "0.40" in warning and "about 0.07" in warning
    assert "`arena bank build`" in warning and "`arena bank install`" in warning
    clock = ManualClock(T0)
    chain = LocalChain(tmp_path / "chain.sqlite3", clock=clock)
    wallet = make_wallet(tmp_path / "wallets", "validator")
    register(chain, wallet, validator_permit=True)
    settings = ArenaSettings(home=tmp_path / "home", race_epoch=date(2026, 11, 16), judge_models="judge-a")
    with capture_logs() as logs, \
            open_validator_stack(settings, chain=chain, wallet=wallet, clock=clock, warnings=[warning],
                                 sources=FixedSource(KeyedSource()), run_agent=no_runs) as stack, \
            running_server(stack.api) as url, httpx.Client(base_url=url) as http:
        served = http.get("/rules").json()
        assert served["warnings"] == [warning]
        assert RulesFingerprint.model_validate(served) == stack.rules  # what peers read is unchanged
    assert {"event": "validator_race_warning", "warning": warning, "log_level": "warning"} in logs
    chain.close()


def test_validator_run_warns_on_a_real_network_without_banks(tmp_path: Path) -> None:
    """What ``validator run`` hands its stack, from its settings (constructing them connects nowhere)."""
    home = tmp_path / "home"
    assert race_warnings(ValidatorSettings(home=home)) == []  # the embedded chain
    assert race_warnings(ValidatorSettings(home=home, chain="finney")) == [
        lexicon_race_warning(real_network=True, banks_pinned=False)]
    pinned = ValidatorSettings(home=home, chain="finney", problem_banks={date(2026, 12, 1): "a" * 64})
    assert race_warnings(pinned) == []


def test_an_api_without_rules_says_so(tmp_path: Path) -> None:
    database = open_database(f"sqlite:///{tmp_path / 'arena.sqlite3'}")
    store = TrajectoryStore.open(f"sqlite:///{tmp_path / 'trajectories.sqlite3'}")
    view = ArenaView(events=SqlEventStore(database), store=store, files=FileStore(tmp_path / "agents"),
                     clock=ManualClock(T0))
    with running_server(create_app(view)) as url, httpx.Client(base_url=url) as http:
        assert http.get("/rules").status_code == 404
        assert "arena_rules_info" not in http.get("/metrics").text
    store.close()
    database.dispose()
