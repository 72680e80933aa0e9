"""The capacity benchmark (``python -m benchmarks.capacity``): :mod:`.benchmark` runs a busy day through
the validator's concurrent path, :mod:`.llm` is the LLM double it calls, :mod:`.probe` reads memory, CPU
and the store off the machine."""
