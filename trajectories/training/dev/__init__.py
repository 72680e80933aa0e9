"""For CPU runs of the real training code: the tiny Qwen3 built offline and small sample dumps."""
