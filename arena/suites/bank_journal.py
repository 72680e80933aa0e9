"""The journal of a bank being written: an interrupted `arena bank build` resumes where it stopped.

A model takes seconds a request and a bank is hundreds of requests, paid for; a crash, a lost connection
or Ctrl-C must not lose them. The journal is JSON lines beside the bank's output file: a header (its
format, the catalog's fingerprint, the problems asked for per category and the bank's private seed), then
one line per problem slot as it is written (``{"category", "index", "problem", "writer"}``; ``problem``
is null where the catalog gave none, ``writer`` names who wrote its request, absent in older journals).
Each line is flushed and synced before the next slot starts; a last line cut short by a crash is dropped
on reading. The seed is private like the bank itself: keep the journal
where the bank is kept, and it is deleted once the bank is written.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from shoppingbench.problems.models import Category, Problem

JOURNAL_FORMAT: Final = "arena-bank-journal-1"


class JournalHeader(BaseModel):
    """What a journal is for: resumed only by a build of the same catalog and sizes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["arena-bank-journal-1"] = JOURNAL_FORMAT
    catalog_fingerprint: str
    per_category: dict[Category, int]
    seed: str


class JournalEntry(BaseModel):
    """One problem slot written (``problem`` is None where the catalog gave no solvable problem) and who
    wrote its request."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    category: Category
    index: int
    problem: Problem | None = None
    writer: str | None = None


def journal_path(out: Path) -> Path:
    """Where the journal of the bank written to ``out`` lives."""
    return out.with_name(f"{out.name}.partial")


class BankJournal:
    """The slots written so far, and the file the next ones are appended to."""

    def __init__(self, path: Path, header: JournalHeader,
                 written: Mapping[tuple[Category, int], Problem | None], stream: IO[bytes],
                 writers: Mapping[tuple[Category, int], str] | None = None) -> None:
        self.path = path
        self.header = header
        self.written = dict(written)
        self.writers = dict(writers or {})
        self._stream = stream

    @classmethod
    def open(cls, path: Path, *, catalog_fingerprint: str, per_category: Mapping[Category, int],
             seed: str | None = None) -> BankJournal:
        """The journal at ``path``, resumed if it is one for this catalog and these sizes, else begun
        (``seed`` is for tests only: a bank's seed must be one nobody else knows).

        Raises :class:`ValueError` naming the file when it is not a journal, or one of another build.
        """
        wanted = {c: n for c, n in per_category.items() if n}
        if not path.exists():
            header = JournalHeader(catalog_fingerprint=catalog_fingerprint, per_category=wanted,
                                   seed=seed or f"bank/{secrets.token_hex(32)}")
            fresh = path.open("wb")
            _append(fresh, header.model_dump_json().encode())
            return cls(path, header, {}, fresh)
        header, entries, intact = _read(path)
        if header.catalog_fingerprint != catalog_fingerprint or header.per_category != wanted:
            raise ValueError(f"{path} is the journal of another bank (catalog "
                             f"{header.catalog_fingerprint[:16]}, {header.per_category}): finish that build, "
                             f"or delete the file to start anew")
        stream = path.open("r+b")
        stream.truncate(intact)  # a line a crash cut short
        stream.seek(intact)
        written = {(e.category, e.index): e.problem for e in entries}
        writers = {(e.category, e.index): e.writer for e in entries if e.writer is not None}
        return cls(path, header, written, stream, writers)

    def record(self, category: Category, index: int, problem: Problem | None,
               writer: str | None = None) -> None:
        entry = JournalEntry(category=category, index=index, problem=problem, writer=writer)
        _append(self._stream, entry.model_dump_json(exclude_none=True).encode())
        self.written[(category, index)] = problem
        if writer is not None:
            self.writers[(category, index)] = writer

    def close(self) -> None:
        self._stream.close()


def _append(stream: IO[bytes], line: bytes) -> None:
    stream.write(line + b"\n")
    stream.flush()
    os.fsync(stream.fileno())


def _read(path: Path) -> tuple[JournalHeader, list[JournalEntry], int]:
    """The header, the slots written and the byte length of the complete lines."""
    data = path.read_bytes()
    intact = data.rfind(b"\n") + 1
    lines = data[:intact].splitlines()
    try:
        header = JournalHeader.model_validate_json(lines[0])
        entries = [JournalEntry.model_validate_json(line) for line in lines[1:]]
    except (IndexError, ValidationError, orjson.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a bank journal ({str(exc).splitlines()[0]}): delete it to start "
                         f"anew") from exc
    return header, entries, intact
