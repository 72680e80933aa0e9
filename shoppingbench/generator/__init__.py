"""Race-time problem generation over any catalog (SPEC 5): a seed in, a solvable suite out.

``ProblemGenerator.open(catalog_dir).generate(seed, {"product": 20, "shop": 20, "voucher": 20})``
draws targets uniformly from the catalog and words requests from their real fields only, so it works
on the bundled sample world and on an imported ShoppingBench catalog alike.
"""

from shoppingbench.generator.config import GENERATOR_VERSION, KNOWN_VERSIONS, GeneratorConfig
from shoppingbench.generator.fingerprint import catalog_fingerprint
from shoppingbench.generator.generator import ProblemGenerator

__all__ = ["GENERATOR_VERSION", "KNOWN_VERSIONS", "GeneratorConfig", "ProblemGenerator",
           "catalog_fingerprint"]
