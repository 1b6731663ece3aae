"""Every relative link in README.md and docs/*.md points to a file that exists, and a
link's #anchor into a Markdown file to one of its headings (GitHub's heading ids); every
`python -m toolgram…` command they (and grammars/README.md) give runs cleanly."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[ \t]*$", re.S | re.M)
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
INLINE_LINK = re.compile(r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", re.M)


def _prose(text: str) -> str:
    """Markdown text without its code blocks and code spans (where a link is no link)."""
    return CODE_SPAN.sub("", FENCED.sub("", text))


def links(text: str) -> list[str]:
    prose = _prose(text)
    return INLINE_LINK.findall(prose) + REFERENCE.findall(prose)


def slug(heading: str) -> str:
    """GitHub's id for a heading: its text, lower case, punctuation dropped, spaces as '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    ids = set()
    for heading in HEADING.findall(FENCED.sub("", text)):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        ids.add(base if n == 0 else f"{base}-{n}")
    return ids


def broken_links(page: Path) -> list[str]:
    """The relative links of a Markdown page that lead nowhere, each with why."""
    text = page.read_text(encoding="utf-8")
    broken = []
    for link in links(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", link, re.I) or link.startswith("//"):
            continue  # https:, mailto:, …: not checked here
        path, _, anchor = link.partition("#")
        target = (page.parent / unquote(path)).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file {target}")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target.read_text(encoding="utf-8")):
            broken.append(f"{link}: no heading #{anchor} in {target.name}")
    return broken


def test_the_checker_finds_what_is_broken(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## A `code` heading, twice\n\n## A `code` heading, twice\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n## Section one\n\n"
        "[ok](other.md) [ok](other.md#a-code-heading-twice-1) [ok](#section-one) [ok](https://example.com/x)\n"
        "[gone](missing.md) [bad anchor](other.md#nope) [bad here](#section-two)\n"
        "`[in code](nowhere.md)`\n\n```text\n[in a fence](nowhere.md)\n```\n\n[ref]: gone/too.md\n",
        encoding="utf-8",
    )
    found = broken_links(page)
    assert [b.split(":")[0] for b in found] == ["missing.md", "other.md#nope", "#section-two", "gone/too.md"], found


def test_slugs_follow_github() -> None:
    assert slug("How it works, and what it costs") == "how-it-works-and-what-it-costs"
    assert slug("ParseResult, ToolCall, Segment") == "parseresult-toolcall-segment"
    assert slug("The `toolgram.grammars` entry point") == "the-toolgramgrammars-entry-point"
    assert slug("Regression-testing your model with pytest") == "regression-testing-your-model-with-pytest"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_relative_links_resolve(page: Path) -> None:
    assert links(page.read_text(encoding="utf-8")), f"{page.name} links nowhere: is the link pattern still right?"
    assert broken_links(page) == []


def test_every_docs_page_is_linked_from_the_readme() -> None:
    docs = [p for p in PAGES if p.parent.name == "docs"]
    assert len(docs) >= 9, [p.name for p in docs]
    linked = {(ROOT / link.partition("#")[0]).resolve() for link in links((ROOT / "README.md").read_text(encoding="utf-8"))}
    assert [p.name for p in docs if p.resolve() not in linked] == []


# -- the commands the documents give ----------------------------------------------------

COMMAND_PAGES = [*PAGES, ROOT / "grammars" / "README.md"]
PYTHON_M = re.compile(r"python -m (toolgram(?:\.\w+)*)")


def _documented_modules() -> list[str]:
    return sorted({m for page in COMMAND_PAGES for m in PYTHON_M.findall(page.read_text(encoding="utf-8"))})


def test_the_documents_name_python_m_commands() -> None:
    assert "toolgram._audit.catalog" in _documented_modules()  # (the pattern still finds them)


@pytest.mark.parametrize("module", _documented_modules())
def test_each_python_m_command_in_the_documents_runs_cleanly(module: str) -> None:
    # A module with no `if __name__ == "__main__"` runs and does nothing, and one that the
    # package imports first warns (RuntimeWarning: 'found in sys.modules'): a regenerate
    # command that is neither is one a reader can trust.
    done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert "usage:" in done.stdout, done.stdout


TEST_PATH = re.compile(r"\btests/test_\w+\.py\b")  # (the test modules; not example paths such as tests/corpus/acme/)


def test_every_test_module_the_sources_and_documents_name_exists() -> None:
    # ("tests/test_vocabulary.py keeps both in step": a reader looks for the check there.)
    named = {
        (page.relative_to(ROOT).as_posix(), path)
        for page in [*COMMAND_PAGES, *sorted((ROOT / "src").rglob("*.py"))]
        for path in TEST_PATH.findall(page.read_text(encoding="utf-8"))
    }
    assert len(named) > 5  # (the pattern still finds them)
    assert sorted(n for n in named if not (ROOT / n[1]).exists()) == []
