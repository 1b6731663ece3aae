"""Python argument values with their own quotes inside, unescaped:
`command='grep -rn 'TODO' src/'`, `command="echo "hi" there"`.

Where the call's structure settles it (the value's closing quote is the first one
followed by `)` or by `,` and a keyword, and its quotes inside pair up as quoted
words) the value is read whole (repair unescaped_quotes); a quote that nothing pairs
(`city="Par"is"`) makes the call unreadable. Never a call without the argument: such
a call was read as `run_shell()` with `{}`, silently, and an agent would run it. In
parse and in a stream, in any chunking, alike.
"""

from __future__ import annotations

from typing import Any

import pytest

import toolgram

from conftest import result_key, streamed
from toolgram._scan import fastpath as _frame
from toolgram._recover import repair as _repair

SINGLE = "'grep -rn 'TODO' src/'"
DOUBLE = '"echo "hi" there"'
VALUES = {SINGLE: "grep -rn 'TODO' src/", DOUBLE: 'echo "hi" there'}

FORMATS = {
    "pythonic": "[{}]",
    "lfm2": "<|tool_call_start|>[{}]<|tool_call_end|>",
    "llama4_pythonic": "<|python_start|>[{}]<|python_end|>",
    "bare_pythonic": "{}",
}

# (the arguments as written, the arguments read): the value last, and followed by another.
ARGUMENTS = [
    ("command={v}, timeout=30", lambda v: {"command": v, "timeout": 30}),
    ("timeout=30, command={v}", lambda v: {"timeout": 30, "command": v}),
    ("command={v}", lambda v: {"command": v}),
    ("command={v} , cwd='/tmp',", lambda v: {"command": v, "cwd": "/tmp"}),
]


def _same_everywhere(raw: str, tools: Any) -> Any:
    """parse(), checked against a stream in chunks of 1, 2, 3 and 7 characters and
    against the general way (no fast frames)."""
    expected = toolgram.parse(raw, tools)
    for size in (1, 2, 3, 7):
        assert result_key(streamed(raw, size, tools)) == result_key(expected), f"chunks of {size}"
    _frame.enabled = False
    try:
        assert result_key(toolgram.parse(raw, tools)) == result_key(expected), "the general way"
    finally:
        _frame.enabled = True
    return expected


