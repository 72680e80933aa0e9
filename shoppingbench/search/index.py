"""Streaming BM25 index build and the memory-mapped on-disk format the engine reads.

Layout of an index directory (all arrays are ``.npy`` so they memory-map):

``meta.json``            counts, BM25 parameters and the collection statistics
``terms_blob.npy``       uint8, every term's UTF-8 bytes concatenated in byte order
``terms_offsets.npy``    int64[T+1], where each term starts in the blob
``postings_offsets.npy`` int64[T+1], where each term's postings start
``postings_docs.npy``    int32[P], document numbers
``postings_tf.npy``      float32[P], the query-independent part of Lucene's BM25 term score,
                         ``1f + freq * cache[norm]`` (see :func:`norm_inverse_cache`)
``ids_blob.npy`` / ``ids_offsets.npy``  product ids by document number
``id_rank.npy``          int32, rank of each product id in byte order (Lucene's tie-break)
``price.npy`` float64, ``sold_count.npy`` int64, ``shop.npy`` int32 (code into ``shops.json``),
``service.npy`` uint8 (bit i = ``SERVICES[i]``)

Within a term, postings are ordered by decreasing ``postings_tf`` and then by ``id_rank``: a
one-term query's ranking is then a prefix of its postings, because Lucene's per-posting score is
monotonic in that value.

Build is two passes over bounded chunks. Pass one analyses ``CHUNK_DOCS`` documents at a time and
spills their (term, doc, freq) triples to a scratch file; pass two, once the collection statistics
are known, reads the spill back one chunk at a time and scatters each posting into memory-mapped
output arrays, then orders each term's block in windows of ``_ORDER_WINDOW`` postings. Memory is
therefore one chunk's triples, one ordering window, the vocabulary dictionary and about 40 bytes
per document (id, filter columns, length), independent of the total number of postings: the whole
2.5M-product benchmark (generate, store, index) peaked at 1.06 GB resident.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import time
from array import array
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from shoppingbench.catalog.models import SERVICES, CatalogDocument
from shoppingbench.search.analysis import analyze

FORMAT_VERSION: Final = 1
K1: Final = np.float32(0.9)
B: Final = np.float32(0.4)
CHUNK_DOCS: Final = 100_000
_ORDER_WINDOW: Final = 8_000_000
_SERVICE_BITS: Final = {name: 1 << bit for bit, name in enumerate(SERVICES)}


@dataclass(frozen=True)
class IndexStats:
    """What a build produced."""

    documents: int
    terms: int
    postings: int
    build_seconds: float
    bytes: int


def _int_to_int4(value: int) -> int:
    """Lucene ``SmallFloat.longToInt4``: 3 mantissa bits and a shift, exact below 8."""
    bits = value.bit_length()
    if bits < 4:
        return value
    shift = bits - 4
    return ((value >> shift) & 0x07) | ((shift + 1) << 3)


_NUM_FREE_VALUES: Final = 255 - _int_to_int4(2**31 - 1)


def int_to_byte4(length: int) -> int:
    """Lucene ``SmallFloat.intToByte4``: the lossy one-byte document length stored as the norm."""
    if length < _NUM_FREE_VALUES:
        return length
    return _NUM_FREE_VALUES + _int_to_int4(length - _NUM_FREE_VALUES)


def byte4_to_int(norm: int) -> int:
    """Lucene ``SmallFloat.byte4ToInt``: the document length BM25 sees for a norm byte."""
    if norm < _NUM_FREE_VALUES:
        return norm
    encoded = norm - _NUM_FREE_VALUES
    mantissa, shift = encoded & 0x07, (encoded >> 3) - 1
    return _NUM_FREE_VALUES + (mantissa if shift == -1 else (mantissa | 0x08) << shift)


_LENGTH_TABLE: Final = np.array([byte4_to_int(i) for i in range(256)], dtype=np.float32)
_NORM_OF_LENGTH: Final = np.array([int_to_byte4(n) for n in range(1 << 12)], dtype=np.uint8)


def norms_of(lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
    """Norm bytes of document lengths (vectorised for the usual lengths, exact for any)."""
    small = lengths < len(_NORM_OF_LENGTH)
    norms = np.empty(len(lengths), dtype=np.uint8)
    norms[small] = _NORM_OF_LENGTH[lengths[small]]
    norms[~small] = [int_to_byte4(int(n)) for n in lengths[~small]]
    return norms


def average_length(sum_total_term_freq: int, doc_count: int) -> np.float32:
    """``BM25Similarity.avgFieldLength``: the double quotient cast to float."""
    return np.float32(sum_total_term_freq / doc_count) if doc_count else np.float32(0)


def norm_inverse_cache(avgdl: np.float32) -> npt.NDArray[np.float32]:
    """``cache[i] = 1f / (k1 * ((1 - b) + b * LENGTH_TABLE[i] / avgdl))``, every step in float."""
    one = np.float32(1)
    with np.errstate(divide="ignore"):
        return one / (K1 * ((one - B) + B * _LENGTH_TABLE / avgdl))


def idf(doc_freq: int, doc_count: int) -> np.float32:
    """``BM25Similarity.idf``: computed in double, then cast to float."""
    return np.float32(math.log(1 + (doc_count - doc_freq + 0.5) / (doc_freq + 0.5)))


@dataclass
class _Columns:
    """Per-document columns, grown as documents stream in (compact typed arrays)."""

    ids: list[bytes] = field(default_factory=list)
    price: array[float] = field(default_factory=lambda: array("d"))
    sold: array[int] = field(default_factory=lambda: array("q"))
    shop: array[int] = field(default_factory=lambda: array("i"))
    service: array[int] = field(default_factory=lambda: array("B"))
    lengths: array[int] = field(default_factory=lambda: array("q"))
    shop_codes: dict[str, int] = field(default_factory=dict)


class _Spill:
    """Scratch file of (term id, doc, freq) int32 triples, one block per chunk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.blocks: list[int] = []
        self._file = path.open("wb")

    def write(self, triples: npt.NDArray[np.int32]) -> None:
        self._file.write(np.ascontiguousarray(triples, dtype=np.int32).tobytes())
        self.blocks.append(len(triples))

    def close(self) -> None:
        self._file.close()

    def read(self) -> Iterator[npt.NDArray[np.int32]]:
        with self.path.open("rb") as handle:
            for rows in self.blocks:
                yield np.frombuffer(handle.read(rows * 12), dtype=np.int32).reshape(rows, 3)


