"""The validity benchmark (``python -m benchmarks.validity``, docs/validity.md): :mod:`.benchmark` runs it,
:mod:`.run` writes twins and runs the agents, :mod:`.metrics` defines the wording figures,
:mod:`.recorded_rewrites` answers the bank's prompts from a file. The hostile parsers it runs are agent
files beside this package (``benchmarks/validity_parser.py``, ``benchmarks/validity_bank_parser.py``)."""