@pytest.mark.parametrize("tools", [None, ["run_shell"]], ids=["no_tools", "tools"])
@pytest.mark.parametrize("args", ARGUMENTS, ids=["then_kwarg", "last", "only", "trailing_comma"])
@pytest.mark.parametrize("value", list(VALUES), ids=["single", "double"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_value_with_its_own_quotes_is_read_whole(fmt: str, value: str, args: tuple, tools: Any) -> None:
    written, read = args
    raw = FORMATS[fmt].format("run_shell(" + written.format(v=value) + ")")
    result = _same_everywhere(raw, tools)
    assert result.errors == []
    assert [(c.name, c.arguments, c.format) for c in result.calls] == [("run_shell", read(VALUES[value]), fmt)]
    assert "unescaped_quotes" in result.calls[0].repairs
    assert result.text == ""


def _prose(raw: str) -> str:
    """The text of a reply whose one call cannot be read: the call stays prose, but its
    region's markers are markup, never text (mention.failed_prose; issue 19), the
    whitespace around the opener one separator, a line break where there was none."""
    for opener, end in (("<|tool_call_start|>", "<|tool_call_end|>"), ("<|python_start|>", "<|python_end|>")):
        before, marker, after = raw.partition(opener)
        if marker:
            return (before.rstrip() + "\n" if before.strip() else "") + after.replace(end, "")
    return raw


# Bare calls with an offered tool whose value a stray quote breaks are told (the error
# names the argument); these two, where the quote's string could still close on the
# line, are not read as broken there and stay prose with no error (left: issue 19).
_BARE_SILENT = {"city='Par' is', unit='C'", "city='Par', is', unit='C'"}


@pytest.mark.parametrize("tools", [None, ["get_weather"]], ids=["no_tools", "tools"])
@pytest.mark.parametrize(
    "written",
    [
        'city="Par"is"',
        'city="Par"is", unit="C"',
        "city='Par' is', unit='C'",
        'city="x"y", )',
        # (a comma and a word after the first quote: Python's reading never ends the call)
        "city='Par', is', unit='C'",
    ],
)
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_stray_quote_is_never_a_call_without_its_argument(fmt: str, written: str, tools: Any) -> None:
    raw = FORMATS[fmt].format("get_weather(" + written + ")") + " And some words after the call."
    result = _same_everywhere(raw, tools)
    for call in result.calls:
        assert "city" in call.arguments, call
    assert result.calls == []
    if fmt == "bare_pythonic" and (tools is None or written in _BARE_SILENT):  # (bare calls that are the whole reply, or prose)
        assert result.errors == []
    else:
        assert len(result.errors) == 1 and "'city'" in result.errors[0]
    assert result.text == _prose(raw)


@pytest.mark.parametrize(
    ("raw", "arguments", "repairs"),
    [
        # Python reads these: nothing changes.
        ("[say(text='It's fresh', to='O'Brien')]", {"text": "It's fresh", "to": "O'Brien"}, ("apostrophe",)),
        ("[say(text='a, b', to=\"x 'y' z\")]", {"text": "a, b", "to": "x 'y' z"}, ()),
        ("[say(text='it\\'s', n=1)]", {"text": "it's", "n": 1}, ()),
        # An apostrophe and a quoted word in one value.
        ("[say(text='Don't say 'no' here', n=1)]", {"text": "Don't say 'no' here", "n": 1}, ("unescaped_quotes",)),
        # Two quoted words; a quoted word at the end.
        ('[say(text="a "b" c "d" e")]', {"text": 'a "b" c "d" e'}, ("unescaped_quotes",)),
        ('[say(text="he said "hi"")]', {"text": 'he said "hi"'}, ("unescaped_quotes",)),
        # A comma and a word that is no keyword do not end it.
        ("[say(text='say 'hi', then go', n=2)]", {"text": "say 'hi', then go", "n": 2}, ("unescaped_quotes",)),
    ],
)
def test_values_python_reads_and_values_the_structure_settles(raw: str, arguments: dict, repairs: tuple) -> None:
    result = _same_everywhere(raw, None)
    assert [c.arguments for c in result.calls] == [arguments]
    assert result.calls[0].repairs == repairs


def test_the_next_call_after_a_settled_value_is_done_by_feed() -> None:
    raw = (
        "<|tool_call_start|>[run_shell(command='grep -rn 'TODO' src/', timeout=30)]<|tool_call_end|>"
        " and then some more words, long enough to be sure the call was sent before the end."
    )
    sp = toolgram.StreamParser()
    done_before_flush = []
    for i in range(0, len(raw), 5):
        done_before_flush += [e for e in sp.feed(raw[i : i + 5]) if type(e).__name__ == "CallDone"]
    assert [e.call.arguments for e in done_before_flush] == [{"command": "grep -rn 'TODO' src/", "timeout": 30}]


def test_quoted_end() -> None:
    text = "f(command='grep -rn 'TODO' src/', timeout=30)"
    pos = text.index("'")
    assert _repair.quoted_end(text, pos, True) == (text.index(", timeout"), True)
    text = 'f(city="Par"is", unit="C")'
    pos = text.index('"')
    assert _repair.quoted_end(text, pos, True) == (text.index(", unit"), False)
    # Python's reading stands: a stop after the string, or a string left open.
    for text in ("f(a='x', b=1)", "f(a='x' )", "f(a='x, b=1)"):
        assert _repair.quoted_end(text, 4, True) is None
    # In a stream: what follows the quote may still end the value, or more quotes may come.
    wait = _repair.quoted_end("f(a='x 'y' z', tim", 4, False)
    assert type(wait) is _repair.QuoteWait and wait.pending
    wait = _repair.quoted_end("f(a='x 'y' z", 4, False)
    assert type(wait) is _repair.QuoteWait and not wait.pending
    assert wait.absorbs(" more words", 12) and not wait.absorbs("', b=1)", 12)


def test_unquoted_inside() -> None:
    assert _repair.unquoted_inside("'grep -rn 'TODO' src/'") == "grep -rn 'TODO' src/"
    assert _repair.unquoted_inside('"a \\"b\\" "c" d"') == 'a "b" "c" d'
    assert _repair.unquoted_inside("'x'") is None  # (no quote inside: Python reads it)
    assert _repair.unquoted_inside('"Par"is"') is None  # (a stray quote)
    assert _repair.unquoted_inside('"a"b"c"') is None  # (no quoted words)
    assert _repair.unquoted_inside("'Lyon' days=2") is None


@pytest.mark.parametrize(
    "raw",
    [
        # Python's reading pairs the stray quote with one in the text after the call.
        '[get_weather(city="Par"is")]\nThen "ok", fine, and some more words.',
        '[get_weather(city="Par"is")]\nok\n[get_weather(city="Par"is")]\nok\n',
        'Checking.<|tool_call_start|>[get_weather(city="Par"is")]',
    ],
)
def test_a_stray_quote_does_not_take_the_text_after_it_as_its_value(raw: str) -> None:
    result = _same_everywhere(raw, ["get_weather"])
    assert result.calls == []
    assert len(result.errors) == 1 and "'city'" in result.errors[0]
    assert result.text == _prose(raw.strip())


# A string closed with the other quote (`city='Paris")`), or a quote too many after its
# close (`text='hi' ")`), where what follows ends the value and its call: read so, with
# a repair that says it (QA18 Q20, Q21). Python read on past the quote: the next call
# or argument swallowed into the value (recorded as "apostrophe"), or the closers and
# the format's end marker put into it, or the whole argument dropped as cut.
SLIPS = [
    ("get_weather(city='Paris\"), search(q='cats')", [("get_weather", {"city": "Paris"}), ("search", {"q": "cats"})], "mismatched_quote"),
    ('get_weather(city="Paris\'), search(q="cats")', [("get_weather", {"city": "Paris"}), ("search", {"q": "cats"})], "mismatched_quote"),
    ("get_weather(city='Paris\", unit='c')", [("get_weather", {"city": "Paris", "unit": "c"})], "mismatched_quote"),
    ('get_weather(city="Paris\', unit="c")', [("get_weather", {"city": "Paris", "unit": "c"})], "mismatched_quote"),
    ("say(text='it's hi\")", [("say", {"text": "it's hi"})], ("mismatched_quote", "apostrophe")),
    ("say(text='hi\")", [("say", {"text": "hi"})], "mismatched_quote"),
    ("say(text='hi\" )", [("say", {"text": "hi"})], "mismatched_quote"),
    ("say(text='hi' \")", [("say", {"text": "hi"})], "stray_quote"),
    ("say(text='hi'' )", [("say", {"text": "hi"})], "stray_quote"),
    ('say(text="hi"")', [("say", {"text": "hi"})], "stray_quote"),
    ("say(text=\"hi\"', n=1)", [("say", {"text": "hi", "n": 1})], "stray_quote"),
]


@pytest.mark.parametrize("tools", [None, ["get_weather", "search", "say"]], ids=["no_tools", "tools"])
@pytest.mark.parametrize(("written", "calls", "repair"), SLIPS, ids=[f"slip{i}" for i in range(len(SLIPS))])
@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "bare_pythonic"])
def test_a_quote_that_slipped_where_the_value_ends(fmt: str, written: str, calls: list, repair: str, tools: Any) -> None:
    raw = FORMATS[fmt].format(written)
    result = _same_everywhere(raw, tools)
    assert result.errors == []
    assert [(c.name, c.arguments) for c in result.calls] == calls
    assert result.calls[0].repairs == (repair if type(repair) is tuple else (repair,))
    assert all(c.repairs == () for c in result.calls[1:])
    assert result.text == ""


