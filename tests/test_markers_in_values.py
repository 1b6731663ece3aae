"""Markup inside XML-ish values (docs/formats.md, "Markers inside values"): replies a
stream settles only at their end, so they are checked here rather than in the corpus
(whose stream test also asks that a call be done before flush() when text follows it):
a value whose close tags were left out, followed by a whole call, is two calls, as a
model that left them out meant (and so, where it is glued to the value's last word,
with prose after it that ends as a turn does); the same whole call quoted with text
after it, and the reply then cut, is one value cut short; and so is one whose start
marker follows a quote mark or indentation in the value, however the reply ends after
it."""

from __future__ import annotations

import pytest

import toolgram
from conftest import streamed

CASES = [
    # (reply, [(name, arguments, repairs)])
    (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n\n"
        "<tool_call>\n<function=get_time>\n<parameter=tz>\nUTC\n</parameter>\n</function>\n</tool_call>",
        [("get_weather", {"city": "Tokyo"}, ("closed_tag",)), ("get_time", {"tz": "UTC"}, ())],
    ),
    (
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Tokyo\n\n"
        "<tool_call>get_time\n<arg_key>tz</arg_key>\n<arg_value>UTC</arg_value>\n</tool_call>",
        [("get_weather", {"city": "Tokyo"}, ("closed_tag",)), ("get_time", {"tz": "UTC"}, ())],
    ),
    (
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Tokyo\n\n'
        '<minimax:tool_call>\n<invoke name="get_time">\n<parameter name="tz">UTC</parameter>\n</invoke>\n</minimax:tool_call>',
        [("get_weather", {"city": "Tokyo"}, ("closed_tag",)), ("get_time", {"tz": "UTC"}, ())],
    ),
    (  # two calls, no close tags, the reply cut in the second
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=unit>\ncelsius\n\n"
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n",
        [
            ("get_weather", {"city": "Paris", "unit": "celsius"}, ("closed_tag",)),
            # (Cut: no close frames it, so its last newline is kept, as written.)
            ("get_weather", {"city": "Tokyo\n"}, ("closed_tag", "cut_value")),
        ],
    ),
    (  # a whole call quoted, text after it, then the token limit
        "<tool_call>\n<function=save_note>\n<parameter=body>\nNot this:\n<tool_call>\n<function=purge>\n"
        "<parameter=scope>\nall\n</parameter>\n</function>\n</tool_call>\nIt would",
        [
            (
                "save_note",
                {"body": "Not this:\n<tool_call>\n<function=purge>\n<parameter=scope>\nall\n</parameter>\n</function>\n</tool_call>\nIt would"},
                ("closed_tag", "cut_value"),
            )
        ],
    ),
    # Tags the value's text holds: a closer that pairs with an opener written there (an
    # indented line the pattern read as text) is text; a value may begin with a tag.
    (
        (
            "<tool_call>\n<function=write_file>\n<parameter=content>\n<task>\n  <parameter id=\"n\">4</parameter>\n"
            "  <param>on</param>\n</task>\n</parameter>\n</function>\n</tool_call>"
        ),
        [("write_file", {"content": '<task>\n  <parameter id="n">4</parameter>\n  <param>on</param>\n</task>'}, ())],
    ),
    (
        (
            '<minimax:tool_call>\n<invoke name="note">\n<parameter name="text"><invoke name="ping"></invoke> is a call'
            " with no arguments.</parameter>\n</invoke>\n</minimax:tool_call>"
        ),
        [("note", {"text": '<invoke name="ping"></invoke> is a call with no arguments.'}, ())],
    ),
    (  # the quoted tags do not close inside a value: its close tags were left out, as before
        (
            '<minimax:tool_call>\n<invoke name="plan_trip">\n<parameter name="city"><invoke name="book_hotel">\n'
            '<parameter name="nights">2</parameter>\n</invoke>\n</minimax:tool_call>'
        ),
        # (the value that never began is dropped, not an empty one invented: dropped_partial_argument)
        [("plan_trip", {}, ("dropped_partial_argument", "closed_tag")), ("book_hotel", {"nights": 2}, ())],
    ),
    # Another format's whole call after a value whose close tags were left out: its tags
    # pair up and its own close never comes, so the value ends at its opener, as before
    # (not a value that shows the call: nest._loose).
    (
        '<function name="write_file">\n<param name="s">line1\n<minimax:tool_call>\n<invoke name="g">\n'
        '<parameter name="b">2</parameter>\n</invoke>\n</minimax:tool_call>',
        [("write_file", {"s": "line1"}, ("closed_tag",)), ("g", {"b": 2}, ())],
    ),
    (
        "<tool_call>\n<function=f>\n<parameter=a>\n1\n<seed:tool_call>\n<function=g>\n<parameter=b>\n2\n"
        "</parameter>\n</function>\n</seed:tool_call>",
        [("f", {"a": 1}, ("closed_tag",)), ("g", {"b": 2}, ())],
    ),
    # A closer the header does not declare (Hermes's `</tool_call>` in a Seed-OSS value),
    # where the value's pattern stops at it, pairing with an opener written in the value
    # (`<tool_call id="7">`, which the pattern read as text): the value's text (nest._loose).
    (
        '<seed:tool_call>\n<function=write_file>\n<parameter=content><root><tool_call id="7">log</tool_call></root>'
        "</parameter>\n<parameter=path>a.xml</parameter>\n</function>\n</seed:tool_call>",
        [("write_file", {"content": '<root><tool_call id="7">log</tool_call></root>', "path": "a.xml"}, ())],
    ),
    (
        '<seed:tool_call>\n<function=write_file>\n<parameter=content>\n<root>\n  <tool_call id="7">log</tool_call>\n'
        "</root>\n</parameter>\n</function>\n</seed:tool_call>",
        [("write_file", {"content": '\n<root>\n  <tool_call id="7">log</tool_call>\n</root>\n'}, ())],
    ),
    # A value whose closes were all left out, then the next call first on its line, whose
    # value names the value's close tag (`print("</parameter>")`): two calls, as at
    # 2249602. The close written inside the next call's value is its text, no pair for
    # an opener the reading passed (QA9 R1: the next call went into the value, its later
    # argument into the first call). MiniMax's and Kimi K3's are corpus cases.
    (
        "<tool_call>\n<function=f>\n<parameter=b>\ncelsius\n"
        '<tool_call>\n<function=g>\n<parameter=c>\nprint("</parameter>")\n</parameter>\n'
        "<parameter=d>\nx\n</parameter>\n</function>\n</tool_call>",
        [("f", {"b": "celsius"}, ("closed_tag",)), ("g", {"c": 'print("</parameter>")', "d": "x"}, ())],
    ),
    (
        '<function name="f"><param name="b">celsius\n<function name="g"><param name="c">print("</param>")</param>'
        '<param name="d">x</param></function>',
        [("f", {"b": "celsius"}, ("closed_tag",)), ("g", {"c": 'print("</param>")', "d": "x"}, ())],
    ),
    # Step-3: a value whose closes were all left out, then the next section on its line
    # (QA10 P4: both calls were lost, with an error). The same glued to the value, one
    # section, is a corpus case (step3_steptml/value_closes_left_out_then_the_next_call_glued).
    (
        '<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="get_weather"><steptml:parameter name="city">Paris\n'
        '<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="get_time"><steptml:parameter name="tz">Europe/Paris'
        "</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
        [("get_weather", {"city": "Paris"}, ("closed_tag",)), ("get_time", {"tz": "Europe/Paris"}, ())],
    ),
]


