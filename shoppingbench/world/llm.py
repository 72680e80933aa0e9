"""Optional LLM paraphrasing of template queries, with a fact check that falls back to the template.

Template queries are correct but repetitive. When an OpenAI-compatible endpoint is configured, each
request (for voucher problems only the item part: the budget and voucher rules are kept verbatim,
since they are the problem's arithmetic) is rewritten by the model. A rewrite is kept only if it
still states every fact the reward checks: each sku and attribute value, each price bound and each
required service, plus every search word the template gave for each item, so the request stays
solvable the same way. It must also be non-empty and mention no product id. Otherwise, or when the
call fails, the template query stays.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

import openai
import structlog

from shoppingbench.catalog.models import Product
from shoppingbench.problems.models import Problem
from shoppingbench.problems.wording import number
from shoppingbench.scoring.rules import attribute_pairs
from shoppingbench.settings import LLMSettings
from shoppingbench.world.problems import request_keywords

log = structlog.get_logger(__name__)

_RULES_SEPARATOR: Final = "\n\nMy budget is only"
_SYSTEM_PROMPT: Final = (
    "You rewrite online shopping requests so they sound like a real shopper typed them. Keep every "
    "detail exactly as written: product kinds, brand names, colors, sizes, materials, model numbers, "
    "flavors, scents, every number and price, and delivery or store requirements (free shipping, cash on "
    "delivery, official store, flash sale). Do not add, drop or change any requirement, and keep the items "
    "in the same order. Reply with the rewritten request only, without quotes or explanations."
)
_SERVICE_WORDS: Final[dict[str, tuple[str, ...]]] = {
    "official": ("official", "lazmall"),
    "freeShipping": ("free shipping", "free delivery", "ships for free", "ship for free", "shipping free"),
    "COD": ("cash on delivery", "cod", "on delivery"),
    "flashsale": ("flash",),
}


def _contains(text: str, phrase: str) -> bool:
    return re.search(rf"(?<![a-z0-9]){re.escape(phrase.lower())}(?![a-z0-9])", text) is not None


def keeps_facts(original: Problem, rewrite: str, products: dict[str, Product]) -> bool:
    """Whether ``rewrite`` still states everything ``original``'s reward checks (see module docs)."""
    text = rewrite.lower()
    if not text.strip() or any(target.product_id in text for target in original.targets):
        return False
    for target in original.targets:
        values = [v for _, v in attribute_pairs(target)]
        values += [number(bound) for condition in target.price for bounds in condition.values()
                   for bound in bounds if bound is not None]
        if not all(_contains(text, value) for value in values):
            return False
        if not all(any(_contains(text, word) for word in _SERVICE_WORDS[s]) for s in target.service):
            return False
        product = products.get(target.product_id)
        if product is not None:
            wanted = set(request_keywords(original.query, product).split())
            if not wanted <= set(request_keywords(rewrite, product).split()):
                return False
    return True


def _rewrite(client: openai.OpenAI, settings: LLMSettings, text: str) -> str | None:
    try:
        response = client.chat.completions.create(
            model=settings.model, temperature=settings.temperature,
            messages=[{"role": "system", "content": _SYSTEM_PROMPT}, {"role": "user", "content": text}],
        )
    except openai.OpenAIError as exc:
        log.warning("paraphrase_call_failed", error=str(exc))
        return None
    content = response.choices[0].message.content if response.choices else None
    return content.strip().strip('"').strip() if content else None


def paraphrase_queries(problems: Sequence[Problem], client_settings: LLMSettings | None,
                       products: Sequence[Product] = ()) -> list[Problem]:
    """Problems with LLM-rewritten queries where the rewrite keeps every fact, else unchanged.

    ``products`` (the catalog, or at least the targets) enables the search-word check; without it
    only the reward facts are checked. With no settings the problems come back as they are.
    """
    if client_settings is None:
        return list(problems)
    by_id = {p.product_id: p for p in products}
    client = openai.OpenAI(base_url=client_settings.base_url,
                           api_key=client_settings.api_key.get_secret_value(),
                           timeout=client_settings.timeout_seconds, max_retries=1)
    out: list[Problem] = []
    kept = 0
    for problem in problems:
        items, separator, rules = problem.query.partition(_RULES_SEPARATOR)
        rewrite = _rewrite(client, client_settings, items)
        query = f"{rewrite}{separator}{rules}" if rewrite else ""
        if rewrite and rewrite != items and keeps_facts(problem, query, by_id):
            out.append(Problem(category=problem.category, query=query, targets=problem.targets,
                               voucher=problem.voucher, difficulty=problem.difficulty))
            kept += 1
        else:
            out.append(problem)
    log.info("paraphrased", problems=len(out), rewritten=kept, kept_template=len(out) - kept)
    return out
