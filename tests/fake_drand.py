"""A drand HTTP relay for tests: drand cannot be reached from here.

It answers drand's public HTTP API as its relays do (``GET /{chain_hash}/public/{round}`` ->
``{"round", "randomness", "signature"}``, randomness being the sha256 of the signature; ``425 Too Early``
for a round after the latest emitted, 404 for an unknown chain) from rounds the test publishes. The one
real quicknet beacon the tests use is round 123's, as drand's relays publish it (it is the example in
drand's own verification library), so what the relay gives really opens what was sealed to that round.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Final

from fastapi import FastAPI, HTTPException

from arena.suites.bank import QUICKNET_CHAIN_HASH

QUICKNET_ROUND: Final = 123
QUICKNET_SIGNATURE: Final = ("b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482"
                             "e26cd02df835d3546d23c4b13e0dfc92")


@dataclass
class RelayState:
    """The rounds the relay has (round -> hex signature), the latest one it calls emitted, and failures."""

    signatures: dict[int, str] = field(default_factory=dict)
    latest: int = 0
    failing: bool = False
    requests: list[int] = field(default_factory=list)


def create_relay(state: RelayState) -> FastAPI:
    app = FastAPI(docs_url=None, redoc_url=None)

    @app.get("/{chain_hash}/public/{round_number}")
    def public_round(chain_hash: str, round_number: int) -> dict[str, Any]:
        state.requests.append(round_number)
        if state.failing:
            raise HTTPException(503, "relay overloaded")
        if chain_hash != QUICKNET_CHAIN_HASH:
            raise HTTPException(404, "unknown chain")
        if round_number > state.latest or round_number not in state.signatures:
            raise HTTPException(425, "Too Early")
        signature = state.signatures[round_number]
        return {"round": round_number, "randomness": hashlib.sha256(bytes.fromhex(signature)).hexdigest(),
                "signature": signature}

    return app
