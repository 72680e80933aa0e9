"""The documentation points at things that exist, stays readable, and describes the software, not its making.

Read: ``README.md``, ``CHANGELOG.md`` and ``docs/*.md``. A backticked token (or a word of a code block)
that starts with one of the repo's top-level folders (``arena/validator/assemble.py``,
``shoppingbench/doubles/``) must name a file or folder of the repo; a relative link (``](docs/x.md)``,
``](x.md#anchor)``, ``](#anchor)``) must name an existing file and, when it has an anchor into a Markdown
file, a heading of that file. A command a page names (``arena bank seal``, ``.venv/bin/miner test``) must
be a command of that program; pages stay within a size budget; and no page of ``README.md`` or ``docs/``
tells how the project was developed (``session``, ``helper`` outside code and a short allow-list).
"""

from __future__ import annotations

import importlib
import re
import tomllib
from functools import cache
from pathlib import Path
from typing import Any, Final

import pytest
import typer

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


# Size budget -------------------------------------------------------------------------------------------

PAGE_BUDGET: Final = 30_000
"""Bytes of one ``docs/`` page: about what a reader takes in at one sitting (roughly 4,500 words)."""
DOCS_BUDGET: Final = 200_000
"""Bytes of all of ``docs/**/*.md``: enough for a reference of every component, small enough that the
docs stay a reference, not a notebook of past runs (git history keeps those)."""
README_BUDGET: Final = 10_500
"""Bytes of the README: what the project is, the two commands and where to go next, read in minutes."""
DOC_PAGES: Final = sorted((ROOT / "docs").rglob("*.md"))


def test_pages_stay_within_their_size_budget() -> None:
    """A page someone reads in one sitting (``PAGE_BUDGET``), docs that stay a reference (``DOCS_BUDGET``),
    a README that is a front door (``README_BUDGET``)."""
    sizes = {str(page.relative_to(ROOT)): len(page.read_bytes()) for page in DOC_PAGES}
    oversized = {page: size for page, size in sizes.items() if size > PAGE_BUDGET}
    assert not oversized, f"pages over {PAGE_BUDGET} bytes: {oversized}"
    assert sum(sizes.values()) <= DOCS_BUDGET, f"docs/**/*.md: {sum(sizes.values())} bytes > {DOCS_BUDGET}"
    readme = len((ROOT / "README.md").read_bytes())
    assert readme <= README_BUDGET, f"README.md: {readme} bytes > {README_BUDGET}"


# Commands named exist ----------------------------------------------------------------------------------

PROGRAMS: Final = ("arena", "miner", "dump", "worker", "validator")
COMMAND_PAGES: Final = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MENTION: Final = re.compile(rf"^(?:\.venv/bin/)?({'|'.join(PROGRAMS)})(?:\s+(.*))?$")
"""A program name at the start of a command (``.venv/bin/`` optional), then its words."""
SUBCOMMAND: Final = re.compile(r"^[a-z][a-z0-9_-]*$")
"""A word that can be a subcommand: lower case; an option, placeholder (``DIR``, ``<x>``, ``[...]``), path
or value (``my_agent.py``, ``a=b``) ends the command path."""
ENV_ASSIGNMENT: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
CommandTree = dict[str, "CommandTree"] | None
"""A command's subcommands by name (a group), or ``None`` for a command that takes no subcommand."""


def _tree(command: Any) -> CommandTree:
    """The subcommand tree of a click command (typer builds click groups; ``Group.commands``)."""
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        return None
    return {name: _tree(sub) for name, sub in subcommands.items()}


