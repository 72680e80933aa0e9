"""The generator versions a validator can race with, by name: the registry behind ``ProblemGenerator.open``.

A version fixes how seeds become problems. Race days keep the version they were generated with (the
arena's schedule names which one applies from which day), so every version stays here, replayable:

- ``sbgen-1``: the first race generator (title-span names, values stated verbatim); its modules live
  unchanged in :mod:`shoppingbench.generator.sbgen1`; its key keeps the original three parts
  (version / catalog fingerprint / configuration digest), so suites cached before the upgrade still match.
- ``sbgen-2`` (the default): ShoppingBench's sampling (:mod:`~shoppingbench.generator.sampler`), the
  catalog's lexicon writer, and the shopper-words solvability check; its key adds the writer's key
  (which carries the lexicon's sha256).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Final, Protocol

from pydantic import BaseModel

from shoppingbench.generator import space as sbgen2_space
from shoppingbench.generator import suite as sbgen2_suite
from shoppingbench.generator.config import GeneratorConfig
from shoppingbench.generator.sbgen1 import config as sbgen1_config
from shoppingbench.generator.sbgen1 import space as sbgen1_space
from shoppingbench.generator.sbgen1 import suite as sbgen1_suite
from shoppingbench.generator.solvable import RewardCheck, SolvabilityCheck
from shoppingbench.generator.writer.request import GeneratedProblem, RequestWriter
from shoppingbench.problems.models import Category
from shoppingbench.problems.solvability import request_keywords
from shoppingbench.scoring.embedder import TitleEmbedder
from shoppingbench.search.catalog_view import CatalogView

DEFAULT_VERSION: Final = sbgen2_suite.VERSION


class SuiteDrawer(Protocol):
    """One suite being drawn, category by category."""

    def category(self, category: Category, wanted: int) -> list[GeneratedProblem]: ...


class _Sbgen1Drawer:
    """sbgen-1's suite draw, its problems paired with the words its check searched with (the request's
    words that occur in each target, see ``problems.solvability.request_keywords``)."""

    def __init__(self, draw: sbgen1_suite.SuiteDraw) -> None:
        self._draw = draw

    def category(self, category: Category, wanted: int) -> list[GeneratedProblem]:
        problems = self._draw.category(category, wanted)
        products = self._draw.catalog.products([t.product_id for p in problems for t in p.targets])
        return [GeneratedProblem(p, tuple(request_keywords(p.query, products[t.product_id])
                                          for t in p.targets)) for p in problems]


@dataclass(frozen=True, slots=True)
class Generation:
    """What one generator draws with besides its configuration: the catalog, its writer (``None`` for a
    version that words requests itself) and the title embedder."""

    catalog: CatalogView
    fingerprint: str
    writer: RequestWriter | None
    titles: TitleEmbedder
    """The scorer's title embedder, for the solvability check's look at products other than the target."""


def config_digest(config: BaseModel) -> str:
    return hashlib.sha256(config.model_dump_json().encode()).hexdigest()[:12]


@dataclass(frozen=True)
class GeneratorVersion:
    """One version: its configuration type and how it draws suites, counts its space and names its key."""

    name: str
    config_type: type[BaseModel]
    draw: Callable[[Generation, BaseModel, str, AbstractSet[str]], SuiteDrawer]
    space: Callable[[CatalogView, BaseModel], dict[Category, int]]
    key: Callable[[Generation, BaseModel], str]
    uses_writer: bool = False
    """Whether the version words requests with the catalog's writer (``sbgen-1`` has its own wording)."""

    def check_config(self, config: BaseModel | None) -> BaseModel:
        """``config``, or this version's defaults; a configuration of another version is refused."""
        if config is None:
            return self.config_type()
        if not isinstance(config, self.config_type):
            raise TypeError(f"generator {self.name} takes a {self.config_type.__module__}."
                            f"{self.config_type.__name__}, got {type(config).__name__}")
        return config


def _sbgen1_config(config: BaseModel) -> sbgen1_config.GeneratorConfig:
    assert isinstance(config, sbgen1_config.GeneratorConfig)  # check_config guarantees it
    return config


def _sbgen2_config(config: BaseModel) -> GeneratorConfig:
    assert isinstance(config, GeneratorConfig)  # check_config guarantees it
    return config


def _writer(g: Generation) -> RequestWriter:
    assert g.writer is not None  # ProblemGenerator gives a writer to every version that uses one
    return g.writer


def _sbgen2_draw(g: Generation, config: BaseModel, seed: str, exclude: AbstractSet[str]) -> SuiteDrawer:
    checked = _sbgen2_config(config)
    engine = g.catalog.engine
    check = SolvabilityCheck(engine, engine.get_products,
                             RewardCheck(g.titles, weighed=checked.alternatives_weighed))
    return sbgen2_suite.SuiteDraw(g.catalog, fingerprint=g.fingerprint, seed=seed, config=checked,
                                  exclude=exclude, writer=_writer(g), check=check)


SBGEN1: Final = GeneratorVersion(
    name=sbgen1_config.GENERATOR_VERSION, config_type=sbgen1_config.GeneratorConfig,
    draw=lambda g, config, seed, exclude: _Sbgen1Drawer(sbgen1_suite.SuiteDraw(
        g.catalog, fingerprint=g.fingerprint, seed=seed, config=_sbgen1_config(config), exclude=exclude)),
    space=lambda catalog, config: sbgen1_space.problem_space(catalog, _sbgen1_config(config)),
    key=lambda g, config: f"{sbgen1_config.GENERATOR_VERSION}/{g.fingerprint}/{config_digest(config)}",
)
SBGEN2: Final = GeneratorVersion(
    name=sbgen2_suite.VERSION, config_type=GeneratorConfig,
    draw=_sbgen2_draw,
    space=lambda catalog, config: sbgen2_space.problem_space(catalog, _sbgen2_config(config)),
    key=lambda g, config: f"{sbgen2_suite.VERSION}/{g.fingerprint}/{config_digest(config)}/{_writer(g).key}",
    uses_writer=True,
)
VERSIONS: Final[dict[str, GeneratorVersion]] = {v.name: v for v in (SBGEN1, SBGEN2)}
"""Every generator version, by name."""
KNOWN_VERSIONS: Final = tuple(VERSIONS)
"""The names of every generator version, oldest first."""


def get_version(name: str) -> GeneratorVersion:
    """The named version; ``ValueError`` lists the known ones otherwise."""
    try:
        return VERSIONS[name]
    except KeyError:
        raise ValueError(f"unknown generator version {name!r}; known: {', '.join(VERSIONS)}") from None
