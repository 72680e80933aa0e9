"""The default generator ("sbgen-2") over real catalogs: the 3k sample world and an imported
ShoppingBench-format catalog, with the catalog's writer, the real search engine and the project's scorer.

The sampler's statistics are in ``test_sampler.py``; "sbgen-1" (replay) in ``test_generator_sbgen1.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from shoppingbench.catalog_dir import build_catalog, open_catalog
from shoppingbench.generator import (
    DEFAULT_VERSION,
    KNOWN_VERSIONS,
    GeneratorConfig,
    ProblemGenerator,
    catalog_fingerprint,
)
from shoppingbench.generator.sbgen1.config import GeneratorConfig as Sbgen1Config
from shoppingbench.generator.solvable import RewardCheck, SolvabilityCheck, as_sampled
from shoppingbench.generator.writer import writer_for_catalog
from shoppingbench.generator.writer.request import (
    GeneratedProblem,
    ItemRequest,
    RequestWriter,
    WrittenRequest,
)
from shoppingbench.problems.models import CATEGORIES, Category, Problem, Voucher
from shoppingbench.problems.terms import Draws
from shoppingbench.sample_world import SampleWorld
from shoppingbench.scoring import PRODUCTION_STRICT, score_attempt
from shoppingbench.scoring.embedder import CachedEmbedder, MiniLMEmbedder, Vectors
from shoppingbench.search.base import FindProductQuery, SearchHit
from shoppingbench.search.engine import BM25SearchEngine
from tests.shoppingbench.generator.test_generator_sbgen1 import imported_products, write_documents
from tests.shoppingbench.scoring.test_scoring_support import answered

COUNTS: dict[Category, int] = {"product": 8, "shop": 6, "voucher": 6}
SEED = "race-2026-12-01"


@pytest.fixture(scope="module")
def imported_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("imported-sbgen2")
    build_catalog(write_documents(root / "docs.jsonl", imported_products(400, seed=5)), root / "catalog",
                  progress=False)
    return root / "catalog"


@contextmanager
def _opened(directory: Path, small_world: SampleWorld) -> Iterator[ProblemGenerator]:
    """The default generator over ``directory``, worded by the sample world's writer (an imported test
    catalog ships no lexicon of its own; the writer's lexicon tests cover building one)."""
    engine = open_catalog(directory)
    try:
        yield ProblemGenerator(engine, fingerprint=catalog_fingerprint(directory),
                               writer=writer_for_catalog(small_world.catalog_dir))
    finally:
        engine.close()


@pytest.fixture(scope="module")
def generators(small_world: SampleWorld, imported_dir: Path) -> Iterator[list[ProblemGenerator]]:
    with ProblemGenerator.open(small_world.catalog_dir) as world, \
            _opened(imported_dir, small_world) as imported:
        yield [world, imported]


@pytest.fixture(scope="module")
def checked(generators: list[ProblemGenerator]) -> list[tuple[ProblemGenerator, GeneratedProblem]]:
    return [(g, p) for g in generators for p in g.generate_checked(SEED, COUNTS)]


class _Paged:
    """The ``find_product`` tool alone, page by page as agents call it."""

    def __init__(self, engine: BM25SearchEngine) -> None:
        self.engine = engine

    def find_product(self, query: FindProductQuery) -> list[SearchHit]:
        return self.engine.find_product(query)


class _NoTitlesNeeded:
    """A title embedder for answers that are the targets themselves: the scorer must never call it."""

    name = "unused"

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise AssertionError(f"a gt match needs no title embedding, asked for {texts}")


class _Reworded:
    """The catalog's writer with every query and phrase changed (another lexicon, in effect)."""

    def __init__(self, inner: RequestWriter, *, search_terms: str | None = None, same_phrase: bool = False):
        self.inner = inner
        self.search_terms = search_terms
        self.same_phrase = same_phrase

    @property
    def key(self) -> str:
        return f"reworded-{self.inner.key}"

    def write(self, category: Category, items: Sequence[ItemRequest], voucher: Voucher | None,
              rng: Draws) -> WrittenRequest:
        written = self.inner.write(category, items, voucher, rng)
        words = [replace(w, phrase="the same thing" if self.same_phrase else f"{w.phrase}!",
                         search_terms=self.search_terms or w.search_terms) for w in written.items]
        return WrittenRequest(query=f"Hello there. {written.query}", items=tuple(words))


def _writer(generator: ProblemGenerator) -> RequestWriter:
    assert generator.writer is not None
    return generator.writer


def _with_writer(generator: ProblemGenerator, writer: RequestWriter) -> ProblemGenerator:
    return ProblemGenerator(generator.engine, fingerprint=generator.fingerprint, writer=writer)


def _bytes(problems: Sequence[Problem]) -> list[str]:
    return [p.model_dump_json() for p in problems]


# --- versions and keys ------------------------------------------------------------------------------


def test_the_default_version_is_sbgen2_and_its_key_names_everything_a_suite_depends_on(
        generators: list[ProblemGenerator], small_world: SampleWorld) -> None:
    world = generators[0]
    assert DEFAULT_VERSION == "sbgen-2" and world.version.name == "sbgen-2"
    assert KNOWN_VERSIONS == ("sbgen-1", "sbgen-2")
    version, fingerprint, config, writer = world.key.split("/")
    assert (version, fingerprint) == ("sbgen-2", world.fingerprint)
    assert writer == writer_for_catalog(small_world.catalog_dir).key and len(config) == 12
    with ProblemGenerator.open(small_world.catalog_dir, GeneratorConfig(multiplier=2)) as other:
        assert other.key.split("/")[2] != config
    with ProblemGenerator.open(small_world.catalog_dir, version="sbgen-1") as old:
        assert old.key.split("/")[0] == "sbgen-1" and len(old.key.split("/")) == 3


