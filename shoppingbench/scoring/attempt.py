"""THE scorer: one agent attempt at one problem, exactly as SPEC 2 "Scoring one attempt" says.

Miner tests, validators and training workers all call :func:`score_attempt`, so the same dialogue
always gets the same score. It is pure apart from the embedder (which only turns text into vectors).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from shoppingbench.catalog.models import Product
from shoppingbench.problems.models import Category, Problem
from shoppingbench.scoring.answer import extract_answer, length_score, production_scorer_fails
from shoppingbench.scoring.budget import fits_budget
from shoppingbench.scoring.embedder import TitleEmbedder
from shoppingbench.scoring.format import format_score
from shoppingbench.scoring.profiles import PRODUCTION_STRICT, ScoringProfile
from shoppingbench.scoring.rules import FieldTally, TargetScore, judge_target
from shoppingbench.scoring.titles import title_similarities

UNREADABLE_STEPS: Final = "the first or last step cannot be read (the reference scorer fails the problem)"
"""The ``error`` of an attempt failed under ``production_failures``."""

ProductLookup = Callable[[list[str]], Mapping[str, Product]]
"""Full catalog products for the ids found (``SearchEngine.get_products`` fits)."""


class AttemptScore(BaseModel):
    """Every grade of one attempt. Multi-target figures are means over the problem's targets."""

    model_config = ConfigDict(frozen=True)

    problem_id: str
    category: Category
    success: bool
    gt: float = Field(ge=0, le=1)
    """Share of targets whose exact product was recommended."""
    rule: float = Field(ge=0, le=1)
    found: float = Field(ge=0, le=1)
    """Share of targets paired with an id that exists in the catalog (the original's "product")."""
    title_rate: float | None = None
    price_rate: float | None = None
    service_rate: float | None = None
    sku_attr_rate: float | None = None
    shop: bool | None = None
    """Shop problems only: every target hit (rule > 0) and one shop for all."""
    budget: bool | None = None
    """Voucher problems only: every target hit and the basket fits the budget."""
    format: float = Field(ge=0, le=1)
    length: float = Field(ge=0, le=1)
    answer: list[str] = Field(default_factory=list)
    targets: list[TargetScore] = Field(default_factory=list)
    profile: str = PRODUCTION_STRICT.name
    error: str | None = None
    """Why the attempt was not scored (a crash, a timeout, a dialogue the production scorer cannot read);
    everything is then scored 0."""

    @classmethod
    def failure(cls, problem: Problem, reason: str,
                profile: ScoringProfile = PRODUCTION_STRICT) -> AttemptScore:
        """A crashed or timed-out attempt: no answer, no steps, all grades 0, ``error`` set."""
        targets = [judge_target(i, t, None, None, [], profile.title_threshold)
                   for i, t in enumerate(problem.targets)]
        return _assemble(problem, [], [], targets, profile).model_copy(update={"error": reason})


def _field_rate(tallies: Sequence[FieldTally]) -> float | None:
    """The reference arena's per-field rate: the mean over ALL the problem's targets of each target's
    ``hits / checks``, a target that states nothing of this kind counting 0 (a shop problem asking a
    price of one target in three, met: 1/3). ``None`` when no target states this kind of constraint
    (the reference then reports 0: nothing was asked, so nothing is told).
    """
    if not any(t.checks for t in tallies):
        return None
    return sum(t.rate or 0.0 for t in tallies) / len(tallies)


def _assemble(problem: Problem, steps: object, answer: list[str], targets: list[TargetScore],
              profile: ScoringProfile) -> AttemptScore:
    n = len(targets)
    rule = sum((t.rule_exact for t in targets), Fraction(0)) / n
    # "Hit" means rule > 0 (SPEC 2 and the arena; the original only required the id to exist).
    all_hit = all(t.rule_exact > 0 for t in targets)
    shops = {t.shop_id for t in targets if t.shop_id is not None}
    shop: bool | None = None
    budget: bool | None = None
    if problem.category == "product":
        success = rule >= 1
    elif problem.category == "shop":
        shop = all_hit and len(shops) == 1
        success = rule >= 1 and shop
    else:
        assert problem.voucher is not None  # Problem validates this
        prices = [t.product_price for t in targets if t.product_price is not None]
        budget = all_hit and fits_budget(prices, shops, problem.voucher)
        success = rule >= 1 and budget
    return AttemptScore(
        problem_id=problem.id, category=problem.category, success=success,
        gt=sum(1 for t in targets if t.gt) / n, rule=float(rule),
        found=sum(1 for t in targets if t.found) / n,
        title_rate=_field_rate([t.title for t in targets]),
        price_rate=_field_rate([t.price for t in targets]),
        service_rate=_field_rate([t.service for t in targets]),
        sku_attr_rate=_field_rate([t.sku_attr for t in targets]),
        shop=shop, budget=budget, format=format_score(steps, production=profile.production_format),
        length=length_score(steps),
        answer=answer, targets=targets, profile=profile.name)


def score_attempt(problem: Problem, steps: object, products: ProductLookup, embedder: TitleEmbedder,
                  profile: ScoringProfile = PRODUCTION_STRICT) -> AttemptScore:
    """Score one dialogue (the list of steps an agent returned) against its problem.

    ``steps`` is untrusted and may be anything: junk yields no answer and no format credit, never
    an exception. A product problem scores the first answered id only; shop and voucher problems
    pair the i-th id with the i-th target, ignoring extra ids (original ``eval_*``). Ids missing
    from the catalog score 0. ``products`` is called once with the paired ids; its errors propagate,
    because a catalog outage must not be graded as a bad answer. Under a profile with
    ``production_failures``, a first or last step the reference's scorer cannot read fails the attempt.
    """
    if profile.production_failures and production_scorer_fails(steps):
        return AttemptScore.failure(problem, UNREADABLE_STEPS, profile)
    answer = extract_answer(steps, production=profile.production_answers)
    paired = answer[:1] if problem.category == "product" else answer[:len(problem.targets)]
    present = [pid for pid in paired if pid]
    catalog = products(present) if present else {}
    # "" is a skipped position: it pairs with its target like a missing recommendation.
    ids: list[str | None] = [pid or None for pid in paired]
    ids += [None] * (len(problem.targets) - len(ids))
    matched = [catalog.get(pid) if pid is not None else None for pid in ids]
    similarities = title_similarities(problem, matched, embedder, profile.reference_embedding_model)
    pairings = zip(problem.targets, ids, matched, similarities, strict=True)
    targets = [judge_target(i, target, pid, product, sims, profile.title_threshold)
               for i, (target, pid, product, sims) in enumerate(pairings)]
    return _assemble(problem, steps, answer, targets, profile)
