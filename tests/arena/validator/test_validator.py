"""The validator's tick loop end to end: uploads -> qualifying -> race -> promotion -> weights on the
embedded chain, fast-forwarded with a manual clock.

Real pieces throughout: the bundled reference agents in the bubblewrap sandbox behind the verified
proxy, the offline judge, SQLite arena databases and trajectory stores, the local chain with sr25519
wallets. Test doubles only for what cannot exist here: the hosted LLM (the scripted shopping policy
served by ``shoppingbench.doubles.llm_server``) and the sentence embedder (``FakeEmbedder``).

Run as a script (``python -m tests.arena.validator.test_validator ...``) this module is the validator
process the SIGKILL test kills: its runner pauses after the first two attempts of a run (a slow agent, so
the kill lands mid-run deterministically), and the test kills it there; no handler runs, nothing is
flushed or closed.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from datetime import time as dt_time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import orjson
import pyarrow.parquet as pq
import pytest
from bittensor import Wallet
from sqlalchemy import Engine
from typer.testing import CliRunner

from arena.chain import AxonInfo, ChainError, LocalChain, SubtensorChain
from arena.judge import Judge, JudgeInput, JudgeVerdict
from arena.race import ManualClock, RaceEngine, RaceRules, SqlEventStore, SystemClock
from arena.race.events import (
    QualifyingFinished,
    RaceResultRecorded,
    RaceSkipped,
    RaceStarted,
    SubmissionAccepted,
    SubmissionRejected,
)
from arena.race.rules import qualifying_threshold
from arena.rules_fingerprint import RULES_VERSION
from arena.settings import ArenaSettings
from arena.storage import open_database
from arena.submissions import Submission, SubmissionGate, UploadBody, upload
from arena.submissions.store import FileStore, VerdictStore
from arena.suites import FixedSource, SuiteSource
from arena.validator import Validator, open_validator, run_id_for, sandbox_runner
from arena.validator.api import ArenaView
from arena.validator.api import create_app as create_api
from arena.validator.runs import RunAgent, defender_run_id
from neurons import validator as validator_cli
from shoppingbench.agents import react_llm, scripted_baseline
from shoppingbench.catalog_dir import open_catalog
from shoppingbench.doubles.demo_miners import tuned_react_source
from shoppingbench.doubles.llm_server import create_app
from shoppingbench.doubles.scripted_policies import shopping_policy
from shoppingbench.generator import ProblemGenerator
from shoppingbench.problems.models import CATEGORIES, Category, Problem
from shoppingbench.proxy import InferenceConfig
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.submission_check import check_agent
from shoppingbench.tools.serving import running_server
from tests.chain_support import CountingChain, make_wallet, past_upload_window, register
from tests.fake_substrate import BLOCK_MS, FakeSubstrate
from tests.sandbox_support import UID_BASE, fake_grader
from trajectories.doubles.synthetic import make_attempt
from trajectories.store import AttemptKey, ProblemEntry, RunKind, StoredAttempt, TrajectoryStore
from trajectories.store.site_reads import SiteReads

MODEL = "stub-shopper"
START = datetime(2026, 11, 19, 9, 0, tzinfo=UTC)  # a Thursday: the race at 16:00, embargo until Friday
REACT = Path(react_llm.__file__).read_bytes()
TUNED_REACT = tuned_react_source(REACT.decode())
"""A miner's own variant of the public ReAct agent: what the gate accepts (the public agent unchanged is
nobody's original, refused as a copy of it)."""
SCRIPTED = Path(scripted_baseline.__file__).read_bytes()
RECOMMENDS_NOTHING = b'"""Gives up on every problem."""\n\n\ndef agent_main(problem):\n    return []\n'


@pytest.fixture(scope="module")
def generator(small_world: SampleWorld) -> Iterator[ProblemGenerator]:
    """The problem generator over the small world's catalog, as each validator opens its own."""
    with ProblemGenerator.open(small_world.catalog_dir) as opened:
        yield opened


@contextmanager
def serving_runner(catalog_dir: Path, *, uid_base: int = UID_BASE, workers: int = 2) -> Iterator[RunAgent]:
    """The sandbox runner over the catalog, the agents' LLM being the scripted policy on loopback."""
    engine: BM25SearchEngine = open_catalog(catalog_dir)
    with running_server(create_app(shopping_policy, models=[MODEL])) as upstream:
        yield sandbox_runner(engine, fake_grader(engine),
                             inference=InferenceConfig(base_url=f"{upstream}/v1", models=[MODEL]),
                             sandbox=SandboxConfig(backend="namespace", uid_base=uid_base), workers=workers)
    engine.close()


@pytest.fixture(scope="module")
def runner(small_world: SampleWorld) -> Iterator[RunAgent]:
    with serving_runner(small_world.catalog_dir) as run_agent:
        yield run_agent


@dataclass
class Arena:
    """One local chain and its wallets; validators are opened over a home directory each."""

    root: Path
    clock: ManualClock
    chain: CountingChain
    miners: dict[str, Wallet]

    def settings(self, home: Path, per_category: int, concurrent_runs: int = 2) -> ArenaSettings:
        return ArenaSettings(home=home, qualifying_suite_per_category=per_category,
                             race_suite_per_category=per_category, concurrent_runs=concurrent_runs)

    def validator(self, name: str, generator: SuiteSource, run_agent: RunAgent, *,
                  per_category: int = 2, judge: Judge | None = None, concurrent_runs: int = 2) -> Validator:
        wallets = self.root / "wallets"
        wallet = make_wallet(wallets, name, seed=name) if not (wallets / name).exists() \
            else Wallet(name, "default", path=str(wallets))
        register(self.chain, wallet, validator_permit=True)
        settings = self.settings(self.root / name, per_category, concurrent_runs)
        store = TrajectoryStore.open(f"sqlite:///{self.root / name / 'trajectories.sqlite3'}")
        return open_validator(settings=settings, chain=self.chain, wallet=wallet, clock=self.clock,
                              sources=FixedSource(generator), run_agent=run_agent, store=store, judge=judge)

    def upload(self, validator: Validator, miner: str, source: bytes) -> str:
        return accept_upload(validator.files, validator.arena_db, self.miners[miner], source,
                             block=self.chain.block(), at=self.clock.now())


def accept_upload(files: FileStore, arena_db: Engine, miner: Wallet, source: bytes, *, block: int,
                  at: datetime) -> str:
    """What the submission gate stores for an accepted upload: the file and its verdict."""
    sha = hashlib.sha256(source).hexdigest()
    files.put(sha, source)
    VerdictStore(arena_db).record(Submission(
        hotkey=str(miner.hotkey.ss58_address), sha256=sha, name=f"{miner.name}.py", size_bytes=len(source),
        commitment_block=block, commitment_time=at, received_at=at), "accepted")
    return sha


