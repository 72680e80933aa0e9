"""A stateful in-memory ``bittensor.Substrate``: a TEST DOUBLE for the live chain, which cannot run here.

The SDK's own seam (``bt.Subtensor(network, substrate=...)``) takes it. It serves the storage items,
runtime call and extrinsics the arena's adapter goes through, with the values and decoded shapes the
SDK reads (``SubnetInfoRuntimeApi.get_metagraph`` with its ``alpha_stake``/``tao_stake``/``total_stake``
columns in rao, ``Commitments.CommitmentOf``, the ``SubtensorModule.Weights`` double map (mechanism index,
uid) -> ``[(uid, u16)]`` holding each row as set: the SDK sends it max-upscaled, which is how the chain
stores it),
``SubtensorModule.{Uids, ValidatorPermit, LastUpdate, WeightsSetRateLimit, ...}``,
``Timestamp.Now``), and applies ``Commitments.set_commitment``, ``SubtensorModule.serve_axon``,
``set_mechanism_weights`` and ``commit_timelocked_mechanism_weights`` as the chain would: signed by
the caller's key (verified), refused for unregistered hotkeys, rate-limited weights, one block per
extrinsic. Anything else it is asked for raises, so an SDK path this double does not model fails loudly.

Weight limits: the subnet's ``MinAllowedWeights`` and ``MaxWeightsLimit`` (``min_allowed_weights``,
``max_weight_limit``; subtensor's new-subnet defaults 1 and 65535 unless given) are served and enforced on
plaintext weights as subtensor's ``check_length`` and ``max_weight_limited`` do: fewer entries than
``min(min_allowed_weights, subnet size)`` is ``WeightVecLengthIsLow``, one weight above
``max_weight_limit / 65535`` of the row's total is ``MaxWeightExceeded``, a lone self-weight exempt.

Weights and commit-reveal: the subnet's ``CommitRevealWeightsEnabled`` (``commit_reveal``) decides the
SDK's path, and ``WeightsVersionKey`` (``weights_version_key``) is the owner's pin: plaintext weights
carry their ``version_key`` (kept per uid in ``weight_versions``) and one below the pin is refused with
``IncorrectWeightVersionKey``, as subtensor does. A timelocked commit is kept as sent (uid, the
encrypted bytes, the drand reveal round, the commit-reveal version); the chain decrypts it at the reveal
round with the drand beacon's signature and checks its version key then, which this double cannot do
(no drand beacon here), so it never reveals a commit nor checks the version key sealed inside one (a
committing validator's ``Weights`` row stays what it last set in plaintext, as on chain until a reveal).

Blocks are kept as a node keeps them: each has a hash and a timestamp (its ``Timestamp.set`` inherent,
also ``Timestamp.Now`` at its hash), state is read at a block through its hash, a block number the
chain has not reached has no hash (``BlockNotFound`` on a node, ``bittensor.ChainError`` through the
SDK) and ``get_block`` answers ``None`` for it, and finality lags the head by ``finality_lag`` blocks.
The ``head`` blocks that exist when the double is made are one slot (12 s) apart from ``genesis_ms``
and are derived on demand, so a finney-sized history costs nothing; later blocks are produced by
``advance`` (a longer ``block_ms`` models missed slots) and by every extrinsic.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from bittensor import Balance, ChainError, ExtrinsicResult
from bittensor.sp_core import verify

GENESIS_MS = 1_795_000_000_000
BLOCK_MS = 12_000


@dataclass
class FakeSubnet:
    tempo: int = 360
    weights_rate_limit: int = 100
    commit_reveal: bool = False
    weights_version_key: int = 0
    min_allowed_weights: int = 1  # subtensor's defaults for a new subnet
    max_weight_limit: int = 65_535
    hotkeys: list[str] = field(default_factory=list)
    coldkeys: list[str] = field(default_factory=list)
    permits: list[bool] = field(default_factory=list)
    axons: list[dict[str, int] | None] = field(default_factory=list)
    last_update: list[int] = field(default_factory=list)
    registered_at: list[int] = field(default_factory=list)
    stakes: list[int] = field(default_factory=list)  # total stake per uid, in rao of the subnet's alpha
    weights: dict[int, tuple[list[int], list[int]]] = field(default_factory=dict)
    weight_versions: dict[int, int] = field(default_factory=dict)
    timelocked_commits: list[tuple[int, bytes, int, int]] = field(default_factory=list)


class FakeSubstrate:
    def __init__(self, head: int = 1_000, *, genesis_ms: int = GENESIS_MS, finality_lag: int = 2) -> None:
        self.genesis_ms = genesis_ms
        self.finality_lag = finality_lag
        self._history = head  # blocks 0..head: one per slot from genesis, derived on demand
        self._produced: list[int] = []  # timestamps (ms) of the blocks made since, in order
        self._numbers: dict[str, int] = {}  # hash -> number of every hash handed out
        self.subnets: dict[int, FakeSubnet] = {}
        self.commitments: dict[tuple[int, str], dict[str, Any]] = {}
        self.token_symbols: dict[int, str] = {}
        self.submitted: list[tuple[str, str]] = []
        self.block_reads: list[int] = []  # block numbers whose time or contents were read, in order

    # -- the block history ------------------------------------------------------------------------------
    @property
    def head(self) -> int:
        return self._history + len(self._produced)

    def timestamp_ms(self, block: int) -> int:
        if block <= self._history:
            return self.genesis_ms + block * BLOCK_MS
        return self._produced[block - self._history - 1]

    def hash_of(self, block: int) -> str:
        if not 0 <= block <= self.head:
            raise ChainError(f"no block at height {block}")  # the node's BlockNotFound, as the SDK raises it
        digest = "0x" + hashlib.sha256(f"fake/{self.genesis_ms}/{block}".encode()).hexdigest()
        self._numbers[digest] = block
        return digest

    def _at(self, block_hash: str | None) -> int:
        if block_hash is None:
            return self.head
        if block_hash not in self._numbers:
            raise ChainError(f"unknown block hash {block_hash}")
        return self._numbers[block_hash]

    def _produce(self, block_ms: int) -> None:
        self._produced.append(self.timestamp_ms(self.head) + block_ms)

    # -- test setup -----------------------------------------------------------------------------------
    def add_subnet(self, netuid: int, **config: Any) -> FakeSubnet:
        self.subnets[netuid] = FakeSubnet(**config)
        return self.subnets[netuid]

    def register(self, netuid: int, hotkey: str, coldkey: str, *, permit: bool = False,
                 stake: int = 0) -> int:
        """A new uid for ``hotkey``; ``stake`` is its total stake in rao."""
        subnet = self.subnets[netuid]
        subnet.stakes.append(stake)
        subnet.hotkeys.append(hotkey)
        subnet.coldkeys.append(coldkey)
        subnet.permits.append(permit)
        subnet.axons.append(None)
        subnet.last_update.append(0)
        subnet.registered_at.append(self.head)
        return len(subnet.hotkeys) - 1

    def advance(self, blocks: int, *, block_ms: int = BLOCK_MS) -> None:
        """Produce ``blocks`` blocks, each ``block_ms`` after the one before."""
        for _ in range(blocks):
            self._produce(block_ms)

    # -- the Substrate protocol (the parts the adapter's SDK paths use) ----------------------------------
    def balance(self, rao: int, netuid: int = 0) -> Balance:
        return Balance.from_rao(rao)

    async def connect(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def block_number(self) -> int:
        return self.head

    async def finalized_block_number(self) -> int:
        return max(0, self.head - self.finality_lag)

    async def block_hash(self, block: int | None = None) -> str:
        return self.hash_of(self.head if block is None else block)

    async def get_block(self, block_number: int | None = None,
                        block_hash: str | None = None) -> dict[str, Any] | None:
        unknown_hash = block_hash is not None and block_hash not in self._numbers
        if unknown_hash or (block_number is not None and not 0 <= block_number <= self.head):
            return None
        number = self._at(block_hash) if block_number is None else block_number
        self.block_reads.append(number)
        inherent = {"call_module": "Timestamp", "call_function": "set",
                    "call_args": [{"name": "now", "type": "Moment", "value": self.timestamp_ms(number)}]}
        return {"header": {"number": number, "hash": self.hash_of(number),
                           "parentHash": self.hash_of(number - 1) if number else "0x" + "00" * 32},
                "extrinsics": [{"call": inherent}]}

    async def block_time(self) -> float:
        return BLOCK_MS / 1000

    async def query(self, module: str, storage_function: str, params: list[Any] | None = None,
                    block_hash: str | None = None) -> Any:
        params = params or []
        block = self._at(block_hash)
        if (module, storage_function) == ("Timestamp", "Now"):
            self.block_reads.append(block)
            return self.timestamp_ms(block)
        if (module, storage_function) == ("Commitments", "CommitmentOf"):
            return self.commitments.get((params[0], params[1]))
        if module != "SubtensorModule":
            raise NotImplementedError(f"the fake substrate has no storage {module}.{storage_function}")
        subnet = self.subnets[params[0] % 4096]
        values: dict[str, Any] = {
            "Uids": (lambda: subnet.hotkeys.index(params[1]) if params[1] in subnet.hotkeys else None),
            "CommitRevealWeightsEnabled": lambda: subnet.commit_reveal,
            "WeightsVersionKey": lambda: subnet.weights_version_key,
            "WeightsSetRateLimit": lambda: subnet.weights_rate_limit,
            "LastUpdate": lambda: list(subnet.last_update),
            "MinAllowedWeights": lambda: subnet.min_allowed_weights,
            "MaxWeightsLimit": lambda: subnet.max_weight_limit,
            "SubnetEpochConsensus": lambda: "Yuma",
            "ValidatorPermit": lambda: list(subnet.permits),
            "Tempo": lambda: subnet.tempo,
            "RevealPeriodEpochs": lambda: 1,
            "LastEpochBlock": lambda: block - block % subnet.tempo,
            "PendingEpochAt": lambda: 0,
            "SubnetEpochIndex": lambda: block // subnet.tempo,
            "BlocksSinceLastStep": lambda: block % subnet.tempo,
        }
        if storage_function not in values:
            raise NotImplementedError(f"the fake substrate has no storage {module}.{storage_function}")
        return values[storage_function]()

    async def query_map(self, module: str, storage_function: str, params: list[Any] | None = None,
                        block_hash: str | None = None) -> list[tuple[Any, Any]]:
        params = params or []
        if (module, storage_function) == ("SubtensorModule", "TokenSymbol"):
            return [(netuid, "0x" + b"alpha".hex()) for netuid in self.subnets]
        if (module, storage_function) == ("Commitments", "CommitmentOf"):
            return [(hk, record) for (netuid, hk), record in self.commitments.items() if netuid == params[0]]
        if (module, storage_function) == ("Commitments", "RevealedCommitments"):
            return []
        if (module, storage_function) == ("SubtensorModule", "Weights"):  # keyed by (netuid index, uid)
            subnet = self.subnets[params[0] % 4096]
            return [(uid, list(zip(*row, strict=True))) for uid, row in sorted(subnet.weights.items())]
        if (module, storage_function) == ("SubtensorModule", "Uids"):
            return [(hk, uid) for uid, hk in enumerate(self.subnets[params[0]].hotkeys)]
        raise NotImplementedError(f"the fake substrate has no storage map {module}.{storage_function}")

    async def runtime_call(self, api: str, method: str, params: list[Any],
                           block_hash: str | None = None) -> Any:
        if (api, method) != ("SubnetInfoRuntimeApi", "get_metagraph"):
            raise NotImplementedError(f"the fake substrate has no runtime call {api}.{method}")
        subnet = self.subnets.get(params[0])
        if subnet is None:
            return None
        return {"netuid": params[0], "name": "0x" + b"shopping".hex(), "symbol": "0x" + b"alpha".hex(),
                "block": self.head, "tempo": subnet.tempo, "last_step": self.head - self.head % subnet.tempo,
                "blocks_since_last_step": self.head % subnet.tempo,
                "owner_hotkey": subnet.hotkeys[0] if subnet.hotkeys else "",
                "owner_coldkey": subnet.coldkeys[0] if subnet.coldkeys else "",
                "network_registered_at": 1, "num_uids": len(subnet.hotkeys), "max_uids": 256,
                "hotkeys": list(subnet.hotkeys), "coldkeys": list(subnet.coldkeys),
                "active": [True] * len(subnet.hotkeys), "validator_permit": list(subnet.permits),
                "axons": [axon or {"ip": 0, "port": 0, "ip_type": 4} for axon in subnet.axons],
                "last_update": list(subnet.last_update), "block_at_registration": list(subnet.registered_at),
                "alpha_stake": list(subnet.stakes), "tao_stake": [0] * len(subnet.stakes),
                "total_stake": list(subnet.stakes)}

    async def compose(self, call: Any) -> Any:
        return call

    async def estimate_fee(self, call: Any, keypair: Any) -> Balance:
        return Balance.from_rao(100_000)

    async def submit(self, call: Any, keypair: Any, *, nonce: int | None = None, period: int | None = None,
                     wait_for_inclusion: bool = True, wait_for_finalization: bool = True) -> ExtrinsicResult:
        payload = repr(tuple(call)).encode()
        signer: str = keypair.ss58_address
        if not verify(payload, bytes(keypair.sign(payload)), signer, keypair.crypto_type):
            return ExtrinsicResult(success=False, message="BadProof")
        self._produce(BLOCK_MS)
        message = self._apply(call.module, call.function, call.params, signer)
        self.submitted.append((call.module, call.function))
        return ExtrinsicResult(success=message is None, message=message or "Success",
                               block_hash=self.hash_of(self.head))

    def _apply(self, module: str, function: str, params: dict[str, Any], signer: str) -> str | None:
        subnet = self.subnets.get(params["netuid"] % 4096)
        if subnet is None:
            return "SubnetNotExists"
        if signer not in subnet.hotkeys:
            return "HotKeyNotRegisteredInSubNet"
        uid = subnet.hotkeys.index(signer)
        if (module, function) == ("Commitments", "set_commitment"):
            self.commitments[(params["netuid"], signer)] = {"block": self.head, "deposit": 0,
                                                              "info": params["info"]}
        elif (module, function) == ("SubtensorModule", "serve_axon"):
            subnet.axons[uid] = {key: params[key] for key in ("ip", "port", "ip_type", "protocol", "version")}
        elif (module, function) == ("SubtensorModule", "set_mechanism_weights"):
            if not subnet.permits[uid]:
                return "NeuronNoValidatorPermit"
            if subnet.last_update[uid] and self.head - subnet.last_update[uid] < subnet.weights_rate_limit:
                return "SettingWeightsTooFast"
            if any(dest >= len(subnet.hotkeys) for dest in params["dests"]):
                return "UidVecContainInvalidOne"
            if params["version_key"] < subnet.weights_version_key:
                return "IncorrectWeightVersionKey"
            refused = _limits_refusal(subnet, uid, list(params["dests"]), list(params["weights"]))
            if refused is not None:
                return refused
            subnet.weights[uid] = (list(params["dests"]), list(params["weights"]))
            subnet.weight_versions[uid] = int(params["version_key"])
            subnet.last_update[uid] = self.head
        elif (module, function) == ("SubtensorModule", "commit_timelocked_mechanism_weights"):
            subnet.timelocked_commits.append((uid, bytes(params["commit"]), int(params["reveal_round"]),
                                              int(params["commit_reveal_version"])))
            subnet.last_update[uid] = self.head
        else:
            raise NotImplementedError(f"the fake substrate cannot apply {module}.{function}")
        return None


def _limits_refusal(subnet: FakeSubnet, uid: int, dests: list[int], weights: list[int]) -> str | None:
    """Subtensor's ``check_length`` and ``max_weight_limited`` on a plaintext row (exact arithmetic)."""
    if dests == [uid]:
        return None  # a self-weight is exempt from both
    if len(dests) < min(subnet.min_allowed_weights, len(subnet.hotkeys)):
        return "WeightVecLengthIsLow"
    total = sum(weights)
    if subnet.max_weight_limit < 65_535 and total and max(weights) * 65_535 > subnet.max_weight_limit * total:
        return "MaxWeightExceeded"
    return None
