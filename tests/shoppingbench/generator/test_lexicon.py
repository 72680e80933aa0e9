"""The writer's lexicon: canonical bytes and digest, the shipped sample-world file, ``arena lexicon build``
with and without a model (a scripted OpenAI-compatible double on loopback), refusals of phrasings that
would change what the reward checks, and where the generator finds a catalog's lexicon."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner, Result

from neurons.cli import app
from shoppingbench.catalog.models import Product, document_for
from shoppingbench.catalog_dir import build_catalog
from shoppingbench.doubles.llm_server import StubReply, create_app
from shoppingbench.generator.writer import LexiconError, LexiconWriter, lexicon_path, writer_for_catalog
from shoppingbench.generator.writer.lexicon import (
    LEXICON_FILE,
    SAMPLE_LEXICON_FILE,
    canonical_bytes,
    lexicon_sha256,
    load_lexicon,
    save_lexicon,
)
from shoppingbench.generator.writer.propose import key_refusal, value_refusal
from shoppingbench.sample_world import SampleWorld
from shoppingbench.world.catalog import generate_products
from shoppingbench.world.lexicon import sample_world_lexicon
from tests.servers import running_server

MODEL = "phrasing-model"


def _catalog(tmp_path: Path, products: list[Product]) -> Path:
    source = tmp_path / "documents.jsonl.gz"
    with gzip.open(source, "wb") as handle:
        for product in products:
            handle.write(orjson.dumps(document_for(product).model_dump()) + b"\n")
    catalog_dir = tmp_path / "catalog"
    build_catalog(source, catalog_dir, strict=True, progress=False)
    return catalog_dir


_SIZED = [("Aria", "m", "red"), ("Bea", "l", "blue"), ("Cy", "xl", "red"), ("Di", "int:m", "black"),
          ("Ed", "m", "white")]


@pytest.fixture(scope="module")
def sized_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small catalog whose products carry sizes "m", "l", "xl" and "int:m" and a colour key."""
    products = [
        Product(product_id=f"{i:04d}", shop_id="1", title=f"Cotton Crop Top Summer {name}", price=100 + i,
                sku_options={"1": {"size": size, "color_family": color}},
                attributes={"fa_pattern": ["plain"], "units_hb": [f"{i % 3 + 1} pcs"]})
        for i, (name, size, color) in enumerate(_SIZED * 3)]
    return _catalog(tmp_path_factory.mktemp("sized"), products)


def _build(catalog_dir: Path, out: Path, *extra: str) -> Result:
    arguments = ["lexicon", "build", "--catalog", str(catalog_dir), "--out", str(out), *extra]
    return CliRunner().invoke(app, arguments)


def test_shipped_sample_lexicon_is_the_deterministic_build() -> None:
    assert SAMPLE_LEXICON_FILE.read_bytes() == canonical_bytes(sample_world_lexicon())


def test_canonical_bytes_round_trip_and_digest(tmp_path: Path) -> None:
    lexicon = load_lexicon(SAMPLE_LEXICON_FILE)
    digest = save_lexicon(lexicon, tmp_path / "lexicon.json")
    file_digest = hashlib.sha256((tmp_path / "lexicon.json").read_bytes()).hexdigest()
    assert digest == lexicon_sha256(lexicon) == file_digest
    assert load_lexicon(tmp_path / "lexicon.json") == lexicon
    reordered = json.loads((tmp_path / "lexicon.json").read_text())
    reordered["kinds"] = dict(reversed(list(reordered["kinds"].items())))
    (tmp_path / "other.json").write_text(json.dumps(reordered))
    assert lexicon_sha256(load_lexicon(tmp_path / "other.json")) == digest  # key order is not content


def test_a_file_that_is_not_a_lexicon_is_refused_clearly(tmp_path: Path) -> None:
    (tmp_path / "lexicon.json").write_text('{"format": 2}')
    with pytest.raises(LexiconError, match="is not a lexicon of format 1"):
        load_lexicon(tmp_path / "lexicon.json")


def test_missing_lexicon_says_how_to_build_one(sized_catalog: Path) -> None:
    assert not (sized_catalog / LEXICON_FILE).exists()
    with pytest.raises(LexiconError, match=re.escape(f"arena lexicon build --catalog {sized_catalog}")):
        writer_for_catalog(sized_catalog)


def test_a_sample_world_catalog_falls_back_to_the_shipped_lexicon(small_world: SampleWorld) -> None:
    assert lexicon_path(small_world.catalog_dir) == SAMPLE_LEXICON_FILE
    writer = writer_for_catalog(small_world.catalog_dir)
    assert isinstance(writer, LexiconWriter) and writer.key.endswith(lexicon_sha256(sample_world_lexicon()))


def test_build_without_a_model_writes_the_deterministic_lexicon(sized_catalog: Path, tmp_path: Path) -> None:
    out = tmp_path / "lexicon.json"
    result = _build(sized_catalog, out)
    assert result.exit_code == 0, result.output
    lexicon = load_lexicon(out)
    assert f"sha256 {lexicon_sha256(lexicon)}" in result.output
    assert lexicon.catalog_products == 15 and lexicon.kinds["crop top"] == 5  # once per distinct title
    assert lexicon.keys["color_family"].role == "color" and lexicon.keys["color_family"].words == ["color"]
    assert lexicon.keys["units_hb"].words == []  # no shopper word: the value is said alone
    assert lexicon.values["size"] == {"int:m": "medium", "l": "large", "m": "medium", "xl": "extra large"}
    again = tmp_path / "again.json"
    _build(sized_catalog, again)
    assert again.read_bytes() == out.read_bytes()