@pytest.fixture
def arena(tmp_path: Path) -> Arena:
    clock = ManualClock(START)
    chain = CountingChain(tmp_path / "chain.sqlite3", clock=clock, tempo=100, weights_rate_limit=50)
    miners = {}
    for name in ("owner", "alice", "bob"):  # the subnet owner holds uid 0, the burn uid
        miners[name] = make_wallet(tmp_path / "wallets", name, seed=name)
        register(chain, miners[name])
    return Arena(root=tmp_path, clock=clock, chain=chain, miners=miners)


def test_weights_burn_before_the_first_race_then_follow_the_race(
        arena: Arena, generator: ProblemGenerator, runner: RunAgent) -> None:
    validator = arena.validator("validator", generator, runner)
    first = validator.tick()
    assert first.weights_set_at is not None
    assert validator.last_weights is not None and validator.last_weights.uids == (0,)  # all to the burn uid

    arena.upload(validator, "alice", REACT)
    arena.upload(validator, "bob", SCRIPTED)
    arena.clock.advance(timedelta(minutes=5))
    report = validator.tick()
    assert report.ingested == 2 and len(report.qualified) >= 1
    assert validator.race.race_due() is None  # 09:05, the slot is 16:00

    arena.clock.advance(timedelta(hours=7))  # 16:05: the race is due
    raced = validator.tick()
    assert raced.race_started == "2026-11-19"
    last = validator.race.state.last_race
    assert last is not None and last.promoted
    alice = str(arena.miners["alice"].hotkey.ss58_address)
    winner = validator.race.state.reign
    assert winner is not None and winner.hotkey == alice  # the ReAct agent outscores the regex one
    assert raced.weights_set_at is not None
    on_chain = arena.chain.weights(validator.hotkey)
    assert on_chain is not None and on_chain == validator.last_weights
    uid = {n.hotkey: n.uid for n in arena.chain.metagraph().neurons}[alice]
    shares = dict(zip(on_chain.uids, on_chain.weights, strict=True))
    assert shares[uid] == 65535 and shares[0] < 65535  # the winner's 0.6 is the largest; the rest burns

    # Every attempt is in the trajectory store under its deterministic run id, judged and labelled.
    race_suite = raced_suite(validator)
    qualifying: dict[str, list[str]] = {}
    for submission_id in last.entrants:
        submission = validator.race.state.submissions[submission_id]
        assert submission.status == "raced"
        own = validator.qualifying_suite(submission)
        assert own is not None
        qualifying[submission_id] = [p.id for p in own]
        runs: list[tuple[RunKind, list[str]]] = [("qualifying", qualifying[submission_id]),
                                                 ("race", race_suite)]
        for kind, suite in runs:
            run_id = run_id_for(kind, submission_id, suite)
            for problem_id in suite:
                key = AttemptKey(run_id, submission.code_hash, problem_id)
                attempt = validator.runs.store.get_attempt(key)
                assert attempt is not None and attempt.judge is not None and attempt.label is not None
                assert attempt.judge.gates_passed is not None  # the judge's gate, stored with its verdict
                found = SiteReads(validator.runs.store).attempt(attempt.id)
                assert found is not None and (found.run_submission_id, found.run_role) == (
                    submission_id, "challenger" if kind == "qualifying" else "entrant")
    # Each agent ran its own qualifying problems (no winner reigned, so nobody else ran them) and the race.
    alice_problems, bob_problems = qualifying.values()
    assert alice_problems != bob_problems and len(alice_problems) == len(bob_problems)
    assert validator.runs.store.count_attempts() == 2 * len(alice_problems) + 2 * len(race_suite)
    # Each race result carries its per-problem outcomes in suite order, for the promotion test.
    results = [e for e in validator.race.store.load() if isinstance(e, RaceResultRecorded)]
    assert len(results) == 2 and all([o.problem_id for o in e.outcomes] == race_suite for e in results)
    assert not set(race_suite) & {*alice_problems, *bob_problems}

    # Day two: Bob's new agent, measured against the winner's score on Bob's new problems. It recommends
    # nothing, so it fails the bar whatever problems the seed draws (his scripted agent's fate would be
    # the luck of a six-problem draw).
    arena.clock.advance(timedelta(hours=17))  # Friday 09:05
    arena.upload(validator, "bob", RECOMMENDS_NOTHING)
    past_upload_window(arena.clock, arena.chain)  # the first block after the upload window is final
    assert validator.tick().qualified == []
    (finished,) = [e for e in validator.race.store.load() if isinstance(e, QualifyingFinished)][-1:]
    assert finished.winner == winner.submission_id and finished.winner_score is not None
    assert finished.threshold == qualifying_threshold(finished.winner_score, validator.race.rules)
    assert finished.score < finished.threshold
    newest = validator.race.state.submissions[finished.submission_id]
    bob_again = validator.qualifying_suite(newest)
    assert bob_again is not None
    winner_code = validator.race.state.submissions[winner.submission_id].code_hash
    defended = [validator.runs.store.get_attempt(AttemptKey(defender_run_id(winner_code), winner_code, p.id))
                for p in bob_again]
    assert all(a is not None and a.judge is not None for a in defended)  # the winner ran Bob's problems
    found = SiteReads(validator.runs.store).attempt(defended[0].id) if defended[0] else None
    assert found is not None
    assert (found.run_submission_id, found.run_role) == (winner.submission_id, "defender")
    assert validator.runs.store.count_attempts() == (2 * len(alice_problems) + 2 * len(race_suite)
                                                     + 2 * len(bob_again))
    arena.clock.advance(timedelta(hours=7))
    skipped = validator.tick()
    assert skipped.race_started is None  # no challenger: the slot is skipped, the reign goes on
    assert validator.race.state.reign == winner
    assert validator.race.state.last_settled_day == date(2026, 11, 20)
    again = arena.chain.weights(validator.hotkey)
    assert skipped.weights_set_at is not None and again is not None
    assert arena.chain.last_weights_block(validator.hotkey) == skipped.weights_set_at
    assert again.to_bytes() == on_chain.to_bytes()