@pytest.mark.parametrize(
    ("raw", "arguments", "repairs"),
    [
        # The other quote inside a string Python reads, or not where the value ends: text.
        ("[say(text='Use f(\"x\") to call')]", {"text": 'Use f("x") to call'}, ()),
        ("[say(text='a 27\" screen, it's big')]", {"text": "a 27\" screen, it's big"}, ("apostrophe",)),
        ("[say(text='size 27\"), and it's big')]", {"text": "size 27\"), and it's big"}, ("apostrophe",)),
        ('[say(text="it\'s 5\' tall")]', {"text": "it's 5' tall"}, ()),
        ("[say(text='x\\\"), g(y=1)')]", {"text": 'x"), g(y=1)'}, ()),
        ("[say(text='x\"), g(y=1)')]", {"text": 'x"), g(y=1)'}, ()),
        ("[say(text='Paris\", unit=1')]", {"text": 'Paris", unit=1'}, ()),
        ('[say(text="Paris\', unit=1")]', {"text": "Paris', unit=1"}, ()),
        # Python's implicit concatenation: no quote too many.
        ("[say(text='hi' 'there')]", {"text": "hithere"}, ()),
        ("[say(text='hi' \", there\")]", {"text": "hi, there"}, ()),
        ("[say(text='hi' \"), g(y=1)\")]", {"text": "hi), g(y=1)"}, ()),
        ('[say(text="hi" \'), g(y=1)\')]', {"text": "hi), g(y=1)"}, ()),
    ],
)
def test_quotes_that_slipped_nowhere(raw: str, arguments: dict, repairs: tuple) -> None:
    result = _same_everywhere(raw, None)
    assert result.errors == []
    assert [c.arguments for c in result.calls] == [arguments]
    assert result.calls[0].repairs == repairs


