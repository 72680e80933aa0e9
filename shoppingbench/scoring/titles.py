"""Title similarities for the pairings that need them, in as few embedding calls as possible."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from shoppingbench.catalog.models import Product
from shoppingbench.problems.models import Problem
from shoppingbench.scoring.embedder import TitleEmbedder, Vectors, normalise


def _reference_vectors(problem: Problem, embedder: TitleEmbedder, reference_model: str) -> dict[str, Vectors]:
    """The problem's precomputed target-title vectors, if they come from the embedder's own model.

    Vectors of another model live in another space (the reference arena ships 1024-d Qwen3 vectors;
    MiniLM is 384-d), so they are only usable under the same model name. Zero or non-finite
    vectors are dropped and get computed instead.
    """
    if not problem.reward_title_embeddings or embedder.name != reference_model:
        return {}
    usable: dict[str, Vectors] = {}
    for title, raw in problem.reward_title_embeddings.items():
        vector = np.asarray(raw, dtype=np.float32)
        if vector.ndim == 1 and vector.size and np.isfinite(vector).all() and np.any(vector):
            usable[title] = normalise(vector)
    return usable


def title_similarities(problem: Problem, matched: Sequence[Product | None], embedder: TitleEmbedder,
                       reference_model: str) -> list[list[float]]:
    """Cosine similarity of each paired product's title to each of its target's titles.

    Empty for a target whose product is missing, is the target itself (gt: no embedding needed, as
    in the arena) or that states no title.
    """
    out: list[list[float]] = [[] for _ in problem.targets]
    jobs = [(i, product) for i, (target, product) in enumerate(zip(problem.targets, matched, strict=True))
            if product is not None and product.product_id != target.product_id and target.title]
    if not jobs:
        return out
    reference = _reference_vectors(problem, embedder, reference_model)
    wanted = [t for i, _ in jobs for t in problem.targets[i].title]
    texts = list(dict.fromkeys([p.title for _, p in jobs] + [t for t in wanted if t not in reference]))
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    width = next(iter(vectors.values())).shape[-1]
    # A precomputed vector of another width cannot be compared: compute that title after all.
    misfits = list(dict.fromkeys(t for t in wanted if t in reference and reference[t].shape[-1] != width))
    if misfits:
        vectors.update(zip(misfits, embedder.embed(misfits), strict=True))
    for i, product in jobs:
        own = vectors[product.title]
        out[i] = [float(np.dot(own, vectors[t] if t in vectors else reference[t]))
                  for t in problem.targets[i].title]
    return out
