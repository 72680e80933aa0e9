"""Where the trajectory store lives: ``ARENA_STORE_URL``, else a SQLite file under ``ARENA_HOME``."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class StoreSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ARENA_", env_file=".env", extra="ignore")

    home: Path = Field(default=Path("~/.shopping-arena"), description="Data root of the arena")
    store_url: str | None = Field(default=None, description=(
        "SQLAlchemy URL of the store, e.g. postgresql+psycopg://user@host:5432/arena. "
        "Default: the embedded SQLite file <home>/trajectories.sqlite3"))

    def url(self) -> str:
        if self.store_url:
            return self.store_url
        return f"sqlite:///{self.home.expanduser() / 'trajectories.sqlite3'}"
