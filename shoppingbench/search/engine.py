"""BM25 search over a memory-mapped index, ranked bit-for-bit like the Lucene/Pyserini reference.

Reference semantics (SPEC 2, ``shared/tools/ref_search.py``): Anserini's bag-of-words query (each
distinct analysed term once, boosted by its count, OR-ed), Lucene 9 BM25 (k1=0.9, b=0.4) with float
arithmetic in Lucene's order, the first 10,000 hits by (score desc, product id asc), then filters on
those hits only, the first 50 that pass, a stable sort, and a page of 10.
"""

from __future__ import annotations

import bisect
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from shoppingbench.catalog.models import SERVICES, Product
from shoppingbench.catalog.store import ProductStore
from shoppingbench.search.analysis import analyze
from shoppingbench.search.base import (
    MAX_RESULTS,
    PAGE_SIZE,
    TOP_HITS,
    FindProductQuery,
    ProductInformation,
    SearchHit,
)
from shoppingbench.search.index import FORMAT_VERSION, IndexMeta, idf

_SERVICE_BITS: Final = {name: 1 << bit for bit, name in enumerate(SERVICES)}

Docs = npt.NDArray[np.int32]
Scores = npt.NDArray[np.float32]
_SORTED_UNION_MAX: Final = 150_000
"""Above this many postings a multi-term query sums scores densely instead of by sorting."""
_Clause = tuple[int, int, np.float32]
"""A query term's postings range and its weight (boost x idf)."""


class _Strings(Sequence[bytes]):
    """A memory-mapped blob of byte strings addressed by an offsets array (sorted for bisect)."""

    def __init__(self, blob: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64]) -> None:
        self._blob = blob
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, index: int) -> bytes:  # type: ignore[override]
        return self._blob[self._offsets[index]:self._offsets[index + 1]].tobytes()


