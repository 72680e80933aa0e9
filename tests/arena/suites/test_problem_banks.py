"""Problem banks (SPEC 5, docs/validity.md): written offline, sealed with timelock encryption to a drand
round near their race day's slot, pinned per day, opened by every validator alike at the race, the day's
race suite drawn from them with the chain seed and its targets burnt like any race's.

Over the real generator and the small sample world's catalog, real timelock encryption
(``bittensor_core``) opened with quicknet's real signature of round 123, real SQLite caches, and a drand
relay double on loopback (``tests/fake_drand.py``: drand cannot be reached from here).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from arena.chain import LocalChain
from arena.chain.drand import BeaconUnavailable, DrandBeacon
from arena.race import ManualClock
from arena.settings import ArenaSettings
from arena.suites import GeneratorSchedule, GeneratorSpec, RaceSeed, ScheduleError
from arena.suites.bank import (
    QUICKNET_CHAIN_HASH,
    QUICKNET_GENESIS,
    BankError,
    BankNotOpen,
    ProblemBank,
    add_pins,
    check_reveal,
    draw,
    round_at,
    round_time,
)
from arena.suites.bank_build import build_bank
from arena.suites.generators import BankPins, open_scheduled_sources
from arena.suites.public import SuitePlan, targets_of
from arena.suites.sealed_bank import (
    SealedBank,
    SealedBankSource,
    bank_bytes,
    install_sealed,
    pinned_file,
    read_sealed,
    seal,
    unseal,
)
from neurons import validator as validator_cli
from neurons.cli import app as arena_app
from shoppingbench.catalog.models import Product
from shoppingbench.doubles.llm_server import StubReply, create_app
from shoppingbench.generator import DEFAULT_VERSION
from shoppingbench.generator.writer import writer_for_catalog
from shoppingbench.generator.writer.prompt_style import SaidValue, copy_ngrams, load_pools
from shoppingbench.generator.writer.propose import ModelSettings
from shoppingbench.generator.writer.request import ItemRequest
from shoppingbench.generator.writer.rewrite import (
    CheckedRewriter,
    RewriteTask,
    requirements_prompt,
    rewrite_refusal,
)
from shoppingbench.problems.draws import HashDraws
from shoppingbench.problems.models import Category, RewardTarget
from shoppingbench.sample_world import SampleWorld
from shoppingbench.tools.serving import running_server
from tests.arena.suites.support import Validators, suite_bytes
from tests.chain_support import make_wallet, register
from tests.fake_drand import QUICKNET_ROUND, QUICKNET_SIGNATURE, RelayState, create_relay
from tests.writing_model import plain_query, prompt_category, requirements

# Round 123 of quicknet was emitted at 2023-08-23T15:15:33Z: the bank day's race slot is 15:15 that day.
BANK_DAY = date(2023, 8, 23)
RACE_TIME = time(15, 15)
FIRST_DAY = BANK_DAY - timedelta(days=1)
DAYS = [FIRST_DAY, BANK_DAY, BANK_DAY + timedelta(days=1)]
SIZES: dict[Category, int] = {"product": 2, "shop": 1, "voucher": 1}
PLAN = SuitePlan(race_per_category=SIZES, qualifying_per_category=SIZES, race_time=RACE_TIME,
                 first_day=FIRST_DAY)
SCHEDULE = GeneratorSchedule.single(GeneratorSpec(version=DEFAULT_VERSION))
MODEL = "bank-writer"


class Signatures:
    """Round signatures as a relay would give them, published on command (the HTTP client is tested apart)."""

    def __init__(self) -> None:
        self.published: dict[int, str] = {}
        self.forgotten: list[int] = []

    def signature(self, round_number: int) -> str | None:
        return self.published.get(round_number)

    def forget(self, round_number: int) -> None:
        self.forgotten.append(round_number)


@pytest.fixture(scope="module")
def bank(small_world: SampleWorld, tmp_path_factory: pytest.TempPathFactory) -> ProblemBank:
    built = build_bank(small_world.catalog_dir, {"product": 6, "shop": 3, "voucher": 3}, models=[],
                       journal=tmp_path_factory.mktemp("bank") / "bank.json.partial", seed="test-bank")
    assert built.rewrites is None
    return built.bank


@pytest.fixture(scope="module")
def sealed(small_world: SampleWorld, bank: ProblemBank) -> tuple[SealedBank, str]:
    """The bank sealed for BANK_DAY to round 123, published where validators look for it; its sha256."""
    data = seal(bank, BANK_DAY, QUICKNET_ROUND).to_bytes()
    sha256 = hashlib.sha256(data).hexdigest()
    path = pinned_file(small_world.catalog_dir, sha256)
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    return read_sealed(data), sha256


@pytest.fixture
def validators(small_world: SampleWorld, tmp_path: Path) -> Iterator[Any]:
    """Opens a validator's public suites with the bank pinned (or ``pins``), its own empty cache."""
    with ExitStack() as stack:
        validators = Validators(stack, tmp_path, PLAN)
        yield lambda name, pins, signatures: validators.open(name, open_scheduled_sources(
            small_world.catalog_dir, SCHEDULE,
            BankPins(pins=pins, race_time=RACE_TIME, signatures=signatures)))


