"""drand's public randomness beacon over its HTTP API: the signature of one round, which opens what was
timelock-encrypted to that round (problem banks, :mod:`arena.suites.sealed_bank`).

``GET {relay}/{chain_hash}/public/{round}`` answers ``{"round", "randomness", "signature"}`` once the
round was emitted, and 404 or 425 (Too Early) before. Relays are tried in order; a signature is never
trusted for what it says, only for what it opens (decryption with a wrong one fails), so any relay,
mirror or cache will do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import httpx
import structlog

log = structlog.get_logger(__name__)

DEFAULT_RELAYS: Final = ("https://api.drand.sh", "https://api2.drand.sh", "https://api3.drand.sh",
                         "https://drand.cloudflare.com")
NOT_YET: Final = frozenset({404, 425})


class BeaconUnavailable(RuntimeError):
    """No relay answered for the round (network, server errors): the message names each relay's failure."""


class DrandBeacon:
    """Fetches round signatures of one drand chain from its relays; keeps those it fetched."""

    def __init__(self, chain_hash: str, relays: Sequence[str] = DEFAULT_RELAYS, *,
                 client: httpx.Client | None = None, timeout_s: float = 10.0) -> None:
        if not relays:
            raise ValueError("give at least one drand relay URL")
        self.chain_hash = chain_hash
        self.relays = tuple(r.rstrip("/") for r in relays)
        self._client = client or httpx.Client(timeout=timeout_s)
        self._signatures: dict[int, str] = {}

    def signature(self, round_number: int) -> str | None:
        """The hex signature of ``round_number``, or ``None`` while the round is not emitted yet.

        Raises :class:`BeaconUnavailable` when no relay answers either way.
        """
        if round_number in self._signatures:
            return self._signatures[round_number]
        failures: list[str] = []
        for relay in self.relays:
            url = f"{relay}/{self.chain_hash}/public/{round_number}"
            try:
                response = self._client.get(url)
            except httpx.HTTPError as exc:
                failures.append(f"{relay}: {type(exc).__name__}: {exc}")
                continue
            if response.status_code in NOT_YET:
                return None
            try:
                response.raise_for_status()
                signature = str(response.json()["signature"])
            except (httpx.HTTPStatusError, ValueError, KeyError, TypeError) as exc:
                failures.append(f"{relay}: {exc}")
                continue
            self._signatures[round_number] = signature
            return signature
        log.warning("drand_unavailable", round=round_number, failures=failures)
        raise BeaconUnavailable(f"no drand relay gave round {round_number}: " + "; ".join(failures))

    def forget(self, round_number: int) -> None:
        """Drop a kept signature (one that did not open what it should have)."""
        self._signatures.pop(round_number, None)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> DrandBeacon:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