def test_a_restart_within_the_epoch_does_not_set_weights_again(
        arena: Arena, generator: ProblemGenerator, runner: RunAgent) -> None:
    """The epoch of the last weights is in the arena database: a validator restarted within it leaves the
    chain alone (its rate limit would refuse a second set), and sets them again in the next epoch."""
    first = arena.validator("validator", generator, runner)
    assert first.tick().weights_set_at == 0 and arena.chain.calls["set_weights"] == 1
    arena.clock.advance(timedelta(minutes=2))  # block 10 of the 100-block epoch
    restarted = arena.validator("validator", generator, runner)
    assert restarted.tick().weights_set_at is None and arena.chain.calls["set_weights"] == 1
    arena.clock.advance(timedelta(minutes=18))  # block 100: the next epoch
    assert restarted.tick().weights_set_at == 100 and arena.chain.calls["set_weights"] == 2
    assert arena.chain.last_weights_block(restarted.hotkey) == 100
    assert arena.chain.weights_version(restarted.hotkey) == RULES_VERSION  # the rules version, every time


NETUID = 11


def test_a_validator_on_a_bittensor_network_races_on_the_hash_of_the_slot_block(
        tmp_path: Path, generator: ProblemGenerator, runner: RunAgent,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same tick loop through the SDK adapter against ``FakeSubstrate`` (the chain's test double): the
    race seed is the hash of the first final block at or after the slot, the weights go through
    ``SetWeights``."""
    monkeypatch.setenv("BTCLI_TOKEN_SYMBOLS_CACHE", str(tmp_path / "symbols.json"))
    clock = ManualClock(START)
    # Block 1000 at START.
    substrate = FakeSubstrate(genesis_ms=int(START.timestamp() * 1000) - 1_000 * BLOCK_MS)
    substrate.add_subnet(NETUID, tempo=100, weights_rate_limit=50)
    wallets = {name: make_wallet(tmp_path / "wallets", name, seed=name)
               for name in ("owner", "validator", "alice")}
    for name, wallet in wallets.items():
        substrate.register(NETUID, str(wallet.hotkey.ss58_address), str(wallet.coldkeypub.ss58_address),
                           permit=name == "validator")
    chain = SubtensorChain("test", NETUID, substrate=substrate)  # type: ignore[arg-type]
    # Three qualifying problems per category: with one, whether the ReAct agent qualifies hangs on
    # which three problems the week happens to draw.
    settings = ArenaSettings(home=tmp_path / "validator", qualifying_suite_per_category=3,
                             race_suite_per_category=1)
    store = TrajectoryStore.open(f"sqlite:///{tmp_path / 'validator' / 'trajectories.sqlite3'}")
    validator = open_validator(settings=settings, chain=chain, wallet=wallets["validator"], clock=clock,
                               sources=FixedSource(generator), run_agent=runner, store=store)

    def until(when: datetime) -> None:
        clock.advance(when - clock.now())
        while substrate.timestamp_ms(substrate.head) + BLOCK_MS <= when.timestamp() * 1000:
            substrate.advance(1)

    assert validator.tick().weights_set_at is not None  # 09:00: burn-only weights, yesterday's slot skipped
    accept_upload(validator.files, validator.arena_db, wallets["alice"], REACT, block=substrate.head,
                  at=clock.now())
    until(START + timedelta(minutes=5))
    assert len(validator.tick().qualified) == 1
    until(START + timedelta(hours=3))
    substrate.advance(30, block_ms=5 * BLOCK_MS)  # missed slots: the chain falls 120 blocks behind 12 s
    until(START + timedelta(hours=7, minutes=5))  # 16:05

    raced = validator.tick()
    assert raced.race_started == "2026-11-19"
    slot_ms = (START + timedelta(hours=7)).timestamp() * 1000
    block = next(n for n in range(1_000, substrate.head) if substrate.timestamp_ms(n) >= slot_ms)
    (started,) = [e for e in validator.race.store.load() if isinstance(e, RaceStarted)]
    assert started.seed == substrate.hash_of(block)
    dests, weights = substrate.subnets[NETUID].weights[1]  # set by the validator, uid 1
    assert substrate.subnets[NETUID].weight_versions[1] == RULES_VERSION
    assert 2 in dests and weights[dests.index(2)] == max(weights)  # alice, uid 2, won and has the top share
    store.close()
    chain.close()


def raced_suite(validator: Validator) -> list[str]:
    started = [e for e in validator.race.store.load() if isinstance(e, RaceStarted)]
    return list(started[-1].suite_ids)


def run_day(arena: Arena, validators: Sequence[Validator]) -> None:
    """Alice (ReAct) and Bob (scripted) upload at 09:00; every validator ticks at 09:05 and 16:05."""
    for validator in validators:
        arena.upload(validator, "alice", REACT)
        arena.upload(validator, "bob", SCRIPTED)
    for step in (timedelta(minutes=5), timedelta(hours=7)):
        arena.clock.advance(step)
        for validator in validators:
            validator.tick()


def test_two_validators_fed_the_same_uploads_set_byte_identical_weights(
        arena: Arena, generator: ProblemGenerator, runner: RunAgent) -> None:
    first = arena.validator("first", generator, runner)
    second = arena.validator("second", generator, runner)
    assert first.arena_db.url != second.arena_db.url
    run_day(arena, [first, second])
    assert raced_suite(first) == raced_suite(second)  # the same seed from the same block, the same catalog
    one, two = arena.chain.weights(first.hotkey), arena.chain.weights(second.hotkey)
    assert one is not None and two is not None
    assert one.to_bytes() == two.to_bytes()
    assert one.uids != (0,)  # not the burn-only vector of before the race


def test_a_validator_started_after_the_first_race_generates_the_same_suites_and_weights(
        arena: Arena, generator: ProblemGenerator, small_world: SampleWorld, runner: RunAgent) -> None:
    """Race suites are a function of the chain's seeds, the catalog and the settings: a validator that
    joined a day late, with none of the first one's history (race log, exposure ledger, suite cache),
    regenerates the first race's suite and races the second day on the same problems. With the same
    agent racing there (Alice's, defending on the first validator, new on the late one), both set the same
    weights."""
    first = arena.validator("first", generator, runner)
    run_day(arena, [first])
    day_one = raced_suite(first)
    arena.clock.advance(timedelta(hours=16, minutes=50))  # Friday 08:55
    with ProblemGenerator.open(small_world.catalog_dir) as own_generator:
        late = arena.validator("late", own_generator, runner)
        regenerated = late.suites.race_suite(date(2026, 11, 19))
        assert regenerated is not None and [p.id for p in regenerated.problems] == day_one
        arena.clock.advance(timedelta(minutes=5))  # 09:00: the cooldown of Thursday's upload is over
        for validator in (first, late):
            arena.upload(validator, "alice", REACT)
        for step in (timedelta(minutes=5), timedelta(hours=7)):
            arena.clock.advance(step)
            for validator in (first, late):
                validator.tick()
        day_two = raced_suite(first)
        assert raced_suite(late) == day_two and not set(day_two) & set(day_one)
        one, two = arena.chain.weights(first.hotkey), arena.chain.weights(late.hotkey)
        assert one is not None and two is not None and one.uids != (0,)
        assert one.to_bytes() == two.to_bytes()


class UsedUp:
    """The real generator over a catalog whose burn window has used up every race target: qualifying
    suites as usual, race suites empty (what ``generate`` returns when nothing unburnt is solvable)."""

    def __init__(self, generator: ProblemGenerator) -> None:
        self.generator = generator
        self.key = generator.key

    def generate(self, seed: str, per_category: Mapping[Category, int], *,
                 exclude_products: AbstractSet[str] = frozenset()) -> list[Problem]:
        if seed.startswith("race/"):
            return []
        return self.generator.generate(seed, per_category, exclude_products=exclude_products)


def test_a_race_day_without_problems_is_skipped_and_weights_are_still_set(
        arena: Arena, generator: ProblemGenerator, runner: RunAgent) -> None:
    validator = arena.validator("validator", UsedUp(generator), runner)
    validator.tick()
    arena.upload(validator, "alice", REACT)
    arena.clock.advance(timedelta(minutes=5))
    assert len(validator.tick().qualified) == 1
    arena.clock.advance(timedelta(hours=7))  # 16:05: the race is due, and nothing can be generated
    report = validator.tick()
    assert report.race_started is None and report.weights_set_at is not None
    skipped = [e for e in validator.race.store.load() if isinstance(e, RaceSkipped)]
    assert skipped[-1].day == date(2026, 11, 19) and "no problems could be generated" in skipped[-1].reason
    assert validator.race.state.running is None and validator.last_weights is not None
    assert validator.last_weights.uids == (0,)  # no race ever finished: everything still burns


def test_an_unreadable_seed_is_asked_for_again_and_weights_are_still_set(
        arena: Arena, generator: ProblemGenerator, runner: RunAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    """No local fallback seed: a chain read that fails leaves qualifying and the race for the next tick."""
    def unreachable(block: int) -> str:
        raise ChainError(f"reading block {block}: the node did not answer")

    validator = arena.validator("validator", generator, runner)
    validator.tick()
    arena.upload(validator, "alice", REACT)
    arena.clock.advance(timedelta(minutes=5))
    with monkeypatch.context() as patch:
        patch.setattr(arena.chain, "block_hash", unreachable)
        assert validator.tick().qualifying_runs == 0
    assert [s.status for s in validator.race.state.submissions.values()] == ["qualifying"]
    assert validator.tick().qualifying_runs == 1
    arena.clock.advance(timedelta(hours=7))
    with monkeypatch.context() as patch:
        patch.setattr(arena.chain, "block_hash", unreachable)
        waiting = validator.tick()
    assert waiting.race_started is None and waiting.weights_set_at is not None
    assert validator.race.race_due() == date(2026, 11, 19)  # still due: nothing was skipped or made up
    arena.clock.advance(timedelta(minutes=1))
    assert validator.tick().race_started == "2026-11-19"


def test_uploads_are_ingested_once_and_rejections_reach_the_race_log(
        arena: Arena, generator: ProblemGenerator, runner: RunAgent) -> None:
    validator = arena.validator("validator", generator, runner)
    committed_at = arena.chain.block()
    arena.upload(validator, "bob", SCRIPTED)
    bad = Submission(hotkey=str(arena.miners["alice"].hotkey.ss58_address), sha256="ab" * 32, name="bad.py",
                     size_bytes=10, commitment_block=arena.chain.block(), commitment_time=arena.clock.now(),
                     received_at=arena.clock.now())
    VerdictStore(validator.arena_db).record(bad, "security")
    assert validator.tick().ingested == 2
    assert validator.tick().ingested == 0
    restarted = arena.validator("validator", generator, runner)
    assert restarted.tick().ingested == 0  # the race log says what was fed, across restarts
    kinds = [type(e).__name__ for e in restarted.race.store.load()]
    assert kinds.count("SubmissionAccepted") == 1 and kinds.count("SubmissionRejected") == 1
    (accepted,) = [e for e in restarted.race.store.load() if isinstance(e, SubmissionAccepted)]
    assert accepted.commitment_block == committed_at  # the chain's order breaks ties, not ingest time


def test_public_api_serves_race_state_scores_embargo_and_code_after_it(
        arena: Arena, generator: ProblemGenerator, runner: RunAgent) -> None:
    validator = arena.validator("validator", generator, runner)
    validator.tick()  # 09:00: yesterday's slot passes without challengers
    run_day(arena, [validator])
    view = ArenaView(events=validator.race.store, store=validator.runs.store, files=validator.files,
                     clock=arena.clock)
    alice = str(arena.miners["alice"].hotkey.ss58_address)
    with running_server(create_api(view)) as url, httpx.Client(base_url=url) as http:
        assert http.get("/health").json()["status"] == "ok"
        winner = http.get("/winner").json()
        assert winner["hotkey"] == alice
        assert winner["embargo"]["embargo_until"] == "2026-11-20T00:00:00Z"
        assert winner["embargo"]["published_at"] is None
        race = http.get("/race").json()
        assert race["running"] is None and race["last_race"]["winner"] == winner["submission_id"]
        assert http.get("/qualifiers").json() == []  # both raced
        refused = http.get(f"/code/{winner['submission_id']}")
        assert refused.status_code == 403 and "embargo until 2026-11-20" in refused.json()["detail"]

        page = http.get("/scores").json()
        assert (page["page"], page["total"]) == (1, 4)  # two qualifying runs and two race runs
        scores = page["items"]
        assert http.get("/scores", params={"page": 2}).json()["items"] == []
        newest = http.get("/scores", params={"page_size": 1}).json()["items"]
        assert len({s["run_id"] for s in newest}) == 1 and len(newest) == len(CATEGORIES)
        assert newest[0]["kind"] == "race"  # the race ran after both qualifying runs
        assert {(s["kind"], s["category"]) for s in scores} == {(k, c) for k in ("qualifying", "race")
                                                                for c in CATEGORIES}
        assert all(s["attempts"] == 2 and 0 <= s["success_rate"] <= 1 for s in scores)
        scripted = [s["mean_quality"] for s in scores if s["hotkey"] != alice]
        react = [s["mean_quality"] for s in scores if s["hotkey"] == alice]
        assert len(react) == len(scripted) == 6
        # The offline judge's verdicts: the regex agent never reasons, ReAct cites data on every draw.
        assert scripted == pytest.approx([0.1] * 6) and min(react) >= 0.5

        metrics = http.get("/metrics").text
        assert 'arena_submissions{status="raced"} 2.0' in metrics and "arena_embargoed_agents 1.0" in metrics
        page = http.get("/")
        assert page.status_code == 200 and alice in page.text and "under embargo until" in page.text

        arena.clock.advance(timedelta(hours=8))  # Friday 00:05: the embargo has ended
        validator.tick()
        published = http.get(f"/code/{winner['submission_id']}")
        assert published.status_code == 200 and published.text.encode() == REACT
        assert http.get("/embargo").json()[0]["published_at"] is not None
        assert http.get(f"/code/{validator.race.state.last_race.standings[1]}").status_code == 403  # type: ignore[union-attr]
        assert http.get("/code/nope").status_code == 404


CHILD_UID_BASE = UID_BASE + 8
"""The killed child's sandbox uids: apart from the restarted validator's."""


def pausing_after(records: int, run_agent: RunAgent, marker: Path) -> RunAgent:
    def run(agent: AgentFile, problems: Sequence[Problem], run_id: str) -> Iterator[AttemptRecord]:
        for n, record in enumerate(run_agent(agent, problems, run_id), start=1):
            yield record
            if n == records:  # the consumer has recorded these (and asked for verdicts): wait for the kill
                written = marker.with_suffix(".partial")  # renamed whole: never read half-written
                written.write_text(run_id)
                written.rename(marker)
                time.sleep(600)
    return run


def pausing_all(runs: int, records: int, run_agent: RunAgent, marker: Path) -> RunAgent:
    """Every run pauses after its first ``records`` attempts; once ``runs`` runs are paused at once, the
    marker names them (the kill then lands with all of them mid-run)."""
    paused: list[str] = []
    lock = threading.Lock()

    def run(agent: AgentFile, problems: Sequence[Problem], run_id: str) -> Iterator[AttemptRecord]:
        for n, record in enumerate(run_agent(agent, problems, run_id), start=1):
            yield record
            if n == records:
                with lock:
                    paused.append(run_id)
                    if len(paused) == runs:
                        written = marker.with_suffix(".partial")
                        written.write_text("\n".join(sorted(paused)))
                        written.rename(marker)
                time.sleep(600)
    return run


def reopen(root: Path, at: datetime) -> Arena:
    clock = ManualClock(at)
    chain = CountingChain(root / "chain.sqlite3", clock=clock, tempo=100, weights_rate_limit=50)
    miners = {name: Wallet(name, "default", path=str(root / "wallets")) for name in ("owner", "alice", "bob")}
    return Arena(root=root, clock=clock, chain=chain, miners=miners)


def child(root: Path, catalog_dir: Path, at: str, marker: Path, concurrent_runs: int = 1) -> None:
    arena = reopen(root, datetime.fromisoformat(at))
    with serving_runner(catalog_dir, uid_base=CHILD_UID_BASE, workers=1) as run_agent, \
            ProblemGenerator.open(catalog_dir) as generator:
        paused = pausing_after(2, run_agent, marker) if concurrent_runs == 1 else \
            pausing_all(concurrent_runs, 2, run_agent, marker)
        validator = arena.validator("validator", generator, paused, concurrent_runs=concurrent_runs)
        validator.tick()
    raise SystemExit("the child was not killed")


def test_sigkill_mid_qualifying_then_restart_finishes_the_run_exactly_once(
        arena: Arena, small_world: SampleWorld, generator: ProblemGenerator, runner: RunAgent) -> None:
    first = arena.validator("validator", generator, runner)
    first.tick()  # 09:00: nothing to do yet (yesterday's slot is skipped without challengers)
    arena.upload(first, "alice", REACT)
    arena.clock.advance(timedelta(minutes=5))
    first.arena_db.dispose()
    first.runs.store.close()

    marker = arena.root / "paused"
    kill_child_mid_run(arena, small_world.catalog_dir, marker)

    restarted = arena.validator("validator", generator, runner)
    events = restarted.race.store.load()
    (accepted,) = [e for e in events if isinstance(e, SubmissionAccepted)]
    assert not [e for e in events if isinstance(e, QualifyingFinished)]  # killed before the score was in
    qualifying = restarted.qualifying_suite(restarted.race.state.submissions[accepted.submission_id])
    assert qualifying is not None
    suite = [p.id for p in qualifying]
    run_id = run_id_for("qualifying", accepted.submission_id, suite)
    assert marker.read_text() == run_id
    store = restarted.runs.store
    keys = [AttemptKey(run_id, accepted.code_hash, pid) for pid in suite]
    before = {k: a for k in keys if (a := store.get_attempt(k)) is not None}
    # Verdicts are asked on a pool and stored as they come back: a kill may land between an attempt and
    # its verdict, and the restart then judges what is unjudged (without running the attempt again).
    assert len(before) == 2

    resume_and_check_kept(restarted, keys, before)
    assert store.count_attempts() == len(suite)
    finished = [e for e in restarted.race.store.load() if isinstance(e, QualifyingFinished)]
    assert [e.submission_id for e in finished] == [accepted.submission_id]
    assert restarted.tick().qualifying_runs == 0  # nothing is owed any more


def resume_and_check_kept(restarted: Validator, keys: list[AttemptKey],
                          before: dict[AttemptKey, StoredAttempt]) -> None:
    """One tick of the restarted validator: every attempt of ``keys`` is then stored, judged and labelled,
    and those stored before the kill are kept as they were, not run again."""
    store = restarted.runs.store
    restarted.tick()
    after = {k: store.get_attempt(k) for k in keys}
    assert all(a is not None and a.judge is not None and a.label is not None for a in after.values())
    for key, attempt in before.items():
        resumed = after[key]
        assert resumed is not None and resumed.id == attempt.id
        assert resumed.record.started_at == attempt.record.started_at


def kill_child_mid_run(arena: Arena, catalog_dir: Path, marker: Path, concurrent_runs: int = 1) -> None:
    """Start the child validator over ``arena``'s home, wait for its marker, SIGKILL it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.arena.validator.test_validator", str(arena.root), str(catalog_dir),
         arena.clock.now().isoformat(), str(marker), str(concurrent_runs)],
        cwd=Path(__file__).resolve().parents[3], env={**os.environ, "HF_HUB_OFFLINE": "1"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while not marker.exists():
            assert process.poll() is None, process.stderr.read().decode()[-3000:] if process.stderr else ""
            assert time.monotonic() < deadline, "the child never reached the middle of its runs"
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        assert process.wait(timeout=10) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr:
            process.stderr.close()


def test_sigkill_with_two_qualifying_runs_mid_way_then_restart_finishes_both_exactly_once(
        arena: Arena, small_world: SampleWorld, generator: ProblemGenerator, runner: RunAgent) -> None:
    first = arena.validator("validator", generator, runner)
    first.tick()
    arena.upload(first, "alice", REACT)
    arena.upload(first, "bob", SCRIPTED)
    arena.clock.advance(timedelta(minutes=5))
    first.arena_db.dispose()
    first.runs.store.close()

    marker = arena.root / "paused"
    kill_child_mid_run(arena, small_world.catalog_dir, marker, concurrent_runs=2)

    restarted = arena.validator("validator", generator, runner)
    accepted = [e for e in restarted.race.store.load() if isinstance(e, SubmissionAccepted)]
    hotkeys = [str(arena.miners[m].hotkey.ss58_address) for m in ("alice", "bob")]
    assert sorted(e.hotkey for e in accepted) == sorted(hotkeys)
    assert not [e for e in restarted.race.store.load() if isinstance(e, QualifyingFinished)]
    keys: list[AttemptKey] = []
    run_ids = []
    for submission in accepted:
        qualifying = restarted.qualifying_suite(restarted.race.state.submissions[submission.submission_id])
        assert qualifying is not None
        suite = [p.id for p in qualifying]
        run_ids.append(run_id_for("qualifying", submission.submission_id, suite))
        keys += [AttemptKey(run_ids[-1], submission.code_hash, pid) for pid in suite]
    assert marker.read_text().splitlines() == sorted(run_ids)  # both runs were mid-way at the kill
    store = restarted.runs.store
    before = {k: a for k in keys if (a := store.get_attempt(k)) is not None}
    assert len(before) == 4 and {k.run_id for k in before} == set(run_ids)

    resume_and_check_kept(restarted, keys, before)
    assert store.count_attempts() == len(keys)  # none lost, none doubled
    finished = [e for e in restarted.race.store.load() if isinstance(e, QualifyingFinished)]
    assert [e.submission_id for e in finished] == [e.submission_id for e in accepted]  # in the owed order
    assert restarted.tick().qualifying_runs == 0


class FinishingLast:
    """Wraps a runner so that a run started before another one finishes only after it: the validator
    must still record outcomes in the order a sequential tick would."""

    def __init__(self, run_agent: RunAgent) -> None:
        self.run_agent = run_agent
        self.started: list[str] = []
        self.finished: list[str] = []
        self.overtaken = 0
        self._changed = threading.Condition()

    def __call__(self, agent: AgentFile, problems: Sequence[Problem], run_id: str) -> Iterator[AttemptRecord]:
        with self._changed:
            self.started.append(run_id)
            mine = len(self.started)
            self._changed.notify_all()
            # Its partner of the tick is asked for at once (two runs at a time): wait until it has started.
            self._changed.wait_for(lambda: len(self.started) > mine or mine % 2 == 0, timeout=120)
        records = list(self.run_agent(agent, problems, run_id))
        with self._changed:
            later = self.started[mine:]
            self._changed.wait_for(lambda: all(r in self.finished for r in later), timeout=300)
            self.overtaken += bool(later)
            self.finished.append(run_id)
            self._changed.notify_all()
        yield from records


def outcomes(validator: Validator) -> list[tuple[str, str, float]]:
    return [(type(e).__name__, e.submission_id, e.score) for e in validator.race.store.load()
            if isinstance(e, QualifyingFinished | RaceResultRecorded)]


def test_concurrent_runs_are_recorded_in_the_sequential_order_whatever_finishes_first(
        arena: Arena, generator: ProblemGenerator, runner: RunAgent) -> None:
    reversed_finish = FinishingLast(runner)
    sequential = arena.validator("sequential", generator, runner, concurrent_runs=1)
    concurrent = arena.validator("concurrent", generator, reversed_finish, concurrent_runs=2)
    run_day(arena, [sequential, concurrent])
    assert reversed_finish.overtaken == 2  # the qualifying pair and the race pair each finished backwards
    assert reversed_finish.finished != reversed_finish.started
    kinds = [kind for kind, _, _ in outcomes(concurrent)]
    assert kinds == ["QualifyingFinished"] * 2 + ["RaceResultRecorded"] * 2
    assert outcomes(concurrent) == outcomes(sequential)
    one, two = arena.chain.weights(sequential.hotkey), arena.chain.weights(concurrent.hotkey)
    assert one is not None and two is not None and one.to_bytes() == two.to_bytes()


if __name__ == "__main__":
    child(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4]),
          int(sys.argv[5]) if len(sys.argv) > 5 else 1)


def test_validator_run_once_wires_the_service_from_settings(tmp_path: Path, small_world: SampleWorld,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``validator run --once --catalog DIR --netuid N`` with the real embedder, sandbox and local chain
    (system clock): the imported catalog is served (no sample world is built); an upload the gate accepted
    is qualified on the generated qualifying suite but waits (the latest slot passed before it qualified);
    an agent committed and qualified two days ago races that slot's generated suite and wins; weights are
    set."""
    home = tmp_path / "home"
    # Three qualifying problems per category: the system clock picks the seed blocks, so the problems
    # differ per run, and an honest agent's score on one per category would be a coin toss.
    for name, value in {"ARENA_HOME": str(home), "ARENA_QUALIFYING_SUITE_PER_CATEGORY": "3",
                        "ARENA_RACE_SUITE_PER_CATEGORY": "1", "ARENA_SANDBOX_UID_BASE": str(UID_BASE),
                        "ARENA_WORKERS": "2"}.items():
        monkeypatch.setenv(name, value)
    # A chain three days old: the latest slot's seed block comes long after bob's commitment at block 0.
    chain = LocalChain(home / "local-chain.sqlite3", netuid=7,
                       clock=ManualClock(datetime.now(UTC) - timedelta(days=3)))
    wallets = tmp_path / "wallets"
    for name in ("owner", "validator", "alice", "bob"):
        register(chain, make_wallet(wallets, name, seed=name), validator_permit=name == "validator")
    accept_upload(FileStore(home / "agents"), open_database(f"sqlite:///{home / 'arena.sqlite3'}"),
                  Wallet("alice", "default", path=str(wallets)), REACT, block=chain.block(),
                  at=datetime.now(UTC))
    bob = str(Wallet("bob", "default", path=str(wallets)).hotkey.ss58_address)
    FileStore(home / "agents").put(hashlib.sha256(SCRIPTED).hexdigest(), SCRIPTED)
    earlier = RaceEngine(SqlEventStore.open(f"sqlite:///{home / 'arena.sqlite3'}"), RaceRules(),
                         ManualClock(datetime.now(UTC) - timedelta(days=2)))
    waiting = earlier.submit(bob, hashlib.sha256(SCRIPTED).hexdigest(), commitment_block=0).submission_id
    assert waiting and earlier.record_qualifying(waiting, 0.5).qualified

    result = CliRunner().invoke(validator_cli.app, [
        "run", "--once", "--scripted-llm", "--wallet-name", "validator", "--wallet-path", str(wallets),
        "--netuid", "7", "--catalog", str(small_world.catalog_dir)])
    assert result.exit_code == 0, result.output
    assert not (home / "worlds").exists()
    assert '"event": "validator_rules"' in result.output  # the fingerprint is logged at start-up
    assert '"event": "peers_checked"' in result.output  # the look at the other validators after the tick
    validator_hotkey = str(Wallet("validator", "default", path=str(wallets)).hotkey.ss58_address)
    weights = chain.weights(validator_hotkey)
    assert weights is not None and chain.weights_version(validator_hotkey) == RULES_VERSION
    alice_uid, bob_uid = 2, 3
    assert bob_uid in weights.uids and alice_uid not in weights.uids  # bob, the only entrant, won
    database = open_database(f"sqlite:///{home / 'arena.sqlite3'}")
    events = SqlEventStore(database).load()
    database.dispose()
    assert [e.qualified for e in events if isinstance(e, QualifyingFinished)] == [True, True]
    (started,) = [e for e in events if isinstance(e, RaceStarted)]
    assert started.entrants == (waiting,) and started.seed_block is not None and started.seed_block > 0
    with TrajectoryStore.open(f"sqlite:///{home / 'trajectories.sqlite3'}") as store:
        assert store.count_attempts() == 12  # alice's 9 qualifying + bob's 3 race attempts


def test_validator_run_says_what_to_do_when_the_wallet_or_the_chain_is_wrong(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Refusals before any work (the sample world is not even built): exit 5 and what to do."""
    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BTCLI_TOKEN_SYMBOLS_CACHE", str(tmp_path / "symbols.json"))
    wallets = tmp_path / "wallets"

    def run(*args: str) -> str:
        result = CliRunner().invoke(validator_cli.app,
                                    ["run", "--once", "--wallet-path", str(wallets), *args])
        assert result.exit_code == validator_cli.EXIT_CHAIN, result.output
        return result.output

    assert "create the wallet (`btcli wallet create --wallet nobody --wallet-hotkey default`)" in run(
        "--wallet-name", "nobody")
    make_wallet(wallets, "validator")
    unregistered = run("--chain", "local")
    assert "is not registered on subnet 1" in unregistered
    assert "btcli subnets register --netuid 1" in unregistered
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    unreachable = run("--chain", f"ws://127.0.0.1:{port}")  # nothing listens there
    assert "could not connect" in unreachable and "node reachable from here" in unreachable
    assert "Known networks" in run("--chain", "nonsense")
    assert not (tmp_path / "home" / "worlds").exists()


def test_leaderboard_page_renders_in_headless_chromium(
        arena: Arena, generator: ProblemGenerator, runner: RunAgent, tmp_path: Path) -> None:
    """The page as a browser sees it (Debian ``chromium``: ``apt-get install -y chromium``)."""
    browser = shutil.which("chromium")
    assert browser is not None, "install the browser: apt-get install -y chromium"
    validator = arena.validator("validator", generator, runner)
    validator.tick()
    run_day(arena, [validator])
    view = ArenaView(events=validator.race.store, store=validator.runs.store, files=validator.files,
                     clock=arena.clock)
    with running_server(create_api(view)) as url:
        shown = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                f"--user-data-dir={tmp_path / 'chromium'}", "--dump-dom", url + "/"],
                               capture_output=True, text=True, timeout=60, check=True).stdout
    last = validator.race.state.last_race
    assert last is not None
    standings = shown[shown.index('id="standings"'):shown.index("</table>", shown.index('id="standings"'))]
    rows = [validator.race.state.submissions[sid].hotkey for sid in last.standings]
    assert standings.count("<tr>") == 1 + len(rows)  # header + one row per entrant, in finishing order
    positions = [standings.index(hotkey) for hotkey in rows]
    assert positions == sorted(positions)
    winner = shown[shown.index('id="winner"'):shown.index('id="race"')]
    assert rows[0] in winner and "under embargo until" in winner


