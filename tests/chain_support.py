"""Real sr25519 wallets in temporary directories and a validator serving the submissions router on
loopback, shared by the chain, submissions and ``miner submit`` tests."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bittensor import Wallet
from fastapi import FastAPI

from arena.chain import AxonInfo, Commitment, LocalChain, Metagraph
from arena.race.clock import Clock, ManualClock
from arena.race.rules import RaceRules
from arena.storage import open_database
from arena.submissions import SubmissionGate, submissions_router
from arena.submissions.gate import DEFAULT_CLOCK_SKEW_S
from arena.weights import WeightVector
from shoppingbench.tools.serving import running_server


class CountingChain(LocalChain):
    """The real embedded chain, instrumented: ``calls`` counts the reads and writes made through it
    (``is_registered`` reads the metagraph, so it counts as one)."""

    def __init__(self, path: Path, **options: Any) -> None:
        super().__init__(path, **options)
        self.calls: Counter[str] = Counter()

    def metagraph(self) -> Metagraph:
        self.calls["metagraph"] += 1
        return super().metagraph()

    def latest_commitment(self, hotkey: str) -> Commitment | None:
        self.calls["latest_commitment"] += 1
        return super().latest_commitment(hotkey)

    def set_weights(self, wallet: Wallet, weights: WeightVector, *, version_key: int) -> int:
        self.calls["set_weights"] += 1
        return super().set_weights(wallet, weights, version_key=version_key)


def make_wallet(root: Path, name: str, *, seed: str | None = None) -> Wallet:
    """A new wallet (sr25519 coldkey and hotkey, no password) under ``root``: random keys, or with ``seed``
    the same keys on every run (a test whose problems derive from hotkeys must not vary between runs)."""
    wallet = Wallet(name, "default", path=str(root))
    if seed is None:
        wallet.create_new_coldkey(use_password=False, suppress=True)
        wallet.create_new_hotkey(use_password=False, suppress=True)
        return wallet
    keys = {part: hashlib.sha256(f"{seed}/{part}".encode()).hexdigest() for part in ("coldkey", "hotkey")}
    wallet.regenerate_coldkey(seed=keys["coldkey"], use_password=False, suppress=True)
    wallet.regenerate_hotkey(seed=keys["hotkey"], use_password=False, suppress=True)
    return wallet


def past_upload_window(clock: ManualClock, chain: LocalChain) -> None:
    """Let the (default) upload window of the commitments made in the current block pass, and one block
    more: the first final block after the window, their qualifying seed, then exists."""
    clock.advance(timedelta(seconds=chain.block_seconds()) * (RaceRules().upload_window_blocks + 1))


def register(chain: LocalChain, wallet: Wallet, *, validator_permit: bool = False) -> int:
    return chain.register(wallet.hotkey.ss58_address, wallet.coldkeypub.ss58_address,
                          validator_permit=validator_permit)


@dataclass
class RunningValidator:
    wallet: Wallet
    gate: SubmissionGate
    url: str


@contextmanager
def running_validator(chain: LocalChain, wallet: Wallet, home: Path, clock: Clock | None = None,
                      known_product_ids: frozenset[str] = frozenset(),
                      clock_skew_s: float = DEFAULT_CLOCK_SKEW_S,
                      nonce_clock: Clock | None = None) -> Iterator[RunningValidator]:
    """A validator's submissions app on loopback, its axon published on ``chain``; ``home`` keeps its
    database and files, so a second one on the same ``home`` is the same validator restarted.
    ``nonce_clock`` checks the signed requests' nonces (default: ``clock``)."""
    home.mkdir(parents=True, exist_ok=True)
    engine = open_database(f"sqlite:///{home / 'arena.sqlite3'}")
    gate = SubmissionGate(chain=chain, validator_hotkey=wallet.hotkey.ss58_address, engine=engine,
                          files_dir=home / "agents", rules=RaceRules(), clock=clock,
                          known_product_ids=lambda: known_product_ids, clock_skew_s=clock_skew_s,
                          nonce_clock=nonce_clock)
    app = FastAPI()
    app.include_router(submissions_router(gate))
    try:
        with running_server(app) as url:
            address = urlsplit(url)
            assert address.hostname is not None and address.port is not None
            chain.serve_axon(wallet, AxonInfo(ip=address.hostname, port=address.port))
            yield RunningValidator(wallet=wallet, gate=gate, url=url)
    finally:
        engine.dispose()