def _chunk_triples(term_ids: list[int], doc_of_token: list[int]) -> npt.NDArray[np.int32]:
    """Distinct (term, doc) pairs with their frequency, sorted by term then doc."""
    if not term_ids:
        return np.empty((0, 3), dtype=np.int32)
    keys = (np.asarray(term_ids, dtype=np.int64) << 32) | np.asarray(doc_of_token, dtype=np.int64)
    unique, counts = np.unique(keys, return_counts=True)
    return np.column_stack(((unique >> 32), (unique & 0xFFFFFFFF), counts)).astype(np.int32)


def _analyse(documents: Iterable[CatalogDocument], spill: _Spill, vocabulary: dict[str, int],
             columns: _Columns, advance: Callable[[int], None]) -> None:
    """Pass one: analyse, collect columns, spill postings chunk by chunk."""
    shop_codes = columns.shop_codes
    term_ids: list[int] = []
    doc_of_token: list[int] = []
    for doc, document in enumerate(documents):
        product = document.product
        terms = analyze(document.contents)
        columns.ids.append(document.id.encode())
        columns.price.append(product.price)
        columns.sold.append(product.sold_count)
        columns.shop.append(shop_codes.setdefault(product.shop_id, len(shop_codes)))
        columns.service.append(sum(_SERVICE_BITS.get(s, 0) for s in set(product.service)))
        columns.lengths.append(len(terms))
        term_ids.extend([vocabulary.setdefault(term, len(vocabulary)) for term in terms])
        doc_of_token.extend([doc] * len(terms))
        if (doc + 1) % CHUNK_DOCS == 0:
            spill.write(_chunk_triples(term_ids, doc_of_token))
            term_ids, doc_of_token = [], []
        if (doc + 1) % _PROGRESS_STEP == 0:
            advance(_PROGRESS_STEP)
    spill.write(_chunk_triples(term_ids, doc_of_token))
    advance(len(columns.lengths) % _PROGRESS_STEP)


def _save(index_dir: Path, name: str, array: npt.NDArray[np.generic]) -> None:
    np.save(index_dir / f"{name}.npy", array, allow_pickle=False)


def _save_strings(index_dir: Path, name: str, encoded: list[bytes]) -> None:
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(item) for item in encoded], out=offsets[1:])
    _save(index_dir, f"{name}_blob", np.frombuffer(b"".join(encoded), dtype=np.uint8))
    _save(index_dir, f"{name}_offsets", offsets)


