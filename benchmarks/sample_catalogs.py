"""The sample-world catalogs the suite benchmarks build once under a cache directory and then reuse."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from shoppingbench.sample_world import ensure_sample_world

DEFAULT_CACHE = Path.home() / ".cache" / "shopping-arena" / "bench-worlds"


def catalog_dir(products: int, seed: int, cache: Path) -> Path:
    """The sample-world catalog of ``products`` products (built on first use, then reused)."""
    started = time.perf_counter()
    world = ensure_sample_world(cache / f"sample-{products}-seed{seed}", products=products, seed=seed,
                                counts={}, progress=True)
    print(f"catalog of {products:,} products ready in {time.perf_counter() - started:.1f}s: "
          f"{world.catalog_dir}", file=sys.stderr, flush=True)
    return world.catalog_dir
