"""Reading problem files: ShoppingBench JSONL (one problem a line) or a reference-arena suite (a JSON list).

The format is detected from the first non-blank character (``[`` is a suite); either may be
gzipped. A malformed problem raises :class:`ProblemFileError` naming the file, line, problem index
and reason, or, with ``errors="collect"``, is reported next to the problems that did load.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, Literal, NamedTuple, cast, overload

import orjson
from pydantic import ValidationError

from shoppingbench.problems.models import CATEGORIES, Category, Problem

ErrorMode = Literal["raise", "collect"]
_GZIP_MAGIC = b"\x1f\x8b"


class ProblemFileError(ValueError):
    """One problem that could not be read. ``line`` is 1-based; ``index`` is the 0-based problem position."""

    def __init__(self, path: Path, reason: str, *, line: int | None = None, index: int | None = None) -> None:
        self.path = path
        self.reason = reason
        self.line = line
        self.index = index
        where = str(path) + (f":{line}" if line is not None else "")
        which = f" (problem {index})" if index is not None else ""
        super().__init__(f"{where}{which}: {reason}")


class LoadResult(NamedTuple):
    problems: list[Problem]
    errors: list[ProblemFileError]


def category_from_name(path: Path) -> Category | None:
    """``product``/``shop``/``voucher`` when exactly one appears as a word of the file name.

    Words, not substrings: ``shoppingbench_product_test.jsonl`` is a product file, not a shop one.
    """
    words = set(re.split(r"[^a-z]+", path.name.lower()))
    found = [c for c in CATEGORIES if c in words]
    return found[0] if len(found) == 1 else None


def _reason(error: Exception) -> str:
    """One readable sentence out of a pydantic error (or any other)."""
    if not isinstance(error, ValidationError):
        return str(error).rstrip(".") + "."
    parts = []
    for item in error.errors(include_url=False):
        location = _location(item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        parts.append(f"{location}: {message}" if location else message)
    return "; ".join(parts).rstrip(".") + "."


def _location(loc: tuple[int | str, ...]) -> str:
    """``("targets", 0, "price", 1)`` -> ``reward[0].price[1]``: the file's names, not the model's."""
    text = ""
    for position, part in enumerate(loc):
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            name = "reward" if position == 0 and part == "targets" else part
            text += f".{name}" if text else name
    return text


def _open(path: Path) -> IO[bytes]:
    with path.open("rb") as probe:
        gzipped = probe.read(2) == _GZIP_MAGIC
    return cast(IO[bytes], gzip.open(path, "rb")) if gzipped else path.open("rb")


def _first_character(handle: IO[bytes]) -> bytes:
    while chunk := handle.read(4096):
        stripped = chunk.lstrip().removeprefix(b"\xef\xbb\xbf").lstrip()
        if stripped:
            return stripped[:1]
    return b""


class _Reader:
    """Turns raw JSON values into problems, checking category and duplicate ids."""

    def __init__(self, path: Path, category: Category | None) -> None:
        self.path = path
        self.category = category if category is not None else category_from_name(path)
        self.seen: dict[str, int | None] = {}

    def problem(self, raw: Any, line: int | None, index: int) -> Problem | ProblemFileError:
        try:
            stated = raw.get("category") if isinstance(raw, dict) else None
            if (self.category is not None and isinstance(stated, str) and stated.strip()
                    and stated.strip().lower() != self.category):
                raise ValueError(f"it says category {stated!r} but the file holds {self.category} problems")
            problem = Problem.from_shoppingbench(raw, self.category)
        except (ValueError, TypeError) as error:
            return ProblemFileError(self.path, _reason(error), line=line, index=index)
        if problem.id in self.seen:
            # Scores and suites are keyed by problem id: a repeated problem would be counted twice.
            earlier = self.seen[problem.id]
            where = f"line {earlier}" if earlier is not None else "an earlier problem"
            return ProblemFileError(self.path, f"duplicate of the problem at {where} (id {problem.id}).",
                                    line=line, index=index)
        self.seen[problem.id] = line
        return problem


def _jsonl(handle: IO[bytes], reader: _Reader) -> Iterator[Problem | ProblemFileError]:
    index = 0
    for line_number, raw_line in enumerate(handle, start=1):
        if line_number == 1:
            raw_line = raw_line.removeprefix(b"\xef\xbb\xbf")
        if not raw_line.strip():
            continue
        try:
            raw = orjson.loads(raw_line)
        except orjson.JSONDecodeError as error:
            yield ProblemFileError(reader.path, f"not valid JSON: {error}.", line=line_number, index=index)
        else:
            yield reader.problem(raw, line_number, index)
        index += 1


def _decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ProblemFileError(path, f"not UTF-8 text: {error.reason}.", line=line) from error


def _suite(text: str, reader: _Reader) -> Iterator[Problem | ProblemFileError]:
    """Walk a JSON list item by item so each problem keeps its line number.

    Any syntax error in the list itself stops the walk: after it, item boundaries are unknown.
    """
    decoder = json.JSONDecoder()
    whitespace = re.compile(r"\s*")
    position = whitespace.match(text, text.index("[") + 1).end()  # type: ignore[union-attr]
    line, counted = 1, 0
    index = 0
    if text.startswith("]", position):
        return
    while True:
        line += text.count("\n", counted, position)
        counted = position
        try:
            raw, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            yield ProblemFileError(reader.path, f"not valid JSON: {error.msg} (column {error.colno}).",
                                   line=error.lineno, index=index)
            return
        except RecursionError:
            yield ProblemFileError(reader.path, "JSON nested too deeply to be a problem.", line=line,
                                   index=index)
            return
        yield reader.problem(raw, line, index)
        index += 1
        position = whitespace.match(text, position).end()  # type: ignore[union-attr]
        if text.startswith("]", position):
            return
        if not text.startswith(",", position):
            yield ProblemFileError(reader.path, "expected ',' or ']' between problems.",
                                   line=text.count("\n", 0, position) + 1, index=index)
            return
        position = whitespace.match(text, position + 1).end()  # type: ignore[union-attr]


def iter_problems(path: Path, category: Category | None = None, *,
                  on_error: Callable[[ProblemFileError], None] | None = None) -> Iterator[Problem]:
    """Yield the problems of ``path`` in file order; JSONL is streamed line by line.

    ``category`` overrides the one in the file name; a problem that states another category is an
    error. Without ``on_error`` the first bad problem raises; with it, each bad problem is handed
    to ``on_error`` and skipped. A file that cannot be read at all (bad gzip, a suite that is not
    UTF-8) always raises.
    """
    reader = _Reader(path, category)
    try:
        with _open(path) as handle:
            first = _first_character(handle)
    except (OSError, EOFError) as error:  # gzip.BadGzipFile is an OSError
        raise ProblemFileError(path, f"cannot read the file: {error}.") from error
    if not first:
        return
    read = 0
    try:
        with _open(path) as handle:
            items = _suite(_decode(path, handle.read()), reader) if first == b"[" else _jsonl(handle, reader)
            for item in items:
                read += 1
                if isinstance(item, Problem):
                    yield item
                elif on_error is None:
                    raise item
                else:
                    on_error(item)
    except (OSError, EOFError, zlib.error) as error:  # a gzip cut short or corrupt mid-stream
        raise ProblemFileError(path, f"cannot read the file after {read} problems: {error}.") from error


@overload
def load_problems(path: Path, category: Category | None = None, *,
                  errors: Literal["raise"] = "raise") -> list[Problem]: ...
@overload
def load_problems(path: Path, category: Category | None = None, *,
                  errors: Literal["collect"]) -> LoadResult: ...
def load_problems(path: Path, category: Category | None = None, *,
                  errors: ErrorMode = "raise") -> list[Problem] | LoadResult:
    """All problems of a ShoppingBench JSONL or suite JSON file.

    ``errors="raise"`` (default) raises :class:`ProblemFileError` on the first malformed problem;
    ``errors="collect"`` returns a :class:`LoadResult` with the good problems and every error.
    """
    if errors == "raise":
        return list(iter_problems(path, category))
    collected: list[ProblemFileError] = []
    problems = list(iter_problems(path, category, on_error=collected.append))
    return LoadResult(problems, collected)