# (a) the pure rules


def test_rounds_and_their_times_are_drand_quicknets() -> None:
    assert round_time(1) == QUICKNET_GENESIS and round_at(QUICKNET_GENESIS) == 1
    assert round_time(QUICKNET_ROUND) == datetime(2023, 8, 23, 15, 15, 33, tzinfo=UTC)
    slot = datetime(2026, 12, 1, 16, tzinfo=UTC)
    assert round_time(round_at(slot)) == slot  # a slot on a round's instant is that round
    assert round_time(round_at(slot + timedelta(seconds=1))) == slot + timedelta(seconds=3)
    with pytest.raises(ValueError, match="time zone"):
        round_at(datetime(2026, 12, 1, 16))


def test_a_bank_must_open_near_its_race_slot() -> None:
    slot = datetime(2026, 12, 1, 16, tzinfo=UTC)
    check_reveal(round_at(slot), slot)
    check_reveal(round_at(slot + timedelta(hours=2)) - 1, slot)
    for early in (timedelta(hours=1), timedelta(minutes=29), timedelta(seconds=3)):
        with pytest.raises(BankError, match=rf"before its race slot .*: anyone could read its problems and "
                                            rf"still commit an agent that races on them; seal it to round "
                                            rf"{round_at(slot)} or later"):
            check_reveal(round_at(slot - early), slot)
    with pytest.raises(BankError, match="after its race slot"):
        check_reveal(round_at(slot + timedelta(hours=3)), slot)


def test_the_draw_is_the_seeds_and_skips_burnt_and_repeated_targets(bank: ProblemBank) -> None:
    first = draw(bank.problems, "race/a", SIZES, frozenset())
    assert draw(bank.problems, "race/a", SIZES, frozenset()) == first
    assert [p.category for p in first] == ["product", "product", "shop", "voucher"]
    assert draw(bank.problems, "race/b", SIZES, frozenset()) != first  # another seed, another suite (12 here)
    burnt = targets_of(first)
    again = draw(bank.problems, "race/a", SIZES, burnt)
    assert not targets_of(again) & burnt
    drawn_targets = [t.product_id for p in again for t in p.targets]
    assert len(drawn_targets) == len(set(drawn_targets))
    everything = draw(bank.problems, "race/a", {"product": 50}, frozenset())  # runs out: fewer, no error
    assert 0 < len(everything) <= bank.counts()["product"]


def test_bank_ids_must_be_unique(bank: ProblemBank) -> None:
    with pytest.raises(ValueError, match="unique"):
        ProblemBank(catalog_fingerprint="x", problems=(bank.problems[0], bank.problems[0]))


def test_a_day_pins_one_bank_and_the_pins_come_in_day_order() -> None:
    first, second = date(2026, 12, 2), date(2026, 12, 1)
    pins = add_pins({first: "a" * 64}, [(second, "b" * 64), (first, "a" * 64)])
    assert list(pins.items()) == [(second, "b" * 64), (first, "a" * 64)]  # the same pin again is no change
    with pytest.raises(BankError, match=r"2026-12-02 is pinned to the bank a+, not c+: a day races one bank"):
        add_pins(pins, [(first, "c" * 64)])
    with pytest.raises(BankError, match="remove 2026-12-03 from ARENA_PROBLEM_BANKS"):  # two files given
        add_pins({}, [(date(2026, 12, 3), "a" * 64), (date(2026, 12, 3), "b" * 64)])


# (b) sealing with timelock encryption


def test_a_sealed_bank_opens_with_its_rounds_signature_only(bank: ProblemBank) -> None:
    sealed = seal(bank, BANK_DAY, QUICKNET_ROUND)
    assert bank_bytes(bank) not in base64.b64decode(sealed.ciphertext)
    assert unseal(sealed, QUICKNET_SIGNATURE) == bank
    later = seal(bank, BANK_DAY, QUICKNET_ROUND + 1)
    with pytest.raises(BankError, match=f"round {QUICKNET_ROUND + 1} does not open"):
        unseal(later, QUICKNET_SIGNATURE)
    with pytest.raises(BankError, match="does not open"):
        unseal(sealed, "00" * 48)


def test_a_sealed_file_that_is_not_one_is_named(tmp_path: Path) -> None:
    with pytest.raises(BankError, match="not a sealed problem bank"):
        read_sealed(b'{"format": "arena-sealed-bank-1", "day": "2023-08-23"}')


