"""Constant folding of string-building expressions, without running anything.

A miner can spell an answer id or an escape hatch so that no literal holds it: ``chr(52) + chr(48)``,
``"7654321"[::-1]``, ``"".join(["12", "34"])``, ``f"{12}{34}"``, ``str(int("4d2", 16))``,
``"%d%d" % (12, 34)``, ``"{}{}".format(12, 34)``, ``"__bu" + "iltins__"``. The folder evaluates such
expressions when every leaf is a literal, with a small interpreter that knows only these pure
operations and bounds every value it builds, so a hostile file cannot make it spend time or memory.
Names are not followed: a value assembled across statements or computed from data (a hash, a mask
taken at run time) is out of its reach, which is why static analysis is a hint and verified answers and
fresh race suites are the defence.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from typing import Final

Value = str | int | bytes | tuple["Value", ...]
"""What folding can produce: a string, an integer, bytes, or a sequence of them."""

MAX_FOLDED_CHARS: Final = 4096
"""Longer strings (and sequences, and integers of more bits) are not folded."""
MAX_TOTAL_FOLDED_CHARS: Final = 2_000_000
"""Characters one file may fold to in all; past that nothing more is folded and the folder is exhausted
(a file made of ``"abcd" * 1000`` expressions would otherwise turn 1 MB into gigabytes to scan)."""
_BUILDERS: Final = (ast.BinOp, ast.JoinedStr, ast.Call, ast.Subscript)
"""Expression kinds that build a value out of others (a literal alone is scanned as it is)."""
_WIDE: Final = re.compile(r"\d{4,}|\*|\{[^{}]*\{")
"""A format with a width of 1000 or more, a ``*`` width or a nested field: it could build a huge string."""


def _bounded(value: object) -> Value | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str | bytes):
        return value if len(value) <= MAX_FOLDED_CHARS else None
    if isinstance(value, int):
        return value if value.bit_length() <= MAX_FOLDED_CHARS else None
    if isinstance(value, list | tuple) and len(value) <= MAX_FOLDED_CHARS:
        items = tuple(_bounded(item) for item in value)
        return None if any(item is None for item in items) else items  # type: ignore[return-value]
    return None


def _size(value: Value) -> int:
    """Characters ``value`` holds, its items' included: what formatting or joining it would copy."""
    if isinstance(value, tuple):
        return sum(_size(item) for item in value) + len(value)
    return value.bit_length() // 3 if isinstance(value, int) else len(value)


def _small(*values: Value) -> bool:
    """Whether building text out of ``values`` stays within the fold bound (checked before building)."""
    return sum(_size(value) for value in values) <= MAX_FOLDED_CHARS


def _binary(op: ast.operator, left: Value, right: Value) -> object:
    if isinstance(op, ast.Mult) and isinstance(left, str | bytes | tuple) and isinstance(right, int):
        return left * right if right >= 0 and len(left) * right <= MAX_FOLDED_CHARS else None
    if isinstance(op, ast.Mod) and isinstance(left, str):
        return _formatting(left, lambda: left % right) if _small(left, right) else None
    operations: dict[type[ast.operator], Callable[[object, object], object]] = {
        ast.Add: lambda a, b: a + b,  # type: ignore[operator]
        ast.Sub: lambda a, b: a - b,  # type: ignore[operator]
        ast.BitXor: lambda a, b: a ^ b,  # type: ignore[operator]
    }
    operation = operations.get(type(op))
    return operation(left, right) if operation is not None else None


def _formatting(template: str, build: Callable[[], str]) -> str | None:
    """``build()`` unless ``template`` (a format string or spec) could ask for a huge width."""
    return None if _WIDE.search(template) else build()


def _text(value: Value) -> str | None:
    """The text a folded value spells: a string, or an integer's digits."""
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, int) else None


