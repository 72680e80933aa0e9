"""Leak-cluster detection: recall and precision on a synthetic bank with injected disguised copies.

    python -m benchmarks.leakclusters [--problems 100000] [--duplicate-share 0.1] [--seed 0]

The bank is built from sample-world products (``shoppingbench.world``) in the marketplace's own
wording: product, shop and voucher requests over distinct products, each item named by its type with
some of its title's features, model or brand and 1-2 constraints, 70% with a price bound. Originals
are distinct requests: two that would state the same fact words (whatever constraint states them)
are not both kept. A share of the bank is *disguised copies* of originals (:func:`disguise`):
sub-requests and clauses reordered, template words reworded, the opener replaced, filler added, and
fresh target ids, so the shared-targets signal cannot find them and the recall measured is that of
the request-facts similarity (shared targets are tested in ``tests/arena/suites/test_leak_clusters.py``).

Recall is the share of (original, copy) and (copy, copy) pairs that end up in one cluster; precision
is the share of same-cluster pairs that are truly one request. The last line printed is one JSON
object with ``recall``, ``precision``, ``seconds`` (clustering only, generation excluded) and the
bank's make-up.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

import orjson

from arena.suites.clusters import LeakConfig, cluster_problems
from shoppingbench.catalog.models import Product
from shoppingbench.problems import wording
from shoppingbench.problems.models import Category, Problem, RewardTarget, Voucher
from shoppingbench.world import generate_products
from shoppingbench.world.vocabulary import LEAF_BY_PATH

PRICE_SHARE = 0.7
"""Share of requested items with a price bound (most ShoppingBench requests state one)."""
_CATEGORY_MIX: Final[tuple[tuple[Category, float], ...]] = (("product", 0.6), ("shop", 0.2), ("voucher", 0.2))

_REWORDINGS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    (r"\blooking for\b", ("searching for", "hunting for", "trying to find", "on the lookout for")),
    (r"\bi need\b", ("i require", "i'm in need of", "i want")),
    (r"\bcan you find\b", ("could you find", "would you look for", "please locate")),
    (r"\bshow me\b", ("give me", "let me see", "list")),
    (r"\bhelp me find\b", ("help me locate", "assist me in finding")),
    (r"\bpriced under\b", ("costing under", "cheaper than", "at most")),
    (r"\bpriced above\b", ("costing above", "pricier than", "at least")),
    (r"\bpriced between\b", ("costing between", "ranging between")),
    (r"\bthat costs less than\b", ("costing less than", "below")),
    (r"\bthat costs over\b", ("costing over", "above")),
    (r"\bwith free shipping\b", ("shipped for free", "with free delivery")),
    (r"\bfrom an official store\b", ("sold by an official shop", "from LazMall")),
    (r"\bshop\b", ("store", "seller")),
    (r"\bstore\b", ("shop", "seller")),
    (r"\bwant to buy\b", ("would like to purchase", "plan to buy")),
    (r"\bplease\b", ("kindly", "")),
    (r"\bcolor\b", ("colour", "shade")),
)
_OPENER: Final = re.compile(
    r"^(hi! )?(looking for|i need|can you find|show me|searching for|i'm looking for|help me find|"
    r"i want to buy|please find|find me|do you have|any good options for|i'd like to order|"
    r"could you look for|i'm shopping for|find shops offering|is there a single seller that has|"
    r"i'm looking for|i want to get|help me buy)\s+", re.IGNORECASE)
_OPENERS: Final = ("I'd love", "Hey, I want", "Please get me", "My shopping list:", "Hello, I need",
                   "Quick request:", "Could you source")
_FILLERS: Final = ("ideally", "if possible", "asap", "for my home", "as a gift", "today", "thanks!",
                   "for my family", "nothing fancy")
_SPLIT: Final = re.compile(r"(?:, and |, | and |; )")


def disguise(query: str, rng: random.Random) -> str:
    """The same request in other words and another order, keeping every stated fact.

    Voucher rules (after the blank line) are kept as they are; the request part has its clauses and
    sub-requests reordered, template words reworded, its opener replaced and filler words added.
    """
    request, separator, rules = query.partition("\n\n")
    text = _OPENER.sub("", request.strip().rstrip(".?!"))
    pieces = [p for p in _SPLIT.split(text) if p.strip()]
    rng.shuffle(pieces)
    text = wording.join_clauses(pieces, rng)
    for pattern, alternatives in _REWORDINGS:
        if rng.random() < 0.7:
            text = re.sub(pattern, rng.choice(alternatives), text, flags=re.IGNORECASE)
    words = text.split()
    for _ in range(rng.randint(0, 2)):
        words.insert(rng.randint(0, len(words)), rng.choice(_FILLERS))
    disguised = f"{rng.choice(_OPENERS)} {' '.join(words)}."
    return f"{disguised}{separator}{rules}" if separator else disguised


def _item(product: Product, rng: random.Random) -> tuple[str, RewardTarget, frozenset[str]]:
    """A shopper's phrase for ``product``, the reward target it states, and the words of its facts.

    The phrase names the product type with some of its title's features, model or brand, 1-2
    constraints (sku value, attribute, service) and, ``PRICE_SHARE`` of the time, a price bound. The
    fact words ignore which kind of constraint states them ("a yonex set by yonex" is "a set by yonex").
    """
    leaf = LEAF_BY_PATH.get(product.category)
    title = product.title.lower()
    types = [t for t in (leaf.types if leaf else ()) if t in title]
    noun = [max(types, key=len) if types else " ".join(title.split()[:3])]
    features = [f for f in (leaf.features if leaf else ()) if f in title and f not in noun[0]]
    models = [m for m in (leaf.models if leaf else ()) if m in title]
    noun[:0] = rng.sample(features, min(len(features), rng.randint(0, 2)))
    if models and rng.random() < 0.5:
        noun.insert(0, rng.choice(models))
    if product.brand and product.brand in title and rng.random() < 0.5:
        noun.insert(0, product.brand)
    reward: dict[str, object] = {"product_id": product.product_id, "title": [product.title]}
    clauses: list[str] = []
    attributes: list[dict[str, list[str]]] = []
    facts = [*noun]
    others = [*(["sku"] if product.sku_options else []), *(["service"] if product.service else []),
              *(f"attr:{key}" for key in sorted(product.attributes))]
    kinds = rng.sample(others, min(len(others), rng.randint(1, 2)))
    if rng.random() < PRICE_SHARE:
        kinds.append("price")  # last, as shoppers tend to put it
    for kind in kinds:
        if kind == "sku":
            option = product.sku_options[rng.choice(sorted(product.sku_options))]
            key = rng.choice(sorted(option))
            reward["sku_options"] = [{key: option[key]}]
            clauses.append(wording.sku_phrase(key, option[key], rng))
            facts.append(option[key])
        elif kind == "service":
            service = rng.choice(product.service)
            reward["service"] = [service]
            clauses.append(wording.service_phrase(service, rng))
            facts.append(service)
        elif kind == "price":
            high = math.ceil(product.price * rng.uniform(1.05, 1.6))
            reward["price"] = [{"less than": [None, float(high)]}]
            clauses.append(wording.price_phrase("less than", None, high, rng))
            facts.append(f"price<{high}")
        else:
            key = kind.removeprefix("attr:")
            value = rng.choice(product.attributes[key])
            attributes.append({key: [value]})
            clauses.append(wording.attribute_phrase(key, value, rng))
            facts.append(value)
    if attributes:
        reward["attributes"] = attributes
    phrase = wording.article(" ".join(noun))
    if clauses:
        phrase += " " + wording.join_clauses(clauses, rng)
    return phrase, RewardTarget.model_validate(reward), frozenset(" ".join(facts).split())


def _voucher(total: float, rng: random.Random) -> Voucher:
    face_value = max(1, round(total * rng.uniform(0.05, 0.3)))
    return Voucher(voucher_type="platform", threshold=max(1, math.floor(total * 0.5)), discount_type="fixed",
                   face_value=face_value, budget=math.ceil(total - face_value))


def _request(category: Category, products: Sequence[Product],
             rng: random.Random) -> tuple[Problem, tuple[object, ...]]:
    """A request over ``products`` and its facts: requests stating the same facts are one request."""
    items = [_item(p, rng) for p in products]
    phrases = [phrase for phrase, _, _ in items]
    voucher = None
    if category == "product":
        query = wording.product_query(phrases[0], rng)
    elif category == "shop":
        query = wording.shop_query(phrases, rng)
    else:
        voucher = _voucher(sum(p.price for p in products), rng)
        query = f"{wording.voucher_items(phrases, rng)}\n\n{wording.voucher_rules(voucher)}"
    problem = Problem(category=category, query=query, targets=[t for _, t, _ in items], voucher=voucher)
    facts = (category, frozenset(f for _, _, f in items), voucher.model_dump_json() if voucher else None)
    return problem, facts


@dataclass(frozen=True)
class SyntheticBank:
    problems: list[Problem]
    group_of: dict[str, int]
    """Problem id -> the request it states (an original and its copies share one group)."""


def synthetic_bank(size: int, *, duplicate_share: float = 0.1, seed: int = 0) -> SyntheticBank:
    """``size`` problems, ``duplicate_share`` of them disguised copies (1-2 per copied original)."""
    rng = random.Random(seed)
    copies = round(size * duplicate_share)
    originals = size - copies
    stream: Iterator[Product] = generate_products(originals * 4 + 100, seed=seed)
    problems: list[Problem] = []
    group_of: dict[str, int] = {}
    stated: set[tuple[object, ...]] = set()
    categories, weights = zip(*_CATEGORY_MIX, strict=True)
    while len(problems) < originals:
        category = rng.choices(categories, weights)[0]
        count = {"product": 1, "shop": rng.randint(2, 3), "voucher": rng.randint(1, 2)}[category]
        problem, facts = _request(category, [next(stream) for _ in range(count)], rng)
        if facts in stated:
            continue  # the same facts again would be the same request: originals are distinct requests
        stated.add(facts)
        group_of[problem.id] = len(problems)
        problems.append(problem)
    made = 0
    while made < copies:
        original = problems[rng.randrange(originals)]
        group = group_of[original.id]
        for _ in range(min(rng.randint(1, 2), copies - made)):
            copy = Problem(category=original.category, query=disguise(original.query, rng),
                           voucher=original.voucher,
                           targets=[t.model_copy(update={"product_id": f"{t.product_id}~{made}"})
                                    for t in original.targets])
            if copy.id in group_of:
                continue
            problems.append(copy)
            group_of[copy.id] = group
            made += 1
    return SyntheticBank(problems=problems, group_of=group_of)


def pair_scores(cluster_of: dict[str, str], group_of: dict[str, int]) -> tuple[float, float, int, int]:
    """Recall and precision over problem pairs, with the numbers of true and predicted pairs."""

    def pairs(counts: Counter[object]) -> int:
        return sum(n * (n - 1) // 2 for n in counts.values())

    true_pairs = pairs(Counter(group_of.values()))
    predicted = pairs(Counter(cluster_of.values()))
    both = pairs(Counter((cluster_of[pid], group) for pid, group in group_of.items()))
    recall = both / true_pairs if true_pairs else 1.0
    precision = both / predicted if predicted else 1.0
    return recall, precision, true_pairs, predicted


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=100_000, help="bank size, copies included")
    parser.add_argument("--duplicate-share", type=float, default=0.1, help="share of the bank that is copies")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    started = time.perf_counter()
    bank = synthetic_bank(args.problems, duplicate_share=args.duplicate_share, seed=args.seed)
    generated = time.perf_counter() - started
    print(f"bank: {len(bank.problems)} problems in {generated:.1f} s "
          f"({Counter(p.category for p in bank.problems)})", file=sys.stderr)

    started = time.perf_counter()
    clusters = cluster_problems(bank.problems, LeakConfig())
    seconds = time.perf_counter() - started
    recall, precision, true_pairs, predicted = pair_scores(dict(clusters.cluster_of), bank.group_of)
    result = {"recall": round(recall, 5), "precision": round(precision, 5), "seconds": round(seconds, 2),
              "problems": len(bank.problems), "copies": round(args.problems * args.duplicate_share),
              "true_pairs": true_pairs, "predicted_pairs": predicted, "clusters": len(clusters.members),
              "text_links": clusters.text_links, "target_links": clusters.target_links,
              "generation_seconds": round(generated, 2), "load_average": round(os.getloadavg()[0], 2)}
    print(f"recall {recall:.4f}, precision {precision:.4f}, clustering {seconds:.1f} s", file=sys.stderr)
    print(orjson.dumps(result).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
