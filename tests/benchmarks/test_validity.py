"""The validity benchmark: its wording metrics on hand-made queries, the hostile parser's clause reading,
twins, and a tiny end-to-end run over a calibration folder made from the test sample world."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks import validity_parser
from benchmarks.validity import benchmark as validity
from benchmarks.validity.metrics import (
    Gap,
    constraint_count,
    has_title_span,
    is_raw_key,
    paired_gap,
    pooled_gap,
    states_raw_key,
    value_is_verbatim,
    wording_figures,
    words,
)
from benchmarks.validity.run import (
    TWIN_KEY,
    load_parser,
    parser_split_share,
    replay_rewriter,
    twin_draws,
    twin_of,
    twins,
)
from benchmarks.validity_parser import (
    Item,
    match_score,
    parse_query,
    split_items,
    take_price,
    take_services,
)
from shoppingbench.catalog_dir import BUILD_RECORD
from shoppingbench.doubles.llm_server import StubReply, create_app
from shoppingbench.generator.writer import writer_for_catalog
from shoppingbench.generator.writer.propose import ModelSettings
from shoppingbench.generator.writer.rewrite import model_rewriter
from shoppingbench.problems.draws import HashDraws
from shoppingbench.problems.models import CATEGORIES, Problem, RewardTarget
from shoppingbench.sample_world import SampleWorld
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.tools.serving import running_server
from tests.writing_model import plain_query, prompt_category

TITLE = "Portable Electric Shaver for Men Mini Rechargeable Razor"


def _target(**fields: object) -> RewardTarget:
    return RewardTarget.model_validate({"product_id": "1", "title": [TITLE], **fields})


def test_words_lower_case_and_split_on_everything_but_letters_and_digits() -> None:
    assert words("Color_Family: Yellow-Green 27cm, 尺码!") == [
        "color", "family", "yellow", "green", "27cm", "尺码"]


@pytest.mark.parametrize(("query", "expected"), [
    ("I want a portable electric shaver please", True),
    ("a shaver for men mini, rechargeable", True),  # connectors dropped on both sides: "shaver men mini"
    ("a portable shaver that is electric", False),
    ("an electric razor for travel", False),
    ("for the men", False),  # connectors never make a span
])
def test_title_span_needs_three_consecutive_title_words(query: str, expected: bool) -> None:
    assert has_title_span(query, TITLE) is expected


@pytest.mark.parametrize(("key", "raw"), [
    ("brand", False), ("size", False), ("pattern", False),
    ("color_family", True), ("units_hb", True), ("variation3", True), ("color family", True),
    ("model", True), ("type", True), ("尺码", True),
])
def test_a_raw_key_is_anything_but_one_plain_shopper_word(key: str, raw: bool) -> None:
    assert is_raw_key(key) is raw


def test_raw_key_stated_as_written_or_with_spaces_but_not_an_ordinary_word() -> None:
    target = _target(sku_options=[{"color_family": "cream"}], attributes=[{"brand": ["oem"]}])
    assert states_raw_key("in the cream color_family", target)
    assert states_raw_key("in the cream Color Family please", target)
    assert not states_raw_key("a cream colored one, brand oem", target)
    assert not states_raw_key("family colors in cream", target)


def test_verbatim_value_needs_its_words_in_order() -> None:
    assert value_is_verbatim("a blouse in olive green, short sleeve", "olive green")
    assert not value_is_verbatim("a green blouse, olive tone", "olive green")
    assert not value_is_verbatim("anything", "")


def test_constraints_count_pairs_services_and_prices() -> None:
    target = _target(sku_options=[{"color_family": "red", "size": "m"}],
                     attributes=[{"material": ["cotton"]}], service=["COD"], price=[{"between": [1, 2]}])
    assert constraint_count(target) == 5


def test_wording_figures_per_item_and_per_value() -> None:
    first = Problem(category="product", query="a portable electric shaver in red, units_hb 2",
                    targets=[_target(sku_options=[{"color_family": "red"}],
                                     attributes=[{"units_hb": ["2"]}])])
    second = Problem(category="product", query="a razor for travel",
                     targets=[_target(attributes=[{"shaver_type": ["travel"], "brand": ["oem"]}])])
    figures = wording_figures([first, second])
    assert (figures.items, figures.title_span_share, figures.raw_key_share) == (2, 0.5, 0.5)
    assert figures.verbatim_value_share == 0.75  # red, 2, travel stated; oem not
    assert figures.query_words == (9 + 4) / 2 and figures.constraints_per_item == 2.0


def test_parser_reads_the_writers_price_and_service_phrasings() -> None:
    assert take_price("a kettle priced between 100 and 250 php")[0] == "100-250"
    assert take_price("a fan costing no more than 1200 pesos")[0] == "-1200"
    assert take_price("a mug in the 83 to 90.5 php range")[0] == "83-90.5"
    assert take_price("a mug with a price above 83 pesos")[0] == "83-"
    assert take_price("a mug")[0] is None
    services, rest = take_services("a mug that ships for free and with cod available")
    assert services == ["freeShipping", "COD"] and "free" not in rest


def test_parser_splits_the_frame_items_and_clauses() -> None:
    items, budget = parse_query(
        "I need a red kettle in size large and priced under 300 php. I also need some steel pots with free "
        "shipping, made from aluminum and with a floral pattern.\n\nMy budget is only `500`, but I have a "
        "voucher with the following rules:\n1. The voucher applies to all products.\n2. It is valid only "
        "when "
        "the total price of the products exceeds `400`.\n3. It provides a fixed discount of `50`.")
    assert [(i.name, i.values, i.price, i.services) for i in items] == [
        ("red kettle", ["large"], "-300", []), ("steel pots", ["aluminum", "floral"], None, ["freeShipping"])]
    assert budget is not None and budget.total_paid([300, 150]) == 400 and budget.total_paid([300]) == 300
    listed, no_budget = parse_query("Find shops offering multiple items where: First, I want a cat collar in "
                                    "the color sky blue. Second: a pair of socks by uniqlo.")
    assert [(i.name, i.values) for i in listed] == [("cat collar", ["sky blue"]), ("socks", ["uniqlo"])]
    assert no_budget is None


def test_parser_reads_items_named_first_and_services_said_once() -> None:
    items, _ = parse_query(
        "Find a shop offering both a red kettle and some steel pots. For the kettle, look for one made of "
        "steel and with free shipping. The steel pots should be one in size large and priced under 300 PHP. "
        "Please only show options with cash on delivery.")
    assert [(i.name, i.values, i.price, i.services) for i in items] == [
        ("red kettle", ["steel"], None, ["freeShipping", "COD"]), ("steel pots", ["large"], "-300", ["COD"])]


def test_parser_splits_items_asked_for_in_the_plural() -> None:
    phrases, _ = split_items("I need a red kettle with free shipping, pig-themed coin banks in pink and some "
                             "pots.")
    assert phrases == ["a red kettle with free shipping", "pig-themed coin banks in pink", "some pots"]
    items, _ = parse_query("Is there a seller with cardboard boxes and a mug? For the box, look for one in "
                           "red.")
    assert [(i.name, i.values) for i in items] == [("cardboard boxes", ["red"]), ("mug", [])]


def test_parser_splits_items_added_in_sentences_numbered_or_joined_before_the_last() -> None:
    phrases, _ = split_items("Find a shop offering a red kettle under 300 php. Also, look for some pots in "
                             "steel. Additionally, I want a mug.")
    assert phrases == ["a red kettle under 300 php", "some pots in steel", "a mug"]
    numbered, _ = split_items("Find shops offering these items: 1) A red kettle in steel. (2) Some pots; (3) "
                              "A mug.")
    assert numbered == ["a red kettle in steel", "some pots", "a mug"]
    joined, _ = split_items("Find shops selling a red kettle; a mug in blue; and some pots. Please show me "
                            "good options.")
    assert joined == ["a red kettle", "a mug in blue", "some pots"]
    keyed, _ = split_items("Find shops selling a red shirt, a cowl neck collar, and some pots.")
    assert keyed == ["a red shirt, a cowl neck collar", "some pots"]  # "a {v} {k}" is a clause, not an item


def test_split_share_counts_queries_split_into_as_many_items_as_targets() -> None:
    two = [_target(product_id="p1", title=["Red Kettle"]), _target(product_id="p2", title=["Steel Pot"])]
    joined = "Find a shop offering a red kettle under 300 php. Also, look for some pots in steel."
    run_on = "I want a red kettle which goes with my steel pots, under 300 php in all"
    problems = [Problem(category="shop", query=joined, targets=two),
                Problem(category="shop", query=run_on, targets=two)]
    assert parser_split_share(problems) == 0.5  # the second names both items in one clause
    assert parser_split_share(problems[:1]) == 1.0 and parser_split_share([]) == 0.0


def test_parser_matches_values_in_their_everyday_form() -> None:
    item = Item(name="belt", values=["waist 38", "medium", "black and white"])
    detail = {"sku_options": {"1": {"size": "waist:38", "color_family": "black/white"}, "2": {"size": "m"}},
              "attributes": {}}
    # The best single option carries two values: waist 38 and the colours.
    assert match_score(item, detail, "Heavy duty belt") == (2, 1)
    assert match_score(item, {"sku_options": {"1": {"size": "m"}}}, "Shoe") == (1, 0)
    varied = Item(name="shirt", values=["short sleeves", "2 pieces"])  # the writer's value variants
    assert varied.search_words == "short sleeve 2pcs shirt"
    catalog = {"attributes": {"sleeves": ["short sleeve"], "pack": ["2pcs"]}}
    assert match_score(varied, catalog, "Tee") == (2, 0)
    # Catalog values said inside a longer clause still count; a value the words never say does not.
    wrapped = Item(name="simple hairpin", values=["plain wave design", "that are available"])
    pin = {"attributes": {"pattern": ["plain"], "design": ["wave"], "style": ["simple"], "color": ["red"]}}
    assert match_score(wrapped, pin, "Simple Hairpin") == (3, 2)


def test_twin_keeps_targets_and_voucher_and_replaces_the_query(small_world: SampleWorld,
                                                              small_engine: BM25SearchEngine) -> None:
    real = small_world.suite(1)[-1]
    products = small_engine.get_products([t.product_id for t in real.targets])
    writer = writer_for_catalog(small_world.catalog_dir)
    twin = twin_of(real, 0, products, writer)
    assert twin.targets == real.targets and twin.voucher == real.voucher and twin.category == real.category
    assert twin.query != real.query and twin == twin_of(real, 0, products, writer)
    with pytest.raises(ValueError, match="not in the catalog"):
        twin_of(real, 0, {}, writer)


def test_twin_draw_zero_keeps_the_benchmarks_draws_and_later_draws_word_it_anew(
        small_world: SampleWorld, small_engine: BM25SearchEngine) -> None:
    first, again = twin_draws("shop", 3), HashDraws(TWIN_KEY, "shop", "3")  # the keys runs have used
    assert [first.below(1000) for _ in range(8)] == [again.below(1000) for _ in range(8)]
    real = {c: [p for p in small_world.suite(4) if p.category == c][:3] for c in CATEGORIES}
    drawn = [twins(real, small_engine, small_world.catalog_dir, draw=draw) for draw in (0, 1)]
    assert drawn[0] == twins(real, small_engine, small_world.catalog_dir)
    assert [t.targets for t in drawn[1]["shop"]] == [p.targets for p in real["shop"]]
    assert any(a.query != b.query for c in CATEGORIES for a, b in zip(drawn[0][c], drawn[1][c], strict=True))


def _writing_model(body: dict[str, Any]) -> StubReply:
    """Plays a model writing a request from its requirements; a shop request comes back without its
    numbers at first."""
    prompt = body["messages"][-1]["content"]
    if prompt_category(prompt) == "shop" and "was refused" not in prompt and any(c.isdigit() for c in prompt):
        return StubReply(content=orjson.dumps({"query": "a shop with nice things"}).decode())
    return StubReply(content=orjson.dumps({"query": f"So, {plain_query(body)}"}).decode())


def test_model_twins_are_written_from_the_requirements_and_checked(small_world: SampleWorld,
                                                                 small_engine: BM25SearchEngine) -> None:
    real = {c: [p for p in small_world.suite(4) if p.category == c][:2] for c in CATEGORIES}
    stub = create_app(_writing_model)
    with running_server(stub) as base_url:
        rewriter = model_rewriter(writer_for_catalog(small_world.catalog_dir),
                                  [ModelSettings(base_url=f"{base_url}/v1", model="rewriter")])
        twin = twins(real, small_engine, small_world.catalog_dir, rewriter)
    drafts = twins(real, small_engine, small_world.catalog_dir)
    for category in CATEGORIES:
        for written, draft, original in zip(twin[category], drafts[category], real[category], strict=True):
            assert written.targets == original.targets and written.voucher == original.voucher
            request, _, rules = written.query.partition("\n\n")
            assert request.startswith("So, I am looking for a ") and request not in draft.query
            assert rules == draft.query.partition("\n\n")[2]  # a voucher's rules block: the writer's
    assert rewriter.report.rewritten == 6 and rewriter.report.drafts_kept == 0
    assert rewriter.report.requests > 6  # the shop rewrites that lost their numbers were asked again
    with pytest.raises(SystemExit):
        validity.main(["--llm-url", "http://127.0.0.1:9/v1"])
    with pytest.raises(SystemExit):
        validity.main(["--replay-real", "--llm-url", "http://127.0.0.1:9/v1", "--llm-model", "m"])


def test_replayed_twins_are_the_real_requests_the_checks_keep(small_world: SampleWorld,
                                                             small_engine: BM25SearchEngine) -> None:
    real = {c: [p for p in small_world.suite(4) if p.category == c][:2] for c in CATEGORIES}
    rambling = real["shop"][0].model_copy(update={"query": "a shop please " * 200})
    real["shop"][0] = rambling  # none of its draft's prices: refused, the draft stays
    rewriter = replay_rewriter(real, small_engine, small_world.catalog_dir)
    twin = twins(real, small_engine, small_world.catalog_dir, rewriter)
    drafts = twins(real, small_engine, small_world.catalog_dir)
    assert twin["shop"][0].query == drafts["shop"][0].query
    kept = [(t, r, d) for c in CATEGORIES for t, r, d in zip(twin[c], real[c], drafts[c], strict=True)
            if r is not rambling]
    for replayed, original, draft in kept:
        request, _, rules = replayed.query.partition("\n\n")
        assert request == " ".join(original.query.partition("\n\n")[0].split()) != draft.query
        assert rules == draft.query.partition("\n\n")[2] and replayed.targets == original.targets
    assert (rewriter.report.rewritten, rewriter.report.drafts_kept) == (5, 1)
    assert rewriter.report.reasons[0].startswith("loses the numbers")
    assert rewriter.key.startswith("replay-real/lexicon-writer")
    both_draws = replay_rewriter(real, small_engine, small_world.catalog_dir, draws=2)
    later = twins(real, small_engine, small_world.catalog_dir, both_draws, draw=1)
    assert [t.query.partition("\n\n")[0] for t in later["product"]] == [
        " ".join(r.query.partition("\n\n")[0].split()) for r in real["product"]]


def test_summary_is_the_worst_category_against_the_targets() -> None:
    fine = {"twin_title_span_share": 0.1, "twin_raw_key_share": 0.0, "baseline_gap": 0.0, "parser_gap": 0.05,
            "parser_gap_se": 0.02, "problems": 100}
    summary = validity.summarise({"product": fine, "shop": fine, "voucher": {**fine, "parser_gap": 0.2}})
    assert summary["parser_gap_max"] == 0.2 and summary["targets_met"] is False
    assert summary["parser_gap_pooled"] == 0.1 and summary["race_bar_met"] is False
    assert summary["parser_gap_se"] == round(0.02 / 3 ** 0.5, 4)
    whole = validity.summarise({c: fine for c in CATEGORIES})
    assert whole["targets_met"] is True and whole["race_bar_met"] is True  # pooled 0.05: at the bar
    assert whole["parser_gap_pooled"] == 0.05
    for gaps, met in (((0.0, 0.09, 0.03), True), ((0.0, 0.11, 0.0), False), ((0.06, 0.06, 0.06), False)):
        tuned = validity.summarise({c: {**fine, "parser_gap": gap}
                                    for c, gap in zip(CATEGORIES, gaps, strict=True)})
        assert tuned["race_bar_met"] is met, gaps
    assert "parser_gap_max_draws" not in summary
    drawn = {c: {**fine, "parser_gap_draws": [0.05, gap], "baseline_gap_draws": [0.0, 0.0]}
             for c, gap in zip(CATEGORIES, (0.1, -0.2, 0.3), strict=True)}
    spread = validity.summarise(drawn)
    assert spread["parser_gap_max_draws"] == [0.05, 0.3] and spread["baseline_gap_max_draws"] == [0.0, 0.0]
    assert spread["parser_gap_max"] == 0.05  # the targets judge draw 0


def test_gaps_are_paired_per_problem_and_pooled_by_problems() -> None:
    gap = paired_gap([True, False, False, True], [True, True, False, False])
    assert (gap.gap, gap.problems) == (0.0, 4) and gap.se == round((2 / 3 / 4) ** 0.5, 4)
    assert paired_gap([False] * 3, [True] * 3) == Gap(1.0, 0.0, 3)  # the same gain on every problem
    assert paired_gap([], []) == Gap(0.0, 0.0, 0)
    with pytest.raises(ValueError, match="paired outcomes"):
        paired_gap([True], [])
    pooled = pooled_gap([Gap(0.1, 0.03, 100), Gap(0.0, 0.04, 50), Gap(0.0, 0.0, 0)])
    assert pooled == Gap(round(10 / 150, 4), round(((3.0 ** 2 + 2.0 ** 2) ** 0.5) / 150, 4), 150)


def test_a_half_run_takes_its_half_and_words_its_twins_as_the_whole_run(
        small_world: SampleWorld, small_engine: BM25SearchEngine) -> None:
    assert validity.half_bounds(100, None) == (0, 100) and validity.half_bounds(100, "first") == (0, 50)
    assert validity.half_bounds(7, "second") == (3, 7)
    real = {c: [p for p in small_world.suite(4) if p.category == c][:4] for c in CATEGORIES}
    whole = twins(real, small_engine, small_world.catalog_dir)
    second = twins({c: real[c][2:] for c in CATEGORIES}, small_engine, small_world.catalog_dir, start=2)
    assert second == {c: whole[c][2:] for c in CATEGORIES}


def test_any_parser_file_with_the_parsers_interface_runs(tmp_path: Path) -> None:
    copy = tmp_path / "tuned_parser.py"
    copy.write_text(Path(validity_parser.__file__).read_text() + "\nTUNED = True\n")
    loaded = load_parser(copy)
    query = "Looking for a red bag."
    assert loaded.TUNED is True
    assert repr(loaded.parse_query(query)) == repr(validity_parser.parse_query(query))
    assert load_parser(None) is validity_parser
    lacking = tmp_path / "lacking.py"
    lacking.write_text("def agent_main(problem, client=None):\n    return []\n")
    with pytest.raises(ValueError, match="it has no parse_query"):
        load_parser(lacking)
    with pytest.raises(SystemExit, match="--parser"):
        validity.main(["--parser", str(lacking)])


def _calibration_from(world: SampleWorld, folder: Path) -> Path:
    """A calibration folder in the real layout, made of the test world's catalog and problems."""
    folder.mkdir()
    shutil.copy(world.world_dir / "documents.jsonl.gz", folder / "documents.jsonl.gz")
    for category in CATEGORIES:
        shutil.copy(world.problems_dir / f"{category}.jsonl", folder / f"{category}.jsonl")
    return folder


