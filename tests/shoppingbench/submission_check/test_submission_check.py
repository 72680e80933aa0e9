"""Static analysis of agent files: every rule fires on what it forbids, with its line and category; the
reference agents pass; hostile input (deep nesting, huge literals, null bytes, odd encodings) never
crashes the check."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoppingbench.submission_check import MAX_AGENT_BYTES, RULES, CheckReport, check_agent, describe

REPO = Path(__file__).resolve().parents[3]
AGENT_FILES = [REPO / "shoppingbench/agents/scripted_baseline.py", REPO / "shoppingbench/agents/react_llm.py",
               REPO / "shoppingbench/agents/sub_task.py", REPO / "tests/fixtures/agents/oro_style_agent.py"]
ENTRY = "\ndef agent_main(problem):\n    return []\n"


def check(code: str, **kwargs: object) -> CheckReport:
    return check_agent((code + ENTRY).encode(), **kwargs)  # type: ignore[arg-type]


def rules(code: str) -> set[tuple[str, int | None]]:
    return {(f.rule, f.line) for f in check(code).findings}


@pytest.mark.parametrize("path", AGENT_FILES, ids=lambda p: p.name)
def test_the_reference_agents_and_the_reference_style_fixture_pass(path: Path) -> None:
    report = check_agent(path.read_bytes())
    assert report.ok and report.rejection is None, report.findings


def test_what_agents_legitimately_use_passes() -> None:
    code = """
import json, re, math, os, sys, logging, asyncio, threading, hashlib, inspect
from os import getenv, environ
from urllib.parse import quote_plus
from concurrent.futures import ThreadPoolExecutor
import httpx
from shoppingbench.agent_sdk import ProxyClient

logging.basicConfig(level=logging.INFO)
URL = os.environ.get("SANDBOX_PROXY_URL") or getenv("X", "")
data = json.loads(open("notes.txt").read()) if os.path.exists("notes.txt") else {}
with open("notes.txt", "r", encoding="utf-8") as handle:
    handle.read()
