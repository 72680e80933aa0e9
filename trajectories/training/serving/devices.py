"""What the machine's CPU can do, asked by training (its CPU overrides) and serving (its dtype)."""

from __future__ import annotations

from pathlib import Path


def cpu_has_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX), read from ``/proc/cpuinfo``."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags
