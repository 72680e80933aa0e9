"""The documentation points at things that exist: repo paths in backticks and relative Markdown links.

Read: ``README.md``, ``CHANGELOG.md`` and ``docs/*.md``. A backticked token (or a word of a code block)
that starts with one of the repo's top-level folders (``arena/validator/assemble.py``,
``shoppingbench/doubles/``) must name a file or folder of the repo; a relative link (``](docs/x.md)``,
``](x.md#anchor)``, ``](#anchor)``) must name an existing file and, when it has an anchor into a Markdown
file, a heading of that file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[1]
DOCUMENTS: Final = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP_FOLDERS: Final = ("shoppingbench", "arena", "trajectories", "neurons", "benchmarks", "docker", "scripts",
                      "tests", "docs")
REPO_PATH: Final = re.compile(rf"^(?:{'|'.join(TOP_FOLDERS)})/[\w./-]*$")
"""A whole backticked span that is a path in the repo (globs, placeholders and commands do not match)."""
CODE_BLOCK: Final = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
INLINE_CODE: Final = re.compile(r"`([^`\n]+)`")
LINK: Final = re.compile(r"\]\(([^)\s]+)\)")


def prose(path: Path) -> str:
    """The file's text without its fenced code blocks (``](x)`` there is code, not a link)."""
    return CODE_BLOCK.sub("", path.read_text())


def repo_paths(document: Path) -> list[str]:
    """Every backticked span, and every word of a code block, that is a path under a top-level folder."""
    text = document.read_text()
    spans = INLINE_CODE.findall(CODE_BLOCK.sub("", text))
    words = [word.strip("\"'(),;") for block in CODE_BLOCK.findall(text) for word in block.split()]
    return [token for token in [*spans, *words] if REPO_PATH.match(token)]


def relative_links(text: str) -> list[str]:
    """Every link target that is neither a URL nor mail (inline code removed: ``](x)`` there is code)."""
    targets = LINK.findall(INLINE_CODE.sub("", text))
    return [target for target in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the file's headings (lower case, punctuation dropped, spaces to hyphens)."""
    seen: dict[str, int] = {}
    result = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", CODE_BLOCK.sub("", path.read_text()), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def broken_link(document: Path, target: str) -> str | None:
    """Why ``target`` (a link in ``document``) points nowhere, or None when it points at something."""
    file_part, _, anchor = target.partition("#")
    linked = (document.parent / file_part).resolve() if file_part else document
    if not linked.exists():
        return f"{target}: no such file"
    if anchor and linked.suffix == ".md" and anchor not in anchors(linked):
        return f"{target}: no heading #{anchor} in {linked.relative_to(ROOT)}"
    return None


def test_the_documents_exist() -> None:
    assert all(document.exists() for document in DOCUMENTS[:2])
    assert len(DOCUMENTS) > 2


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_backticked_repo_paths_exist(document: Path) -> None:
    missing = sorted({path for path in repo_paths(document) if not (ROOT / path).exists()})
    assert not missing, missing


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_point_at_files_and_headings(document: Path) -> None:
    broken = sorted({reason for target in relative_links(prose(document))
                     if (reason := broken_link(document, target)) is not None})
    assert not broken, broken
