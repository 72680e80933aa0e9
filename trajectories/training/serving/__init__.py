"""A checkpoint served behind an OpenAI-compatible endpoint: transformers on loopback (CPU and tests) or
``vllm serve`` (GPUs), chosen per host, for rollouts and held-out evaluation."""
