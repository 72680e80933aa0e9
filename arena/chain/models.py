"""What the arena reads from and writes to a chain: neurons, axons, commitments (shapes only)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.race.clock import UtcDatetime


class ChainError(RuntimeError):
    """The chain refused or could not perform a call; the message says what to do."""


class AxonInfo(BaseModel):
    """The HTTP endpoint a neuron published on chain."""

    model_config = ConfigDict(frozen=True)

    ip: str = Field(min_length=1)
    port: int = Field(ge=1, le=65_535)
    protocol: Literal["http", "https"] = "http"

    @property
    def url(self) -> str:
        host = f"[{self.ip}]" if ":" in self.ip else self.ip
        return f"{self.protocol}://{host}:{self.port}"


class Neuron(BaseModel):
    model_config = ConfigDict(frozen=True)

    uid: int = Field(ge=0, le=65_535)
    hotkey: str
    coldkey: str
    validator_permit: bool = False
    axon: AxonInfo | None = None


class Metagraph(BaseModel):
    """The subnet's neurons at ``block``; ``neurons[i].uid == i``."""

    model_config = ConfigDict(frozen=True)

    netuid: int
    block: int
    neurons: tuple[Neuron, ...] = ()

    @property
    def hotkeys(self) -> list[str]:
        """``hotkeys[uid]``: the shape ``arena.weights.compute_weights`` takes."""
        return [n.hotkey for n in self.neurons]

    def neuron(self, hotkey: str) -> Neuron | None:
        return next((n for n in self.neurons if n.hotkey == hotkey), None)

    def validators(self) -> list[Neuron]:
        """Neurons with a validator permit and a published axon: where miners upload."""
        return [n for n in self.neurons if n.validator_permit and n.axon is not None]


class ValidatorWeights(BaseModel):
    """A neuron holding a validator permit or a weight row: its stake, its axon and the weights it set
    last, as fractions of its row (uid -> share, summing to 1; empty when it set none, or none has been
    revealed yet on a commit-reveal subnet)."""

    model_config = ConfigDict(frozen=True)

    uid: int = Field(ge=0, le=65_535)
    hotkey: str
    stake: float = Field(ge=0, description="Its stake weight in the subnet's alpha (0: the chain has none)")
    validator_permit: bool = False
    axon: AxonInfo | None = None
    weights: dict[int, float] = Field(default_factory=dict)


def weight_shares(row: Iterable[tuple[int, int | float]]) -> dict[int, float]:
    """A weight row (uid, raw value) as each uid's share of the row's total; empty for an empty or all-zero
    row. The chain stores max-upscaled u16 values whose scale means nothing; only the proportions count."""
    values = [(int(uid), float(value)) for uid, value in row]
    total = sum(value for _, value in values)
    return {uid: value / total for uid, value in sorted(values) if value} if total > 0 else {}


class Commitment(BaseModel):
    """A hotkey's latest on-chain commitment and the block (and its time) that stored it."""

    model_config = ConfigDict(frozen=True)

    hotkey: str
    data: str
    block: int = Field(ge=0)
    time: UtcDatetime
    extrinsic_index: int | None = Field(
        default=None, ge=0, description="Its place among the block's commitments where the chain reports it: "
                                        "of two in one block the lower came first (the copy rule's order)")