def test_installing_a_sealed_file_checks_it_and_stores_it_whole(bank: ProblemBank, tmp_path: Path) -> None:
    data = seal(bank, BANK_DAY, QUICKNET_ROUND).to_bytes()
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    day, sha256 = install_sealed(catalog, data, RACE_TIME, "sealed.json")
    assert (day, sha256) == (BANK_DAY, hashlib.sha256(data).hexdigest())
    stored = pinned_file(catalog, sha256)
    assert stored.read_bytes() == data and [p.name for p in stored.parent.iterdir()] == [stored.name]
    stored.write_bytes(data[:40])  # a copy cut short is written again
    assert install_sealed(catalog, data, RACE_TIME, "sealed.json") == (day, sha256)
    assert stored.read_bytes() == data
    with pytest.raises(BankError, match=r"sealed.json \(for 2023-08-23\): .* anyone could read its problems"):
        install_sealed(catalog, data, time(17), "sealed.json")
    with pytest.raises(BankError, match="not a sealed problem bank"):
        install_sealed(catalog, b'{"day": "2023-08-23"}', RACE_TIME, "other.json")


# (c) the drand relay client, over HTTP


def test_the_beacon_gives_a_rounds_signature_and_none_before_it_is_emitted() -> None:
    state = RelayState(signatures={QUICKNET_ROUND: QUICKNET_SIGNATURE}, latest=QUICKNET_ROUND - 1)
    client = httpx.Client(timeout=5)
    with running_server(create_relay(state)) as relay, \
            DrandBeacon(QUICKNET_CHAIN_HASH, [relay], client=client) as beacon:
        assert beacon.signature(QUICKNET_ROUND) is None  # Too Early
        state.latest = QUICKNET_ROUND
        assert beacon.signature(QUICKNET_ROUND) == QUICKNET_SIGNATURE
        assert beacon.signature(QUICKNET_ROUND) == QUICKNET_SIGNATURE
        assert state.requests == [QUICKNET_ROUND, QUICKNET_ROUND]  # the second answer was kept
    assert client.is_closed


def test_the_beacon_tries_the_next_relay_and_says_when_none_answers() -> None:
    down = RelayState(failing=True)
    up = RelayState(signatures={QUICKNET_ROUND: QUICKNET_SIGNATURE}, latest=QUICKNET_ROUND)
    with running_server(create_relay(down)) as first, running_server(create_relay(up)) as second:
        beacon = DrandBeacon(QUICKNET_CHAIN_HASH, [first, second])
        assert beacon.signature(QUICKNET_ROUND) == QUICKNET_SIGNATURE
        up.failing = True
        with pytest.raises(BeaconUnavailable, match="503"):
            DrandBeacon(QUICKNET_CHAIN_HASH, [first, second]).signature(QUICKNET_ROUND)
    closed = DrandBeacon(QUICKNET_CHAIN_HASH, ["http://127.0.0.1:9"], client=httpx.Client(timeout=2))
    with pytest.raises(BeaconUnavailable, match="ConnectError"):
        closed.signature(QUICKNET_ROUND)


# (d) a race day drawn from a bank


def test_a_banked_day_waits_for_its_round_then_every_validator_draws_the_same_suite(
        validators: Any, bank: ProblemBank, sealed: tuple[SealedBank, str]) -> None:
    _, sha256 = sealed
    waiting = Signatures()
    early = validators("early", {BANK_DAY: sha256}, waiting)
    before = early.race_suite(FIRST_DAY)
    assert before is not None and before.generator != f"bank/{sha256}"
    assert early.race_suite(BANK_DAY) is None  # sealed: the race waits
    waiting.published[QUICKNET_ROUND] = QUICKNET_SIGNATURE
    banked = early.race_suite(BANK_DAY)
    assert banked is not None and banked.generator == f"bank/{sha256}"
    assert {p.id for p in banked.problems} <= {p.id for p in bank.problems}
    assert [p.category for p in banked.problems] == ["product", "product", "shop", "voucher"]
    assert not targets_of(banked.problems) & targets_of(before.problems)  # the day before's targets burnt
    after = early.race_suite(DAYS[2])
    assert after is not None and after.generator == before.generator
    assert not targets_of(after.problems) & targets_of(banked.problems)  # the bank's race burns too

    # A validator joining after the bank day (its own cache) replays every day to the same bytes.
    late_signatures = Signatures()
    late_signatures.published[QUICKNET_ROUND] = QUICKNET_SIGNATURE
    late = validators("late", {BANK_DAY: sha256}, late_signatures)
    replayed = late.race_suite(DAYS[2])
    assert replayed is not None and suite_bytes(replayed.problems) == suite_bytes(after.problems)
    for day in DAYS:
        mine, theirs = early.race_suite(day), late.race_suite(day)
        assert mine is not None and theirs is not None
        assert mine.generator == theirs.generator
        assert suite_bytes(mine.problems) == suite_bytes(theirs.problems)

    # Qualifying problems of the bank day still come from the generator: the bank only serves the race.
    qualifying = early.qualifying_suite("5Hotkey", RaceSeed(block=1, hash="ab" * 32), BANK_DAY)
    assert not {p.id for p in qualifying} & {p.id for p in bank.problems}