def _scripted_model(body: dict[str, Any]) -> StubReply:
    """Plays a model proposing phrasings: some good, some that must be refused, one junk reply."""
    prompt = body["messages"][-1]["content"]
    if prompt.startswith("For each attribute key"):
        return StubReply(content=json.dumps({"color_family": "colour", "units_hb": "units hb", "size": "size",
                                             "fa_pattern": 7}))
    if "'size'" in prompt:
        return StubReply(content="```json\n" + json.dumps({"m": "medium", "l": "m", "xl": "extra-large size",
                                                           "int:m": "<b>medium</b>"}) + "\n```")
    if "'units_hb'" in prompt:
        units = {"1 pcs": "one piece", "2 pcs": "2 pieces", "3 pcs": "3 pcs pack"}
        return StubReply(content=json.dumps(units))
    return StubReply(content="Sure! Here are some ideas: plain is simple.")


def test_build_with_a_model_keeps_valid_phrasings_and_refuses_the_rest(sized_catalog: Path,
                                                                        tmp_path: Path) -> None:
    stub = create_app(_scripted_model, models=[MODEL])
    out = tmp_path / "lexicon.json"
    with running_server(stub) as base_url:
        result = _build(sized_catalog, out, "--llm-url", f"{base_url}/v1", "--llm-model", MODEL)
    assert result.exit_code == 0, result.output
    lexicon = load_lexicon(out)
    assert lexicon.keys["color_family"].words == ["colour"] and lexicon.keys["size"].words == ["size"]
    assert lexicon.keys["units_hb"].words == []  # "units hb" is the raw key: refused
    assert lexicon.values["size"]["m"] == "medium" and lexicon.values["size"]["xl"] == "extra-large size"
    assert lexicon.values["size"]["l"] == "large"  # "m" is another size: refused, the fallback stays
    assert lexicon.values["size"]["int:m"] == "medium"
    assert lexicon.values["units_hb"] == {"3 pcs": "3 pcs pack"}
    for expected in ("refused key units_hb: 'units hb' (the raw key name)",
                     "refused key fa_pattern: '7' (not a string)",
                     "refused value size=l: 'm' (equals another value of the key ('m'))",
                     "refused value size=int:m: '<b>medium</b>' (odd characters)",
                     "refused value units_hb=1 pcs: 'one piece' (loses a number)",
                     "refused value units_hb=2 pcs: '2 pieces' (loses a unit)",
                     "refused values of fa_pattern: 'Sure! Here are some ideas: plain is simple.' "
                     "(the reply is not a JSON object)"):
        assert expected in result.output
    assert len(stub.state.requests) == 1 + 4  # one batch of keys, then one request per key


def test_build_extends_an_existing_lexicon(sized_catalog: Path, tmp_path: Path) -> None:
    out = tmp_path / "lexicon.json"
    _build(sized_catalog, out)
    edited = load_lexicon(out)
    edited = edited.model_copy(update={"values": {**edited.values, "size": {**edited.values["size"],
                                                                             "xl": "XL (extra large)"}}})
    save_lexicon(edited, out)
    _build(sized_catalog, out)
    assert load_lexicon(out).values["size"]["xl"] == "XL (extra large)"


def test_a_failing_endpoint_is_reported_never_fatal(sized_catalog: Path, tmp_path: Path) -> None:
    stub = create_app(lambda body: StubReply(status=500, content="overloaded"), models=[MODEL])
    out = tmp_path / "lexicon.json"
    with running_server(stub) as base_url:
        result = _build(sized_catalog, out, "--llm-url", f"{base_url}/v1", "--llm-model", MODEL)
    assert result.exit_code == 0, result.output
    assert "request failed" in result.output and "model: 0 phrasings kept" in result.output
    assert load_lexicon(out).values["size"]["l"] == "large"


@pytest.mark.parametrize(("raw", "proposed", "reason"), [
    ("500ml", "", "empty"),
    ("500ml", "half a litre", "loses a number"),
    ("500 ml", "500", "loses a unit"),
    ("cotton", "a very soft and breathable natural cotton fabric", "too long"),
    ("cotton", "cotton\u2122", "odd characters"),
    ("l", "m", "equals another value of the key ('m')"),
    ("xl", "m size", "contains another value of the key ('m')"),
    ("int:m", "medium", None),
    ("eu:40", "EU size 40", None),
])
def test_value_refusals(raw: str, proposed: str, reason: str | None) -> None:
    assert value_refusal(raw, proposed, ["m", "l", "xl", raw]) == reason


def test_key_refusals() -> None:
    assert key_refusal("color_family", "color family") == "the raw key name"
    assert key_refusal("color_family", "color") is None
    assert key_refusal("units_hb", "") is None
    assert key_refusal("fa_pattern", "pattern_2") == "not one to three plain words"
    generated = list(generate_products(5, seed=0))
    assert all(key_refusal(key, "style") is None for p in generated for key in p.attributes)
