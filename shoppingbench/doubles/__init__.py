"""Test and demo doubles: stand-ins for a hosted LLM and for hostile miners, never used by a validator's
scoring path. Only entry points (the demo, ``--scripted-llm``, the benchmarks) and the tests import them."""