@pytest.mark.parametrize("raw,calls", CASES, ids=range(len(CASES)))
def test_markup_in_values(raw: str, calls: list) -> None:
    result = toolgram.parse(raw)
    assert [(c.name, c.arguments, c.repairs) for c in result.calls] == calls
    assert not result.text and not result.errors
    for size in (1, 3, 7):
        assert streamed(raw, size) == result, size


# A value whose closes were all left out, then a whole call of the format glued to its
# last word, then the prose a turn ends with (a sentence's end): two calls and the
# prose, as with no prose after them (the R1 sibling QA9 left: the first value ran to
# the end, cut_value). Text after the call that the token limit cut (`It would clear
# every`, case 4 above) is still a quoted call in a value cut short.
CALLS_THEN_PROSE = [
    (
        "<tool_call>\n<function=f>\n<parameter=b>\ncelsius"
        "<tool_call>\n<function=g>\n<parameter=c>\nhello\n</parameter>\n</function>\n</tool_call>\nDone, both are sent.",
        [("f", {"b": "celsius"}, ("closed_tag",)), ("g", {"c": "hello"}, ())],
    ),
    (
        "<tool_call>\n<function=f>\n<parameter=b>\ncelsius"
        '<tool_call>\n<function=g>\n<parameter=c>\nprint("</parameter>")\n</parameter>\n'
        "<parameter=d>\nx\n</parameter>\n</function>\n</tool_call>\n\nDone, both are sent!",
        [("f", {"b": "celsius"}, ("closed_tag",)), ("g", {"c": 'print("</parameter>")', "d": "x"}, ())],
    ),
    (
        "<tool_call>f\n<arg_key>b</arg_key>\n<arg_value>celsius"
        "<tool_call>g\n<arg_key>c</arg_key>\n<arg_value>hello</arg_value>\n</tool_call>\nDone, both are sent.",
        [("f", {"b": "celsius"}, ("closed_tag",)), ("g", {"c": "hello"}, ())],
    ),
    (
        '<minimax:tool_call>\n<invoke name="f">\n<parameter name="b">celsius<minimax:tool_call>\n<invoke name="g">\n'
        '<parameter name="c">hello</parameter>\n</invoke>\n</minimax:tool_call>\nDone, both are sent.',
        [("f", {"b": "celsius"}, ("closed_tag",)), ("g", {"c": "hello"}, ())],
    ),
    (
        '<function name="f"><param name="b">celsius<function name="g"><param name="c">print("</param>")</param>'
        '<param name="d">x</param></function>\nDone, both are sent.',
        [("f", {"b": "celsius"}, ("closed_tag",)), ("g", {"c": 'print("</param>")', "d": "x"}, ())],
    ),
    (
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">\n<｜DSML｜parameter name="b" string="true">celsius'
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="g">\n<｜DSML｜parameter name="c" string="true">hello</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>\nDone, both are sent.",
        [("f", {"b": "celsius"}, ("closed_tag",)), ("g", {"c": "hello"}, ())],
    ),
]


