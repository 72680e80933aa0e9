"""Code fingerprints that survive renaming and reformatting: the measure behind the copy rule (SPEC 4).

A copier keeps the logic and changes what does not run differently: names, literals, comments,
docstrings, layout, the order of functions, a few statements added. The file is parsed and normalised
into a pre-order token stream (:func:`normalised_tokens`: each node's type and child count; of its
values only a literal's type and an imported module's name, so every identifier is dropped; docstrings
and bare strings are left out; comments and layout are gone with the parse), then read two ways:

- ``digest``: the sha256 of the tokens. Equal digests are the same program up to names, literals,
  comments, docstrings and formatting: a copy, whatever the similarity says.
- ``minhash``: a MinHash (``datasketch``) of the set of ``SHINGLE_TOKENS``-grams of the tokens (without
  child counts). Its estimated Jaccard similarity catches near-copies (statements added or removed,
  functions reordered): ``COPY_SIMILARITY`` and above is a copy.

The threshold is fixed by tests (``tests/shoppingbench/submission_check/test_code_similarity.py``): every
pair of the repository's distinct reference agents stays below it (the closest pair, two agents written
from one template, is measured there), while renamed, reformatted and lightly extended copies stay above
it.
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
"""Tokens per shingle: short enough that a few inserted statements leave most shingles intact, long
enough that shared idioms (a call on an attribute, a loop over a list) are not whole shingles alone."""
PERMUTATIONS: Final = 256
"""MinHash size: the Jaccard estimate's standard error is at most 1/(2 sqrt(256)) = 0.031."""
MINHASH_SEED: Final = 22
"""Fixed, so every validator computes the same signature for the same file."""
COPY_SIMILARITY: Final = 0.74
"""Estimated Jaccard similarity at or above which a file is a near-copy: between the closest pair of distinct
reference agents (0.67, two files from one template) and a three-statement extension of the smallest one
(0.82), more than two standard errors from each."""


class CodeFingerprint(BaseModel):
    """What the copy rule keeps of an accepted file: never the file itself."""

    model_config = ConfigDict(frozen=True)

    digest: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the normalised syntax tree")
    minhash: tuple[int, ...] = Field(min_length=PERMUTATIONS, max_length=PERMUTATIONS,
                                     description="MinHash of the normalised tree's node-type shingles")


def _is_docstring(node: ast.AST) -> bool:
    """A bare string statement: a docstring or a string used as a comment, documentation and not code."""
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def _kept(node: ast.AST) -> str:
    """What normalisation keeps of a node's own values: a literal's type, an imported module's name.
    Identifiers (names, arguments, attributes, keywords, definitions, aliases) are dropped."""
    if isinstance(node, ast.Constant):
        return f":{type(node.value).__name__}"
    if isinstance(node, ast.alias):
        return f":{node.name}"
    if isinstance(node, ast.ImportFrom):
        return f":{node.module}:{node.level}"
    return ""


def normalised_tokens(source: str) -> list[str]:
    """The parsed file in pre-order, one token per node: its type, what :func:`_kept` keeps and its
    number of children (so the tokens determine the tree). Iterative: a deeply nested file cannot
    exhaust the stack. Raises ``SyntaxError`` when the file does not parse."""
    tokens: list[str] = []
    pending: list[ast.AST] = [ast.parse(source)]
    while pending:
        node = pending.pop()
        children = [child for child in ast.iter_child_nodes(node) if not _is_docstring(child)]
        tokens.append(f"{type(node).__name__}{_kept(node)}/{len(children)}")
        pending.extend(reversed(children))
    return tokens


def shingles(tokens: list[str]) -> set[bytes]:
    """The distinct ``SHINGLE_TOKENS``-grams of ``tokens`` without their child counts (a statement added
    to a block changes the block's count, not what the copy is made of); the whole stream when shorter."""
    kinds = [token.rsplit("/", 1)[0] for token in tokens]
    width = min(SHINGLE_TOKENS, len(kinds))
    return {" ".join(kinds[i:i + width]).encode() for i in range(len(kinds) - width + 1)}


def fingerprint(source: str) -> CodeFingerprint:
    """The file's fingerprint; ``SyntaxError`` when it does not parse (static analysis refuses it first)."""
    tokens = normalised_tokens(source)
    signature = MinHash(num_perm=PERMUTATIONS, seed=MINHASH_SEED)
    signature.update_batch(sorted(shingles(tokens)))
    return CodeFingerprint(digest=hashlib.sha256("\n".join(tokens).encode()).hexdigest(),
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
