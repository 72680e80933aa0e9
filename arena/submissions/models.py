"""The signed-upload protocol's shapes: the body a miner signs, what a validator answers.

The request is signed with ``bittensor.http_auth`` (``btauth/1``): its headers bind the miner's
hotkey, a nanosecond timestamp nonce, the receiving validator's hotkey, the method, the path and the
sha256 of the raw body; the body carries the file and its sha256, which must equal the hotkey's latest
on-chain commitment, made at most ``RaceRules.upload_window_blocks`` blocks before the chain's head.
``POST /submissions/precheck`` takes the same signed body and answers a :class:`PrecheckAnswer`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from enum import StrEnum
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from arena.race.clock import UtcDatetime

SUBMISSIONS_PATH = "/submissions"
PRECHECK_PATH: Final = SUBMISSIONS_PATH + "/precheck"
MAX_AGENT_BYTES = 1_000_000
"""The static analysis' own size limit (SPEC 4); the body may hold its base64 plus a little JSON."""
MAX_BODY_BYTES = MAX_AGENT_BYTES * 4 // 3 + 4_096


class UploadBody(BaseModel):
    """The JSON body of ``POST /submissions``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$", description="The file's name, for people")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the file's bytes, lowercase hex")
    code_b64: str = Field(description="The file's bytes, standard base64")

    @classmethod
    def of(cls, name: str, source: bytes) -> UploadBody:
        return cls(name=name, sha256=hashlib.sha256(source).hexdigest(),
                   code_b64=base64.b64encode(source).decode("ascii"))

    def source(self) -> bytes:
        """The file's bytes; ``ValueError`` when they are not base64 or do not hash to ``sha256``."""
        try:
            source = base64.b64decode(self.code_b64, validate=True)
        except binascii.Error as exc:
            raise ValueError("code_b64 is not valid base64") from exc
        if hashlib.sha256(source).hexdigest() != self.sha256:
            raise ValueError("sha256 does not match the bytes of code_b64")
        return source


class Submission(BaseModel):
    """An agent file a validator accepted."""

    model_config = ConfigDict(frozen=True)

    hotkey: str
    sha256: str
    name: str
    size_bytes: int
    commitment_block: int
    commitment_time: UtcDatetime
    received_at: UtcDatetime


class RefusalCode(StrEnum):
    MALFORMED_AUTH = "malformed_auth"
    WRONG_RECEIVER = "wrong_receiver"
    STALE = "stale"
    BAD_SIGNATURE = "bad_signature"
    REPLAY = "replay"
    TOO_LARGE = "too_large"
    BAD_BODY = "bad_body"
    UNREGISTERED = "unregistered"
    NO_COMMITMENT = "no_commitment"
    COMMITMENT_MISMATCH = "commitment_mismatch"
    UPLOAD_WINDOW_CLOSED = "upload_window_closed"
    COOLDOWN = "cooldown"
    STATIC_ANALYSIS = "static_analysis"
    COPY = "copy"


HTTP_STATUS: dict[RefusalCode, int] = {
    RefusalCode.MALFORMED_AUTH: 400,
    RefusalCode.WRONG_RECEIVER: 421,
    RefusalCode.STALE: 401,
    RefusalCode.BAD_SIGNATURE: 401,
    RefusalCode.REPLAY: 409,
    RefusalCode.TOO_LARGE: 413,
    RefusalCode.BAD_BODY: 400,
    RefusalCode.UNREGISTERED: 403,
    RefusalCode.NO_COMMITMENT: 409,
    RefusalCode.COMMITMENT_MISMATCH: 409,
    RefusalCode.UPLOAD_WINDOW_CLOSED: 409,
    RefusalCode.COOLDOWN: 429,
    RefusalCode.STATIC_ANALYSIS: 422,
    RefusalCode.COPY: 409,
}


class SubmissionRefused(Exception):
    """Why a validator refused an upload; ``extra`` adds machine-readable facts (``retry_at``, findings)."""

    def __init__(self, code: RefusalCode, detail: str, **extra: Any) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.extra = extra

    @property
    def status(self) -> int:
        return HTTP_STATUS[self.code]

    def body(self) -> dict[str, Any]:
        return {"error": self.code.value, "detail": self.detail, **self.extra}


class PrecheckRefusal(BaseModel):
    """One reason the validator would refuse the upload: the upload's refusal code and detail, with
    ``retry_at`` for the cooldown and the findings or original of a rejection."""

    model_config = ConfigDict(frozen=True)

    error: str
    detail: str
    retry_at: UtcDatetime | None = None
    rejection: str | None = None
    findings: list[dict[str, Any]] = Field(default_factory=list)
    copy_of: dict[str, Any] | None = None


class PrecheckAnswer(BaseModel):
    """A validator's answer to ``POST /submissions/precheck``: what it would say to the file now.

    ``committed_block`` is set when the hotkey's latest commitment already is this file, and
    ``commitment_ok`` says whether an upload on that commitment would be accepted (``judged``: its verdict
    there, when it has one; ``commitment_retry_at``: the cooldown it came too early for;
    ``upload_until_block``: the last block of its upload window, ``upload_window_closed`` once the chain
    is past it). ``new_commitment_ok`` says whether a commitment made now would be outside the cooldown
    (``new_commitment_from``: when the cooldown ends). ``refusals`` is empty when the file would be
    accepted on the latest commitment or on a new one."""

    model_config = ConfigDict(frozen=True)

    hotkey: str
    sha256: str
    registered: bool
    committed_block: int | None = None
    judged: str | None = None
    commitment_ok: bool = False
    commitment_retry_at: UtcDatetime | None = None
    upload_until_block: int | None = None
    upload_window_closed: bool = False
    new_commitment_ok: bool = False
    new_commitment_from: UtcDatetime | None = None
    refusals: list[PrecheckRefusal] = Field(default_factory=list)
