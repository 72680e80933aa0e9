"""The validity benchmark's stages: twins of real problems, the agents' runs, the sampler's shape.

A **twin** keeps a real problem's reward targets and voucher and replaces its query with what the
generator's writer says for them (``ItemRequest(product from the catalog, target from the reward)``),
its draws keyed by :data:`TWIN_KEY`, the category and the problem's index, so a run is reproducible.
:class:`ReplayedRequests` answers each draft with its real request, to see what a problem bank's rewrite
checks keep of wording as free as GPT-4.1's.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Final

from benchmarks import validity_parser
from benchmarks.validity.metrics import wording_figures
from shoppingbench.agents import scripted_baseline
from shoppingbench.catalog.models import Product
from shoppingbench.evaluation import AgentMain, collect, iter_in_process, new_run_id
from shoppingbench.generator import ProblemGenerator
from shoppingbench.generator.writer import writer_for_catalog
from shoppingbench.generator.writer.request import ItemRequest, RequestWriter
from shoppingbench.generator.writer.rewrite import CheckedRewriter, RewriteTask
from shoppingbench.grading.grader import Grader
from shoppingbench.problems.draws import HashDraws
from shoppingbench.problems.models import CATEGORIES, Category, Problem
from shoppingbench.sample_world import ensure_sample_world
from shoppingbench.scoring import PRODUCTION_STRICT, CachedEmbedder, MiniLMEmbedder
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.settings import HarnessSettings
from shoppingbench.tools.server import create_app as create_tool_app
from shoppingbench.tools.serving import running_server

TWIN_KEY: Final = "validity-benchmark-twin-v1"
SHAPE_SEED: Final = "validity-benchmark-shape-v1"
AGENTS: Final = ("baseline", "parser")
PARSER_INTERFACE: Final = ("agent_main", "parse_query")
Say = Callable[[str], None]


def load_parser(path: Path | None) -> ModuleType:
    """The hostile parser the benchmark runs: the agent file at ``path`` (default:
    ``benchmarks/validity_parser.py``), which must define ``agent_main`` and ``parse_query`` as that one
    does; :class:`ValueError` naming what it lacks."""
    if path is None:
        return validity_parser
    spec = importlib.util.spec_from_file_location(f"validity_parser_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass of the file looks its module up while it is defined
    spec.loader.exec_module(module)
    missing = [name for name in PARSER_INTERFACE if not callable(getattr(module, name, None))]
    if missing:
        raise ValueError(f"{path} is not a parser like benchmarks/validity_parser.py: it has no "
                         f"{', '.join(missing)}")
    return module


def twin_draws(category: Category, index: int, draw: int = 0) -> HashDraws:
    """The writer's draws for the twin of a category's ``index``-th real problem. Draw 0 is the twin every
    run measures; each further draw is another wording of the same targets, to see how far the figures
    move with the writer's choices (``--twin-draws``)."""
    return HashDraws(TWIN_KEY, category, str(index), *((f"draw-{draw}",) if draw else ()))


def twin_of(problem: Problem, index: int, products: Mapping[str, Product], writer: RequestWriter,
            draw: int = 0) -> Problem:
    """``problem`` with the writer's query for its own targets and voucher (see the module docstring)."""
    missing = [t.product_id for t in problem.targets if t.product_id not in products]
    if missing:
        raise ValueError(f"problem {problem.id}: targets {missing} are not in the catalog")
    items = [ItemRequest(product=products[t.product_id], target=t) for t in problem.targets]
    draws = twin_draws(problem.category, index, draw)
    written = writer.write(problem.category, items, problem.voucher, draws)
    return Problem(category=problem.category, query=written.query, targets=problem.targets,
                   voucher=problem.voucher)


def twins(real: Mapping[Category, list[Problem]], engine: BM25SearchEngine, catalog_dir: Path,
          writer: RequestWriter | None = None, draw: int = 0,
          start: int = 0) -> dict[Category, list[Problem]]:
    """The twin of every real problem, per category, in the same order, by ``writer`` (default: the
    catalog's lexicon writer; a :class:`~shoppingbench.generator.writer.rewrite.CheckedRewriter` over it
    measures a problem bank's wording), with the writer's ``draw`` (:func:`twin_draws`); the problems are
    each category's from index ``start`` on (a half run words its twins as a whole run does)."""
    writer = writer or writer_for_catalog(catalog_dir)
    ids = [t.product_id for problems in real.values() for p in problems for t in p.targets]
    products = engine.get_products(ids)
    return {category: [twin_of(p, start + i, products, writer, draw) for i, p in enumerate(problems)]
            for category, problems in real.items()}


