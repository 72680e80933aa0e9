"""Streaming catalog import: formats, bad lines by number, strict mode, idempotence, bounded memory."""

from __future__ import annotations

import gzip
import random
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from structlog.testing import capture_logs

from shoppingbench.catalog import importer
from shoppingbench.catalog.importer import CatalogImportError, ImportReport, import_documents
from shoppingbench.catalog.models import CatalogDocument, Product, build_contents
from shoppingbench.catalog.store import ProductStore


def product(n: int, **changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "product_id": str(5_000_000 + n), "shop_id": str(70_000 + n % 7), "brand": "acme",
        "category": "Home > Kitchen", "title": f"Stainless steel bottle model {n}",
        "short_description": "Keeps drinks cold.", "description": f"Bottle number {n}.", "specification": "",
        "price": 100.0 + n, "sold_count": n * 3, "sku_options": {"1": {"size": "750ml"}},
        "attributes": {"material": ["stainless steel"]}, "main_image_url": "", "product_url": "",
        "service": ["COD"] if n % 2 else ["official", "freeShipping"],
    }
    value.update(changes)
    return value


def document(n: int, **changes: Any) -> dict[str, Any]:
    item = product(n, **changes)
    contents = f"{item.get('title')}\n750ml\nstainless steel"
    return {"id": item["product_id"], "contents": contents, "product": item}


def line(value: Any) -> bytes:
    return orjson.dumps(value) + b"\n"


def write(path: Path, lines: list[bytes], *, compress: bool = False) -> Path:
    data = b"".join(lines)
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def stored(store: ProductStore) -> list[dict[str, Any]]:
    return [doc.model_dump() for doc in store.iter_documents()]


def run(source: Path, store: ProductStore, **options: Any) -> ImportReport:
    return import_documents(source, store, progress=False, **options)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ProductStore]:
    with ProductStore(tmp_path / "products.sqlite3") as opened:
        yield opened


def test_plain_file_imports_every_document_exactly(tmp_path: Path, store: ProductStore) -> None:
    docs = [document(n) for n in range(5)]
    report = run(write(tmp_path / "documents.jsonl", [line(d) for d in docs]), store)

    assert (report.lines, report.imported, report.bad, report.blank, report.errors) == (5, 5, 0, 0, [])
    assert report.source == tmp_path / "documents.jsonl"
    assert stored(store) == [CatalogDocument.model_validate(d).model_dump() for d in docs]


def test_gzip_is_detected_by_content_not_name(tmp_path: Path, store: ProductStore) -> None:
    gzipped = write(tmp_path / "documents.jsonl", [line(document(n)) for n in range(3)], compress=True)
    plain = write(tmp_path / "documents.jsonl.gz", [line(document(n)) for n in range(3, 6)])

    assert run(gzipped, store).imported == 3
    assert run(plain, store).imported == 3
    assert len(store) == 6


def test_real_sample_file(shared_samples: Path, store: ProductStore) -> None:
    source = shared_samples / "documents_sample.jsonl"
    report = run(source, store)

    expected = [CatalogDocument.model_validate(orjson.loads(raw)).model_dump()
                for raw in source.read_bytes().splitlines() if raw.strip()]
    assert report.bad == 0 and report.imported == len(expected) > 0
    assert stored(store) == sorted(expected, key=lambda d: d["id"])


