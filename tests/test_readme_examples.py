"""Every ```python block in README.md and docs/*.md runs, and its asserts hold.

Each block runs alone, in a fresh namespace, with the repository as the working
directory: a reader can copy any one of them. Test ids name the page and the block,
counted from 1 in the page (``docs/api.md:block2`` is the second block of docs/api.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The pages that must show their API in code that runs, and at least how many blocks.
WITH_EXAMPLES = {"README.md": 2, "docs/api.md": 3, "docs/streaming.md": 4, "docs/tools.md": 1}

FENCE = re.compile(r"^```python\n(.*?)^```[ \t]*$", re.S | re.M)


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of Markdown text (a fence opens and closes on its own line)."""
    return FENCE.findall(text)


def _cases() -> list[tuple[str, int, str]]:
    cases = []
    for page in PAGES:
        name = page.relative_to(ROOT).as_posix()
        for n, code in enumerate(python_blocks(page.read_text(encoding="utf-8")), 1):
            cases.append((name, n, code))
    return cases


CASES = _cases()


def test_python_blocks_are_found() -> None:
    text = "Text.\n\n```python\nx = 1\n```\n\n` ```python [f()] ``` ` in a table\n\n```python\ny = 2\n```\n"
    assert python_blocks(text) == ["x = 1\n", "y = 2\n"]


@pytest.mark.parametrize("page, least", sorted(WITH_EXAMPLES.items()))
def test_page_has_examples(page: str, least: int) -> None:
    assert (ROOT / page).is_file(), f"{page} is gone: update WITH_EXAMPLES"
    found = sum(1 for name, _, _ in CASES if name == page)
    assert found >= least, f"{page} has {found} ```python block(s), expected at least {least}"


@pytest.mark.parametrize("page, n, code", CASES, ids=[f"{page}:block{n}" for page, n, _ in CASES])
def test_example_runs(page: str, n: int, code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    exec(compile(code, f"{page}:block{n}", "exec"), {"__name__": "readme"})
