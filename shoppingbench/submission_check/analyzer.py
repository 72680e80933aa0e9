"""The syntax-tree pass: imports, names, attributes and calls an agent file must not use.

Every walk is iterative (``ast.walk``), so a hostile file nested thousands of levels deep cannot
exhaust the interpreter's recursion limit here. Names are resolved flow-insensitively: an import
anywhere binds its name for the whole file, which errs on the side of rejecting.

Names computed at run time are where such rules go blind, so the pass also flags the doors to them:
``globals()`` and ``vars()`` (a namespace, ``__builtins__`` included, indexed by string), a module's
``__dict__``, and ``getattr``-style access with a name that is not a literal on a module or on a dunder
chain. A name built from literals (``"__subcl" + "asses__"``, ``"".join(...)``, an f-string, ``chr``
codes) is folded (``folding``) and checked as if it were written out.
"""

from __future__ import annotations

import ast
import string
from collections.abc import Iterator
from dataclasses import dataclass, field

from shoppingbench.submission_check.folding import MAX_TOTAL_FOLDED_CHARS, Folder, folded_texts
from shoppingbench.submission_check.models import Finding
from shoppingbench.submission_check.rules import (
    ANY_RECEIVER_ATTRIBUTES,
    ATTRIBUTE_FUNCTIONS,
    DYNAMIC_CODE_BUILTINS,
    ESCAPE_LITERALS,
    ESCAPE_NAMES,
    NAMESPACE_BUILTINS,
    PROHIBITED_ATTRIBUTES,
    PROHIBITED_MODULES,
    SENSITIVE_MODULES,
    WRITE_MODE_CHARACTERS,
    finding,
)

ENTRY_POINT = "agent_main"
MAX_LITERAL_CODE_DEPTH = 2
"""``exec("...")`` of a literal is checked like the file itself, this many levels deep."""
BLOB_MIN_CHARS = 256
_BLOB_ALPHABET = frozenset(string.ascii_letters + string.digits + "+/=-_")
_PRINTABLE_BYTES = frozenset(string.printable.encode())


