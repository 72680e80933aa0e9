"""The validator's side of the signed upload: every check, in order, and the verdict it keeps.

Order matters, cheap checks before expensive ones: the headers' shape and the nonce's clock-skew window
(``arena.submissions.screen``, also run by the API on its event loop before the body is read), then the
hotkey's registration in the cached metagraph, and only then ``bittensor.http_auth.verify`` (receiver,
the sr25519 signature, and the replay check, the first database write), so unauthenticated and
unregistered traffic never verifies a signature nor touches the database; then the body, then the
commitment (hash equal to the hotkey's latest), then the cooldown from that commitment's time, then its
upload window (the chain's head at most ``RaceRules.upload_window_blocks`` past the commitment's block,
read afresh: the commitment's qualifying draw is the first final block after the window, so no upload is
accepted once the draw may be known; 409), then static analysis, then the copy rule
(``arena.submissions.copies``): a file whose normalised code is another hotkey's earlier commitment's,
or a near-copy of it, is refused as a copy (409, naming the original) and recorded so; an accepted file
later found to copy an original committed before it (uploaded after it) is marked a copy then. Only an
authentic request from a registered hotkey for its current commitment is ever recorded.

The clock-skew window is symmetric (``clock_skew_s``, 30 s by default, ``ARENA_SUBMISSION_CLOCK_SKEW_S``):
a nonce up to that far ahead of the validator's clock or behind it is fresh, measured when the request's
headers arrived, so the upload of a large body never makes it stale. A nonce is still accepted once: seen
nonces are kept for twice the window, longer than any of them can stay fresh. Nonces are measured on the
gate's ``nonce_clock``, by default its ``clock``: a signer stamps its nonce with the real time, so a gate
whose ``clock`` is a demo's manual one is given the real time here, while cooldowns and chain reads stay
on ``clock``.

A verdict belongs to one file at one commitment (hotkey, sha256, block), and a repeat of that upload
gets the same answer again, inside its upload window or after it: 200 with the submission once
accepted, 422 with the findings once rejected, 409 with the original once found a copy.
Any other file of the hotkey is judged on its own, and the cooldown counts every verdict of the hotkey
at or before its commitment's block: a second file committed in the same block as an accepted or
rejected one waits for the cooldown like any later one (429), rather than being answered for it.

Chain reads are cached (``arena.chain.cache``): the metagraph for about one block, a commitment likewise
but read afresh before any refusal that rests on it, so retries cost no reads and a miner who has just
committed is judged on the new commitment.

:meth:`SubmissionGate.precheck` answers, with nothing recorded, what these checks would say to a file
from an authenticated hotkey now (``POST /submissions/precheck``, before the miner commits).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path

import structlog
from bittensor import http_auth
from pydantic import ValidationError
from sqlalchemy import Engine

from arena.chain.btcli import register_command
from arena.chain.cache import CachedReads
from arena.chain.interface import Chain
from arena.chain.models import Commitment
from arena.race.clock import Clock, SystemClock
from arena.race.events import CopyOf
from arena.race.rules import RaceRules, upload_deadline
from arena.submissions.copies import CodeEntry, code_features, verdicts_after_upload
from arena.submissions.models import (
    MAX_BODY_BYTES,
    SUBMISSIONS_PATH,
    PrecheckAnswer,
    PrecheckRefusal,
    RefusalCode,
    Submission,
    SubmissionRefused,
    UploadBody,
)
from arena.submissions.rules import PastVerdict, cooldown_until, in_cooldown
from arena.submissions.screen import screen_headers
from arena.submissions.store import FileStore, SqlNonceStore, UploadVerdict, VerdictStore
from shoppingbench.submission_check import check_agent
from shoppingbench.submission_check.models import Finding
from shoppingbench.submission_check.similarity import fingerprint

log = structlog.get_logger(__name__)

_AUTH_CODES: dict[type[http_auth.AuthError], RefusalCode] = {
    http_auth.MalformedAuth: RefusalCode.MALFORMED_AUTH,
    http_auth.WrongReceiver: RefusalCode.WRONG_RECEIVER,
    http_auth.StaleRequest: RefusalCode.STALE,
    http_auth.BadSignature: RefusalCode.BAD_SIGNATURE,
    http_auth.ReplayedRequest: RefusalCode.REPLAY,
}
_ON_COMMITMENT = {RefusalCode.NO_COMMITMENT, RefusalCode.COMMITMENT_MISMATCH,
                  RefusalCode.UPLOAD_WINDOW_CLOSED, RefusalCode.COOLDOWN}
"""Refusals a stale commitment could cause: never given on a cached read."""


DEFAULT_CLOCK_SKEW_S = 30.0
"""Miners' clocks are seconds apart from the validator's: a window this wide refuses no honest one."""


class SubmissionGate:
    """Judges uploads for the validator whose hotkey is ``validator_hotkey``.

    ``known_product_ids`` returns every suite's answer ids (hard-coded answers are rejected);
    ``clock_skew_s`` is how far a signature's nonce may be from the validator's clock, either way;
    ``nonce_clock`` is the clock nonces are measured and kept on (default ``clock``), ``clock`` the one
    of cooldowns and chain reads. Chain reads are kept for one block time of the chain.
    """

    def __init__(self, *, chain: Chain, validator_hotkey: str, engine: Engine, files_dir: Path,
                 rules: RaceRules, known_product_ids: Callable[[], Collection[str]] = frozenset,
                 clock: Clock | None = None, clock_skew_s: float = DEFAULT_CLOCK_SKEW_S,
                 nonce_clock: Clock | None = None) -> None:
        if clock_skew_s <= 0:
            raise ValueError(f"the clock-skew window must be positive, got {clock_skew_s}")
        self.validator_hotkey = validator_hotkey
        self.files = FileStore(files_dir)
        self.verdicts = VerdictStore(engine)
        self.clock_skew_s = clock_skew_s
        self._rules = rules
        self._known_product_ids = known_product_ids
        self._clock = clock or SystemClock()
        self._nonce_clock = nonce_clock or self._clock
        self.chain_reads = CachedReads(chain, self._clock, timedelta(seconds=chain.block_seconds()))
        self._copy_rule = threading.Lock()  # one file at a time is compared with, then joins, the others
        self._nonces = SqlNonceStore(engine, self._nonce_clock, retention=2 * clock_skew_s)

    def now(self) -> datetime:
        """A request's arrival time, as its nonce is measured (``received_at``): on the nonce clock."""
        return self._nonce_clock.now()

    def screen(self, headers: Mapping[str, str], received_at: datetime) -> None:
        """The checks that need neither the body, nor a wait, nor the database: header shape, the nonce's
        window, and registration when the kept metagraph knows; ``SubmissionRefused`` on failure."""
        hotkey = screen_headers(headers, now_ns=_ns(received_at), clock_skew_s=self.clock_skew_s)
        if self.chain_reads.registered_if_known(hotkey) is False:
            raise self._unregistered(hotkey)

    def receive(self, headers: Mapping[str, str], body: bytes, *, method: str = "POST",
                path: str = SUBMISSIONS_PATH, received_at: datetime | None = None) -> tuple[Submission, bool]:
        """The accepted submission and whether it is new; raises ``SubmissionRefused`` saying why not.
        ``received_at``: when the request's headers arrived (default: now)."""
        try:
            return self._receive(headers, body, method=method, path=path, now=received_at or self.now())
        except SubmissionRefused as refusal:
            claimed = {k.lower(): v for k, v in headers.items()}.get(http_auth.HEADER_HOTKEY.lower())
            log.info("submission_refused", error=refusal.code.value, detail=refusal.detail, hotkey=claimed)
            raise

    def _receive(self, headers: Mapping[str, str], body: bytes, *, method: str, path: str,
                 now: datetime) -> tuple[Submission, bool]:
        if len(body) > MAX_BODY_BYTES:
            raise SubmissionRefused(RefusalCode.TOO_LARGE, f"the body exceeds {MAX_BODY_BYTES} bytes")
        claimed = screen_headers(headers, now_ns=_ns(now), clock_skew_s=self.clock_skew_s)
        if not self.chain_reads.is_registered(claimed):
            raise self._unregistered(claimed)
        hotkey = self._authenticate(headers, body, method=method, path=path, now=now)
        try:
            upload = UploadBody.model_validate_json(body)
            source = upload.source()
        except (ValidationError, ValueError) as exc:
            raise SubmissionRefused(RefusalCode.BAD_BODY, _first_error(exc)) from None

        read = self.chain_reads.latest_commitment(hotkey)
        try:
            return self._judge(hotkey, upload, source, read.commitment, now)
        except SubmissionRefused as refusal:
            if not read.cached or refusal.code not in _ON_COMMITMENT:
                raise
        fresh = self.chain_reads.latest_commitment(hotkey, fresh=True)
        return self._judge(hotkey, upload, source, fresh.commitment, now)

    def _unregistered(self, hotkey: str) -> SubmissionRefused:
        netuid = self.chain_reads.chain.netuid
        return SubmissionRefused(RefusalCode.UNREGISTERED,
                                 f"hotkey {hotkey} is not registered on subnet {netuid}")

    def _judge(self, hotkey: str, upload: UploadBody, source: bytes, commitment: Commitment | None,
               now: datetime) -> tuple[Submission, bool]:
        """Checks 9-13 against ``commitment``; records the verdict of a file that reached static analysis."""
        if commitment is None:
            raise SubmissionRefused(RefusalCode.NO_COMMITMENT,
                                    f"hotkey {hotkey} has no commitment on chain: "
                                    "commit the file's sha256 first")
        if commitment.data != upload.sha256:
            raise SubmissionRefused(RefusalCode.COMMITMENT_MISMATCH,
                                    f"the file's sha256 {upload.sha256} is not the hotkey's latest "
                                    "commitment "
                                    f"({commitment.data!r} at block {commitment.block})")
        judged = self.verdicts.judged(hotkey, upload.sha256, commitment.block)
        if judged is not None:
            return _answer_again(*judged)

        earlier = [v for v in self.verdicts.history(hotkey) if v.commitment_block <= commitment.block]
        until = in_cooldown(commitment.time, earlier, self._rules)
        if until is not None:
            raise SubmissionRefused(RefusalCode.COOLDOWN,
                                    f"committed at {commitment.time.isoformat()} (block {commitment.block}), "
                                    f"inside the cooldown of the previous submission: commit again at or "
                                    f"after {until.isoformat()}", retry_at=until.isoformat())
        late = self._late(commitment, self.chain_reads.chain.block())
        if late is not None:
            raise late

        submission = Submission(hotkey=hotkey, sha256=upload.sha256, name=upload.name, size_bytes=len(source),
                                commitment_block=commitment.block, commitment_time=commitment.time,
                                received_at=now)
        report = check_agent(source, known_product_ids=self._known_product_ids())
        if not report.ok:
            assert report.rejection is not None
            self.verdicts.record(submission, report.rejection, report.findings)
            raise _rejected(report.rejection, report.findings)
        self.files.put(upload.sha256, source)
        entry = CodeEntry(hotkey=hotkey, sha256=upload.sha256, commitment_block=commitment.block,
                          extrinsic_index=commitment.extrinsic_index,
                          fingerprint=fingerprint(source.decode("utf-8-sig")))
        copy_of = self._judge_copy(submission, entry)
        if copy_of is not None:
            raise _copied(copy_of)
        log.info("submission_accepted", hotkey=hotkey, sha256=upload.sha256, block=commitment.block)
        return submission, True

    def _late(self, commitment: Commitment, head: int) -> SubmissionRefused | None:
        """The refusal of an upload on ``commitment`` when the chain's head is past its upload window."""
        deadline = upload_deadline(commitment.block, self._rules)
        if head <= deadline:
            return None
        return SubmissionRefused(
            RefusalCode.UPLOAD_WINDOW_CLOSED,
            f"committed at block {commitment.block}: an upload is accepted until block {deadline} "
            f"({self._rules.upload_window_blocks} blocks after its commitment) and the chain is at block "
            f"{head}, so this commitment's qualifying draw may be known and it can never be uploaded: "
            "commit again and upload at once (`miner submit --recommit`)", upload_until_block=deadline)

    def precheck(self, hotkey: str, upload: UploadBody, source: bytes) -> PrecheckAnswer:
        """What an upload of ``upload`` from ``hotkey`` (authenticated by the caller) would be answered now,
        with nothing recorded: registration, then the hotkey's latest commitment when it already is this
        file (its verdict there, its upload window, the cooldown), the cooldown for a commitment made now,
        static analysis and the copy rule (as if committed in the next block, or on the latest commitment
        when that one can be uploaded)."""
        reads = self.chain_reads
        if not reads.is_registered(hotkey):
            netuid = reads.chain.netuid
            refusal = PrecheckRefusal(error=RefusalCode.UNREGISTERED.value,
                                      detail=f"hotkey {hotkey} is not registered on subnet {netuid}: "
                                             f"register it with `{register_command(netuid)}`")
            return PrecheckAnswer(hotkey=hotkey, sha256=upload.sha256, registered=False, refusals=[refusal])
        now = self._clock.now()  # the clock cooldowns are measured on
        history = self.verdicts.history(hotkey)
        latest = reads.latest_commitment(hotkey, fresh=True).commitment
        head = reads.chain.block()
        new_from = cooldown_until(history, self._rules)
        answer = PrecheckAnswer(hotkey=hotkey, sha256=upload.sha256, registered=True,
                                new_commitment_ok=new_from is None or now >= new_from,
                                new_commitment_from=new_from)
        if latest is not None and latest.data == upload.sha256:
            answer = answer.model_copy(update=self._precheck_latest(hotkey, latest, history, head))
            if answer.judged == "accepted":  # the validator holds it: an upload answers "already accepted"
                return answer
        refusals: list[PrecheckRefusal] = []
        if not answer.commitment_ok and not answer.new_commitment_ok:
            refusals.append(PrecheckRefusal(
                error=RefusalCode.COOLDOWN.value, retry_at=new_from,
                detail=f"inside the cooldown of the previous submission: commit at or after "
                       f"{new_from.isoformat() if new_from else now.isoformat()}"))
        block = latest.block if latest is not None and answer.commitment_ok else head + 1
        refusals.extend(self._precheck_file(hotkey, upload.sha256, source, block))
        return answer.model_copy(update={"refusals": refusals})

    def _precheck_latest(self, hotkey: str, latest: Commitment, history: Sequence[PastVerdict],
                         head: int) -> dict[str, object]:
        """The pre-check's facts about the hotkey's latest commitment, which already is the file."""
        facts: dict[str, object] = {"committed_block": latest.block,
                                    "upload_until_block": upload_deadline(latest.block, self._rules)}
        judged = self.verdicts.judged(hotkey, latest.data, latest.block)
        if judged is not None:
            _, verdict = judged
            facts["judged"] = "copy" if verdict.copy_of is not None else verdict.outcome
            facts["commitment_ok"] = facts["judged"] == "accepted"
            return facts
        too_early = in_cooldown(latest.time, [v for v in history if v.commitment_block <= latest.block],
                                self._rules)
        closed = self._late(latest, head) is not None
        facts |= {"commitment_ok": too_early is None and not closed, "commitment_retry_at": too_early,
                  "upload_window_closed": closed}
        return facts

    def _precheck_file(self, hotkey: str, sha256: str, source: bytes, block: int) -> list[PrecheckRefusal]:
        """What static analysis and the copy rule would say to the file committed at ``block``."""
        report = check_agent(source, known_product_ids=self._known_product_ids())
        if not report.ok:
            return [PrecheckRefusal(error=RefusalCode.STATIC_ANALYSIS.value,
                                    detail=f"static analysis rejects the file ({report.rejection})",
                                    rejection=report.rejection,
                                    findings=[f.model_dump(mode="json") for f in report.findings])]
        text = source.decode("utf-8-sig")
        entry = CodeEntry(hotkey=hotkey, sha256=sha256, commitment_block=block,
                          fingerprint=fingerprint(text), features=code_features(text))
        stored = [(e, copied) for e, copied in self.verdicts.code_entries() if e.key != entry.key]
        copy_of = verdicts_after_upload(entry, stored, locate=self.files.path).get(entry.key)
        if copy_of is None:
            return []
        return [PrecheckRefusal(
            error=RefusalCode.COPY.value, copy_of=copy_of.model_dump(mode="json"),
            detail=f"the file is a copy (similarity {copy_of.similarity:.2f}) of the file "
                   f"{copy_of.code_hash} committed by {copy_of.hotkey} at block {copy_of.commitment_block}: "
                   "it would earn nothing")]

    def _judge_copy(self, submission: Submission, entry: CodeEntry) -> CopyOf | None:
        """Record the file as accepted or as a copy (the original it copies is returned), and mark the
        accepted files it turns into copies (committed after it, uploaded before it)."""
        with self._copy_rule:
            # Compared by their files' features; the bundled reference agents are nobody's original.
            verdicts = verdicts_after_upload(entry, self.verdicts.code_entries(), locate=self.files.path)
            copy_of = verdicts.get(entry.key)
            self.verdicts.record(submission, "copy" if copy_of else "accepted", code=entry, copy_of=copy_of)
            for hotkey, sha256, block in self.verdicts.mark_copies(verdicts):
                log.info("submission_found_copy", hotkey=hotkey, sha256=sha256, block=block,
                         original=verdicts[(hotkey, sha256, block)].hotkey)
        if copy_of is not None:
            log.info("submission_copy", hotkey=submission.hotkey, sha256=submission.sha256,
                     original=copy_of.hotkey, original_block=copy_of.commitment_block,
                     similarity=copy_of.similarity)
        return copy_of

    def _authenticate(self, headers: Mapping[str, str], body: bytes, *, method: str, path: str,
                      now: datetime) -> str:
        try:
            caller = http_auth.verify(headers, body, method=method, path=path,
                                      self_hotkey_ss58=self.validator_hotkey, max_age=self.clock_skew_s,
                                      allowed_skew=self.clock_skew_s, nonce_store=self._nonces,
                                      now_ns=_ns(now))
        except http_auth.AuthError as exc:
            code = _AUTH_CODES.get(type(exc), RefusalCode.MALFORMED_AUTH)
            raise SubmissionRefused(code, str(exc)) from None
        return caller.hotkey_ss58


