"""The ShoppingBench tools as a TRL ``environment_factory`` environment, run in process over a catalog.

``GRPOTrainer`` makes one :class:`ShoppingEnvironment` per rollout, calls ``reset(**row)`` with the
dataset row (its ``problem`` cell is the problem as JSON) and exposes every public method but ``reset``
as a tool: it renders their schemas into the prompt (from the type hints and Google-style docstrings) and
runs the model's ``<tool_call>``\\ s against them. A tool's return value is the tool message; an exception
becomes ``{"error": ...}`` and counts in TRL's ``tools/failure_frequency``.

The search tools are the very functions the tool server answers with (``shoppingbench.tools.semantics``,
the reference server's reading of sloppy arguments: an unknown page gives [], a sort, service or price it
cannot read is ignored; only invalid Unicode, an overlong query and more than ``MAX_VIEW_IDS`` ids are
refused), so a model meets the same trajectory here as behind the proxy. Every call that reaches a tool is
recorded in the :class:`Episode` the rewards read, refused ones included (a refused ``recommend_product``
still replaces the answer, as the scorer reads the last call whatever it holds); after ``terminate`` the
dialogue is over and further calls are refused without being recorded.

The engine and the grader are opened once per run and shared by every instance (:class:`ShoppingContext`).
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from shoppingbench.grading.grader import Grader
from shoppingbench.problems.models import Problem
from shoppingbench.search.base import SearchEngine, SortOrder, split_product_ids
from shoppingbench.tools import semantics
from shoppingbench.tools.semantics import RawArgument, ToolRefusal
from trajectories.training.data.tools import TOOL_SCHEMAS
from trajectories.training.stages.rewards import Episode, EpisodeCall

F = TypeVar("F", bound=Callable[..., Any])

_SCHEMAS: Mapping[str, Mapping[str, Any]] = {tool["function"]["name"]: tool["function"]
                                              for tool in TOOL_SCHEMAS}


class ToolError(ValueError):
    """A call the tool refuses; the message is what the model reads."""


@dataclass(frozen=True)
class ShoppingContext:
    """What every environment of a run shares: the catalog's search engine and the one scorer."""

    engine: SearchEngine
    grader: Grader


def _describe(parameter: Mapping[str, Any]) -> str:
    enum = parameter.get("enum")
    description = str(parameter.get("description") or "One of: " + ", ".join(map(str, enum or [])))
    # transformers turns a trailing "(choices: [...])" into the parameter's enum, whatever the type hint
    return f"{description} (choices: {json.dumps(enum)})" if enum else description


def _documented(method: F) -> F:
    """Write the method's docstring from its entry in ``TOOL_SCHEMAS`` (description, one ``Args`` line per
    parameter), so the schema TRL derives says what the SFT data's schemas say; a parameter the entry does
    not list fails here, at import."""
    schema = _SCHEMAS[method.__name__]
    properties = schema["parameters"]["properties"]
    names = [name for name in inspect.signature(method).parameters if name != "self"]
    if set(names) != set(properties):
        raise TypeError(f"{method.__name__} takes {names}, TOOL_SCHEMAS lists {sorted(properties)}")
    lines = [f"    {name}: {_describe(properties[name])}" for name in names]
    method.__doc__ = "\n".join([str(schema["description"]), "", "Args:", *lines])
    return method


def _requested_ids(product_ids: Any) -> list[str]:
    """The ids of a ``recommend_product`` argument (string or list) as the scorer reads an answer."""
    try:
        return split_product_ids(semantics.as_text(product_ids) or "")
    except ToolRefusal as exc:
        raise ToolError(str(exc)) from None


def _json(items: Sequence[BaseModel]) -> str:
    return json.dumps([item.model_dump(mode="json") for item in items], ensure_ascii=False)


class ShoppingEnvironment:
    """One rollout's tools and episode. Public methods other than ``reset`` are the model's tools."""

    def __init__(self, context: ShoppingContext) -> None:
        self._context = context
        self._problem: Problem | None = None
        self._episode = Episode()

    def reset(self, **row: Any) -> None:
        """Start an episode on the row's ``problem`` (JSON); the prompt is the row's, so nothing is added."""
        problem = row.get("problem")
        if not isinstance(problem, str):
            raise ValueError("the dataset row has no `problem` column (the problem as JSON)")
        self._problem = Problem.model_validate_json(problem)
        self._episode = Episode()

    @property
    def problem(self) -> Problem:
        if self._problem is None:
            raise RuntimeError("reset() has not been called: no problem yet")
        return self._problem

    @property
    def episode(self) -> Episode:
        return self._episode

    @property
    def grader(self) -> Grader:
        return self._context.grader

    def _ensure_open(self) -> None:
        if self._episode.terminated:
            raise ToolError("the dialogue has ended (terminate was called): no more tool calls")

    def _record(self, name: str, arguments: dict[str, Any], returned_ids: tuple[str, ...] = ()) -> None:
        self._ensure_open()
        self._episode.calls.append(EpisodeCall(name, arguments, returned_ids))

    @_documented
    def find_product(self, q: str, page: int = 1, shop_id: str | None = None, price: str | None = None,
                     sort: SortOrder | None = None, service: str | None = None) -> str:
        given: dict[str, RawArgument] = {"q": q, "page": page, "shop_id": shop_id, "price": price,
                                         "sort": sort, "service": service}
        arguments = {name: value for name, value in given.items() if value is not None}
        self._ensure_open()  # before searching: a call after terminate is refused, not run
        try:
            hits = semantics.find_product(self._context.engine, **arguments)
        except ToolRefusal as exc:
            self._record("find_product", arguments)
            raise ToolError(str(exc)) from None
        self._record("find_product", arguments, tuple(hit.product_id for hit in hits))
        return _json(hits)

    @_documented
    def view_product_information(self, product_ids: str) -> str:
        self._record("view_product_information", {"product_ids": product_ids})
        try:
            return _json(semantics.view_product_information(self._context.engine, product_ids))
        except ToolRefusal as exc:
            raise ToolError(str(exc)) from None

    @_documented
    def recommend_product(self, product_ids: str) -> str:
        self._record("recommend_product", {"product_ids": product_ids})
        self._episode.recommended = []  # the last call is the answer, even a refused one
        self._episode.recommended = _requested_ids(product_ids)
        return f"Recommended to the user: {', '.join(self._episode.recommended)}"

    @_documented
    def terminate(self, status: str) -> str:
        self._record("terminate", {"status": status})
        self._episode.terminated = True
        return f"The dialogue has ended with status: {status}"


def environment_factory(context: ShoppingContext) -> Callable[[], ShoppingEnvironment]:
    """The zero-argument factory ``GRPOTrainer(environment_factory=...)`` calls once per rollout slot."""
    return functools.partial(ShoppingEnvironment, context)
