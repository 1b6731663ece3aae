"""OLMo 3: after a call, a line `get time(timezone="Europe/Paris")` (a name with a space
in it, which the format cannot hold) that the block's end marker then closes is a call
the model meant: an error naming it, the calls before it kept, the block no text. Only
the end marker tells it from prose after a block whose end was left out, so the rule
asks for it within salvage.SPACED_HORIZON characters of the line, and a stream holds
that much back at most: parse() and a stream in any pieces agree."""

from __future__ import annotations

import pytest

import toolgram
from toolgram._scan.salvage import SPACED_HORIZON

from test_stream import check, chunked

HEAD = 'Checking both.\n<function_calls>\nget_weather(city="Lyon")\n'
ERROR = 'Couldn\'t read a tool call: the name "{}" cannot be written in this format; call the tool by its exact name.'


@pytest.mark.parametrize(
    ("rest", "name", "calls", "text"),
    [
        ('get time(timezone="Europe/Paris")\n</function_calls>', "get time", ["get_weather"], "Checking both."),
        ('get the time(tz="UTC");\n</function_calls>\nDone.', "get the time", ["get_weather"], "Checking both.\nDone."),
        ('get time(tz="UTC")\nget_date()\n</function_calls>', "get time", ["get_weather", "get_date"], "Checking both."),
        ('get time(tz="' + "x" * (SPACED_HORIZON - 40) + '")\n</function_calls>', "get time", ["get_weather"], "Checking both."),
    ],
)
@pytest.mark.parametrize("tools", [None, ["get_weather", "get_time", "get_date"]])
def test_a_spaced_name_before_the_end_marker_is_an_error_naming_it(rest, name, calls, text, tools) -> None:
    raw = HEAD + rest
    result = toolgram.parse(raw, tools)
    assert [c.name for c in result.calls] == calls
    assert result.errors == [ERROR.format(name)]
    assert result.text == text
    for size in (1, 2, 3, 7, 64):
        check(raw, chunked(raw, size), tools, timely=False)


# Two such lines before the end marker: an error naming each (QA7 D9).
@pytest.mark.parametrize(
    ("rest", "names", "calls", "text"),
    [
        ('get time(tz="UTC")\nget date(x=1)\n</function_calls>', ["get time", "get date"], ["get_weather"], "Checking both."),
        # (Another format's marker inside a string: a stream's reading of the text so far
        # stops there, and waits for the horizon or the end, as parse() reads it whole:
        # fuzz seed 7 input 1219068, stream != parse.)
        (
            'get time(timezone="Eu<|tool_calls_section_end|>rope/Paris")\nget date(format="iso")\n</function_calls>',
            ["get time", "get date"], ["get_weather"], "Checking both.",
        ),
    ],
)
def test_several_spaced_names(rest, names, calls, text) -> None:
    raw = HEAD + rest
    result = toolgram.parse(raw)
    assert [c.name for c in result.calls] == calls
    assert result.errors[: len(names)] == [ERROR.format(name) for name in names]
    if text is not None:
        assert result.text == text
    for size in (1, 2, 3, 7, 64):
        check(raw, chunked(raw, size), timely=False)


@pytest.mark.parametrize(
    "rest",
    [
        'get time(timezone="Europe/Paris")\nI will wait for both results.',  # (no end marker: prose)
        'get time(timezone="Europe/Paris")\nI wait.\n</function_calls>',  # (prose between)
        'get time(tz="' + "x" * SPACED_HORIZON + '")\n</function_calls>',  # (the end marker too far)
        "I will now wait for the results.\nMore prose here.",
        'I will call get_weather(city) next, then more.',
    ],
)
def test_otherwise_the_line_is_prose(rest: str) -> None:
    raw = HEAD + rest
    result = toolgram.parse(raw)
    assert [c.name for c in result.calls] == ["get_weather"] and result.errors == []
    assert result.text.startswith("Checking both.\n") and rest.split("\n")[0] in result.text
    for size in (1, 3, 7):
        check(raw, chunked(raw, size), timely=False)


def test_a_stream_holds_the_line_back_until_the_end_marker_tells() -> None:
    sp = toolgram.StreamParser()
    sent = [e for e in sp.feed(HEAD + 'get time(timezone="Europe/Paris")\n') if type(e).__name__ != "Text"]
    assert sent == []  # (neither the call before it nor the line: the end marker decides)
    events = sp.feed("</function_calls>")
    assert [type(e).__name__ for e in events] == ["CallStart", "ArgumentsDelta", "CallDone", "Error"]


# A spaced call whose `(` is left open, read on (Python's reading) into the next block,
# whose call closes it: no call that its block's end marker closes, so prose, in parse()
# and in a stream alike (fuzz seed 7 input 14379: a stream that had 320 characters after
# the line, but not the end of the reply, took it for prose where parse() read the two
# blocks as one).
def test_a_call_left_open_into_the_next_block_streams_as_it_parses() -> None:
    raw = (
        "Back soon. <function_calls>\nget_weather(city=\"Paris\")\nget time(timezone=\"Europe/Paris\"\n</function_calls>"
        "I'll check both.\n<function_calls>\nget_weather(city='Lyon')\nget_time(timezone='Europe/Paris')\n</function_calls>\n"
        "Back soon.\n\n<function_calls>get_weather(city='Lyon' days=2)</function_calls>\nI'll check both.\n"
        "<function_calls>\nget_weather(city='Lyon')\nget_time(timezone='Europe/P"
    )
    for size in (1, 2, 3, 7, 64):
        check(raw, chunked(raw, size), timely=False)
