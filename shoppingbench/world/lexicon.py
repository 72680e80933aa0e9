"""The lexicon shipped for the bundled sample world, and the command that rebuilds it.

    python -m shoppingbench.world.lexicon

writes the generator writer's ``sample_world_lexicon.json`` (package data beside
:mod:`shoppingbench.generator.writer.lexicon`): the deterministic build (no model) over the first
:data:`SAMPLE_LEXICON_PRODUCTS` products of the sample world's seed-0 generator. The sample
world's vocabulary is fixed, so these products already use every kind, key and value a larger world
of any seed has; a test checks the shipped file is exactly what this command writes.
"""

from __future__ import annotations

from typing import Final

from shoppingbench.generator.writer.build import fallback_lexicon, scan
from shoppingbench.generator.writer.lexicon import SAMPLE_LEXICON_FILE, Lexicon, load_phrasing, save_lexicon
from shoppingbench.world.catalog import generate_products

SAMPLE_LEXICON_PRODUCTS: Final = 5_000


def sample_world_lexicon() -> Lexicon:
    phrasing = load_phrasing()
    return fallback_lexicon(scan(generate_products(SAMPLE_LEXICON_PRODUCTS, 0), phrasing), phrasing)


if __name__ == "__main__":
    print(save_lexicon(sample_world_lexicon(), SAMPLE_LEXICON_FILE))
