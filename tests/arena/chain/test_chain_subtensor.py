"""The Bittensor adapter driven through the real SDK (``bt.Subtensor``) against ``FakeSubstrate``, a
stateful in-memory test double of the chain (``tests/fake_substrate.py``), with real sr25519 wallets."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import bittensor_core
import pytest
from bittensor import Wallet

from arena.chain import AxonInfo, ChainError
from arena.chain.subtensor import SubtensorChain
from arena.rules_fingerprint import RULES_VERSION
from arena.validator.seeds import ChainSeeds
from arena.weights import WeightLimits, WeightVector
from tests.chain_support import make_wallet
from tests.fake_substrate import BLOCK_MS, GENESIS_MS, FakeSubstrate

NETUID = 11


@pytest.fixture(autouse=True)
def symbol_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The SDK caches token symbols on connect; keep that file out of the home directory.
    monkeypatch.setenv("BTCLI_TOKEN_SYMBOLS_CACHE", str(tmp_path / "symbols.json"))


class Net:
    def __init__(self, root: Path) -> None:
        self.substrate = FakeSubstrate()
        self.substrate.add_subnet(NETUID, weights_rate_limit=50)
        self.validator = make_wallet(root, "validator")
        self.miner = make_wallet(root, "miner")
        self.stranger = make_wallet(root, "stranger")
        for wallet, permit in ((self.validator, True), (self.miner, False)):
            self.substrate.register(NETUID, wallet.hotkey.ss58_address, wallet.coldkeypub.ss58_address,
                                    permit=permit)


@pytest.fixture
def net(tmp_path: Path) -> Net:
    return Net(tmp_path / "wallets")


@pytest.fixture
def chain(net: Net) -> Iterator[SubtensorChain]:
    adapter = SubtensorChain("test", NETUID, substrate=net.substrate)  # type: ignore[arg-type]
    yield adapter
    adapter.close()


def hotkey(wallet: Wallet) -> str:
    return str(wallet.hotkey.ss58_address)


def test_metagraph_and_serve_axon(net: Net, chain: SubtensorChain) -> None:
    graph = chain.metagraph()
    assert graph.netuid == NETUID and graph.block == net.substrate.head == chain.block()
    assert graph.hotkeys == [hotkey(net.validator), hotkey(net.miner)]
    assert [n.validator_permit for n in graph.neurons] == [True, False]
    assert graph.neurons[1].coldkey == net.miner.coldkeypub.ss58_address
    assert graph.validators() == [] and chain.tempo() == 360
    assert chain.is_registered(hotkey(net.miner)) and not chain.is_registered(hotkey(net.stranger))

    chain.serve_axon(net.validator, AxonInfo(ip="10.1.2.3", port=8091))
    served = chain.metagraph()
    assert [n.uid for n in served.validators()] == [0]
    assert served.neurons[0].axon == AxonInfo(ip="10.1.2.3", port=8091)
    with pytest.raises(ChainError, match="HotKeyNotRegisteredInSubNet"):
        chain.serve_axon(net.stranger, AxonInfo(ip="10.1.2.4", port=8091))


def test_commitment_round_trip(net: Net, chain: SubtensorChain) -> None:
    assert chain.latest_commitment(hotkey(net.miner)) is None
    digest = "ab" * 32
    commitment = chain.commit(net.miner, digest)
    assert commitment.data == digest and commitment.hotkey == hotkey(net.miner)
    assert commitment.block == net.substrate.head
    assert commitment.time == datetime.fromtimestamp((GENESIS_MS + commitment.block * BLOCK_MS) / 1000, UTC)
    record = net.substrate.commitments[(NETUID, hotkey(net.miner))]
    assert record["info"] == {"fields": [{"Raw64": "0x" + digest.encode().hex()}]}
    net.substrate.advance(10)
    newer = chain.commit(net.miner, "cd" * 32)
    assert chain.latest_commitment(hotkey(net.miner)) == newer and newer.block > commitment.block
    with pytest.raises(ChainError, match="HotKeyNotRegisteredInSubNet"):
        chain.commit(net.stranger, digest)
    with pytest.raises(ChainError, match="at most 128 bytes"):
        chain.commit(net.miner, "x" * 129)


ONLY_ONE = WeightVector(uids=(1,), weights=(65_535,))


def test_set_weights_plaintext_rate_limit_and_version_key(net: Net, chain: SubtensorChain) -> None:
    vector = WeightVector(uids=(0, 1), weights=(65_535, 13_107))
    block = chain.set_weights(net.validator, vector, version_key=RULES_VERSION)
    subnet = net.substrate.subnets[NETUID]
    assert net.substrate.submitted[-1] == ("SubtensorModule", "set_mechanism_weights")
    assert subnet.weights[0] == ([0, 1], [65_535, 13_107]) and subnet.last_update[0] == block
    assert subnet.weight_versions[0] == RULES_VERSION
    with pytest.raises(ChainError, match="rate limit is 50 blocks"):
        chain.set_weights(net.validator, vector, version_key=RULES_VERSION)
    with pytest.raises(ChainError, match="NeuronNoValidatorPermit"):
        chain.set_weights(net.miner, vector, version_key=RULES_VERSION)

    # The owner pins WeightsVersionKey above this validator's rules: the chain refuses its weights.
    net.substrate.advance(50)
    subnet.weights_version_key = RULES_VERSION + 1
    with pytest.raises(ChainError, match="IncorrectWeightVersionKey"):
        chain.set_weights(net.validator, ONLY_ONE, version_key=RULES_VERSION)
    assert subnet.weights[0] == ([0, 1], [65_535, 13_107])
    chain.set_weights(net.validator, ONLY_ONE, version_key=RULES_VERSION + 1)
    assert subnet.weights[0] == ([1], [65_535]) and subnet.weight_versions[0] == RULES_VERSION + 1


def test_set_weights_with_commit_reveal_sends_a_timelocked_commit_sealing_the_version_key(
        net: Net, chain: SubtensorChain, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's intent picks the path from ``CommitRevealWeightsEnabled``; the commit is drand-timelocked,
    so the version key sealed in it is checked through the SDK's encryption call (the double cannot
    decrypt a commit: that needs the drand beacon's signature for the reveal round)."""
    sealed: list[dict[str, Any]] = []
    encrypt = bittensor_core.get_encrypted_commit_v2

    def spy(**kwargs: Any) -> Any:
        sealed.append(kwargs)
        return encrypt(**kwargs)

    monkeypatch.setattr(bittensor_core, "get_encrypted_commit_v2", spy)
    subnet = net.substrate.subnets[NETUID]
    subnet.commit_reveal = True
    block = chain.set_weights(net.validator, WeightVector(uids=(0, 1), weights=(65_535, 13_107)),
                              version_key=RULES_VERSION)
    assert net.substrate.submitted == [("SubtensorModule", "commit_timelocked_mechanism_weights")]
    assert subnet.weights == {} and subnet.last_update[0] == block
    [(uid, commit, reveal_round, commit_reveal_version)] = subnet.timelocked_commits
    assert uid == 0 and commit and reveal_round > 0 and commit_reveal_version >= 4
    assert [(s["uids"], s["weights"], s["version_key"]) for s in sealed] == [([0, 1], [65_535, 13_107],
                                                                              RULES_VERSION)]
    with pytest.raises(ChainError, match="rate limit is 50 blocks"):
        chain.set_weights(net.validator, ONLY_ONE, version_key=RULES_VERSION)

    # Commit-reveal off again: plaintext weights, as the subnet now runs.
    net.substrate.advance(50)
    subnet.commit_reveal = False
    chain.set_weights(net.validator, ONLY_ONE, version_key=RULES_VERSION)
    assert net.substrate.submitted[-1] == ("SubtensorModule", "set_mechanism_weights")
    assert subnet.weights[0] == ([1], [65_535]) and len(subnet.timelocked_commits) == 1 and len(sealed) == 1


