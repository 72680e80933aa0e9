"""Code fingerprints that survive renaming and reformatting: the measure behind the copy rule (SPEC 4).

A copier keeps the logic and changes what does not run differently: names, literals, comments,
docstrings, layout, the order of functions, a few statements added. The file is parsed and normalised
(every identifier becomes ``_``, every literal its type, docstrings and bare strings dropped; comments
and layout are gone with the parse), then read two ways:

- ``digest``: the sha256 of the normalised tree. Equal digests are the same program up to names,
  literals, comments, docstrings and formatting: a copy, whatever the similarity says.
- ``minhash``: a MinHash (``datasketch``) of the set of ``SHINGLE_TOKENS``-grams of the normalised tree's
  pre-order node-type stream. Its estimated Jaccard similarity catches near-copies (statements added or
  removed, functions reordered): ``COPY_SIMILARITY`` and above is a copy.

The threshold is fixed by tests (``tests/test_code_similarity.py``): every pair of the repository's
distinct reference agents stays below it (the closest pair, two agents written from one template, is
measured there), while renamed, reformatted and lightly extended copies stay above it.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from typing import Final

import numpy as np
from datasketch import MinHash
from pydantic import BaseModel, ConfigDict, Field

SHINGLE_TOKENS: Final = 8
"""Node types per shingle: short enough that a few inserted statements leave most shingles intact, long
enough that shared idioms (a call on an attribute, a loop over a list) are not whole shingles alone."""
PERMUTATIONS: Final = 256
"""MinHash size: the Jaccard estimate's standard error is at most 1/(2 sqrt(256)) = 0.031."""
MINHASH_SEED: Final = 22
"""Fixed, so every validator computes the same signature for the same file."""
COPY_SIMILARITY: Final = 0.72
"""Estimated Jaccard similarity at or above which a file is a near-copy: between the closest pair of distinct
reference agents (0.63, two files from one template) and a three-statement extension of the smallest one
(0.81), more than three standard errors from each."""


class CodeFingerprint(BaseModel):
    """What the copy rule keeps of an accepted file: never the file itself."""

    model_config = ConfigDict(frozen=True)

    digest: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the normalised syntax tree")
    minhash: tuple[int, ...] = Field(min_length=PERMUTATIONS, max_length=PERMUTATIONS,
                                     description="MinHash of the normalised tree's node-type shingles")


class _Normaliser(ast.NodeTransformer):
    """Names to ``_``, literals to their type's name, docstrings and bare string statements dropped."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name(id="_", ctx=node.ctx)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        self.generic_visit(node)
        node.arg = "_"
        node.type_comment = None
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        node.attr = "_"
        return node

    def visit_keyword(self, node: ast.keyword) -> ast.AST:
        self.generic_visit(node)
        node.arg = None if node.arg is None else "_"
        return node

    def visit_alias(self, node: ast.alias) -> ast.AST:
        # The imported module's name stays (it says what the code uses); the local alias is a name.
        return ast.alias(name=node.name, asname=None if node.asname is None else "_")

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.Constant(value=type(node.value).__name__)

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a docstring or a string used as a comment: documentation, not code
        self.generic_visit(node)
        return node

    def visit_Global(self, node: ast.Global) -> ast.AST:
        return ast.Global(names=["_"] * len(node.names))

    def visit_Nonlocal(self, node: ast.Nonlocal) -> ast.AST:
        return ast.Nonlocal(names=["_"] * len(node.names))

    def generic_visit(self, node: ast.AST) -> ast.AST:
        # Definitions, exception handlers and match captures carry their name as ``name``.
        if isinstance(getattr(node, "name", None), str):
            node.name = "_"  # type: ignore[attr-defined]
        return super().generic_visit(node)


def normalised_tree(source: str) -> ast.Module:
    """The parsed file with names, literals and docstrings normalised; raises ``SyntaxError``."""
    tree = _Normaliser().visit(ast.parse(source))
    assert isinstance(tree, ast.Module)
    return tree


def node_stream(tree: ast.AST) -> list[str]:
    """The tree's node types in pre-order: the token stream shingles are taken from."""
    stream: list[str] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        stream.append(type(node).__name__)
        pending.extend(reversed(list(ast.iter_child_nodes(node))))
    return stream


def shingles(stream: list[str]) -> set[bytes]:
    """The distinct ``SHINGLE_TOKENS``-grams of ``stream`` (the whole stream when it is shorter)."""
    width = min(SHINGLE_TOKENS, len(stream))
    return {" ".join(stream[i:i + width]).encode() for i in range(len(stream) - width + 1)}


def fingerprint(source: str) -> CodeFingerprint:
    """The file's fingerprint; ``SyntaxError`` when it does not parse (static analysis refuses it first)."""
    tree = normalised_tree(source)
    signature = MinHash(num_perm=PERMUTATIONS, seed=MINHASH_SEED)
    signature.update_batch(sorted(shingles(node_stream(tree))))
    return CodeFingerprint(digest=hashlib.sha256(ast.dump(tree).encode()).hexdigest(),
                           minhash=tuple(int(v) for v in signature.hashvalues))


def similarity(a: CodeFingerprint, b: CodeFingerprint) -> float:
    """Estimated Jaccard similarity of the two files' shingle sets: the share of equal MinHash values."""
    return sum(x == y for x, y in zip(a.minhash, b.minhash, strict=True)) / PERMUTATIONS


class FingerprintIndex:
    """Fingerprints in the order they were added, each candidate compared with all of them at once."""

    def __init__(self, fingerprints: Iterable[CodeFingerprint] = ()) -> None:
        listed = list(fingerprints)
        self._digests: dict[str, int] = {}
        for position, found in enumerate(listed):
            self._digests.setdefault(found.digest, position)
        self._signatures = np.array([f.minhash for f in listed], dtype=np.uint64).reshape(len(listed),
                                                                                            PERMUTATIONS)

    def add(self, fingerprint: CodeFingerprint) -> None:
        self._digests.setdefault(fingerprint.digest, len(self._signatures))
        self._signatures = np.vstack([self._signatures, np.array(fingerprint.minhash, dtype=np.uint64)])

    def first_copied(self, candidate: CodeFingerprint) -> tuple[int, float] | None:
        """The position of the first fingerprint ``candidate`` copies (the same normalised code, or a
        similarity of at least ``COPY_SIMILARITY``) and that similarity (1.0 for the same code)."""
        shares = (self._signatures == np.array(candidate.minhash, dtype=np.uint64)).sum(axis=1) / PERMUTATIONS
        near = np.flatnonzero(shares >= COPY_SIMILARITY)
        same = self._digests.get(candidate.digest)
        first = min([*near.tolist(), *([] if same is None else [same])], default=None)
        if first is None:
            return None
        return first, 1.0 if first == same else float(shares[first])


def is_copy(candidate: CodeFingerprint, original: CodeFingerprint) -> bool:
    """Whether ``candidate`` is ``original`` up to names, literals and formatting, or a near-copy of it."""
    return FingerprintIndex([original]).first_copied(candidate) is not None
