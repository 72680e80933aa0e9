"""Harness configuration: CLI flags override environment (``ARENA_*``) override ``.env`` override defaults.

The defaults need nothing: a sample world under ``~/.shopping-arena``, the tool server on loopback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class HarnessSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ARENA_", env_file=".env", extra="ignore")

    home: Path = Field(default=Path("~/.shopping-arena"), description="Root for catalogs, worlds and results")
    world_products: int = Field(default=50_000, ge=100, description="Products in the bundled sample world")
    world_seed: int = Field(default=0, description="Seed of the bundled sample world")
    suite_per_category: int = Field(default=20, ge=1, description="Problems per category in the demo suite")
    tools_host: str = "127.0.0.1"
    tools_port: int = Field(default=0, ge=0, le=65535, description="0 picks a free port")
    scoring_profile: Literal["production-strict", "original"] = "production-strict"
    workers: int = Field(default=4, ge=1, description="Problems evaluated concurrently")
    log_format: Literal["console", "json"] = "console"
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    @property
    def root(self) -> Path:
        return self.home.expanduser()

    @property
    def embedding_cache(self) -> Path:
        return self.root / "cache" / "title-embeddings.sqlite3"

    def world_dir(self) -> Path:
        return self.root / "worlds" / f"sample-{self.world_products}-seed{self.world_seed}"
