"""Search benchmark: build a generated catalog, index it, time ``find_product``.

    python -m benchmarks.search --products 1000000 [--queries 500] [--seed 0] [--workdir DIR]

Queries mix the reference comparer's shapes (``ref_search.make_queries``): 1-4 words drawn from
product titles, pages 1..5, price ranges with open ends, shop ids, services and every sort. The
last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from shoppingbench.catalog.models import SERVICES, CatalogDocument, Product, document_for
from shoppingbench.catalog.store import ProductStore
from shoppingbench.search.base import FindProductQuery
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.search.index import build_index
from shoppingbench.world import generate_products

_STORE_BATCH = 20_000
_SAMPLE = 1_000


def _fill_store(store: ProductStore, products: Iterator[Product], sample: list[Product],
                rng: random.Random) -> int:
    """Write products in batches while keeping a uniform sample of them for query making."""
    count = 0
    while batch := list(itertools.islice(products, _STORE_BATCH)):
        documents: list[CatalogDocument] = []
        for product in batch:
            count += 1
            if len(sample) < _SAMPLE:
                sample.append(product)
            elif (slot := rng.randrange(count)) < _SAMPLE:
                sample[slot] = product
            documents.append(document_for(product))
        store.upsert(documents)
    return count


def make_queries(sample: list[Product], n: int, rng: random.Random) -> list[dict[str, Any]]:
    """Random tool calls shaped like the reference comparer's."""
    words = [word for product in sample for word in product.title.split()]
    shops = [product.shop_id for product in sample]
    prices = sorted(product.price for product in sample)
    queries: list[dict[str, Any]] = []
    for _ in range(n):
        query: dict[str, Any] = {"q": " ".join(rng.choice(words) for _ in range(rng.randint(1, 4))),
                                 "page": rng.choice([1, 1, 1, 2, 3, 5])}
        if rng.random() < 0.3:
            low, high = sorted(rng.sample(prices, 2))
            query["price"] = rng.choice([f"{low:g}-{high:g}", f"{low:g}-", f"-{high:g}"])
        if rng.random() < 0.1:
            query["shop_id"] = rng.choice(shops)
        if rng.random() < 0.25:
            query["service"] = ",".join(rng.sample(list(SERVICES), rng.randint(1, 2)))
        sort = rng.choice([None, "order", "priceasc", "pricedesc"])
        if sort:
            query["sort"] = sort
        queries.append(query)
    return queries


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def run(products: int, queries: int, seed: int, workdir: Path) -> dict[str, Any]:
    rng = random.Random(seed)
    sample: list[Product] = []
    started = time.perf_counter()
    with ProductStore(workdir / "products.sqlite3") as store:
        stored = _fill_store(store, iter(generate_products(products, seed)), sample, rng)
        store_s = time.perf_counter() - started
        print(f"stored {stored:,} products in {store_s:.1f}s", flush=True)
        stats = build_index(store.iter_documents(), workdir / "index", total=stored, progress=True)
        print(f"indexed {stats.documents:,} documents, {stats.terms:,} terms, {stats.postings:,} postings "
              f"in {stats.build_seconds:.1f}s; index {stats.bytes / 2**20:.1f} MiB", flush=True)
        opened = time.perf_counter()
        engine = BM25SearchEngine(workdir / "index", store)
        open_ms = (time.perf_counter() - opened) * 1000
        calls = [FindProductQuery(**query) for query in make_queries(sample, queries, rng)]
        for call in calls[:20]:
            engine.find_product(call)
        latencies = []
        hits = 0
        for call in calls:
            began = time.perf_counter()
            hits += len(engine.find_product(call))
            latencies.append((time.perf_counter() - began) * 1000)
    result = {
        "products": stats.documents, "queries": len(calls), "build_s": stats.build_seconds,
        "store_s": round(store_s, 1), "index_bytes": stats.bytes, "terms": stats.terms,
        "postings": stats.postings, "open_ms": round(open_ms, 2),
        "p50_ms": round(_percentile(latencies, 0.5), 3), "p95_ms": round(_percentile(latencies, 0.95), 3),
        "p99_ms": round(_percentile(latencies, 0.99), 3), "mean_ms": round(statistics.fmean(latencies), 3),
        "mean_hits_per_page": round(hits / len(calls), 2),
    }
    print(f"find_product: p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms, "
          f"p99 {result['p99_ms']} ms over {len(calls)} queries", flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, default=None,
                        help="keep the catalog and index here (default: a temporary directory)")
    args = parser.parse_args(argv)
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        result = run(args.products, args.queries, args.seed, args.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="search-bench-") as scratch:
            result = run(args.products, args.queries, args.seed, Path(scratch))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