@cache
def command_trees() -> dict[str, CommandTree]:
    """Each program of ``[project.scripts]`` with its typer app's command tree.

    ``validator`` is ``neurons.validator:main``, a function that calls that module's typer ``app``: an
    entry point that is not a typer app is resolved to its module's ``app``."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(PROGRAMS) <= set(scripts), sorted(set(PROGRAMS) - set(scripts))
    trees = {}
    for program in PROGRAMS:
        module_name, _, attribute = scripts[program].partition(":")
        module = importlib.import_module(module_name)
        app = getattr(module, attribute)
        if not isinstance(app, typer.Typer):
            app = module.app
        assert isinstance(app, typer.Typer), f"{program}: {scripts[program]} is not a typer app"
        trees[program] = _tree(typer.main.get_command(app))
    return trees


def command_mentions(text: str) -> list[tuple[str, list[str]]]:
    """Every command a Markdown text names, as (program, the words after it that may be subcommands).

    Read: each backticked span outside code blocks and each line of a code block, split at ``&&``, ``||``,
    ``;`` and ``|``, leading ``$`` prompts and ``NAME=value`` assignments dropped. The words stop at the
    first that is not a lower-case word (an option, placeholder, path or value)."""
    lines = [line for block in CODE_BLOCK.findall(text) for line in block.splitlines()[1:-1]]
    spans = INLINE_CODE.findall(CODE_BLOCK.sub("", text))
    mentions = []
    for piece in (part for line in [*lines, *spans] for part in re.split(r"&&|\|\||;|(?<!\\)\|", line)):
        words = piece.split()
        while words and (words[0] == "$" or ENV_ASSIGNMENT.match(words[0])):
            words.pop(0)
        match = MENTION.match(" ".join(words))
        if match is None:
            continue
        rest = (match.group(2) or "").split()
        path = []
        for word in rest:
            if not SUBCOMMAND.match(word):
                break
            path.append(word)
        mentions.append((match.group(1), path))
    return mentions


def unknown_command(program: str, words: list[str], trees: dict[str, CommandTree]) -> str | None:
    """Why ``program words...`` names no command (a word that is not a subcommand of a group), or None.

    Words after a command that takes no subcommand are its arguments, not checked."""
    tree = trees[program]
    for depth, word in enumerate(words):
        if tree is None:
            return None
        if word not in tree:
            known = ", ".join(sorted(tree))
            return f"{program} {' '.join(words[:depth + 1])}: no such command (there are: {known})"
        tree = tree[word]
    return None


def test_command_mentions_are_read_from_spans_and_code_blocks() -> None:
    text = ("Run `arena no-such-command --x` or `.venv/bin/miner test AGENT.py`, not `arena/settings.py`.\n"
            "```bash\nbash scripts/bootstrap.sh && .venv/bin/arena network-demo\n"
            "ARENA_HOME=/tmp/x validator run --once\n```\n")
    assert command_mentions(text) == [("arena", ["network-demo"]), ("validator", ["run"]),
                                      ("arena", ["no-such-command"]), ("miner", ["test"])]
    trees: dict[str, CommandTree] = {"arena": {"network-demo": None, "bank": {"seal": None}},
                                     "miner": {"test": None}}
    assert unknown_command("arena", ["no-such-command"], trees) is not None
    assert unknown_command("arena", ["bank", "unseal"], trees) is not None
    assert unknown_command("arena", ["bank", "seal"], trees) is None
    assert unknown_command("miner", ["test", "my-agent"], trees) is None  # an argument of a leaf command


def test_the_command_trees_are_the_real_apps() -> None:
    trees = command_trees()
    assert unknown_command("arena", ["bank", "seal"], trees) is None
    assert unknown_command("validator", ["run"], trees) is None
    assert unknown_command("arena", ["no-such-command"], trees) is not None


@pytest.mark.parametrize("document", COMMAND_PAGES, ids=lambda path: str(path.relative_to(ROOT)))
def test_named_commands_exist(document: Path) -> None:
    trees = command_trees()
    unknown = sorted({reason for program, words in command_mentions(document.read_text())
                      if (reason := unknown_command(program, words, trees)) is not None})
    assert not unknown, f"{document.relative_to(ROOT)}: {unknown}"


# No development history --------------------------------------------------------------------------------

HISTORY_WORD: Final = re.compile(r"\b(?:sessions?|helpers?)\b", re.IGNORECASE)
"""Words that, in these docs, tell how the project was made (a working session, a helper agent)."""
ALLOWED_PHRASES: Final = re.compile(
    r"\b(?:pytest|HTTP|database|SQLAlchemy|requests|browser|login|terminal) sessions?\b"
    r"|\bsession(?:-scoped| fixtures?)\b"
    r"|\b(?:unused|pure|test|private) helpers?\b|\bhelpers? (?:functions?|modules?|renamed)\b",
    re.IGNORECASE)
"""Technical uses: a pytest/HTTP/database session; code helpers (functions of an agent or a module)."""
HISTORY_PAGES: Final = [ROOT / "README.md", *DOC_PAGES]


def history_words(text: str) -> list[str]:
    """Each line (numbered) of ``text`` using a history word outside code and the allowed phrases."""
    text = CODE_BLOCK.sub(lambda block: "\n" * block.group().count("\n"), text)
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = ALLOWED_PHRASES.sub("", INLINE_CODE.sub("", line))
        found += [f"line {number}: ...{line[max(0, m.start() - 40):m.end() + 40]}..."
                  for m in HISTORY_WORD.finditer(line)]
    return found


def test_history_words_are_found_outside_code_only() -> None:
    assert history_words("Written in the ninth session by a helper agent.") != []
    assert history_words("Helpers wrote it.\n") != []
    assert history_words("`requests.Session` and\n```\nsession = Session()\n```\nan HTTP session") == []
    assert history_words("Forty lines of unused helpers; a pytest session.") == []


@pytest.mark.parametrize("document", HISTORY_PAGES, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_development_history(document: Path) -> None:
    found = history_words(document.read_text())
    assert not found, f"{document.relative_to(ROOT)}: {found}"
