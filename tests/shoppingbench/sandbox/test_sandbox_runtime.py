"""The hard-linked mirror the namespace sandbox mounts instead of the interpreter and site-packages: made
once per content, shared by concurrent runners, remade when the source changes, absent (the source is
mounted itself) where hard links cannot be made."""

from __future__ import annotations

import errno
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from shoppingbench.sandbox import runtime


@pytest.fixture
def source(tmp_path: Path) -> Path:
    tree = tmp_path / "venv" / "site-packages"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("VALUE = 1\n")
    (tree / "link.py").symlink_to("pkg/__init__.py")
    return tree


def test_the_mirror_links_every_file_at_a_neutral_path(source: Path, tmp_path: Path) -> None:
    root = tmp_path / "runtime"
    made = runtime.mirror(source, root)
    assert made is not None and made.parent == root and "venv" not in str(made)
    assert (made / "pkg" / "__init__.py").stat().st_ino == (source / "pkg" / "__init__.py").stat().st_ino
    assert os.readlink(made / "link.py") == "pkg/__init__.py"
    assert runtime.mirror(source, root) == made and sorted(root.iterdir()) == [made]  # made once


def test_a_changed_source_gets_a_new_mirror(source: Path, tmp_path: Path) -> None:
    root = tmp_path / "runtime"
    first = runtime.mirror(source, root)
    (source / "new_pkg").mkdir()  # what pip install does to site-packages
    second = runtime.mirror(source, root)
    assert second is not None and second != first and (second / "new_pkg").is_dir()


def test_concurrent_runners_agree_on_one_mirror(source: Path, tmp_path: Path) -> None:
    root = tmp_path / "runtime"
    with ThreadPoolExecutor(max_workers=8) as pool:
        made = set(pool.map(lambda _: runtime.mirror(source, root), range(8)))
    assert len(made) == 1 and None not in made and len(list(root.iterdir())) == 1


def test_without_hard_links_there_is_no_mirror_and_no_debris(source: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    def cross_device(src: str, dst: str, **_: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link", src)

    monkeypatch.setattr(os, "link", cross_device)
    root = tmp_path / "runtime"
    assert runtime.mirror(source, root) is None and list(root.iterdir()) == []


def test_a_mirror_root_others_may_write_to_is_not_used(source: Path, tmp_path: Path) -> None:
    # Anyone can make a directory in /tmp first and plant an interpreter under a predictable name.
    root = tmp_path / "runtime"
    root.mkdir()
    root.chmod(0o777)
    assert runtime.mirror(source, root) is None and list(root.iterdir()) == []
