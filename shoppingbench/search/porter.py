"""The original Porter (1980) stemmer with the exact behaviour of Lucene's ``PorterStemFilter``.

Lucene ships Martin Porter's "Release 3" reference implementation, which departs from the paper in a
few places that change index terms, so a textbook or Snowball (Porter2) stemmer will not do:

* step 2 (``step3`` in the reference code) rewrites ``-bli`` to ``-ble`` (not the paper's ``-abli``)
  and has the extra rule ``-logi`` -> ``-log``;
* inside one suffix group the first suffix that *matches* ends the step even when its measure
  condition fails (``-ational`` with m = 0 is not retried as ``-tional``);
* words of one or two characters are never touched;
* the ``-ion`` rule of step 4 guards against the word being just ``ion``.

The buffer is indexed like the Java ``char[]``: a character outside the Basic Multilingual Plane
counts as two UTF-16 code units, which matters for the "longer than two" test and for positions.
"""

from __future__ import annotations

from functools import lru_cache

_VOWELS = frozenset("aeiou")

# Suffix groups keyed by the penultimate letter of the word, tried in this order (reference step3).
_STEP3: dict[str, tuple[tuple[str, str], ...]] = {
    "a": (("ational", "ate"), ("tional", "tion")),
    "c": (("enci", "ence"), ("anci", "ance")),
    "e": (("izer", "ize"),),
    "l": (("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous")),
    "o": (("ization", "ize"), ("ation", "ate"), ("ator", "ate")),
    "s": (("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous")),
    "t": (("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")),
    "g": (("logi", "log"),),
}
# Keyed by the last letter (reference step4).
_STEP4: dict[str, tuple[tuple[str, str], ...]] = {
    "e": (("icate", "ic"), ("ative", ""), ("alize", "al")),
    "i": (("iciti", "ic"),),
    "l": (("ical", "ic"), ("ful", "")),
    "s": (("ness", ""),),
}
# Keyed by the penultimate letter (reference step5); "ion" is special-cased.
_STEP5: dict[str, tuple[str, ...]] = {
    "a": ("al",),
    "c": ("ance", "ence"),
    "e": ("er",),
    "i": ("ic",),
    "l": ("able", "ible"),
    "n": ("ant", "ement", "ment", "ent"),
    "o": ("ion", "ou"),
    "s": ("ism",),
    "t": ("ate", "iti"),
    "u": ("ous",),
    "v": ("ive",),
    "z": ("ize",),
}


class _Word:
    """Mutable stemming state: ``b`` is the buffer, ``k`` the last index, ``j`` the stem end."""

    __slots__ = ("b", "j", "k")

    def __init__(self, chars: list[str]) -> None:
        self.b = chars
        self.k = len(chars) - 1
        self.j = 0

    def cons(self, i: int) -> bool:
        ch = self.b[i]
        if ch in _VOWELS:
            return False
        if ch == "y":
            return True if i == 0 else not self.cons(i - 1)
        return True

    def m(self) -> int:
        """Number of vowel-consonant sequences in ``b[0..j]``."""
        n, i, j = 0, 0, self.j
        while True:
            if i > j:
                return n
            if not self.cons(i):
                break
            i += 1
        i += 1
        while True:
            while True:
                if i > j:
                    return n
                if self.cons(i):
                    break
                i += 1
            i += 1
            n += 1
            while True:
                if i > j:
                    return n
                if not self.cons(i):
                    break
                i += 1
            i += 1

    def vowel_in_stem(self) -> bool:
        return any(not self.cons(i) for i in range(self.j + 1))

    def doublec(self, j: int) -> bool:
        return j >= 1 and self.b[j] == self.b[j - 1] and self.cons(j)

    def cvc(self, i: int) -> bool:
        if i < 2 or not self.cons(i) or self.cons(i - 1) or not self.cons(i - 2):
            return False
        return self.b[i] not in "wxy"

    def ends(self, suffix: str) -> bool:
        length = len(suffix)
        start = self.k - length + 1
        if start < 0 or "".join(self.b[start:self.k + 1]) != suffix:
            return False
        self.j = self.k - length
        return True

    def setto(self, text: str) -> None:
        start = self.j + 1
        self.b[start:] = list(text)
        self.k = self.j + len(text)

    def r(self, text: str) -> None:
        if self.m() > 0:
            self.setto(text)

    def truncate(self) -> None:
        """Drop characters beyond ``k`` so ``setto`` and ``ends`` see the current word only."""
        del self.b[self.k + 1:]

    def step1(self) -> None:
        if self.b[self.k] == "s":
            if self.ends("sses"):
                self.k -= 2
            elif self.ends("ies"):
                self.setto("i")
            elif self.b[self.k - 1] != "s":
                self.k -= 1
            self.truncate()
        if self.ends("eed"):
            if self.m() > 0:
                self.k -= 1
        elif (self.ends("ed") or self.ends("ing")) and self.vowel_in_stem():
            self.k = self.j
            self.truncate()
            if self.ends("at"):
                self.setto("ate")
            elif self.ends("bl"):
                self.setto("ble")
            elif self.ends("iz"):
                self.setto("ize")
            elif self.doublec(self.k):
                if self.b[self.k] not in "lsz":
                    self.k -= 1
            elif self.m() == 1 and self.cvc(self.k):
                self.setto("e")
        self.truncate()

    def step2(self) -> None:
        if self.ends("y") and self.vowel_in_stem():
            self.b[self.k] = "i"

    def step3(self) -> None:
        if self.k == 0:
            return
        for suffix, replacement in _STEP3.get(self.b[self.k - 1], ()):
            if self.ends(suffix):
                self.r(replacement)
                break
        self.truncate()

    def step4(self) -> None:
        for suffix, replacement in _STEP4.get(self.b[self.k], ()):
            if self.ends(suffix):
                self.r(replacement)
                break
        self.truncate()

    def step5(self) -> None:
        if self.k == 0:
            return
        for suffix in _STEP5.get(self.b[self.k - 1], ()):
            # "-ion" only counts after s or t (and the guard keeps the bare word "ion" safe).
            if self.ends(suffix) and (suffix != "ion" or (self.j >= 0 and self.b[self.j] in "st")):
                break
        else:
            return
        if self.m() > 1:
            self.k = self.j
            self.truncate()

    def step6(self) -> None:
        self.j = self.k
        if self.b[self.k] == "e":
            measure = self.m()
            if measure > 1 or (measure == 1 and not self.cvc(self.k - 1)):
                self.k -= 1
        if self.b[self.k] == "l" and self.doublec(self.k) and self.m() > 1:
            self.k -= 1
        self.truncate()


def _utf16_units(word: str) -> list[str]:
    """The word as Java sees it: supplementary characters become two surrogate code units."""
    units: list[str] = []
    for ch in word:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            units.append(chr(0xD800 + (code >> 10)))
            units.append(chr(0xDC00 + (code & 0x3FF)))
        else:
            units.append(ch)
    return units


@lru_cache(maxsize=1 << 18)
def stem(word: str) -> str:
    """Stem one lower-cased token exactly as Lucene's ``PorterStemFilter`` does."""
    astral = not word.isascii() and any(ord(ch) > 0xFFFF for ch in word)
    state = _Word(_utf16_units(word) if astral else list(word))
    if state.k <= 1:
        # Words of one or two UTF-16 units are left alone.
        return word
    state.step1()
    state.step2()
    state.step3()
    state.step4()
    state.step5()
    state.step6()
    result = "".join(state.b[:state.k + 1])
    if astral:
        result = result.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return result
