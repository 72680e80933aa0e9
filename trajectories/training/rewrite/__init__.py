"""Sub-task trajectories rewritten into agentic ones (``worker rewrite``): a teacher model writes the
reasoning that drives each of an attempt's verified tool calls, which stay exactly as the proxy logged them.

:mod:`vouched_calls` reads the calls and results a dump row's verified proxy log vouches for, :mod:`prompt`
asks the teacher and checks its untrusted answer, :mod:`teacher` talks to an OpenAI-compatible endpoint,
and :mod:`run` rewrites a dump into a side dataset that SFT reads with ``data.include_rewritten``. The CPU
test double of a teacher is :mod:`trajectories.doubles.scripted_teacher`.
"""
