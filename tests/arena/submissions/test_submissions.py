"""``POST /submissions`` over real HTTP on loopback: signed with real sr25519 hotkeys
(``bittensor.http_auth``), judged against the embedded chain (instrumented to count the gate's reads),
remembered in SQLite."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from bittensor import Wallet, http_auth

from arena.race.clock import ManualClock
from arena.race.rules import RaceRules
from arena.submissions import UploadBody
from arena.submissions.models import MAX_BODY_BYTES, SUBMISSIONS_PATH
from tests.chain_support import CountingChain, RunningValidator, make_wallet, register, running_validator

AGENT = b"def agent_main(problem):\n    return []\n"
OTHER_AGENT = b"def agent_main(problem):\n    return [] if problem else []\n"


class Net:
    """A local chain with one validator (permit) and one registered miner, and a manual clock."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.clock = ManualClock(datetime.now(UTC))
        self.chain = CountingChain(root / "chain.sqlite3", clock=self.clock)
        self.validator = make_wallet(root / "wallets", "validator")
        self.miner = make_wallet(root / "wallets", "miner")
        register(self.chain, self.validator, validator_permit=True)
        register(self.chain, self.miner)
        self._signed = 0

    def commit(self, source: bytes, wallet: Wallet | None = None) -> None:
        self.chain.commit(wallet or self.miner, hashlib.sha256(source).hexdigest())

    def signed(self, source: bytes, *, wallet: Wallet | None = None, receiver: str | None = None,
               body: bytes | None = None, skew: timedelta = timedelta(0)) -> tuple[dict[str, str], bytes]:
        """Headers and body as a miner whose clock is ``skew`` ahead of the validator's signs them."""
        # A real client's nonce is time.time_ns(); with the clock standing still, step it by a microsecond.
        self._signed += 1
        raw = body if body is not None else UploadBody.of("agent.py", source).model_dump_json().encode()
        miner_now = self.clock.now() + skew
        headers = http_auth.sign(wallet or self.miner, method="POST", path=SUBMISSIONS_PATH, body=raw,
                                 receiver_ss58=receiver or self.validator.hotkey.ss58_address,
                                 nonce_ns=int(miner_now.timestamp() * 1e9) + self._signed * 1_000)
        return headers, raw


@pytest.fixture
def net(tmp_path: Path) -> Net:
    return Net(tmp_path)


@pytest.fixture
def validator(net: Net) -> Iterator[RunningValidator]:
    with running_validator(net.chain, net.validator, net.root / "validator", clock=net.clock,
                           known_product_ids=frozenset({"B0SECRET01"})) as running:
        yield running


def post(url: str, headers: dict[str, str], body: bytes) -> httpx.Response:
    return httpx.post(url + SUBMISSIONS_PATH, content=body,
                      headers={**headers, "Content-Type": "application/json"}, timeout=30)


