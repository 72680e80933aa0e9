"""Lucene English analysis as Anserini's ``DefaultEnglishAnalyzer`` applies it (Lucene 9.9).

The chain is ``StandardTokenizer`` -> ``EnglishPossessiveFilter`` -> ``LowerCaseFilter`` ->
``StopFilter`` (Lucene's 33 English stop words) -> ``PorterStemFilter``. Index terms and query
terms both come from :func:`analyze`, so a query can never carry syntax: ``title:x``, ``"``, ``*``,
``AND`` are just text that becomes terms (or nothing).

``StandardTokenizer`` is a JFlex scanner over a Unicode 9 grammar derived from UAX#29 word
boundaries, taking the *longest* match of its rules at each position and skipping characters no
rule matches. Its notable behaviours, all checked against Lucene itself:

* letters and digits join directly (``1.5kg``, ``kg1.5``); ``_`` joins anything;
* one "mid" character joins two letters (``:`` ``.`` ``'``: ``a:b``, ``u.s.a``, ``men's``) or two
  digits (``,`` ``;`` ``.`` ``'``: ``1,000``, ``3.5``) but never a letter to a digit;
* each Han ideograph and each hiragana is its own token; katakana, hangul and South-East Asian
  script runs (Thai, Lao, Khmer, Myanmar) stay whole;
* emoji sequences and the "accidental emoji" ``©`` ``®`` ``™`` are tokens of their own;
* a token longer than 255 UTF-16 units is cut into 255-unit pieces (the scanner buffer size).

Pure-ASCII text (the common case) takes a stdlib ``re`` fast path that is equivalent on ASCII;
other whitespace-separated pieces use a ``regex`` POSIX (leftmost-longest) pattern mirroring the
JFlex grammar.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

import regex

from shoppingbench.search.porter import stem

STOP_WORDS: Final = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they",
    "this", "to", "was", "will", "with",
))
"""``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``."""

MAX_TOKEN_LENGTH: Final = 255
"""``StandardAnalyzer.DEFAULT_MAX_TOKEN_LENGTH``, counted in UTF-16 code units."""

# ASCII: the WORD/NUM rules reduce to "letters/digits, joined directly or by underscores, or by one
# mid character between two letters (: . ') or two digits (, ; . ')".
_ASCII_TOKEN: Final = re.compile(
    r"_*(?:[A-Za-z](?:[:.'](?=[A-Za-z])|_*)|[0-9](?:[.,;'](?=[0-9])|_*))+"
)

# Emoji properties as Lucene 9's grammar includes them (generated from ICU 70 / Unicode 14), as
# hex code point ranges. The ``regex`` module's own tables are newer and disagree (e.g. U+2605 "★").
_EMOJI_CODES: Final = (
    "23 2A 30-39 A9 AE 203C 2049 2122 2139 2194-2199 21A9-21AA 231A-231B 2328 23CF 23E9-23F3 "
    "23F8-23FA 24C2 25AA-25AB 25B6 25C0 25FB-25FE 2600-2604 260E 2611 2614-2615 2618 261D 2620 "
    "2622-2623 2626 262A 262E-262F 2638-263A 2640 2642 2648-2653 265F-2660 2663 2665-2666 2668 267B "
    "267E-267F 2692-2697 2699 269B-269C 26A0-26A1 26A7 26AA-26AB 26B0-26B1 26BD-26BE 26C4-26C5 26C8 "
    "26CE-26CF 26D1 26D3-26D4 26E9-26EA 26F0-26F5 26F7-26FA 26FD 2702 2705 2708-270D 270F 2712 2714 "
    "2716 271D 2721 2728 2733-2734 2744 2747 274C 274E 2753-2755 2757 2763-2764 2795-2797 27A1 27B0 "
    "27BF 2934-2935 2B05-2B07 2B1B-2B1C 2B50 2B55 3030 303D 3297 3299 1F004 1F0CF 1F170-1F171 "
    "1F17E-1F17F 1F18E 1F191-1F19A 1F1E6-1F1FF 1F201-1F202 1F21A 1F22F 1F232-1F23A 1F250-1F251 "
    "1F300-1F321 1F324-1F393 1F396-1F397 1F399-1F39B 1F39E-1F3F0 1F3F3-1F3F5 1F3F7-1F4FD 1F4FF-1F53D "
    "1F549-1F54E 1F550-1F567 1F56F-1F570 1F573-1F57A 1F587 1F58A-1F58D 1F590 1F595-1F596 1F5A4-1F5A5 "
    "1F5A8 1F5B1-1F5B2 1F5BC 1F5C2-1F5C4 1F5D1-1F5D3 1F5DC-1F5DE 1F5E1 1F5E3 1F5E8 1F5EF 1F5F3 "
    "1F5FA-1F64F 1F680-1F6C5 1F6CB-1F6D2 1F6D5-1F6D7 1F6DD-1F6E5 1F6E9 1F6EB-1F6EC 1F6F0 1F6F3-1F6FC "
    "1F7E0-1F7EB 1F7F0 1F90C-1F93A 1F93C-1F945 1F947-1F9FF 1FA70-1FA74 1FA78-1FA7C 1FA80-1FA86 "
    "1FA90-1FAAC 1FAB0-1FABA 1FAC0-1FAC5 1FAD0-1FAD9 1FAE0-1FAE7 1FAF0-1FAF6"
)
_EMOJI_MODIFIER_BASE_CODES: Final = (
    "261D 26F9 270A-270D 1F385 1F3C2-1F3C4 1F3C7 1F3CA-1F3CC 1F442-1F443 1F446-1F450 1F466-1F478 "
    "1F47C 1F481-1F483 1F485-1F487 1F48F 1F491 1F4AA 1F574-1F575 1F57A 1F590 1F595-1F596 1F645-1F647 "
    "1F64B-1F64F 1F6A3 1F6B4-1F6B6 1F6C0 1F6CC 1F90C 1F90F 1F918-1F91F 1F926 1F930-1F939 1F93C-1F93E "
    "1F977 1F9B5-1F9B6 1F9B8-1F9B9 1F9BB 1F9CD-1F9CF 1F9D1-1F9DD 1FAC3-1FAC5 1FAF0-1FAF6"
)
_EXTENDED_PICTOGRAPHIC_CODES: Final = (
    "A9 AE 203C 2049 2122 2139 2194-2199 21A9-21AA 231A-231B 2328 2388 23CF 23E9-23F3 23F8-23FA 24C2 "
    "25AA-25AB 25B6 25C0 25FB-25FE 2600-2605 2607-2612 2614-2685 2690-2705 2708-2712 2714 2716 271D "
    "2721 2728 2733-2734 2744 2747 274C 274E 2753-2755 2757 2763-2767 2795-2797 27A1 27B0 27BF "
    "2934-2935 2B05-2B07 2B1B-2B1C 2B50 2B55 3030 303D 3297 3299 1F000-1F0FF 1F10D-1F10F 1F12F "
    "1F16C-1F171 1F17E-1F17F 1F18E 1F191-1F19A 1F1AD-1F1E5 1F201-1F20F 1F21A 1F22F 1F232-1F23A "
    "1F23C-1F23F 1F249-1F3FA 1F400-1F53D 1F546-1F64F 1F680-1F6FF 1F774-1F77F 1F7D5-1F7FF 1F80C-1F80F "
    "1F848-1F84F 1F85A-1F85F 1F888-1F88F 1F8AE-1F8FF 1F90C-1F93A 1F93C-1F945 1F947-1FAFF 1FC00-1FFFD"
)
_EMOJI_MODIFIER_CODES: Final = "1F3FB-1F3FF"


def _char_class(codes: str) -> str:
    """Regex class body (without brackets) for space-separated hex code points and ranges."""
    parts = []
    for item in codes.split():
        low, _, high = item.partition("-")
        parts.append(f"\\U{int(low, 16):08X}" + (f"-\\U{int(high, 16):08X}" if high else ""))
    return "".join(parts)


# Lucene's grammar uses Unicode 9 property tables, the ``regex`` module a much newer Unicode. These
# code points (found by sweeping every code point through Lucene) have a word-break class in the
# newer tables but none in Lucene's, so they are removed from every property-based class ...
_NEWER_THAN_LUCENE: Final = (
    "B8 2E5-2EB 558 55A 55F 58A-58C 5C8-5C9 870-887 889-891 897-89F 8B5 8BE-8D2 B53-B55 C3C C5C-C5D "
    "CDC-CDD CF3 D04 D81 ECE 170D 1715 171F 180F 1ABF-1AF0 1B4C 1C89-1C8A 1DFA 208F 209D-209F 2C2F "
    "2C5F 31BB-31BF 4DB6-4DBF 9FF0-9FFF A708-A716 A7C0-A7C1 A7C7-A7DD A7E2 A7F1-A7F6 A82C AB68-AB69 "
    "AB6C-AB6D 10570-1057A 1057C-1058A 1058C-10592 10594-10595 10597-105A1 105A3-105B1 105B3-105B9 "
    "105BB-105BC 105C0-105F3 10780-10785 10787-107B0 107B2-107BF 10940-10959 10D40-10D65 10D69-10D6D "
    "10D6F-10D85 10E80-10EA9 10EAB-10EAC 10EB0-10EB1 10EC2-10EC7 10ECB-10ECF 10ED9-10EEE 10EF0-10EFF "
    "10F70-10F85 10FB0-10FC4 11070-11075 110C2 11147 111CE-111CF 1123F-11241 11380-11389 1138B 1138E "
    "11390-113B5 113B7-113C0 113C2 113C5 113C7-113CA 113CC-113D3 113E1-113E2 11460-11461 116D0-116E3 "
    "11740-11746 11900-11906 11909 1190C-11913 11915-11916 11918-11935 11937-11938 1193B-11943 "
    "11950-11959 11AB0-11ABF 11B0A 11B60-11B67 11BC0-11BE0 11BF0-11BF9 11DB0-11DDB 11DE0-11DE9 "
    "11DF0-11DF1 11F00-11F10 11F12-11F3A 11F3E-11F42 11F50-11F5A 11FB0 1246F 12475-1247F 12550-12686 "
    "12F90-12FF0 1342F 13439-13455 13460-143FA 16100-16139 16A70-16ABE 16AC0-16AC9 16D40-16D6C "
    "16D70-16D79 16EA0-16EB8 16EBB-16ED3 16FE2 16FE4 16FF0-16FF6 1AFF0-1AFF3 1AFF5-1AFFB 1AFFD-1AFFE "
    "1B11F-1B128 1B132 1B155 1B168 1CCF0-1CCF9 1CF00-1CF2D 1CF30-1CF46 1D127-1D128 1D250-1D252 "
    "1D25B-1D25C 1D25F 1D280-1D281 1D6A6 1DF00-1DF81 1DF90-1DF96 1DFCD-1DFFF 1E030-1E06D 1E08F "
    "1E290-1E2AE 1E4D0-1E4F9 1E5D0-1E5FA 1E6C0-1E6DE 1E6E0-1E6F5 1E6FE-1E6FF 1E7E0-1E7E6 1E7E8-1E7EB "
    "1E7ED-1E7EE 1E7F0-1E7FE 2A6D7-2A6DF 2B735-2B73F 2B81E 2CEA2-2CEAD 2EBF0-2EE5D 30000-3134A "
    "31350-33479"
)
# ... and these few changed class: Lucene has them as Format (ignorable inside words), mid-number
# punctuation, a South-East Asian letter, or single-character symbols tokenized like emoji.
_LUCENE_FORMAT: Final = "600-605 6DD 70F 8E2 110BD 110CD"
_LUCENE_MID_NUM: Final = "FE10 FE14"
_LUCENE_COMPLEX_CONTEXT: Final = "19DA"
_LUCENE_PICTOGRAPHIC: Final = "1FB00-1FBFF"
_RECLASSIFIED: Final = " ".join(
    (_NEWER_THAN_LUCENE, _LUCENE_FORMAT, _LUCENE_MID_NUM, _LUCENE_COMPLEX_CONTEXT, _LUCENE_PICTOGRAPHIC)
)


def _lucene_class(properties: str, extra: str = "") -> str:
    """A character class of Unicode ``properties`` as Lucene's tables have it, plus ``extra`` codes."""
    added = _char_class(extra) if extra else ""
    return rf"[[[{properties}]--[{_char_class(_RECLASSIFIED)}]]{added}]"


