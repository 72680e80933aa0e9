"""Write a sample world to disk in the ShoppingBench file formats, byte-identical for the same arguments.

Layout of ``out_dir``::

    documents.jsonl.gz        CatalogDocument lines (gzip with mtime 0 and no file name, so bytes are stable)
    problems/product.jsonl    Problem.to_shoppingbench() lines, one file per category
    problems/shop.jsonl
    problems/voucher.jsonl
    manifest.json             seed, sizes and the sha256 of every file above
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path

import orjson

from shoppingbench.catalog.models import Product, document_for
from shoppingbench.files import write_file_atomically
from shoppingbench.problems.models import CATEGORIES
from shoppingbench.settings import LLMSettings
from shoppingbench.world.catalog import generate_products
from shoppingbench.world.llm import paraphrase_queries
from shoppingbench.world.problems import DEFAULT_COUNTS, ProductFinder, generate_problems
from shoppingbench.world_manifest import MANIFEST_FILE, WorldManifest

DOCUMENTS_FILE = "documents.jsonl.gz"
PROBLEMS_DIR = "problems"
GENERATOR = "shoppingbench.world/2"
"""Bumped whenever the same arguments would produce different bytes."""

EngineFactory = Callable[[Path], ProductFinder]
"""Builds a search engine over the written ``documents.jsonl.gz`` (e.g. import + index it)."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_documents(path: Path, n: int, seed: int) -> list[Product]:
    products: list[Product] = []
    with path.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
        batch: list[bytes] = []
        for product in generate_products(n, seed):
            products.append(product)
            batch.append(orjson.dumps(document_for(product).model_dump()))
            if len(batch) == 2_000:
                out.write(b"\n".join(batch) + b"\n")
                batch.clear()
        if batch:
            out.write(b"\n".join(batch) + b"\n")
    return products


def write_world(out_dir: Path, *, products: int = 50_000, seed: int = 0,
                counts: Mapping[str, int] = DEFAULT_COUNTS,
                engine_factory: EngineFactory, llm: LLMSettings | None = None) -> WorldManifest:
    """Generate the catalog and its problem bank into ``out_dir`` and return the manifest.

    ``engine_factory`` builds the search engine over the documents just written; every problem is
    checked solvable against it (``shoppingbench.sample_world`` imports and indexes them as a catalog).
    With ``llm`` the template queries are reworded by that model wherever the rewrite keeps every fact.
    """
    out_dir = Path(out_dir)
    (out_dir / PROBLEMS_DIR).mkdir(parents=True, exist_ok=True)
    # The manifest marks the world complete: drop the old one before any file changes, so a run cut
    # short is never taken for the previous (or the requested) world.
    (out_dir / MANIFEST_FILE).unlink(missing_ok=True)
    documents = out_dir / DOCUMENTS_FILE
    catalog = _write_documents(documents, products, seed)
    engine = engine_factory(documents)
    problems = generate_problems(catalog, counts=counts, seed=seed, engine=engine)
    if llm is not None:
        problems = paraphrase_queries(problems, llm, catalog)
    written = {DOCUMENTS_FILE: documents}
    made: dict[str, int] = {}
    for category in CATEGORIES:
        lines = [orjson.dumps(p.to_shoppingbench()) for p in problems if p.category == category]
        path = out_dir / PROBLEMS_DIR / f"{category}.jsonl"
        path.write_bytes(b"".join(line + b"\n" for line in lines))
        written[f"{PROBLEMS_DIR}/{category}.jsonl"] = path
        made[category] = len(lines)
    manifest = WorldManifest(
        generator=GENERATOR, seed=seed, products=len(catalog),
        requested={category: counts.get(category, 0) for category in CATEGORIES}, problems=made,
        files={name: sha256_file(path) for name, path in written.items()},
        paraphrased_by=llm.model if llm is not None else None,
    )
    write_file_atomically(out_dir / MANIFEST_FILE, orjson.dumps(
        manifest.model_dump(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    return manifest
