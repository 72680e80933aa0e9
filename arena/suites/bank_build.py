"""Writing a problem bank (the subnet owner's work, offline; :mod:`arena.suites.bank` says what a bank is).

The generator's sampler and solvability check make the problems over the pinned catalog, from a private
random seed (so nobody can generate them again), and a model writes each request from its items'
requirements the way ShoppingBench's writer does
(:class:`~shoppingbench.generator.writer.rewrite.CheckedRewriter`). With several models, each problem's
writer is drawn from the private seed, and the bank records which wrote each request (``writers``), so a
style one model has is a share of the bank, not all of it. Without a model the lexicon writer's wording
stands: still unknown before the race, but as easy to parse as a generated suite.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from arena.suites.bank import ProblemBank
from arena.suites.bank_journal import BankJournal
from arena.suites.public import targets_of
from shoppingbench.generator import ProblemGenerator
from shoppingbench.generator.catalog import CatalogDir, opened_catalog_dir
from shoppingbench.generator.writer.propose import ModelSettings
from shoppingbench.generator.writer.rewrite import (
    DEFAULT_TEMPERATURE,
    CheckedRewriter,
    RewriteReport,
    model_rewriter,
)
from shoppingbench.problems.models import CATEGORIES, Category, Problem


@dataclass(frozen=True)
class BankBuild:
    """A written bank, how many of its slots an earlier, interrupted build had written, and, when a model
    wrote its requests, how this build's went."""

    bank: ProblemBank
    resumed: int
    rewrites: RewriteReport | None


def _problems(generator: ProblemGenerator, journal: BankJournal, per_category: Mapping[Category, int],
              written_by: Mapping[str, str], progress: bool) -> list[Problem]:
    """The problems one slot at a time (a model takes seconds a request), each journaled as it is written,
    no target twice in the bank; the slots the journal holds are not written again."""
    slots = [(category, index) for category in CATEGORIES for index in range(per_category.get(category, 0))]
    columns = (TextColumn("[bold]writing the bank"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, disable=not progress, transient=True) as bar:
        task = bar.add_task("bank", total=len(slots), completed=len(journal.written))
        for category, index in slots:
            if (category, index) in journal.written:
                continue
            written = [p for p in journal.written.values() if p is not None]
            made = generator.generate(f"{journal.header.seed}/{category}/{index}", {category: 1},
                                      exclude_products=targets_of(written))
            problem = made[0] if made else None
            journal.record(category, index, problem, written_by.get(problem.query) if problem else None)
            bar.advance(task)
    return [p for slot in slots if (p := journal.written.get(slot)) is not None]


def build_bank(catalog: CatalogDir | Path, per_category: Mapping[Category, int], *,
               models: Sequence[ModelSettings], journal: Path, temperature: float = DEFAULT_TEMPERATURE,
               seed: str | None = None, progress: bool = False) -> BankBuild:
    """``per_category`` solvable problems over ``catalog`` (a directory, opened and closed here, or a
    :class:`CatalogDir` of the caller's), worded by ``models`` (each problem's drawn from the seed; none:
    the lexicon writer's drafts stand) sampled at ``temperature``, each journaled to ``journal`` as it is
    written (a build interrupted before resumes from there; the caller deletes the journal once the bank
    is stored).

    ``seed`` is for tests only: a bank's problems must come from a seed nobody else knows.
    """
    with opened_catalog_dir(catalog) as opened:
        base = opened.writer
        writer = model_rewriter(base, models, temperature) if models else base
        written_by = writer.written_by if isinstance(writer, CheckedRewriter) else {}
        fingerprint = opened.fingerprint
        record = BankJournal.open(journal, catalog_fingerprint=fingerprint, per_category=per_category,
                                  seed=seed)
        resumed = len(record.written)
        try:
            generator = ProblemGenerator(opened.engine, fingerprint=fingerprint, writer=writer,
                                         embedder=opened.title_embedder)
            problems = _problems(generator, record, per_category, written_by, progress)
        finally:
            record.close()
    if not problems:
        raise ValueError(f"the catalog in {opened.path} gave no problem for {dict(per_category)}")
    writers = {problem.id: record.writers[slot] for slot, problem in record.written.items()
               if problem is not None and slot in record.writers}
    bank = ProblemBank(catalog_fingerprint=fingerprint, problems=tuple(problems), writers=writers or None)
    return BankBuild(bank, resumed, writer.report if isinstance(writer, CheckedRewriter) else None)
