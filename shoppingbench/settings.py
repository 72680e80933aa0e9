"""Harness configuration: CLI flags override environment (``ARENA_*``) override ``.env`` override defaults.

``HarnessSettings`` is the base of every entry point's root settings and the one place ``home`` (the
data root) is declared. Sections of higher packages (the store, the chain) are mixed into a root beside
it and reach the data root through :class:`Rooted`. The defaults need nothing: a sample world under
``~/.shopping-arena``, the tool server on loopback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

LogFormat = Literal["auto", "console", "json"]
"""How log lines render (:func:`shoppingbench.logs.configure_logging`): ``auto`` is human-readable on a
terminal and JSON otherwise."""


class Rooted(Protocol):
    """What a settings section needs from the root it is mixed into: the data root."""

    @property
    def root(self) -> Path: ...


class LLMSettings(BaseModel):
    """An OpenAI-compatible chat endpoint."""

    model_config = ConfigDict(frozen=True)

    base_url: str
    api_key: SecretStr = SecretStr("not-needed")
    model: str
    temperature: float = Field(default=0.7, ge=0, le=2)
    timeout_seconds: float = Field(default=30.0, gt=0)


class HarnessSettings(BaseSettings):
    """The harness section (worlds, sandbox, inference, logs) with ``home``: the base of every root."""

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
    log_format: LogFormat = Field(
        default="auto", description="auto: human-readable lines on a terminal, JSON otherwise")
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_file: Path | None = Field(default=None, description="Also write log lines to this file, rotated")
    log_rotate: Literal["size", "daily"] = Field(
        default="size", description="Rotate at ARENA_LOG_MAX_MB (size) or at midnight UTC (daily)")
    log_max_mb: float = Field(default=100.0, gt=0, description="Size at which the log file rotates (size)")
    log_backups: int = Field(default=10, ge=1, description="Rotated log files kept")
    # The sandbox every untrusted agent runs in (docs/runner.md).
    sandbox: Literal["namespace", "docker", "none"] = Field(
        default="namespace", description="namespace (bubblewrap), docker, or none (trusted debugging only)")
    sandbox_timeout_s: float = Field(
        default=300.0, gt=0, description="Wall-clock limit of one problem (300 s, the reference arena's)")
    sandbox_cpu_s: int | None = Field(default=None, ge=1,
                                      description="CPU-seconds limit of one problem (default: the timeout)")
    sandbox_memory_mb: int = Field(default=2048, ge=256, description="Address-space limit per process")
    sandbox_processes: int = Field(default=128, ge=8, description="Processes and threads per sandbox")
    sandbox_output_kb: int = Field(default=1024, ge=1, description="stdout+stderr KiB one problem may print")
    sandbox_result_mb: int = Field(default=16, ge=1, description="Size limit of the returned steps (JSON)")
    sandbox_tmp_mb: int = Field(default=64, ge=1, description="Size of the sandbox's private /tmp")
    sandbox_uid_base: int = Field(default=61000, ge=1000,
                                  description="First uid/gid of the slots (namespace as root, docker)")
    sandbox_docker_image: str = "shopping-arena-sandbox:latest"
    # The inference endpoint the verified proxy forwards /inference/chat/completions to.
    inference_base_url: str | None = Field(default=None,
                                           description="OpenAI-compatible base URL, e.g. http://host:8000/v1")
    inference_api_key: SecretStr = SecretStr("not-needed")
    inference_models: str = Field(default="", description="Comma list of allowed models; first = default")
    inference_max_tokens: int = Field(default=4096, ge=1, description="Cap on max_tokens of one call")
    inference_attempt_calls: int | None = Field(default=100, ge=1, description="Inference calls per attempt")
    inference_attempt_tokens: int | None = Field(default=400_000, ge=1, description="Tokens per attempt")
    inference_attempt_in_flight: int | None = Field(default=4, ge=1,
                                                    description="Inference calls of one attempt at once")
    inference_run_calls: int | None = Field(default=None, ge=1, description="Inference calls per run")
    inference_run_tokens: int | None = Field(default=None, ge=1, description="Tokens per run")

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

    def allowed_models(self) -> list[str]:
        """``inference_models`` as a list, in order (the first is the agents' default model)."""
        return [m.strip() for m in self.inference_models.split(",") if m.strip()]

    def world_dir(self) -> Path:
        name = f"sample-{self.world_products}-seed{self.world_seed}"
        if self.llm() is not None:
            # Reworded worlds are not reproducible byte for byte: never mix them with template ones.
            name += "-llm-" + "".join(c if c.isalnum() else "_" for c in str(self.llm_model))
        return self.root / "worlds" / name
