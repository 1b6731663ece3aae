"""How long a stream holds prose back: the most characters between a character's
arrival and the Text event that carries it (issue 17: a stream's holds are bounded;
issue 21: text is held back "until the next delta tells").

A reply that opens with a word and then a JSON value left open (`Saving {"path":
"C:\\dir\\"} now.`) was held whole until flush(): Mistral reads a name then its
arguments at the reply's start (a server that swallowed `[TOOL_CALLS]`), and its
driver waited for the value to close, although only `[ARGS]` (or `[CALL_ID]`) may
follow the name there and parse() fails on the value wherever it ends (QA16 G4). The
stream now says so once the text runs a few dozen characters past the value's start.
"""

from __future__ import annotations

import pytest

from toolgram import StreamParser, parse
from toolgram.events import Text

TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }
]
TAIL = "word\n" * 400
# A word, then a JSON value whose string (or bracket) the line leaves open; a name.
OPENINGS = [
    'Saving {"path": "C:\\dir\\"} now.\n',
    'x {"a": "b\n',
    "Sure {\"note\": \"it's\n",
    'Saving {"path": "x\n',
    'get_weather {"city": "Par\n',
    'get_weather [{"city": "Par\n',
    'x {"a": [1,\n',
    "x {\n",
]
FORMATS = [None, ["mistral"], ["xlam"]]
# The most a stream held such prose: the value's start, plus what the failure quotes
# and a closer the end could cut (the driver's look: longest marker + 64), plus a delta.
HOLD = 200


def _longest_hold(raw: str, size: int, tools, formats) -> tuple[int, str]:
    """(the longest hold, the text streamed) of raw fed in `size`-character deltas."""
    stream = StreamParser(tools, formats=formats)
    emitted = worst = 0
    text = []
    for i in range(0, len(raw), size):
        for e in stream.feed(raw[i : i + size]):
            if type(e) is Text:
                emitted += len(e.text)
                text.append(e.text)
        worst = max(worst, min(i + size, len(raw)) - emitted)
    text += [e.text for e in stream.flush() if type(e) is Text]
    return worst, "".join(text)


@pytest.mark.parametrize("formats", FORMATS, ids=lambda f: "all" if f is None else f[0])
@pytest.mark.parametrize("tools", [None, TOOLS], ids=["no_tools", "tools"])
@pytest.mark.parametrize("opening", OPENINGS)
def test_prose_after_a_value_no_name_can_take_is_not_held_to_the_end(opening: str, tools, formats) -> None:
    raw = opening + TAIL
    expected = parse(raw, tools, formats=formats)
    assert not expected.calls and not expected.errors  # (all prose, as parse() reads it)
    for size in (1, 8, 64):
        hold, text = _longest_hold(raw, size, tools, formats)
        assert text == expected.text
        assert hold <= HOLD, f"{size}-character deltas: {hold} characters held"


def test_a_long_reply_is_not_held_either() -> None:
    raw = OPENINGS[0] + "The rest of the answer goes on in plain prose for a while.\n" * 550  # (32 KB)
    hold, text = _longest_hold(raw, 8, None, None)
    assert text == parse(raw).text and hold <= HOLD


@pytest.mark.parametrize(
    "raw",
    [
        # The value after `[ARGS]`, or after `[TOOL_CALLS]`, is a call's: the stream
        # holds it until it closes or the reply ends (a call cut short), as parse() reads it.
        'get_weather[ARGS]{"city": "Par\n' + TAIL,
        '[TOOL_CALLS]get_weather{"city": "Par\n' + TAIL,
    ],
)
def test_a_call_still_open_is_held_as_before(raw: str) -> None:
    expected = parse(raw, TOOLS, formats=["mistral"])
    hold, text = _longest_hold(raw, 8, TOOLS, ["mistral"])
    assert text == expected.text and hold > HOLD