def test_a_validator_without_the_pin_disagrees_about_the_bank_day(
        validators: Any, sealed: tuple[SealedBank, str]) -> None:
    _, sha256 = sealed
    signatures = Signatures()
    signatures.published[QUICKNET_ROUND] = QUICKNET_SIGNATURE
    pinned = validators("pinned", {BANK_DAY: sha256}, signatures).race_suite(BANK_DAY)
    unpinned = validators("unpinned", {}, signatures).race_suite(BANK_DAY)
    assert pinned is not None and unpinned is not None
    assert pinned.generator != unpinned.generator  # the race log's generator key names the difference
    assert suite_bytes(pinned.problems) != suite_bytes(unpinned.problems)


def test_a_wrong_signature_is_refused_and_forgotten(small_world: SampleWorld, sealed: tuple[SealedBank, str]
                                                    ) -> None:
    bank_file, sha256 = sealed
    signatures = Signatures()
    signatures.published[QUICKNET_ROUND] = "00" * 48
    source = SealedBankSource(bank_file, sha256, catalog_fingerprint="whatever", signatures=signatures)
    with pytest.raises(BankError, match="does not open"):
        source.open()
    assert signatures.forgotten == [QUICKNET_ROUND]
    signatures.published[QUICKNET_ROUND] = QUICKNET_SIGNATURE
    with pytest.raises(BankError, match="written over catalog"):  # another catalog's bank
        source.open()
    waiting = SealedBankSource(bank_file, sha256, catalog_fingerprint="x", signatures=Signatures())
    with pytest.raises(BankNotOpen, match="emitted at 2023-08-23T15:15:33"):
        waiting.open()


@pytest.mark.parametrize("problem", ["missing", "other sha256", "another day", "too early"])
def test_a_pinned_bank_that_cannot_serve_stops_the_start(small_world: SampleWorld,
                                                         sealed: tuple[SealedBank, str], problem: str,
                                                         ) -> None:
    _, sha256 = sealed
    pins = {BANK_DAY: sha256}
    expected = "is not at"
    if problem == "missing":
        pins = {BANK_DAY: "f" * 64}
    elif problem == "other sha256":
        wrong = "e" * 64
        pinned_file(small_world.catalog_dir, wrong).write_bytes(b"{}")
        pins, expected = {BANK_DAY: wrong}, "fetch the file again"
    elif problem == "another day":
        pins = {BANK_DAY + timedelta(days=1): sha256}
        expected = "is sealed for 2023-08-23, but it is pinned for"
    race_time = RACE_TIME
    if problem == "too early":  # round 123 opens at 15:15:33, an hour and three quarters before a 17:00 slot
        race_time, expected = time(17), "anyone could read its problems and still commit"
    with pytest.raises(ScheduleError, match=expected), \
            open_scheduled_sources(small_world.catalog_dir, SCHEDULE,
                                   BankPins(pins=pins, race_time=race_time, signatures=Signatures())):
        pass


def test_the_pins_are_settings_and_part_of_the_rules_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    from arena.rules_fingerprint import rules_parts

    monkeypatch.setenv("ARENA_PROBLEM_BANKS", json.dumps({"2023-08-23": "a" * 64}))
    monkeypatch.setenv("ARENA_DRAND_RELAYS", "http://127.0.0.1:1, http://127.0.0.1:2")
    settings = ArenaSettings()
    pins = settings.bank_pins()
    assert pins is not None and pins.pins == {BANK_DAY: "a" * 64}
    assert isinstance(pins.signatures, DrandBeacon) and pins.signatures.relays == ("http://127.0.0.1:1",
                                                                                   "http://127.0.0.1:2")
    assert rules_parts(settings, plan=PLAN, generators={})["problem_banks"] == {"2023-08-23": "a" * 64}
    monkeypatch.setenv("ARENA_PROBLEM_BANKS", json.dumps({"2023-08-23": "not a digest"}))
    with pytest.raises(ValueError, match="should match pattern"):
        ArenaSettings()
    monkeypatch.delenv("ARENA_PROBLEM_BANKS")
    assert ArenaSettings().bank_pins() is None