def test_block_hash_and_time_round_trip(net: Net, chain: SubtensorChain) -> None:
    substrate = net.substrate
    start = substrate.head
    substrate.advance(1, block_ms=3 * BLOCK_MS)  # two missed slots
    substrate.advance(2)
    head = substrate.head
    assert chain.block() == head and chain.finalized_block() == head - substrate.finality_lag
    assert chain.block_seconds() == 12.0
    stamp = chain.block_time(start)
    assert stamp == datetime.fromtimestamp((GENESIS_MS + start * BLOCK_MS) / 1000, UTC)
    assert [chain.block_time(n) - stamp for n in range(start, head + 1)] == [
        timedelta(seconds=s) for s in (0, 36, 48, 60)]
    hashes = [chain.block_hash(n) for n in range(start, head + 1)]
    assert hashes == [substrate.hash_of(n) for n in range(start, head + 1)] and len(set(hashes)) == 4
    with pytest.raises(ChainError, match=f"block {head + 1} is not on test yet"):
        chain.block_hash(head + 1)
    with pytest.raises(ChainError, match=f"no block at height {head + 1}"):
        chain.block_time(head + 1)


def test_validators_derive_the_same_race_seed_from_the_first_block_at_or_after_the_slot(
        tmp_path: Path) -> None:
    """A finney-sized history with missed slots: every validator's seed is the hash of the first final
    block at or after the slot, found in a few reads, whenever the validator asks."""
    substrate = FakeSubstrate(head=6_000_000)
    substrate.add_subnet(NETUID)
    clients = [SubtensorChain("test", NETUID, substrate=substrate)  # type: ignore[arg-type]
               for _ in range(3)]
    first, second, late = (ChainSeeds(client) for client in clients)
    start = substrate.head
    slot = datetime.fromtimestamp(substrate.timestamp_ms(start) / 1000, UTC) + timedelta(minutes=20,
                                                                                        seconds=5)
    assert first.seed_at(slot) is None  # nobody can know it yet

    substrate.advance(70)
    substrate.advance(3, block_ms=5 * BLOCK_MS)  # missed slots: the chain drifts behind the 12 s estimate
    substrate.advance(16)
    slot_ms = slot.timestamp() * 1000
    expected = next(n for n in range(start, substrate.head + 1) if substrate.timestamp_ms(n) >= slot_ms)
    assert substrate.timestamp_ms(expected - 1) < slot_ms and expected == start + 89
    assert first.seed_at(slot) is None  # the block exists but is not final yet: a fork could replace it
    substrate.advance(substrate.finality_lag)

    reads = len(substrate.block_reads)
    seed = first.seed_at(slot)
    assert seed is not None and (seed.block, seed.hash) == (expected, substrate.hash_of(expected))
    assert len(substrate.block_reads) - reads <= 4  # plain bisection over 6M blocks would read 23
    assert second.seed_at(slot) == seed
    reads = len(substrate.block_reads)
    assert first.seed_at(slot) == seed and len(substrate.block_reads) == reads  # kept once found

    # A validator (re)started a day later, after more missed slots, draws the same seed.
    substrate.advance(3_000)
    substrate.advance(20, block_ms=4 * BLOCK_MS)
    substrate.advance(4_000)
    assert late.seed_at(slot) == seed
    assert len(substrate.block_reads) - reads <= 7
    for client in clients:
        client.close()


