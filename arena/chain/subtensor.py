"""The Bittensor network through the SDK (``bittensor`` 11.x): ``bt.Subtensor`` in blocking mode.

Reads: the metagraph runtime call (``subnets.metagraph``: neurons, axons, stake), the weight matrix
(the registry read ``weights``, ``SubtensorModule.Weights``), a hotkey's commitment (the registry read
``commitment``, ``Commitments.CommitmentOf``), a block's timestamp (``Timestamp.Now`` at that block) and
hash (``block_info``), the finalized head and the slot duration. Writes: the commitment as a
raw call (no intent wraps ``Commitments.set_commitment``), ``ServeAxon`` and ``SetWeights`` intents,
which preflight registration and the weights rate limit and pick the plaintext or timelocked
commit-reveal path from the subnet's configuration. Before ``SetWeights`` the vector is processed
against the subnet's ``MinAllowedWeights`` and ``MaxWeightsLimit`` (the registry reads
``min_allowed_weights`` and ``max_weight_limit``) by ``arena.weights.process_weights``: this SDK has no
``process_weights_for_netuid``, and its intent only clips to the cap and refuses a row that is too
short. Every write is signed by the wallet's hotkey.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import structlog
from bittensor import BittensorError as SdkError
from bittensor import RpcConnectionError, ServeAxon, SetWeights, Substrate, Subtensor, Wallet, calls

from arena.chain.local import MAX_COMMITMENT_BYTES
from arena.chain.models import (
    AxonInfo,
    ChainError,
    Commitment,
    Metagraph,
    Neuron,
    ValidatorWeights,
    weight_shares,
)
from arena.weights import WeightLimits, WeightVector, process_weights

log = structlog.get_logger(__name__)


def _axon(endpoint: str | None) -> AxonInfo | None:
    """``ip:port`` or ``[ipv6]:port`` as the SDK renders a served axon (the chain stores no scheme)."""
    if not endpoint:
        return None
    host, _, port = endpoint.rpartition(":")
    return AxonInfo(ip=host.strip("[]"), port=int(port))


class SubtensorChain:
    """One subnet on a Bittensor network (``finney``, ``test``, ``local`` or a ``ws://``/``wss://`` URL).

    ``substrate`` replaces the websocket backend (the SDK's own hook), for tests.
    """

    def __init__(self, network: str, netuid: int, *, substrate: Substrate | None = None) -> None:
        self.netuid = netuid
        self.network = network
        try:
            self._client = Subtensor(network, substrate=substrate)
        except ValueError as exc:  # an unknown network name; the SDK's message lists the known ones
            raise ChainError(str(exc)) from exc

    def close(self) -> None:
        self._client.close()

    def _sdk(self, what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except SdkError as exc:
            hint = (" (is the network name or ws:// URL right, and the node reachable from here?)"
                    if isinstance(exc, RpcConnectionError) else "")
            raise ChainError(f"{what} on {self.network} subnet {self.netuid} failed: {exc}{hint}") from exc

    def block(self) -> int:
        return int(self._sdk("reading the block", lambda: self._client.block))

    def finalized_block(self) -> int:
        return int(self._sdk("reading the finalized block", lambda: self._client.finalized_block))

    def block_hash(self, block: int) -> str:
        info = self._sdk(f"reading block {block}", self._client.block_info, block)
        # The transport answers a number it has no block for with None, and the head for some calls.
        if info is None or info.number != block or not info.hash:
            raise ChainError(f"block {block} is not on {self.network} yet")
        return str(info.hash)

    def block_time(self, block: int) -> datetime:
        stamp: datetime = self._sdk(f"reading the time of block {block}", self._client.timestamp, block)
        return stamp

    def block_seconds(self) -> float:
        return float(self._sdk("reading the block time", self._client.block_time))

    def tempo(self) -> int:
        return int(self._graph(commitments=False).tempo)

    def _graph(self, *, commitments: bool) -> Any:
        graph = self._sdk("reading the metagraph", self._client.subnets.metagraph, self.netuid,
                          commitments=commitments)
        if graph is None:
            raise ChainError(f"subnet {self.netuid} does not exist on {self.network}")
        return graph

    def metagraph(self) -> Metagraph:
        graph = self._graph(commitments=False)
        neurons = tuple(Neuron(uid=n.uid, hotkey=n.hotkey, coldkey=n.coldkey,
                               validator_permit=n.validator_permit, axon=_axon(n.axon))
                        for n in graph.neurons)
        return Metagraph(netuid=self.netuid, block=int(graph.block), neurons=neurons)

    def is_registered(self, hotkey: str) -> bool:
        return self.metagraph().neuron(hotkey) is not None

    def validator_weights(self) -> tuple[ValidatorWeights, ...]:
        # One snapshot, so the neurons and the weight rows are of the same block. Stake is the metagraph's
        # total_stake (the stake weight consensus counts); on a commit-reveal subnet a row changes only when
        # its timelocked commit is revealed.
        snapshot = self._sdk("pinning a block", self._client.at)
        graph = self._sdk("reading the metagraph", snapshot.subnets.metagraph, self.netuid, commitments=False)
        if graph is None:
            raise ChainError(f"subnet {self.netuid} does not exist on {self.network}")
        rows: dict[int, dict[int, float]] = self._sdk("reading the weights", snapshot.read, "weights",
                                                      netuid=self.netuid)
        return tuple(ValidatorWeights(uid=n.uid, hotkey=n.hotkey, stake=float(n.total_stake.amount),
                                      validator_permit=n.validator_permit, axon=_axon(n.axon),
                                      weights=weight_shares(rows.get(n.uid, {}).items()))
                     for n in graph.neurons if n.validator_permit or rows.get(n.uid))

    def commit(self, wallet: Wallet, data: str) -> Commitment:
        raw = data.encode()
        if len(raw) > MAX_COMMITMENT_BYTES:
            raise ChainError(f"a commitment holds at most {MAX_COMMITMENT_BYTES} bytes")
        call = calls.Commitments.set_commitment(netuid=self.netuid,
                                                info={"fields": [{f"Raw{len(raw)}": "0x" + raw.hex()}]})
        result = self._sdk("the commitment", self._client.submit_call, call, wallet, signer="hotkey")
        self._check(result, "the commitment")
        hotkey: str = wallet.hotkey.ss58_address
        commitment = self.latest_commitment(hotkey)
        if commitment is None or commitment.data != data:
            raise ChainError(f"the commitment of {hotkey} was included but does not read back as sent")
        log.info("chain_committed", netuid=self.netuid, hotkey=hotkey, block=commitment.block)
        return commitment

    def latest_commitment(self, hotkey: str) -> Commitment | None:
        found = self._sdk("reading the commitment", self._client.read, "commitment", netuid=self.netuid,
                          hotkey_ss58=hotkey)
        if found is None:
            return None
        return Commitment(hotkey=hotkey, data=found.data, block=found.block,
                          time=self.block_time(found.block))

    def serve_axon(self, wallet: Wallet, axon: AxonInfo) -> None:
        result = self._sdk("serving the axon", self._client.execute,
                           ServeAxon(netuid=self.netuid, ip=axon.ip, port=axon.port), wallet)
        self._check(result, "serving the axon")
        log.info("chain_axon_served", netuid=self.netuid, url=axon.url)

    def weight_limits(self) -> WeightLimits:
        minimum = self._sdk("reading min_allowed_weights", self._client.read, "min_allowed_weights",
                            netuid=self.netuid)
        cap = self._sdk("reading max_weight_limit", self._client.read, "max_weight_limit", netuid=self.netuid)
        return WeightLimits(min_allowed_weights=int(minimum or 0),
                            max_weight_limit=65_535 if cap is None else int(cap))

    def set_weights(self, wallet: Wallet, weights: WeightVector, *, version_key: int) -> int:
        graph = self.metagraph()
        own = graph.neuron(wallet.hotkey.ss58_address)
        limits = self.weight_limits()
        try:
            weights = process_weights(weights, limits, n_uids=len(graph.neurons),
                                      self_uid=None if own is None else own.uid)
        except ValueError as exc:
            raise ChainError(f"weights for {self.network} subnet {self.netuid}: {exc}") from exc
        # The intent, not a raw call: it reads CommitRevealWeightsEnabled and sends either plaintext
        # weights or a timelocked commit (the version key sealed inside it), as the subnet runs.
        intent = SetWeights(netuid=self.netuid, uids=list(weights.uids),
                            weights=[float(w) for w in weights.weights], version_key=version_key)
        result = self._sdk("setting weights", self._client.execute, intent, wallet)
        self._check(result, "setting weights")
        block = self.block()
        log.info("chain_weights_set", netuid=self.netuid, block=block, uids=len(weights.uids),
                 version_key=version_key)
        return block

    def _check(self, result: Any, what: str) -> None:
        if not result.success:
            raise ChainError(f"{what} on {self.network} subnet {self.netuid} failed: {result.message}")
