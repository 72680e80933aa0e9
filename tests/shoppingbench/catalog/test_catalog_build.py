"""Catalog builds: a catalog is exactly its sources, never half-built, never mixed with an older build."""

from __future__ import annotations

import fcntl
import gzip
import os
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from shoppingbench import catalog_dir as build_module
from shoppingbench.catalog.importer import CatalogImportError
from shoppingbench.catalog.store import ProductStore
from shoppingbench.catalog_dir import (
    BUILD_RECORD,
    PARTIAL_STORE_FILE,
    STORE_FILE,
    TooManyBadLines,
    build_catalog,
    build_lock_path,
    catalog_exists,
    open_catalog,
)
from shoppingbench.files import write_file_atomically
from shoppingbench.search.base import FindProductQuery


def document(n: int, title: str = "steel bottle") -> dict[str, Any]:
    pid = str(1_000 + n)
    return {"id": pid, "contents": f"{title} {n}", "product": {
        "product_id": pid, "shop_id": "7", "title": f"{title} {n}", "price": 10.0 + n}}


def write(path: Path, numbers: range | list[int], *, compress: bool = False,
          title: str = "steel bottle") -> Path:
    data = b"".join(orjson.dumps(document(n, title)) + b"\n" for n in numbers)
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def stored_ids(catalog_dir: Path) -> list[str]:
    with ProductStore(catalog_dir / STORE_FILE, read_only=True) as store:
        return [d.id for d in store.iter_documents()]


def searched_ids(catalog_dir: Path, q: str = "bottle") -> list[str]:
    engine = open_catalog(catalog_dir)
    try:
        return sorted(hit.product_id for page in range(1, 6)
                      for hit in engine.find_product(FindProductQuery(q=q, page=page)))
    finally:
        engine.close()


def ids(numbers: range | list[int]) -> list[str]:
    return sorted(str(1_000 + n) for n in numbers)