def refused(response: httpx.Response, status: int, error: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    answer: dict[str, Any] = response.json()
    assert answer["error"] == error and answer["detail"], answer
    return answer


def test_signed_upload_of_the_committed_file_is_accepted_and_stored_by_hash(
        net: Net, validator: RunningValidator) -> None:
    net.commit(AGENT)
    response = post(validator.url, *net.signed(AGENT))
    assert response.status_code == 201, response.text
    accepted = response.json()
    digest = hashlib.sha256(AGENT).hexdigest()
    assert accepted["hotkey"] == net.miner.hotkey.ss58_address and accepted["sha256"] == digest
    assert accepted["commitment_block"] == net.chain.latest_commitment(accepted["hotkey"]).block  # type: ignore[union-attr]
    assert validator.gate.files.path(digest).read_bytes() == AGENT
    # A retry (freshly signed) of the same commitment is answered, not judged again.
    again = post(validator.url, *net.signed(AGENT))
    assert again.status_code == 200 and again.json() == accepted


def test_forged_signatures_are_refused(net: Net, validator: RunningValidator) -> None:
    net.commit(AGENT)
    headers, body = net.signed(AGENT)
    signature = bytearray(bytes.fromhex(headers[http_auth.HEADER_SIGNATURE][2:]))
    signature[0] ^= 1
    tampered = {**headers, http_auth.HEADER_SIGNATURE: "0x" + signature.hex()}
    refused(post(validator.url, tampered, body), 401, "bad_signature")
    # Signed by another key while claiming the miner's hotkey.
    impostor = make_wallet(net.root / "wallets", "impostor")
    forged, _ = net.signed(AGENT, wallet=impostor)
    refused(post(validator.url, {**forged, http_auth.HEADER_HOTKEY: headers[http_auth.HEADER_HOTKEY]}, body),
            401, "bad_signature")
    # A body swapped under a valid signature.
    refused(post(validator.url, headers, UploadBody.of("agent.py", OTHER_AGENT).model_dump_json().encode()),
            401, "bad_signature")
    refused(post(validator.url, {k: v for k, v in headers.items() if k != http_auth.HEADER_NONCE}, body),
            400, "malformed_auth")
    # Signed for another validator: useless here.
    other = make_wallet(net.root / "wallets", "other-validator").hotkey.ss58_address
    refused(post(validator.url, *net.signed(AGENT, receiver=other)), 421, "wrong_receiver")
    # Nothing refused was recorded; the genuine request still goes through.
    assert post(validator.url, headers, body).status_code == 201


def test_replays_are_refused_also_after_a_restart(net: Net, validator: RunningValidator) -> None:
    net.commit(AGENT)
    headers, body = net.signed(AGENT)
    assert post(validator.url, headers, body).status_code == 201
    refused(post(validator.url, headers, body), 409, "replay")
    with running_validator(net.chain, net.validator, net.root / "validator", clock=net.clock) as restarted:
        refused(post(restarted.url, headers, body), 409, "replay")
        assert post(restarted.url, *net.signed(AGENT)).status_code == 200


@pytest.mark.parametrize("skew_s", [25, -25])
def test_clocks_within_the_window_are_accepted_once(net: Net, validator: RunningValidator,
                                                    skew_s: int) -> None:
    net.commit(AGENT)
    headers, body = net.signed(AGENT, skew=timedelta(seconds=skew_s))
    assert post(validator.url, headers, body).status_code == 201
    refused(post(validator.url, headers, body), 409, "replay")
    # Still a replay when the validator's clock has moved on to the window's far edge (29 s behind).
    net.clock.advance(timedelta(seconds=skew_s + 29))
    refused(post(validator.url, headers, body), 409, "replay")


@pytest.mark.parametrize(("skew_s", "side"), [(40, "ahead of"), (-40, "behind")])
def test_clocks_beyond_the_window_are_refused_as_stale(net: Net, validator: RunningValidator, skew_s: int,
                                                       side: str) -> None:
    net.commit(AGENT)
    answer = refused(post(validator.url, *net.signed(AGENT, skew=timedelta(seconds=skew_s))), 401, "stale")
    assert f"40.0s {side}" in answer["detail"] and "30s either way" in answer["detail"]


def test_a_request_goes_stale_once_the_validator_clock_passes_the_window(
        net: Net, validator: RunningValidator) -> None:
    net.commit(AGENT)
    headers, body = net.signed(AGENT)
    net.clock.advance(timedelta(seconds=31))
    refused(post(validator.url, headers, body), 401, "stale")


def test_the_window_is_a_setting(net: Net) -> None:
    with running_validator(net.chain, net.validator, net.root / "narrow", clock=net.clock,
                           clock_skew_s=10) as narrow:
        net.commit(AGENT)
        answer = refused(post(narrow.url, *net.signed(AGENT, skew=timedelta(seconds=20))), 401, "stale")
        assert "at most 10s" in answer["detail"]
        assert post(narrow.url, *net.signed(AGENT, skew=timedelta(seconds=9))).status_code == 201


def test_unregistered_hotkeys_are_refused(net: Net, validator: RunningValidator) -> None:
    stranger = make_wallet(net.root / "wallets", "stranger")
    headers, body = net.signed(AGENT, wallet=stranger)
    answer = refused(post(validator.url, headers, body), 403, "unregistered")
    assert stranger.hotkey.ss58_address in answer["detail"]
    # Its nonce was not remembered (strangers cannot grow the table): the same request is refused alike.
    refused(post(validator.url, headers, body), 403, "unregistered")


def test_the_file_must_be_the_latest_commitment(net: Net, validator: RunningValidator) -> None:
    refused(post(validator.url, *net.signed(AGENT)), 409, "no_commitment")
    net.commit(OTHER_AGENT)
    answer = refused(post(validator.url, *net.signed(AGENT)), 409, "commitment_mismatch")
    assert hashlib.sha256(OTHER_AGENT).hexdigest() in answer["detail"]
    net.commit(AGENT)
    assert post(validator.url, *net.signed(AGENT)).status_code == 201


def test_a_commitment_inside_the_cooldown_is_refused(net: Net, validator: RunningValidator) -> None:
    net.commit(AGENT)
    first = post(validator.url, *net.signed(AGENT)).json()
    net.clock.advance(timedelta(hours=11))
    net.commit(OTHER_AGENT)
    answer = refused(post(validator.url, *net.signed(OTHER_AGENT)), 429, "cooldown")
    expected = datetime.fromisoformat(first["commitment_time"]) + timedelta(hours=12)
    assert datetime.fromisoformat(answer["retry_at"]) == expected
    # Waiting is not enough: the commitment itself must come after the cooldown.
    net.clock.advance(timedelta(hours=2))
    refused(post(validator.url, *net.signed(OTHER_AGENT)), 429, "cooldown")
    net.commit(OTHER_AGENT)
    assert post(validator.url, *net.signed(OTHER_AGENT)).status_code == 201


def test_an_upload_is_accepted_only_within_its_commitments_upload_window(
        net: Net, validator: RunningValidator) -> None:
    window = RaceRules().upload_window_blocks
    block = timedelta(seconds=net.chain.block_seconds())
    net.commit(AGENT)
    net.clock.advance(block * window)  # the window's last block: the block after it does not exist yet
    assert post(validator.url, *net.signed(AGENT)).status_code == 201
    net.clock.advance(block)  # a repeat of the accepted upload is answered as before, whenever it comes
    assert post(validator.url, *net.signed(AGENT)).status_code == 200

    net.clock.advance(timedelta(hours=12))
    net.commit(OTHER_AGENT)
    late = net.chain.latest_commitment(net.miner.hotkey.ss58_address)
    assert late is not None
    net.clock.advance(block * (window + 1))  # the block after the window exists: its draw is public
    answer = refused(post(validator.url, *net.signed(OTHER_AGENT)), 409, "upload_window_closed")
    assert answer["upload_until_block"] == late.block + window
    assert "`miner submit --recommit`" in answer["detail"]
    net.commit(OTHER_AGENT)  # committed again (the kept read is the late commitment): a window of its own
    assert post(validator.url, *net.signed(OTHER_AGENT)).status_code == 201


def test_static_analysis_runs_on_the_validator(net: Net, validator: RunningValidator) -> None:
    hostile = b"import subprocess\n\ndef agent_main(problem):\n    return subprocess.run(['ls'])\n"
    net.commit(hostile)
    answer = refused(post(validator.url, *net.signed(hostile)), 422, "static_analysis")
    assert answer["rejection"] == "security" and answer["findings"]
    assert not validator.gate.files.path(hashlib.sha256(hostile).hexdigest()).exists()
    # A security rejection carries the short cooldown (1 h), not 12 h.
    answers = b"def agent_main(problem):\n    return [{'id': 'B0SECRET01'}]\n"
    net.clock.advance(timedelta(minutes=30))
    net.commit(answers)
    refused(post(validator.url, *net.signed(answers)), 429, "cooldown")
    net.clock.advance(timedelta(minutes=31))
    net.commit(answers)
    answer = refused(post(validator.url, *net.signed(answers)), 422, "static_analysis")
    assert answer["rejection"] == "integrity"


def test_malformed_and_oversized_bodies_are_refused(net: Net, validator: RunningValidator) -> None:
    refused(post(validator.url, *net.signed(AGENT, body=b"{not json")), 400, "bad_body")
    lying = UploadBody(name="agent.py", sha256="0" * 64, code_b64="ZGVm").model_dump_json().encode()
    answer = refused(post(validator.url, *net.signed(AGENT, body=lying)), 400, "bad_body")
    assert "sha256 does not match" in answer["detail"]
    huge = b"x" * (MAX_BODY_BYTES + 1)
    refused(post(validator.url, *net.signed(AGENT, body=huge)), 413, "too_large")


def test_chain_reads_are_kept_for_a_block(net: Net, validator: RunningValidator) -> None:
    net.commit(AGENT)
    before = net.chain.calls.copy()
    assert post(validator.url, *net.signed(AGENT)).status_code == 201
    for _ in range(3):  # retries of the accepted commitment
        assert post(validator.url, *net.signed(AGENT)).status_code == 200
    reads = net.chain.calls - before
    assert (reads["metagraph"], reads["latest_commitment"]) == (1, 1)
    net.clock.advance(timedelta(seconds=12))  # one block later the chain is read again
    assert post(validator.url, *net.signed(AGENT)).status_code == 200
    assert net.chain.calls - before == {"metagraph": 2, "latest_commitment": 2}


def test_a_commitment_made_after_the_kept_read_is_judged_on_the_chain(net: Net,
                                                                      validator: RunningValidator) -> None:
    refused(post(validator.url, *net.signed(AGENT)), 409, "no_commitment")
    net.commit(AGENT)  # in the same block: the kept read says there is no commitment
    assert post(validator.url, *net.signed(AGENT)).status_code == 201
    assert net.chain.calls["latest_commitment"] == 2  # the kept read, then one afresh before refusing

    net.clock.advance(timedelta(hours=11))
    net.commit(OTHER_AGENT)
    refused(post(validator.url, *net.signed(OTHER_AGENT)), 429, "cooldown")
    net.clock.advance(timedelta(hours=1, seconds=1))
    refused(post(validator.url, *net.signed(OTHER_AGENT)), 429, "cooldown")  # the chain has the early one
    net.commit(OTHER_AGENT)  # the same file again, now outside the cooldown; the kept read is the early one
    assert post(validator.url, *net.signed(OTHER_AGENT)).status_code == 201
