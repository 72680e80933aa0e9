"""For CPU runs of the real training code: the tiny Qwen3 with the real vocabulary, built offline (``model:
tiny``). Sample dumps to train it on are test doubles (:mod:`trajectories.doubles.sample_dumps`)."""