def truncated_gzip(path: Path, count: int = 400) -> Path:
    whole = gzip.compress(b"".join(orjson.dumps(document(n, f"bottle {n * 7919 % 1009}")) + b"\n"
                                   for n in range(count)))
    path.write_bytes(whole[: len(whole) // 2])
    return path


def test_a_truncated_gzip_fails_the_build_and_marks_nothing_finished(tmp_path: Path) -> None:
    source = truncated_gzip(tmp_path / "documents.jsonl.gz")
    catalog_dir = tmp_path / "catalog"

    with pytest.raises(CatalogImportError, match=r"ended early or is corrupt at line \d+ .*re-download it"):
        build_catalog(source, catalog_dir, progress=False)

    assert not catalog_exists(catalog_dir)
    assert not (catalog_dir / "index").exists()


def test_a_truncated_source_leaves_the_previous_catalog_usable(tmp_path: Path) -> None:
    catalog_dir = tmp_path / "catalog"
    build_catalog(write(tmp_path / "good.jsonl", range(3)), catalog_dir, progress=False)

    with pytest.raises(CatalogImportError):
        build_catalog(truncated_gzip(tmp_path / "cut.jsonl.gz"), catalog_dir, progress=False)

    assert catalog_exists(catalog_dir)
    assert stored_ids(catalog_dir) == searched_ids(catalog_dir) == ids(range(3))
    assert not any(p.name.startswith(PARTIAL_STORE_FILE) for p in catalog_dir.iterdir())


def test_a_plain_source_cut_mid_line_leaves_the_previous_catalog(tmp_path: Path) -> None:
    catalog_dir = tmp_path / "catalog"
    build_catalog(write(tmp_path / "good.jsonl", range(30)), catalog_dir, progress=False)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes((tmp_path / "good.jsonl").read_bytes()[:-25])

    with pytest.raises(CatalogImportError, match=r"ended early or is corrupt at line 30 .*re-download it"):
        build_catalog(cut, catalog_dir, progress=False)

    assert orjson.loads((catalog_dir / BUILD_RECORD).read_bytes())["index"]["documents"] == 30
    assert stored_ids(catalog_dir) == searched_ids(catalog_dir) == ids(range(30))


def test_more_bad_lines_than_allowed_leave_the_previous_catalog(tmp_path: Path) -> None:
    catalog_dir = tmp_path / "catalog"
    build_catalog(write(tmp_path / "good.jsonl", range(3)), catalog_dir, progress=False)
    source = tmp_path / "bad.jsonl"
    source.write_bytes(write(tmp_path / "part.jsonl", range(5, 8)).read_bytes() + b"{bad\n[]\n")

    with pytest.raises(TooManyBadLines) as refused:
        build_catalog(source, catalog_dir, max_bad=1, progress=False)

    assert [r.bad for r in refused.value.reports] == [2] and "2 bad lines" in str(refused.value)
    assert stored_ids(catalog_dir) == searched_ids(catalog_dir) == ids(range(3))
    assert not any(p.name.startswith(PARTIAL_STORE_FILE) for p in catalog_dir.iterdir())
    assert build_catalog(source, catalog_dir, max_bad=2, progress=False).index.documents == 3
    assert stored_ids(catalog_dir) == ids(range(5, 8))


def test_a_rebuild_holds_exactly_the_new_source(tmp_path: Path) -> None:
    catalog_dir = tmp_path / "catalog"
    build_catalog(write(tmp_path / "big.jsonl", range(30)), catalog_dir, progress=False)

    report = build_catalog(write(tmp_path / "small.jsonl", range(20, 25)), catalog_dir, progress=False)

    # No scratch store, no WAL: the store file alone is the catalog.
    assert sorted(p.name for p in catalog_dir.iterdir()) == [BUILD_RECORD, "index", STORE_FILE]
    assert report.index.documents == 5
    assert stored_ids(catalog_dir) == searched_ids(catalog_dir) == ids(range(20, 25))
    assert orjson.loads((catalog_dir / BUILD_RECORD).read_bytes())["index"]["documents"] == 5


def test_shards_make_one_catalog_and_a_rebuild_is_idempotent(tmp_path: Path) -> None:
    shards = [write(tmp_path / "a.jsonl", range(0, 10)),
              write(tmp_path / "b.jsonl.gz", range(10, 25), compress=True),
              write(tmp_path / "c.jsonl", [3, 30], title="steel bottle again")]
    catalog_dir = tmp_path / "catalog"

    first = build_catalog(shards, catalog_dir, progress=False)
    index_files = {p.name: p.read_bytes() for p in (catalog_dir / "index").iterdir()}
    with ProductStore(catalog_dir / STORE_FILE, read_only=True) as store:
        documents = list(store.iter_documents())
    second = build_catalog(shards, catalog_dir, progress=False)

    assert [r.source for r in first.imported] == shards
    assert [r.imported for r in first.imported] == [10, 15, 2]
    assert stored_ids(catalog_dir) == searched_ids(catalog_dir) == ids([*range(25), 30])
    with ProductStore(catalog_dir / STORE_FILE, read_only=True) as store:
        assert store.get("1003").title == "steel bottle again 3"  # type: ignore[union-attr]  # later shard wins
        assert list(store.iter_documents()) == documents
    assert {p.name: p.read_bytes() for p in (catalog_dir / "index").iterdir()} == index_files
    assert replace(second.index, build_seconds=0) == replace(first.index, build_seconds=0)


def test_a_stale_wal_of_the_old_store_is_never_replayed_onto_the_new_one(tmp_path: Path) -> None:
    catalog_dir = tmp_path / "catalog"
    build_catalog(write(tmp_path / "old.jsonl", range(200)), catalog_dir, progress=False)
    store_path = catalog_dir / STORE_FILE
    wal = store_path.with_name(STORE_FILE + "-wal")
    # A writer killed with committed pages still in its WAL: save the WAL before close checkpoints it.
    db = sqlite3.connect(store_path)
    db.execute("PRAGMA wal_autocheckpoint=0")
    with db:
        db.execute("DELETE FROM products")
        db.execute("INSERT INTO products VALUES ('stale', 'stale bottle', ?)", (orjson.dumps(
            {"product_id": "stale", "shop_id": "1", "title": "stale bottle", "price": 1.0}),))
    stale_wal = wal.read_bytes()
    db.close()
    assert len(stale_wal) > 0
    wal.write_bytes(stale_wal)

    build_catalog(write(tmp_path / "new.jsonl", range(500, 520)), catalog_dir, progress=False)

    assert stored_ids(catalog_dir) == searched_ids(catalog_dir) == ids(range(500, 520))
    with sqlite3.connect(f"{store_path.as_uri()}?mode=ro", uri=True) as check:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_leftovers_of_a_killed_build_are_replaced(tmp_path: Path) -> None:
    catalog_dir = tmp_path / "catalog"
    catalog_dir.mkdir()
    partial = catalog_dir / PARTIAL_STORE_FILE
    with ProductStore(partial) as store:  # a killed build's half-imported store
        store.upsert([])
    with sqlite3.connect(partial) as db:
        db.execute("INSERT INTO products VALUES ('ghost', 'ghost bottle', ?)", (orjson.dumps(
            {"product_id": "ghost", "shop_id": "1", "title": "ghost bottle", "price": 1.0}),))
    partial.with_name(PARTIAL_STORE_FILE + "-wal").write_bytes(b"junk")

    build_catalog(write(tmp_path / "d.jsonl", range(4)), catalog_dir, progress=False)

    assert stored_ids(catalog_dir) == searched_ids(catalog_dir) == ids(range(4))
    assert not any(p.name.startswith(PARTIAL_STORE_FILE) for p in catalog_dir.iterdir())


def test_a_build_killed_while_indexing_is_not_taken_as_done(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    catalog_dir = tmp_path / "catalog"
    build_catalog(write(tmp_path / "old.jsonl", range(3)), catalog_dir, progress=False)

    def killed(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(build_module, "build_index", killed)
    with pytest.raises(KeyboardInterrupt):
        build_catalog(write(tmp_path / "new.jsonl", range(10, 14)), catalog_dir, progress=False)
    assert not catalog_exists(catalog_dir)

    monkeypatch.undo()
    build_catalog(write(tmp_path / "new.jsonl", range(10, 14)), catalog_dir, progress=False)
    assert stored_ids(catalog_dir) == searched_ids(catalog_dir) == ids(range(10, 14))


def test_write_file_atomically_keeps_the_old_bytes_when_it_fails(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "catalog.json"
    write_file_atomically(target, b"old")

    def fail(_fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="disk full"):
        write_file_atomically(target, b"new")
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["catalog.json"]
    monkeypatch.undo()
    write_file_atomically(target, b"new")
    assert target.read_bytes() == b"new" and [p.name for p in tmp_path.iterdir()] == ["catalog.json"]


CONCURRENT_BUILDER = """
import sys, time
from pathlib import Path
from shoppingbench import catalog_dir as build_module

source, catalog, go, builds = (Path(arg) for arg in sys.argv[1:])
real_build = build_module._build_locked

def counted_build(*args, **kwargs):
    with builds.open("a") as out:
        out.write("build\\n")
    time.sleep(0.5)  # long enough that the other process is surely waiting on the lock
    return real_build(*args, **kwargs)

build_module._build_locked = counted_build
while not go.exists():
    time.sleep(0.01)
print(build_module.build_catalog(source, catalog, strict=True, progress=False).index.documents)
"""


def test_two_processes_building_one_catalog_at_once_share_one_build(tmp_path: Path) -> None:
    source, catalog_dir = write(tmp_path / "docs.jsonl", range(40)), tmp_path / "catalog"
    go, builds = tmp_path / "go", tmp_path / "builds"
    builders = [subprocess.Popen([sys.executable, "-c", CONCURRENT_BUILDER, str(source), str(catalog_dir),
                                  str(go), str(builds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for _ in range(2)]
    go.touch()
    results = [builder.communicate(timeout=120) for builder in builders]

    assert [builder.returncode for builder in builders] == [0, 0], [err.decode() for _, err in results]
    assert [out.splitlines()[-1] for out, _ in results] == [b"40", b"40"]  # after the build's log lines
    assert builds.read_text() == "build\n"
    assert sorted(b"catalog_built_meanwhile" in out for out, _ in results) == [False, True]
    assert sorted(p.name for p in catalog_dir.iterdir()) == [BUILD_RECORD, "index", STORE_FILE]
    assert stored_ids(catalog_dir) == searched_ids(catalog_dir) == ids(range(40))


def test_a_build_waits_for_the_lock_then_builds_sources_the_running_build_did_not(
        tmp_path: Path) -> None:
    catalog_dir = tmp_path / "catalog"
    build_catalog(write(tmp_path / "old.jsonl", range(3)), catalog_dir, progress=False)
    with build_lock_path(catalog_dir).open("ab") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        waiting = subprocess.Popen([sys.executable, "-c", "import sys; from pathlib import Path; "
                                    "from shoppingbench.catalog_dir import build_catalog; "
                                    "build_catalog(Path(sys.argv[1]), Path(sys.argv[2]), progress=False)",
                                    str(write(tmp_path / "new.jsonl", range(10, 15))), str(catalog_dir)])
        with pytest.raises(subprocess.TimeoutExpired):  # blocked while the lock is held
            waiting.wait(timeout=2)
    assert waiting.wait(timeout=120) == 0
    assert stored_ids(catalog_dir) == ids(range(10, 15))
