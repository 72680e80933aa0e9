"""What static analysis reports about a submitted agent file."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

Category = Literal["security", "integrity"]
"""``security``: the file cannot be run safely (or at all); ``integrity``: it tries to cheat or hide what
it does. The race may shorten the cooldown after a security rejection, never after an integrity one."""


class Finding(BaseModel):
    """One reason to reject the file."""

    model_config = ConfigDict(frozen=True)

    rule: str = Field(description="Stable rule name, e.g. 'process' or 'embedded_product_id'")
    line: int | None = Field(description="1-based line in the file, when the rule points at one")
    category: Category
    message: str


class CheckReport(BaseModel):
    """The verdict on one agent file: accepted when there are no findings."""

    model_config = ConfigDict(frozen=True)

    sha256: str = Field(description="sha256 of the file's bytes")
    size_bytes: int
    findings: list[Finding] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return not self.findings

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rejection(self) -> Category | None:
        """``integrity`` if any finding is, else ``security`` if any finding at all, else ``None``."""
        categories = {finding.category for finding in self.findings}
        if "integrity" in categories:
            return "integrity"
        return "security" if categories else None