@pytest.mark.parametrize("raw,calls", CALLS_THEN_PROSE, ids=range(len(CALLS_THEN_PROSE)))
def test_calls_then_prose_after_a_value_left_open(raw: str, calls: list) -> None:
    result = toolgram.parse(raw)
    assert [(c.name, c.arguments, c.repairs) for c in result.calls] == calls
    assert result.text.startswith("Done, both are sent") and not result.errors
    for size in (1, 3, 7, 64):
        assert streamed(raw, size) == result, size


# The same replies with the call on a line of its own: a value that quotes a call, then
# a sentence, and the token limit cut it there (QA12 N2: the quoted call was run, the
# value cut at it with no cut_value, so truncated="error" let it through). One value
# cut short, the quoted call not a call.
@pytest.mark.parametrize("raw,calls", CALLS_THEN_PROSE, ids=range(len(CALLS_THEN_PROSE)))
def test_a_call_on_its_own_line_then_prose_is_quoted(raw: str, calls: list) -> None:
    raw = raw.replace("celsius<", "celsius\n<", 1)
    result = toolgram.parse(raw)
    assert [(c.name, c.repairs) for c in result.calls] == [("f", ("closed_tag", "cut_value"))]
    assert result.calls[0].arguments["b"].startswith("celsius\n<") and not result.errors
    refused = toolgram.parse(raw, truncated="error")
    assert not refused.calls and len(refused.errors) == 1 and '"f"' in refused.errors[0]
    for size in (1, 3, 7, 64):
        assert streamed(raw, size) == result, size