# Character classes of the JFlex grammar (StandardTokenizerImpl.jflex); each ``*_EX`` form allows the
# trailing Format/Extend/ZWJ characters that UAX#29 rule WB4 attaches to the character before.
_FORMAT_EXTEND_ZWJ = _lucene_class(r"\p{WB=Format}\p{WB=Extend}\p{WB=ZWJ}", _LUCENE_FORMAT)
_EXT = rf"{_FORMAT_EXTEND_ZWJ}*"
_EXT_SANS_PRES = rf"[{_FORMAT_EXTEND_ZWJ}--[\uFE0E\uFE0F]]*"
_LETTER = _lucene_class(r"\p{WB=ALetter}\p{WB=Hebrew_Letter}")
_DIGIT = _lucene_class(r"\p{WB=Numeric}[\p{Block=HalfAndFullForms}&&\p{Nd}]")
_HEBREW = _lucene_class(r"\p{WB=Hebrew_Letter}")
_LETTER_EX = _LETTER + _EXT
_DIGIT_EX = _DIGIT + _EXT
_HEBREW_EX = _HEBREW + _EXT
_KATAKANA_EX = _lucene_class(r"\p{WB=Katakana}") + _EXT
_MID_LETTER_EX = _lucene_class(r"\p{WB=MidLetter}\p{WB=MidNumLet}\p{WB=Single_Quote}") + _EXT
_MID_NUMERIC_EX = _lucene_class(r"\p{WB=MidNum}\p{WB=MidNumLet}\p{WB=Single_Quote}", _LUCENE_MID_NUM) + _EXT
_EXTEND_NUM_LET_EX = _lucene_class(r"\p{WB=ExtendNumLet}") + _EXT
_SINGLE_QUOTE_EX = _lucene_class(r"\p{WB=Single_Quote}") + _EXT
_DOUBLE_QUOTE_EX = _lucene_class(r"\p{WB=Double_Quote}") + _EXT
_HAN_EX = _lucene_class(r"\p{Script=Han}") + _EXT
_HIRAGANA_EX = _lucene_class(r"\p{Script=Hiragana}") + _EXT
_COMPLEX_CONTEXT_EX = _lucene_class(r"\p{LB=SA}", _LUCENE_COMPLEX_CONTEXT) + _EXT
_REGIONAL_EX = _lucene_class(r"\p{WB=Regional_Indicator}") + _EXT

