"""A written sample world's manifest (``manifest.json``): what was written and how to recognise it.

It sits below the sample world, which writes it, and the generator's writer, which reads it to tell a
catalog built from a sample world's documents (that one may use the lexicon shipped with the package).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

MANIFEST_FILE = "manifest.json"


class WorldManifest(BaseModel):
    """What was written and how to recognise it."""

    model_config = ConfigDict(frozen=True)

    generator: str
    seed: int
    products: int
    requested: dict[str, int]
    problems: dict[str, int]
    files: dict[str, str]
    """Path relative to the world directory -> sha256 hex digest."""
    paraphrased_by: str | None = None
    """The LLM that reworded the queries, if any (then the bytes are no longer reproducible)."""