def test_validator_weights_read_the_weights_map_stake_and_axons_at_one_block(
        net: Net, chain: SubtensorChain, tmp_path: Path) -> None:
    """``SubtensorModule.Weights`` rows (max-upscaled u16, as the chain stores them) come back as shares,
    with each neuron's ``total_stake`` from the metagraph runtime call and its served axon."""
    other = make_wallet(tmp_path / "more", "other-validator")
    net.substrate.register(NETUID, hotkey(other), other.coldkeypub.ss58_address, permit=True,
                           stake=2_500 * 10**9)
    net.substrate.subnets[NETUID].stakes[0] = 10_000 * 10**9
    rows = chain.validator_weights()
    assert [(r.uid, r.validator_permit, r.weights) for r in rows] == [(0, True, {}), (2, True, {})]
    chain.set_weights(net.validator, WeightVector(uids=(0, 1), weights=(65_535, 13_107)), version_key=1)
    chain.set_weights(other, WeightVector(uids=(1,), weights=(65_535,)), version_key=1)
    chain.serve_axon(other, AxonInfo(ip="10.1.2.5", port=8092))
    assert net.substrate.subnets[NETUID].weights[0] == ([0, 1], [65_535, 13_107])
    mine, theirs = chain.validator_weights()
    assert mine.hotkey == hotkey(net.validator) and mine.stake == 10_000 and mine.axon is None
    assert mine.weights == {0: pytest.approx(5 / 6), 1: pytest.approx(1 / 6)}
    assert theirs.uid == 2 and theirs.stake == 2_500 and theirs.weights == {1: 1.0}
    assert theirs.axon == AxonInfo(ip="10.1.2.5", port=8092)