# A value whose text quotes a whole call of its format, its start marker after a quote
# mark or indentation (the value's pattern reads it as text there), then the token limit
# (issue 19, indq): the value stopped at the quoted call's next tag, the quoted call was
# run, and the value cut at it lost cut_value, so truncated="error" let it through. One
# value cut short, to the end of the reply, with or without a line of prose after the
# quoted call; and where the closes but the value's own follow it, one whole value.
QUOTED_CALLS = {
    "qwen3_coder": (
        "<tool_call>\n<function=write_file>\n<parameter=content>\n",
        "<tool_call>\n<function=rm_rf>\n<parameter=path>\n/home\n</parameter>\n</function>\n</tool_call>",
        "\n</function>\n</tool_call>",
    ),
    "glm45": (
        "<tool_call>write_file\n<arg_key>content</arg_key>\n<arg_value>",
        "<tool_call>rm_rf\n<arg_key>path</arg_key>\n<arg_value>/home</arg_value>\n</tool_call>",
        "\n</tool_call>",
    ),
    "minimax": (
        '<minimax:tool_call>\n<invoke name="write_file">\n<parameter name="content">',
        '<minimax:tool_call>\n<invoke name="rm_rf">\n<parameter name="path">/home</parameter>\n</invoke>\n</minimax:tool_call>',
        "\n</invoke>\n</minimax:tool_call>",
    ),
    "seed_oss": (
        "<seed:tool_call>\n<function=write_file>\n<parameter=content>",
        "<seed:tool_call>\n<function=rm_rf>\n<parameter=path>/home</parameter>\n</function>\n</seed:tool_call>",
        "\n</function>\n</seed:tool_call>",
    ),
    "dsml32": (
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="write_file">\n<｜DSML｜parameter name="content" string="true">',
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="rm_rf">\n<｜DSML｜parameter name="path" string="true">/home'
        "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        "\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
    ),
    "dots": (
        '<dots_function_call><invoke name="write_file"><parameter name="content">',
        '<dots_function_call><invoke name="rm_rf"><parameter name="path">/home</parameter></invoke></dots_function_call>',
        "</invoke></dots_function_call>",
    ),
    "minicpm5": (
        '<function name="write_file"><param name="content">',
        '<function name="rm_rf"><param name="path">/home</param></function>',
        "</function>",
    ),
    "hy3": (
        "<tool_calls>\n<tool_call>write_file<tool_sep>\n<arg_key>content</arg_key>\n<arg_value>",
        "<tool_calls>\n<tool_call>rm_rf<tool_sep>\n<arg_key>path</arg_key>\n<arg_value>/home</arg_value>\n</tool_call>\n</tool_calls>",
        "\n</tool_call>\n</tool_calls>",
    ),
}
LEADS = ['Say "', "Say '", "Say `", "Example:\n  ", "Example:\n\t", "Example:\n> "]


@pytest.mark.parametrize("lead", LEADS, ids=["double", "single", "backtick", "spaces", "tab", "blockquote"])
@pytest.mark.parametrize("fmt", sorted(QUOTED_CALLS))
def test_a_call_quoted_after_a_quote_mark_or_indentation_is_the_value(fmt: str, lead: str) -> None:
    host, quoted, closes = QUOTED_CALLS[fmt]
    for tail in ("\nThat is the whole", ""):
        raw = host + lead + quoted + tail
        result = toolgram.parse(raw)
        assert [(c.name, c.repairs) for c in result.calls] == [("write_file", ("closed_tag", "cut_value"))], tail
        assert result.calls[0].arguments == {"content": (lead + quoted + tail).lstrip("\n")} and not result.errors
        refused = toolgram.parse(raw, truncated="error")
        assert not refused.calls and len(refused.errors) == 1 and '"write_file"' in refused.errors[0]
        for size in (1, 3, 7, 64):
            assert streamed(raw, size) == result, (tail, size)
            assert streamed(raw, size, truncated="error") == refused, (tail, size)
    closer = lead.strip()[-1] if lead.startswith("Say") else ""
    raw = host + lead + quoted + closer + closes
    result = toolgram.parse(raw)
    assert [(c.name, c.arguments, c.repairs) for c in result.calls] == [
        ("write_file", {"content": lead + quoted + closer}, ("closed_tag",))
    ]
    for size in (1, 3, 7, 64):
        assert streamed(raw, size) == result, size