def test_bad_lines_are_reported_by_number_and_the_rest_imports(tmp_path: Path, store: ProductStore) -> None:
    lines = [
        line(document(1)),                                             # 1 good
        b'{"id": "5000002", "contents": "x", "product": \n',           # 2 invalid JSON
        line([document(3)]),                                           # 3 not an object
        line({k: v for k, v in document(4).items() if k != "contents"}),  # 4 no contents
        line(document(5, price=-1)),                                   # 5 invalid field
        line({**document(6), "id": "999"}),                            # 6 id != product_id
        line(document(7)).replace(b"model 7", b"model \xff7"),         # 7 not UTF-8
        b"   \n",                                                      # 8 blank
        line({k: v for k, v in product(9).items() if k != "title"}),   # 9 bare product without title
        line(document(10, product_id=None)),                           # 10 missing product_id
        line(document(11)),                                            # 11 good
    ]
    report = run(write(tmp_path / "documents.jsonl", lines), store)

    assert [(e.line, e.reason) for e in report.errors] == [
        (2, "invalid JSON: unexpected end of data at column 47"),
        (3, "expected a JSON object, got a JSON array"),
        (4, "invalid document: missing field 'contents'"),
        (5, "invalid document: product.price: Input should be greater than or equal to 0"),
        (6, "id '999' differs from product.product_id '5000006'"),
        (7, "not valid UTF-8 (byte 0xff at byte offset 57)"),
        (9, "not a document (no id, contents or product) nor a valid bare product: missing field 'title'"),
        (10, "invalid document: id: Input should be a valid string (and 1 more problem)"),
    ]
    assert (report.lines, report.imported, report.bad, report.blank) == (11, 2, 8, 1)
    assert [d["id"] for d in stored(store)] == ["5000001", "5000011"]


def test_only_the_first_errors_are_listed_but_all_are_counted(tmp_path: Path, store: ProductStore) -> None:
    report = run(write(tmp_path / "d.jsonl", [b"nope\n"] * 7 + [line(document(1))]), store,
                 max_errors_reported=3)
    assert report.bad == 7 and [e.line for e in report.errors] == [1, 2, 3] and report.imported == 1


def test_overlong_ids_are_bad_lines(tmp_path: Path, store: ProductStore) -> None:
    long_id = "9" * 257  # ids are held for every product while indexing: one runaway id must not count
    lines = [line(document(1)), line(document(2, product_id=long_id)), line(document(3, shop_id=long_id)),
             line(product(4, product_id=long_id)), line(document(5, product_id="9" * 256))]
    report = run(write(tmp_path / "d.jsonl", lines), store)

    assert [(e.line, e.reason) for e in report.errors] == [
        (2, "invalid document: id: String should have at most 256 characters (and 1 more problem)"),
        (3, "invalid document: product.shop_id: String should have at most 256 characters"),
        (4, "not a document (no id, contents or product) nor a valid bare product: "
            "product_id: String should have at most 256 characters"),
    ]
    assert [d["id"] for d in stored(store)] == ["5000001", "9" * 256]


def test_bare_product_lines_import_as_documents(tmp_path: Path, store: ProductStore) -> None:
    bare = [product(n) for n in range(3)]
    report = run(write(tmp_path / "products.jsonl", [line(p) for p in bare]), store)

    assert report.imported == 3 and report.bad == 0
    for doc, raw in zip(stored(store), bare, strict=True):
        expected = Product.model_validate(raw)
        assert doc["id"] == expected.product_id
        assert doc["contents"] == build_contents(expected)
        assert doc["product"] == expected.model_dump()


