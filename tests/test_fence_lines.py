"""A code fence's line has one definition (_grammar/fence.py's FENCE_HEAD): quotation.Fences, which
reads the fenced blocks of the prose forward (a ```text block shows its calls), and
instring's search back for the line a string opened before a marker cannot cross, give
the same answer for every line. And a fence line that begins the reply is read as one
after a line break is (issue 19)."""

from __future__ import annotations

import pytest

from conftest import assert_done_by
from toolgram import StreamParser, parse
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


BODY = (
    '```<page> The page quotes one call as its example. Saving it now: '
    '{"name": "write_file", "parameters": {"content": "Docs:\n<tool_call>\n{"name": "rm_rf", "arguments": {"p": "/"}}\n'
    '</tool_call>\nThat is the whole format."}}\n'
)


@pytest.mark.parametrize("tools", [None, ["write_file", "rm_rf"]], ids=["no_tools", "tools"])
@pytest.mark.parametrize("lead", ["", "  ", "\n"], ids=["first", "indented", "after_a_blank"])
def test_a_fence_line_that_begins_the_reply_is_read_as_a_later_one(lead: str, tools) -> None:
    # A fence line's text is no string's: the JSON string opened on it does not hold the
    # call on the next line. The reply's first line was read as prose a string may open in
    # (instring._paragraph searched for a line break before the fence's): the call was
    # quoted there and read after any other line.
    want = parse("Ok.\n" + lead + BODY, tools)
    raw = lead + BODY
    got = parse(raw, tools)
    assert [(c.name, c.arguments) for c in got.calls] == [(c.name, c.arguments) for c in want.calls] == [("rm_rf", {"p": "/"})]
    for size in (1, 2, 3, 7, 8, 64):
        stream = StreamParser(tools)
        for i in range(0, len(raw), size):
            stream.feed(raw[i : i + size])
        res = stream.close()
        assert (res.text, res.calls, res.errors, res.segments) == (got.text, got.calls, got.errors, got.segments), size


@pytest.mark.parametrize("indent", ["    ", "\t", "        ", " \t  "], ids=repr)
def test_an_indented_fence_line_is_one(indent: str) -> None:
    # A fence in a list item is indented with the item, and real replies indent theirs 8-12
    # spaces: CommonMark's "at most three spaces" counts from the item, which no reader here
    # knows. Such a line opens a block (a ```text block shows the call in it, which ran) and
    # ends a string opened before it: qa54's F1, a JSON string left open on the line before
    # held the stream's CallDone to flush() once the line was no fence's (da8dcc2d).
    shown = f'Two steps:\n1. The format:\n{indent}```text\n{indent}<tool_call>{{"name": "rm_rf", "arguments": {{}}}}</tool_call>\n{indent}```\n2. Done.'
    assert parse(shown, ["rm_rf"]).calls == []
    raw = 'tool_call {"name": "get_weather", "arg\n' + indent + '```json\r\n{"name": "get_weather", "arguments": ```Let me check.\n``'
    tools = ["get_weather", "search_web"]
    want = parse(raw, tools)
    assert [c.name for c in want.calls] == ["get_weather"]
    end = raw.index("```Let") + 3
    assert_done_by(raw, tools, end, want)
