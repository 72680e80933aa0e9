"""Harness configuration: CLI flags override environment (``ARENA_*``) override ``.env`` override defaults.

``HarnessSettings`` is the base of every entry point's root settings and the one place ``home`` (the
data root) is declared. Sections of higher packages (the store, the chain) are mixed into a root beside
it and reach the data root through :class:`Rooted`. The defaults need nothing: a sample world under
``~/.shopping-arena``, the tool server on loopback.

Settings that change outcomes are rule models nested in a root (here ``sandbox_limits`` and
``inference_limits``, named by ``RULE_MODELS``), each hashed whole by the arena's rules fingerprint, so
each default and bound is declared once, in its model. Their fields keep their flat names
(``ARENA_SANDBOX_TIMEOUT_S``, ``sandbox_timeout_s=...``) through one table per root, ``FLAT_NAMES``; the
nested form (``ARENA_SANDBOX_LIMITS__TIMEOUT_S``) works too.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Protocol, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from shoppingbench.proxy.budgets import InferenceBudgets

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


class SandboxRules(BaseModel):
    """The limits of one problem's sandbox (docs/runner.md): what an agent may use changes its score."""

    model_config = ConfigDict(frozen=True)

    timeout_s: float = Field(default=300.0, gt=0,
                             description="Wall-clock limit of one problem (300 s, the reference arena's)")
    cpu_s: int | None = Field(default=None, ge=1,
                              description="CPU-seconds limit of one problem (default: the timeout)")
    memory_mb: int = Field(default=2048, ge=256, description="Address-space limit per process")
    processes: int = Field(default=128, ge=8, description="Processes and threads per sandbox")
    output_kb: int = Field(default=1024, ge=1, description="stdout+stderr KiB one problem may print")
    result_mb: int = Field(default=16, ge=1, description="Size limit of the returned steps (JSON)")
    tmp_mb: int = Field(default=64, ge=1, description="Size of the sandbox's private /tmp")


def _comma_separated(value: Any) -> Any:
    return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value


CommaList = Annotated[list[str], NoDecode, BeforeValidator(_comma_separated)]
"""A list setting given as one comma-separated string (``ARENA_INFERENCE_MODELS=a,b``) or as a list."""


class InferenceRules(BaseModel):
    """What the verified proxy lets an agent ask of the inference endpoint: models, tokens, budgets."""

    model_config = ConfigDict(frozen=True)

    models: CommaList = Field(
        default_factory=list, description="Allowed models, comma-separated; the first is the default")
    max_tokens: int = Field(default=4096, ge=1, description="Cap on max_tokens of one call")
    budgets: InferenceBudgets = InferenceBudgets()


FlatNames = Mapping[str, tuple[str, ...]]
"""Flat setting name -> path of the nested field it sets (``sandbox_timeout_s`` -> ``("sandbox_limits",
"timeout_s")``)."""


def nest_flat_names(values: Mapping[str, Any], names: FlatNames) -> dict[str, Any]:
    """``values`` with each flat name moved to its nested path; a flat name wins over the nested value."""
    nested = dict(values)
    for flat, path in names.items():
        if flat not in nested:
            continue
        value, node = nested.pop(flat), nested
        for key in path[:-1]:
            child = node.get(key)
            node[key] = child.model_dump() if isinstance(child, BaseModel) else dict(child or {})
            node = node[key]
        node[path[-1]] = value
    return nested


class _FlatNamesSource(PydanticBaseSettingsSource):
    """The environment or the ``.env`` file (``source``) with flat names nested: a flat variable then
    keeps its source's place (below the flags, the environment above ``.env``)."""

    def __init__(self, settings_cls: type[BaseSettings], source: EnvSettingsSource, names: FlatNames) -> None:
        super().__init__(settings_cls)
        self._source = source
        self._names = names

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # never asked: __call__ reads the whole source

    def __call__(self) -> dict[str, Any]:
        values = dict(self._source())
        prefix = self._source.env_prefix.lower()
        for flat in self._names:
            if (value := self._source.env_vars.get(prefix + flat)) is not None:
                values.setdefault(flat, value)
        return nest_flat_names(values, self._names)


class HarnessSettings(BaseSettings):
    """The harness section (worlds, sandbox, inference, logs) with ``home``: the base of every root."""

    model_config = SettingsConfigDict(env_prefix="ARENA_", env_file=".env", extra="ignore",
                                      env_nested_delimiter="__")

    RULE_MODELS: ClassVar[tuple[str, ...]] = ("sandbox_limits", "inference_limits")
    """The nested fields that are rule models: each changes suites, scores or weights."""
    FLAT_NAMES: ClassVar[FlatNames] = {
        **{f"sandbox_{name}": ("sandbox_limits", name) for name in SandboxRules.model_fields},
        "inference_models": ("inference_limits", "models"),
        "inference_max_tokens": ("inference_limits", "max_tokens"),
        **{f"inference_{name}": ("inference_limits", "budgets", name)
           for name in InferenceBudgets.model_fields},
    }

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
    sandbox_limits: SandboxRules = SandboxRules()
    sandbox_uid_base: int = Field(default=61000, ge=1000,
                                  description="First uid/gid of the slots (namespace as root, docker)")
    sandbox_docker_image: str = "shopping-arena-sandbox:latest"
    # The inference endpoint the verified proxy forwards /inference/chat/completions to.
    inference_base_url: str | None = Field(default=None,
                                           description="OpenAI-compatible base URL, e.g. http://host:8000/v1")
    inference_api_key: SecretStr = SecretStr("not-needed")
    inference_limits: InferenceRules = InferenceRules()

    @model_validator(mode="before")
    @classmethod
    def _nest_flat_names(cls, data: Any) -> Any:
        return nest_flat_names(data, cls.FLAT_NAMES) if isinstance(data, Mapping) else data

    @classmethod
    def settings_customise_sources(
            cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource) -> tuple[PydanticBaseSettingsSource, ...]:
        assert isinstance(env_settings, EnvSettingsSource) and isinstance(dotenv_settings, EnvSettingsSource)
        return (init_settings, _FlatNamesSource(settings_cls, env_settings, cls.FLAT_NAMES),
                _FlatNamesSource(settings_cls, dotenv_settings, cls.FLAT_NAMES), file_secret_settings)

    def with_changes(self, **changes: Any) -> Self:
        """A copy with ``changes`` (flat names too), validated; ``model_copy(update=...)`` validates
        nothing and would set a flat name beside its nested field."""
        return self.model_validate({**self.model_dump(), **changes})

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
        """The allowed models, in order (the first is the agents' default model)."""
        return list(self.inference_limits.models)

    def world_dir(self) -> Path:
        name = f"sample-{self.world_products}-seed{self.world_seed}"
        if self.llm() is not None:
            # Reworded worlds are not reproducible byte for byte: never mix them with template ones.
            name += "-llm-" + "".join(c if c.isalnum() else "_" for c in str(self.llm_model))
        return self.root / "worlds" / name
