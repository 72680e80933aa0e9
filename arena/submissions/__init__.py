"""Signed agent submissions: the miner's upload (``client``), the validator's checks (``gate``) and its
``POST /submissions`` router (``api``)."""

from arena.submissions.api import submissions_router
from arena.submissions.client import UploadOutcome, upload
from arena.submissions.gate import SubmissionGate
from arena.submissions.models import RefusalCode, Submission, SubmissionRefused, UploadBody

__all__ = ["RefusalCode", "Submission", "SubmissionGate", "SubmissionRefused", "UploadBody", "UploadOutcome",
           "submissions_router", "upload"]