# The value closed with its own close, its call's closers left out, then prose and the
# next call on that line (`v</parameter> Then: <tool_call>…`, QA13 F1): that call's start
# marker comes after the value's close, so it is no call the value quotes; the next call
# is read (as at 64f5090), not swallowed into the value with cut_value. (GLM and MiniCPM5
# read the next call's arguments into the first, as at 64f5090; Kimi K3 gives an error.)
OWN_CLOSES = {
    "qwen3_coder": "\n</parameter>",
    "minimax": "</parameter>",
    "seed_oss": "</parameter>",
    "dsml32": "</｜DSML｜parameter>",
    "dots": "</parameter>",
    "hy3": "</arg_value>",
}


@pytest.mark.parametrize("sep", [" Then: ", "\nThen: ", "\nOk. "], ids=["space", "line", "sentence"])
@pytest.mark.parametrize("fmt", sorted(OWN_CLOSES))
def test_a_call_after_the_values_own_close_and_prose_is_the_next_call(fmt: str, sep: str) -> None:
    host, quoted, _ = QUOTED_CALLS[fmt]
    raw = host + "notes" + OWN_CLOSES[fmt] + sep + quoted
    result = toolgram.parse(raw)
    assert [c.name for c in result.calls] == ["write_file", "rm_rf"], result
    assert result.calls[0].repairs == ("closed_tag",) and result.calls[1].arguments == {"path": "/home"}
    for size in (1, 3, 7, 64):
        assert streamed(raw, size) == result, size


# A start marker the value mentions earlier (`Use "<tool_call>" tags.`) begins no call:
# the call after it, first on its line, whose `</tool_call>` closes the block the value
# is in, is the model's next call, its value's closes left out (as before indq).
def test_a_start_marker_mentioned_earlier_in_the_value_quotes_no_call() -> None:
    raw = (
        "<tool_call>\n<function=write_file>\n<parameter=content>\nUse \"<tool_call>\" tags.\nThen\n"
        "<function=g>\n<parameter=c>\nx\n</parameter>\n</function>\n</tool_call>"
    )
    result = toolgram.parse(raw)
    assert [(c.name, c.arguments, c.repairs) for c in result.calls] == [
        ("write_file", {"content": 'Use "<tool_call>" tags.\nThen'}, ("closed_tag",)),
        ("g", {"c": "x"}, ()),
    ]
    for size in (1, 3, 7, 64):
        assert streamed(raw, size) == result, size


# Found by benchmarks/fuzz.py (seed 7, input 22969; shortened by --minimize): a bare
# GLM value (its pattern's first character `[^\s<]`, not its loop's) read on past
# tags that pair up, by a stream whose text ended over 260 characters later. The
# stream's next look began the value's pattern again at a tab, where it stops at once:
# a call of 40 characters and three more, where parse() reads one value to the end.
READ_ON = (
    'ction:\t<arg_key>/assage|>{"a": 1}<all|>*<tool_call></tool_call>é<|tool_call>[TOOL_CALLS]'
    "<|tools_prefix|>  <arg_key>a</arg_key>```\n<\t</tool_calls>True<start_function_call>functools"
    '```json<tool_call>{"name": "f", "arguments": {}}</tool_call>\'{"name": "get_weather", '
    '"arguments": {"city": "Paris"}} )</parameter>None<arg_key>a</arg_key>"aalls_section_begin|>'
    "   <=</longcat_tool_call><TOOLCALL>["
)


@pytest.mark.parametrize("size", [1, 7, 64, 300, len(READ_ON)])
def test_a_value_read_on_across_deltas_reads_as_parse_does(size: int) -> None:
    expected = toolgram.parse(READ_ON)
    sp = toolgram.StreamParser()
    for i in range(0, len(READ_ON), size):
        sp.feed(READ_ON[i : i + size])
    assert sp.close() == expected
    assert [c.span for c in expected.calls] == [(0, len(READ_ON))]  # (one value, cut by the end)


