"""Scoring throughput: synthetic attempts against synthetic problems, with warm cached embeddings.

    python -m benchmarks.scoring [--problems 5000] [--embedder minilm|hash]

Everything is built in memory here (catalog, problems, dialogues) so the figure depends on the
scorer alone. The embedding cache is warmed by one full scoring pass, then a second pass is timed:
that is the validator's steady state, where catalog titles repeat across miners. The last line
printed is one JSON object with ``problems_per_s``, ``problems`` and ``seconds``.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson

from shoppingbench.catalog.models import Product
from shoppingbench.dialogue import ToolCall, create_dialogue_step
from shoppingbench.problems.models import CATEGORIES, Problem
from shoppingbench.scoring import (
    CachedEmbedder,
    MiniLMEmbedder,
    TitleEmbedder,
    aggregate,
    normalise,
    score_attempt,
)
from shoppingbench.scoring.embedder import Vectors

ADJECTIVES = ["stainless", "waterproof", "leather", "kids", "heavy duty", "portable", "wireless", "cotton"]
NOUNS = ["water bottle", "belt", "rubber wheel", "toner", "nail remover", "sneakers", "notebook",
         "air freshener"]
COLOURS = ["black", "silver", "blue", "red", "brown"]
SIZES = ["s", "m", "l", "xl", "750ml"]
SERVICES = ["official", "freeShipping", "COD", "flashsale"]


class HashEmbedder:
    """Model-free stand-in (``--embedder hash``): a hash-seeded direction per text."""

    name = "benchmark-hash"

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows = [np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little"))
                .normal(size=384) for t in texts]
        return normalise(np.array(rows, dtype=np.float32).reshape(len(texts), 384))


def build_catalog(rng: random.Random, size: int) -> list[Product]:
    products = []
    for i in range(size):
        adjective, noun = rng.choice(ADJECTIVES), rng.choice(NOUNS)
        options = {str(k + 1): {"color_family": rng.choice(COLOURS), "size": rng.choice(SIZES)}
                   for k in range(rng.randint(0, 4))}
        products.append(Product(
            product_id=str(900_000_000 + i), shop_id=str(70_000 + rng.randrange(25)),
            title=f"{adjective.title()} {noun.title()} model {i % 37}", price=round(rng.uniform(20, 900), 2),
            sku_options=options, attributes={"material": [rng.choice(["steel", "plastic", "cotton"])]},
            service=rng.sample(SERVICES, rng.randint(0, 3))))
    return products


def reward_for(rng: random.Random, product: Product) -> dict[str, Any]:
    reward: dict[str, Any] = {"product_id": product.product_id, "title": [product.title]}
    if product.sku_options:
        reward["sku_options"] = [dict(rng.choice(list(product.sku_options.values())))]
    reward["attributes"] = [{"material": product.attributes["material"]}]
    if product.service:
        reward["service"] = [rng.choice(product.service)]
    reward["price"] = [rng.choice([{"less than": [None, product.price + 50]},
                                   {"greater than": [max(product.price - 50, 0), None]},
                                   {"between": [max(product.price - 80, 0), product.price + 80]}])]
    return reward


def build_problem(rng: random.Random, index: int, catalog: list[Product]) -> Problem:
    category = CATEGORIES[index % 3]
    if category == "product":
        reward = reward_for(rng, rng.choice(catalog))
        return Problem.from_shoppingbench({"query": f"request {index}", "reward": reward})
    picks = rng.sample(catalog, rng.randint(2, 4))
    raw: dict[str, Any] = {"query": f"request {index}", "reward": [reward_for(rng, p) for p in picks]}
    if category == "voucher":
        total = sum(p.price for p in picks)
        raw["voucher"] = {"voucher_type": rng.choice(["platform", "shop"]),
                          "threshold": round(total * 0.8, 2), "discount_type": "percentage", "discount": 0.2,
                          "cap": 150.0, "face_value": None, "budget": round(total * 0.9, 2)}
    return Problem.from_shoppingbench(raw, category)


def build_dialogue(rng: random.Random, problem: Problem, catalog: list[Product]) -> list[dict[str, Any]]:
    # Half the answers are right, the rest near misses, strangers or unknown ids: every scorer path runs.
    ids = [t.product_id if rng.random() < 0.5 else rng.choice([rng.choice(catalog).product_id, "404"])
           for t in problem.targets]
    calls = [ToolCall(name="find_product", parameters={"q": problem.query}),
             ToolCall(name="view_product_information", parameters={"product_ids": ",".join(ids)}),
             ToolCall(name="recommend_product", parameters={"product_ids": ",".join(ids)}),
             ToolCall(name="terminate", parameters={"status": "success"})]
    return [create_dialogue_step(n, problem.query, think=f"step {n}", tool_calls=[call], timestamp=1.7e9 + n)
            for n, call in enumerate(calls)]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=5000)
    parser.add_argument("--catalog", type=int, default=400, help="distinct products (and titles)")
    parser.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    catalog = build_catalog(rng, args.catalog)
    by_id = {p.product_id: p for p in catalog}
    problems = [build_problem(rng, i, catalog) for i in range(args.problems)]
    dialogues = [build_dialogue(rng, p, catalog) for p in problems]

    def products(ids: list[str]) -> dict[str, Product]:
        return {i: by_id[i] for i in ids if i in by_id}

    inner: TitleEmbedder = MiniLMEmbedder() if args.embedder == "minilm" else HashEmbedder()
    embedder = CachedEmbedder(inner)
    started = time.perf_counter()
    # Every target title is a catalog title: one batched call fills the cache.
    embedder.embed(sorted({p.title for p in catalog}))
    print(f"cache warmed with {args.catalog} titles by {inner.name} in {time.perf_counter() - started:.2f} s",
          file=sys.stderr)

    started = time.perf_counter()
    scores = [score_attempt(problem, steps, products, embedder)
              for problem, steps in zip(problems, dialogues, strict=True)]
    seconds = time.perf_counter() - started
    suite = aggregate(scores, problems)
    print(orjson.dumps({"problems_per_s": round(len(problems) / seconds, 1), "problems": len(problems),
                        "seconds": round(seconds, 3), "embedder": inner.name,
                        "success_rate": round(suite.success_rate, 4)}).decode())


if __name__ == "__main__":
    main()
