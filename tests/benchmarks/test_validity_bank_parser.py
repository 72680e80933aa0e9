"""The style-tuned hostile parser (``benchmarks/validity_bank_parser.py``): the rules it adds read the
bank model's forms, and it loads as a ``--parser`` file of the validity benchmark."""

from __future__ import annotations

from pathlib import Path

from benchmarks import validity_bank_parser
from benchmarks.validity.run import load_parser
from benchmarks.validity_bank_parser import parse_query


def _names(query: str) -> list[str]:
    return [item.name for item in parse_query(query)[0]]


def test_marked_sentences_are_the_items_and_the_orders_own_sentences_are_dropped() -> None:
    items, budget = parse_query("I want to buy all of these from one shop. First, a red wool hat over 100 "
                                "PHP. Second, a blue scarf with free shipping. Also, a green glove. Which "
                                "shop has them all?")
    assert [item.name for item in items] == ["red wool hat", "blue scarf", "green glove"]
    assert items[0].price == "100-" and items[1].services == ["freeShipping"] and budget is None
    assert _names("I need 3 products. First, a hairband. Second, dark jeans. Also, a cordless wrench.") == \
        ["hairband", "dark jeans", "cordless wrench"]
    assert _names("I'm looking for two things from the same shop. One is a face cream costing more than 497 "
                  "pesos. The other is a body powder, 125g.") == ["face cream", "body powder"]


def test_a_request_naming_no_shop_voucher_or_count_is_one_item() -> None:
    items, _ = parse_query("Could you help me find a heavy duty sliding gate roller wheel? I need one that "
                           "will keep my gate gliding smoothly.")
    assert [item.name for item in items] == ["heavy duty sliding gate roller wheel"]
    assert _names("Find me a men's deep V-neck tee in large; the default material is fine.") == \
        ["men's deep v-neck tee"]


def test_questions_about_the_shop_and_greetings_are_not_items() -> None:
    assert _names("Hi! I need an angle valve priced 1-97 PHP, plus a toilet seat between 117 and 357 PHP. "
                  "Is there a shop that carries both? Thanks!") == ["angle valve", "toilet seat"]
    assert _names("I'm after a plastic hair brush on LazFlash for more than 6 pesos, and a short wallet in "
                  "color a; which shop sells all of them?") == ["plastic hair brush", "short wallet"]


def test_it_runs_as_a_parser_file_of_the_benchmark() -> None:
    loaded = load_parser(Path(validity_bank_parser.__file__))
    query = "First, a red hat. Second, a blue scarf, from one shop."
    assert repr(loaded.parse_query(query)) == repr(parse_query(query))