# Found by benchmarks/fuzz.py (seed 7, input 7339, shortened): a Kimi K3 `<|close|>` in a
# value, then a name and a token (`argumgument<|sep|>`, a garbled argument close) that
# make it a marker, not text. A stream whose text ended inside that name took the token
# alone for text and read on (a call with `cut_value`), where parse() reads the marker.
K3_MARKER_CUT = (
    '<|open|>tools<|sep|><|open|>call tool="book_table" index="1"<|sep|><|open|>argument key="restaurant" type="string"<|sep|>'
    'Chez Marcel<|close|>argumgument<|sep|><|open|>argument key="guests" type="integer"<|sep|>4<|close|>argument<|sep|>'
    " I will confirm it."
)


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_a_token_then_a_cut_name_is_held_as_parse_reads_it(size: int) -> None:
    expected = toolgram.parse(K3_MARKER_CUT)
    sp = toolgram.StreamParser()
    for i in range(0, len(K3_MARKER_CUT), size):
        sp.feed(K3_MARKER_CUT[i : i + size])
    assert sp.close() == expected


def _check(raw: str, tools, calls: list, errors: list) -> None:
    result = toolgram.parse(raw, tools)
    assert [(c.name, c.arguments, c.repairs) for c in result.calls] == calls
    assert result.errors == errors
    assert not result.text
    for size in (1, 2, 3, 7, 64):
        for announce in ("done", "name"):
            assert streamed(raw, size, tools, announce=announce) == result, (size, announce)


# A value that quotes another format's parameter and its invoke's close (a Python string
# in a file a coding agent writes): the quoted tags are spelled in another format's way,
# so they are the value's text, not an argument of this call (issue 19; QA6 D26).
SNIPPET = 'T = """\n{}\n"""\nprint(T)'
FOREIGN = [
    (  # MiniCPM5, MiniMax's tags quoted
        '<function name="write_file"><param name="path">a.py</param><param name="content">'
        + SNIPPET.format('<parameter name="x">1</parameter>\n</invoke>')
        + "</param></function>",
        [("write_file", {"path": "a.py", "content": SNIPPET.format('<parameter name="x">1</parameter>\n</invoke>')}, ())],
    ),
    (  # DSML, Step-3's tags quoted
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="write_file">\n<｜DSML｜parameter name="content" string="true">'
        + SNIPPET.format('<steptml:parameter name="x">1</steptml:parameter>\n</steptml:invoke>')
        + "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        [("write_file", {"content": SNIPPET.format('<steptml:parameter name="x">1</steptml:parameter>\n</steptml:invoke>')}, ())],
    ),
    (  # Step-3, MiniMax's tags quoted
        '<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="write_file"><steptml:parameter name="content">'
        + SNIPPET.format('<parameter name="x">1</parameter>\n</invoke>')
        + "</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
        [("write_file", {"content": SNIPPET.format('<parameter name="x">1</parameter>\n</invoke>')}, ())],
    ),
    (  # MiniMax M2, DSML's tags quoted
        '<minimax:tool_call>\n<invoke name="write_file">\n<parameter name="content">'
        + SNIPPET.format('<｜DSML｜parameter name="x" string="true">1</｜DSML｜parameter>\n</｜DSML｜invoke>')
        + "</parameter>\n</invoke>\n</minimax:tool_call>",
        [("write_file", {"content": SNIPPET.format('<｜DSML｜parameter name="x" string="true">1</｜DSML｜parameter>\n</｜DSML｜invoke>')}, ())],
    ),
]


@pytest.mark.parametrize("raw,calls", FOREIGN, ids=range(len(FOREIGN)))
def test_another_formats_parameter_in_a_value_is_its_text(raw: str, calls: list) -> None:
    _check(raw, ["write_file"], calls, [])