def _raw_weights(chain: SubtensorChain, wallet: Wallet, dests: list[int], weights: list[int]) -> Any:
    """A ``set_mechanism_weights`` extrinsic exactly as given, past the SDK's own weight processing."""
    from bittensor import calls

    call = calls.SubtensorModule.set_mechanism_weights(netuid=NETUID, mecid=0, dests=dests, weights=weights,
                                                       version_key=RULES_VERSION)
    return chain._client.submit_call(call, wallet, signer="hotkey")


def test_the_fake_chain_refuses_rows_that_break_the_subnet_weight_limits(net: Net,
                                                                        chain: SubtensorChain) -> None:
    subnet = net.substrate.subnets[NETUID]
    assert chain.weight_limits() == WeightLimits(min_allowed_weights=1, max_weight_limit=65_535)
    subnet.min_allowed_weights, subnet.max_weight_limit = 2, 39_321  # at least 2 weights, none over 60%
    assert chain.weight_limits() == WeightLimits(min_allowed_weights=2, max_weight_limit=39_321)
    refused = _raw_weights(chain, net.validator, [1], [65_535])
    assert not refused.success and "WeightVecLengthIsLow" in refused.message
    refused = _raw_weights(chain, net.validator, [0, 1], [65_535, 10_000])  # 86.8% on uid 0
    assert not refused.success and "MaxWeightExceeded" in refused.message
    assert subnet.weights == {}
    assert _raw_weights(chain, net.validator, [0], [65_535]).success  # a lone self-weight is exempt


def test_set_weights_processes_the_vector_to_meet_binding_limits(net: Net, chain: SubtensorChain) -> None:
    subnet = net.substrate.subnets[NETUID]
    subnet.max_weight_limit = 32_768  # one weight may hold at most 50.0008% of the row
    winner_first = WeightVector(uids=(0, 1), weights=(21_845, 65_535))  # uid 1 holds 75%
    chain.set_weights(net.validator, winner_first, version_key=RULES_VERSION)
    dests, values = subnet.weights[0]
    assert dests == [0, 1] and max(values) * 65_535 <= 32_768 * sum(values)
    assert values == [65_534, 65_535]  # capped at the limit, the rest to the other uid

    net.substrate.advance(50)
    subnet.min_allowed_weights = 2
    chain.set_weights(net.validator, ONLY_ONE, version_key=RULES_VERSION)  # one weight, two required
    dests, values = subnet.weights[0]
    assert dests == [0, 1] and values[1] == 65_535 and 0 < values[0] < 65_535