def test_an_unknown_version_a_foreign_configuration_or_a_missing_writer_is_refused(
        small_world: SampleWorld, generators: list[ProblemGenerator]) -> None:
    with pytest.raises(ValueError, match="unknown generator version 'sbgen-9'; known: sbgen-1, sbgen-2"):
        ProblemGenerator.open(small_world.catalog_dir, version="sbgen-9")
    with pytest.raises(TypeError, match="generator sbgen-2 takes a"):
        ProblemGenerator.open(small_world.catalog_dir, Sbgen1Config())
    with pytest.raises(ValueError, match="generator sbgen-2 words requests with a writer"):
        ProblemGenerator(generators[0].engine, fingerprint=generators[0].fingerprint)
    replay = ProblemGenerator(generators[0].engine, fingerprint=generators[0].fingerprint, version="sbgen-1")
    assert replay.writer is None and replay.generate(SEED, {"product": 1})  # sbgen-1 words its own


# --- determinism -----------------------------------------------------------------------------------


def test_same_inputs_give_the_same_bytes_from_a_fresh_generator(
        small_world: SampleWorld, imported_dir: Path,
        checked: list[tuple[ProblemGenerator, GeneratedProblem]], generators: list[ProblemGenerator]) -> None:
    world, imported = generators
    with ProblemGenerator.open(small_world.catalog_dir) as again:
        assert _bytes(again.generate(SEED, COUNTS)) == _bytes([p.problem for g, p in checked if g is world])
    with _opened(imported_dir, small_world) as again:
        before = [p.problem for g, p in checked if g is imported]
        assert _bytes(again.generate(SEED, COUNTS)) == _bytes(before)
    other = generators[0].generate("race-2026-12-02", COUNTS)
    assert {p.id for p in other}.isdisjoint(p.problem.id for _, p in checked)


def test_a_new_writer_rewords_but_never_redraws(generators: list[ProblemGenerator]) -> None:
    world = generators[0]
    reworded = _with_writer(world, _Reworded(_writer(world)))
    before, after = world.generate(SEED, COUNTS), reworded.generate(SEED, COUNTS)
    assert [(p.targets, p.voucher) for p in after] == [(p.targets, p.voucher) for p in before]
    assert all(a.query == f"Hello there. {b.query}" for a, b in zip(after, before, strict=True))
    assert reworded.key != world.key and reworded.key.endswith(f"/reworded-{_writer(world).key}")


# --- shape and solvability -----------------------------------------------------------------------------


def test_counts_are_met_in_order_without_repeats_or_excluded_targets(
        checked: list[tuple[ProblemGenerator, GeneratedProblem]], generators: list[ProblemGenerator]) -> None:
    for generator in generators:
        suite = [p.problem for g, p in checked if g is generator]
        assert [p.category for p in suite] == [c for c in CATEGORIES for _ in range(COUNTS[c])]
        targets = [t.product_id for p in suite for t in p.targets]
        assert len(targets) == len(set(targets))
        fresh = generator.generate(SEED, COUNTS, exclude_products=frozenset(targets))
        assert len(fresh) == len(suite)
        assert set(targets).isdisjoint(t.product_id for p in fresh for t in p.targets)


def test_targets_state_what_the_sampler_drew_and_score_success(
        checked: list[tuple[ProblemGenerator, GeneratedProblem]]) -> None:
    for generator, generated in checked:
        problem = generated.problem
        products = generator.engine.get_products([t.product_id for t in problem.targets])
        assert all(t.title == [products[t.product_id].title] for t in problem.targets)
        shops = {p.shop_id for p in products.values()}
        if problem.category == "shop":
            assert 2 <= len(problem.targets) <= 4 and len(shops) == 1
        if problem.category == "voucher":
            assert problem.voucher is not None and 1 <= len(problem.targets) <= 4
            assert not any(t.price for t in problem.targets)
            assert problem.voucher.voucher_type == "platform" or len(shops) == 1
        steps = answered(",".join(t.product_id for t in problem.targets))
        score = score_attempt(problem, steps, generator.engine.get_products, _NoTitlesNeeded(),
                              PRODUCTION_STRICT)
        assert score.success and score.gt == 1, problem.query


def test_every_problem_is_solvable_from_its_shopper_words_with_the_paged_tool(
        checked: list[tuple[ProblemGenerator, GeneratedProblem]]) -> None:
    rewards = RewardCheck(CachedEmbedder(MiniLMEmbedder()))
    for generator, generated in checked:
        engine = generator.engine
        sampled = as_sampled(generated.problem, engine.get_products)
        assert sampled is not None and len(generated.search_terms) == len(sampled.items)
        check = SolvabilityCheck(_Paged(engine), engine.get_products, rewards)
        assert check.solvable(sampled, generated.search_terms), generated.problem.query


def test_a_wording_nobody_can_search_with_or_items_that_read_alike_are_redrawn(
        generators: list[ProblemGenerator]) -> None:
    world = generators[0]
    lost = _with_writer(world, _Reworded(_writer(world), search_terms="qqqzzzunfindable"))
    assert lost.generate(SEED, {"product": 2, "shop": 1}) == []
    alike = _with_writer(world, _Reworded(_writer(world), same_phrase=True))
    suite = alike.generate(SEED, {"product": 2, "shop": 2})
    assert [p.category for p in suite] == ["product", "product"]  # every shop problem has 2+ items


def test_the_space_is_far_larger_than_a_suite(generators: list[ProblemGenerator]) -> None:
    for generator in generators:
        space = generator.space()
        assert set(space) == set(CATEGORIES) and generator.space() == space
        assert all(count > 1000 for count in space.values())
    assert generators[0].space()["product"] > 10**4