_EMOJI_MODIFIER = _char_class(_EMOJI_MODIFIER_CODES)
_EMOJI_RKAM = rf"\p{{WB=Regional_Indicator}}0-9#*©®™\u3030\u303D{_EMOJI_MODIFIER}"
_EMOJI_CHAR_CLASS = (
    rf"[[{_char_class(_EXTENDED_PICTOGRAPHIC_CODES)}{_char_class(_LUCENE_PICTOGRAPHIC)}]"
    rf"[[{_char_class(_EMOJI_CODES)}]--[{_EMOJI_RKAM}]]]"
)
_EMOJI_MOD_BASE_CLASS = rf"[{_char_class(_EMOJI_MODIFIER_BASE_CODES)}]"
# Inside an emoji sequence a ZWJ right before another emoji is the sequence joiner, not a trailing
# WB4 extender: leaving it to the joiner makes the greedy match the longest one.
_EMOJI_EXT = (
    rf"(?:[{_FORMAT_EXTEND_ZWJ}--[\uFE0E\uFE0F\p{{WB=ZWJ}}]]"
    rf"|\p{{WB=ZWJ}}(?!\p{{WB=ZWJ}}*[{_EMOJI_CHAR_CLASS}{_EMOJI_MOD_BASE_CLASS}{_EMOJI_MODIFIER}]))*"
)
_EMOJI_CHAR = _EMOJI_CHAR_CLASS + _EMOJI_EXT
_EMOJI_MOD_BASE = _EMOJI_MOD_BASE_CLASS + _EMOJI_EXT
_EMOJI_MOD = rf"[{_EMOJI_MODIFIER}]{_EMOJI_EXT}"

