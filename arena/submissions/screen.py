"""The cheap first look at a signed upload, before its body is read or its signature verified.

Run on the API's event loop for every request, so floods of unsigned, malformed or stale requests are
answered at once, never queued behind the threads that verify signatures and write to the database. It
decides only what ``bittensor.http_auth.verify`` would refuse anyway, from the headers alone: the
``btauth/1`` headers are present, the nonce is a decimal integer inside the clock-skew window of the
validator's clock, and the signature is 64 bytes of hex. ``verify`` still checks all of it, and the rest.
"""

from __future__ import annotations

import string
from collections.abc import Mapping

from bittensor import http_auth

from arena.submissions.models import RefusalCode, SubmissionRefused

REQUIRED_HEADERS = (http_auth.HEADER_VERSION, http_auth.HEADER_HOTKEY, http_auth.HEADER_NONCE,
                    http_auth.HEADER_SIGNATURE)
SIGNATURE_BYTES = 64
"""sr25519 and ed25519 signatures alike."""


def screen_headers(headers: Mapping[str, str], *, now_ns: int, clock_skew_s: float) -> str:
    """The hotkey the request claims; ``SubmissionRefused`` (``malformed_auth`` or ``stale``) otherwise.

    The window is symmetric: a miner's clock may run ``clock_skew_s`` ahead of the validator's or behind
    it. ``now_ns`` is when the request arrived (its headers), so a slow upload of the body costs nothing.
    """
    lowered = {key.lower(): value for key, value in headers.items()}
    missing = [name for name in REQUIRED_HEADERS if not lowered.get(name.lower())]
    if missing:
        raise SubmissionRefused(RefusalCode.MALFORMED_AUTH, f"missing {', '.join(missing)}: sign the request "
                                                            "with bittensor.http_auth")
    raw_nonce = lowered[http_auth.HEADER_NONCE.lower()]
    if not raw_nonce.isascii() or not raw_nonce.isdigit():
        raise SubmissionRefused(RefusalCode.MALFORMED_AUTH,
                                f"{http_auth.HEADER_NONCE} is not a decimal integer")
    signature = lowered[http_auth.HEADER_SIGNATURE.lower()].removeprefix("0x")
    if len(signature) != 2 * SIGNATURE_BYTES or not _is_hex(signature):
        raise SubmissionRefused(RefusalCode.MALFORMED_AUTH,
                                f"{http_auth.HEADER_SIGNATURE} is not {SIGNATURE_BYTES} bytes of hex")
    offset_s = (int(raw_nonce) - now_ns) / 1e9
    if abs(offset_s) > clock_skew_s:
        side = "ahead of" if offset_s > 0 else "behind"
        raise SubmissionRefused(RefusalCode.STALE,
                                f"the nonce is {abs(offset_s):.1f}s {side} this validator's clock; at most "
                                f"{clock_skew_s:g}s either way is accepted: sync your clock (NTP) and sign "
                                "the request afresh")
    return lowered[http_auth.HEADER_HOTKEY.lower()]


def _is_hex(text: str) -> bool:
    return all(char in string.hexdigits for char in text)
