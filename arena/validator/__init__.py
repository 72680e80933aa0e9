"""The validator service (SPEC 1, 4): one ``tick()`` syncs the chain, ingests uploads, runs qualifying and
race suites through the sandbox, judges and records every attempt, and sets weights each tempo."""

from arena.validator.assemble import agent_files_dir, open_validator, sandbox_runner
from arena.validator.ingest import UploadVerdict, ingest_uploads, upload_verdicts
from arena.validator.runs import SuiteRun, run_id_for
from arena.validator.seeds import LocalChainSeeds, RaceSeeds
from arena.validator.service import Validator, ValidatorConfig

__all__ = ["LocalChainSeeds", "RaceSeeds", "SuiteRun", "UploadVerdict", "Validator", "ValidatorConfig",
           "agent_files_dir", "ingest_uploads", "open_validator", "run_id_for", "sandbox_runner",
           "upload_verdicts"]