def module_rule(name: str) -> str | None:
    """The rule a module import breaks: the module itself or any package above it is prohibited."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        rule = PROHIBITED_MODULES.get(".".join(parts[:end]))
        if rule is not None:
            return rule
    return None


def member_rule(qualified: str) -> str | None:
    """The rule naming ``module.member`` (``os.system``, ``logging.handlers.SocketHandler``) breaks."""
    parts = qualified.split(".")
    for end in range(1, len(parts)):
        table = PROHIBITED_ATTRIBUTES.get(".".join(parts[:end]))
        if table is None:
            continue
        member = parts[end]
        if member in table:
            return table[member]
        for pattern, rule in table.items():
            if pattern.endswith("*") and member.startswith(pattern[:-1]):
                return rule
    return None


def qualified_name(node: ast.expr, bindings: dict[str, str]) -> str | None:
    """``os.path.join`` for ``p.join`` after ``import os.path as p``; ``None`` if not rooted in an import."""
    attributes: list[str] = []
    while isinstance(node, ast.Attribute):
        attributes.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in bindings:
        return ".".join([bindings[node.id], *reversed(attributes)])
    return None


@dataclass
class _Pass:
    bindings: dict[str, str]
    depth: int
    line_offset: int | None
    """Set when checking code inside an ``exec`` literal: every finding points at the ``exec`` line."""
    folder: Folder
    """The constant folder (and node walk) of the tree being checked."""
    findings: list[Finding] = field(default_factory=list)

    def text(self, node: ast.expr | None) -> str | None:
        """The string ``node`` is, written out or folded from literals."""
        value = self.folder.value(node) if node is not None else None
        return value if isinstance(value, str) else None

    def add(self, rule: str, node: ast.AST | None, message: str) -> None:
        line = self.line_offset if self.line_offset is not None else getattr(node, "lineno", None)
        self.findings.append(finding(rule, line, message))


def _imports(tree: ast.AST, check: _Pass) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                rule = module_rule(alias.name)
                if rule is not None:
                    check.add(rule, node, f"import of {alias.name}")
                # `import a.b` binds `a`; `import a.b as c` binds `c` to `a.b`.
                if alias.asname:
                    check.bindings[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    check.bindings[root] = root
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            rule = module_rule(node.module)
            if rule is not None:
                check.add(rule, node, f"import from {node.module}")
            for alias in node.names:
                if alias.name == "*":
                    if node.module in SENSITIVE_MODULES:
                        check.add("module_alias", node, f"'from {node.module} import *' hides which members "
                                                        "are used; import them by name")
                    continue
                full = f"{node.module}.{alias.name}"
                rule = module_rule(full) or member_rule(full)
                if rule is not None:
                    check.add(rule, node, f"import of {full}")
                check.bindings[alias.asname or alias.name] = full


def _literal_text(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _check_open_mode(call: ast.Call, mode: ast.expr | None, check: _Pass, *, strict: bool) -> None:
    """A write mode rejects; so does a computed one where the call is known to be ``open`` (``strict``)."""
    if mode is None:
        return
    text = _literal_text(mode)
    if text is None:
        if strict:
            check.add("file_write", call, "open() with a computed mode; only literal read modes are allowed")
    elif WRITE_MODE_CHARACTERS & set(text):
        check.add("file_write", call, f"open() in write mode {text!r}")


def _check_call(call: ast.Call, check: _Pass) -> None:
    func = call.func
    name = func.id if isinstance(func, ast.Name) else None
    resolved = qualified_name(func, check.bindings)
    if name in DYNAMIC_CODE_BUILTINS:
        source = _argument(call, 0, "source")
        if source is not None:
            _check_literal_code(call, name or "", source, check)
    elif name in ATTRIBUTE_FUNCTIONS:
        _check_computed_access(call, name or "", _argument(call, 0, "obj"), _argument(call, 1, "name"), check)
    if name == "open" or resolved in ("io.open", "codecs.open"):
        _check_open_mode(call, _argument(call, 1, "mode"), check, strict=True)
    elif isinstance(func, ast.Attribute) and func.attr == "open" and resolved is None:
        _check_open_mode(call, _argument(call, 0, "mode"), check, strict=False)  # pathlib.Path.open(mode)
    elif resolved == "logging.basicConfig" and any(k.arg == "filename" for k in call.keywords):
        check.add("file_write", call, "logging.basicConfig(filename=...) writes a log file")
    elif resolved == "sqlite3.connect" and _literal_text(_argument(call, 0, "database")) != ":memory:":
        check.add("file_write", call, "sqlite3.connect() to a file; only ':memory:' is allowed")


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _reaches_dunder(node: ast.expr) -> bool:
    """Whether ``node`` goes through a dunder attribute or name (``().__class__``, ``x.__dict__``)."""
    names = (n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else ""
             for n in ast.walk(node))
    return any(_is_dunder(name) for name in names)


def _check_computed_access(call: ast.Call, function: str, receiver: ast.expr | None, name: ast.expr | None,
                           check: _Pass) -> None:
    """``getattr(obj, name)`` and kin: a literal (or folded) name is checked like ``obj.name``; any other
    name is refused on a module and on a dunder chain, where it could reach any member."""
    attribute = check.text(name)
    if attribute is not None:
        _check_attribute(call, attribute, receiver, check)
    elif name is not None and receiver is not None:
        module = qualified_name(receiver, check.bindings)
        if module is not None:
            check.add("module_alias", call, f"{function}() of module {module} with a computed name")
        elif _reaches_dunder(receiver):
            check.add("introspection", call, f"{function}() with a computed name on a dunder attribute")


def _check_literal_code(call: ast.Call, builtin: str, source: ast.expr, check: _Pass) -> None:
    if not (isinstance(source, ast.Constant) and isinstance(source.value, str | bytes)):
        check.add("dynamic_code", call, f"{builtin}() of a computed value")
        return
    if check.depth >= MAX_LITERAL_CODE_DEPTH:
        check.add("dynamic_code", call, f"{builtin}() nested more than {MAX_LITERAL_CODE_DEPTH} levels deep")
        return
    try:
        inner = ast.parse(source.value)
    except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError):
        check.add("dynamic_code", call, f"{builtin}() of a literal that is not valid Python")
        return
    nested = _Pass(bindings=dict(check.bindings), depth=check.depth + 1,
                   line_offset=check.line_offset if check.line_offset is not None else call.lineno,
                   folder=Folder(inner))
    _run(inner, nested)
    check.findings.extend(nested.findings)


def _check_attribute(node: ast.AST, attribute: str, receiver: ast.expr | None, check: _Pass) -> None:
    rule = ANY_RECEIVER_ATTRIBUTES.get(attribute)
    if rule is not None:
        check.add(rule, node, f"use of .{attribute}")
    if receiver is not None:
        base = qualified_name(receiver, check.bindings)
        if base is not None and attribute == "__dict__":
            check.add("module_alias", node, f"{base}.__dict__ reaches the module's members by computed name")
        elif base is not None:
            member = member_rule(f"{base}.{attribute}")
            if member is not None:
                check.add(member, node, f"use of {base}.{attribute}")


def _check_escape_text(node: ast.AST, value: str, check: _Pass) -> None:
    if value in ESCAPE_LITERALS:
        check.add(ESCAPE_NAMES.get(value, "introspection"), node, f"string {value!r} names an escape hatch")


def _check_constant(node: ast.Constant, check: _Pass) -> None:
    value = node.value
    if isinstance(value, str):
        _check_escape_text(node, value, check)
        if len(value) >= BLOB_MIN_CHARS and _BLOB_ALPHABET.issuperset(value):
            check.add("encoded_blob", node, f"a {len(value):,}-character encoded-looking string literal")
    elif isinstance(value, bytes) and len(value) >= BLOB_MIN_CHARS:
        binary = sum(1 for byte in value if byte not in _PRINTABLE_BYTES)
        if binary * 4 >= len(value) or _BLOB_ALPHABET.issuperset(value.decode("latin-1")):
            check.add("encoded_blob", node, f"a {len(value):,}-byte binary or encoded bytes literal")


def _check_name(node: ast.Name, parent: ast.AST | None, check: _Pass) -> None:
    if node.id in ESCAPE_NAMES:
        check.add(ESCAPE_NAMES[node.id], node, f"use of {node.id}")
    if not isinstance(node.ctx, ast.Load):
        return
    if node.id in DYNAMIC_CODE_BUILTINS and not (isinstance(parent, ast.Call) and parent.func is node):
        check.add("dynamic_code", node, f"{node.id} used as a value")
    if node.id in NAMESPACE_BUILTINS:
        check.add(NAMESPACE_BUILTINS[node.id], node, f"{node.id}() gives a namespace (and __builtins__) by "
                                                     "string key")
    module = check.bindings.get(node.id)
    if module in SENSITIVE_MODULES and not (isinstance(parent, ast.Attribute) and parent.value is node):
        check.add("module_alias", node, f"module {module} used as a value; call its members directly "
                                        f"({module}.<name>)")


def _run(tree: ast.AST, check: _Pass) -> None:
    _imports(tree, check)
    folder = check.folder
    for node in folder.nodes:
        if isinstance(node, ast.Name):
            _check_name(node, folder.parents.get(id(node)), check)
        elif isinstance(node, ast.Attribute):
            _check_attribute(node, node.attr, node.value, check)
        elif isinstance(node, ast.Call):
            _check_call(node, check)
        elif isinstance(node, ast.Constant):
            _check_constant(node, check)
    for built, text in folded_texts(folder):
        _check_escape_text(built, text, check)
    if folder.exhausted:
        check.add("obfuscation", None, f"string-building expressions fold to more than "
                                       f"{MAX_TOTAL_FOLDED_CHARS:,} characters")


def analyze(tree: ast.Module, folder: Folder | None = None) -> list[Finding]:
    """Every finding the rules make about a parsed file (duplicates included); ``folder`` is the tree's,
    when the caller has it already."""
    check = _Pass(bindings={}, depth=0, line_offset=None, folder=folder or Folder(tree))
    _run(tree, check)
    return check.findings


def _top_level_statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Module-level statements, looking inside if/try/with blocks but not into functions or classes."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        statement = pending.pop()
        yield statement
        if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            pending.extend(child for child in ast.iter_child_nodes(statement) if isinstance(child, ast.stmt))
            if isinstance(statement, ast.Try):
                pending.extend(s for handler in statement.handlers for s in handler.body)


def defines_entry_point(tree: ast.Module) -> bool:
    """Whether the module binds ``agent_main`` at top level (def, assignment or import)."""
    for statement in _top_level_statements(tree):
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and statement.name == ENTRY_POINT:
            return True
        if isinstance(statement, ast.Assign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(isinstance(t, ast.Name) and t.id == ENTRY_POINT for t in targets):
                return True
        if isinstance(statement, ast.ImportFrom | ast.Import) and any(
                (alias.asname or alias.name) == ENTRY_POINT for alias in statement.names):
            return True
    return False