# Each rule is written so that Python's leftmost-first greedy match is the rule's longest match
# (JFlex semantics): alternatives that could both apply are ordered longest first, and every
# optional joiner is taken only where what must follow it is present.
# (A modifier is also a WB4 extender, so "base + modifier + U+FE0F" is longest as an emoji char.)
_EMOJI_UNIT = (
    rf"(?:\p{{WB=ZWJ}}*{_EMOJI_CHAR}\uFE0F?|(?:\p{{WB=ZWJ}}*{_EMOJI_MOD_BASE})?{_EMOJI_MOD})"
)
_EMOJI_RULE = (
    rf"{_EMOJI_UNIT}(?:[\U000E0020-\U000E007E]+\U000E007F|(?:\p{{WB=ZWJ}}{_EMOJI_UNIT})*)"
    rf"|[0-9#*]{_EMOJI_EXT}\uFE0F?\u20E3{_EMOJI_EXT}"
    rf"|(?:{_REGIONAL_EX}){{2}}"
)
# WORD/NUM: elements joined directly (letter and digit chains, where one mid-letter character may
# join two letters and one mid-number character two digits; a Hebrew letter with a trailing quote,
# or with a double quote and another Hebrew letter, never right after a mid character); katakana
# blocks stand apart; any two blocks may be joined by ExtendNumLet ("_"), which may also lead and
# trail.
_LETTER_DIGIT_BLOCK = (
    rf"(?:{_HEBREW_EX}(?:{_SINGLE_QUOTE_EX}|{_DOUBLE_QUOTE_EX}{_HEBREW_EX})"
    rf"|{_LETTER_EX}(?:{_MID_LETTER_EX}{_LETTER_EX})*"
    rf"|{_DIGIT_EX}(?:{_MID_NUMERIC_EX}{_DIGIT_EX})*)+"
)
_WORD_BLOCK = rf"(?:(?:{_KATAKANA_EX})+|{_LETTER_DIGIT_BLOCK})"
_WORD_RULE = (
    rf"(?:{_EXTEND_NUM_LET_EX})*{_WORD_BLOCK}(?:(?:{_EXTEND_NUM_LET_EX})+{_WORD_BLOCK})*"
    rf"(?:{_EXTEND_NUM_LET_EX})*"
)
_RULES: Final = tuple(
    regex.compile(rule, flags=regex.V1)
    for rule in (_EMOJI_RULE, _WORD_RULE, rf"(?:{_COMPLEX_CONTEXT_EX})+", _HAN_EX, _HIRAGANA_EX)
)
_ANY_RULE: Final = regex.compile("|".join(rule.pattern for rule in _RULES), flags=regex.V1)

