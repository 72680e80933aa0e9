"""``arena network-demo`` end to end on the small sample world: real wallets, local chain, signed uploads
through ``miner submit``, validators' APIs on loopback, bubblewrap sandbox, offline judge, trajectory
stores. The one test double is the agents' LLM: without ARENA_INFERENCE_BASE_URL the demo serves the
scripted shopping policy (``shoppingbench.doubles.llm_server``) and says so."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import typer
from bittensor import Wallet
from rich.console import Console
from typer.testing import CliRunner

from arena.chain import LocalChain
from arena.race import SqlEventStore, replay
from arena.race.events import SubmissionRejected
from arena.race.rules import RaceRules
from arena.storage import open_database
from arena.validator.demo import next_race_tick
from neurons.cli import app
from neurons.network_demo import MARKER, demo_race_tick, prepare_root, serve_until_interrupted
from shoppingbench.sample_world import SampleWorld
from tests.demo_support import DEMO_START, demo_race_time
from tests.sandbox_support import UID_BASE
from trajectories.store import TrajectoryStore


def test_network_demo_races_generated_problems_rejects_a_cheater_and_a_copy_and_the_table_fails_qualifying(
        tmp_path: Path, small_world: SampleWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARENA_INFERENCE_BASE_URL", raising=False)
    monkeypatch.setenv("ARENA_SANDBOX_UID_BASE", str(UID_BASE))
    # The demo's clock starts at a fixed instant; the nearest race slot falls inside the first weights
    # epoch (a tempo is 20 min of blocks): the demo must skip it, or the race's weights wait for the next
    # epoch and the chain keeps the burn-only vector.
    race_time = demo_race_time(DEMO_START)
    monkeypatch.setenv("ARENA_RACE_TIME_UTC", f"{race_time:%H:%M}")
    root = tmp_path / "demo"
    args = ["network-demo", "--home", str(tmp_path / "home"), "--root", str(root),
            "--catalog-dir", str(small_world.catalog_dir), "--problems-dir", str(small_world.problems_dir),
            "--per-category", "3", "--validators", "2", "--vary", "judge_models=judge-b", "--workers", "2",
            "--start", DEMO_START.isoformat()]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "scripted shopping policy (a test double" in out
    assert f"demo clock starts at {DEMO_START:%Y-%m-%d %H:%M} UTC (race slot {race_time:%H:%M} UTC)" in out
    leaderboard = out[out.index("Leaderboard"):]
    assert "winner" in leaderboard
    submitted = [line for line in out.splitlines() if "miner submit: " in line]
    expected = ("miner submit: baseline not delivered (exit 6), parser delivered, react delivered, "
                "copycat not delivered (exit 6), cheater not delivered (exit 6), table-cheater delivered")
    assert submitted == [expected], (submitted, out[-6000:])  # on a failure: the line and the demo's end
    assert ("refused as a copy: baseline's file is the public agent "
            "shoppingbench/agents/scripted_baseline.py (nobody's original, similarity 1.00): no race, no "
            "weight") in out
    assert "rejected: cheater (integrity): embedded_product_id (line 5)" in out
    assert "refused as a copy: copycat's file is react's (committed at block" in out
    assert "similarity 1.00): no race, no weight" in out
    assert "table-cheater: masked answers for 400 bank and 9 practice problems" in out
    assert "not qualified: table-cheater scored 0.000 on its qualifying problems, below the threshold" in out
    assert "race 20" in out and "9 problems generated from the seed" in out

    chain = LocalChain(root / "local-chain.sqlite3")
    names = {"owner", "validator-1", "validator-2", "baseline", "parser", "react", "copycat", "cheater",
             "table-cheater"}
    hotkeys = {name: str(Wallet(name, "default", path=str(root / "wallets")).hotkey.ss58_address)
               for name in names}
    uid = {n.hotkey: n.uid for n in chain.metagraph().neurons}
    assert set(uid) == set(hotkeys.values()) and uid[hotkeys["owner"]] == 0
    weights = chain.weights(hotkeys["validator-1"])
    # The second validator runs with another judge model: the same weights (the offline judge decides
    # here), another rules fingerprint, which each validator names when it looks at the other.
    assert chain.weights(hotkeys["validator-2"]) == weights
    first, second = hotkeys["validator-1"], hotkeys["validator-2"]
    assert "validator-2 runs with judge_models=judge-b" in out
    for mine, other, uid_other in ((first, second, 2), (second, first, 1)):
        assert (f"{mine[:8]}: agreement: weights match 100% of the other validators (by count), 1 with "
                "another rules fingerprint, 0 unknown") in out
        assert f"{mine[:8]}: disagrees with {other} (uid {uid_other}): judge_models differs" in out
    assert weights is not None and weights.uids != (0,)  # the race decided them, not the burn-only vector

    database = open_database(f"sqlite:///{root / 'validator-1' / 'arena.sqlite3'}")
    events = SqlEventStore(database).load()
    state = replay(events)
    assert state.reign is not None
    assert state.reign.hotkey not in (hotkeys["cheater"], hotkeys["table-cheater"])
    assert uid[state.reign.hotkey] in weights.uids
    (rejected,) = [e for e in events if isinstance(e, SubmissionRejected)]
    assert rejected.hotkey == hotkeys["cheater"]
    assert [(f.rule, f.category) for f in rejected.findings] == [("embedded_product_id", "integrity")]
    statuses = {s.hotkey: s.status for s in state.submissions.values()}
    assert statuses.pop(hotkeys["cheater"]) == "rejected"
    # The copycat's renamed ReAct agent never qualified nor raced, and has no weight; the original did.
    assert statuses.pop(hotkeys["copycat"]) == "copy"
    assert uid[hotkeys["copycat"]] not in weights.uids
    copycat = next(s for s in state.submissions.values() if s.hotkey == hotkeys["copycat"])
    assert copycat.copy_of is not None and copycat.copy_of.hotkey == hotkeys["react"]
    assert copycat.qualifying_score is None and not copycat.races
    assert statuses.pop(hotkeys["baseline"]) == "copy"  # the bundled agent unchanged: nobody's original
    assert set(statuses) == {hotkeys[n] for n in ("parser", "react", "table-cheater")}
    # The table cheater carries every public problem's answers, but its qualifying problems were generated
    # from the block after its commitment: it knew none of them, failed qualifying and never raced.
    by_hotkey = {s.hotkey: s for s in state.submissions.values()}
    table = by_hotkey[hotkeys["table-cheater"]]
    assert table.status == "not_qualified" and table.qualifying_score == 0.0
    race = state.last_race
    assert race is not None and table.submission_id not in race.results
    # the clock moved only by the demo's own steps: the race finished at the tick its start gives
    assert race.finished_at == demo_race_tick(DEMO_START, RaceRules(race_time=race_time),
                                              block=timedelta(seconds=chain.block_seconds()))
    assert race.results[by_hotkey[hotkeys["react"]].submission_id] > 0.0
    # The bait parser races, but none of its completions is the model's decision: it ranks below ReAct.
    parser = by_hotkey[hotkeys["parser"]].submission_id
    assert parser in race.results
    assert race.results[parser] < race.results[by_hotkey[hotkeys["react"]].submission_id]
    assert race.standings.index(parser) > race.standings.index(by_hotkey[hotkeys["react"]].submission_id)
    assert state.reign.hotkey != hotkeys["table-cheater"]
    database.dispose()

    with TrajectoryStore.open(f"sqlite:///{root / 'validator-1' / 'trajectories.sqlite3'}") as store:
        stored = store.count_attempts()
    assert stored >= 3 * 9  # every accepted agent ran its own 9 qualifying problems, plus the race
    assert f"({stored} attempts:" in out


def test_a_rerun_wipes_its_own_root_and_refuses_anyone_elses(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    prepare_root(root)
    (root / "chain.sqlite3").write_bytes(b"old")
    prepare_root(root)
    assert sorted(p.name for p in root.iterdir()) == [MARKER]
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "precious").write_text("keep")
    with pytest.raises(typer.BadParameter, match="not made by the network demo"):
        prepare_root(foreign)
    assert (foreign / "precious").read_text() == "keep"


@pytest.mark.parametrize(("now", "wait", "expected"), [
    (datetime(2026, 11, 19, 9, 0, tzinfo=UTC), timedelta(0), datetime(2026, 11, 19, 16, 5, tzinfo=UTC)),
    (datetime(2026, 11, 19, 16, 0, tzinfo=UTC), timedelta(0), datetime(2026, 11, 20, 16, 5, tzinfo=UTC)),
    (datetime(2026, 11, 19, 23, 59, tzinfo=UTC), timedelta(0), datetime(2026, 11, 20, 16, 5, tzinfo=UTC)),
    # a slot closer than the wait is skipped: the demo's race must land in a later weights epoch
    (datetime(2026, 11, 19, 15, 50, tzinfo=UTC), timedelta(minutes=20),
     datetime(2026, 11, 20, 16, 5, tzinfo=UTC)),
    (datetime(2026, 11, 19, 15, 30, tzinfo=UTC), timedelta(minutes=20),
     datetime(2026, 11, 19, 16, 5, tzinfo=UTC)),
])
def test_the_race_tick_is_just_after_the_next_slot_beyond_the_wait(
        now: datetime, wait: timedelta, expected: datetime) -> None:
    assert next_race_tick(now, RaceRules(), wait=wait) == expected


def test_the_start_option_takes_an_iso_instant_only(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["network-demo", "--home", str(tmp_path), "--start", "Tuesday night"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 2 and "an ISO 8601 time such as 2026-11-16T09:00Z" in result.output
    assert not (tmp_path / "network-demo").exists()


def test_serve_says_where_the_validators_answer_and_stops_on_ctrl_c() -> None:
    console = Console(file=io.StringIO(), width=200)
    waited: list[bool] = []

    def interrupted() -> None:
        waited.append(True)
        raise KeyboardInterrupt

    serve_until_interrupted(console, wait=interrupted)(["http://127.0.0.1:8101", "http://127.0.0.1:8102"])
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert waited == [True] and "serving until Ctrl-C" in out
    assert "validator-2: http://127.0.0.1:8102/ (leaderboard), http://127.0.0.1:8102/docs (API)" in out
    assert out.rstrip().endswith("stores close now")
