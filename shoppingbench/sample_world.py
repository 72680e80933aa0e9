"""The bundled sample world on disk: generated once, then reused (the embedded default catalog).

``ensure_sample_world`` is idempotent and crash-safe: the world's manifest and the catalog's build
record are written last, so an interrupted run is detected and redone rather than half-used.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import orjson
import structlog
from pydantic import BaseModel

from shoppingbench.catalog.build import build_catalog, catalog_exists, open_catalog
from shoppingbench.problems.loaders import load_problems
from shoppingbench.problems.models import CATEGORIES, Problem
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.world import DEFAULT_COUNTS, LLMSettings, write_world
from shoppingbench.world.writer import DOCUMENTS_FILE, GENERATOR, MANIFEST_FILE, PROBLEMS_DIR

log = structlog.get_logger(__name__)

CATALOG_DIR = "catalog"


class SampleWorld(BaseModel):
    world_dir: Path
    catalog_dir: Path
    problems_dir: Path

    def problems(self) -> list[Problem]:
        """The whole bank, category by category, in file order."""
        return [p for category in CATEGORIES
                for p in load_problems(self.problems_dir / f"{category}.jsonl", category)]

    def suite(self, per_category: int) -> list[Problem]:
        """The first ``per_category`` problems of each category: a deterministic demo suite."""
        return [p for category in CATEGORIES
                for p in load_problems(self.problems_dir / f"{category}.jsonl", category)[:per_category]]


def _world_is_complete(world_dir: Path, products: int, seed: int) -> bool:
    manifest = world_dir / MANIFEST_FILE
    if not manifest.exists():
        return False
    recorded = orjson.loads(manifest.read_bytes())
    return bool(recorded.get("generator") == GENERATOR and recorded.get("seed") == seed
                and recorded.get("products") == products)


def ensure_sample_world(world_dir: Path, *, products: int, seed: int,
                        counts: Mapping[str, int] = DEFAULT_COUNTS, llm: LLMSettings | None = None,
                        progress: bool = True) -> SampleWorld:
    """Generate the world and build its catalog unless a complete one is already there."""
    catalog_dir = world_dir / CATALOG_DIR
    world = SampleWorld(world_dir=world_dir, catalog_dir=catalog_dir, problems_dir=world_dir / PROBLEMS_DIR)
    if _world_is_complete(world_dir, products, seed) and catalog_exists(catalog_dir):
        log.info("sample_world_reused", world_dir=str(world_dir))
        return world

    def engine_over(documents: Path) -> BM25SearchEngine:
        # Problems are checked for solvability against the very catalog the demo will serve.
        build_catalog(documents, catalog_dir, strict=True, progress=progress)
        return open_catalog(catalog_dir)

    log.info("sample_world_generating", world_dir=str(world_dir), products=products, seed=seed)
    manifest = write_world(world_dir, products=products, seed=seed, counts=counts, engine_factory=engine_over,
                           llm=llm)
    if not catalog_exists(catalog_dir):
        build_catalog(world_dir / DOCUMENTS_FILE, catalog_dir, strict=True, progress=progress)
    log.info("sample_world_ready", world_dir=str(world_dir), problems=manifest.problems)
    return world
