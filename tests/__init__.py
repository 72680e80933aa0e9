"""The test suite. Its folders mirror the code: a test of ``shoppingbench/scoring/`` lives in
``tests/shoppingbench/scoring/`` (a package with a single test file keeps it in its parent's folder), the
command-line tests in ``tests/neurons/``, the attack battery in ``tests/adversarial/``. At this root: the
tests of the repository as a whole (layout, Docker files), the fixtures several folders share
(``conftest.py``) and the support modules and files the folders import (``chain_support``, ``servers``,
``sandbox_support``, ``fake_substrate``, ``fake_vllm``, ``copy_variants``, ``hostile_agents/``,
``fixtures/``). A folder's own fixtures live in its ``conftest.py``."""
