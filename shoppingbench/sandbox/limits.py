"""Resource limits of one sandbox slot and of each problem run in it: one config for every backend."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shoppingbench.settings import HarnessSettings, SandboxRules

MiB = 1024 * 1024
_RULES = SandboxRules()
"""The rule defaults: the limits that change scores are declared in ``SandboxRules`` (settings, rules
fingerprint) and this runtime form, in bytes, takes its defaults from there."""


class SandboxLimits(BaseModel):
    """What an agent may use. The namespace backend enforces these with rlimits, a PID namespace and
    bounded reads; Docker adds its cgroup limits (memory, pids) from the same numbers."""

    model_config = ConfigDict(frozen=True)

    timeout_s: float = Field(default=_RULES.timeout_s, gt=0, description="Wall-clock limit of one problem")
    cpu_s: int | None = Field(default=_RULES.cpu_s, ge=1,
                              description="CPU seconds of one problem (default: timeout)")
    memory_bytes: int = Field(default=_RULES.memory_mb * MiB, ge=256 * MiB,
                              description="Address space per process")
    processes: int = Field(default=_RULES.processes, ge=8, description="Processes and threads of the sandbox")
    output_bytes: int = Field(default=_RULES.output_kb * 1024, ge=1,
                              description="stdout+stderr one problem may print")
    result_bytes: int = Field(default=_RULES.result_mb * MiB, ge=1024,
                              description="Size of the returned steps as JSON")
    tmp_bytes: int = Field(default=_RULES.tmp_mb * MiB, ge=MiB,
                           description="Private /tmp size; also the file size cap")
    open_files: int = Field(default=256, ge=16)
    startup_timeout_s: float = Field(default=60.0, gt=0, description="Sandbox start until it is ready")
    kill_grace_s: float = Field(default=3.0, gt=0,
                                description="How long past the timeout the host waits to kill the slot")
    stderr_tail_bytes: int = Field(default=8192, ge=0, description="stderr kept in the attempt record")

    @property
    def effective_cpu_s(self) -> int:
        return self.cpu_s if self.cpu_s is not None else max(1, math.ceil(self.timeout_s))

    def rlimits(self, *, with_nproc: bool) -> dict[str, int]:
        """The rlimits the in-sandbox bootstrap applies to itself (``RLIMIT_CPU`` only per problem).

        ``RLIMIT_NPROC`` counts every process of the uid on the host, so it is only meaningful when
        the slot has a uid of its own (the namespace backend as root)."""
        limits: dict[str, Any] = {"AS": self.memory_bytes, "FSIZE": self.tmp_bytes,
                                  "NOFILE": self.open_files, "CORE": 0}
        if with_nproc:
            limits["NPROC"] = self.processes
        return limits

    @classmethod
    def from_settings(cls, settings: HarnessSettings) -> SandboxLimits:
        rules = settings.sandbox_limits
        return cls(timeout_s=rules.timeout_s, cpu_s=rules.cpu_s, memory_bytes=rules.memory_mb * MiB,
                   processes=rules.processes, output_bytes=rules.output_kb * 1024,
                   result_bytes=rules.result_mb * MiB, tmp_bytes=rules.tmp_mb * MiB)
