"""Writing a problem bank (the subnet owner's work, offline; :mod:`arena.suites.bank` says what a bank is).

The generator's sampler and solvability check make the problems over the pinned catalog, from a private
random seed (so nobody can generate them again), and a model writes each request from its items'
requirements the way ShoppingBench's writer does
(:class:`~shoppingbench.generator.writer.rewrite.CheckedRewriter`). Without a model the lexicon writer's
wording stands: still unknown before the race, but as easy to parse as a generated suite.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from arena.suites.bank import ProblemBank
from arena.suites.public import targets_of
from shoppingbench.catalog_dir import open_catalog
from shoppingbench.generator import ProblemGenerator, catalog_fingerprint
from shoppingbench.generator.generator import catalog_title_embedder
from shoppingbench.generator.writer import writer_for_catalog
from shoppingbench.generator.writer.propose import ModelSettings
from shoppingbench.generator.writer.rewrite import CheckedRewriter, RewriteReport, model_rewriter
from shoppingbench.problems.models import CATEGORIES, Category, Problem


@dataclass(frozen=True)
class BankBuild:
    """A written bank and, when a model wrote its requests, how that went."""

    bank: ProblemBank
    rewrites: RewriteReport | None


def _problems(generator: ProblemGenerator, seed: str, per_category: Mapping[Category, int],
              progress: bool) -> list[Problem]:
    """The problems one at a time (a model takes seconds a request), no target twice in the bank."""
    problems: list[Problem] = []
    columns = (TextColumn("[bold]writing the bank"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, disable=not progress, transient=True) as bar:
        task = bar.add_task("bank", total=sum(per_category.values()))
        for category in CATEGORIES:
            for index in range(per_category.get(category, 0)):
                problems += generator.generate(f"{seed}/{category}/{index}", {category: 1},
                                               exclude_products=targets_of(problems))
                bar.advance(task)
    return problems


def build_bank(catalog_dir: Path, per_category: Mapping[Category, int], *, model: ModelSettings | None,
               seed: str | None = None, progress: bool = False) -> BankBuild:
    """``per_category`` solvable problems over the catalog in ``catalog_dir``, worded by ``model``.

    ``seed`` is for tests only: a bank's problems must come from a seed nobody else knows.
    """
    base = writer_for_catalog(catalog_dir)
    writer = base if model is None else model_rewriter(base, model)
    fingerprint = catalog_fingerprint(catalog_dir)
    engine = open_catalog(catalog_dir)
    try:
        generator = ProblemGenerator(engine, fingerprint=fingerprint, writer=writer,
                                     embedder=catalog_title_embedder(catalog_dir))
        problems = _problems(generator, seed or f"bank/{secrets.token_hex(32)}", per_category, progress)
    finally:
        engine.close()
    if not problems:
        raise ValueError(f"the catalog in {catalog_dir} gave no problem for {dict(per_category)}")
    return BankBuild(ProblemBank(catalog_fingerprint=fingerprint, problems=tuple(problems)),
                     writer.report if isinstance(writer, CheckedRewriter) else None)