class BM25SearchEngine:
    """The catalog as the tools see it: ranking from the index, product details from the store."""

    def __init__(self, index_dir: Path, store: ProductStore) -> None:
        index_dir = Path(index_dir)
        meta = IndexMeta(**json.loads((index_dir / "meta.json").read_text()))
        if meta.version != FORMAT_VERSION:
            raise ValueError(f"index at {index_dir} has format {meta.version}, expected {FORMAT_VERSION}; "
                             "rebuild it")
        self._meta = meta
        self._store = store

        def load(name: str) -> npt.NDArray[Any]:
            array: npt.NDArray[Any] = np.load(index_dir / f"{name}.npy", mmap_mode="r", allow_pickle=False)
            return array

        self._terms = _Strings(load("terms_blob"), load("terms_offsets"))
        self._ids = _Strings(load("ids_blob"), load("ids_offsets"))
        self._postings_offsets = load("postings_offsets")
        self._postings_docs = load("postings_docs")
        self._postings_tf = load("postings_tf")
        self._id_rank = load("id_rank")
        self._price = load("price")
        self._sold = load("sold_count")
        self._shop = load("shop")
        self._service = load("service")
        shops = json.loads((index_dir / "shops.json").read_text())
        self._shop_codes: dict[str, int] = {shop: code for code, shop in enumerate(shops)}
        self._by_rank: npt.NDArray[np.int64] | None = None
        """Document numbers in product id byte order, computed on first use."""

    def __len__(self) -> int:
        return self._meta.documents

    def close(self) -> None:
        """Close the product store's connections (the index arrays are released with the engine)."""
        self._store.close()

    # -- tools -------------------------------------------------------------------------------

    def find_product(self, query: FindProductQuery) -> list[SearchHit]:
        if not query.page_in_range or not query.q.strip():
            return []
        docs = self._filtered_top(query)
        docs = self._sorted(docs, query.sort)
        page = docs[(query.page - 1) * PAGE_SIZE:query.page * PAGE_SIZE]
        ids = [self._ids[doc].decode() for doc in page]
        products = self._store.get_many(ids)
        return [SearchHit.of(products[product_id]) for product_id in ids if product_id in products]

    def view_product_information(self, product_ids: list[str]) -> list[ProductInformation]:
        products = self._store.get_many(product_ids)
        return [ProductInformation.of(products[pid]) for pid in product_ids if pid in products]

    def get_product(self, product_id: str) -> Product | None:
        return self._store.get(product_id)

    def get_products(self, product_ids: list[str]) -> dict[str, Product]:
        return self._store.get_many(product_ids)

    def scores(self, q: str) -> dict[str, float]:
        """Every product matching ``q`` with its BM25 score, exactly the float Lucene computes."""
        clauses = self._clauses(q)
        if not clauses:
            return {}
        if len(clauses) == 1:
            start, end, weight = clauses[0]
            docs, scores = np.asarray(self._postings_docs[start:end]), self._term_scores(start, end, weight)
        else:
            docs, scores = self._union(clauses)
        return {self._ids[int(doc)].decode(): float(score) for doc, score in zip(docs, scores, strict=True)}

    def listing(self, query: FindProductQuery) -> list[str]:
        """Every product id pages 1..5 of ``find_product`` list for ``query`` (its page ignored), in order."""
        if not query.q.strip():
            return []
        return [self._ids[doc].decode() for doc in self._sorted(self._filtered_top(query), query.sort)]

    # -- catalog order and shops (for problem generators) ------------------------------------

    def product_id_at(self, rank: int) -> str:
        """The product id that comes ``rank``-th (0-based) in byte order of all ids: an order that depends
        on the catalog's content only, whatever order the index was built in."""
        if not 0 <= rank < self._meta.documents:
            raise IndexError(f"rank {rank} outside 0..{self._meta.documents - 1}")
        return self._ids[int(self._documents_by_rank()[rank])].decode()

    def _documents_by_rank(self) -> npt.NDArray[np.int64]:
        order = self._by_rank
        if order is None:
            ranks = np.asarray(self._id_rank, dtype=np.int64)
            order = np.empty(len(ranks), dtype=np.int64)
            order[ranks] = np.arange(len(ranks), dtype=np.int64)
            self._by_rank = order
        return order

    def shop_product_ids(self, shop_id: str) -> list[str]:
        """The ids of every product of ``shop_id``, in byte order (empty for an unknown shop)."""
        code = self._shop_codes.get(shop_id)
        if code is None:
            return []
        docs = np.flatnonzero(np.asarray(self._shop) == code)
        docs = docs[np.argsort(self._id_rank[docs], kind="stable")]
        return [self._ids[int(doc)].decode() for doc in docs]

    def shop_sizes(self) -> list[int]:
        """How many products each shop has (one count per shop, in no meaningful order)."""
        counts = np.bincount(np.asarray(self._shop), minlength=len(self._shop_codes))
        return [int(c) for c in counts if c]

    def shop_counts(self) -> dict[str, int]:
        """How many products each shop has, by shop id (shops without products left out)."""
        counts = np.bincount(np.asarray(self._shop), minlength=len(self._shop_codes))
        return {shop: int(counts[code]) for shop, code in self._shop_codes.items() if counts[code]}

    def document_frequency(self, term: str) -> int:
        """How many products contain the analysed ``term`` (an output of ``search.analysis.analyze``)."""
        span = self._postings(term)
        return 0 if span is None else span[1] - span[0]

    # -- ranking -----------------------------------------------------------------------------

    def _postings(self, term: str) -> tuple[int, int] | None:
        """The postings range of ``term``, or ``None`` when no document has it."""
        key = term.encode()
        slot = bisect.bisect_left(self._terms, key)
        if slot == len(self._terms) or self._terms[slot] != key:
            return None
        return int(self._postings_offsets[slot]), int(self._postings_offsets[slot + 1])

    def _clauses(self, q: str) -> list[_Clause]:
        """Anserini's bag of words: each distinct term once, boosted by its count in the query."""
        clauses = []
        for term, count in Counter(analyze(q)).items():
            span = self._postings(term)
            if span is not None:
                weight = np.float32(count) * idf(span[1] - span[0], self._meta.doc_count)
                clauses.append((span[0], span[1], weight))
        return clauses

    def _term_scores(self, start: int, end: int, weight: np.float32) -> Scores:
        """Lucene's ``weight - weight / (1f + freq * normInverse)`` per posting, in float."""
        tf: Scores = self._postings_tf[start:end]
        scores: Scores = weight - weight / tf
        return scores

    def _top_hits(self, q: str) -> tuple[Docs, Scores]:
        """The reference's first ``TOP_HITS`` hits by (score desc, id asc), in no particular order.

        The reference cuts at exactly 10,000 after its id tie-break, so a run of equal scores that
        straddles the cut is split by product id rather than kept whole.
        """
        clauses = self._clauses(q)
        if not clauses:
            return np.empty(0, dtype=np.int32), np.empty(0, dtype=np.float32)
        if len(clauses) == 1:
            return self._single_term_top(*clauses[0])
        docs, scores = self._union(clauses)
        if len(docs) <= TOP_HITS:
            return docs, scores
        threshold = np.partition(scores, len(scores) - TOP_HITS)[len(scores) - TOP_HITS]
        above = np.flatnonzero(scores > threshold)
        tied = np.flatnonzero(scores == threshold)
        need = TOP_HITS - len(above)
        if len(tied) > need:
            tied = tied[np.argpartition(self._id_rank[docs[tied]], need - 1)[:need]]
        keep = np.concatenate([above, tied])
        return docs[keep], scores[keep]

    def _single_term_top(self, start: int, end: int, weight: np.float32) -> tuple[Docs, Scores]:
        """Top hits of one term without a selection pass: its postings are stored best first.

        The score only grows with the stored tf value, so postings (tf desc, id asc) are already in
        score order except inside a run of equal scores made of several tf values; only the run
        that straddles the cut needs an id selection.
        """
        docs: Docs = self._postings_docs[start:end]
        scores = self._term_scores(start, end, weight)
        if len(docs) <= TOP_HITS:
            return np.asarray(docs), scores
        threshold = scores[TOP_HITS - 1]
        descending = -scores
        first = int(np.searchsorted(descending, -threshold, side="left"))
        last = int(np.searchsorted(descending, -threshold, side="right"))
        need = TOP_HITS - first
        tf = self._postings_tf
        if tf[start + first] == tf[start + last - 1]:
            tied = np.arange(first, first + need)
        else:
            tied = first + np.argpartition(self._id_rank[docs[first:last]], need - 1)[:need]
        keep = np.concatenate([np.arange(first), tied])
        return docs[keep], scores[keep]

    def _union(self, clauses: list[_Clause]) -> tuple[Docs, Scores]:
        """Documents matching any clause with their summed scores.

        Lucene adds each clause's float score into a double and casts the sum back to float; the
        double sums of a few floats are exact, so summation order cannot change a result.
        """
        docs = np.concatenate([self._postings_docs[start:end] for start, end, _ in clauses])
        scores = np.concatenate([self._term_scores(start, end, weight) for start, end, weight in clauses])
        if len(docs) > _SORTED_UNION_MAX:
            # Dense accumulation costs O(documents) but no sort: cheaper for very common terms.
            sums = np.bincount(docs, weights=scores.astype(np.float64), minlength=self._meta.documents)
            hit = np.zeros(self._meta.documents, dtype=bool)
            hit[docs] = True
            matched = np.flatnonzero(hit).astype(np.int32)
            return matched, sums[matched].astype(np.float32)
        # Sorting one int64 key (doc, posting position) is several times faster than an argsort.
        keys = (docs.astype(np.int64) << 32) | np.arange(len(docs), dtype=np.int64)
        keys.sort()
        sorted_docs = (keys >> 32).astype(np.int32)
        starts = np.flatnonzero(np.r_[True, sorted_docs[1:] != sorted_docs[:-1]])
        sums = np.add.reduceat(scores[keys & 0xFFFFFFFF].astype(np.float64), starts)
        return sorted_docs[starts], sums.astype(np.float32)

    def _filter_mask(self, docs: Docs, query: FindProductQuery) -> npt.NDArray[np.bool_] | None:
        mask: npt.NDArray[np.bool_] | None = None

        def both(other: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
            return other if mask is None else mask & other

        if query.shop_id is not None:
            code = self._shop_codes.get(query.shop_id, -1)
            mask = both(self._shop[docs] == code)
        if query.price is not None:
            price = self._price[docs]
            if query.price.low is not None:
                mask = both(price >= query.price.low)
            if query.price.high is not None:
                mask = both(price <= query.price.high)
        if query.service:
            bits = sum(_SERVICE_BITS[name] for name in query.service)
            mask = both((self._service[docs] & bits) == bits)
        return mask

    def _filtered_top(self, query: FindProductQuery) -> list[int]:
        """Documents of the first ``MAX_RESULTS`` top hits that pass the filters, in rank order."""
        docs, scores = self._top_hits(query.q)
        mask = self._filter_mask(docs, query)
        if mask is not None:
            docs, scores = docs[mask], scores[mask]
        if len(docs) > MAX_RESULTS:
            threshold = -np.partition(-scores, MAX_RESULTS - 1)[MAX_RESULTS - 1]
            keep = scores >= threshold
            docs, scores = docs[keep], scores[keep]
        order = np.lexsort((self._id_rank[docs], -scores))[:MAX_RESULTS]
        return [int(doc) for doc in docs[order]]

    def _sorted(self, docs: list[int], sort: str | None) -> list[int]:
        """The reference's stable sort of the kept products (relevance keeps rank order)."""
        if sort == "order":
            return sorted(docs, key=lambda doc: int(self._sold[doc]), reverse=True)
        if sort == "priceasc":
            return sorted(docs, key=lambda doc: float(self._price[doc]))
        if sort == "pricedesc":
            return sorted(docs, key=lambda doc: float(self._price[doc]), reverse=True)
        return docs
