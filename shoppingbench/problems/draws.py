"""Hash-derived random draws: the generator's only source of randomness, identical on every machine.

A :class:`HashDraws` stream is keyed by text parts (generator version, catalog fingerprint, seed,
purpose, counter); its numbers are SHA-256 of the key and a block counter. Nothing depends on
Python's ``hash()``, set order, ``random``'s algorithms or the interpreter version. Every method is
spelled out here, so the same key always yields the same draws.
"""

from __future__ import annotations

import hashlib
from collections.abc import MutableSequence, Sequence
from typing import Final, TypeVar

T = TypeVar("T")

_SEPARATOR: Final = b"\x1f"
_WORDS_PER_BLOCK: Final = 4
_TWO_64: Final = 1 << 64


class HashDraws:
    """A deterministic stream of draws keyed by ``parts`` (implements the ``Draws`` protocol)."""

    def __init__(self, *parts: str) -> None:
        self._key = hashlib.sha256(_SEPARATOR.join(p.encode() for p in parts)).digest()
        self._block = 0
        self._words: list[int] = []

    def _word(self) -> int:
        """The next uniform 64-bit integer."""
        if not self._words:
            digest = hashlib.sha256(self._key + self._block.to_bytes(8, "big")).digest()
            self._block += 1
            self._words = [int.from_bytes(digest[i:i + 8], "big") for i in range(24, -1, -8)]
        return self._words.pop()

    def below(self, n: int) -> int:
        """A uniform integer in ``[0, n)`` (rejection sampling: no modulo bias)."""
        if n <= 0:
            raise ValueError(f"below() needs a positive bound, got {n}")
        if n > _TWO_64:
            raise ValueError(f"below() supports bounds up to 2**64, got {n}")
        limit = _TWO_64 - _TWO_64 % n
        while True:
            word = self._word()
            if word < limit:
                return word % n

    def random(self) -> float:
        """A uniform float in ``[0, 1)`` with 53 random bits."""
        return (self._word() >> 11) * (1.0 / (1 << 53))

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * self.random()

    def randint(self, a: int, b: int) -> int:
        """A uniform integer in ``[a, b]``, both ends included."""
        return a + self.below(b - a + 1)

    def choice(self, seq: Sequence[T]) -> T:
        if not seq:
            raise IndexError("cannot choose from an empty sequence")
        return seq[self.below(len(seq))]

    def shuffle(self, items: MutableSequence[T]) -> None:
        """Fisher-Yates, in place."""
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]

    def sample(self, seq: Sequence[T], k: int) -> list[T]:
        """``k`` distinct positions of ``seq`` in random order (a partial Fisher-Yates)."""
        if not 0 <= k <= len(seq):
            raise ValueError(f"sample of {k} from {len(seq)} items")
        pool = list(seq)
        for i in range(k):
            j = i + self.below(len(pool) - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]
