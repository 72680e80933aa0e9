"""``check_agent``: the static verdict on a submitted agent file, before anything runs it (SPEC 4)."""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from collections import Counter
from collections.abc import Collection
from typing import Final

import structlog

from shoppingbench.submission_check.analyzer import ENTRY_POINT, analyze, defines_entry_point
from shoppingbench.submission_check.folding import Folder
from shoppingbench.submission_check.models import CheckReport, Finding
from shoppingbench.submission_check.product_ids import embedded_ids
from shoppingbench.submission_check.rules import BIDI_CONTROLS, finding

log = structlog.get_logger(__name__)

MAX_AGENT_BYTES: Final = 1_000_000
MAX_FINDINGS_PER_RULE: Final = 20
"""A hostile file can break one rule 100,000 times; the report names the first few and counts the rest."""
_PARSE_FAILURES = (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError)


def _decode(source: bytes) -> tuple[str | None, list[Finding]]:
    """The file as text, or why it cannot be read the way Python would run it."""
    if b"\x00" in source:
        line = source[:source.index(b"\x00")].count(b"\n") + 1
        return None, [finding("encoding", line, "the file contains a null byte")]
    try:
        text = source.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = source[:exc.start].count(b"\n") + 1
        return None, [finding("encoding", line, f"not UTF-8 (byte {source[exc.start]:#04x}); save the file "
                                                "as UTF-8")]
    try:
        declared, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as exc:
        return None, [finding("encoding", None, f"unusable coding declaration: {exc}")]
    if declared not in ("utf-8", "utf-8-sig"):
        # Python would decode the file with that codec (utf-7 can turn a "comment" into code) while
        # reviewers and this check read UTF-8.
        return None, [finding("obfuscation", None, f"declares source encoding {declared!r}; only UTF-8 "
                                                   "is accepted")]
    return text, []


def _text_findings(text: str) -> list[Finding]:
    return [finding("obfuscation", number, "bidirectional control character: the code displays differently "
                                           "from how it runs")
            for number, line in enumerate(text.splitlines(), start=1) if BIDI_CONTROLS.intersection(line)]


def _capped(findings: list[Finding]) -> list[Finding]:
    """Duplicates dropped, sorted by line, at most ``MAX_FINDINGS_PER_RULE`` per rule plus a count."""
    unique = sorted(dict.fromkeys(findings), key=lambda f: (f.line or 0, f.rule, f.message))
    kept: list[Finding] = []
    per_rule: Counter[str] = Counter()
    for item in unique:
        per_rule[item.rule] += 1
        if per_rule[item.rule] <= MAX_FINDINGS_PER_RULE:
            kept.append(item)
    for rule, count in per_rule.items():
        if count > MAX_FINDINGS_PER_RULE:
            more = count - MAX_FINDINGS_PER_RULE
            kept.append(finding(rule, None, f"... and {more} more findings of this rule"))
    return kept


def _parse(text: str) -> tuple[ast.Module | None, list[Finding]]:
    try:
        return ast.parse(text, filename="agent.py"), []
    except _PARSE_FAILURES as exc:
        if isinstance(exc, SyntaxError):
            where = f" at line {exc.lineno}" if exc.lineno else ""
            return None, [finding("syntax", exc.lineno, f"syntax error{where}: {exc.msg}")]
        return None, [finding("syntax", None, f"cannot be parsed: {type(exc).__name__} (too large or deep)")]


def _findings(source: bytes, known_product_ids: Collection[str]) -> list[Finding]:
    if len(source) > MAX_AGENT_BYTES:
        return [finding("size", None, f"{len(source):,} bytes; the limit is {MAX_AGENT_BYTES:,}")]
    text, findings = _decode(source)
    if text is None:
        return findings
    findings.extend(_text_findings(text))
    tree, problems = _parse(text)
    findings.extend(problems)
    folder = Folder(tree) if tree is not None else None
    if tree is not None:
        findings.extend(analyze(tree, folder))
        if not defines_entry_point(tree):
            findings.append(finding("entry_point", None, f"no top-level {ENTRY_POINT}(problem) function"))
    for line, ids in embedded_ids(text, folder, known_product_ids).items():
        shown = ", ".join(ids[:5]) + (f" (+{len(ids) - 5} more)" if len(ids) > 5 else "")
        findings.append(finding("embedded_product_id", line, f"product id(s) of a known suite: {shown}"))
    return findings


def check_agent(source: bytes, *, known_product_ids: Collection[str] = ()) -> CheckReport:
    """Every reason to reject ``source`` (an agent file's bytes); ``ok`` when there is none.

    ``known_product_ids`` are the target ids of every suite the validator knows (qualifying, raced,
    published): one of them anywhere in the file is a hard-coded answer.
    """
    digest = hashlib.sha256(source).hexdigest()
    report = CheckReport(sha256=digest, size_bytes=len(source),
                         findings=_capped(_findings(source, known_product_ids)))
    log.info("agent_checked", sha256=digest, ok=report.ok, rejection=report.rejection,
             rules=sorted({f.rule for f in report.findings}))
    return report
