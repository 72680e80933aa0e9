"""Miners pressing on ``POST /submissions`` over real HTTP on loopback (uvicorn, real sr25519 keys, the
SQLite nonce store): 200 signed requests at once must get no 5xx (each its own 4xx), also while another
writer holds the database longer than SQLite's default 5 s wait; floods of unauthenticated and
unregistered requests are refused at the door, without waiting for the database; and a legitimate miner
whose clock is 20 s off is accepted while its replayed request stays refused."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from arena.submissions.models import SUBMISSIONS_PATH
from tests.arena.submissions.test_submissions import AGENT, Net, post, refused
from tests.chain_support import RunningValidator, make_wallet, running_validator

CLIENTS = 200
BAD_BODY = b'{"name": "agent.py"}'


@pytest.fixture
def net(tmp_path: Path) -> Net:
    return Net(tmp_path)


@pytest.fixture
def validator(net: Net) -> Iterator[RunningValidator]:
    with running_validator(net.chain, net.validator, net.root / "validator", clock=net.clock) as running:
        yield running


def post_all_at_once(url: str, requests: list[tuple[dict[str, str], bytes]],
                     note: Callable[[], object] = lambda: None) -> list[tuple[int, str, object]]:
    """Every request on its own connection, all in flight together; (status, error, ``note()`` when the
    answer came) of each."""

    async def send(client: httpx.AsyncClient, headers: dict[str, str],
                   body: bytes) -> tuple[int, str, object]:
        response = await client.post(url + SUBMISSIONS_PATH, content=body,
                                     headers={**headers, "Content-Type": "application/json"})
        is_json = response.headers.get("content-type", "").startswith("application/json")
        error = "" if response.status_code < 400 else (
            str(response.json().get("error")) if is_json else response.text[:40])
        return response.status_code, error, note()

    async def flood() -> list[tuple[int, str, object]]:
        limits = httpx.Limits(max_connections=len(requests), max_keepalive_connections=0)
        async with httpx.AsyncClient(limits=limits, timeout=120) as client:
            return list(await asyncio.gather(*(send(client, h, b) for h, b in requests)))

    return asyncio.run(flood())


def test_two_hundred_concurrent_signed_posts_get_no_server_error(net: Net,
                                                                  validator: RunningValidator) -> None:
    requests = [net.signed(AGENT, body=BAD_BODY) for _ in range(CLIENTS)]
    answers = Counter(post_all_at_once(validator.url, requests))
    assert answers == {(400, "bad_body", None): CLIENTS}
    # Every nonce was remembered once: the same requests again are all replays.
    assert Counter(post_all_at_once(validator.url, requests[:20])) == {(409, "replay", None): 20}


HOLD_S = 8.0
"""Longer than the 5 s a SQLite connection waits for a lock by default."""


def test_a_slow_writer_costs_waiting_not_server_errors(net: Net, validator: RunningValidator) -> None:
    """Another writer of the arena database (the work loop committing on a slow disk) holds its write
    lock for 8 s while 200 signed requests, 50 unsigned ones and 50 from an unregistered hotkey arrive:
    the signed ones wait and each gets its 400; the others are answered while the lock is still held."""
    refused(post(validator.url, *net.signed(AGENT, body=BAD_BODY)), 400, "bad_body")  # a validator at work
    stranger = make_wallet(net.root / "wallets", "stranger")
    held, released = threading.Event(), threading.Event()

    def slow_writer() -> None:
        connection = sqlite3.connect(net.root / "validator" / "arena.sqlite3", isolation_level=None)
        try:
            connection.execute("BEGIN IMMEDIATE")
            held.set()
            threading.Event().wait(HOLD_S)
            connection.execute("ROLLBACK")
        finally:
            connection.close()
            released.set()

    writer = threading.Thread(target=slow_writer)
    writer.start()
    try:
        assert held.wait(30)
        requests = [net.signed(AGENT, body=BAD_BODY) for _ in range(CLIENTS)]
        requests += [({}, BAD_BODY)] * 50 + [net.signed(AGENT, wallet=stranger) for _ in range(50)]
        answers = post_all_at_once(validator.url, requests, note=released.is_set)
    finally:
        writer.join(60)
    assert Counter((status, error) for status, error, _ in answers) == {
        (400, "bad_body"): CLIENTS, (400, "malformed_auth"): 50, (403, "unregistered"): 50}
    assert not any(after for _, error, after in answers if error in ("malformed_auth", "unregistered"))


def test_floods_from_strangers_and_unsigned_clients_are_refused_as_such(
        net: Net, validator: RunningValidator) -> None:
    stranger = make_wallet(net.root / "wallets", "stranger")
    unregistered = [net.signed(AGENT, wallet=stranger) for _ in range(CLIENTS // 2)]
    unsigned: list[tuple[dict[str, str], bytes]] = [({}, BAD_BODY)] * (CLIENTS // 2)
    answers = Counter(post_all_at_once(validator.url, unregistered + unsigned))
    assert answers == {(403, "unregistered", None): CLIENTS // 2, (400, "malformed_auth", None): CLIENTS // 2}


@pytest.mark.parametrize("skew_s", [20, -20])
def test_a_miner_whose_clock_is_20_seconds_off_is_accepted_once(net: Net, validator: RunningValidator,
                                                                 skew_s: int) -> None:
    net.commit(AGENT)
    headers, body = net.signed(AGENT, skew=timedelta(seconds=skew_s))
    assert post(validator.url, headers, body).status_code == 201
    refused(post(validator.url, headers, body), 409, "replay")
