"""Bank style: a hostile miner reads past problem banks once their races are public and writes a parser
for the bank model's style. What such a parser read off prompt 4's recorded passes was the prompt itself:
the model wrote the services as the prompt's catalog strings ("official LazMall store"), named the
voucher, stated item counts, wrote a line per product, and (asked for "one store") never said "shop".
Each case draws the prompts of many bank requests from their seeds and checks that the prompt hands out
none of those styles, and that an answer copying the prompt's own fact wording is refused.

How much a parser tuned on one recorded pass still gains on another pass is measured by the validity
benchmark (``--recorded ... --half second --parser benchmarks/validity_bank_parser.py``,
docs/validity.md): too slow for this battery.
"""

from __future__ import annotations

from typing import Final

import pytest

from shoppingbench.catalog.models import Product
from shoppingbench.generator.writer.request import ItemRequest
from shoppingbench.generator.writer.rewrite import RewriteTask, requirements_prompt, rewrite_refusal
from shoppingbench.problems.models import Category, RewardTarget

SEEDS: Final = [f"seed-{n}" for n in range(200)]
CATALOG_STRINGS: Final = ("official LazMall store", "flash sale (LazFlash)", "freeShipping", "flashsale")


def _task(category: Category, seed: str, items: int = 3) -> RewriteTask:
    requests = []
    for n in range(items):
        product = Product(product_id=str(n), shop_id="1", price=250 + n,
                          title=f"Wide Brim Straw Sun Hat Model {n} Beach Summer Beige UV")
        target = RewardTarget(product_id=str(n), title=[product.title], sku_options=[{"color": "beige"}],
                              attributes=[{"size": [f"5{n} cm"]}], service=["COD", "official", "flashsale"],
                              price=[{"less than": [None, 300 + n]}])
        requests.append(ItemRequest(product=product, target=target))
    return RewriteTask(category, requests, draft="Find sun hats.", style_seed=seed)


def _prompts(category: Category) -> list[str]:
    return [requirements_prompt(_task(category, seed)) for seed in SEEDS]


@pytest.mark.parametrize("category", ["shop", "voucher"])
def test_the_prompt_never_gives_the_catalogs_service_strings(category: Category) -> None:
    assert not [p for p in _prompts(category) if any(s in p for s in CATALOG_STRINGS)]


@pytest.mark.parametrize("category", ["shop", "voucher"])
def test_the_prompt_never_asks_for_a_line_per_product(category: Category) -> None:
    assert not [p for p in _prompts(category) if "one line" in p or "line per product" in p]


@pytest.mark.parametrize("category", ["shop", "voucher"])
def test_the_prompt_seldom_asks_to_count_the_items(category: Category) -> None:
    """Real requests state a count in 2.5% of shop and voucher requests; prompt 4 asked for one in half."""
    asked = sum(any(ask in p for ask in ("how many products you want", "Mention the number of items"))
                for p in _prompts(category))
    assert asked <= 0.25 * len(SEEDS)


def test_a_shop_prompt_always_asks_for_a_shop() -> None:
    """Every real shop request says "shop"; asked for "one store" or "the same seller", a model writes no
    "shop" and the request reads unlike any real one."""
    for prompt in _prompts("shop"):
        ask, style = prompt.split("\n", 1)[0], prompt.rsplit("\n\n", 2)[-2]
        assert "shop" in ask and "shop" in style, prompt


def test_a_voucher_prompt_seldom_asks_to_mention_the_voucher() -> None:
    """Real voucher requests never name the voucher (its rules follow as a block); prompt 4's twins did."""
    mentioned = sum("say the order is for a voucher" in p for p in _prompts("voucher"))
    assert mentioned <= 0.25 * len(SEEDS)


def test_an_answer_copying_the_prompts_fact_wording_is_refused() -> None:
    task = _task("shop", "seed-7")
    facts = [line[2:] for line in requirements_prompt(task).splitlines() if line.startswith("- ")]
    worded = [fact for fact in facts if "hat" not in fact.lower()]
    copied = "Looking for a shop with " + "; ".join(worded) + "."
    refusal = rewrite_refusal(task, copied)
    assert refusal is not None and refusal.startswith(("repeats the prompt's wording", "repeats "))
