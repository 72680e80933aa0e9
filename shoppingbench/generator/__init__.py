"""Race-time problem generation over any catalog (SPEC 5): a seed in, a solvable suite out.

``ProblemGenerator.open(catalog_dir).generate(seed, {"product": 20, "shop": 20, "voucher": 20})``
samples targets and stated constraints as ShoppingBench does, words them with the catalog's lexicon
writer and keeps only problems a shopper's words can solve; ``version="sbgen-1"`` replays the first
generator for race days before an upgrade (see :mod:`shoppingbench.generator.versions`).
"""

from shoppingbench.generator.catalog import CatalogDir
from shoppingbench.generator.config import GeneratorConfig
from shoppingbench.generator.fingerprint import catalog_fingerprint
from shoppingbench.generator.generator import ProblemGenerator
from shoppingbench.generator.versions import DEFAULT_VERSION, KNOWN_VERSIONS, VERSIONS, get_version

__all__ = ["DEFAULT_VERSION", "KNOWN_VERSIONS", "VERSIONS", "CatalogDir", "GeneratorConfig",
           "ProblemGenerator", "catalog_fingerprint", "get_version"]
