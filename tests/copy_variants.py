"""How a copier disguises someone else's agent file (not a test module): renamed, reformatted, extended.

Each function takes a file's text and returns a variant that runs the same logic, built the way a miner
would with ``ast`` (so the variants are real Python, never hand-picked strings that happen to match).
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REFERENCE_AGENTS = tuple(sorted([*REPO.glob("shoppingbench/agents/*.py"),
                                 *REPO.glob("tests/fixtures/agents/*.py")]))
"""Every distinct agent the repository ships: no pair of them may be judged a copy."""
DISTINCT_AGENTS = tuple(path for path in REFERENCE_AGENTS if path.name != "__init__.py")


class _Renamer(ast.NodeTransformer):
    """Every name the file defines (functions, classes, arguments, variables) gets a fresh one."""

    def __init__(self, defined: set[str]) -> None:
        self._new = {name: f"v{i}_{name[::-1].strip('_')}" for i, name in enumerate(sorted(defined))}

    def _renamed(self, name: str) -> str:
        return self._new.get(name, name)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._renamed(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._renamed(node.arg)
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self._renamed(node.name)
        self.generic_visit(node)
        return node

    def visit_keyword(self, node: ast.keyword) -> ast.AST:
        # Keyword arguments name the callee's parameters: renamed only where the file defines them too.
        self.generic_visit(node)
        return node


def _defined_names(tree: ast.Module) -> set[str]:
    keep = set(dir(builtins)) | {"agent_main"}  # the runner calls agent_main: a copy keeps it
    defined: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
    return defined - keep


def renamed(source: str) -> str:
    """Every function, variable and assigned name renamed (arguments stay: keyword calls bind them)."""
    tree = ast.parse(source)
    return ast.unparse(_Renamer(_defined_names(tree)).visit(tree))


class _LiteralChanger(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        value = node.value
        if isinstance(value, str):
            return ast.Constant(value=value.replace("product", "item") + " ")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return ast.Constant(value=value + 1)
        return node


def reformatted(source: str) -> str:
    """Docstrings reworded, every string and number changed, comments added, the layout redone."""
    tree = _LiteralChanger().visit(ast.parse(source))
    lines = ast.unparse(tree).splitlines()
    out: list[str] = ["# My very own shopping agent, written from scratch."]
    for number, line in enumerate(lines):
        body = line.lstrip(" ")
        out.append(" " * ((len(line) - len(body)) // 2) + body)  # two-space indents
        if number % 7 == 3 and not line.rstrip().endswith((",", "(", "[", "{", "\\")):
            out.append("")
    return "\n".join(out) + "\n# end of file\n"


def extended(source: str, statements: int = 3) -> str:
    """A near-copy: ``statements`` harmless statements added at the top of the first few functions."""
    tree = ast.parse(source)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    for index, function in enumerate(functions[:statements]):
        extra = ast.parse(f"trace_{index} = len(str({index})) * {index + 2}").body
        function.body[0:0] = extra
    return ast.unparse(ast.fix_missing_locations(tree))


def disguised(source: str) -> str:
    """All at once: renamed, then extended, then reformatted."""
    return reformatted(extended(renamed(source)))