# The value's own close tag on a line of its own inside it, then text that is no tag (a
# Python string that holds the tag, then `"""`): the structure does not go on after it,
# and the value's own close comes later, followed by the call's: the value is read
# whole, not cut there with the rest leaked into the text (issue 19; QA6 D28).
CODE = 'x = """\n{}\n"""\nprint(x)'
OWN_CLOSE = [
    (
        "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>t.py</arg_value>\n<arg_key>content</arg_key>\n<arg_value>"
        + CODE.format("</arg_value>") + "</arg_value>\n</tool_call>",
        [("write_file", {"path": "t.py", "content": CODE.format("</arg_value>")}, ())],
    ),
    (
        '<minimax:tool_call>\n<invoke name="write_file">\n<parameter name="content">' + CODE.format("</parameter>")
        + '</parameter>\n<parameter name="path">t.py</parameter>\n</invoke>\n</minimax:tool_call>',
        [("write_file", {"content": CODE.format("</parameter>"), "path": "t.py"}, ())],
    ),
    (
        '<dots_function_call>\n<invoke name="write_file">\n<parameter name="content">' + CODE.format("</parameter>")
        + "</parameter>\n</invoke>\n</dots_function_call>",
        [("write_file", {"content": CODE.format("</parameter>")}, ())],
    ),
    (
        '<function name="write_file"><param name="content">' + CODE.format("</param>") + "</param></function>",
        [("write_file", {"content": CODE.format("</param>")}, ())],
    ),
    (
        '<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="write_file"><steptml:parameter name="content">'
        + CODE.format("</steptml:parameter>") + "</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
        [("write_file", {"content": CODE.format("</steptml:parameter>")}, ())],
    ),
    (  # a closer of what holds the value (MiniCPM5's `</function>`, ending a quoted Qwen3-Coder call)
        '<function name="write_file"><param name="content">' + CODE.format("<parameter=x>\n1\n</parameter>\n</function>")
        + "</param></function>",
        [("write_file", {"content": CODE.format("<parameter=x>\n1\n</parameter>\n</function>")}, ())],
    ),
]


@pytest.mark.parametrize("raw,calls", OWN_CLOSE, ids=range(len(OWN_CLOSE)))
def test_own_close_tag_then_text_in_a_value_is_its_text(raw: str, calls: list) -> None:
    _check(raw, ["write_file"], calls, [])


# The same with prose right after the close, and no later close: a call whose close was
# left out, then prose, as before (the call, closed_tag; the prose is text).
def test_own_close_then_prose_is_still_the_call() -> None:
    raw = "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\nThanks\n<tool_call>g\n<arg_key>b</arg_key>\n<arg_value>2</arg_value>\n</tool_call>"
    result = toolgram.parse(raw)
    assert [(c.name, c.arguments, c.repairs) for c in result.calls] == [("f", {"a": 1}, ("closed_tag",)), ("g", {"b": 2}, ())]
    assert result.text == "Thanks"
    for size in (1, 2, 3, 7, 64):
        for announce in ("done", "name"):
            assert streamed(raw, size, announce=announce) == result, (size, announce)


# A call whose close was left out, then a line of prose that names the value's close tag
# inside a sentence: the value ends at the close that ends its line, and the sentence is
# text; it took the prose up to the mention as the value (QA8 Q1). (A stream tells this
# only at the end of the reply: a later close, the structure going on after it, would
# make the first close the value's text.)
CLOSE_THEN_MENTION = [
    (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nDallas\n</parameter>\n"
        "I called the tool. In this format every value ends with </parameter> and then the function ends.",
        {"city": "Dallas"},
        "I called the tool. In this format every value ends with </parameter> and then the function ends.",
    ),
    (
        "<tool_call>write_note\n<arg_key>content</arg_key>\n<arg_value>hello</arg_value>\n"
        "Done writing. The tag </arg_value> ends a value.",
        {"content": "hello"},
        "Done writing. The tag </arg_value> ends a value.",
    ),
    (
        '<minimax:tool_call>\n<invoke name="write_note">\n<parameter name="content">hello</parameter>\n'
        "Done. The tag </parameter> ends a value.",
        {"content": "hello"},
        "Done. The tag </parameter> ends a value.",
    ),
]


