"""For CPU runs of the real training code: the tiny Qwen3 with the real vocabulary, built offline (``model:
tiny``), and a real pretrained base model, Gemma 3 270M converted from the ``real-model`` extra's GGUF
(:mod:`gemma`, with a tiny Gemma of the same shape for tests). Sample dumps to train on are test doubles
(:mod:`trajectories.doubles.sample_dumps`)."""
