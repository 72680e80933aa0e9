"""Daily dumps: a window of attempts as Parquet and JSONL.gz with a manifest and a dataset card (SPEC 6)."""

from trajectories.dumps.export import DumpWindow, ExportOptions, attempt_id, export_dump
from trajectories.dumps.splits import SPLITS, LedgerSplits, ProblemSplit, Split, SplitRule

__all__ = ["SPLITS", "DumpWindow", "ExportOptions", "LedgerSplits", "ProblemSplit", "Split", "SplitRule",
           "attempt_id", "export_dump"]
