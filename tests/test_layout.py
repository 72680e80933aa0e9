"""The house rules, read from the code's own imports and definitions (``ast``, nothing is imported or run).

- Layers point down: ``neurons -> arena -> trajectories / shoppingbench``; ``shoppingbench`` imports none
  of the others, ``trajectories`` never imports ``arena`` (README, "What is here").
- No import cycle between folders (a file directly in a top-level package counts as a folder of its own),
  nor between files (imports inside functions count: a cycle is a cycle
  however late it closes; ``if TYPE_CHECKING:`` imports do not, they never run).
- Test doubles stay off the production path: nothing under ``shoppingbench/``, ``trajectories/`` or
  ``arena/`` imports them (entry points, benchmarks and tests inject them); nothing else under
  ``shoppingbench/`` imports the sample world.
- The trajectory store's schema is private to ``trajectories/store/``.
- Size: no module over :data:`MAX_LOGIC_LINES` lines of logic (literal tables are data), no function over
  :data:`MAX_FUNCTION_LINES` lines (its docstring included).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[1]
PACKAGES: Final = ("shoppingbench", "trajectories", "arena", "neurons", "benchmarks")
MAY_IMPORT: Final[dict[str, frozenset[str]]] = {
    "shoppingbench": frozenset({"shoppingbench"}),
    "trajectories": frozenset({"trajectories", "shoppingbench"}),
    "arena": frozenset({"arena", "trajectories", "shoppingbench"}),
    "neurons": frozenset({"neurons", "arena", "trajectories", "shoppingbench"}),
    "benchmarks": frozenset({"benchmarks", "arena", "trajectories", "shoppingbench"}),
}
"""Which top-level packages each one may import (benchmarks measure the layers, never the entry points)."""
DOUBLES: Final = ("shoppingbench.doubles", "trajectories.doubles")
"""The scripted LLM and teacher, the demo's cheaters, synthetic attempts: never on a production path."""
SAMPLE_WORLD: Final = ("shoppingbench.world", "shoppingbench.sample_world")
"""The bundled sample world: a default catalog the entry points may choose, never a benchmark rule."""
PRODUCTION: Final = ("shoppingbench", "trajectories", "arena")
SCHEMA: Final = "trajectories.store.schema"
MAX_LOGIC_LINES: Final = 400
MAX_FUNCTION_LINES: Final = 80


