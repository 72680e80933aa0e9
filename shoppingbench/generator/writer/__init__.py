"""The generator's writer: requests in a shopper's words from a versioned lexicon (SPEC 5).

A catalog's lexicon lives at ``<catalog_dir>/lexicon.json`` (``arena lexicon build --catalog DIR``
writes it). A catalog built from the bundled sample world's documents without one uses the lexicon
shipped with the package (``sample_world_lexicon.json``); any other catalog without one is an error
that says how to build it. The writer's ``key`` carries the lexicon's sha256, so generators with
different lexicons never pass for the same.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from pydantic import ValidationError

from shoppingbench.catalog_dir import BUILD_RECORD
from shoppingbench.generator.writer.compose import WRITER_VERSION, LexiconWriter
from shoppingbench.generator.writer.lexicon import (
    LEXICON_FILE,
    SAMPLE_LEXICON_FILE,
    Lexicon,
    LexiconError,
    load_lexicon,
)
from shoppingbench.generator.writer.request import RequestWriter
from shoppingbench.world_manifest import MANIFEST_FILE, WorldManifest

__all__ = ["WRITER_VERSION", "Lexicon", "LexiconError", "LexiconWriter", "lexicon_path", "writer_for_catalog"]


def _built_from_sample_world(catalog_dir: Path) -> bool:
    """Whether every source the catalog was imported from is a sample world's documents file."""
    try:
        record = orjson.loads((catalog_dir / BUILD_RECORD).read_bytes())
        sources = [Path(report["source"]) for report in record["imported"]]
        for source in sources:
            WorldManifest.model_validate_json((source.parent / MANIFEST_FILE).read_bytes())
    except (OSError, KeyError, TypeError, orjson.JSONDecodeError, ValidationError):
        return False
    return bool(sources)


def lexicon_path(catalog_dir: Path) -> Path:
    """The lexicon file the writer uses for the catalog in ``catalog_dir``."""
    own = catalog_dir / LEXICON_FILE
    if own.exists() or not _built_from_sample_world(catalog_dir):
        return own
    return SAMPLE_LEXICON_FILE


def writer_for_catalog(catalog_dir: Path) -> RequestWriter:
    """The writer for the catalog in ``catalog_dir``; a clear error when it has no lexicon."""
    path = lexicon_path(catalog_dir)
    if not path.exists():
        raise LexiconError(f"no lexicon for the catalog in {catalog_dir} ({path} is missing): build one with "
                           f"`arena lexicon build --catalog {catalog_dir}`")
    return LexiconWriter(load_lexicon(path))
