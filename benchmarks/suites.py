"""Race-suite generation: time, solvability and overlap of generated suites over an N-product catalog.

    python -m benchmarks.suites --products 1000000 [--pairs 3] [--space-products 50000] [--days 365]
                                [--cache DIR] [--version sbgen-2]

The catalog is the sample world's generator at ``--products`` (no problem bank), built once under
``--cache`` and reused by later runs. One 60-problem suite (20 per category) is generated and every
problem re-checked with the plain paged ``find_product`` tool (no ranking shortcut): its shopper words
and stated filters must list the target or a product the scorer accepts on pages 1..5, shop-scoped for
a shop's other items, and the basket must succeed (``--version sbgen-1`` measures the replayed
first generator, whose words are the query's words that occur in the target).
Then ``--pairs`` pairs of suites from different seeds are generated and their shared target products
counted. The last line printed is one JSON object: ``products``, ``suite_gen_s`` (generate + verify one
suite, the first: with the title model's one-off load if the check needs it),
``suite_generate_warm_s_max`` (the slowest later suite's generation), ``solvable_share``,
``shared_targets_mean``, ``space_per_category`` and, when
``--space-products`` is given and differs, ``space_per_category_<N/1000>k`` for a second catalog; then
the figures of ``--days`` days of the validator's own draws over the same catalog
(``benchmarks.suite_year``: ``days_simulated``, ``empty_draws``, ``short_draws``,
``burnt_cluster_repeats``, ``held_out_compromised``, ...).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson

from arena.suites import FixedSource
from benchmarks.sample_catalogs import DEFAULT_CACHE, catalog_dir
from benchmarks.suite_year import simulate_year
from shoppingbench.generator import DEFAULT_VERSION, VERSIONS, ProblemGenerator
from shoppingbench.generator.solvable import RewardCheck, SolvabilityCheck, as_sampled
from shoppingbench.generator.writer.request import GeneratedProblem
from shoppingbench.logs import configure_logging
from shoppingbench.problems.models import CATEGORIES, Category, Problem
from shoppingbench.scoring.embedder import CachedEmbedder, MiniLMEmbedder
from shoppingbench.search.base import MAX_PAGE, PAGE_SIZE, FindProductQuery, SearchHit
from shoppingbench.search.engine import BM25SearchEngine

PER_CATEGORY: dict[Category, int] = {"product": 20, "shop": 20, "voucher": 20}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class _Paged:
    """Only the ``find_product`` tool, page by page, as an agent calls it (no generator shortcut)."""

    def __init__(self, engine: BM25SearchEngine) -> None:
        self._engine = engine

    def find_product(self, query: FindProductQuery) -> list[SearchHit]:
        return self._engine.find_product(query)


def independently_solvable(engine: BM25SearchEngine, generated: GeneratedProblem,
                           rewards: RewardCheck) -> bool:
    """The problem re-checked from its shopper words with the plain paged ``find_product`` tool and the
    scorer's rules (pages 1..5, shop-scoped for a shop's other items, the basket re-scored)."""
    sampled = as_sampled(generated.problem, engine.get_products)
    check = SolvabilityCheck(_Paged(engine), engine.get_products, rewards)
    return sampled is not None and check.solvable(sampled, generated.search_terms)


def _targets(suite: Sequence[Problem]) -> set[str]:
    return {t.product_id for p in suite for t in p.targets}


def suite_figures(generator: ProblemGenerator, pairs: int) -> dict[str, Any]:
    """Time, verify and compare generated suites."""
    figures: dict[str, Any] = {}
    # Every listed look-alike weighed (the generator weighs fewer): never stricter than the generator.
    rewards = RewardCheck(CachedEmbedder(MiniLMEmbedder()), weighed=PAGE_SIZE * MAX_PAGE)
    started = time.perf_counter()
    checked = generator.generate_checked("bench-0", PER_CATEGORY)
    suite = [g.problem for g in checked]
    generated = time.perf_counter()
    solvable = [independently_solvable(generator.engine, g, rewards) for g in checked]
    verified = time.perf_counter()
    figures["suite_gen_s"] = round(verified - started, 2)
    figures["suite_generate_only_s"] = round(generated - started, 2)
    figures["suite_verify_s"] = round(verified - generated, 2)
    figures["suite_problems"] = {c: sum(p.category == c for p in suite) for c in CATEGORIES}
    figures["suite_targets"] = len(_targets(suite))
    _say(f"suite: {len(suite)} problems {figures['suite_problems']} in {figures['suite_generate_only_s']}s, "
         f"verified in {figures['suite_verify_s']}s")

    shared: list[int] = []
    warm: list[float] = []
    for pair in range(pairs):
        began = time.perf_counter()
        a = generator.generate_checked(f"bench-pair-{pair}-a", PER_CATEGORY)
        warm.append(time.perf_counter() - began)
        b = generator.generate_checked(f"bench-pair-{pair}-b", PER_CATEGORY)
        shared.append(len(_targets([g.problem for g in a]) & _targets([g.problem for g in b])))
        solvable += [independently_solvable(generator.engine, g, rewards) for g in (*a, *b)]
        _say(f"pair {pair + 1}/{pairs}: {shared[-1]} shared target products")
    figures["solvable_share"] = round(sum(solvable) / len(solvable), 4) if solvable else None
    figures["problems_checked"] = len(solvable)
    figures["shared_targets_mean"] = round(statistics.fmean(shared), 3) if shared else None
    # The first suite pays one-off costs (the title model's load, cold caches); later ones do not.
    figures["suite_generate_warm_s_max"] = round(max(warm), 2) if warm else None
    return figures


def space_of(directory: Path, version: str) -> dict[Category, int]:
    with ProblemGenerator.open(directory, version=version) as generator:
        return generator.space()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--products", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=0, help="the sample world's seed (the catalog)")
    parser.add_argument("--pairs", type=int, default=3, help="pairs of suites compared for shared targets")
    parser.add_argument("--space-products", type=int, default=50_000,
                        help="also count the space of a catalog of this size (0: skip)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where built catalogs are kept")
    parser.add_argument("--days", type=int, default=365, help="days of suite draws to simulate (0: skip)")
    parser.add_argument("--version", choices=sorted(VERSIONS), default=DEFAULT_VERSION,
                        help="the generator version to measure")
    args = parser.parse_args(argv)
    configure_logging("console", "warning")

    figures: dict[str, Any] = {"generator_version": args.version, "cpus": os.cpu_count()}
    directory = catalog_dir(args.products, args.seed, args.cache)
    started = time.perf_counter()
    with ProblemGenerator.open(directory, version=args.version) as generator:
        figures["open_s"] = round(time.perf_counter() - started, 2)
        figures["products"] = len(generator.engine)
        figures["fingerprint"] = generator.fingerprint[:16]
        figures |= suite_figures(generator, args.pairs)
        began = time.perf_counter()
        figures["space_per_category"] = generator.space()
        figures["space_s"] = round(time.perf_counter() - began, 2)
        if args.days:
            year = simulate_year(FixedSource(generator), days=args.days, per_category=PER_CATEGORY["product"])
            figures |= {f"year_{k}" if k.endswith("_s") else k: v for k, v in asdict(year).items()}
    if args.space_products and args.space_products != args.products:
        other = catalog_dir(args.space_products, args.seed, args.cache)
        figures[f"space_per_category_{args.space_products // 1000}k"] = space_of(other, args.version)
    figures["load_average_1m"] = round(os.getloadavg()[0], 2)
    print(orjson.dumps(figures).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
