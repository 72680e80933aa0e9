"""Generator version "sbgen-1": the first race generator (title-span names, verbatim values), kept for replay.

Race days generated before a subnet upgraded its generator replay with this code, so its modules are
the original ones unchanged (only their import paths moved here). New race days use the default
version (see :mod:`shoppingbench.generator.versions`).
"""
