"""Lucene English analysis: tokenizer, possessives, stop words and the original Porter stemmer.

Expected values were checked against Lucene 9.9.1's ``DefaultEnglishAnalyzer`` (Anserini 1.7.1).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoppingbench.search import analysis
from shoppingbench.search.analysis import STOP_WORDS, analyze, tokenize
from shoppingbench.search.porter import stem


@pytest.mark.parametrize(("text", "terms"), [
    ("men's shoes", ["men", "shoe"]),
    ("MEN’S", ["men"]),
    ("men＇s", ["men"]),
    ("dog's's", ["dog'"]),
    ("80's", ["80", "s"]),
    ("waist:44", ["waist", "44"]),
    ("a:b", ["a:b"]),
    ("title:x", ["title:x"]),
    ("3.5 1,000 1;2", ["3.5", "1,000", "1;2"]),
    ("u.s.a.", ["u.s.a"]),
    ("lock&lock", ["lock", "lock"]),
    ("e-mail", ["e", "mail"]),
    ("1.5kg kg1.5 1a.b a.1", ["1.5kg", "kg1.5", "1a.b", "1"]),
    ("foo_bar _x_ __ a_1", ["foo_bar", "_x_", "a_1"]),
    ("Nike® Air™ ©2020 ★", ["nike", "®", "air", "™", "©", "2020", "★"]),
    ("中文字 ひらがな カタカナ 한국어 ภาษาไทย",
     ["中", "文", "字", "ひ", "ら", "が", "な", "カタカナ", "한국어", "ภาษาไทย"]),
    ("1\u20e3 😀👍🏽 🇺🇸", ["1\u20e3", "😀", "👍🏽", "🇺🇸"]),
    ("İstanbul ΟΔΟΣ", ["istanbul", "οδοσ"]),
    ("𝐀S", ["𝐀"]),
    ("", []),
    ('"(*) AND OR NOT shoes', ["shoe"]),
])
def test_analyze_matches_lucene(text: str, terms: list[str]) -> None:
    assert analyze(text) == terms


def test_stop_words_are_lucenes_33() -> None:
    assert len(STOP_WORDS) == 33
    assert analyze("The Bottle is for the kids and it will be THERE") == ["bottl", "kid"]


def test_long_tokens_end_at_the_longest_match_within_255_units() -> None:
    assert tokenize("x" * 300) == ["x" * 255, "x" * 45]
    assert tokenize("é" * 256) == ["é" * 255, "é"]
    assert [len(t) for t in tokenize("ab." * 100)] == [254, 44]  # the window ends on a "."
    assert tokenize("q" * 254 + ".bc") == ["q" * 254, "bc"]
    assert [len(t) for t in tokenize("𝐀" * 300)] == [127, 127, 46]  # 2 UTF-16 units each


@pytest.mark.parametrize(("text", "tokens"), [
    ('ב"ב\'', ['ב"ב']),
    ("Aב'", ["Aב'"]),
    ("A．ב'", ["A．ב"]),
    ("✋\u200d®", ["✋\u200d®"]),
    ("👨🏽\ufe0f", ["👨🏽\ufe0f"]),
    ("ア_b", ["ア_b"]),
    ("アb", ["ア", "b"]),
])
def test_unicode_grammar_corners(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


@pytest.mark.parametrize(("word", "stemmed"), [
    ("caresses", "caress"), ("ponies", "poni"), ("ties", "ti"), ("cats", "cat"), ("feed", "feed"),
    ("agreed", "agre"), ("disabled", "disabl"), ("matting", "mat"), ("mating", "mate"),
    ("meeting", "meet"), ("milling", "mill"), ("messing", "mess"), ("meetings", "meet"),
    ("happy", "happi"), ("sky", "sky"),
    # Lucene's departures from the 1980 paper:
    ("generalization", "gener"), ("hopeful", "hope"), ("relational", "relat"),
    ("conditional", "condit"), ("sensibility", "sensibl"), ("logical", "logic"),
    ("abli", "abli"), ("bli", "bli"), ("possibly", "possibl"), ("archaeology", "archaeolog"),
    ("rational", "ration"), ("ion", "ion"), ("as", "as"), ("is", "is"),
    ("electrical", "electr"), ("goodness", "good"), ("adjustment", "adjust"),
    ("controll", "control"), ("rate", "rate"), ("cease", "ceas"),
])
def test_porter_stemmer(word: str, stemmed: str) -> None:
    assert stem(word) == stemmed


_ASCII_POOL = "abcXYZ019 .,;:'_-&\"/"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=_ASCII_POOL, max_size=30))
def test_ascii_fast_path_equals_the_unicode_grammar(text: str) -> None:
    assert analysis._ascii_tokens(text) == list(analysis._unicode_tokens(text))


def test_mixed_text_splits_only_at_ascii_space() -> None:
    rng = random.Random(7)
    pool = list("ab1 .,'_é中★\u202f\u00a0")
    for _ in range(300):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(1, 20)))
        assert tokenize(text) == list(analysis._unicode_tokens(text))