class ReplayedRequests:
    """A rewrite source (:class:`~shoppingbench.generator.writer.rewrite.RewriteSource`) that answers each
    twin's draft with the real problem's own request, so the twin is the real request wherever a bank's
    rewrite checks would keep it as a rewrite of the draft, and the draft elsewhere.

    The real requests are what GPT-4.1 wrote from these items' requirements with ShoppingBench's prompt,
    as a bank's model writes, so the figures are what the checks leave of a bank GPT-4.1 writes; a bank
    written by another model is measured with that model (``--llm-url``).
    """

    name = "replay-real"

    def __init__(self, real_by_draft: Mapping[tuple[Category, str], str]) -> None:
        self.real_by_draft = real_by_draft

    def rewrite(self, task: RewriteTask, refused: str | None) -> tuple[str | None, str]:
        real = self.real_by_draft.get((task.category, task.draft))
        return (None, "no real request has this draft") if real is None else (real, "")


def replay_rewriter(real: Mapping[Category, list[Problem]], engine: BM25SearchEngine,
                    catalog_dir: Path, draws: int = 1, start: int = 0) -> CheckedRewriter:
    """The lexicon writer's drafts (of each of the first ``draws`` draws), each rewritten to its real
    problem's request where the checks allow."""
    real_by_draft = {(category, draft.query.partition("\n\n")[0]): problem.query.partition("\n\n")[0]
                     for draw in range(draws)
                     for category, drafts in twins(real, engine, catalog_dir, draw=draw, start=start).items()
                     for problem, draft in zip(real[category], drafts, strict=True)}
    return CheckedRewriter(writer_for_catalog(catalog_dir), ReplayedRequests(real_by_draft))


def parser_split_share(problems: Sequence[Problem], parser: ModuleType = validity_parser) -> float:
    """The share of ``problems`` whose query the hostile parser splits into as many items as the reward has
    targets: how often its copy of the writer's grammar finds the item boundaries (docs/validity.md)."""
    if not problems:
        return 0.0
    right = sum(1 for p in problems if len(parser.parse_query(p.query)[0]) == len(p.targets))
    return round(right / len(problems), 4)


def outcomes_by_category(agent: AgentMain, suite: list[Problem], grader: Grader,
                         workers: int) -> dict[Category, list[bool]]:
    """The agent's success on each problem of the suite, per category in suite order (crashes fail)."""
    run_id = new_run_id()
    result = collect(iter_in_process(agent, suite, grader, run_id=run_id, workers=workers), suite,
                     run_id=run_id, progress=False)
    by_id = {a.problem_id: a.score.success for a in result.attempts}
    return {category: [bool(by_id.get(p.id)) for p in suite if p.category == category]
            for category in CATEGORIES if any(p.category == category for p in suite)}


def run_agents(sides: Mapping[str, Mapping[Category, list[Problem]]], engine: BM25SearchEngine,
               settings: HarnessSettings, workers: int, say: Say,
               parser: ModuleType = validity_parser) -> dict[Category, dict[str, list[bool]]]:
    """``{category: {"<agent>/<side>": [success per problem]}}`` for every agent on every side (``real``,
    ``twin``, ...), the problems in each side's order (a twin is at its real problem's place)."""
    grader = Grader(engine.get_products, CachedEmbedder(MiniLMEmbedder(), settings.embedding_cache),
                    PRODUCTION_STRICT)
    outcomes: dict[Category, dict[str, list[bool]]] = {c: {} for c in CATEGORIES}
    agents: dict[str, ModuleType] = {"baseline": scripted_baseline, "parser": parser}
    with running_server(create_tool_app(engine)) as url:
        os.environ["SANDBOX_PROXY_URL"] = url  # how an agent file finds its tools (ProxyClient)
        for name, module in agents.items():
            for side, problems in sides.items():
                suite = [p for c in CATEGORIES for p in problems[c]]
                say(f"agents: {name} on {len(suite)} {side} problems")
                for category, won in outcomes_by_category(module.agent_main, suite, grader, workers).items():
                    outcomes[category][f"{name}/{side}"] = won
    return outcomes


def sampler_shape(root: Path, world_products: int, per_category: int, say: Say) -> dict[str, object]:
    """Constraints per item and items per problem of a suite generated over the sample world."""
    if per_category == 0:
        return {}
    say(f"sampler: a {per_category}-per-category suite over the {world_products}-product sample world")
    world = ensure_sample_world(root / "benchmarks" / f"validity-world-{world_products}",
                                products=world_products, seed=0, progress=False)
    with ProblemGenerator.open(world.catalog_dir) as generator:
        suite = generator.generate(SHAPE_SEED, dict.fromkeys(CATEGORIES, per_category))
    shape: dict[str, object] = {"generator": generator.key, "world_products": world_products}
    for category in CATEGORIES:
        figures = wording_figures([p for p in suite if p.category == category])
        shape[category] = {"problems": figures.problems, "constraints_per_item": figures.constraints_per_item,
                           "items_per_problem": figures.items_per_problem}
    return shape