class Folder:
    """Folds the expressions of one tree, each node once: children before parents, so a chain of any
    length folds in linear time without deep recursion. Walking the tree once, it also keeps its nodes in
    breadth-first order and each node's parent, for the passes that use the folded values."""

    def __init__(self, tree: ast.AST) -> None:
        self._memo: dict[int, Value | None] = {}
        self.built_chars = 0
        self.nodes: list[ast.AST] = [tree]
        self.parents: dict[int, ast.AST] = {}
        for node in self.nodes:  # grows while it is walked: breadth-first
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
                self.nodes.append(child)
        for node in reversed(self.nodes):  # children first
            self.value(node)

    @property
    def exhausted(self) -> bool:
        return self.built_chars > MAX_TOTAL_FOLDED_CHARS

    def value(self, node: ast.AST) -> Value | None:
        key = id(node)
        if key not in self._memo:
            self._memo[key] = None  # a node is never its own operand; this also stops any cycle
            if not self.exhausted:
                self._memo[key] = self._fold(node)
        return self._memo[key]

    def _fold(self, node: ast.AST) -> Value | None:
        try:
            value = _bounded(self._evaluate(node))
        except (TypeError, ValueError, OverflowError, IndexError, KeyError, ZeroDivisionError, MemoryError,
                RecursionError, UnicodeError):
            return None
        if isinstance(value, str | bytes) and not isinstance(node, ast.Constant):
            self.built_chars += len(value)
        return value

    def _evaluate(self, node: ast.AST) -> object:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List | ast.Tuple):
            return self._all(node.elts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = self.value(node.operand)
            if not isinstance(operand, int):
                return None
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            return None if left is None or right is None else _binary(node.op, left, right)
        if isinstance(node, ast.JoinedStr):
            pieces = [self._formatted(piece) for piece in node.values]
            return None if any(p is None for p in pieces) else "".join(pieces)  # type: ignore[arg-type]
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _all(self, nodes: list[ast.expr]) -> tuple[Value, ...] | None:
        values = [self.value(n) for n in nodes]
        return None if any(v is None for v in values) else tuple(values)  # type: ignore[arg-type]

    def _formatted(self, node: ast.AST) -> str | None:
        if not isinstance(node, ast.FormattedValue):
            value = self.value(node)
            return value if isinstance(value, str) else None
        value = self.value(node.value)
        spec = self.value(node.format_spec) if node.format_spec is not None else ""
        if value is None or not isinstance(spec, str) or node.conversion not in (-1, ord("s")):
            return None
        return _formatting(spec, lambda: format(value, spec))

    def _subscript(self, node: ast.Subscript) -> object:
        sequence = self.value(node.value)
        if not isinstance(sequence, str | bytes | tuple):
            return None
        if isinstance(node.slice, ast.Slice):
            parts = [self.value(p) if p is not None else None for p in
                     (node.slice.lower, node.slice.upper, node.slice.step)]
            if any(p is not None and not isinstance(p, int) for p in parts):
                return None
            return sequence[slice(*parts)]  # type: ignore[arg-type]
        index = self.value(node.slice)
        return sequence[index] if isinstance(index, int) else None

    def _call(self, node: ast.Call) -> object:
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            return None
        func = node.func
        if isinstance(func, ast.Name):
            return self._builtin(func.id, node.args)
        if isinstance(func, ast.Attribute):
            receiver = self.value(func.value)
            if receiver is not None:
                return self._method(receiver, func.attr, node.args)
        return None

    def _builtin(self, name: str, arguments: list[ast.expr]) -> object:
        if name == "map" and len(arguments) == 2 and isinstance(arguments[0], ast.Name):
            items = self.value(arguments[1])
            if not isinstance(items, tuple | str):
                return None
            return tuple(_apply(arguments[0].id, (item,)) for item in items)
        values = self._all(arguments)
        if values is None:
            return None
        if name == "reversed" and len(values) == 1 and isinstance(values[0], str | tuple):
            return tuple(reversed(values[0]))
        if name in ("list", "tuple") and len(values) == 1 and isinstance(values[0], str | tuple):
            return tuple(values[0])
        return _apply(name, values)

    def _method(self, receiver: Value, name: str, arguments: list[ast.expr]) -> object:
        if name == "join" and isinstance(receiver, str) and len(arguments) == 1:
            items = self._iterable(arguments[0])
            if items is None or len(receiver) * len(items) + _size(items) > MAX_FOLDED_CHARS:
                return None
            return receiver.join(items)  # type: ignore[arg-type]
        values = self._all(arguments)
        if values is None or not _small(receiver, values):
            return None
        if name == "format" and isinstance(receiver, str):
            return _formatting(receiver, lambda: receiver.format(*values))
        if name == "decode" and isinstance(receiver, bytes) and not values:
            return receiver.decode()
        if name in ("upper", "lower", "strip") and isinstance(receiver, str) and not values:
            return str(getattr(receiver, name)())
        return None

    def _iterable(self, node: ast.expr) -> tuple[Value, ...] | None:
        """The items of a literal sequence, ``map(f, ...)``, or a one-loop comprehension over a literal."""
        if isinstance(node, ast.GeneratorExp | ast.ListComp) and len(node.generators) == 1:
            loop = node.generators[0]
            if loop.ifs or loop.is_async or not isinstance(loop.target, ast.Name):
                return None
            items = self.value(loop.iter)
            if not isinstance(items, tuple | str):
                return None
            return _comprehension(node.elt, loop.target.id, items)
        value = self.value(node)
        if isinstance(value, str):
            return tuple(value)
        return value if isinstance(value, tuple) else None


def _apply(name: str, values: tuple[Value, ...]) -> object:
    """A pure builtin on folded values: ``chr``, ``str``, ``int``, ``hex``, ``format``, ``bytes``."""
    functions: dict[str, Callable[..., object]] = {"chr": chr, "str": str, "int": int, "hex": hex,
                                                   "format": format, "bytes": bytes}
    function = functions.get(name)
    if function is None or not 1 <= len(values) <= 2 or not _small(values):
        return None
    if name == "bytes" and not isinstance(values[0], tuple):
        return None
    if name == "format" and len(values) == 2:
        spec = values[1]
        return _formatting(spec, lambda: format(values[0], spec)) if isinstance(spec, str) else None
    return function(*values)


def _comprehension(element: ast.expr, variable: str,
                   items: tuple[Value, ...] | str) -> tuple[Value, ...] | None:
    """``element`` for each item, when it is ``f(variable)`` for a pure builtin ``f`` (``chr(c) for c``)."""
    if isinstance(element, ast.Name) and element.id == variable:
        return tuple(items)
    if not (isinstance(element, ast.Call) and isinstance(element.func, ast.Name) and len(element.args) == 1
            and isinstance(element.args[0], ast.Name) and element.args[0].id == variable
            and not element.keywords):
        return None
    results = [_bounded(_apply(element.func.id, (item,))) for item in items]
    return None if any(r is None for r in results) else tuple(results)  # type: ignore[arg-type]


def folded_texts(folder: Folder) -> Iterator[tuple[ast.expr, str]]:
    """``(node, text)`` for every string-building expression that folds to a string or an integer, and for
    every run of adjacent literal pieces of a concatenation or f-string that does not fold as a whole
    (``x + "765" + "4321"``, ``f"{x}{'765'}{'4321'}"``).

    A piece of a longer concatenation or f-string that folds is left to its whole (its text is inside the
    whole's), so a chain of ``n`` pieces yields one text, not ``n``."""
    for node in folder.nodes:
        if not isinstance(node, _BUILDERS) or _inside_folded_whole(node, folder):
            continue
        value = folder.value(node)
        text = _text(value) if value is not None else None
        if text is not None:
            yield node, text
        elif not _is_concatenation(folder.parents.get(id(node))):
            for run in _runs(folder, _pieces(node)):
                yield node, run


def _is_concatenation(node: ast.AST | None) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)