_POSSESSIVE_APOSTROPHES: Final = frozenset("'\u2019\uff07")


def _window_end(text: str, start: int) -> int:
    """Where the 255-unit scanner buffer that starts at ``start`` ends (astral chars are 2 units)."""
    end = min(len(text), start + MAX_TOKEN_LENGTH)
    if text.isascii():
        return end
    units = 0
    for index in range(start, len(text)):
        units += 2 if ord(text[index]) > 0xFFFF else 1
        if units > MAX_TOKEN_LENGTH:
            return index
    return len(text)


def _unicode_tokens(text: str) -> Iterator[str]:
    """The longest rule match at each token start, within the scanner's 255-unit buffer.

    Lucene's scanner cannot see past its buffer: a longer token ends at the longest match that fits
    (``"ab." * 100`` gives a 254-char token, not 255) and scanning resumes right after it.
    """
    position = 0
    while (found := _ANY_RULE.search(text, position)) is not None:
        start = found.start()
        end = _window_end(text, start)
        longest = max((rule.match(text, start, end) for rule in _RULES),
                      key=lambda match: match.end() if match else -1)
        assert longest is not None  # the search proved that a rule matches here
        yield longest.group()
        position = longest.end()


# ASCII whitespace never belongs to a token, so text can be cut there and each piece scanned by
# the cheapest path that is exact for it (Unicode spaces such as U+202F can join tokens: not cut).
_ASCII_SPACE: Final = re.compile(r"[ \t\n\r\f\v]+")


