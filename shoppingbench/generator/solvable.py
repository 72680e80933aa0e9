"""Is a worded problem solvable without the target's own vocabulary? Checked with the real search and scorer.

For each item the check searches ``find_product`` with the writer's shopper words (``search_terms``)
and the price and service filters the request states, and looks at everything pages 1..5 list: the
target itself, or another listed product the reward accepts, scored with the real scorer as if it were
recommended (its rule must be 1, title similarity by the scoring embedder included). A shop problem's
items after the first found may be looked for within that shop, as an agent does once it knows the
shop. The whole basket must then still succeed: one shop for a shop problem, within budget for a
voucher problem. The check is conservative: it takes the target when listed, else the first accepted
product in listing order among the first ``weighed`` listed products that meet every stated constraint
but the title (embedding titles is the costly part), and never searches combinations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

from shoppingbench.catalog.models import Product
from shoppingbench.generator.sampler import SampledProblem
from shoppingbench.generator.writer.request import ItemRequest
from shoppingbench.problems.models import Problem
from shoppingbench.problems.solvability import ProductFinder, listed, target_filters
from shoppingbench.scoring.budget import fits_budget
from shoppingbench.scoring.embedder import TitleEmbedder
from shoppingbench.scoring.profiles import PRODUCTION_STRICT
from shoppingbench.scoring.rules import attribute_pairs, judge_target, sku_attr_hits
from shoppingbench.search.base import FindProductQuery

ProductLookup = Callable[[list[str]], dict[str, Product]]
"""Products by id (missing ids left out), as ``BM25SearchEngine.get_products``."""


class RewardCheck:
    """Whether a product other than the target would satisfy an item's reward (rule 1) when recommended."""

    def __init__(self, embedder: TitleEmbedder, title_threshold: float = PRODUCTION_STRICT.title_threshold,
                 *, weighed: int = 5) -> None:
        self.embedder = embedder
        self.title_threshold = title_threshold
        self.weighed = weighed

    @staticmethod
    def meets_all_but_title(item: ItemRequest, product: Product) -> bool:
        """The stated sku/attribute pairs, price conditions and services all hold for ``product``."""
        target = item.target
        pairs = attribute_pairs(target)
        return (sku_attr_hits(product, pairs) == len(pairs)
                and all(c.satisfied_by(product.price) for c in target.price_conditions())
                and all(s in product.service for s in target.service))

    def accepts(self, item: ItemRequest, product: Product) -> bool:
        """The scorer's rule is 1 for ``product`` (call it for products that meet all but the title)."""
        target = item.target
        vectors = self.embedder.embed([product.title, *target.title])
        similarities = [float(vectors[0] @ vectors[i]) for i in range(1, len(vectors))]
        score = judge_target(0, target, product.product_id, product, similarities, self.title_threshold)
        return score.rule_exact >= Fraction(1)


class SolvabilityCheck:
    """The check with one catalog's search (``finder``) and product lookup; see the module docstring."""

    def __init__(self, finder: ProductFinder, products: ProductLookup, rewards: RewardCheck) -> None:
        self.finder = finder
        self.products = products
        self.rewards = rewards

    def _answer(self, item: ItemRequest, terms: str, *, scope: str | None,
                shop_id: str | None) -> Product | None:
        """The target if listed, else the first listed product the reward accepts (of ``shop_id`` when
        the problem needs one shop), else none; ``scope`` limits the search to one shop."""
        price, services = target_filters(item.target)
        ids = listed(self.finder, FindProductQuery(q=terms, price=price, service=services, shop_id=scope))
        if item.product.product_id in ids:
            return item.product
        products = self.products([pid for pid in ids if pid != item.product.product_id])
        weighed = [p for pid in ids if (p := products.get(pid)) is not None
                   and (shop_id is None or p.shop_id == shop_id)
                   and self.rewards.meets_all_but_title(item, p)]
        return next((p for p in weighed[:self.rewards.weighed] if self.rewards.accepts(item, p)), None)

    def solvable(self, problem: SampledProblem, search_terms: Sequence[str]) -> bool:
        """Every item answerable from its shopper words, at least one globally, and the basket succeeds."""
        shop_id = problem.shop_id
        answers: list[Product] = []
        found_globally = False
        for item, terms in zip(problem.items, search_terms, strict=True):
            answer = self._answer(item, terms, scope=None, shop_id=shop_id)
            if answer is not None:
                found_globally = True
            elif shop_id is not None and len(problem.items) > 1:
                answer = self._answer(item, terms, scope=shop_id, shop_id=shop_id)
            if answer is None:
                return False
            answers.append(answer)
        return found_globally and basket_succeeds(problem, answers)


def as_sampled(problem: Problem, products: ProductLookup) -> SampledProblem | None:
    """The sampled form of a generated ``problem`` (to re-check it), or none if a target is missing."""
    found = products([t.product_id for t in problem.targets])
    if any(t.product_id not in found for t in problem.targets):
        return None
    items = tuple(ItemRequest(found[t.product_id], t) for t in problem.targets)
    voucher = problem.voucher
    one_shop = problem.category == "shop" or (voucher is not None and voucher.voucher_type == "shop")
    return SampledProblem(problem.category, items, items[0].product.shop_id if one_shop else None, voucher)


def basket_succeeds(problem: SampledProblem, answers: Sequence[Product]) -> bool:
    """The answers work together: one shop for a shop problem, within budget for a voucher problem."""
    if problem.category == "shop":
        return len({p.shop_id for p in answers}) == 1
    if problem.voucher is not None:
        return fits_budget([p.price for p in answers], {p.shop_id for p in answers}, problem.voucher)
    return True
