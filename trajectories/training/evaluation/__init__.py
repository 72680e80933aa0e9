"""Held-out evaluation of checkpoints: running them through the validator's path, pass@k and hallucination
figures, plots, the per-stage table of a pipeline and the model registry."""