def test_signed_uploads_through_the_validator_api_reach_qualifying(
        arena: Arena, generator: ProblemGenerator, runner: RunAgent) -> None:
    """Miners commit on chain and upload over signed HTTP to the API the validator serves; the next tick
    qualifies the accepted agent and records the static-analysis rejection."""
    validator = arena.validator("validator", generator, runner)
    # `upload` signs with the real time: the gate measures nonces on it, the rest on the arena's clock.
    gate = SubmissionGate(chain=arena.chain, validator_hotkey=validator.hotkey, engine=validator.arena_db,
                          files_dir=validator.files.root, rules=validator.race.rules, clock=arena.clock,
                          known_product_ids=validator.known_answers, nonce_clock=SystemClock())
    view = ArenaView(events=validator.race.store, store=validator.runs.store, files=validator.files,
                     clock=arena.clock)
    hostile = b"import subprocess\n\ndef agent_main(problem):\n    return []\n"
    with running_server(create_api(view, gate=gate)) as url, httpx.Client(timeout=30) as http:
        address = urlsplit(url)
        assert address.hostname is not None and address.port is not None
        arena.chain.serve_axon(validator.wallet, AxonInfo(ip=address.hostname, port=address.port))
        (neuron,) = [n for n in arena.chain.metagraph().neurons if n.hotkey == validator.hotkey]
        outcomes = {}
        for miner, source in (("alice", TUNED_REACT), ("bob", hostile)):
            arena.chain.commit(arena.miners[miner], hashlib.sha256(source).hexdigest())
            outcomes[miner] = upload(http, arena.miners[miner], neuron, UploadBody.of(f"{miner}.py", source))
        assert outcomes["alice"].outcome == "accepted"
        assert outcomes["bob"].outcome == "refused" and outcomes["bob"].error == "static_analysis"

        early = validator.tick()  # Alice's qualifying seed block does not exist yet: asked again later
        assert early.ingested == 2 and early.qualifying_runs == 0
        (waiting,) = [s for s in validator.race.state.submissions.values() if s.status == "qualifying"]
        assert http.get(f"{url}/qualifying/{waiting.submission_id}").status_code == 404  # nothing to publish
        past_upload_window(arena.clock, arena.chain)
        report = validator.tick()
        assert report.ingested == 0 and report.qualifying_runs == 1
        # Once scored, its qualifying problems are public, answers included.
        published = http.get(f"{url}/qualifying/{waiting.submission_id}").json()
        generated = validator.qualifying_suite(waiting)
        assert generated is not None
        assert sorted(p["id"] for p in published) == sorted(p.id for p in generated)
        assert all(p["reward"] for p in published)
        submissions = {s["hotkey"]: s for s in http.get(url + "/submissions").json()}
        page = http.get(url + "/").text
    alice, bob = (str(arena.miners[name].hotkey.ss58_address) for name in ("alice", "bob"))
    assert submissions[alice]["qualifying_score"] is not None and submissions[alice]["rejection"] is None
    # Why Bob was refused: each finding static analysis made, as the gate answered the upload.
    findings = [(f.rule, f.line, f.category) for f in check_agent(hostile).findings]
    rejection = submissions[bob]["rejection"]
    assert submissions[bob]["status"] == "rejected" and rejection["kind"] == "security"
    assert [(f["rule"], f["line"], f["category"]) for f in rejection["findings"]] == findings
    assert findings[0][0] in rejection["reason"] and f"(security: {findings[0][0]}" in page
    rejected = [e for e in validator.race.store.load() if isinstance(e, SubmissionRejected)]
    assert [(e.hotkey, e.kind, len(e.findings)) for e in rejected] == [(bob, "security", len(findings))]


