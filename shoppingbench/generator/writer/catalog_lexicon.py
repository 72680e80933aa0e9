"""``arena lexicon build``: a catalog's lexicon written beside it, from its store, optionally with a model.

The store is streamed in product-id order with a progress bar, so a catalog of millions of products
is scanned in bounded memory; the result is the deterministic lexicon (:mod:`.build`), extended by
the lexicon already at the output path and by a model's validated phrasings (:mod:`.propose`).
"""

from __future__ import annotations

from pathlib import Path

import structlog
from pydantic import BaseModel
from rich.progress import track

from shoppingbench.catalog.store import ProductStore
from shoppingbench.catalog_dir import STORE_FILE
from shoppingbench.generator.writer.build import extended, fallback_lexicon, scan
from shoppingbench.generator.writer.lexicon import LEXICON_FILE, load_lexicon, load_phrasing, save_lexicon
from shoppingbench.generator.writer.propose import ModelSettings, ProposalReport, with_model_phrasings

log = structlog.get_logger(__name__)


class LexiconBuildReport(BaseModel):
    """What ``arena lexicon build`` wrote."""

    path: Path
    sha256: str
    products: int
    kinds: int
    keys: int
    values: int
    extended: bool
    proposals: ProposalReport | None = None


def build_catalog_lexicon(catalog_dir: Path, out: Path | None = None, *, model: ModelSettings | None = None,
                          progress: bool = True) -> LexiconBuildReport:
    """Scan the catalog's store (streamed, with a progress bar), build its lexicon and write it to ``out``
    (default ``<catalog_dir>/lexicon.json``); an existing lexicon there is extended: its key and value
    phrasings stay unless the model now proposes others. An unreadable file there is a
    :class:`~.lexicon.LexiconError` (never overwritten: it may be a subnet's published lexicon)."""
    path = out if out is not None else catalog_dir / LEXICON_FILE
    phrasing = load_phrasing()
    with ProductStore(catalog_dir / STORE_FILE, read_only=True) as store:
        documents = track(store.iter_documents(), total=len(store), description="scanning the catalog",
                          disable=not progress, transient=True)
        counts = scan((document.product for document in documents), phrasing)
    earlier = load_lexicon(path) if path.exists() else None
    lexicon = extended(fallback_lexicon(counts, phrasing), earlier)
    report = None
    if model is not None:
        lexicon, report = with_model_phrasings(lexicon, counts, model)
    digest = save_lexicon(lexicon, path)
    log.info("lexicon_built", path=str(path), sha256=digest, products=counts.products,
             kinds=len(lexicon.kinds), refused=len(report.refused) if report else 0)
    return LexiconBuildReport(path=path, sha256=digest, products=counts.products, kinds=len(lexicon.kinds),
                              keys=len(lexicon.keys), values=sum(map(len, lexicon.values.values())),
                              extended=earlier is not None, proposals=report)