def test_tiny_run_prints_every_figure(small_world: SampleWorld, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "benchmarks").mkdir(parents=True)
    # The sampler's shape is drawn over the same 3,000-product world (reused, not rebuilt).
    (tmp_path / "home" / "benchmarks" / "validity-world-3000").symlink_to(small_world.world_dir)
    calibration = _calibration_from(small_world, tmp_path / "calibration")
    parser = tmp_path / "my_parser.py"
    parser.write_text(Path(validity_parser.__file__).read_text())
    result = validity.main(["--calibration", str(calibration), "--per-category", "3", "--workers", "2",
                            "--shape-per-category", "2", "--twin-draws", "2", "--parser", str(parser)])
    printed = orjson.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed == orjson.loads(orjson.dumps(result))
    assert printed["problems"] == 9 and set(printed["per_category"]) == set(CATEGORIES)
    assert set(validity.TARGETS) | {"targets_met", "sampler_shape"} <= set(printed)
    shop = printed["per_category"]["shop"]
    for side in ("real", "twin"):
        for name in ("title_span_share", "raw_key_share", "verbatim_value_share", "query_words",
                     "parser_split_share"):
            assert shop[f"{side}_{name}"] >= 0
    assert 0 <= shop["parser_twin_success"] <= 1 and printed["sampler_shape"]["shop"]["problems"] == 2
    assert printed["twin_draws"] == 2 and shop["parser_gap_draws"][0] == shop["parser_gap"]
    assert len(printed["parser_gap_max_draws"]) == 2 and printed["parser_gap_max_draws"][0] == printed[
        "parser_gap_max"]
    assert printed["parser"] == str(parser) and shop["parser_gap_se"] >= 0
    gaps = [printed["per_category"][c]["parser_gap"] for c in CATEGORIES]
    assert printed["parser_gap_pooled"] == round(sum(gaps) / 3, 4) and printed["parser_gap_se"] >= 0
    cached = list((tmp_path / "home" / "benchmarks").glob("validity-catalog-*"))
    assert len(cached) == 1  # the imported catalog, keyed by the documents' sha256
    record = cached[0] / BUILD_RECORD
    built = record.stat().st_mtime_ns
    assert validity.calibration_catalog(calibration, tmp_path / "home") == cached[0]
    assert record.stat().st_mtime_ns == built  # a second run reuses it
