"""Grading one attempt into its record: the one path from "what an agent did" to an AttemptRecord.

The sandboxed runner (``shoppingbench.sandbox``), the in-process evaluator (``shoppingbench.evaluation``),
the validator and the training worker all grade through :class:`Grader`, so a dialogue gets the same
score and record whichever ran it: the reference scorer, then the verified-answer rule
(:mod:`shoppingbench.grading.verified`) when the attempt ran behind the verified proxy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shoppingbench.grading.verified import check_answer
from shoppingbench.problems.models import Problem
from shoppingbench.records import AttemptFailure, AttemptRecord, ProxyCall
from shoppingbench.scoring.answer import as_steps
from shoppingbench.scoring.attempt import AttemptScore, ProductLookup, score_attempt
from shoppingbench.scoring.embedder import CachedEmbedder, MiniLMEmbedder, TitleEmbedder
from shoppingbench.scoring.profiles import ScoringProfile, get_profile

if TYPE_CHECKING:  # an annotation only: the settings tree sits above scoring
    from shoppingbench.settings import HarnessSettings


@dataclass(frozen=True)
class Grader:
    """Scores attempts with the one scorer and wraps them into records."""

    products: ProductLookup
    embedder: TitleEmbedder
    profile: ScoringProfile

    @classmethod
    def from_settings(cls, products: ProductLookup, settings: HarnessSettings) -> Grader:
        """The production grader: MiniLM title vectors cached under the data root, the configured profile."""
        return cls(products, CachedEmbedder(MiniLMEmbedder(), settings.embedding_cache),
                   get_profile(settings.scoring_profile))

    def record(self, *, run_id: str, agent_hash: str, problem: Problem, steps: object,
               failure: AttemptFailure | None, started_at: float, finished_at: float,
               proxy_log: Sequence[ProxyCall] | None = None, stderr_tail: str = "",
               agent_ms: float | None = None) -> AttemptRecord:
        """The record of one attempt. A failed attempt scores 0 everywhere with the failure's reason.

        ``proxy_log`` is the attempt's verified proxy log; with one (every sandboxed run: miner test,
        validator, worker) the arena's verified-answer rule applies (``shoppingbench.grading.verified``): an
        answer with an id no tool returned fails as ``unverified_answer``, scored 0, with the reference
        scorer's grades kept in ``reference_score``. Without one (trusted in-process runs) it cannot apply.

        The record carries its echo measure (``AttemptRecord.measure_echoes``): taken here, on the runner's
        thread while other slots wait on the model, rather than again by the store's ingest and the judges.
        """
        reference: AttemptScore | None = None
        verified: bool | None = None
        if failure is not None:
            score = AttemptScore.failure(problem, failure.reason, self.profile)
            recorded: list[Any] = []
        else:
            score = score_attempt(problem, steps, self.products, self.embedder, self.profile)
            recorded = list(as_steps(steps))  # exactly what the scorer read as steps
            if proxy_log is not None:
                check = check_answer(score.answer, proxy_log)
                verified = check.verified
                if not verified:
                    failure, reference = check.failure(), score
                    score = AttemptScore.failure(problem, failure.reason, self.profile).model_copy(
                        update={"answer": reference.answer})
        return AttemptRecord(run_id=run_id, problem_id=problem.id, category=problem.category,
                             query=problem.query, agent_hash=agent_hash, steps=recorded,
                             proxy_log=list(proxy_log or ()), score=score, reference_score=reference,
                             answer_verified=verified, failure=failure, started_at=started_at,
                             finished_at=finished_at, stderr_tail=stderr_tail, agent_ms=agent_ms,
                             ).measure_echoes()
