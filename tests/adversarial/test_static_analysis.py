"""Agent files that reach escape hatches or hard-coded answers through names built at run time: the gate
flags the doors (``globals()``, ``vars()``, a module's ``__dict__``, computed ``getattr`` names on modules
and dunder chains) and folds string-building expressions to the escape names and answer ids they spell.
The bundled agents and the network demo's table cheater (answers masked with a hash of the query:
beyond any scan of the file, which is why static analysis is only a hint) still pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoppingbench.doubles.cheaters import table_cheater_source
from shoppingbench.problems.models import Problem, RewardTarget
from shoppingbench.submission_check import check_agent

ANSWER = "7654321"
BUNDLED = sorted(p for p in (Path(__file__).resolve().parents[2] / "shoppingbench" / "agents").glob("*.py")
                 if p.name != "__init__.py")


def _rules(body: str, *, header: str = "") -> set[str]:
    source = f"{header}\n\ndef agent_main(problem):\n    value = problem.get('x')\n    return {body}\n"
    return {f.rule for f in check_agent(source.encode(), known_product_ids=[ANSWER]).findings}


@pytest.mark.parametrize(("body", "header", "rule"), [
    ("globals()['__bu' + 'iltins__']", "", "builtins_access"),
    ("vars()['agent_main']", "", "builtins_access"),
    ("os.__dict__['sys' + 'tem']('ls')", "import os", "module_alias"),
    ("sys.__dict__['mod' + 'ules']", "import sys", "module_alias"),
    ("getattr(os, value)('ls')", "import os", "module_alias"),
    ("getattr(object, '__subcl' + 'asses__')()", "", "introspection"),
    ("getattr(agent_main, ''.join(['__glo', 'bals__']))", "", "introspection"),
    ("getattr(agent_main, f\"__{'co'}de__\")", "", "introspection"),
    ("getattr(().__class__.__base__, value)", "", "introspection"),
    ("getattr(agent_main, '__globals__'[::1])", "", "introspection"),
])
def test_computed_names_reaching_escape_hatches_are_flagged(body: str, header: str, rule: str) -> None:
    assert rule in _rules(body, header=header)


@pytest.mark.parametrize("body", [
    "''.join(chr(c) for c in [55, 54, 53, 52, 51, 50, 49])",
    "''.join(map(chr, [55, 54, 53, 52, 51, 50, 49]))",
    "chr(55) + chr(54) + chr(53) + chr(52) + chr(51) + chr(50) + chr(49)",
    "'1234567'[::-1]",
    "''.join(reversed('1234567'))",
    "''.join(['765', '4321'])",
    "f'{765}{4321}'",
    "f\"{value}{'765'}{'4321'}\"",
    "value + '765' + '4321'",
    "str(int('74cbb1', 16))",
    "'%d%d' % (765, 4321)",
    "'{}{}'.format(765, 4321)",
    "str(7654320 ^ 1)",
])
def test_answer_ids_spelled_by_string_building_are_flagged(body: str) -> None:
    assert "embedded_product_id" in _rules(body)


@pytest.mark.parametrize("body", ["'%999999999d' % 1", "'{:>999999999}'.format(1)", "'ab' * 10**9",
                                  "f'{1:>999999999}'", "''.join(('a' * 4096,) * 4096)",
                                  "str(('a' * 4096,) * 4096)", "('%s' * 4096) % (('a' * 4096,) * 4096)"])
def test_folding_never_builds_huge_values(body: str) -> None:
    assert _rules(body) == set()  # not folded, so nothing to flag, and the check returned at once


def test_a_file_folding_to_megabytes_is_obfuscation() -> None:
    body = "[" + ", ".join(["'abcd' * 1000"] * 1000) + "]"
    assert "obfuscation" in _rules(body)


@pytest.mark.parametrize("agent", BUNDLED, ids=lambda p: p.name)
def test_the_bundled_agents_still_pass(agent: Path) -> None:
    report = check_agent(agent.read_bytes(), known_product_ids=[ANSWER])
    assert report.ok, report.findings


def test_the_demo_table_cheater_still_passes() -> None:
    problems = [Problem(id=f"p{i}", category="product", query=f"red shoes size {i}",
                        targets=[RewardTarget(product_id=str(int(ANSWER) + i), title=["shoes"])])
                for i in range(5)]
    source = table_cheater_source(problems)
    report = check_agent(source, known_product_ids=[str(int(ANSWER) + i) for i in range(5)])
    assert report.ok, report.findings
