"""The validator service (SPEC 1, 4): one ``tick()`` syncs the chain, ingests uploads, runs qualifying and
race suites through the sandbox, judges and records every attempt, and sets weights each tempo."""

from arena.submissions.store import UploadVerdict
from arena.validator.assemble import (
    agent_files_dir,
    first_race_day,
    open_agent_runner,
    open_validator,
    require_registration,
    sandbox_runner,
    validator_catalog,
)
from arena.validator.ingest import ingest_uploads, upload_verdicts
from arena.validator.runs import SuiteRun, run_id_for
from arena.validator.seeds import ChainSeeds, first_block_at_or_after
from arena.validator.service import Validator, ValidatorConfig

__all__ = ["ChainSeeds", "SuiteRun", "UploadVerdict", "Validator", "ValidatorConfig", "agent_files_dir",
           "first_block_at_or_after", "first_race_day", "ingest_uploads", "open_agent_runner",
           "open_validator", "require_registration", "run_id_for", "sandbox_runner", "upload_verdicts",
           "validator_catalog"]