@pytest.mark.parametrize("raw,arguments,text", CLOSE_THEN_MENTION, ids=range(len(CLOSE_THEN_MENTION)))
def test_own_close_then_prose_naming_the_tag(raw: str, arguments: dict, text: str) -> None:
    result = toolgram.parse(raw)
    assert [(c.arguments, c.repairs) for c in result.calls] == [(arguments, ("closed_tag",))]
    assert result.text == text and result.errors == []
    for size in (1, 2, 3, 7, 64):
        for announce in ("done", "name"):
            assert streamed(raw, size, announce=announce) == result, (size, announce)


# Another format's call quoted whole in a value, then text that runs on past the 320
# characters the look takes, then the value's own close: the value is read whole, not
# cut at the quoted call (made a call of its own) with the rest leaked into the text;
# the result no longer flips on the length of the text after the example (QA6 D11).
EXAMPLE = 'Example:\n<invoke name="x">\n</invoke>\n' + "x" * 329 + "end"
QUOTED_CALL = [
    (
        '<function name="write_file"><param name="path">docs/tools.md</param><param name="content">' + EXAMPLE + "</param></function>",
        [("write_file", {"path": "docs/tools.md", "content": EXAMPLE}, ())],
    ),
    (
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="write_file">\n<｜DSML｜parameter name="content" string="true">'
        + EXAMPLE + "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        [("write_file", {"content": EXAMPLE}, ())],
    ),
    (
        '<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="write_file"><steptml:parameter name="content">'
        + EXAMPLE + "</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
        [("write_file", {"content": EXAMPLE}, ())],
    ),
]


@pytest.mark.parametrize("raw,calls", QUOTED_CALL, ids=range(len(QUOTED_CALL)))
@pytest.mark.parametrize("tools", [None, ["write_file"]])
def test_a_quoted_call_then_long_text_in_a_value_is_its_text(raw: str, calls: list, tools) -> None:
    _check(raw, tools, calls, [])


# A value whose own close was left out, then the call's or block's close and prose on
# the same line: the value ends at that close (closed_tag) and the prose is text; the
# close and the prose went into the value, silently where a later call came (QA8 Q12).
CLOSER_THEN_PROSE = [
    (
        "<tool_call>f\n<arg_key>b</arg_key><arg_value>beta</tool_call> Done.\n"
        "<tool_call>g\n<arg_key>c</arg_key><arg_value>gamma</arg_value>\n</tool_call>",
        [{"b": "beta"}, {"c": "gamma"}],
        "Done.",
    ),
    (
        '<minimax:tool_call>\n<invoke name="f">\n<parameter name="b">beta</invoke> Done.\n'
        '<minimax:tool_call>\n<invoke name="g">\n<parameter name="c">gamma</parameter>\n</invoke>\n</minimax:tool_call>',
        [{"b": "beta"}, {"c": "gamma"}],
        "Done.",
    ),
]


@pytest.mark.parametrize("raw,arguments,text", CLOSER_THEN_PROSE, ids=range(len(CLOSER_THEN_PROSE)))
def test_value_close_left_out_then_closer_and_prose(raw: str, arguments: list, text: str) -> None:
    result = toolgram.parse(raw)
    assert [c.arguments for c in result.calls] == arguments
    assert result.calls[0].repairs == ("closed_tag",)
    assert result.text.strip() == text and result.errors == []
    for size in (1, 2, 3, 7, 64):
        for announce in ("done", "name"):
            assert streamed(raw, size, announce=announce) == result, (size, announce)


@pytest.mark.parametrize("size", [1, 7, 64])
def test_a_gemma_string_quoting_calls_then_one_whose_end_is_past_the_look_streams_as_parsed(size: int) -> None:
    # A string that quotes whole calls with text between them, then a call whose end
    # marker comes more than the look (2,048 characters) after its opener: a stream
    # settles that no call is quoted whole there once the look has passed; parse() must
    # not, at the end of the reply, take the call for one the reply cut (fuzz seed 7 #3654).
    path = "tests/corpus/gemma4_call/quoted_calls_then_a_call_whose_end_is_past_the_look_streams_as_parsed.txt"
    raw = open(path, "rb").read().decode("utf-8")
    whole = toolgram.parse(raw)
    got = streamed(raw, size)
    assert (got.text, got.calls, got.errors) == (whole.text, whole.calls, whole.errors)
