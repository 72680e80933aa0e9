"""The generator's lexicon writer: deterministic bytes, items named by kind (never a run of title words),
no raw key names, every stated value recoverable in its everyday form, ShoppingBench's voucher text."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoppingbench.catalog.models import Product
from shoppingbench.generator.writer import LexiconWriter
from shoppingbench.generator.writer.build import fallback_lexicon, scan
from shoppingbench.generator.writer.lexicon import SAMPLE_LEXICON_FILE, load_lexicon, load_phrasing
from shoppingbench.generator.writer.request import ItemRequest, WrittenRequest
from shoppingbench.generator.writer.rules import clean_value, longest_title_run, varied_value
from shoppingbench.problems import wording
from shoppingbench.problems.draws import HashDraws
from shoppingbench.problems.models import Category, Problem, RewardTarget
from shoppingbench.problems.terms import price_condition, stated_target
from shoppingbench.world.catalog import generate_products

SAMPLE_PROBLEMS = Path(__file__).resolve().parents[2] / "fixtures" / "samples"


@pytest.fixture(scope="module")
def sample_writer() -> LexiconWriter:
    return LexiconWriter(load_lexicon(SAMPLE_LEXICON_FILE))


def _sample_requests(count: int) -> Iterator[ItemRequest]:
    """Sample-world products with every kind of constraint stated: an sku option, up to two attributes,
    services and a price mode."""
    for index, product in enumerate(generate_products(count, seed=3)):
        rng = HashDraws("requests", str(index))
        sku = next(iter(product.sku_options.values()), {})
        attributes = [{key: values[:1]} for key, values in sorted(product.attributes.items())[:2]]
        prices = [price_condition(product.price, rng)] if index % 2 else []
        yield ItemRequest(product, stated_target(product, sku=sku, attributes=attributes,
                                                 services=product.service[:index % 3], prices=prices))


def _real_problems() -> list[Problem]:
    """The real ShoppingBench problems kept as test fixtures (GPT-written queries, real titles and keys)."""
    problems = []
    for category in ("product", "shop", "voucher"):
        for line in (SAMPLE_PROBLEMS / f"shoppingbench_{category}_sample.jsonl").read_text().splitlines():
            problems.append(Problem.from_shoppingbench(json.loads(line), category))
    return problems


def _product_for(target: RewardTarget) -> Product:
    """A product satisfying ``target``, as the calibration catalog rebuilds them (no category, no brand)."""
    low = min((c.low or 0 for c in target.price_conditions()), default=0.0)
    sku = {key: value for option in target.sku_options for key, value in option.items()}
    attributes = {key: values for attribute in target.attributes for key, values in attribute.items()}
    return Product(product_id=target.product_id, shop_id="1", title=target.title[0], price=low + 1,
                   sku_options={"1": sku} if sku else {}, attributes=attributes, service=target.service)


def _real_requests() -> list[tuple[Problem, list[ItemRequest]]]:
    return [(p, [ItemRequest(_product_for(t), t) for t in p.targets]) for p in _real_problems()]


@pytest.fixture(scope="module")
def real_writer() -> LexiconWriter:
    phrasing = load_phrasing()
    products = [request.product for _, requests in _real_requests() for request in requests]
    return LexiconWriter(fallback_lexicon(scan(products, phrasing), phrasing))


def _stated(writer: LexiconWriter, target: RewardTarget) -> list[str]:
    """Every form a stated value may take in the query (everyday, and varied)."""
    return [form for statement in writer.statements(target) for form in writer.said_forms(statement.value)]


def _without_values(phrase: str, values: list[str]) -> str:
    """The phrase with its stated values cut out (a value may itself be title words, as in real queries)."""
    for value in sorted(values, key=len, reverse=True):
        phrase = phrase.replace(value, " zzcut ")
    return phrase


def test_same_draws_same_bytes_and_other_draws_other_wording(sample_writer: LexiconWriter) -> None:
    requests = list(_sample_requests(12))

    def written(salt: str) -> list[WrittenRequest]:
        return [sample_writer.write("shop", requests[i:i + 3], None, HashDraws(salt, str(i)))
                for i in (0, 3, 6, 9)]

    first, again, other = written("k"), written("k"), written("x")
    assert first == again
    assert [w.query for w in first] != [w.query for w in other]


def test_sample_world_items_are_named_by_kind_not_by_title_runs(sample_writer: LexiconWriter) -> None:
    checked = 0
    for index, request in enumerate(_sample_requests(300)):
        written = sample_writer.write("product", [request], None, HashDraws("span", str(index)))
        phrase = _without_values(written.items[0].phrase, _stated(sample_writer, request.target))
        assert longest_title_run(phrase, request.product.title) < 3, (phrase, request.product.title)
        assert "in its name" not in written.query
        checked += 1
    assert checked == 300


@pytest.mark.parametrize("salt", ["a", "b", "c"])
def test_real_problems_twins_name_items_by_kind(real_writer: LexiconWriter, salt: str) -> None:
    for problem, requests in _real_requests():
        written = real_writer.write(problem.category, requests, problem.voucher, HashDraws(salt, problem.id))
        for request, item in zip(requests, written.items, strict=True):
            phrase = _without_values(item.phrase, _stated(real_writer, request.target))
            assert longest_title_run(phrase, request.product.title) < 3, (phrase, request.product.title)
            kind = item.search_terms.split()
            assert kind and item.phrase.strip()


def test_no_raw_key_names_and_every_value_recoverable(real_writer: LexiconWriter,
                                                      sample_writer: LexiconWriter) -> None:
    cases = [(real_writer, problem.category, requests) for problem, requests in _real_requests()]
    cases += [(sample_writer, "product", [request]) for request in _sample_requests(150)]
    raw_keys = 0
    for index, (writer, category, requests) in enumerate(cases):
        written = writer.write(category, requests, None, HashDraws("values", str(index)))
        query = written.query.lower()
        for request, item in zip(requests, written.items, strict=True):
            keys = [k for o in request.target.sku_options for k in o] + [k for a in request.target.attributes
                                                                         for k in a]
            said = _without_values(query, _stated(writer, request.target))  # "all skin types" is a value
            raw_keys += any(k.lower() in said or k.lower().replace("_", " ") in said
                            for k in keys if "_" in k)
            for statement in writer.statements(request.target):
                forms = writer.said_forms(statement.value)
                assert any(f in query and f in item.search_terms for f in forms), (forms, written.query)
    assert raw_keys == 0


def test_values_in_everyday_form_keep_their_numbers() -> None:
    phrasing = load_phrasing()
    assert clean_value("int:m", "size", phrasing) == "medium"
    assert clean_value("l", "size", phrasing) == "large"
    assert clean_value("eu:40", "size", phrasing) == "EU size 40"
    assert clean_value("waist:33", "size", phrasing) == "waist 33"
    assert clean_value("texture / embroidery", "pattern", phrasing) == "texture or embroidery"
    assert clean_value("white/orange", "color", phrasing) == "white and orange"
    assert clean_value("10pcs/set", "quantity", phrasing) == "10pcs/set"
    assert clean_value("3/8", "size", phrasing) == "3/8"
    variants = phrasing.value_variants
    assert varied_value("short sleeve", variants) == "short sleeves"
    assert varied_value("2 pcs", variants) == "2 pieces" and varied_value("30m", variants) == "30 m"
    assert varied_value("13pro+5g", variants) == "13pro+5g" and varied_value("1.5l", variants) == "1.5 l"


def test_services_prices_and_the_voucher_text(real_writer: LexiconWriter) -> None:
    phrasing = real_writer.lexicon.phrasing
    for problem, requests in _real_requests():
        written = real_writer.write(problem.category, requests, problem.voucher, HashDraws("svc", problem.id))
        items_text, _, rules = written.query.partition("\n\n")
        for request, item in zip(requests, written.items, strict=True):
            for service in request.target.service:  # in the item, or said once for every item
                assert any(p in items_text for p in phrasing.services[service]), (service, items_text)
            for condition in request.target.price_conditions():
                for bound in (condition.low, condition.high):
                    assert bound is None or wording.number(bound) in item.phrase
        if problem.voucher is not None:
            assert rules == wording.voucher_rules(problem.voucher)
            budget = wording.number(problem.voucher.budget)
            assert rules.startswith(f"My budget is only `{budget}`, but I have a voucher with the following")
        else:
            assert not rules and items_text == written.query


def test_the_key_names_the_lexicon_and_a_changed_lexicon_changes_key_and_bytes() -> None:
    lexicon = load_lexicon(SAMPLE_LEXICON_FILE)
    writer = LexiconWriter(lexicon)
    import hashlib
    assert writer.key.endswith(hashlib.sha256(SAMPLE_LEXICON_FILE.read_bytes()).hexdigest())
    frames = lexicon.phrasing.frames.model_copy(update={"product": ["Get me {item} now."]})
    changed = LexiconWriter(lexicon.model_copy(update={"phrasing": lexicon.phrasing.model_copy(
        update={"frames": frames})}))
    assert changed.key != writer.key
    request = next(_sample_requests(1))
    category: Category = "product"
    assert changed.write(category, [request], None, HashDraws("k")).query.startswith("Get me ")
    assert changed.write(category, [request], None, HashDraws("k")) != writer.write(category, [request], None,
                                                                                     HashDraws("k"))


def test_multi_item_requests_come_in_several_structures(real_writer: LexiconWriter) -> None:
    """Items joined in one sentence, added in sentences of their own ("Also, look for ..."), listed by
    ordinals or numbers, or named first with one sentence of requirements each. Every stated value is in
    each structure."""
    frames = real_writer.lexicon.phrasing.frames
    seen: set[str] = set()
    for problem, requests in _real_requests():
        if len(requests) < 2:
            continue
        for salt in range(12):
            written = real_writer.write(problem.category, requests, None, HashDraws("shape", str(salt)))
            text = written.query
            if any(f". {f.split('{')[0]}" in text for f in frames.detached_item):  # ". For the fan, ..."
                seen.add("detached")
            elif "Second" in text:
                seen.add("listed")
            elif " 2) " in text or " 2. " in text:  # numbered_item
                seen.add("numbered")
            elif any(f" {f.split('{')[0]}" in text for f in frames.followups):
                seen.add("followed")
            else:
                seen.add("joined")
            for request in requests:
                for statement in real_writer.statements(request.target):
                    assert any(f in text.lower() for f in real_writer.said_forms(statement.value))
    assert seen == {"detached", "listed", "numbered", "followed", "joined"}


def test_a_service_every_item_asks_for_is_sometimes_said_once(sample_writer: LexiconWriter) -> None:
    requests = [ItemRequest(r.product, RewardTarget(product_id=r.product.product_id, service=["COD"]))
                for r in _sample_requests(3)]
    phrasing = sample_writer.lexicon.phrasing
    shared = 0
    for salt in range(20):
        query = sample_writer.write("shop", requests, None, HashDraws("shared", str(salt))).query
        assert all("on delivery" in phrase for phrase in phrasing.services["COD"])
        said = query.count("on delivery")
        once = any(f.split("{")[0] in query for f in phrasing.frames.shared_services)
        assert said == (1 if once else 3), query
        shared += once
    assert 0 < shared < 20


def test_a_price_said_as_a_verb_follows_a_clause_or_that_and_agrees_with_the_item(
        real_writer: LexiconWriter) -> None:
    """"a rack that costs over 40 PHP" or "a rack with free shipping and costs over 40 PHP", never "a rack
    costs over 40 PHP"; "racks that cost ...", never "racks that costs ..."."""
    verbs, plural_subjects = 0, 0
    for problem, requests in _real_requests():
        for salt in range(6):
            for item in real_writer.write(problem.category, requests, None,
                                          HashDraws("verbs", problem.id, str(salt))).items:
                for match in re.finditer(r"(\S+) (costs|cost|is priced|are priced) ", item.phrase):
                    verbs += 1
                    assert match.group(1) in ("that", "and") or match.group(1).endswith(","), item.phrase
                    plural_subjects += match.group(2) in ("cost", "are priced")
    assert verbs > 20 and 0 < plural_subjects < verbs


def test_two_items_are_sometimes_both(real_writer: LexiconWriter) -> None:
    pairs = [(p, r) for p, r in _real_requests() if len(r) == 2]
    queries = [real_writer.write(p.category, r, None, HashDraws("both", p.id, str(salt))).query
               for p, r in pairs for salt in range(4)]
    both = sum(" both " in query.split(".")[0] for query in queries)
    assert 0 < both < len(queries)
    longer = [real_writer.write(p.category, r, None, HashDraws("both", p.id)).query
              for p, r in _real_requests() if len(r) > 2]
    assert longer and not any(" both " in query.split(".")[0] for query in longer)