class KilledWhileJudging(BaseException):
    """Stands in for the process dying between storing an attempt and storing its verdict."""


class DiesJudging:
    def judge(self, item: JudgeInput) -> JudgeVerdict:
        raise KilledWhileJudging


def test_an_attempt_stored_without_its_verdict_is_judged_after_a_restart(
        arena: Arena, generator: ProblemGenerator, runner: RunAgent) -> None:
    dying = arena.validator("validator", generator, runner, judge=DiesJudging())
    arena.upload(dying, "bob", SCRIPTED)
    past_upload_window(arena.clock, arena.chain)  # the first block after the upload window is final
    with pytest.raises(KilledWhileJudging):
        dying.tick()
    (submission,) = dying.race.state.submissions.values()
    qualifying = dying.qualifying_suite(submission)
    assert qualifying is not None
    suite = [p.id for p in qualifying]
    run_id = run_id_for("qualifying", submission.submission_id, suite)
    keys = [AttemptKey(run_id, submission.code_hash, pid) for pid in suite]
    # Every attempt is stored before the run is judged (who decided is read over the whole run).
    unjudged = [a for k in keys if (a := dying.runs.store.get_attempt(k)) is not None]
    assert len(unjudged) == len(keys) and all(a.judge is None for a in unjudged)

    restarted = arena.validator("validator", generator, runner)
    restarted.tick()
    attempts = [restarted.runs.store.get_attempt(k) for k in keys]
    assert all(a is not None and a.judge is not None and a.judge.model == "offline-rules" for a in attempts)
    # judged in place, not run again
    assert {a.id for a in unjudged} == {a.id for a in attempts if a is not None}
    assert restarted.race.state.submissions[submission.submission_id].qualifying_score is not None


def test_a_validator_given_a_dumps_folder_writes_each_finished_day_once(
        arena: Arena, generator: ProblemGenerator, runner: RunAgent) -> None:
    """With ``ARENA_DUMPS_DIR`` set the work loop exports a day once it is over and its race finished,
    split by the exposure ledger; never again, a restarted validator neither."""
    assert arena.validator("plain", generator, runner).dumps is None, "no dumps folder: nothing exported"
    dumps = arena.root / "dumps"
    # The sandbox stamps attempts with the machine's clock: the dumps read a store of the race's problems
    # attempted on the race day instead, so nothing here depends on today's date.
    raced = TrajectoryStore.open(f"sqlite:///{arena.root / 'raced.sqlite3'}")

    def open_exporting() -> Validator:
        settings = arena.settings(arena.root / "exporting", 2).model_copy(update={"dumps_dir": dumps})
        wallet = make_wallet(arena.root / "wallets", "exporting", seed="exporting") \
            if not (arena.root / "wallets" / "exporting").exists() \
            else Wallet("exporting", "default", path=str(arena.root / "wallets"))
        register(arena.chain, wallet, validator_permit=True)
        store = TrajectoryStore.open(f"sqlite:///{arena.root / 'exporting' / 'trajectories.sqlite3'}")
        opened = open_validator(settings=settings, chain=arena.chain, wallet=wallet, clock=arena.clock,
                                sources=FixedSource(generator), run_agent=runner, store=store)
        assert opened.dumps is not None and opened.dumps.root == dumps
        opened.dumps.store = raced
        return opened

    validator = open_exporting()
    run_day(arena, [validator])
    race = validator.suites.race_suite(START.date())
    assert race is not None
    entries = [ProblemEntry.of(p) for p in race.problems]
    raced.register_problems(entries)
    slot = datetime.combine(START.date(), dt_time(16, 1), UTC).timestamp()
    raced.write_attempts([make_attempt(random.Random(i), "react", entry, run_id="race", agent_hash="a" * 64,
                                       started_at=slot + i) for i, entry in enumerate(entries)])
    assert validator.tick().dumps_exported == [], "the day is not over"
    arena.clock.advance(timedelta(hours=8, minutes=30))  # 00:35 the next day
    assert validator.tick().dumps_exported == [START.date().isoformat()]
    manifest_path = dumps / START.date().isoformat() / "manifest.json"
    manifest = orjson.loads(manifest_path.read_bytes())
    assert manifest["split_rule"] == {"source": "exposure_ledger"}
    assert manifest["stats"]["attempts"] == len(entries)
    placed = validator.ledger.splits().of
    rows = [row for path in sorted((dumps / START.date().isoformat() / "data").glob("*.parquet"))
            for row in pq.read_table(path).to_pylist()]
    assert sorted(row["problem_id"] for row in rows) == sorted(p.id for p in race.problems)
    assert all((row["split"], row["leak_cluster"]) == (placed[row["problem_id"]].split,
                                                        placed[row["problem_id"]].cluster) for row in rows)
    written_at = manifest_path.stat().st_mtime_ns
    assert validator.tick().dumps_exported == []
    assert open_exporting().tick().dumps_exported == []
    assert manifest_path.stat().st_mtime_ns == written_at
    raced.close()