def _write_postings(index_dir: Path, spill: _Spill, doc_freq: npt.NDArray[np.int64],
                    term_order: npt.NDArray[np.int64], tf_cache: npt.NDArray[np.float32],
                    norms: npt.NDArray[np.uint8], id_rank: npt.NDArray[np.int32]) -> int:
    """Pass two: scatter spilled postings into the final arrays, then order each term's block."""
    sorted_df = doc_freq[term_order]
    offsets = np.zeros(len(sorted_df) + 1, dtype=np.int64)
    np.cumsum(sorted_df, out=offsets[1:])
    total = int(offsets[-1])
    slot_of_term = np.empty(len(term_order), dtype=np.int64)
    slot_of_term[term_order] = np.arange(len(term_order))
    cursor = offsets[:-1][slot_of_term].copy()
    docs = np.lib.format.open_memmap(index_dir / "postings_docs.npy", mode="w+", dtype=np.int32,
                                     shape=(total,))
    tfs = np.lib.format.open_memmap(index_dir / "postings_tf.npy", mode="w+", dtype=np.float32,
                                    shape=(total,))
    one = np.float32(1)
    for triples in spill.read():
        if not len(triples):
            continue
        term, doc, freq = triples[:, 0], triples[:, 1], triples[:, 2]
        # Triples are sorted by term: the i-th posting of a term in this chunk goes to cursor + i.
        starts = np.flatnonzero(np.r_[True, term[1:] != term[:-1]])
        run = np.repeat(starts, np.diff(np.r_[starts, len(term)]))
        position = cursor[term] + (np.arange(len(term)) - run)
        docs[position] = doc
        tfs[position] = one + freq.astype(np.float32) * tf_cache[norms[doc]]
        np.add.at(cursor, term[starts], np.diff(np.r_[starts, len(term)]))
    _order_blocks(docs, tfs, offsets, id_rank)
    docs.flush()
    tfs.flush()
    _save(index_dir, "postings_offsets", offsets)
    return total


def _order_blocks(docs: npt.NDArray[np.int32], tfs: npt.NDArray[np.float32],
                  offsets: npt.NDArray[np.int64], id_rank: npt.NDArray[np.int32]) -> None:
    """Sort every term's postings by (tf value desc, id rank asc), one lexsort per window of terms."""
    start_term, terms = 0, len(offsets) - 1
    while start_term < terms:
        lo = int(offsets[start_term])
        # Whole terms per window; a term with more postings than the window is ordered on its own.
        fitting = int(np.searchsorted(offsets, lo + _ORDER_WINDOW, side="right")) - 1
        end_term = min(max(fitting, start_term + 1), terms)
        hi = int(offsets[end_term])
        block_docs = np.asarray(docs[lo:hi])
        block_tfs = np.asarray(tfs[lo:hi])
        owner = np.repeat(np.arange(end_term - start_term), np.diff(offsets[start_term:end_term + 1]))
        order = np.lexsort((id_rank[block_docs], -block_tfs, owner))
        docs[lo:hi] = block_docs[order]
        tfs[lo:hi] = block_tfs[order]
        start_term = end_term


_PROGRESS_STEP: Final = 1_000


