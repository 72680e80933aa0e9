"""The copy rule (SPEC 4) as pure functions of the accepted files' features and their chain order.

A file whose live code (:func:`live_code`: dead code, docstrings and annotations dropped) is a public
agent's or another hotkey's earlier commitment up to names, comments and formatting, or a near-copy of
it, is a copy: it does not race and earns nothing, and the original keeps the credit. Files are compared
by their :class:`CodeFeatures`: structural shingles with every identifier dropped (renames do not count)
and literal features (prompts in word shingles, numbers by value: weighted, not dropped, so a prompt of
one's own makes a variant distinct), by a weighted Jaccard similarity (:func:`code_similarity`) against
``COPY_THRESHOLD``, set from the measured rewrites and honest pairs of ``tests/fixtures/copy_rewrites``.

The bundled reference agents (:func:`bundled_agents`) are nobody's original: a near copy of one is a copy
of that public agent, and between miners' files the public agents' features count for neither, so a
miner's variant of a public agent is judged against other miners' files only, on what each added.

*Earlier* is chain order, the same for every validator whatever order the uploads reached it in: the
commitment block, then the commitment's place in its block where the chain reports it. Only on a chain
that does not report it do two commitments of one block fall back to hotkey order (one party holding
both keys gains nothing from it). A hotkey re-uploading its own code is not a copy. When a file arrives,
it and every file after it in chain order are judged again against the settled originals before it, so
an original uploaded after its copy (but committed before it) turns the copy's acceptance into a copy
verdict.

Behaviour (:func:`behaviour_similarity`): two submissions' tool-call and outcome traces on the same
problems, read from the verified proxy log (:func:`trace_of`), compared problem by problem; which
earlier submissions a challenger is compared with, and the verdict, are in ``arena.submissions.behaviour``.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

import shoppingbench.agents
from arena.race.events import CopyOf
from shoppingbench.records import AttemptRecord
from shoppingbench.submission_check.similarity import CodeFingerprint

CodeKey = tuple[str, str, int]
"""(hotkey, sha256, commitment block): one file at one commitment, as verdicts are keyed."""

STRUCTURE_SHINGLE: Final = 6
"""Node kinds per structural shingle: a local rewrite (a conditional expression for an ``if``) changes
the few shingles around it, while shared idioms (a call on an attribute) are not whole shingles alone."""
LITERAL_SHINGLE: Final = 3
"""Words per shingle of a string literal: a prompt with a few words swapped keeps most of its shingles,
a prompt written anew shares almost none."""
LITERAL_WEIGHT: Final = 1.0
"""Weight of one literal feature against one structural shingle: a prompt of a few hundred words weighs
about as much as the code around it, so a prompt of one's own makes a variant distinct."""
COPY_THRESHOLD: Final = 0.72
"""Code similarity at or above which a file is a copy: set from the measured gap between the rewrites of
the ReAct agent (``tests/fixtures/copy_rewrites``) and the closest honest pair (docs/arena-rules.md)."""

_ENTRY_POINTS: Final = frozenset({"agent_main"})
_ENDS_BLOCK: Final = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_BLOCKS: Final = ("body", "orelse", "finalbody")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+|[^\w\s]+")


class CodeFeatures(BaseModel):
    """What the copy rule compares of a file (computed from the file, never stored in its place): the
    live code's structural shingles (every identifier dropped) and its literal features (the words of
    string literals in shingles, numbers by value), both as sets of short strings."""

    model_config = ConfigDict(frozen=True)

    structure: frozenset[str]
    literals: frozenset[str]

    def without(self, public: CodeFeatures) -> CodeFeatures:
        """These features less those of the public agents: what the file's author added."""
        return CodeFeatures(structure=self.structure - public.structure,
                            literals=self.literals - public.literals)

    def __or__(self, other: CodeFeatures) -> CodeFeatures:
        return CodeFeatures(structure=self.structure | other.structure,
                            literals=self.literals | other.literals)


def _is_docstring(node: ast.AST) -> bool:
    """A bare constant statement: a docstring or a string used as a comment, never code that runs."""
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _unread_names(tree: ast.AST) -> set[str]:
    """The names the file binds (definitions, assignments) and never reads: neither loaded as a variable,
    nor used as an attribute, nor spelt in a string (``getattr(module, "name")``, ``__all__``); one walk."""
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, ast.Attribute):
            read.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            read.add(node.value)
    return bound - read - _ENTRY_POINTS


