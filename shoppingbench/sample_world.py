"""The bundled sample world on disk: generated once, then reused (the embedded default catalog).

``ensure_sample_world`` is idempotent and crash-safe: the world's manifest is removed before any file
changes and written last (atomically), as is the catalog's build record, and a manifest is trusted only
if it matches every argument and the sha256 of every file, so an interrupted run is redone rather than
half-used. ``configured_sample_world`` is the one the settings describe: the default catalog of every
command that is given none.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import structlog
from pydantic import BaseModel, ValidationError

from shoppingbench.catalog_dir import build_catalog, catalog_exists, open_catalog
from shoppingbench.problems.loaders import load_problems
from shoppingbench.problems.models import CATEGORIES, Problem
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.settings import HarnessSettings, LLMSettings
from shoppingbench.world import DEFAULT_COUNTS, write_world
from shoppingbench.world.writer import DOCUMENTS_FILE, GENERATOR, PROBLEMS_DIR, sha256_file
from shoppingbench.world_manifest import MANIFEST_FILE, WorldManifest

log = structlog.get_logger(__name__)

CATALOG_DIR = "catalog"


class SampleWorld(BaseModel):
    world_dir: Path
    catalog_dir: Path
    problems_dir: Path

    def suite(self, per_category: int) -> list[Problem]:
        """The first ``per_category`` problems of each category: a deterministic demo suite."""
        return [p for category in CATEGORIES
                for p in load_problems(self.problems_dir / f"{category}.jsonl", category)[:per_category]]


def _world_is_complete(world_dir: Path, *, products: int, seed: int, counts: Mapping[str, int],
                       paraphrased_by: str | None) -> bool:
    """Whether ``world_dir`` holds exactly the world these arguments generate, every file intact.

    A missing, truncated or foreign manifest means incomplete (regenerate), never an error.
    """
    try:
        manifest = WorldManifest.model_validate_json((world_dir / MANIFEST_FILE).read_bytes())
    except (OSError, ValidationError):
        return False
    expected_files = {DOCUMENTS_FILE, *(f"{PROBLEMS_DIR}/{category}.jsonl" for category in CATEGORIES)}
    if (manifest.generator, manifest.seed, manifest.products, manifest.requested, manifest.paraphrased_by,
            set(manifest.files)) != (GENERATOR, seed, products,
                                     {category: counts.get(category, 0) for category in CATEGORIES},
                                     paraphrased_by, expected_files):
        return False
    # ~50 MB to hash: cheap next to a regeneration, and it catches a file cut short or edited by hand.
    try:
        return all(sha256_file(world_dir / name) == digest for name, digest in manifest.files.items())
    except OSError:
        return False


def ensure_sample_world(world_dir: Path, *, products: int, seed: int,
                        counts: Mapping[str, int] = DEFAULT_COUNTS, llm: LLMSettings | None = None,
                        progress: bool = True) -> SampleWorld:
    """Generate the world and build its catalog unless a complete one is already there."""
    catalog_dir = world_dir / CATALOG_DIR
    world = SampleWorld(world_dir=world_dir, catalog_dir=catalog_dir, problems_dir=world_dir / PROBLEMS_DIR)
    paraphrased_by = llm.model if llm is not None else None
    if (_world_is_complete(world_dir, products=products, seed=seed, counts=counts,
                           paraphrased_by=paraphrased_by) and catalog_exists(catalog_dir)):
        log.info("sample_world_reused", world_dir=str(world_dir))
        return world

    opened: list[BM25SearchEngine] = []

    def engine_over(documents: Path) -> BM25SearchEngine:
        # Problems are checked for solvability against the very catalog the demo will serve. write_world
        # always calls this, so the catalog is built whenever write_world returns.
        build_catalog(documents, catalog_dir, strict=True, progress=progress)
        opened.append(open_catalog(catalog_dir))
        return opened[-1]

    log.info("sample_world_generating", world_dir=str(world_dir), products=products, seed=seed)
    try:
        manifest = write_world(world_dir, products=products, seed=seed, counts=counts,
                               engine_factory=engine_over, llm=llm)
    finally:
        for engine in opened:
            engine.close()
    log.info("sample_world_ready", world_dir=str(world_dir), problems=manifest.problems)
    return world


def configured_sample_world(settings: HarnessSettings, *, progress: bool) -> SampleWorld:
    """The sample world of ``settings`` (its directory under the data root, size, seed and rewording
    model), generated on first use."""
    return ensure_sample_world(settings.world_dir(), products=settings.world_products,
                               seed=settings.world_seed, llm=settings.llm(), progress=progress)
