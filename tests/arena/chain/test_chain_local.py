"""The embedded chain: registry, commitments, axons, weights and its block clock, persisted in SQLite,
with every write signed by a real sr25519 hotkey."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from arena.chain import AxonInfo, ChainError, ChainSettings, LocalChain, SubtensorChain, open_chain
from arena.race.clock import ManualClock
from arena.weights import (
    U16_MAX,
    Finisher,
    WeightLimits,
    WeightRules,
    WeightVector,
    compute_weights,
    seeded_tie_break,
)
from tests.chain_support import make_wallet, register

START = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def chain(tmp_path: Path, clock: ManualClock) -> LocalChain:
    return LocalChain(tmp_path / "chain.sqlite3", netuid=7, clock=clock, weights_rate_limit=100)


def test_registry_metagraph_and_persistence(chain: LocalChain, clock: ManualClock, tmp_path: Path) -> None:
    owner, miner = make_wallet(tmp_path / "w", "owner"), make_wallet(tmp_path / "w", "miner")
    assert register(chain, owner, validator_permit=True) == 0
    assert register(chain, miner) == 1
    assert register(chain, miner) == 1  # registering again keeps the uid
    assert chain.is_registered(miner.hotkey.ss58_address)
    assert not chain.is_registered(make_wallet(tmp_path / "w", "stranger").hotkey.ss58_address)
    chain.serve_axon(owner, AxonInfo(ip="127.0.0.1", port=8091))
    clock.advance(timedelta(seconds=12 * 5 + 3))

    reopened = LocalChain(chain.path, netuid=7, clock=clock)
    graph = reopened.metagraph()
    assert graph.netuid == 7 and graph.block == 5 == reopened.block()
    assert graph.hotkeys == [owner.hotkey.ss58_address, miner.hotkey.ss58_address]
    assert [n.uid for n in graph.validators()] == [0]
    assert graph.neurons[0].axon is not None and graph.neurons[0].axon.url == "http://127.0.0.1:8091"
    assert graph.neurons[1].coldkey == miner.coldkeypub.ss58_address
    # Another subnet in the same file is another registry.
    assert LocalChain(chain.path, netuid=8, clock=clock).metagraph().neurons == ()


def test_commitment_round_trip_with_block_and_time(chain: LocalChain, clock: ManualClock,
                                                   tmp_path: Path) -> None:
    miner = make_wallet(tmp_path / "w", "miner")
    hotkey = miner.hotkey.ss58_address
    with pytest.raises(ChainError, match="not registered"):
        chain.commit(miner, "ab" * 32)
    register(chain, miner)
    assert chain.latest_commitment(hotkey) is None
    clock.advance(timedelta(minutes=1))
    first = chain.commit(miner, "ab" * 32)
    assert (first.block, first.time) == (5, START + timedelta(minutes=1))
    clock.advance(timedelta(hours=1))
    chain.commit(miner, "cd" * 32)
    latest = chain.latest_commitment(hotkey)
    assert latest is not None and latest.data == "cd" * 32 and latest.block == 305
    assert latest.time == START + timedelta(seconds=305 * 12)
    with pytest.raises(ChainError, match="at most 128 bytes"):
        chain.commit(miner, "x" * 129)


def test_set_weights_needs_a_permit_and_respects_the_rate_limit(chain: LocalChain, clock: ManualClock,
                                                                tmp_path: Path) -> None:
    validator, miner = make_wallet(tmp_path / "w", "validator"), make_wallet(tmp_path / "w", "miner")
    register(chain, validator, validator_permit=True)
    register(chain, miner)
    vector = WeightVector(uids=(0, 1), weights=(65_535, 10_000))
    with pytest.raises(ChainError, match="no validator permit"):
        chain.set_weights(miner, vector, version_key=1)
    with pytest.raises(ChainError, match="not on subnet"):
        chain.set_weights(validator, WeightVector(uids=(0, 9), weights=(1, 1)), version_key=1)
    clock.advance(timedelta(seconds=120))
    assert chain.set_weights(validator, vector, version_key=1) == 10
    assert chain.weights(validator.hotkey.ss58_address) == vector
    clock.advance(timedelta(seconds=12 * 99))
    with pytest.raises(ChainError, match="next allowed at block 110"):
        chain.set_weights(validator, WeightVector(uids=(0,), weights=(65_535,)), version_key=1)
    clock.advance(timedelta(seconds=12))
    assert chain.set_weights(validator, WeightVector(uids=(0,), weights=(65_535,)), version_key=1) == 110
    assert chain.weights(validator.hotkey.ss58_address) == WeightVector(uids=(0,), weights=(65_535,))
    assert chain.weights(miner.hotkey.ss58_address) is None


def test_weights_carry_their_version_key_and_an_outdated_one_is_refused(clock: ManualClock,
                                                                        tmp_path: Path) -> None:
    chain = LocalChain(tmp_path / "pinned.sqlite3", netuid=7, clock=clock, weights_rate_limit=1,
                       weights_version_key=3)
    validator = make_wallet(tmp_path / "w", "validator")
    register(chain, validator, validator_permit=True)
    hotkey = validator.hotkey.ss58_address
    vector = WeightVector(uids=(0,), weights=(65_535,))
    clock.advance(timedelta(seconds=24))
    with pytest.raises(ChainError, match="below subnet 7's WeightsVersionKey 3"):
        chain.set_weights(validator, vector, version_key=2)
    assert chain.weights(hotkey) is None and chain.weights_version(hotkey) is None
    chain.set_weights(validator, vector, version_key=4)
    assert chain.weights(hotkey) == vector and chain.weights_version(hotkey) == 4


def test_a_chain_file_from_before_version_keys_opens_with_the_column_added(clock: ManualClock,
                                                                           tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE weights (id INTEGER PRIMARY KEY, netuid INTEGER, hotkey VARCHAR(64), "
                   "block INTEGER, vector VARCHAR)")
        db.execute("INSERT INTO weights (netuid, hotkey, block, vector) VALUES (7, 'old', 3, "
                   "'{\"uids\": [0], \"weights\": [65535]}')")
    chain = LocalChain(path, netuid=7, clock=clock)
    assert chain.weights("old") == WeightVector(uids=(0,), weights=(65_535,))
    assert chain.weights_version("old") == 0


def test_open_chain_from_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_HOME", str(tmp_path))
    monkeypatch.setenv("ARENA_NETUID", "3")
    chain = open_chain(ChainSettings())
    assert isinstance(chain, LocalChain) and chain.netuid == 3
    assert chain.path == tmp_path / "local-chain.sqlite3" and chain.path.exists()
    network = open_chain(ChainSettings(chain="finney", netuid=5))  # cold: nothing connects until used
    assert isinstance(network, SubtensorChain) and network.netuid == 5 and network.network == "finney"


def test_block_reads_for_race_seeds(chain: LocalChain, clock: ManualClock) -> None:
    clock.advance(timedelta(seconds=12 * 3 + 5))
    assert chain.block() == chain.finalized_block() == 3  # one author, no forks: final at once
    assert chain.block_seconds() == 12.0 and chain.block_time(3) == START + timedelta(seconds=36)
    hashes = [chain.block_hash(n) for n in range(4)]
    assert len(set(hashes)) == 4 and all(len(h) == 64 for h in hashes)
    assert LocalChain(chain.path, netuid=7, clock=clock).block_hash(2) == hashes[2]  # a stand-in, but stable
    assert LocalChain(chain.path, netuid=8, clock=clock).block_hash(2) != hashes[2]
    with pytest.raises(ChainError, match="block 4 does not exist yet"):
        chain.block_hash(4)


def test_validator_weights_list_permits_and_weight_rows_with_stake_and_axons(
        chain: LocalChain, clock: ManualClock, tmp_path: Path) -> None:
    wallets = {name: make_wallet(tmp_path / "w", name) for name in ("owner", "v1", "v2", "miner")}
    for name, wallet in wallets.items():
        register(chain, wallet, validator_permit=name in ("v1", "v2"))
    assert [(r.uid, r.weights, r.stake) for r in chain.validator_weights()] == [(1, {}, 0.0), (2, {}, 0.0)]
    chain.set_stake(wallets["v1"].hotkey.ss58_address, 1_250.5)
    chain.serve_axon(wallets["v2"], AxonInfo(ip="127.0.0.1", port=8092))
    chain.set_weights(wallets["v1"], WeightVector(uids=(0, 3), weights=(21_845, 65_535)), version_key=1)
    v1, v2 = chain.validator_weights()
    assert v1.hotkey == wallets["v1"].hotkey.ss58_address and v1.stake == 1_250.5 and v1.axon is None
    assert v1.weights == {0: pytest.approx(0.25), 3: pytest.approx(0.75)}
    assert v2.axon == AxonInfo(ip="127.0.0.1", port=8092) and v2.weights == {} and v2.validator_permit
    # A validator that loses its permit still shows while its weight row stands; stake survives a reopen.
    register(chain, wallets["v1"], validator_permit=False)
    reopened = LocalChain(chain.path, netuid=7, clock=clock)
    assert [(r.uid, r.validator_permit, r.stake) for r in reopened.validator_weights()] == [
        (1, False, 1_250.5), (2, True, 0.0)]
    with pytest.raises(ChainError, match="not registered"):
        chain.set_stake(make_wallet(tmp_path / "w", "stranger").hotkey.ss58_address, 1.0)


def test_weight_limits_persist_refuse_rows_that_break_them_and_set_weights_meets_them(
        clock: ManualClock, tmp_path: Path) -> None:
    path = tmp_path / "limited.sqlite3"
    chain = LocalChain(path, netuid=7, clock=clock, weights_rate_limit=1)
    assert chain.weight_limits() == WeightLimits(min_allowed_weights=1, max_weight_limit=U16_MAX)
    limits = WeightLimits(min_allowed_weights=4, max_weight_limit=26_214)  # 4 weights, none over 40%
    chain.set_weight_limits(limits)
    assert LocalChain(path, netuid=7, clock=clock).weight_limits() == limits
    wallets = [make_wallet(tmp_path / "w", name) for name in ("owner", "validator", "winner", "second", "x")]
    for wallet in wallets:
        register(chain, wallet, validator_permit=wallet is wallets[1])
    validator = wallets[1]
    # The arena's vector: 60% to the winner, the taper to the second, the rest burnt at uid 0.
    hotkeys = [w.hotkey.ss58_address for w in wallets]
    finishers = [Finisher(hotkey=hotkeys[i], score=score, tie_break=seeded_tie_break("seed", hotkeys[i]))
                 for i, score in ((2, 0.9), (3, 0.5), (4, 0.1))]
    vector = compute_weights(finishers, hotkeys[2], hotkeys, WeightRules())
    assert vector.uids == (0, 2, 3)
    with pytest.raises(ChainError, match="WeightVecLengthIsLow"):
        chain.apply_weights(validator, vector, version_key=1)
    chain.set_weight_limits(WeightLimits(min_allowed_weights=1, max_weight_limit=26_214))
    with pytest.raises(ChainError, match="MaxWeightExceeded"):
        chain.apply_weights(validator, vector, version_key=1)
    assert chain.weights(validator.hotkey.ss58_address) is None

    chain.set_weight_limits(limits)
    clock.advance(timedelta(seconds=12))
    chain.set_weights(validator, vector, version_key=1)
    landed = chain.weights(validator.hotkey.ss58_address)
    assert landed is not None and len(landed.uids) == 5
    shares = dict(zip(landed.uids, (w / sum(landed.weights) for w in landed.weights), strict=True))
    assert max(shares, key=lambda uid: shares[uid]) == 2 and shares[2] <= 26_214 / U16_MAX
    # Capped at 40%, the winner's excess spread over the burn uid and the second in proportion (20% each).
    assert shares[2] == pytest.approx(0.4, abs=1e-4) and shares[0] == pytest.approx(shares[3])
    assert shares[3] > shares[1] > 0
    assert shares[0] == pytest.approx(0.3, abs=1e-4)
