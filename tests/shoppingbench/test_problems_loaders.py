"""Problem files: real samples, format and category detection, and precise errors for corrupt files."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from shoppingbench.problems.loaders import (
    LoadResult,
    ProblemFileError,
    category_from_name,
    iter_problems,
    load_problems,
)

GOOD = {"query": "a red mug", "reward": {"product_id": "1", "title": ["Red Mug"]}}


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def good(n: int) -> str:
    return json.dumps({"query": f"mug number {n}", "reward": {"product_id": str(n), "title": ["Mug"]}})


@pytest.mark.parametrize(
    ("kind", "targets"), [("product", [1, 1, 1]), ("shop", [4, 3, 4]), ("voucher", [1, 3, 2])]
)
def test_real_jsonl_samples(shared_samples: Path, kind: str, targets: list[int]) -> None:
    problems = load_problems(shared_samples / f"shoppingbench_{kind}_sample.jsonl")
    assert [p.category for p in problems] == [kind] * 3
    assert [len(p.targets) for p in problems] == targets
    assert all((p.voucher is not None) == (kind == "voucher") for p in problems)


def test_real_suite_sample(shared_samples: Path) -> None:
    (problem,) = load_problems(shared_samples / "oro_suite_sample.json")
    assert (problem.category, problem.difficulty, problem.title) == ("product", "easy", "Product 1")
    assert problem.reward_title_embeddings is not None
    assert [len(v) for v in problem.reward_title_embeddings.values()] == [1024]


@pytest.mark.parametrize("kind", ["product", "shop", "voucher"])
def test_category_from_shape_when_the_name_says_nothing(
    shared_samples: Path, tmp_path: Path, kind: str
) -> None:
    neutral = shutil.copy(shared_samples / f"shoppingbench_{kind}_sample.jsonl", tmp_path / "problems.jsonl")
    assert [p.category for p in load_problems(Path(neutral))] == [kind] * 3


def test_category_from_name_uses_whole_words() -> None:
    assert category_from_name(Path("shoppingbench_product_sample.jsonl")) == "product"
    assert category_from_name(Path("synthesize_shop_test.jsonl")) == "shop"
    assert category_from_name(Path("shoppingbench.jsonl")) is None
    assert category_from_name(Path("product_vs_shop.jsonl")) is None


def test_explicit_category_that_does_not_fit_is_an_error(shared_samples: Path) -> None:
    with pytest.raises(ProblemFileError, match="exactly one target") as caught:
        load_problems(shared_samples / "shoppingbench_shop_sample.jsonl", "product")
    assert (caught.value.line, caught.value.index) == (1, 0)


def test_stated_category_conflicting_with_the_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "suite_product.json"
    path.write_text(json.dumps([{**GOOD, "category": "Shop"}]))
    with pytest.raises(ProblemFileError, match="category 'Shop'"):
        load_problems(path)


def test_corrupt_jsonl_reports_file_line_and_reason(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "product.jsonl",
        [good(1), "", good(2), '{"query": "broken", "reward": ', json.dumps({"query": "no reward"}), good(3)],
    )
    with pytest.raises(ProblemFileError) as caught:
        load_problems(path)
    error = caught.value
    assert (error.path, error.line, error.index) == (path, 4, 2)
    assert error.reason.startswith("not valid JSON")
    assert str(error).startswith(f"{path}:4 (problem 2): not valid JSON")


def test_collect_returns_good_problems_and_every_error(tmp_path: Path) -> None:
    bad_price = json.dumps({"query": "q", "reward": {"product_id": "9", "price": [{"between": [1, None]}]}})
    path = write_lines(
        tmp_path / "product.jsonl",
        [good(1), "", "[1, 2", json.dumps({"query": "no reward"}), good(2), bad_price, "  ", good(1)],
    )
    result = load_problems(path, errors="collect")
    assert isinstance(result, LoadResult)
    assert [p.targets[0].product_id for p in result.problems] == ["1", "2"]
    assert [(e.line, e.index) for e in result.errors] == [(3, 1), (4, 2), (6, 4), (8, 5)]
    missing, price, duplicate = (e.reason for e in result.errors[1:])
    assert missing == "missing 'reward'."
    assert price == "reward[0].price: 'between' needs two bounds, got [1.0, None]."
    assert duplicate.startswith("duplicate of the problem at line 1")


def test_pydantic_errors_become_one_sentence(tmp_path: Path) -> None:
    raw = {
        "query": "",
        "reward": [{"product_id": "1", "service": "COD"}, {"title": ["x"]}],
        "voucher": {
            "voucher_type": "coupon",
            "threshold": 1,
            "discount_type": "fixed",
            "face_value": 1,
            "budget": 5,
        },
    }
    path = write_lines(tmp_path / "voucher.jsonl", [json.dumps(raw)])
    reason = load_problems(path, errors="collect").errors[0].reason
    assert "\n" not in reason and reason.endswith(".")
    for part in (
        "query: String should have at least 1 character",
        "reward[0].service: Input should be a valid list",
        "reward[1].product_id: Field required",
        "voucher.voucher_type: Input should be 'platform' or 'shop'",
    ):
        assert part in reason


def test_suite_errors_carry_item_index_and_line(tmp_path: Path) -> None:
    items = [GOOD, {"query": "bad", "reward": {"product_id": ""}}, {**GOOD, "query": "third"}]
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(items, indent=2))
    result = load_problems(path, errors="collect")
    assert [p.query for p in result.problems] == ["a red mug", "third"]
    (error,) = result.errors
    expected_line = json.dumps(items, indent=2).splitlines().index("  {", 2) + 1
    assert (error.index, error.line) == (1, expected_line)
    assert "reward[0].product_id" in error.reason


def test_suite_syntax_error_stops_with_a_line(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text('[\n  {"query": "a red mug", "reward": {"product_id": "1"}},\n  {"query": oops}\n]')
    result = load_problems(path, errors="collect")
    assert len(result.problems) == 1
    assert [(e.index, e.line) for e in result.errors] == [(1, 3)]
    with pytest.raises(ProblemFileError):
        load_problems(path)


def test_suite_items_must_be_objects(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text('[1, "two"]')
    assert [e.reason for e in load_problems(path, errors="collect").errors] == [
        "a problem is a JSON object, got int.",
        "a problem is a JSON object, got str.",
    ]


def test_gzip_and_empty_files(tmp_path: Path) -> None:
    packed = tmp_path / "product.jsonl.gz"
    packed.write_bytes(gzip.compress((good(1) + "\n" + good(2) + "\n").encode()))
    assert len(load_problems(packed)) == 2
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n")
    assert load_problems(empty) == []
    corrupt = tmp_path / "broken.jsonl.gz"
    corrupt.write_bytes(b"\x1f\x8b" + b"not gzip at all")
    with pytest.raises(ProblemFileError, match="cannot read"):
        load_problems(corrupt)


def test_iter_problems_streams_and_reports_through_callback(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "product.jsonl", [good(1), "nonsense", good(2)])
    seen: list[ProblemFileError] = []
    stream = iter_problems(path, on_error=seen.append)
    assert next(stream).targets[0].product_id == "1" and seen == []
    assert next(stream).targets[0].product_id == "2" and [e.line for e in seen] == [2]
    with pytest.raises(ProblemFileError):
        list(iter_problems(path))


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "product.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + good(1).encode() + b"\n")
    assert len(load_problems(path)) == 1


def test_a_gzip_cut_short_is_a_file_error_after_the_good_problems(tmp_path: Path) -> None:
    packed = gzip.compress("".join(good(n) + "\n" for n in range(2000)).encode())
    cut = tmp_path / "product.jsonl.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    seen: list[str] = []
    with pytest.raises(ProblemFileError, match="cannot read the file after"):
        seen.extend(p.query for p in iter_problems(cut))
    assert 0 < len(seen) < 2000


def test_a_suite_nested_too_deeply_is_a_problem_error(tmp_path: Path) -> None:
    suite = tmp_path / "suite.json"
    suite.write_text("[" + "[" * 100_000 + "]" * 100_000 + "]")
    with pytest.raises(ProblemFileError, match="nested too deeply"):
        load_problems(suite)


def test_non_finite_price_bounds_are_rejected(tmp_path: Path) -> None:
    bad = {"query": "a mug",
           "reward": {"product_id": "1", "title": ["Mug"], "price": [{"less than": [None, "NaN"]}]}}
    path = write_lines(tmp_path / "product.jsonl", [json.dumps(bad).replace('"NaN"', "NaN")])
    with pytest.raises(ProblemFileError, match="finite"):
        load_problems(path)
