"""Harness configuration: CLI flags override environment (``ARENA_*``) override ``.env`` override defaults.

The defaults need nothing: a sample world under ``~/.shopping-arena``, the tool server on loopback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from shoppingbench.world.llm import LLMSettings


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
    llm_base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint (e.g. vLLM)")
    llm_api_key: SecretStr = SecretStr("not-needed")
    llm_model: str | None = Field(default=None, description="Model that rewords sample-world queries")
    log_format: Literal["console", "json"] = "console"
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    @property
    def root(self) -> Path:
        return self.home.expanduser()

    @property
    def embedding_cache(self) -> Path:
        return self.root / "cache" / "title-embeddings.sqlite3"

    def llm(self) -> LLMSettings | None:
        """The query-rewording endpoint, when both its URL and model are configured."""
        if not (self.llm_base_url and self.llm_model):
            return None
        return LLMSettings(base_url=self.llm_base_url, api_key=self.llm_api_key, model=self.llm_model)

    def world_dir(self) -> Path:
        name = f"sample-{self.world_products}-seed{self.world_seed}"
        if self.llm() is not None:
            # Reworded worlds are not reproducible byte for byte: never mix them with template ones.
            name += "-llm-" + "".join(c if c.isalnum() else "_" for c in str(self.llm_model))
        return self.root / "worlds" / name