def _pieces(node: ast.AST) -> list[ast.expr]:
    """The operands of a ``+`` chain or the values of an f-string, in order (others have none)."""
    if isinstance(node, ast.JoinedStr):
        return [v.value if isinstance(v, ast.FormattedValue) and v.format_spec is None else v
                for v in node.values]
    pieces: list[ast.expr] = []
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        pieces.append(node.right)
        node = node.left
    return [*([node] if pieces and isinstance(node, ast.expr) else []), *reversed(pieces)]


def _runs(folder: Folder, pieces: list[ast.expr]) -> Iterator[str]:
    """The texts of maximal runs of two or more adjacent pieces that fold."""
    run: list[str] = []
    for piece in [*pieces, None]:
        value = folder.value(piece) if piece is not None else None
        text = _text(value) if value is not None else None
        if text is not None:
            run.append(text)
            continue
        if len(run) > 1:
            yield "".join(run)
        run = []


def _inside_folded_whole(node: ast.AST, folder: Folder) -> bool:
    parent = folder.parents.get(id(node))
    if isinstance(parent, ast.FormattedValue):
        parent = folder.parents.get(id(parent))
    piecewise = isinstance(parent, ast.JoinedStr) or _is_concatenation(parent)
    return piecewise and parent is not None and isinstance(folder.value(parent), str)