@dataclass(frozen=True, slots=True)
class Module:
    name: str
    path: Path
    tree: ast.Module

    @property
    def package(self) -> str:
        return self.name.split(".")[0]

    @property
    def folder(self) -> str:
        """The dotted folder the file lives in (a package's ``__init__`` belongs to its own folder); a file
        directly in a top-level package is a node of its own (``shoppingbench.files`` is not the folder
        ``shoppingbench``, or every shared helper there would tie all its subfolders together)."""
        parts = self.name.split(".")
        folder = parts if self.path.name == "__init__.py" else parts[:-1]
        return self.name if len(folder) == 1 else ".".join(folder)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Module]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = _module_name(path)
            found[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return found


def _type_checking_only(tree: ast.Module) -> set[int]:
    """Line numbers of imports under ``if TYPE_CHECKING:`` (they never run)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            lines |= {n.lineno for child in node.body for n in ast.walk(child) if hasattr(n, "lineno")}
    return lines


def _resolved(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.name.split(".") if module.path.name == "__init__.py" else module.name.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def imported(module: Module) -> Iterator[str]:
    """Every project module ``module`` imports at run time (``from a import b`` yields ``a.b`` when that
    is a module, else ``a``)."""
    known, skipped = modules(), _type_checking_only(module.tree)
    for node in ast.walk(module.tree):
        if getattr(node, "lineno", None) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _resolved(module, node)
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != module.name:
                yield target


def _graph(node_of: str) -> dict[str, set[str]]:
    """``{node: the nodes it imports}``, a node being a file (``name``) or a folder (``folder``)."""
    graph: dict[str, set[str]] = {}
    known = modules()
    for module in known.values():
        source = getattr(module, node_of)
        targets = {getattr(known[t], node_of) for t in imported(module)} - {source}
        graph.setdefault(source, set()).update(targets)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (``[]``: none)."""
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        return list(error.args[1])
    return []


def test_no_import_cycle_between_files() -> None:
    cycle = _cycle(_graph("name"))
    assert not cycle, " -> ".join(cycle)


def test_no_import_cycle_between_folders() -> None:
    cycle = _cycle(_graph("folder"))
    assert not cycle, " -> ".join(cycle)


def test_layers_point_down() -> None:
    known = modules()
    upward = sorted(f"{m.name} imports {t}" for m in known.values() for t in imported(m)
                    if known[t].package not in MAY_IMPORT[m.package])
    assert not upward, "\n".join(upward)


def _within(name: str, places: tuple[str, ...]) -> bool:
    return any(name == place or name.startswith(place + ".") for place in places)


def _imports_of(packages: tuple[str, ...], places: tuple[str, ...]) -> list[str]:
    """``"a imports b"`` for each module of ``packages`` outside ``places`` that imports one inside."""
    importers = [m for m in modules().values() if m.package in packages and not _within(m.name, places)]
    return sorted(f"{m.name} imports {t}" for m in importers for t in imported(m) if _within(t, places))


def test_no_production_module_imports_a_double() -> None:
    leaks = _imports_of(PRODUCTION, DOUBLES)
    assert not leaks, "\n".join(leaks)


def test_the_benchmark_harness_never_imports_the_sample_world() -> None:
    leaks = _imports_of(("shoppingbench",), SAMPLE_WORLD)
    assert not leaks, "\n".join(leaks)


def test_the_store_schema_is_private_to_the_store() -> None:
    outside = sorted(m.name for m in modules().values()
                     if not m.name.startswith("trajectories.store") and SCHEMA in set(imported(m)))
    assert not outside, "\n".join(outside)


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            lines |= set(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return lines


_TABLE_NODES: Final = (ast.Constant, ast.Tuple, ast.List, ast.Dict, ast.Set, ast.Name, ast.Load,
                       ast.JoinedStr,
                       ast.FormattedValue, ast.Call, ast.keyword, ast.BinOp, ast.Add, ast.UnaryOp, ast.USub)
"""What a declarative table is made of: literals, names, f-strings and calls with such arguments (a tuple
of ``_leaf("Home > Kitchen", "bottle|flask", ...)`` rows); no comprehension, lambda or condition."""


def _data_lines(tree: ast.Module) -> set[int]:
    """Lines of module-level constants written as tables (word lists, leaf rows): data, not logic."""
    lines: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None \
                and all(isinstance(part, _TABLE_NODES) for part in ast.walk(node.value)):
            lines |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def logic_lines(module: Module) -> int:
    """Lines that hold code: not blank, not only a comment, not part of a docstring or a literal table."""
    skipped = _docstring_lines(module.tree) | _data_lines(module.tree)
    text = module.path.read_text(encoding="utf-8").splitlines()
    return sum(1 for number, line in enumerate(text, start=1)
               if line.strip() and not line.strip().startswith("#") and number not in skipped)


def test_no_module_is_over_the_logic_limit() -> None:
    large = sorted(f"{m.name}: {n}" for m in modules().values() if (n := logic_lines(m)) > MAX_LOGIC_LINES)
    assert not large, "\n".join(large)


def test_no_function_is_over_the_length_limit() -> None:
    long = sorted(f"{m.name}.{node.name}: {length}" for m in modules().values() for node in ast.walk(m.tree)
                  if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                  and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > MAX_FUNCTION_LINES)
    assert not long, "\n".join(long)


@pytest.mark.parametrize(("source", "expected"), [
    ("from shoppingbench.catalog import store\n", {"shoppingbench.catalog.store"}),
    ("from .store import ProductStore\n", {"shoppingbench.catalog.store"}),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import arena.weights\n", set()),
    ("def f():\n    import trajectories.store.schema\n", {"trajectories.store.schema"}),
])
def test_imports_are_read_as_python_resolves_them(source: str, expected: set[str], tmp_path: Path) -> None:
    """The reader the rules rest on: absolute, relative, lazy and type-only imports (a module placed in
    ``shoppingbench/catalog/``)."""
    module = Module("shoppingbench.catalog.probe", ROOT / "shoppingbench" / "catalog" / "probe.py",
                    ast.parse(source))
    assert set(imported(module)) - {"shoppingbench.catalog"} == expected
