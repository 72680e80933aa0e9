"""Embedders: the cache, precomputed problem vectors and the real bundled MiniLM model."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from shoppingbench.problems.loaders import load_problems
from shoppingbench.scoring import (
    MINILM_MODEL_NAME,
    REFERENCE_EMBEDDING_MODEL,
    CachedEmbedder,
    MiniLMEmbedder,
    TitleEmbedder,
    score_attempt,
)
from tests.shoppingbench.scoring.test_scoring_support import (
    FakeEmbedder,
    answered,
    at_cosine,
    lookup,
    product,
    product_problem,
    target,
)


def test_cache_embeds_each_text_once_in_memory() -> None:
    inner = FakeEmbedder()
    cached = CachedEmbedder(inner)
    first = cached.embed(["a", "b", "a"])
    second = cached.embed(["b", "c"])
    assert inner.calls == [["a", "b"], ["c"]]
    assert np.array_equal(first[1], second[0]) and np.array_equal(first[0], first[2])
    assert cached.name == "fake" and isinstance(cached, TitleEmbedder)


def test_cache_file_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "titles.sqlite"
    with CachedEmbedder(FakeEmbedder(), path) as cached:
        stored = cached.embed(["red bottle", "blue bottle"])
    fresh = FakeEmbedder()
    with CachedEmbedder(fresh, path) as reopened:
        again = reopened.embed(["blue bottle", "red bottle"])
    assert fresh.calls == []
    assert np.array_equal(again, stored[::-1])


def test_cache_file_is_keyed_by_model(tmp_path: Path) -> None:
    path = tmp_path / "titles.sqlite"
    with CachedEmbedder(FakeEmbedder(name="model-a"), path) as cached:
        cached.embed(["red bottle"])
    other = FakeEmbedder(name="model-b")
    with CachedEmbedder(other, path) as reopened:
        reopened.embed(["red bottle"])
    assert other.calls == [["red bottle"]]


def test_memory_cache_is_bounded() -> None:
    inner = FakeEmbedder()
    cached = CachedEmbedder(inner, max_memory_items=2)
    cached.embed(["a", "b", "c"])
    cached.embed(["a"])
    assert inner.calls[-1] == ["a"]


def problem_with_reference(vector: list[float]):
    return product_problem(
        target("t", title=["Target title"]), reward_title_embeddings={"Target title": vector}
    )


def test_precomputed_vectors_are_used_for_their_own_model() -> None:
    embedder = FakeEmbedder({"Offered": [1.0, 0.0]}, name=REFERENCE_EMBEDDING_MODEL, dim=4)
    problem = problem_with_reference([*at_cosine(0.8), 0.0, 0.0])
    score = score_attempt(problem, answered("p"), lookup(product("p", title="Offered")), embedder)
    assert "Target title" not in embedder.embedded
    assert score.targets[0].title_similarities == [pytest.approx(0.8, abs=1e-6)]


def test_precomputed_vectors_of_another_model_are_ignored() -> None:
    embedder = FakeEmbedder({"Offered": [1.0, 0.0], "Target title": at_cosine(0.3)}, dim=4)
    problem = problem_with_reference([*at_cosine(0.8), 0.0, 0.0])
    score = score_attempt(problem, answered("p"), lookup(product("p", title="Offered")), embedder)
    assert "Target title" in embedder.embedded
    assert score.targets[0].title_similarities == [pytest.approx(0.3, abs=1e-6)]


@pytest.mark.parametrize("vector", [[0.1] * 1024, [0.0, 0.0, 0.0, 0.0], [float("nan"), 1.0, 0.0, 0.0]])
def test_unusable_precomputed_vectors_fall_back_to_computing(vector: list[float]) -> None:
    embedder = FakeEmbedder(
        {"Offered": [1.0, 0.0], "Target title": at_cosine(0.75)}, name=REFERENCE_EMBEDDING_MODEL, dim=4
    )
    score = score_attempt(
        problem_with_reference(vector), answered("p"), lookup(product("p", title="Offered")), embedder
    )
    assert "Target title" in embedder.embedded
    assert score.targets[0].title_similarities == [pytest.approx(0.75, abs=1e-6)] and score.success


def test_reference_suite_vectors_never_crash_a_smaller_model(shared_samples: Path) -> None:
    # The reference suite's vectors are 1024-d; pretend our 8-d model carries the reference name.
    problem = load_problems(shared_samples / "oro_suite_sample.json")[0]
    title = problem.targets[0].title[0]
    embedder = FakeEmbedder(name=REFERENCE_EMBEDDING_MODEL, dim=8)
    score = score_attempt(problem, answered("p"), lookup(product("p", title=title, price=200.0)), embedder)
    assert score.targets[0].title.hits == 1 and title in embedder.embedded


def test_importing_the_scorer_does_not_load_torch() -> None:
    code = "import sys, shoppingbench.scoring; print({'torch', 'sentence_transformers'} & set(sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "set()"


def test_a_damaged_cache_row_is_a_miss_and_gets_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "titles.sqlite"
    with CachedEmbedder(FakeEmbedder(), path) as cached:
        stored = cached.embed(["red bottle", "blue bottle"])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE embeddings SET vector = ? WHERE text = 'red bottle'", (b"\x00\x01\x02",))
    fresh = FakeEmbedder()
    with CachedEmbedder(fresh, path) as reopened:
        again = reopened.embed(["red bottle", "blue bottle"])
    assert fresh.calls == [["red bottle"]] and np.array_equal(again, stored)
    rewritten = FakeEmbedder()
    with CachedEmbedder(rewritten, path) as third:
        third.embed(["red bottle"])
    assert rewritten.calls == []


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.mark.slow
def test_minilm_vectors_are_normalised_float32(minilm: MiniLMEmbedder) -> None:
    vectors = minilm.embed(
        ["Stainless Steel Vacuum Insulated Water Bottle 750ml", "Kids Plastic Water Bottle"]
    )
    assert minilm.name == MINILM_MODEL_NAME
    assert vectors.dtype == np.float32 and vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)


@pytest.mark.slow
def test_minilm_separates_near_duplicates_from_unrelated_titles(minilm: MiniLMEmbedder) -> None:
    problem = product_problem(
        target("t", title=["Stainless Steel Vacuum Insulated Water Bottle 750ml Leak Proof"])
    )
    near = product("near", title="Stainless steel insulated water bottle 750 ml, leak-proof")
    far = product("far", title="Heavy Duty Pushcart Solid Rubber Wheel 12 Inches")
    catalog = lookup(near, far)
    close = score_attempt(problem, answered("near"), catalog, minilm).targets[0].title_similarities[0]
    apart = score_attempt(problem, answered("far"), catalog, minilm).targets[0].title_similarities[0]
    assert close > 0.7 > apart
    assert apart < 0.5


@pytest.mark.slow
def test_minilm_vector_of_a_title_does_not_depend_on_its_batch(minilm: MiniLMEmbedder) -> None:
    title = "Stainless Steel Vacuum Insulated Water Bottle 750ml"
    alone = minilm.embed([title])[0]
    with_long_neighbour = minilm.embed([title, " ".join(["Heavy Duty Pushcart Rubber Wheel"] * 12)])[0]
    assert np.array_equal(alone, with_long_neighbour)


# Titles whose vectors moved between 1 and 2 torch threads before the embedder pinned its thread count.
THREAD_SENSITIVE_TITLES = ["TRAINING CUP 120ML WIDE NECK GLASS AVENT", "Avent Anti Colic Training Cup",
                           "Skin1004 Sunscreen - Lightweight Non Greasy", "Skin1004 Non Greasy Sunscreen",
                           "Limited Minimalist Chronograph Watch"]


@pytest.mark.slow
def test_minilm_vectors_do_not_depend_on_the_number_of_torch_threads(minilm: MiniLMEmbedder) -> None:
    import torch

    previous = torch.get_num_threads()
    vectors = {}
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            vectors[threads] = minilm.embed(THREAD_SENSITIVE_TITLES)
            assert torch.get_num_threads() == threads  # the process's own setting is restored
    finally:
        torch.set_num_threads(previous)
    assert np.array_equal(vectors[1], vectors[2])
    similarities = {threads: v[0::2][:2] @ v[1::2][:2].T for threads, v in vectors.items()}
    assert np.array_equal(similarities[1] >= 0.7, similarities[2] >= 0.7)
