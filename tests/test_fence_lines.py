"""A code fence's line has one definition (instring.FENCE_HEAD): quotation.Fences, which
reads the fenced blocks of the prose forward (a ```text block shows its calls), and
instring's search back for the line a string opened before a marker cannot cross, give
the same answer for every line."""

from __future__ import annotations

import pytest

from toolgram._scan.instring import _paragraph
from toolgram._scan.quotation import Fences

# Lines around the rule's edges: indents of 0-5 spaces, a tab; runs of 2-4 backticks and
# tildes; info strings with and without a backtick in their first word (inline code).
LINES = [
    indent + run + info
    for indent in ("", " ", "   ", "    ", "     ", "\t", " \t")
    for run in ("``", "```", "````", "~~", "~~~", "~~~~")
    for info in ("", "py", " text", "<page> words and `code`", "a`b", " x`", "`", "0123456789abcdef`", "0123456789abcdefg`", "a\x1cb`")
]


def _fences_open(line: str) -> bool:
    fences = Fences()
    text = line + "\n"
    fences.read(text, 0, 0, len(text))
    return fences.open is not None


def _breaks(line: str) -> bool:
    buf = "Intro.\n" + line + "\nnext <tool_call>"
    after = buf.index("next")
    return _paragraph(buf, 0, after) == after


@pytest.mark.parametrize("line", LINES, ids=repr)
def test_a_fence_line_is_one_rule(line: str) -> None:
    # A line that opens a block (none open before it) is one a string cannot cross, and no
    # other line is (a blank line aside, which none of these is).
    assert _fences_open(line) == _breaks(line)

