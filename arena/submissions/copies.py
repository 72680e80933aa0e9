"""The copy rule (SPEC 4) as a pure function of the accepted files' fingerprints and their chain order.

A file whose code is another hotkey's earlier commitment up to names, literals, comments, docstrings
and formatting, or a near-copy of it (``shoppingbench.submission_check.similarity``), is a copy: it does
not race and earns nothing, and the original keeps the credit. *Earlier* is chain order, the same for
every validator whatever order the uploads reached it in: the commitment block, then the commitment's
place in its block where the chain reports it. Only on a chain that does not report it do two
commitments of one block fall back to hotkey order (one party holding both keys gains nothing from it).

A hotkey re-uploading its own code is not a copy. The verdicts are recomputed over all files whenever one
arrives, so an original uploaded after its copy (but committed before it) turns the copy's acceptance
into a copy verdict.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from arena.race.events import CopyOf
from shoppingbench.submission_check.similarity import CodeFingerprint, is_copy, similarity

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


def _copy_of(entry: CodeEntry, original: CodeEntry) -> CopyOf:
    same = entry.fingerprint.digest == original.fingerprint.digest
    return CopyOf(hotkey=original.hotkey, code_hash=original.sha256,
                  commitment_block=original.commitment_block,
                  similarity=1.0 if same else similarity(entry.fingerprint, original.fingerprint))


def copy_verdicts(entries: Iterable[CodeEntry]) -> dict[CodeKey, CopyOf]:
    """Each file that copies an earlier original of another hotkey, with the original (the earliest match)."""
    originals: list[CodeEntry] = []
    verdicts: dict[CodeKey, CopyOf] = {}
    for entry in sorted(entries, key=chain_position):
        original = next((o for o in originals if is_copy(entry.fingerprint, o.fingerprint)), None)
        if original is not None and original.hotkey != entry.hotkey:
            verdicts[entry.key] = _copy_of(entry, original)
        else:
            originals.append(entry)
    return verdicts