def test_validator_run_stops_on_a_pinned_bank_it_does_not_have(small_world: SampleWorld, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    home, wallets = tmp_path / "home", tmp_path / "wallets"
    monkeypatch.setenv("ARENA_HOME", str(home))
    monkeypatch.setenv("ARENA_PROBLEM_BANKS", json.dumps({"2026-12-01": "d" * 64}))
    chain = LocalChain(home / "local-chain.sqlite3", netuid=7,
                       clock=ManualClock(datetime(2026, 11, 27, tzinfo=UTC)))
    register(chain, make_wallet(wallets, "validator", seed="validator"), validator_permit=True)
    result = CliRunner().invoke(validator_cli.app, [
        "run", "--once", "--wallet-name", "validator", "--wallet-path", str(wallets), "--netuid", "7",
        "--catalog", str(small_world.catalog_dir)])
    assert result.exit_code == validator_cli.EXIT_SCHEDULE, result.output
    missing = f"the problem bank pinned for 2026-12-01 is not at {small_world.catalog_dir / 'banks'}"
    assert missing in " ".join(result.output.split())


# (e) writing a bank: the model's rewrites, checked; the commands


def _sun_hat_task(style_seed: str = "", items: int = 1) -> RewriteTask:
    hat = Product(product_id="1", shop_id="1", price=250,
                  title="Wide Brim Straw Sun Hat Beach Summer Beige UV")
    target = RewardTarget(product_id="1", title=[hat.title], sku_options=[{"variation3": "beige"}],
                          attributes=[{"size": ["57 cm"]}], service=["COD", "official", "flashsale"],
                          price=[{"less than": [None, 300]}])
    return RewriteTask("product" if items == 1 else "shop", [ItemRequest(product=hat, target=target)] * items,
                       draft="Find a sun hat in beige, 57 cm, under 300 pesos, cash on delivery, LazMall, "
                             "LazFlash.", style_seed=style_seed)


def test_a_rewrite_must_keep_the_stated_numbers_and_not_repeat_the_title() -> None:
    task = _sun_hat_task()
    assert rewrite_refusal(task, "Looking for a beige sun hat (57 cm) below 300 PHP please.") is None
    assert rewrite_refusal(task, "A beige sun hat, cheap, 57cm.") == "loses the numbers 300"
    # A key's digits ("variation3") and list numbers are not requirements; three title words are words.
    assert rewrite_refusal(task, "1. A straw sun hat in beige, 57 cm, under 300.") is None
    # One product: four title words in a row name it by its listing; several products: six.
    assert rewrite_refusal(task, "1. A wide brim straw sun hat in beige, 57 cm, under 300.") == \
        "repeats 4 or more words of a product's title in a row"
    pair = _sun_hat_task(items=2)
    assert rewrite_refusal(pair, "Two wide brim straw sun hats in beige, 57 cm, under 300.") is None
    assert rewrite_refusal(pair, "A wide brim straw sun hat beach in beige, 57 cm, under 300.") == \
        "repeats 6 or more words of a product's title in a row"
    assert rewrite_refusal(task, " ") == "empty"
    assert rewrite_refusal(task, "beige hat 57 cm 300 " * 10) == "more than twice as long as the draft"


def test_a_rewrite_must_not_copy_the_prompts_own_wording() -> None:
    """Runs of 4 words of the prompt's fact templates are refused unless real requests use them too; the
    stated values and numbers may (must) be repeated."""
    for seed in ("a", "b", "c"):
        task = _sun_hat_task(seed)
        copied = sorted(copy_ngrams(task.plan()))
        assert copied  # every title form has a run of its own words
        for run in copied:
            assert rewrite_refusal(task, f"A beige sun hat, 57 cm, under 300 PHP, {run}.") == \
                f"repeats the prompt's wording \"{run}\""
        assert rewrite_refusal(task, "A beige sun hat 57 cm, under 300 PHP, with cash on delivery.") is None
    assert {"with cash on delivery", "supports cash on delivery"} <= set(load_pools().real_ngrams)


def test_the_prompt_is_drawn_from_the_seed_in_shoppers_words() -> None:
    """Same seed, same prompt; over seeds, the wording of each fact, their order and the style asked for
    vary, and the catalog's own service strings are never given."""
    prompts = {seed: requirements_prompt(_sun_hat_task(seed, items=2)) for seed in map(str, range(30))}
    assert requirements_prompt(_sun_hat_task("7", items=2)) == prompts["7"]
    assert len(set(prompts.values())) == 30
    for prompt in prompts.values():
        assert not any(fact in prompt for fact in ("official LazMall store", "flash sale (LazFlash)",
                                                   "sold by an official store", "service:", "price:"))
        assert [len(facts) for _, facts in requirements(prompt)] == [6, 6]
        assert all(title == _sun_hat_task().items[0].product.title for title, _ in requirements(prompt))
    facts = [requirements(prompt)[0][1] for prompt in prompts.values()]
    assert len({tuple(f) for f in facts}) == 30 and len({f[0] for f in facts}) >= 4  # wording and order
    prices = {fact for f in facts for fact in f if "300" in fact}
    assert len(prices) >= 5 and any(p.startswith(("under", "below", "up to")) for p in prices)
    assert any("pesos" in p for p in prices) and any("PHP" in p or "php" in p for p in prices)
    texts = list(prompts.values())
    # Lists as real requests write them (inline numbers, ordinals), never a line per product.
    assert not any("one line" in t for t in texts)
    for style in ("Number the products inline", "not a list", "Say how many products", "Do not say how many",
                  "from one shop", "Begin with something like"):
        assert any(style in t for t in texts) and not all(style in t for t in texts), style
    asks = {t.split("\n", 1)[0] for t in texts}
    assert asks == set(load_pools().asks["shop"])


def test_the_model_is_given_the_values_in_a_shoppers_words_not_the_draft() -> None:
    task = _sun_hat_task()
    said = RewriteTask(task.category, task.items, task.draft, said=[[
        SaidValue(key_words=(), role="color", value="beige"),
        SaidValue(key_words=("head size",), role="size", value="57 cm")]])
    prompt = requirements_prompt(said)
    (title, facts), = requirements(prompt)
    assert title == task.items[0].product.title and task.draft not in prompt
    assert "variation3" not in prompt and "head size" in prompt and len(facts) == 6
    assert "variation3" in requirements_prompt(task)  # no lexicon: the catalog's key
    assert "only what kind of product it is, said in two or three words the way a shopper would" in prompt


class _CopyingSource:
    """A rewrite source that copies the prompt's fact lines (the title's said as "sun hat") until it is
    refused ``stubborn`` times."""

    name = "copying"

    def __init__(self, stubborn: int) -> None:
        self.stubborn = stubborn
        self.refusals: list[str | None] = []
        self.prompts: list[str] = []

    def rewrite(self, task: RewriteTask, refused: str | None) -> tuple[str | None, str]:
        self.refusals.append(refused)
        prompt = requirements_prompt(task)
        self.prompts.append(prompt)
        if len(self.refusals) <= self.stubborn:
            (title, _), = requirements(prompt)
            facts = [line[2:].replace(title, "sun hat") for line in prompt.splitlines() if line[:2] == "- "]
            return "I want: " + "; ".join(facts), ""
        return f"Hi! {plain_query({'messages': [{'content': prompt}]})}", ""


def test_a_copying_answer_is_asked_again_then_counted(small_world: SampleWorld) -> None:
    task = _sun_hat_task()
    base = writer_for_catalog(small_world.catalog_dir)
    for stubborn, rewritten in ((1, 1), (2, 0)):
        source = _CopyingSource(stubborn)
        rewriter = CheckedRewriter(base, source)
        written = rewriter.write("product", task.items, None, HashDraws("copy-test"))
        assert source.refusals[0] is None and source.refusals[1] is not None
        assert source.refusals[1].startswith("repeats the prompt's wording")
        assert source.prompts[0] == source.prompts[1]  # the same drawn prompt, asked again
        assert "variation3" not in source.prompts[0]  # the lexicon's words for the catalog's key
        assert (rewriter.report.rewritten, rewriter.report.drafts_kept) == (rewritten, 1 - rewritten)
        assert written.query.startswith("Hi! ") == bool(rewritten)
        assert rewriter.written_by[written.query] == ("copying" if rewritten else base.key)
    assert rewriter.report.reasons[0].startswith("repeats the prompt's wording")


def _rewriting_model(body: dict[str, Any]) -> StubReply:
    """Plays a model writing a request from its requirements, but a shop request's first answer is junk
    (then it is asked again). The bank's problems come from a private random seed, so nothing may depend
    on their words."""
    prompt = body["messages"][-1]["content"]
    if prompt_category(prompt) == "shop" and "was refused" not in prompt:
        return StubReply(content="Sure, here is a nicer request for you.")
    return StubReply(content="```json\n" + json.dumps({"query": f"Hi! {plain_query(body)}"}) + "\n```")


def test_bank_build_seal_and_open_commands(small_world: SampleWorld, tmp_path: Path) -> None:
    runner = CliRunner()
    stub = create_app(_rewriting_model, models=[MODEL])
    plain = tmp_path / "bank.json"
    with running_server(stub) as base_url:
        built = runner.invoke(arena_app, ["bank", "build", "--catalog", str(small_world.catalog_dir),
                                          "--out", str(plain), "--per-category", "2",
                                          "--llm-url", f"{base_url}/v1", "--llm-model", MODEL])
    assert built.exit_code == 0, built.output
    assert "2 product, 2 shop, 2 voucher" in built.output and "drafts kept" in built.output
    written = ProblemBank.model_validate_json(plain.read_bytes())
    assert all(p.query.startswith("Hi! ") for p in written.problems)  # every request written, checked
    assert "6 requests written, 0 drafts kept (8 requests)" in built.output  # the shop ones asked twice
    for problem in written.problems:  # the voucher's rules stay the fixed block they are
        assert (problem.category == "voucher") == ("\n\nMy budget is only `" in problem.query)

    down = create_app(lambda body: StubReply(status=500, content="overloaded"), models=[MODEL])
    with running_server(down) as base_url:
        drafts = runner.invoke(arena_app, ["bank", "build", "--catalog", str(small_world.catalog_dir),
                                           "--out", str(tmp_path / "drafts.json"), "--per-category", "1",
                                           "--llm-url", f"{base_url}/v1", "--llm-model", MODEL])
    assert drafts.exit_code == 0, drafts.output
    assert "0 requests written, 3 drafts kept" in drafts.output
    assert "draft kept: request failed: InternalServerError" in drafts.output

    slot_round = runner.invoke(arena_app, ["bank", "round", "--at", "2023-08-23T15:15:00+00:00"])
    assert slot_round.exit_code == 0 and slot_round.output.startswith("round 112 ")
    sealed_path = tmp_path / "sealed.json"
    sealing = runner.invoke(arena_app, ["bank", "seal", "--bank", str(plain), "--day", "2023-08-23",
                                        "--round", str(QUICKNET_ROUND), "--out", str(sealed_path),
                                        "--race-time", "15:15"])
    assert sealing.exit_code == 0, sealing.output
    assert f"sha256 {hashlib.sha256(sealed_path.read_bytes()).hexdigest()}" in sealing.output
    at_slot = runner.invoke(arena_app, ["bank", "seal", "--bank", str(plain), "--day", "2026-12-01",
                                        "--out", str(tmp_path / "at-slot.json"), "--race-time", "16:00"])
    assert at_slot.exit_code == 0, at_slot.output  # the round of the slot unless given
    slot_round_number = round_at(datetime(2026, 12, 1, 16, tzinfo=UTC))
    assert read_sealed((tmp_path / "at-slot.json").read_bytes()).reveal_round == slot_round_number
    assert f"to drand round {slot_round_number}" in at_slot.output
    too_early = runner.invoke(arena_app, ["bank", "seal", "--bank", str(plain), "--day", "2023-08-24",
                                          "--round", str(QUICKNET_ROUND), "--out", str(tmp_path / "x.json")])
    assert too_early.exit_code == 2 and "before its race slot" in too_early.output
    opened_path = tmp_path / "opened.json"
    opened = runner.invoke(arena_app, ["bank", "open", str(sealed_path), "--signature", QUICKNET_SIGNATURE,
                                       "--out", str(opened_path)])
    assert opened.exit_code == 0, opened.output
    assert "bank of 2023-08-23 (round 123): 2 product, 2 shop, 2 voucher" in opened.output
    assert ProblemBank.model_validate_json(opened_path.read_bytes()) == written
    refused = runner.invoke(arena_app, ["bank", "open", str(sealed_path), "--signature", "00" * 48])
    assert refused.exit_code == 2 and "does not open" in refused.output


def test_bank_install_stores_published_files_and_prints_every_pin(
        small_world: SampleWorld, bank: ProblemBank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator's step: the pins it prints, set as ARENA_PROBLEM_BANKS, open at the validator's start."""
    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ARENA_RACE_TIME_UTC", "15:15")
    earlier = {"2023-08-20": "a" * 64}
    monkeypatch.setenv("ARENA_PROBLEM_BANKS", json.dumps(earlier))
    catalog = small_world.catalog_dir
    published = tmp_path / "published.json"
    published.write_bytes(seal(bank, BANK_DAY, QUICKNET_ROUND).to_bytes())
    sha256 = hashlib.sha256(published.read_bytes()).hexdigest()
    runner = CliRunner()
    installed = runner.invoke(arena_app, ["bank", "install", str(published), "--catalog", str(catalog)])
    assert installed.exit_code == 0, installed.output
    assert pinned_file(catalog, sha256).read_bytes() == published.read_bytes()
    line = installed.stdout.strip()
    assert line.startswith("ARENA_PROBLEM_BANKS='") and line.endswith("'")
    printed = json.loads(line.removeprefix("ARENA_PROBLEM_BANKS='")[:-1])
    assert printed == {**earlier, BANK_DAY.isoformat(): sha256}
    day_pin = {BANK_DAY.isoformat(): printed[BANK_DAY.isoformat()]}
    monkeypatch.setenv("ARENA_PROBLEM_BANKS", json.dumps(day_pin))
    with open_scheduled_sources(catalog, SCHEDULE, ArenaSettings().bank_pins()) as sources:
        assert sources.banks[BANK_DAY].key == f"bank/{sha256}"

    monkeypatch.setenv("ARENA_PROBLEM_BANKS", json.dumps({BANK_DAY.isoformat(): "b" * 64}))
    conflict = runner.invoke(arena_app, ["bank", "install", str(published), "--catalog", str(catalog)])
    assert conflict.exit_code == 2 and "a day races one bank" in conflict.output and not conflict.stdout
    monkeypatch.setenv("ARENA_RACE_TIME_UTC", "17:00")
    late = runner.invoke(arena_app, ["bank", "install", str(published), "--catalog", str(catalog)])
    assert late.exit_code == 2 and "anyone could read its problems and still commit" in late.output
    monkeypatch.delenv("ARENA_CATALOG_DIR", raising=False)
    nowhere = runner.invoke(arena_app, ["bank", "install", str(published)])
    assert nowhere.exit_code == 2 and "no catalog given: give --catalog DIR" in nowhere.output


def test_bank_open_fetches_the_signature_from_the_configured_relays(
        bank: ProblemBank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sealed_path = tmp_path / "sealed.json"
    sealed_path.write_bytes(seal(bank, BANK_DAY, QUICKNET_ROUND).to_bytes())
    state = RelayState(signatures={QUICKNET_ROUND: QUICKNET_SIGNATURE}, latest=QUICKNET_ROUND)
    with running_server(create_relay(state)) as relay:
        monkeypatch.setenv("ARENA_DRAND_RELAYS", f"http://127.0.0.1:9,{relay}")
        opened = CliRunner().invoke(arena_app, ["bank", "open", str(sealed_path)])
    assert opened.exit_code == 0, opened.output
    assert "bank of 2023-08-23 (round 123)" in opened.output and state.requests == [QUICKNET_ROUND]


WRITTEN_BY = {"first": "model-rewrite/m1", "second": "model-rewrite/m2"}


def _model_named(name: str) -> Any:
    """A writing model whose requests say which model wrote them."""
    return lambda body: StubReply(content=json.dumps({"query": f"{name} says: {plain_query(body)}"}))


def test_several_writers_share_a_bank_and_the_bank_records_who_wrote_each(small_world: SampleWorld,
                                                                         tmp_path: Path) -> None:
    """Each problem's writer is drawn from the bank's seed; the bank names it per problem, the journal
    keeps it across a resume, and a bank written before writers were recorded still reads."""
    first, second = create_app(_model_named("first"), models=["m1"]), create_app(_model_named("second"),
                                                                                  models=["m2"])
    sizes: dict[Category, int] = {"product": 4, "shop": 2, "voucher": 2}
    with running_server(first) as one, running_server(second) as two:
        models = [ModelSettings(base_url=f"{url}/v1", model=name) for url, name in ((one, "m1"), (two, "m2"))]
        built = build_bank(small_world.catalog_dir, sizes, models=models, temperature=0.3,
                           journal=tmp_path / "bank.partial", seed="writers-test")
        assert built.bank.writers is not None and len(built.bank.writers) == len(built.bank.problems)
        for problem in built.bank.problems:
            said = problem.query.split(" says: ")[0]
            assert built.bank.writers[problem.id] == WRITTEN_BY[said]
        assert set(built.bank.writers.values()) == {"model-rewrite/m1", "model-rewrite/m2"}
        assert {body["temperature"] for app in (first, second) for body in app.state.requests} == {0.3}

        lines = (tmp_path / "bank.partial").read_bytes().splitlines()
        cut = tmp_path / "cut.partial"
        cut.write_bytes(b"\n".join(lines[:5]) + b"\n")
        resumed = build_bank(small_world.catalog_dir, sizes, models=models, temperature=0.3, journal=cut)
    assert resumed.resumed == 4
    for problem in resumed.bank.problems[:4]:
        assert resumed.bank.writers is not None and \
            resumed.bank.writers[problem.id] == built.bank.writers[problem.id]
    again = ProblemBank.model_validate_json(bank_bytes(built.bank))
    assert again.writers == built.bank.writers
    older = json.loads(bank_bytes(built.bank))
    del older["writers"]
    assert ProblemBank.model_validate(older).writers is None
    with pytest.raises(ValueError, match="writers name problems it does not hold"):
        ProblemBank.model_validate({**older, "writers": {"no-such-problem": "model-rewrite/m1"}})


def test_bank_build_takes_several_writers_and_a_temperature(small_world: SampleWorld, tmp_path: Path) -> None:
    first, second = create_app(_model_named("first"), models=["m1"]), create_app(_model_named("second"),
                                                                                  models=["m2"])
    out = tmp_path / "bank.json"
    runner = CliRunner()
    with running_server(first) as one, running_server(second) as two:
        built = runner.invoke(arena_app, ["bank", "build", "--catalog", str(small_world.catalog_dir),
                                          "--out", str(out), "--per-category", "2", "--temperature", "1.1",
                                          "--llm-url", f"{one}/v1", "--llm-model", "m1",
                                          "--llm-url", f"{two}/v1", "--llm-model", "m2"])
        unpaired = runner.invoke(arena_app, ["bank", "build", "--catalog", str(small_world.catalog_dir),
                                             "--out", str(tmp_path / "x.json"), "--llm-url", f"{one}/v1",
                                             "--llm-url", f"{two}/v1", "--llm-model", "m2"])
    assert built.exit_code == 0, built.output
    bank = ProblemBank.model_validate_json(out.read_bytes())
    assert bank.writers is not None and sorted(bank.writers) == sorted(p.id for p in bank.problems)
    shares = {name: sum(w == f"model-rewrite/{name}" for w in bank.writers.values()) for name in ("m1", "m2")}
    assert sum(shares.values()) == 6
    for name, count in shares.items():
        assert count == 0 or f"  {count} requests by model-rewrite/{name}" in built.output
    assert {body["temperature"] for app in (first, second) for body in app.state.requests} == {1.1}
    assert unpaired.exit_code != 0 and "give one model per URL" in unpaired.output