pattern = re.compile(r"\\d+")
value = eval("1 + 2")
name = getattr(pattern, "pattern", None)
print(inspect.signature(len), sys.stderr, platform := "system")
messages = [{"role": "system", "content": "x"}]
"""
    report = check(code)
    assert report.ok, report.findings


@pytest.mark.parametrize(("code", "rule", "line"), [
    ("import subprocess", "process", 1),
    ("x = 1\nfrom os import system", "process", 2),
    ("import os\nos.system('ls')", "process", 2),
    ("import os as o\no.execv('/bin/sh', [])", "process", 2),
    ("import os\nos.posix_spawnp", "process", 2),
    ("from concurrent.futures import ProcessPoolExecutor", "process", 1),
    ("import asyncio\nasyncio.create_subprocess_shell('ls')", "process", 2),
    ("import multiprocessing.pool", "process", 1),
    ("import socket", "network", 1),
    ("from http import server", "network", 1),
    ("import asyncio\nasyncio.open_connection('h', 1)", "network", 2),
    ("import logging.handlers\nlogging.handlers.SocketHandler('h', 1)", "network", 2),
    ("import ctypes", "native_code", 1),
    ("from cffi import FFI", "native_code", 1),
    ("import pickle", "serialization", 1),
    ("import marshal", "serialization", 1),
    ("import shelve", "serialization", 1),
    ("import importlib", "dynamic_import", 1),
    ("m = __import__('os')", "dynamic_import", 1),
    ("import sys\nsys.modules['os']", "dynamic_import", 2),
    ("import builtins", "builtins_access", 1),
    ("b = __builtins__", "builtins_access", 1),
    ("exec(input())", "dynamic_code", 1),
    ("x = 'print(1)'\neval(x)", "dynamic_code", 2),
    ("run = exec", "dynamic_code", 1),
    ("compile(source=s, filename='f', mode='exec')", "dynamic_code", 1),
    ("exec('import subprocess')", "process", 1),
    ("exec('exec(\"exec(\\\\\"1\\\\\")\")')", "dynamic_code", 1),
    ("exec('def (')", "dynamic_code", 1),
    ("import types\ntypes.FunctionType", "dynamic_code", 2),
    ("().__class__.__bases__[0].__subclasses__()", "introspection", 1),
    ("f = lambda: 0\nf.__globals__", "introspection", 1 + 1),
    ("getattr(object, '__subclasses__')", "introspection", 1),
    ("import sys\nsys._getframe(1).f_back", "introspection", 2),
    ("import gc\ngc.get_objects()", "introspection", 2),
    ("import os\ngetattr(os, 'sys' + 'tem')", "module_alias", 2),
    ("import os\nx = os\nx.system('ls')", "module_alias", 2),
    ("import sys\nvars(sys)", "module_alias", 2),
    ("from os import *", "module_alias", 1),
    ("open('out.txt', 'w')", "file_write", 1),
    ("open('out.txt', mode='ab')", "file_write", 1),
    ("mode = 'r'\nopen('f', mode)", "file_write", 2),
    ("import io\nio.open('f', 'r+')", "file_write", 2),
    ("from pathlib import Path\nPath('x').write_text('y')", "file_write", 2),
    ("from pathlib import Path\nPath('x').open('w')", "file_write", 2),
    ("import os\nos.remove('x')", "file_write", 2),
    ("import shutil\nshutil.rmtree('/')", "file_write", 2),
    ("import tempfile\ntempfile.NamedTemporaryFile()", "file_write", 2),
    ("import logging\nlogging.basicConfig(filename='log.txt')", "file_write", 2),
    ("import logging\nlogging.FileHandler('log.txt')", "file_write", 2),
    ("import sqlite3\nsqlite3.connect('db.sqlite3')", "file_write", 2),
    ("import base64", "obfuscation", 1),
    ("import zlib", "obfuscation", 1),
    ("from codecs import decode", "obfuscation", 1),
    ("blob = '" + "QUJD" * 80 + "'", "encoded_blob", 1),
    ("blob = b'" + "\\x00\\x01" * 200 + "'", "encoded_blob", 1),
])
def test_each_rule_fires_with_its_line(code: str, rule: str, line: int) -> None:
    assert (rule, line) in rules(code)


def test_findings_carry_category_and_the_worst_category_decides() -> None:
    report = check("import socket\nimport base64")
    assert {(f.rule, f.category) for f in report.findings} == {("network", "security"),
                                                               ("obfuscation", "integrity")}
    assert not report.ok and report.rejection == "integrity"
    assert check("import socket").rejection == "security"
    assert set(RULES) >= {f.rule for f in report.findings}
    assert report.model_dump()["ok"] is False


def test_a_missing_entry_point_and_accepted_ways_to_bind_it() -> None:
    assert [f.rule for f in check_agent(b"x = 1\n").findings] == ["entry_point"]
    for code in ("agent_main = lambda problem: []", "from shoppingbench.agent_sdk import x as agent_main",
                 "try:\n    def agent_main(p):\n        return []\nexcept Exception:\n    pass",
                 "async def agent_main(p):\n    return []"):
        assert check_agent(code.encode()).ok, code
    nested = b"def outer():\n    def agent_main(p):\n        return []\n"
    assert [f.rule for f in check_agent(nested).findings] == ["entry_point"]


def test_embedded_product_ids_anywhere_in_any_disguise() -> None:
    known = {"7341935620", "1250048547", "ABC123XYZ", "101"}
    code = """