@contextmanager
def _progress(enabled: bool, total: int | None) -> Iterator[Callable[[int], None]]:
    """A callback that advances a rich progress bar (or does nothing when disabled)."""
    if not enabled:
        yield lambda _steps: None
        return
    columns = (TextColumn("indexing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns) as bar:
        task = bar.add_task("indexing", total=total)
        yield lambda steps: bar.advance(task, steps)


def _scratch_prefixes(index_dir: Path) -> tuple[str, str]:
    """Name prefixes of the build's scratch folder and of a retired index, both beside ``index_dir``."""
    return f".{index_dir.name}.build-", f".{index_dir.name}.old-"


def _remove_leftovers(index_dir: Path) -> None:
    """Delete scratch and retired folders a killed build left beside ``index_dir`` (GBs on a real catalog).

    Only this index's own naming patterns are touched. Two builds of one index at once are not supported
    (the second would also race the first's swap), so nothing matching can belong to a live build.
    """
    prefixes = _scratch_prefixes(index_dir)
    for path in index_dir.parent.iterdir():
        if path.name.startswith(prefixes) and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)


def _replace_dir(built: Path, index_dir: Path) -> None:
    """Swap a finished build into place; only ever deletes a previous index (or an empty folder)."""
    if index_dir.exists():
        if any(index_dir.iterdir()) and not (index_dir / "meta.json").exists():
            raise FileExistsError(f"{index_dir} exists and is not a search index; refusing to replace it")
        retired = Path(tempfile.mkdtemp(prefix=_scratch_prefixes(index_dir)[1], dir=index_dir.parent))
        index_dir.rename(retired / index_dir.name)
        built.rename(index_dir)
        shutil.rmtree(retired)
    else:
        built.rename(index_dir)


def build_index(documents: Iterable[CatalogDocument], index_dir: Path, *, total: int | None = None,
                progress: bool = True) -> IndexStats:
    """Index ``documents`` (product ids assumed unique) into ``index_dir``, replacing any index there.

    The build happens in a sibling scratch folder that is swapped in at the end, so a failed build
    leaves the previous index intact. Scratch folders of earlier builds that were killed are removed
    first.
    """
    started = time.perf_counter()
    index_dir = Path(index_dir)
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(index_dir)
    vocabulary: dict[str, int] = {}
    columns = _Columns()
    with tempfile.TemporaryDirectory(prefix=_scratch_prefixes(index_dir)[0], dir=index_dir.parent) as scratch:
        built = Path(scratch) / "index"
        built.mkdir()
        spill = _Spill(Path(scratch) / "postings.spill")
        try:
            with _progress(progress, total) as advance:
                _analyse(documents, spill, vocabulary, columns, advance)
        finally:
            spill.close()
        documents_count, terms, postings = _finish(built, spill, vocabulary, columns)
        size = sum(path.stat().st_size for path in built.iterdir())
        _replace_dir(built, index_dir)
    return IndexStats(documents=documents_count, terms=terms, postings=postings,
                      build_seconds=round(time.perf_counter() - started, 3), bytes=size)


def _finish(index_dir: Path, spill: _Spill, vocabulary: dict[str, int],
            columns: _Columns) -> tuple[int, int, int]:
    lengths = np.asarray(columns.lengths, dtype=np.int64)
    documents = len(lengths)
    # Lucene's field statistics only count documents that have at least one indexed term.
    doc_count = int(np.count_nonzero(lengths))
    sum_ttf = int(lengths.sum())
    avgdl = average_length(sum_ttf, doc_count)
    norms = norms_of(lengths)
    # Byte order of UTF-8 ids is Lucene's BytesRef order, the secondary sort key of the reference.
    # An object array sorts the bytes objects already held (8 bytes per id); a fixed-width "S" array
    # would pad every id to the longest one.
    ids = np.empty(documents, dtype=object)
    ids[:] = columns.ids
    id_order = np.argsort(ids, kind="stable")
    id_rank = np.empty(documents, dtype=np.int32)
    id_rank[id_order] = np.arange(documents, dtype=np.int32)
    del ids, id_order

    doc_freq = np.zeros(len(vocabulary), dtype=np.int64)
    for triples in spill.read():
        doc_freq += np.bincount(triples[:, 0], minlength=len(vocabulary))
    terms = list(vocabulary)
    vocabulary.clear()
    encoded_terms = [term.encode() for term in terms]
    del terms
    term_order = np.array(sorted(range(len(encoded_terms)), key=encoded_terms.__getitem__), dtype=np.int64)
    _save_strings(index_dir, "terms", [encoded_terms[i] for i in term_order])
    del encoded_terms

    postings = _write_postings(index_dir, spill, doc_freq, term_order, norm_inverse_cache(avgdl),
                               norms, id_rank)
    _save_strings(index_dir, "ids", columns.ids)
    _save(index_dir, "id_rank", id_rank)
    _save(index_dir, "price", np.asarray(columns.price, dtype=np.float64))
    _save(index_dir, "sold_count", np.asarray(columns.sold, dtype=np.int64))
    _save(index_dir, "shop", np.asarray(columns.shop, dtype=np.int32))
    _save(index_dir, "service", np.asarray(columns.service, dtype=np.uint8))
    (index_dir / "shops.json").write_text(json.dumps(list(columns.shop_codes)))
    meta = IndexMeta(version=FORMAT_VERSION, documents=documents, doc_count=doc_count,
                     sum_total_term_freq=sum_ttf, avgdl=float(avgdl), k1=float(K1), b=float(B),
                     terms=len(term_order), postings=postings)
    (index_dir / "meta.json").write_text(json.dumps(asdict(meta), indent=2))
    return documents, len(term_order), postings


@dataclass(frozen=True)
class IndexMeta:
    """``meta.json``: collection statistics Lucene's BM25 uses, and sizes."""

    version: int
    documents: int
    doc_count: int
    sum_total_term_freq: int
    avgdl: float
    k1: float
    b: float
    terms: int
    postings: int