def test_a_quote_that_slipped_at_the_end_of_the_reply_is_a_cut_value() -> None:
    # (No `)` after it: the structure settles nothing, and the end of the reply cut the value.)
    result = _same_everywhere("[say(text='hi\"", None)
    assert [c.arguments for c in result.calls] == [{"text": 'hi"'}]
    assert "cut_value" in result.calls[0].repairs and "mismatched_quote" not in result.calls[0].repairs


@pytest.mark.parametrize(
    "raw",
    [
        '<tool_call>{"name": "get_weather", "arguments": {"city": \'Paris", "unit": "c"}}</tool_call>',
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris\', "unit": "c"}}</tool_call>',
        '<tool_call>{"name": "get_weather", "arguments": {"city": \'Paris", unit: "c"}}</tool_call> Done.',
        '[TOOL_CALLS]get_weather[ARGS]{"city": \'Paris", "unit": "c"}',
        # (A `/` elsewhere in the payload, a URL's or a comment's: the quote is told as
        # without it. It turned the repair off for the whole payload, so a text read up to
        # a marker and one read past it with a path in it broke apart: fuzz seed 7 #7025501.)
        '<tool_call>{"name": "get_weather", "arguments": {"src": "http://x", "city": \'Paris", "unit": "c"}}</tool_call>',
        '<tool_call>{"name": "get_weather", "arguments": {"city": \'Paris", "unit": "c"} // note\n}</tool_call>',
        # (And after a comment, where the string's token is: fuzz seed 7 #7045754's fix.)
        '<tool_call>{"name": "get_weather", "arguments": {"city": /* where */ \'Paris", "unit": "c"}}</tool_call>',
        '<|tool_call_start|>[{"name": "get_weather", "arguments": {"city": \'Paris", "unit": "c"}}]<|tool_call_end|>',
    ],
)
def test_a_json_string_closed_with_the_other_quote(raw: str) -> None:
    # (Not `{"city": "Paris\", \"unit\": \"c\"}}"}`: the next key and the braces in the value.)
    result = _same_everywhere(raw, ["get_weather"])
    assert result.errors == []
    assert [(c.name, {k: v for k, v in c.arguments.items() if k != "src"}) for c in result.calls] == [("get_weather", {"city": "Paris", "unit": "c"})]
    assert "mismatched_quote" in result.calls[0].repairs


@pytest.mark.parametrize(
    ("raw", "arguments", "repairs"),
    [
        ('<tool_call>{"name": "f", "arguments": {"a": \'say "}" ok\'}}</tool_call>', {"a": 'say "}" ok'}, ("single_quotes",)),
        ('<tool_call>{"name": "f", "arguments": {"a": "it\'s", "b": 1}}</tool_call>', {"a": "it's", "b": 1}, ()),
        ('<tool_call>{"name": "f", "arguments": {"a": "5\' tall, it is"}}</tool_call>', {"a": "5' tall, it is"}, ()),
        # (R4: its own quote closes it before the next key, a comma missing: no key "b" invented.)
        ('<tool_call>{"name": "f", "arguments": {"a": "x\', \'b\': \'c" "n": 1}}</tool_call>', {"a": "x', 'b': 'c", "n": 1}, ("missing_comma",)),
        ('<tool_call>{"name": "f", "arguments": {"": "\'}"}}</tool_call>', {"": "'}"}, ()),
        # (The reply ends inside a "string" after the other quote: a cut, not a close.)
        ('<tool_call>{"name": "f", "arguments": {"a": "x\', \'b\': \'', {"a": "x', 'b': '"}, ("closed_tag", "closed_json", "cut_value")),
    ],
)
def test_json_strings_with_the_other_quote_inside(raw: str, arguments: dict, repairs: tuple) -> None:
    result = _same_everywhere(raw, None)
    assert [(c.arguments, c.repairs) for c in result.calls] == [(arguments, repairs)]