def _ns(moment: datetime) -> int:
    return int(moment.timestamp() * 1e9)


def _rejected(rejection: str, findings: Sequence[Finding]) -> SubmissionRefused:
    return SubmissionRefused(RefusalCode.STATIC_ANALYSIS, f"static analysis rejected the file ({rejection})",
                             rejection=rejection, findings=[f.model_dump(mode="json") for f in findings])


def _copied(original: CopyOf) -> SubmissionRefused:
    how = (f"it acts as it on its qualifying problems, behaviour similarity {original.similarity:.2f}"
           if original.basis == "behaviour" else "the same normalised code" if original.similarity == 1.0
           else f"a near-copy, similarity {original.similarity:.2f}")
    return SubmissionRefused(RefusalCode.COPY, f"the file is a copy ({how}) of the file {original.code_hash} "
                                               f"committed by {original.hotkey} at block "
                                               f"{original.commitment_block}: it does not race and earns "
                                               "nothing", copy_of=original.model_dump(mode="json"))


def _answer_again(submission: Submission, verdict: UploadVerdict) -> tuple[Submission, bool]:
    """The recorded answer for a file already judged at this commitment."""
    if verdict.copy_of is not None:
        raise _copied(verdict.copy_of)
    if verdict.outcome != "accepted":
        raise _rejected(verdict.outcome, verdict.findings)
    return submission, False


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "body"
        return f"{where}: {error['msg']}"
    return str(exc)
