"""Builders shared by the scoring tests: products, problems, dialogue steps and a controllable embedder."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from shoppingbench.catalog.models import Product
from shoppingbench.dialogue import ToolCall, create_dialogue_step
from shoppingbench.problems.models import Problem
from shoppingbench.scoring import ProductLookup, normalise
from shoppingbench.scoring.embedder import Vectors


class FakeEmbedder:
    """Deterministic vectors: explicit ones for chosen texts, else a hash-seeded random direction.

    In 512 dimensions two random directions have cosine ~N(0, 0.044), far below any threshold, so
    different texts never match by accident while equal texts always do.
    """

    def __init__(
        self, vectors: Mapping[str, Sequence[float]] | None = None, *, name: str = "fake", dim: int = 512
    ) -> None:
        self._name = name
        self.dim = dim
        self.vectors = {t: self._pad(v) for t, v in (vectors or {}).items()}
        self.calls: list[list[str]] = []

    @property
    def name(self) -> str:
        return self._name

    def _pad(self, vector: Sequence[float]) -> np.ndarray:
        padded = np.zeros(self.dim, dtype=np.float32)
        padded[: len(vector)] = vector
        return padded

    def _random(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).normal(size=self.dim).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        rows = [self.vectors[t] if t in self.vectors else self._random(t) for t in texts]
        return normalise(np.array(rows, dtype=np.float32).reshape(len(texts), self.dim))

    @property
    def embedded(self) -> list[str]:
        return [t for call in self.calls for t in call]


def at_cosine(cos: float) -> list[float]:
    """A 2-d unit vector at the given cosine to ``[1, 0]``."""
    return [cos, float(np.sqrt(1 - cos * cos))]


def product(
    pid: str,
    *,
    shop: str = "s1",
    price: float = 100.0,
    title: str | None = None,
    sku: dict[str, dict[str, str]] | None = None,
    attrs: dict[str, list[str]] | None = None,
    service: list[str] | None = None,
) -> Product:
    return Product(
        product_id=pid,
        shop_id=shop,
        title=title or f"Title of {pid}",
        price=price,
        sku_options=sku or {},
        attributes=attrs or {},
        service=service or [],
    )


def lookup(*products: Product) -> ProductLookup:
    catalog = {p.product_id: p for p in products}
    asked: list[list[str]] = []

    def get(ids: list[str]) -> dict[str, Product]:
        asked.append(list(ids))
        return {i: catalog[i] for i in ids if i in catalog}

    get.asked = asked  # type: ignore[attr-defined]
    return get


def target(pid: str, **fields: Any) -> dict[str, Any]:
    return {"product_id": pid, **fields}


def product_problem(reward: dict[str, Any], **extra: Any) -> Problem:
    return Problem.from_shoppingbench({"query": "find it", "reward": reward, **extra}, "product")


def shop_problem(*rewards: dict[str, Any]) -> Problem:
    return Problem.from_shoppingbench({"query": "one shop please", "reward": list(rewards)}, "shop")


def voucher_problem(*rewards: dict[str, Any], **voucher: Any) -> Problem:
    fields = {
        "voucher_type": "platform",
        "threshold": 0,
        "discount_type": "fixed",
        "face_value": 0,
        "budget": 1_000_000,
        **voucher,
    }
    return Problem.from_shoppingbench(
        {"query": "on a budget", "reward": list(rewards), "voucher": fields}, "voucher"
    )


def step(
    *calls: tuple[str, dict[str, Any]],
    think: str | None = "thinking",
    response: str | None = None,
    timestamp: float | None = 1_700_000_000.0,
    number: int = 0,
) -> dict[str, Any]:
    return create_dialogue_step(
        number,
        "q",
        think=think,
        response=response,
        timestamp=timestamp,
        tool_calls=[ToolCall(name=n, parameters=p) for n, p in calls],
    )


def recommend(ids: Any) -> tuple[str, dict[str, Any]]:
    return ("recommend_product", {"product_ids": ids})


TERMINATE = ("terminate", {"status": "success"})


def answered(ids: Any) -> list[dict[str, Any]]:
    """A tidy two-step dialogue: recommend, then terminate."""
    return [step(recommend(ids), number=0), step(TERMINATE, number=1)]
