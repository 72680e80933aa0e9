"""Finding product ids of known suites inside an agent file: hard-coded answers (SPEC 4).

The file's raw text is searched (comments included: a file can read its own source) and so is the
value of every literal, which catches ids written with escapes or in hex (``0x4d2``), and the value of
every expression that builds a string or number out of literals (``folding``: concatenated pieces,
``chr`` codes, reversed strings, ``"".join``, f-strings, ``int(hex, 16)``, ``%`` and ``format``). An
id also counts when it sits inside a longer run of letters and digits. What is computed from data at
run time (a table masked with a hash of the query) is beyond any scan of the file.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Final

from shoppingbench.submission_check.folding import Folder, folded_texts

MIN_ID_CHARS: Final = 6
"""Shorter ids are ignored: they cannot be told apart from ordinary numbers in code."""

_RUN = re.compile(r"[A-Za-z0-9]+")


@dataclass(frozen=True)
class IdMatcher:
    """Exact ids that are runs of letters and digits, by length, plus the few others."""

    ids: frozenset[str]
    lengths: tuple[int, ...]
    other: tuple[str, ...]

    @classmethod
    def build(cls, known: Collection[str]) -> IdMatcher:
        usable = {text for text in (str(i).strip() for i in known) if len(text) >= MIN_ID_CHARS}
        plain = frozenset(text for text in usable if _RUN.fullmatch(text))
        return cls(ids=plain, lengths=tuple(sorted({len(text) for text in plain})),
                   other=tuple(sorted(usable - plain)))

    def __bool__(self) -> bool:
        return bool(self.ids or self.other)

    def find(self, text: str) -> Iterator[tuple[int, str]]:
        """``(offset, id)`` for every known id in ``text``."""
        for run in _RUN.finditer(text):
            token = run.group()
            if token in self.ids:
                yield run.start(), token
                continue
            for length in self.lengths:
                if length >= len(token):
                    break
                for start in range(len(token) - length + 1):
                    if token[start:start + length] in self.ids:
                        yield run.start() + start, token[start:start + length]
        for known in self.other:
            start = text.find(known)
            while start != -1:
                yield start, known
                start = text.find(known, start + 1)


def _literal_texts(folder: Folder) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of every literal value and of every expression folded from literals."""
    for node in folder.nodes:
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, str):
                yield node.lineno, value
            elif isinstance(value, bytes):
                yield node.lineno, value.decode("latin-1")
            elif isinstance(value, int | float) and not isinstance(value, bool):
                yield node.lineno, repr(value)
    for built, text in folded_texts(folder):
        yield built.lineno, text


def embedded_ids(source: str, folder: Folder | None, known: Collection[str]) -> dict[int, list[str]]:
    """Known ids found per 1-based line, in order of discovery; ``folder`` holds the parsed file, if it
    parsed."""
    matcher = IdMatcher.build(known)
    found: dict[int, list[str]] = {}
    if not matcher:
        return found
    line_starts = [0, *(m.end() for m in re.finditer("\n", source))]

    def note(line: int, product_id: str) -> None:
        ids = found.setdefault(line, [])
        if product_id not in ids:
            ids.append(product_id)

    for offset, product_id in matcher.find(source):
        note(bisect.bisect_right(line_starts, offset), product_id)
    if folder is not None:
        for line, text in _literal_texts(folder):
            for _, product_id in matcher.find(text):
                note(line, product_id)
    return found