def test_truncated_gzip_keeps_every_complete_line_before_the_cut(tmp_path: Path, store: ProductStore) -> None:
    rng = random.Random(3)
    # Random descriptions keep the compressed stream long, so the cut lands mid-file.
    lines = [line(document(n, description=" ".join(str(rng.random()) for _ in range(40))))
             for n in range(2_000)]
    whole = gzip.compress(b"".join(lines))
    source = tmp_path / "documents.jsonl.gz"
    source.write_bytes(whole[: len(whole) // 2])

    report = run(source, store)

    assert report.bad == 1 and len(report.errors) == 1
    cut = report.errors[0]
    assert "gzip stream is truncated" in cut.reason
    assert 100 < cut.line < 2_000
    assert report.imported == cut.line - 1 == len(store)
    assert [d["id"] for d in stored(store)] == [str(5_000_000 + n) for n in range(cut.line - 1)]
    # The report says the file was not read to its end, so a catalog build can refuse it.
    assert not report.complete and report.stream_error == cut.reason and report.lines == cut.line


def test_corrupt_gzip_trailer_is_reported_after_the_data(tmp_path: Path, store: ProductStore) -> None:
    data = bytearray(gzip.compress(b"".join(line(document(n)) for n in range(10))))
    data[-8] ^= 0xFF  # the CRC-32 of the trailer
    source = tmp_path / "documents.jsonl.gz"
    source.write_bytes(bytes(data))

    report = run(source, store)

    assert report.imported == 10 and report.bad == 1
    assert report.errors[0].line == 11 and "gzip stream is corrupt" in report.errors[0].reason
    assert not report.complete


def test_a_file_read_to_its_end_is_complete_even_with_bad_lines(tmp_path: Path, store: ProductStore) -> None:
    source = write(tmp_path / "d.jsonl.gz", [line(document(1)), b"{bad\n"], compress=True)
    report = run(source, store, max_errors_reported=0)
    assert report.complete and report.stream_error is None and report.bad == 1


def test_the_truncation_is_reported_even_past_the_listed_errors(tmp_path: Path, store: ProductStore) -> None:
    whole = gzip.compress(b"".join([b"nope\n"] * 5 + [line(document(n)) for n in range(50)]))
    (tmp_path / "d.jsonl.gz").write_bytes(whole[:-20])
    report = run(tmp_path / "d.jsonl.gz", store, max_errors_reported=2)
    assert not report.complete and "gzip stream is truncated" in (report.stream_error or "")


def test_a_plain_file_cut_mid_line_is_incomplete(tmp_path: Path, store: ProductStore) -> None:
    data = b"".join(line(document(n)) for n in range(10))
    source = write(tmp_path / "documents.jsonl", [data[: len(data) - 40]])

    report = run(source, store)

    assert report.imported == 9 == len(store) and report.bad == 1 and report.lines == 10
    assert not report.complete and (report.stream_error or "").startswith("the file ended early")
    assert report.errors[0].line == 10 and report.errors[0].reason == report.stream_error


def test_a_valid_last_line_without_a_newline_is_complete(tmp_path: Path, store: ProductStore) -> None:
    data = b"".join(line(document(n)) for n in range(3))
    report = run(write(tmp_path / "documents.jsonl", [data.rstrip(b"\n")]), store)
    assert report.complete and report.imported == 3 and report.bad == 0


def test_a_bad_terminated_last_line_is_only_a_bad_line(tmp_path: Path, store: ProductStore) -> None:
    report = run(write(tmp_path / "documents.jsonl", [line(document(1)), b"{bad\n"]), store)
    assert report.complete and report.bad == 1


def test_strict_mode_on_a_plain_file_cut_mid_line(tmp_path: Path, store: ProductStore) -> None:
    data = b"".join(line(document(n)) for n in range(4))
    with pytest.raises(CatalogImportError, match="the file ended early"):
        run(write(tmp_path / "documents.jsonl", [data[:-10]]), store, strict=True)


def test_strict_mode_fails_on_the_first_bad_line_and_keeps_only_complete_batches(
        tmp_path: Path, store: ProductStore) -> None:
    lines = [line(document(n)) for n in range(7)] + [b"{broken\n"] + [line(document(n)) for n in range(8, 12)]
    source = write(tmp_path / "documents.jsonl", lines)

    with pytest.raises(CatalogImportError) as failure:
        run(source, store, strict=True, batch_size=3)

    assert (failure.value.source, failure.value.line) == (source, 8)
    assert failure.value.reason.startswith("invalid JSON")
    assert str(failure.value).startswith(f"{source}: line 8: invalid JSON")
    # 7 valid documents precede the bad line: the two complete batches of 3 are committed, the 7th is not.
    assert [d["id"] for d in stored(store)] == [str(5_000_000 + n) for n in range(6)]


def test_strict_mode_on_a_truncated_gzip(tmp_path: Path, store: ProductStore) -> None:
    whole = gzip.compress(b"".join(line(document(n)) for n in range(50)))
    source = tmp_path / "documents.jsonl.gz"
    source.write_bytes(whole[:-20])

    with pytest.raises(CatalogImportError, match="gzip stream is truncated"):
        run(source, store, strict=True, batch_size=1_000)
    assert len(store) == 0


def test_reimport_is_idempotent(tmp_path: Path, store: ProductStore) -> None:
    source = write(tmp_path / "documents.jsonl", [line(document(n)) for n in range(20)], compress=True)

    first = run(source, store, batch_size=6)
    before = stored(store)
    second = run(source, store, batch_size=6)

    counts = (first.lines, first.imported, first.bad)
    assert counts == (second.lines, second.imported, second.bad) == (20, 20, 0)
    assert stored(store) == before and len(store) == 20


def test_a_later_line_replaces_an_earlier_one_with_the_same_id(tmp_path: Path, store: ProductStore) -> None:
    report = run(write(tmp_path / "d.jsonl", [line(document(1)), line(document(1, price=5.0))]), store)
    assert report.imported == 2 and len(store) == 1
    assert store.get("5000001") == Product.model_validate(product(1, price=5.0))


def test_line_endings_bom_and_missing_final_newline(tmp_path: Path, store: ProductStore) -> None:
    raw = b"\xef\xbb\xbf" + orjson.dumps(document(1)) + b"\r\n\r\n" + orjson.dumps(document(2))
    report = run(write(tmp_path / "d.jsonl", [raw]), store)
    assert (report.lines, report.imported, report.bad, report.blank) == (3, 2, 0, 1)


def test_empty_file(tmp_path: Path, store: ProductStore) -> None:
    report = run(write(tmp_path / "d.jsonl", []), store)
    assert (report.lines, report.imported, report.bad) == (0, 0, 0)


def test_lines_split_across_read_chunks(
        tmp_path: Path, store: ProductStore, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [line(document(n)) for n in range(30)] + [b"bad\n", line(document(30))]
    source = write(tmp_path / "d.jsonl.gz", lines, compress=True)
    monkeypatch.setattr(importer, "_CHUNK_BYTES", 7)

    report = run(source, store, batch_size=4)

    assert (report.imported, report.bad, report.errors[0].line) == (31, 1, 31)
    assert len(store) == 31


def test_an_overlong_line_is_skipped_without_being_buffered(
        tmp_path: Path, store: ProductStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importer, "_CHUNK_BYTES", 64)
    limit = len(line(document(1))) + 10
    monkeypatch.setattr(importer, "MAX_LINE_BYTES", limit)
    huge = line(document(2, description="x" * (limit * 5)))
    report = run(write(tmp_path / "d.jsonl", [line(document(1)), huge, line(document(3)), huge]), store)

    assert [(e.line, e.reason) for e in report.errors] == [
        (2, f"line is longer than {limit} bytes"), (4, f"line is longer than {limit} bytes")]
    assert report.imported == 2 and report.lines == 4


def test_logs_one_line_at_start_and_one_at_the_end(tmp_path: Path, store: ProductStore) -> None:
    source = write(tmp_path / "d.jsonl", [line(document(1)), b"x\n"])
    with capture_logs() as logs:
        run(source, store)
    assert [entry["event"] for entry in logs] == ["catalog_import_started", "catalog_import_finished"]
    assert (logs[1]["lines"], logs[1]["imported"], logs[1]["bad"]) == (2, 1, 1)


def test_bad_batch_size_is_refused(tmp_path: Path, store: ProductStore) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        run(write(tmp_path / "d.jsonl", []), store, batch_size=0)


def test_memory_stays_bounded_by_the_batch_not_the_file(tmp_path: Path, store: ProductStore) -> None:
    rng = random.Random(7)
    source = tmp_path / "big.jsonl.gz"
    with gzip.open(source, "wb", compresslevel=1) as out:
        for n in range(50_000):
            out.write(line(document(n, description=" ".join(str(rng.random()) for _ in range(50)))))
    with gzip.open(source, "rb") as inp:
        uncompressed = sum(len(chunk) for chunk in iter(lambda: inp.read(1 << 20), b""))

    tracemalloc.start()
    try:
        report = run(source, store, batch_size=250)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert report.imported == 50_000
    # Python-side peak (SQLite's own cache is not traced): one read chunk plus one batch of documents,
    # a small fraction of the ~60 MB file; loading it whole would take several times the file size.
    assert uncompressed > 50_000_000
    assert peak < uncompressed / 4, f"peak {peak / 1e6:.1f} MB for a {uncompressed / 1e6:.1f} MB file"
