"""The sampling settings several parts of the training package share, each declared once.

Held-out evaluation (``worker evaluate``, the pipeline's evaluation), the sampling stages' rollouts and the
loopback model server all cap completions and sample the same way unless a config says otherwise, so a
model is measured as it was rolled out.
"""

from __future__ import annotations

MAX_TOKENS = 4096
"""Cap on tokens per completion (a request that asks for none gets this many at most)."""

TEMPERATURE = 1.0
"""Sampling temperature forced on every call (agents usually ask for 0, which would make k samples one)."""

SAMPLES_PER_PROBLEM = 4
"""k: attempts per problem, for pass@k and for rejection sampling."""

WORKERS = 2
"""Problems run in the sandbox at once."""
