"""A local-chain round for scripts/docker-check.sh, run inside the validator image against compose's
PostgreSQL (``docker compose run``/``exec ... python /checks/round.py``).

``seed``: wallets under ``$ARENA_HOME/wallets`` (validator, owner, alice, bob), a local chain three days
old with all four registered, and bob's scripted agent committed at block 0 and qualified two days ago,
so the validator's first ticks race bob on the latest slot (the same setup as
``tests/arena/validator/test_validator.py::test_validator_run_once_wires_the_service_from_settings``).
``report``: one JSON line of what the round left: the race log's events by kind, the stored attempts,
the weights the validator set on the chain and every neuron's uid.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bittensor import Wallet

from arena.chain import LocalChain
from arena.race import ManualClock, RaceEngine, RaceRules, SqlEventStore
from arena.storage import open_database
from arena.submissions.store import FileStore
from shoppingbench.agents import scripted_baseline
from trajectories.store import TrajectoryStore

HOME = Path(os.environ["ARENA_HOME"])
WALLETS = HOME / "wallets"
CHAIN_DB = HOME / "local-chain.sqlite3"
UIDS = HOME / "round-uids.json"
NEURONS = ("owner", "validator", "alice", "bob")


def _wallet(name: str) -> Wallet:
    return Wallet(name, "default", path=str(WALLETS))


def seed() -> None:
    if CHAIN_DB.exists():
        sys.exit(f"{CHAIN_DB} exists: seed an empty data volume (docker compose down -v)")
    chain = LocalChain(CHAIN_DB, netuid=int(os.environ.get("ARENA_NETUID", "1")),
                       clock=ManualClock(datetime.now(UTC) - timedelta(days=3)))
    uids = {}
    for name in NEURONS:
        wallet = _wallet(name)
        wallet.create_new_coldkey(use_password=False, suppress=True)
        wallet.create_new_hotkey(use_password=False, suppress=True)
        uids[name] = chain.register(wallet.hotkey.ss58_address, wallet.coldkeypub.ss58_address,
                                    validator_permit=name == "validator")
    UIDS.write_text(json.dumps(uids))
    code = Path(scripted_baseline.__file__).read_bytes()
    code_hash = hashlib.sha256(code).hexdigest()
    FileStore(HOME / "agents").put(code_hash, code)
    engine = RaceEngine(SqlEventStore.open(os.environ["ARENA_DATABASE_URL"]), RaceRules(),
                        ManualClock(datetime.now(UTC) - timedelta(days=2)))
    bob = _wallet("bob").hotkey.ss58_address
    submission = engine.submit(bob, code_hash, commitment_block=0).submission_id
    assert submission is not None and engine.record_qualifying(submission, 0.5).qualified
    print(json.dumps({"seeded": list(NEURONS), "bob_submission": submission}))


def report() -> None:
    chain = LocalChain(CHAIN_DB, netuid=int(os.environ.get("ARENA_NETUID", "1")))
    uids = json.loads(UIDS.read_text())
    weights = chain.weights(_wallet("validator").hotkey.ss58_address)
    database = open_database(os.environ["ARENA_DATABASE_URL"])
    events = Counter(type(event).__name__ for event in SqlEventStore(database).load())
    database.dispose()
    with TrajectoryStore.open(os.environ["ARENA_STORE_URL"]) as store:
        attempts = store.count_attempts()
    print(json.dumps({"events": dict(sorted(events.items())), "attempts": attempts, "uids": uids,
                      "weights": None if weights is None else dict(zip(weights.uids, weights.weights,
                                                                       strict=True))}))


if __name__ == "__main__":
    {"seed": seed, "report": report}[sys.argv[1]]()