ANSWERS = {"capybara": "7341935620"}
# the other one is 1250048547
HEX = 0x1b59d0c04
SPLIT = "12500" + "48547"
GLUED = "x9912500485470"
ESCAPED = "\\x37\\x33\\x34\\x31\\x39\\x33\\x35\\x36\\x32\\x30"
MIXED = "abc123xyz and ABC123XYZ"
SHORT = 101
"""
    report = check(code, known_product_ids=known)
    found = {f.line: f.message for f in report.findings if f.rule == "embedded_product_id"}
    assert set(found) == {2, 3, 4, 5, 6, 7, 8}, found
    assert "7341935620" in found[2] and "7341935620" in found[4] and "1250048547" in found[5]
    assert all(f.category == "integrity" for f in report.findings)
    assert check(code, known_product_ids=["101"]).ok  # too short to tell from an ordinary number
    assert check(code).ok


def test_encodings_are_checked_as_python_would_read_the_file() -> None:
    assert [(f.rule, f.line) for f in check_agent(b"x = 1\ny = '\x00'\n").findings] == [("encoding", 2)]
    assert [(f.rule, f.line) for f in check_agent(b"x = 1\n\ny = '\xff'\n").findings] == [("encoding", 3)]
    utf7 = b"# -*- coding: utf-7 -*-\n# +AAo-import subprocess\n" + ENTRY.encode()
    assert [f.rule for f in check_agent(utf7).findings] == ["obfuscation"]
    assert check_agent(b"# coding: utf-8\n" + ENTRY.encode()).ok
    assert check_agent(b"\xef\xbb\xbf" + ENTRY.encode()).ok  # a UTF-8 byte-order mark
    assert [f.rule for f in check_agent(b"# coding: no-such-codec\n").findings] == ["encoding"]
    trojan = ("access = 'user' # \u202e } \u2066if admin:\u2069 \u2066" + ENTRY).encode()
    assert ("obfuscation", 1) in {(f.rule, f.line) for f in check_agent(trojan).findings}


@pytest.mark.parametrize("source", [
    b"x = " + b"(" * 100_000 + b")" * 100_000,
    b"x = " + b"-" * 200_000 + b"1",
    b"x = " + b"[" * 50_000 + b"]" * 50_000,
    b"x = " + b"1 + " * 200_000 + b"1",
    b"x = " + b"9" * 500_000,
    b"def f(:\n",
], ids=["parens", "unary", "lists", "long-chain", "huge-int", "syntax"])
def test_hostile_sources_are_findings_not_crashes(source: bytes) -> None:
    started = time.monotonic()
    report = check_agent(source, known_product_ids=["7341935620"])
    assert time.monotonic() - started < 30
    assert not report.ok and all(f.rule in RULES for f in report.findings)


def test_a_syntax_error_says_so_with_its_line() -> None:
    (found,) = check_agent(b"def agent_main(problem):\n    steps = [\n    return steps\n").findings
    assert (found.rule, found.line) == ("syntax", 2)
    assert found.message == "syntax error at line 2: '[' was never closed"
    assert describe(found) == found.message  # the message says what and where: no rule name before it
    (indented,) = check_agent(b"def agent_main(problem):\nreturn []\n").findings
    assert indented.message == "syntax error at line 2: expected an indented block after function " \
                               "definition on line 1"
    (process,) = check("import subprocess" + ENTRY).findings
    assert describe(process) == f"[security] process (line 1): {process.message}"


def test_size_limit_and_finding_cap() -> None:
    big = check_agent(b"#" * (MAX_AGENT_BYTES + 1))
    assert [f.rule for f in big.findings] == ["size"] and big.size_bytes == MAX_AGENT_BYTES + 1
    many = check("\n".join("import socket" for _ in range(500)))
    network = [f for f in many.findings if f.rule == "network"]
    assert len(network) == 21 and network[-1].line is None and "480 more" in network[-1].message


def test_findings_inside_one_literal_exec_point_at_the_exec_line() -> None:
    report = check("x = 1\nexec('import os\\nos.system(1)\\nimport socket')")
    assert {(f.rule, f.line) for f in report.findings} == {("process", 2), ("network", 2)}


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_crash(source: bytes) -> None:
    report = check_agent(source, known_product_ids=["1234567890"])
    assert all(f.rule in RULES for f in report.findings)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("()[]{}'\"\\:=.,+-*/ \nabcxyz019#@_")), max_size=300))
def test_arbitrary_python_like_text_never_crashes(text: str) -> None:
    report = check_agent(text.encode())
    assert all(f.rule in RULES for f in report.findings)
