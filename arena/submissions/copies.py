"""The copy rule (SPEC 4) as a pure function of the accepted files' fingerprints and their chain order.

A file whose code is another hotkey's earlier commitment up to names, literals, comments, docstrings
and formatting, or a near-copy of it (``shoppingbench.submission_check.similarity``), is a copy: it does
not race and earns nothing, and the original keeps the credit. *Earlier* is chain order, the same for
every validator whatever order the uploads reached it in: the commitment block, then the commitment's
place in its block where the chain reports it. Only on a chain that does not report it do two
commitments of one block fall back to hotkey order (one party holding both keys gains nothing from it).

A hotkey re-uploading its own code is not a copy. When a file arrives, it and every file after it in
chain order are judged again against the settled originals before it, so an original uploaded after its
copy (but committed before it) turns the copy's acceptance into a copy verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from arena.race.events import CopyOf
from shoppingbench.submission_check.similarity import CodeFingerprint, FingerprintIndex

CodeKey = tuple[str, str, int]
"""(hotkey, sha256, commitment block): one file at one commitment, as verdicts are keyed."""


class CodeEntry(BaseModel):
    """An accepted file's place on chain and its fingerprint."""

    model_config = ConfigDict(frozen=True)

    hotkey: str
    sha256: str
    commitment_block: int
    extrinsic_index: int | None = None
    fingerprint: CodeFingerprint

    @property
    def key(self) -> CodeKey:
        return self.hotkey, self.sha256, self.commitment_block


def chain_position(entry: CodeEntry) -> tuple[int, bool, int, str, str]:
    """Earlier block first; in one block the lower extrinsic index (unknown ones after), then the hotkey."""
    index = entry.extrinsic_index
    return entry.commitment_block, index is None, index or 0, entry.hotkey, entry.sha256


def copy_verdicts(entries: Iterable[CodeEntry], originals: Sequence[CodeEntry] = ()) -> dict[CodeKey, CopyOf]:
    """Each of ``entries`` that copies an earlier original of another hotkey, with the original (the
    earliest that matches).

    ``originals`` are the files before every one of ``entries`` in chain order that are not copies, in
    chain order: their verdicts are settled, so a new upload is compared with them at once (one vector
    comparison per file, not every pair of the history again) and only ``entries`` are judged.
    """
    kept = list(originals)
    index = FingerprintIndex(o.fingerprint for o in kept)
    verdicts: dict[CodeKey, CopyOf] = {}
    for entry in sorted(entries, key=chain_position):
        match = index.first_copied(entry.fingerprint)
        if match is not None and kept[match[0]].hotkey != entry.hotkey:
            original = kept[match[0]]
            verdicts[entry.key] = CopyOf(hotkey=original.hotkey, code_hash=original.sha256,
                                         commitment_block=original.commitment_block, similarity=match[1])
        else:
            kept.append(entry)
            index.add(entry.fingerprint)
    return verdicts


def verdicts_after_upload(entry: CodeEntry,
                          stored: Sequence[tuple[CodeEntry, bool]]) -> dict[CodeKey, CopyOf]:
    """The copy verdicts once ``entry`` joins the ``stored`` files (each with whether it is a copy): for
    ``entry`` and every file after it in chain order, judged against the originals before it."""
    position = chain_position(entry)
    before = sorted((e for e, copied in stored if chain_position(e) < position and not copied),
                    key=chain_position)
    after = [e for e, _ in stored if chain_position(e) > position]
    return copy_verdicts([entry, *after], originals=before)