def _binds_only(statement: ast.stmt) -> set[str] | None:
    """The names a definition or plain assignment binds; ``None`` for any other statement (one that
    stores into an attribute or an item has an effect)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {statement.name}
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
        targets = [statement.target]
    else:
        return None
    nodes = [n for t in targets for n in ast.walk(t)]
    if any(isinstance(n, ast.Attribute | ast.Subscript) for n in nodes):
        return None
    return {n.id for n in nodes if isinstance(n, ast.Name)}


def _live_block(block: list[ast.stmt], unread: set[str]) -> list[ast.stmt]:
    kept: list[ast.stmt] = []
    for statement in block:
        if _is_docstring(statement) or isinstance(statement, ast.Pass):
            continue
        if isinstance(statement, ast.If | ast.While) and isinstance(statement.test, ast.Constant) \
                and not statement.test.value:
            if isinstance(statement, ast.If):
                kept.extend(_live_block(statement.orelse, unread))
            continue
        names = _binds_only(statement)
        if names and names <= unread:
            continue
        if isinstance(statement, ast.AnnAssign):
            if statement.value is None:
                continue
            statement = ast.Assign(targets=[statement.target], value=statement.value)
        kept.append(statement)
        if isinstance(statement, _ENDS_BLOCK):
            break
    return kept


def live_code(source: str) -> ast.Module:
    """The parsed file without what cannot change what it does: docstrings and bare constants, ``pass``,
    annotations, statements after a ``return`` or ``raise`` in their block, ``if``/``while`` on a false
    constant, and definitions and assignments of names the file never reads (to a fixed point: dropping
    an unread helper can leave unread what only it read; ``agent_main`` is always read). The result is for
    comparison only (a block may be left empty). ``SyntaxError`` when the file does not parse."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.returns = None
        elif isinstance(node, ast.arg):
            node.annotation = None
    changed = True
    while changed:  # each round drops at least one statement, so this ends
        changed = False
        unread = _unread_names(tree)
        for node in ast.walk(tree):
            for name in _BLOCKS:
                block = getattr(node, name, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    live = _live_block(block, unread)
                    if live != block:  # AST nodes compare by identity: something was dropped or replaced
                        setattr(node, name, live)
                        changed = True
    return tree


def _kind(node: ast.AST) -> str:
    """A node as structure sees it: its type, a literal's type, an imported module's name; every
    identifier (names, arguments, attributes, definitions) is dropped."""
    if isinstance(node, ast.Constant):
        return f"Constant:{type(node.value).__name__}"
    if isinstance(node, ast.alias):
        return f"alias:{node.name}"
    if isinstance(node, ast.ImportFrom):
        return f"ImportFrom:{node.module}:{node.level}"
    return type(node).__name__


def _preorder(tree: ast.AST) -> list[str]:
    kinds: list[str] = []
    pending: list[ast.AST] = [tree]
    while pending:  # iterative: a deeply nested file cannot exhaust the stack
        node = pending.pop()
        kinds.append(_kind(node))
        pending.extend(reversed(list(ast.iter_child_nodes(node))))
    return kinds


def _shingles(items: Sequence[str], width: int, prefix: str) -> set[str]:
    """The distinct ``width``-grams of ``items``; the whole sequence when shorter."""
    span = min(width, len(items))
    return {prefix + " ".join(items[i:i + span]) for i in range(len(items) - span + 1)} if items else set()


def normalised_literal(text: str) -> str:
    """A string literal as the copy rule reads it: whitespace collapsed, lower-cased."""
    return _SPACE.sub(" ", text).strip().lower()


def _literal_features(tree: ast.AST) -> set[str]:
    features: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or node.value is None or isinstance(node.value, bool):
            continue
        if isinstance(node.value, str):
            features |= _shingles(_WORD.findall(normalised_literal(node.value)), LITERAL_SHINGLE, "s:")
        elif isinstance(node.value, int | float | complex):
            features.add(f"n:{node.value!r}")
        elif isinstance(node.value, bytes):
            features.add("b:" + hashlib.sha256(node.value).hexdigest()[:16])
    return features


def code_features(source: str) -> CodeFeatures:
    """The file's :class:`CodeFeatures`, from its :func:`live_code`; ``SyntaxError`` when it does not parse
    (static analysis refuses such a file first)."""
    tree = live_code(source)
    return CodeFeatures(structure=frozenset(_shingles(_preorder(tree), STRUCTURE_SHINGLE, "")),
                        literals=frozenset(_literal_features(tree)))


def _weighted_jaccard(a: CodeFeatures, b: CodeFeatures) -> float:
    shared = len(a.structure & b.structure) + LITERAL_WEIGHT * len(a.literals & b.literals)
    union = len(a.structure | b.structure) + LITERAL_WEIGHT * len(a.literals | b.literals)
    return shared / union if union else 1.0


def _own_similarity(a: CodeFeatures, own_a: CodeFeatures, b: CodeFeatures, own_b: CodeFeatures) -> float:
    """Compared on what each author added (``own_*``), or whole when neither added anything."""
    if own_a.structure | own_b.structure or own_a.literals | own_b.literals:
        return _weighted_jaccard(own_a, own_b)
    return _weighted_jaccard(a, b)


def code_similarity(a: CodeFeatures, b: CodeFeatures, public: CodeFeatures | None = None) -> float:
    """How alike two files are, 0 to 1: the weighted Jaccard similarity of their features (structural
    shingles weigh 1, literal features ``LITERAL_WEIGHT``). With ``public`` (the public agents' features)
    only what each author added is compared: code both took from a public agent counts for neither, and
    two files made of public code only are compared whole."""
    if public is None:
        return _weighted_jaccard(a, b)
    return _own_similarity(a, a.without(public), b, b.without(public))


class CodeEntry(BaseModel):
    """An accepted file's place on chain and its fingerprint, with its :class:`CodeFeatures` when known
    (the copy rule compares features; entries without them fall back to the fingerprint's similarity)."""

    model_config = ConfigDict(frozen=True)

    hotkey: str
    sha256: str
    commitment_block: int
    extrinsic_index: int | None = None
    fingerprint: CodeFingerprint
    features: CodeFeatures | None = Field(default=None, repr=False)

    @property
    def key(self) -> CodeKey:
        return self.hotkey, self.sha256, self.commitment_block


class PublicAgent(BaseModel):
    """A bundled or published reference agent: nobody's original. A file that copies it is refused as a
    copy of it; a file that varies it is compared with other miners' files only."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="Where it is published, e.g. shoppingbench/agents/react_llm.py")
    sha256: str
    features: CodeFeatures = Field(repr=False)

    @property
    def hotkey(self) -> str:
        """The name verdicts give as the original's hotkey: no miner's."""
        return f"public:{self.name}"


PUBLIC_AGENTS_DIR: Final = Path(shoppingbench.agents.__file__).resolve().parent
"""Where the bundled reference agents are, installed or in the repository."""


def public_agent(name: str, source: str) -> PublicAgent:
    return PublicAgent(name=name, sha256=hashlib.sha256(source.encode()).hexdigest(),
                       features=code_features(source))


@lru_cache(maxsize=1)
def bundled_agents() -> tuple[PublicAgent, ...]:
    """The reference agents shipped in ``shoppingbench/agents`` (every miner can read them)."""
    return tuple(public_agent(f"shoppingbench/agents/{path.name}", path.read_text())
                 for path in sorted(PUBLIC_AGENTS_DIR.glob("*.py")) if path.read_text().strip())


def public_union(public: Sequence[PublicAgent]) -> CodeFeatures | None:
    """Every feature of the public agents (``None`` when there are none)."""
    union: CodeFeatures | None = None
    for agent in public:
        union = agent.features if union is None else union | agent.features
    return union


def _fingerprint_similarity(a: CodeFingerprint, b: CodeFingerprint) -> float:
    if a.digest == b.digest:
        return 1.0
    return sum(x == y for x, y in zip(a.minhash, b.minhash, strict=True)) / len(a.minhash)


def _entry_similarity(a: CodeEntry, b: CodeEntry, own: Callable[[CodeEntry], CodeFeatures | None]) -> float:
    """Two entries' similarity on what each added to the public agents (``own``); the fingerprints' MinHash
    estimate (1.0 for the same normalised code) when either lacks features."""
    own_a, own_b = own(a), own(b)
    if a.features is None or b.features is None or own_a is None or own_b is None:
        return _fingerprint_similarity(a.fingerprint, b.fingerprint)
    return _own_similarity(a.features, own_a, b.features, own_b)


def chain_position(entry: CodeEntry) -> tuple[int, bool, int, str, str]:
    """Earlier block first; in one block the lower extrinsic index (unknown ones after), then the hotkey."""
    index = entry.extrinsic_index
    return entry.commitment_block, index is None, index or 0, entry.hotkey, entry.sha256


def public_copied(entry: CodeEntry, public: Sequence[PublicAgent],
                  threshold: float = COPY_THRESHOLD) -> CopyOf | None:
    """The public agent ``entry`` copies (the most similar at or above ``threshold``), as a verdict."""
    if entry.features is None:
        return None
    scored = [(code_similarity(entry.features, agent.features), agent) for agent in public]
    near = [(score, agent) for score, agent in scored if score >= threshold]
    if not near:
        return None
    score, agent = max(near, key=lambda pair: (pair[0], pair[1].name))
    return CopyOf(hotkey=agent.hotkey, code_hash=agent.sha256, commitment_block=0, similarity=round(score, 6))


def copy_verdicts(entries: Iterable[CodeEntry], originals: Sequence[CodeEntry] = (),
                  public: Sequence[PublicAgent] | None = None,
                  threshold: float = COPY_THRESHOLD) -> dict[CodeKey, CopyOf]:
    """Each of ``entries`` that copies a public agent or an earlier original of another hotkey, with the
    original (a public agent first, else the earliest original that matches).

    ``originals`` are the files before every one of ``entries`` in chain order that are not copies, in
    chain order: their verdicts are settled, so only ``entries`` are judged. ``public`` are the public
    agents (``None``: :func:`bundled_agents`): a near copy of one is its copy (and never anyone's
    original), and between miners' files what the public agents hold counts for neither
    (:func:`code_similarity`), so two miners' variants of one public agent are compared on what each
    added.
    """
    public = bundled_agents() if public is None else public
    kept = list(originals)
    shared = public_union(public)
    owned: dict[CodeKey, CodeFeatures | None] = {}

    def own(e: CodeEntry) -> CodeFeatures | None:  # computed once per entry, not once per pair
        if e.key not in owned:
            owned[e.key] = None if e.features is None else e.features if shared is None \
                else e.features.without(shared)
        return owned[e.key]

    verdicts: dict[CodeKey, CopyOf] = {}
    for entry in sorted(entries, key=chain_position):
        copied = public_copied(entry, public, threshold)
        if copied is None:
            for original in kept:
                if original.hotkey == entry.hotkey:
                    continue
                score = _entry_similarity(entry, original, own)
                if score >= threshold:
                    copied = CopyOf(hotkey=original.hotkey, code_hash=original.sha256,
                                    commitment_block=original.commitment_block, similarity=round(score, 6))
                    break
        if copied is not None:
            verdicts[entry.key] = copied
        else:
            kept.append(entry)
    return verdicts


def verdicts_after_upload(entry: CodeEntry, stored: Sequence[tuple[CodeEntry, bool]], *,
                          locate: Callable[[str], Path] | None = None,
                          public: Sequence[PublicAgent] | None = None) -> dict[CodeKey, CopyOf]:
    """The copy verdicts once ``entry`` joins the ``stored`` files (each with whether it is a copy): for
    ``entry`` and every file after it in chain order, judged against the public agents (``None``: the
    bundled ones) and the originals before it. ``locate`` gives an accepted file's path by its sha256, to
    compare entries by their features (:func:`with_features`)."""
    if locate is not None:
        entry = with_features(entry, locate)
        stored = [(with_features(e, locate), copied) for e, copied in stored]
    position = chain_position(entry)
    before = sorted((e for e, copied in stored if chain_position(e) < position and not copied),
                    key=chain_position)
    after = [e for e, _ in stored if chain_position(e) > position]
    return copy_verdicts([entry, *after], originals=before, public=public)

_FEATURES: dict[str, CodeFeatures] = {}
"""Features by file hash: the same file always has the same features, so each is computed once."""
_FEATURES_KEPT: Final = 4096


def file_features(sha256: str, locate: Callable[[str], Path]) -> CodeFeatures | None:
    """The features of the stored file ``sha256`` (at ``locate(sha256)``), ``None`` when it is gone or no
    longer parses."""
    features = _FEATURES.get(sha256)
    if features is None:
        try:
            features = code_features(locate(sha256).read_bytes().decode("utf-8-sig"))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            return None
        if len(_FEATURES) >= _FEATURES_KEPT:
            _FEATURES.pop(next(iter(_FEATURES)))
        _FEATURES[sha256] = features
    return features


def with_features(entry: CodeEntry, locate: Callable[[str], Path]) -> CodeEntry:
    """``entry`` with the features of its file (:func:`file_features`; a file that is gone or no longer
    parses leaves the entry to its fingerprint)."""
    if entry.features is not None:
        return entry
    features = file_features(entry.sha256, locate)
    return entry if features is None else entry.model_copy(update={"features": features})


# Behaviour: what two submissions did on the same problems.

BEHAVIOUR_COPY_THRESHOLD: Final = 0.9
"""Behaviour similarity at or above which two submissions act as one: nearly every tool call the same,
in the same order, with the same outcome, on every problem both ran."""
CALLS_WEIGHT: Final = 0.8
"""Share of a problem's behaviour similarity carried by its tool calls; its outcome carries the rest."""


class ProblemTrace(BaseModel):
    """One attempt as the copy rule compares behaviour: its tool calls through the verified proxy, each
    as (tool name, normalised arguments), in order, and whether it succeeded."""

    model_config = ConfigDict(frozen=True)

    problem_id: str
    calls: tuple[tuple[str, str], ...]
    success: bool


def _normalised_argument(value: object) -> object:
    if isinstance(value, str):
        return normalised_literal(value)
    if isinstance(value, list | tuple):
        return [_normalised_argument(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _normalised_argument(v) for k, v in sorted(value.items())}
    return value


def normalised_arguments(params: Mapping[str, object]) -> str:
    """A tool call's arguments as behaviour compares them: keys sorted, strings whitespace-collapsed and
    lower-cased, empty values (``None``, ``""``) left out, one canonical JSON text."""
    kept = {k: _normalised_argument(v) for k, v in params.items() if v not in (None, "")}
    return json.dumps(kept, sort_keys=True, ensure_ascii=False, default=str)


def trace_of(record: AttemptRecord) -> ProblemTrace:
    """The :class:`ProblemTrace` of an attempt, from its verified proxy log (never its own steps)."""
    calls = tuple((call.path.rstrip("/").rsplit("/", 1)[-1], normalised_arguments(call.params))
                  for call in record.proxy_log if call.kind == "search")
    return ProblemTrace(problem_id=record.problem_id, calls=calls, success=record.score.success)


def _calls_similarity(a: Sequence[tuple[str, str]], b: Sequence[tuple[str, str]]) -> float:
    """How alike two call sequences are: ``difflib``'s ratio (twice the calls matched in order over both
    lengths); two empty sequences are alike."""
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(a=list(a), b=list(b), autojunk=False).ratio()


def behaviour_similarity(a: Iterable[ProblemTrace], b: Iterable[ProblemTrace]) -> float | None:
    """How alike two submissions acted on the problems both ran, 0 to 1: per problem ``CALLS_WEIGHT`` x the
    similarity of their call sequences plus the rest when their outcomes agree, averaged over those
    problems; ``None`` when they ran no problem in common (nothing to compare)."""
    theirs = {trace.problem_id: trace for trace in b}
    scores = [CALLS_WEIGHT * _calls_similarity(mine.calls, theirs[mine.problem_id].calls)
              + (1 - CALLS_WEIGHT) * (mine.success == theirs[mine.problem_id].success)
              for mine in a if mine.problem_id in theirs]
    return sum(scores) / len(scores) if scores else None


def acts_as_copy(later: Iterable[ProblemTrace], earlier: Iterable[ProblemTrace],
                 threshold: float = BEHAVIOUR_COPY_THRESHOLD) -> bool:
    """Whether the later submission acts as the earlier one on the problems both ran (the later one's
    qualifying draw, the earlier re-run on it): its behaviour similarity reaches ``threshold``."""
    similarity = behaviour_similarity(later, earlier)
    return similarity is not None and similarity >= threshold