def _ascii_tokens(text: str) -> list[str]:
    tokens: list[str] = _ASCII_TOKEN.findall(text)
    if all(len(token) <= MAX_TOKEN_LENGTH for token in tokens):
        return tokens
    # Rare: re-scan with the buffer limit. The ASCII pattern is greedy and unambiguous, so its
    # match bounded by the buffer end is the longest that fits.
    tokens, position = [], 0
    while (found := _ASCII_TOKEN.search(text, position)) is not None:
        match = _ASCII_TOKEN.match(text, found.start(), found.start() + MAX_TOKEN_LENGTH)
        assert match is not None  # a match at this start exists, and bounding keeps its prefix
        tokens.append(match.group())
        position = match.end()
    return tokens


def tokenize(text: str) -> list[str]:
    """``StandardTokenizer`` tokens of ``text`` (original case)."""
    if text.isascii():
        return _ascii_tokens(text)
    tokens: list[str] = []
    for piece in _ASCII_SPACE.split(text):
        tokens.extend(_ascii_tokens(piece) if piece.isascii() else _unicode_tokens(piece))
    return tokens


_JAVA_LOWER: dict[str, str] = {}


def _java_lower(token: str) -> str:
    """``Character.toLowerCase`` per code point: Python's full case mapping differs (``İ`` -> ``i̇``)."""
    if token.isascii():
        return token.lower()
    out = []
    for ch in token:
        low = _JAVA_LOWER.get(ch)
        if low is None:
            low = ch.lower()
            if len(low) != 1:
                # Only U+0130 has a multi-character full lower case; its simple mapping is "i".
                low = "i" if ch == "\u0130" else ch
            _JAVA_LOWER[ch] = low
        out.append(low)
    return "".join(out)


def _normalize(token: str) -> str | None:
    """Possessive, lower-case, stop word and Porter steps for one token; ``None`` when stopped."""
    if len(token) >= 2 and token[-1] in "sS" and token[-2] in _POSSESSIVE_APOSTROPHES:
        token = token[:-2]
    token = _java_lower(token)
    if token in STOP_WORDS:
        return None
    return stem(token)


_TERM_CACHE: dict[str, str | None] = {}
_TERM_CACHE_LIMIT: Final = 1 << 20


def _term(token: str) -> str | None:
    try:
        return _TERM_CACHE[token]
    except KeyError:
        pass
    term = _normalize(token)
    if len(_TERM_CACHE) >= _TERM_CACHE_LIMIT:
        # Bounded: product codes make the token vocabulary open-ended on a real catalog.
        _TERM_CACHE.clear()
    _TERM_CACHE[token] = term
    return term


def analyze(text: str) -> list[str]:
    """Index/query terms of ``text`` in order, exactly as Lucene would emit them."""
    terms = []
    for token in tokenize(text):
        term = _term(token)
        if term is not None:
            terms.append(term)
    return terms
