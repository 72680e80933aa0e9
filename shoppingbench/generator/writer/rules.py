"""Pure wording rules shared by the lexicon build and the writer: keys as shopper words, values in their
everyday form, and a title's kind phrase.

A key's *role* comes from marker words in its name ("clothing_material" -> material, "color_family" ->
color); its shopper word from a fixed list of words people use ("neckline", "collar"), never the raw
name. A value is cleaned ("int:m" -> "medium", "eu:40" -> "EU size 40", "texture / embroidery" ->
"texture or embroidery") without losing a number. A title's kind is the one- or two-word noun phrase
at the head of its first descriptive segment, preferring phrases the catalog's titles use often.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Final

from shoppingbench.generator.writer.lexicon import ROLES, KeyPhrasing, Phrasing, Role

_KEY_TOKEN: Final = re.compile(r"[a-z]+")
_SEGMENT_BREAK: Final = re.compile(r"[|/,;()\[\]{}<>+*!?:\"~=]|\s-\s|【|】|（|）")
_TITLE_WORD: Final = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
_STOPPERS: Final = frozenset({"for", "with", "and", "in", "of", "on", "to", "from", "by", "w", "x", "or"})
_SYSTEM_VALUE: Final = re.compile(r"^([a-z]+)\s*:\s*(.+)$")
_SLASHED_WORDS: Final = re.compile(r"(?<![a-z0-9])([a-z]+)\s*/\s*(?=[a-z])")
"""A slash between two words ("texture / embroidery"), not in a unit ("10pcs/set")."""
_SPACES: Final = re.compile(r"\s+")
MIN_KNOWN_PAIR: Final = 2
"""Titles a two-word kind needs before it is preferred outright over its head word."""


def key_tokens(key: str) -> list[str]:
    return _KEY_TOKEN.findall(key.lower())


def key_phrasing(key: str, phrasing: Phrasing) -> KeyPhrasing:
    """The deterministic phrasing of a key: its role by marker words, its shopper word if it has one."""
    tokens = key_tokens(key)
    role: Role = "feature"
    for candidate in ROLES:
        markers = phrasing.role_markers.get(candidate, [])
        if any(token == marker or (len(marker) >= 5 and token.endswith(marker))
               for token in tokens for marker in markers):
            role = candidate
            break
    words = [phrasing.key_words[t] for t in reversed(tokens) if t in phrasing.key_words]
    return KeyPhrasing(role=role, words=words[:1])


def clean_value(value: str, role: Role, phrasing: Phrasing) -> str:
    """The everyday form of a raw value; every number of the raw value survives."""
    text = _SPACES.sub(" ", value.strip().lower())
    system = _SYSTEM_VALUE.match(text)
    if system and system.group(1) in phrasing.size_systems:
        inner = system.group(2).strip()
        inner = phrasing.size_words.get(inner, inner)
        return phrasing.size_systems[system.group(1)].format(v=inner)
    if role == "size" and text in phrasing.size_words:
        return phrasing.size_words[text]
    joint = " and " if role == "color" else " or "
    return _SLASHED_WORDS.sub(lambda m: m.group(1) + joint, text).replace("_", " ").strip()


_MEASURE: Final = re.compile(r"(?<!\S)(\d+(?:\.\d+)?)([a-z]{1,4})(?!\S)")
"""A whole word that is a number and a unit ("30m", "1.5l"), not a model code ("13pro+5g")."""


def varied_value(value: str, variants: Mapping[str, str]) -> str:
    """``value`` said another way with the same meaning: words swapped by ``variants``, a number and its
    unit spaced apart ("30m" -> "30 m"). Every number stays."""
    spaced = _MEASURE.sub(r"\1 \2", value)
    return " ".join(variants.get(word, word) for word in spaced.split(" "))


def plural(phrase: str) -> str:
    """``phrase`` with its last word in the plural ("coin bank" -> "coin banks", "brush" -> "brushes")."""
    head, _, last = phrase.rpartition(" ")
    if last.endswith(("s", "x", "z", "ch", "sh")):
        last += "es"
    elif last.endswith("y") and last[-2:-1] not in ("a", "e", "i", "o", "u"):
        last = last[:-1] + "ies"
    else:
        last += "s"
    return f"{head} {last}" if head else last


def title_words(text: str) -> list[str]:
    return _TITLE_WORD.findall(text.lower())


def title_segments(title: str) -> list[list[str]]:
    """The title's words in runs that punctuation does not break."""
    return [words for part in _SEGMENT_BREAK.split(title.lower()) if (words := title_words(part))]


def _plain(word: str, noise: frozenset[str]) -> bool:
    return word.isalpha() and len(word) > 1 and word not in noise


def head_region(title: str, noise: frozenset[str]) -> list[str]:
    """The descriptive words where a title names its item: the first segment with two plain words (else
    one), up to
    its first preposition, with codes and sizes trimmed from its end ("ke master cylinder mb407061")."""
    segments = title_segments(title)
    described = [w for w in segments if sum(_plain(word, noise) for word in w) >= 2]
    for words in described + segments:
        region: list[str] = []
        for word in words:
            if word in _STOPPERS and any(_plain(w, noise) for w in region):
                break
            region.append(word)
        while region and not _plain(region[-1], noise):
            region.pop()
        if region:
            return region
    return []


def kind_candidates(title: str, noise: frozenset[str]) -> list[tuple[str, int]]:
    """Kind phrases a title offers (two plain words in a row, or one), each with its position."""
    region = head_region(title, noise)
    out: list[tuple[str, int]] = []
    for i, word in enumerate(region):
        if not _plain(word, noise):
            continue
        out.append((word, i))
        if i and _plain(region[i - 1], noise):
            out.append((f"{region[i - 1]} {word}", i))
    return out


def choose_kind(title: str, category: str, kinds: Mapping[str, int], noise: frozenset[str],
                nouns: frozenset[str]) -> str:
    """The kind phrase naming a product: ending in a common product noun, late in the head region (the
    head noun), frequent in the catalog, repeated in the title, sharing a word with the category when
    there is one; two words over one when the pair is itself a known kind. Falls back to the title's
    last plain word."""
    candidates = kind_candidates(title, noise)
    if not candidates:
        words = [w for w in title_words(title) if w.isalpha() and len(w) > 1]
        return words[-1] if words else "item"
    lowered = title.lower()
    category_words = set(title_words(category.split(">")[-1])) if category.strip() else set()
    last = max(position for _, position in candidates) or 1

    def score(candidate: tuple[str, int]) -> tuple[float, int]:
        phrase, position = candidate
        words = phrase.split()
        known = kinds.get(phrase, 0)
        value = 0.5 * math.log1p(known) + 3.0 * position / last + 1.5 * (lowered.count(phrase) - 1)
        value += 3.0 * any(w.rstrip("s") in {c.rstrip("s") for c in category_words} for w in words)
        value += 2.5 * (words[-1] in nouns or words[-1].rstrip("s") in nouns)
        value += (0.8 if known >= MIN_KNOWN_PAIR else 0.3) if len(words) == 2 else 0.0
        return value, position

    return max(candidates, key=score)[0]


def longest_title_run(text: str, title: str) -> int:
    """The longest run of consecutive title words that ``text`` repeats in the same order (punctuation
    in ``text`` breaks a run)."""
    title_list = title_words(title)
    best = 0
    previous = [0] * (len(title_list) + 1)
    for word in (w for part in _SEGMENT_BREAK.split(text.lower()) for w in [*title_words(part), "|"]):
        current = [0] * (len(title_list) + 1)
        for j, title_word in enumerate(title_list, start=1):
            if word == title_word:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best
