"""The copy measure (``shoppingbench.submission_check.similarity``) on the repository's own agents: disguised
copies of each are copies, no two distinct reference agents are."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from shoppingbench.submission_check import check_agent
from shoppingbench.submission_check.similarity import (
    COPY_SIMILARITY,
    CodeFingerprint,
    FingerprintIndex,
    fingerprint,
    normalised_tokens,
    similarity,
)
from tests.copy_variants import DISTINCT_AGENTS, disguised, extended, reformatted, renamed


def is_copy(candidate: CodeFingerprint, original: CodeFingerprint) -> bool:
    """Whether the index the gate keeps, holding only ``original``, finds ``candidate`` a copy of it."""
    return FingerprintIndex([original]).first_copied(candidate) is not None


EXACT_DISGUISES: list[Callable[[str], str]] = [renamed, reformatted]
"""Changes the normalisation undoes entirely: the normalised code is equal."""


@pytest.mark.parametrize("agent", DISTINCT_AGENTS, ids=lambda p: p.stem)
@pytest.mark.parametrize("disguise", EXACT_DISGUISES, ids=lambda f: f.__name__)
def test_renamed_and_reformatted_copies_normalise_to_the_same_code(agent: Path,
                                                                   disguise: Callable[[str], str]) -> None:
    source = agent.read_text()
    variant = disguise(source)
    assert variant != source
    assert fingerprint(variant).digest == fingerprint(source).digest
    assert is_copy(fingerprint(variant), fingerprint(source))


@pytest.mark.parametrize("agent", DISTINCT_AGENTS, ids=lambda p: p.stem)
@pytest.mark.parametrize("disguise", [extended, disguised], ids=lambda f: f.__name__)
def test_near_copies_are_above_the_threshold(agent: Path, disguise: Callable[[str], str]) -> None:
    original, copy = fingerprint(agent.read_text()), fingerprint(disguise(agent.read_text()))
    assert copy.digest != original.digest  # statements were added: only the similarity can tell
    assert similarity(copy, original) >= COPY_SIMILARITY
    assert is_copy(copy, original)


@pytest.mark.parametrize(("first", "second"), list(itertools.combinations(DISTINCT_AGENTS, 2)),
                         ids=lambda p: p.stem)
def test_no_two_distinct_reference_agents_are_copies(first: Path, second: Path) -> None:
    a, b = fingerprint(first.read_text()), fingerprint(second.read_text())
    assert not is_copy(a, b) and not is_copy(b, a)
    assert similarity(a, b) < COPY_SIMILARITY - 0.05  # with room for the estimate's error


def test_the_reference_agents_are_at_least_six_distinct_files() -> None:
    assert len({p.read_text() for p in DISTINCT_AGENTS}) >= 6


def test_normalisation_keeps_what_the_code_does() -> None:
    """Operators, calls and control flow survive: a changed comparison is different code."""
    base = "def f(x):\n    return x < 3\n"
    assert normalised_tokens(base)[:2] == ["Module/1", "FunctionDef/2"]  # names gone, the shape kept
    assert fingerprint(base).digest == fingerprint("def g(y):\n    'doc'\n    return y < 7  # note\n").digest
    assert fingerprint(base).digest != fingerprint("def f(x):\n    return x > 3\n").digest
    assert fingerprint(base).digest != fingerprint("def f(x):\n    return x(3)\n").digest


def test_the_fingerprint_is_the_same_in_every_process() -> None:
    """Validators must agree: the MinHash is seeded and hashes bytes, never Python's randomised ``hash``."""
    agent = DISTINCT_AGENTS[0]
    script = ("import sys; from shoppingbench.submission_check.similarity import fingerprint; "
              "print(fingerprint(open(sys.argv[1]).read()).model_dump_json())")
    outputs = {subprocess.run([sys.executable, "-c", script, str(agent)], capture_output=True, text=True,
                              check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip()
               for seed in ("1", "2")}
    assert outputs == {fingerprint(agent.read_text()).model_dump_json()}


def test_a_deeply_nested_file_that_static_analysis_accepts_is_fingerprinted() -> None:
    """The walk is iterative: 900 chained additions (accepted by the gate's static analysis) would
    exhaust a recursive normaliser's stack and turn an upload into a server error."""
    source = "def agent_main(problem):\n    return " + "+".join(["1"] * 900) + "\n"
    assert check_agent(source.encode()).ok
    assert fingerprint(source).digest != fingerprint(source.replace("+", "-")).digest


def test_a_file_that_does_not_parse_raises() -> None:
    with pytest.raises(SyntaxError):
        fingerprint("def broken(:\n")
