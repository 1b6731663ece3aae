"""The fast path (toolgram/_frame.py) changes what is fast, never what is read.

Every corpus case, format example and inline stream case is parsed with the
fast frames and the opening tests on and off: the results must be identical,
segments included; and streamed with them on (chunks of 1 and 7 characters),
the closing result must equal the general way's parse. Then the frames
themselves: which grammars get one, and which calls go the general way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import regex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import toolgram
from toolgram._scan import fastpath as _frame
from toolgram._grammar.registry import load_user_format
from toolgram._stream.parser import StreamParser

from conftest import corpus_cases
from test_stream import CASES, chunked

ALL = [(c.id, c.raw, c.tools, c.formats, 32_768) for c in corpus_cases()] + CASES


def general(raw: str, tools: Any, formats: Any, max_chars: int, **kw: Any) -> toolgram.ParseResult:
    _frame.enabled = False
    try:
        return toolgram.parse(raw, tools, formats=formats, max_chars=max_chars, **kw)
    finally:
        _frame.enabled = True


def summary(result: toolgram.ParseResult) -> tuple:
    return result.text, result.calls, result.errors, result.reasoning, result.segments


@pytest.mark.parametrize("case", ALL, ids=[c[0] for c in ALL])
def test_fast_path_reads_what_the_general_way_reads(case: tuple) -> None:
    _, raw, tools, formats, max_chars = case
    expected = summary(general(raw, tools, formats, max_chars))
    assert summary(toolgram.parse(raw, tools, formats=formats, max_chars=max_chars)) == expected
    for size in (1, 7):
        sp = StreamParser(tools, formats=formats, max_chars=max_chars)
        for chunk in chunked(raw, size):
            sp.feed(chunk)
        assert summary(sp.close())[:4] == expected[:4], size


def test_the_fast_path_is_taken() -> None:
    # (Otherwise the test above compares the general way with itself.)
    raw = 'Hi <tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call> bye'
    seen = []
    read = _frame.Frame.read

    def spy(self: _frame.Frame, *args: Any) -> Any:
        got = read(self, *args)
        seen.append(got)
        return got

    _frame.Frame.read = spy  # type: ignore[method-assign]
    try:
        result = toolgram.parse(raw)
    finally:
        _frame.Frame.read = read  # type: ignore[method-assign]
    assert [type(g) for g in seen] == [toolgram.ToolCall]
    assert result.calls[0].span == (3, raw.index(" bye"))


def frame(name: str) -> _frame.Frame | None:
    return _frame.frame_of(toolgram._grammar.registry.default_registry().formats[name])


def test_which_formats_have_a_frame() -> None:
    assert frame("fenced_json") is not None  # (its start marker is a pattern: ```json or ```JSON)
    hermes = frame("hermes")
    assert hermes is not None
    assert hermes.pattern.match("<tool_call>{}") is not None
    assert {t.literal for t in hermes.ends} >= {"</tool_call>"}
    # Literals around a JSON payload, %ignore'd text between them, the end token
    # required, optional or absent: a JsonFrame.
    for name, steps, optional in (
        ("nemotron", ("<TOOLCALL>",), False),
        ("internlm", ("<|action_start|>", "<|plugin|>"), False),
        ("hermes_im_start", ("<|im_start|>",), True),
        ("functools", ("functools",), True),
    ):
        json_frame = frame(name)
        assert type(json_frame) is _frame.JsonFrame, name
        assert (json_frame.steps, json_frame.optional) == (steps, optional), name
    # Mistral's payload follows one of two tokens; an MFCS block holds rules that mean
    # something (name, args); a marker-less format is read at the start.
    for name in ("mistral", "mfcs", "glm45_arg_kv", "bare_pythonic", "json_reply"):
        assert frame(name) is None, name


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("nemotron", 'x <TOOLCALL> [ {"name": "a", "arguments": {"x": 1}} , {"name": "b", "arguments": {}} ] </TOOLCALL> y'),
        ("nemotron", '<TOOLCALL>[{"name": "a", "arguments": {"x": "</TOOLCALL>"}}]</TOOLCALL>'),  # the tag in a string
        ("nemotron", '<TOOLCALL>{"name": "a", "parameters": {"x": 1}}</TOOLCALL>'),  # a repair
        ("nemotron", "<TOOLCALL>[]</TOOLCALL> nothing"),
        ("hermes_im_start", 'x <|im_start|>{"name": "a", "arguments": {}}   no close, then prose'),
        ("functools", 'functools [{"name": "a", "arguments": {}}]  more'),
        ("internlm", '<|action_start|> <|plugin|>\n{"name": "a", "parameters": {"q": 1}}\n<|action_end|> done'),
    ],
)
def test_a_json_frame_reads_a_whole_reply_as_the_general_way_does(name: str, raw: str) -> None:
    json_frame = frame(name)
    at = raw.index(json_frame.steps[0])
    assert type(json_frame.read(raw, at, True, ["a", "b"])).__name__ == "Region"  # (the fast path takes it)
    for tools in (None, ["a", "b"]):
        assert summary(toolgram.parse(raw, tools)) == summary(general(raw, tools, None, 32_768))
    # A stream goes the general way (and reads the same: the tests above).
    assert json_frame.read(raw, at, False, None) is None


@pytest.mark.parametrize(
    "raw",
    [
        '<TOOLCALL>[{"name": "a", "arguments": {"x": 1}]</TOOLCALL>',  # brackets that do not match
        '<TOOLCALL>[{"name": "a", "arguments": {"x": 1}}',  # cut off
        '<TOOLCALL>[{"name": "a", "arguments": {"x": 1}}] no close tag',
        "<TOOLCALL>x</TOOLCALL>",
    ],
)
def test_anything_else_goes_the_general_way_from_a_json_frame(raw: str) -> None:
    assert frame("nemotron").read(raw, 0, True, None) is None
    assert summary(toolgram.parse(raw)) == summary(general(raw, None, None, 32_768))


def test_a_json_frame_reads_a_list_with_an_element_that_is_no_call_as_the_general_way_does() -> None:
    # The call stands, the element is an error in its place.
    raw = '<TOOLCALL>[{"name": "a", "arguments": {}}, 3]</TOOLCALL>'
    result = toolgram.parse(raw)
    assert ([c.name for c in result.calls], len(result.errors), result.text) == (["a"], 1, "")
    assert summary(result) == summary(general(raw, None, None, 32_768))


def _user(tmp_path: Path, body: str) -> Any:
    path = tmp_path / "mine.lark"
    path.write_text("// format: mine\n// start: <<call>>\n// end: <</call>>\n\n" + body, encoding="utf-8")
    return load_user_format(path)


def test_a_user_grammar_of_that_shape_gets_a_frame(tmp_path: Path) -> None:
    fmt = _user(tmp_path, 'start: "<<call>>" json_calls "<</call>>"\njson_calls: BODY\nBODY: /[^<]+/\n')
    assert _frame.frame_of(fmt) is not None
    other = _user(tmp_path, 'start: "<<call>>" prose json_calls "<</call>>"\nprose: WORD\njson_calls: BODY\nWORD: /[a-z]+/\nBODY: /[^<a-z]+/\n')
    assert _frame.frame_of(other) is None  # a rule that means something: the builder reads it
    json_shaped = _user(
        tmp_path,
        'start: "<<call>>" json_calls ["<</call>>"]\njson_calls: JSON\nJSON: /[\\[{]/\n%import common.WS\n%ignore WS\n',
    )
    assert type(_frame.frame_of(json_shaped)) is _frame.JsonFrame and _frame.frame_of(json_shaped).optional


@pytest.mark.parametrize(
    "payload",
    [
        '{"name": "a", "arguments": {}, "id": "call_1"}',  # an id
        '{"name": "a", "parameters": {}}',  # repair: parameters_key
        '{"name": "a", "arguments": "{\\"x\\": 1}"}',  # repair: string_arguments
        "{'name': 'a', 'arguments': {}}",  # repair: single quotes
        '{"name": " a ", "arguments": {}}',  # a name to strip
        '[{"name": "a", "arguments": {}}]',  # a list of calls
        '{"name": "a", "arguments": []}',  # not an object: an error
    ],
)
def test_anything_but_a_plain_call_goes_the_general_way(payload: str) -> None:
    fast = frame("hermes")
    raw = f"<tool_call>{payload}</tool_call>"
    assert fast.read(raw, 0, True, None) is None
    assert summary(toolgram.parse(raw)) == summary(general(raw, None, None, 32_768))


def test_a_frame_waits_while_the_text_may_still_change_it() -> None:
    fast = frame("hermes")
    whole = '<tool_call>{"name": "a", "arguments": {}}</tool_call>'
    for cut in range(1, len(whole)):
        got = fast.read(whole[:cut], 0, False, None)  # WAIT, or a wait that absorbs deltas
        assert got is not None and type(got) is not toolgram.ToolCall, cut
    waiting = fast.read(whole[:30], 0, False, None)
    assert waiting.absorbs("more words", 30) and not waiting.absorbs("</tool_call>", 30)
    assert isinstance(fast.read(whole, 0, False, None), toolgram.ToolCall)
    # The next call's marker instead of the close tag: never a frame.
    assert fast.read('<tool_call>{"name": "a"}<tool_call>', 0, False, None) is None


@pytest.mark.parametrize(
    "raw",
    [
        "get_weather(city='Paris')",  # bare_pythonic
        "[TOOL_CALLS]search[ARGS]{\"q\": 1}",  # mistral
        "search\n<arg_key>q</arg_key>\n<arg_value>x</arg_value>",  # glm45_bare
        '{"type": "tool_call", "name": "a", "arguments": {}}',  # json_reply
        "get_weather",  # a name alone: the frame may still close
        'get_weather\n{"city": "Paris"}',  # functionary_v32: NAME, newline, JSON
        "The weather (today) is fine.",
        'Sure.\n<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>',
        "hello",
    ],
)
def test_opening_test_keeps_every_format_that_reads_the_reply(raw: str) -> None:
    assert summary(toolgram.parse(raw, ["get_weather", "search", "a"])) == summary(
        general(raw, ["get_weather", "search", "a"], None, 32_768)
    )
    for size in (1, 3):
        sp = StreamParser(["get_weather", "search", "a"])
        for chunk in chunked(raw, size):
            sp.feed(chunk)
        assert summary(sp.close())[:4] == summary(general(raw, ["get_weather", "search", "a"], None, 32_768))[:4]


def test_prose_at_the_start_rules_out_the_marker_less_formats() -> None:
    from toolgram._scan import opening as _frame  # (the opening tests)
    from toolgram._scan.markers import markers_for

    formats = toolgram._grammar.registry.default_registry().select()
    firsts = markers_for(formats, False).quick[4]
    ruled_out = [f.name for f in markers_for(formats, False).anchored if not _frame.opens(f, "The weather is fine", 0, True, firsts)]
    assert {"mistral", "bare_pythonic", "glm45_bare"} <= set(ruled_out)
    assert _frame.opens(formats[[f.name for f in formats].index("bare_pythonic")], "f(x=1)", 0, True, firsts)
    # A word, then the end or a call marker: only a format that could close its frame
    # there with markers it may supply (none of these can) is kept; and the test looks
    # three tokens in (NAME, newline, then no JSON: not functionary's NAME\n{…}).
    by_name = {f.name: f for f in formats}
    for raw in ("hello", "Sure.\n<tool_call>", "Sure.\n\nThe weather"):
        kept = [n for n in ("mistral", "glm45_bare", "functionary_v32") if _frame.opens(by_name[n], raw, 0, True, firsts)]
        assert kept == [], raw
    assert _frame.opens(by_name["functionary_v32"], 'get_weather\n{"city": "Paris"}', 0, True, firsts)


def test_opening_test_keeps_a_frame_the_driver_closes_with_markers_it_supplies(tmp_path: Path) -> None:
    # NAME alone, then the end of the reply: the driver supplies "(" and ")".
    path = tmp_path / "closing.lark"
    path.write_text(
        '// format: closing\n// anchor: reply\n\nstart: call\ncall: name "(" ")"\nname: NAME\nNAME: /[a-z_]+/\n',
        encoding="utf-8",
    )
    # (The name the reply ends in is read when it is an offered tool: without tools it
    # may be cut, and the call is an error.)
    for tools in (["get_time"], None):
        fast = toolgram.parse("get_time", tools, grammar_paths=[path], formats=["closing"])
        assert summary(fast) == summary(general("get_time", tools, ["closing"], 32_768, grammar_paths=[path]))
    fast = toolgram.parse("get_time", ["get_time"], grammar_paths=[path], formats=["closing"])
    # (The reply ended before the arguments began: cut_value, as any call cut there.)
    assert [(c.name, c.repairs) for c in fast.calls] == [("get_time", ("closed_tag", "cut_value"))]


FRAGMENTS = [
    "<tool_call>", "</tool_call>", "<|im_end|>", "```", "```json\n", "<longcat_tool_call>", "</longcat_tool_call>",
    "[TOOL_CALLS]", "<think>", "</think>", '{"name": "a", "arguments": {"x": 1}}', '{"name": "b"', "}", "{", "[",
    "]", '"', "'", "get_weather", "(x=1)", "\n", " ", "words", "3 < 5", "`", "<arg_key>", "call:", "Sure.", "[ARGS]",
    "<TOOLCALL>", "</TOOLCALL>", "<|im_start|>", "functools", "<|action_start|><|plugin|>", "<|action_end|>",
    '[{"name": "a", "arguments": {"x": 1}}]',
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=14), st.sampled_from([None, ["a", "get_weather"]]))
def test_fast_and_general_agree_on_marker_soup(parts: list[str], tools: Any) -> None:
    raw = "".join(parts)
    assert summary(toolgram.parse(raw, tools)) == summary(general(raw, tools, None, 32_768))


# Text whose only marker character is "<": a run of calls of one format is read by
# Scanner._run without a look at the markers (its `again`), and stops where it must.
ANGLE = [
    "<tool_call>", "</tool_call>", '<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>',
    '<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>', '<tool_call>{"name": "b"}</tool_call>',
    "<longcat_tool_call>", "</longcat_tool_call>", "<|im_end|>", "<think>", "</think>", "<TOOLCALL>",
    '{"name": "a", "arguments": {"x": 1}}', "\n", " ", "words", "3 < 5", "<", "<tool_", "Sure.",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(ANGLE), max_size=14), st.sampled_from([None, ["a", "get_weather"]]))
# (An end-of-turn token after a think block, before a start marker: no call before it, so
# no turn boundary between calls; the general path dropped it, the fast path kept it.)
@example(parts=["<think>", "</think>", "<|im_end|>", "<tool_call>"], tools=None)
def test_fast_and_general_agree_on_runs_of_calls(parts: list[str], tools: Any) -> None:
    raw = "".join(parts)
    assert summary(toolgram.parse(raw, tools)) == summary(general(raw, tools, None, 32_768))


# With tools, formats that only read offered names add their markers (`{`, `>>>`): a
# Hermes reply then holds three marker characters, `<`, `>` and `{`. Its run of calls
# is still read one match a call (prose free of all three), a call to a name not
# offered goes through the Assembler's take() (an error), and prose holding `>` or `{`
# the long way.
WITH_TOOLS = [
    '<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>', '<tool_call>{"name": "c", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "get_weather", "arguments": {"city": "<b>"}}</tool_call>', "</tool_call>", "\n", " ", "words",
    "a > b", "{", '{"name": "a", "arguments": {}}', ">>>", ">>>a\n{}", "`", "<", "<tool_", "Sure.", "<|im_end|>",
    "\n```json\n", "```",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(WITH_TOOLS), max_size=14), st.sampled_from([["a", "get_weather"], ["a"], []]))
def test_fast_and_general_agree_on_runs_of_calls_with_tools(parts: list[str], tools: Any) -> None:
    raw = "".join(parts)
    assert summary(toolgram.parse(raw, tools)) == summary(general(raw, tools, None, 32_768))


def test_a_run_of_calls_with_tools_is_read_one_match_a_call() -> None:
    # (Each call went through Assembler.take(), with a look for the next marker, when
    # tools were given: a third more time than without them.)
    call = '<tool_call>\n{"name": "%s", "arguments": {"x": 1}}\n</tool_call>\n'
    raw = "".join(f"Step {i}: then\n" + call % ("a" if i != 3 else "nope") for i in range(6)) + "Done."
    taken = []
    take = toolgram._pipeline.Assembler.take

    def spy(self: Any, *args: Any) -> Any:
        done = take(self, *args)
        taken.append(done if type(done) is str else done.name)
        return done

    toolgram._pipeline.Assembler.take = spy  # type: ignore[method-assign]
    try:
        result = toolgram.parse(raw, ["a"])
    finally:
        toolgram._pipeline.Assembler.take = take  # type: ignore[method-assign]
    # (the first call, and the refused one, which begins the run of those after it)
    assert taken == ["a", 'Unknown tool "nope". Available now: a.']
    assert [c.name for c in result.calls] == ["a"] * 5 and len(result.errors) == 1
    assert summary(result) == summary(general(raw, ["a"], None, 32_768))


def test_end_terminals_spelled_as_alternations_of_strings_are_read_as_strings() -> None:
    from toolgram._scan.fastpath import _strings
    from toolgram._grammar.registry import Terminal

    def term(pattern: str) -> Terminal:
        return Terminal("T", regex.compile(pattern), None, 0)

    assert set(_strings(term(r"(?:<\|im_start\|>|<\|im_end\|>)"))) == {"<|im_start|>", "<|im_end|>"}
    assert set(_strings(term(r"</(?:a|b)>"))) == {"</a>", "</b>"}
    assert _strings(term(r"</[a-z]+>")) is None
    assert _strings(term(r"x*")) is None
    assert frame("hermes").whole is not None  # its ends: </tool_call>, <|im_end|>, <|im_start|>


def test_opening_test_takes_linear_time_over_ignored_text() -> None:
    # `(?:\s+)*` before a token that does not come backtracks exponentially (30
    # spaces: minutes); the ignored text is skipped a token at a time instead.
    from conftest import cpu_time_per_call
    from toolgram._scan import opening as _frame  # (the opening tests)
    from toolgram._scan.markers import markers_for

    formats = toolgram._grammar.registry.default_registry().select()
    firsts = markers_for(formats, False).quick[4]
    for name in ("glm45_bare", "mistral", "bare_pythonic", "pythonic", "harmony"):
        fmt = toolgram._grammar.registry.default_registry().formats[name]
        _frame.opens(fmt, "x", 0, True, firsts)  # (built outside the timing)
        for final in (True, False):

            def cost(spaces: int) -> float:
                return cpu_time_per_call(lambda: _frame.opens(fmt, "name" + " " * spaces + "q", 0, final, firsts))

            # 22 spaces: backtracking would cost about a million times 2 spaces' cost.
            assert cost(22) <= 20 * cost(2), (name, final)
            assert cost(10_000) <= 40 * cost(1_000), (name, final)  # (linear: 10)


def test_opening_test_keeps_a_format_whose_region_may_end_after_one_token(tmp_path: Path) -> None:
    # An anchored region of one token (then prose) is read however the text goes on.
    path = tmp_path / "one.lark"
    path.write_text(
        "// format: one\n// anchor: reply\n\nstart: call\ncall: name\nname: NAME\nNAME: /[a-z_]+(?=!)/\n",
        encoding="utf-8",
    )
    raw = "get_time! and more words"
    fast = toolgram.parse(raw, grammar_paths=[path], formats=["one"])
    assert summary(fast) == summary(general(raw, None, ["one"], 32_768, grammar_paths=[path]))
    assert [c.name for c in fast.calls] == ["get_time"]


# The pythonic list lexer (_scan/pyframe.py): the tokens of a plain call list, fed to
# the same table; anything less plain goes the general way.
PLAIN_LISTS = [
    "[get_weather(city='Paris', days=3)]",
    "[math.factorial(n=5), geo.distance(a=[1.5, -2], b=(3, 4), exact=False, unit=None)]",
    "[f(), g(1, 'x'), h(a={'k': [1, {'m': None}]})]\n[f(a=1)]",
    '[send_sms(to="+47", body="On my way", to="+48")]',
]
NOT_PLAIN = ["[f(a='it's')]", "[f(a=x)]", "[f(a='<tool_call>')]", "[f(a=1,)]", "[f(a=[[[[1]]]])]", "[]", "[f(a=1)] and"]


def _lists_read(run: Any) -> int:
    """How many lists the lexer read whole while `run()` ran."""
    from toolgram._scan import pyframe

    seen = []
    read = pyframe.read_list

    def spy(*args: Any) -> Any:
        seen.append(read(*args))
        return seen[-1]

    pyframe.read_list = spy
    try:
        run()
    finally:
        pyframe.read_list = read
    return sum(type(s) is tuple for s in seen)


@pytest.mark.parametrize("raw", PLAIN_LISTS)
@pytest.mark.parametrize("tools", [None, ["get_weather", "math.factorial", "f", "send_sms"]])
def test_the_pythonic_list_lexer_reads_a_plain_list_as_the_general_way_does(raw: str, tools: Any) -> None:
    got = []
    assert _lists_read(lambda: got.append(summary(toolgram.parse(raw, tools)))) > 0
    assert got[0] == summary(general(raw, tools, None, 32_768))


@pytest.mark.parametrize("raw", NOT_PLAIN)
def test_anything_but_a_plain_list_goes_the_general_way_from_the_list_lexer(raw: str) -> None:
    from toolgram._scan import pyframe

    assert pyframe.tokens(raw, 0, False) is None


# A stream holds a plain list back until its `]` has come, then feeds it whole (the
# ends of its quoted values are then settled); the lists after a less plain one in the
# same region are read through the lexer too (the driver stops after each list's `]`).
STREAMED_LISTS = [  # (raw, tools, whether a list is plain)
    ("[get_weather(city='Paris', days=3)]\nThe weather is on its way, one moment please.", ["get_weather"], True),
    ("[f(a=1), g(b='x')]\n[h(c=[1, 2])]\nand some more text after the lists, long enough", None, True),
    ("[f(a='it's')]\n[g(b='x'), h(c={'k': [1, {'m': None}]})]\n[f(a=1)] done", None, True),
    ("[f(a='x', True)]\n[g(b='y')]\n[h(n=1)]", None, True),
    ("[f(a='" + "y" * 1500 + "'), g(b=2)]\n[h(c=3)]\nand then a remark", ["f", "g", "h"], True),
    ("[run(cmd='a', b='x', b='x', b='x", ["run"], False),
    ("[f(a=1, b='xy'), f(a=2), g(b=)]\n[h(c=1)]\nand a remark after the lists", None, False),
    ("[f(a=1, b='xy'), f(a=2), g(b='it's', c=1)] and a remark", ["f", "g"], False),
    ("[f(a=1, b='xy'), f(a=2), g(b='x", None, False),
    ("[f(a=1, b='xy'), g(b=1, c=[2, 3], d='x', e=\"y", ["f", "g"], False),
]


@pytest.mark.parametrize("raw, tools, plain", STREAMED_LISTS)
def test_a_stream_reads_plain_lists_through_the_list_lexer_as_parse_does(raw: str, tools: Any, plain: bool) -> None:
    expected = summary(general(raw, tools, None, 32_768))
    assert summary(toolgram.parse(raw, tools)) == expected
    for size in (1, 2, 3, 7, 64):
        got: list = []

        def stream() -> None:
            sp = StreamParser(tools)
            for chunk in chunked(raw, size):
                sp.feed(chunk)
            got.append(sp.close())

        read = _lists_read(stream)
        assert summary(got[0]) == expected, size
        assert bool(read) == plain, size  # (not the general way's alone)


def test_a_list_after_a_less_plain_one_is_read_by_the_lexer() -> None:
    raw = "[f(a='it's')]\n[g(b='x')]\n[h(c=1)]"
    assert _lists_read(lambda: toolgram.parse(raw)) == 2
    assert summary(toolgram.parse(raw)) == summary(general(raw, None, None, 32_768))


# Lists the lexer hands over to the driver in a row, none plain (closed before their
# call's `)`): the driver reads the next ones on its own, more the longer the row, and the
# lexer looks again after them (region._PY_BACK at most). A storm of them was looked at by
# the lexer, a checkpoint kept, at each (issue 17). What is read is the same either way:
# with that look at every list (_PY_BACK 0, as before), and the general way's, whole and
# streamed.
HANDED_IN_A_ROW = [
    ('[f(a="x"]]\n' * 40, None, 0, True),
    ('[f(a="x"]]\n' * 40 + '[g(b=1)]\n' * 40, None, 20, True),
    ('[f(a=1], g(b=1)]\n' * 30 + '[g(b=1)]\n[f(a="x"]]\n' * 10 + "[g(b=2)]\n" * 10, None, 5, True),
    # (A plain string value's `]` written for its call's `)`, the list going on, is read by
    # the lexer itself, each list of the row: pyframe.Paren; it was handed over.)
    ('[f(a="x"], g(b=1)]\n' * 30 + '[g(b=1)]\n[f(a="x"]]\n' * 10 + "[g(b=2)]\n" * 10, None, 30, False),
    ('[g(b=1), f(a="x", ]\n' * 25 + "[g(b=1)] [g(b=2)]\nok\n" + '[f(a=1]\n' * 25, None, 1, True),
    ('[f(a="x"]]\n' * 30 + '[f(a="x', None, 0, True),
    # (With tools, each line is a region of its own, read by a driver of its own.)
    ('[f(a="x"], g(b=1)]\n' * 20 + "[g(b=2)]\n" * 10, ["f", "g"], 0, False),
    ('[get_weather(city="Paris"]\n[get_time(tz="UTC")]\n' * 20, ["get_weather", "get_time"], 0, False),
]


@pytest.mark.parametrize("raw, tools, plain, fewer", HANDED_IN_A_ROW)
def test_lists_handed_over_in_a_row_are_read_on_by_the_driver(
    raw: str, tools: Any, plain: int, fewer: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolgram._scan import pyframe, region

    looks: list = []
    read = pyframe.read_list

    def spy(buf: str, start: int, final: bool, *args: Any) -> Any:
        got = read(buf, start, final, *args)
        if final:  # (not a storm memo's reading of a window, as a stream's)
            looks.append(got)
        return got

    monkeypatch.setattr(pyframe, "read_list", spy)
    # (A list written as the one before it is taken with that one's tokens, not read
    # again: pyframe.advance's `last`, fed at its own place or put as that one, _again.)
    fed, again = pyframe._fed, pyframe._again

    def fed_spy(drv: Any, buf: str, toks: list, feed: Any, arg: Any, off: int = 0) -> bool:
        if off:
            looks.append((toks, off))
        return fed(drv, buf, toks, feed, arg, off)

    def again_spy(*args: Any) -> bool:
        done = again(*args)
        if done:
            looks.append(args[2:4])
        return done

    shaped = pyframe._again_shaped

    def shaped_spy(*args: Any) -> bool:  # (a list of as many plain calls as the one before, put so)
        done = shaped(*args)
        if done:
            looks.append(args[2:4])
        return done

    monkeypatch.setattr(pyframe, "_fed", fed_spy)
    monkeypatch.setattr(pyframe, "_again", again_spy)
    monkeypatch.setattr(pyframe, "_again_shaped", shaped_spy)
    expected = summary(general(raw, tools, None, 32_768))
    got = summary(toolgram.parse(raw, tools))
    assert got == expected
    assert sum(type(g) is tuple for g in looks) >= plain  # (the lexer reads plain lists again)
    if fewer:
        assert len(looks) < raw.count("[") * 3 // 4  # (not a look at each list)
    monkeypatch.setattr(region, "_PY_BACK", 0)
    assert summary(toolgram.parse(raw, tools)) == got
    monkeypatch.undo()
    for size in (1, 2, 3, 7, 64):
        sp = StreamParser(tools)
        for chunk in chunked(raw, size):
            sp.feed(chunk)
        assert summary(sp.close()) == expected, size


# Values with quotes of their kind inside that pair up as quoted words (`"echo "hi"
# there"`): where one ends is the driver's reading (_repair.quoted_end), asked of the
# driver, and the list lexer reads the list with it, whole and streamed; the driver's
# lexer reads none of it (each such list was its own, token by token: 640 of them in a
# 32 KB reply took 57 ms).
QUOTED_INSIDE = [
    ('[run_shell(timeout=30, command="echo "hi" there")]', ["run_shell"]),
    ("[run_shell(command='grep -rn 'TODO' src/', timeout=30)]", ["run_shell"]),
    ('[f(a = "x "y" z" , b=[1]), g("a "b" c")]', None),
    ('[f(a="x "y" z", b="p "q" r")]', ["f", "g"]),
]


@pytest.mark.parametrize("raw, tools", QUOTED_INSIDE)
def test_a_value_whose_quotes_inside_pair_up_is_read_by_the_list_lexer(raw: str, tools: Any) -> None:
    text = (raw + "\n") * 20
    expected = summary(general(text, tools, ["pythonic"], 32_768))
    got: list = []
    assert _lexed(lambda: got.append(toolgram.parse(text, tools, formats=["pythonic"]))) == 0
    assert summary(got[0]) == expected
    assert all("unescaped_quotes" in c.repairs for c in got[0].calls)
    for size in (1, 2, 3, 7, 64):
        got.clear()

        def stream() -> None:
            sp = StreamParser(tools, formats=["pythonic"])
            for chunk in chunked(text, size):
                sp.feed(chunk)
            got.append(sp.close())

        assert _lexed(stream) == 0, size
        assert summary(got[0]) == expected, size


# The gemma4_bare line lexer (_scan/gemframe.py): the tokens of plain `call:NAME{…}`
# lines, fed to the same table; the last line, and any that is not plain, the driver's.
GEMMA_LINES = [  # (raw, tools, lines the lexer reads in parse())
    ("call:get_weather{city:<|\"|>Paris<|\"|>}", None, 0),  # (one line: the last is the driver's)
    ("call:f{a:1}\ncall:g{b:[1,2]}\n\n  call:h()", ["f", "g", "h"], 2),
    ("call:f{a:[}\n" * 40, None, 39),
    ("call:f{a:<|\"|>x<|\"|>}\ncall:g{b:1}\ncall:h{c:2}\ncall:k{}", None, 2),  # (a `<`: the driver's line)
    ("call:f{a:1}\r\ncall:名前{b:2}\n\tcall:x1(\ncall:f\u0301{}<tool_call|>\nafter", None, 3),
    ("call:f{a:1} then\nprose\ncall:g{b:2}\ncall:h{}", None, 1),
    ("call:f {a:1}\ncall:g{}\ncall:h{}", None, 0),  # (no NAME then `{`: the driver fails the region)
]


def _lines_read(run: Any) -> int:
    """How many lines the gemma4_bare lexer fed while `run()` ran."""
    from toolgram._scan import gemframe

    seen = [0]
    advance = gemframe.advance

    def spy(drv: Any, buf: str) -> bool:
        before = drv.taken
        ok = advance(drv, buf)
        seen[0] += (drv.taken - before) // 4
        return ok

    gemframe.advance = spy
    try:
        run()
    finally:
        gemframe.advance = advance
    return seen[0]


@pytest.mark.parametrize("raw, tools, lines", GEMMA_LINES)
def test_the_gemma_line_lexer_reads_plain_lines_as_the_general_way_does(raw: str, tools: Any, lines: int) -> None:
    got: list = []
    assert _lines_read(lambda: got.append(toolgram.parse(raw, tools, formats=["gemma4_bare"]))) == lines
    assert summary(got[0]) == summary(general(raw, tools, ["gemma4_bare"], 32_768))
    for size in (1, 2, 3, 7, 64):
        sp = StreamParser(tools, formats=["gemma4_bare"])
        for chunk in chunked(raw, size):
            sp.feed(chunk)
        assert summary(sp.close()) == summary(got[0]), size


# Gemma 4's calls (_scan/gemcall.py): a plain `<|tool_call>call:NAME{…}<tool_call|>` read by
# one regex and the builder's own decode_loose and coerce_param; anything else, the driver's.
GEMMA_CALLS = [  # (raw, tools, calls the frame reads in parse())
    ('<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,n:3}<tool_call|>', None, 1),
    ('Sure. <|tool_call>call:f{a:1.5,b:[1,2],c:true}<tool_call|>Okay. <|tool_call>call:g{}<tool_call|>', ["f", "g"], 2),
    ('<|tool_call>call:f{a:<|"|>x<|"|>}<tool_call|><|tool_call>call:h{b:1}<tool_call|>', ["f"], 1),  # (h: refused)
    ('<|tool_call>call:f{a:<|"|>x <tool_call|> y<|"|>}<tool_call|>', None, 0),  # (a marker in the string)
    ('<|tool_call>call:f{a:1,a:2}<tool_call|>', None, 0),  # (a key given twice: the general way's error)
    ('<|tool_call>call:f{a:[1,2}<tool_call|>', None, 0),  # (a repair)
    ('<|tool_call>call:f{a:1} <tool_call|>', None, 0),  # (a blank before the close)
    ('<|tool_call> call:f{a:1}<tool_call|>', None, 0),
    ('<|tool_call>call:f{a:5}<tool_call|>', [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "string"}}}}}], 1),  # (typed by the schema: "5")
]  # fmt: skip


@pytest.mark.parametrize("raw, tools, calls", GEMMA_CALLS)
def test_gemma_calls_read_by_the_frame_are_the_general_ways(raw: str, tools: Any, calls: int) -> None:
    from toolgram._scan import gemcall

    seen: list = []
    read = gemcall.GemmaFrame.read

    def spy(self: Any, *args: Any) -> Any:
        got = read(self, *args)
        seen.append(got)
        return got

    gemcall.GemmaFrame.read = spy  # type: ignore[method-assign]
    try:
        got = toolgram.parse(raw, tools)
    finally:
        gemcall.GemmaFrame.read = read  # type: ignore[method-assign]
    assert sum(type(g) is toolgram.ToolCall for g in seen) == calls
    assert summary(got) == summary(general(raw, tools, None, 32_768))
    for size in (1, 7):
        sp = StreamParser(tools)
        for chunk in chunked(raw, size):
            sp.feed(chunk)
        assert summary(sp.close()) == summary(got), size


def _driver_calls(method: str, run: Any) -> int:
    """How many times the drivers' `method` ran while `run()` ran."""
    from toolgram._lalr import driver as _driver

    count = [0]
    original = getattr(_driver.Driver, method)

    def counting(self: Any, *args: Any) -> Any:
        count[0] += 1
        return original(self, *args)

    setattr(_driver.Driver, method, counting)
    try:
        run()
    finally:
        setattr(_driver.Driver, method, original)
    return count[0]


def _lexed(run: Any) -> int:
    """How many tokens the drivers' own lexer looked for while `run()` ran."""
    return _driver_calls("_lex", run)


# A list whose calls are plain up to one that is not (its last one broken, a stray
# quote, a trailing comma, or cut by the end): the lexer's tokens for the calls before
# it, and the driver's own reading from there. The salvage of a broken one goes on from
# there too (pyframe.Checkpoint): the driver's lexer reads the broken call's text alone,
# however many calls come before it (a list of two thousand calls and a broken last
# one was read by it from the start three times: 1.5 s at 32 KB).
PLAIN_THEN_NOT = [
    ("[{}g(b=)]", ["f", "g"]),
    ("[{}g(b=)]\nmore text", None),
    ("[{}g(b='it's', c=1)]", None),
    ("[{}g(b=1,)]", None),
    ("[{}g(b='x", None),
    ("[{}g(b=1", None),
    ("[{}g(b=1, c='x', d='y", None),
    ("[{}g('a', c=2, d='y", None),
    ("[{}g(b=1, c='x', b=", None),
    ("[{}'g(b=1)']", None),
    ("[{}g(b=)] [h(c=1)]", None),
]


@pytest.mark.parametrize("raw, tools", PLAIN_THEN_NOT)
def test_a_list_plain_up_to_a_call_is_read_once_up_to_it(raw: str, tools: Any) -> None:
    results, lexed = [], []
    for n in (3, 60):
        text = raw.format("f(a=1, b='xy'), " * n)
        lexed.append(_lexed(lambda text=text: results.append(toolgram.parse(text, tools))))
        assert summary(results[-1]) == summary(general(text, tools, None, 32_768))
    assert lexed[0] == lexed[1], lexed
    assert [c.name for c in results[-1].calls[:60]] == ["f"] * 60


def test_a_broken_last_call_after_plain_ones_is_told() -> None:
    result = toolgram.parse("[" + "f(a=1, b='xy'), " * 40 + "g(b=)]")
    assert [c.name for c in result.calls] == ["f"] * 40
    assert result.errors == ["Couldn't read a tool call: unexpected ')]'."]
    assert result.text == ", g(b=)]"


def _fed(run: Any) -> int:
    """How many tokens the drivers fed their parse table while `run()` ran."""
    return _driver_calls("_feed", run)


# Plain calls of a list, whatever their arguments (keyword, positional, none, values
# nested), each followed by a `,` or `]`: the list lexer puts each call on the parse
# stack whole, its tree made as the table makes it, and feeds the table only the `,`
# after it (pyframe._call); the arguments of the list's last call, one by one (_arg).
WHOLE_CALLS = [
    ("[{}g(b=1)]", None),
    ("[{}g(b=1)]", ["f", "g"]),
    ("[{}g()]\n[h(1, c='x')]", None),
    ("[{}g(b=)]", ["f", "g"]),
    ("[{}g(b='x", None),
    ("[{}'g(b=1)']", None),
]


@pytest.mark.parametrize("unit", ["f(a=1, b='xy'), ", "f(), ", "f('x', n=[1, {'k': (2, 3)}]), ", "get_weather(city = 'Oslo') , "])
@pytest.mark.parametrize("raw, tools", WHOLE_CALLS)
def test_a_plain_call_is_put_on_the_parse_stack_whole(unit: str, raw: str, tools: Any) -> None:
    toolgram.parse(raw.format(unit), tools)  # (the grammar's check of the shortcut, once: see _shortcut)
    results, fed = [], []
    for n in (3, 60):
        text = raw.format(unit * n)
        fed.append(_fed(lambda text=text: results.append(toolgram.parse(text, tools))))
        assert summary(results[-1]) == summary(general(text, tools, None, 32_768))
    assert fed[1] - fed[0] == 57, fed  # (one token a call: the `,` after it)


@pytest.mark.parametrize("made", ["_call", "_arg"])
def test_a_grammar_whose_call_trees_differ_is_fed_token_by_token(made: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolgram._grammar.registry import default_registry
    from toolgram._lalr.tree import Tree
    from toolgram._scan import pyframe

    c = default_registry().select(["pythonic"])[0].compiled
    assert pyframe._checked_shortcut(c) is not None
    put = getattr(pyframe, made)

    def other(drv: Any, *args: Any) -> int:  # (a tree of another shape than the table's)
        got = put(drv, *args)
        if got >= 0:
            drv.values[-1] = Tree(drv.values[-1].data, drv.values[-1].children[:0], drv.values[-1]._meta)
        return got

    monkeypatch.setattr(pyframe, made, other)
    assert pyframe._checked_shortcut(c) is None


def test_the_list_lexers_argument_groups_are_its_patterns_own() -> None:
    # (pyframe compiles its patterns when a list is first read, and names _ARG's groups
    # by number: those numbers are the pattern's groupindex.)
    import re

    from toolgram._scan import pyframe

    index = re.compile(pyframe._ARG.pattern, re.ASCII).groupindex
    assert (pyframe._KEY, pyframe._S1, pyframe._VALUE, pyframe._SEP) == tuple(index[g] for g in ("key", "s1", "value", "sep"))


def _feeds(raw: str, tools: Any, size: int, announce: str) -> list:
    sp = StreamParser(tools, announce=announce)
    got = [sp.feed(chunk) for chunk in chunked(raw, size)]
    return got + [sp.close()]


_QUOTED_CALLS = (Path(__file__).parent / "corpus" / "gemma4_call" / "quoted_calls_then_a_call_whose_end_is_past_the_look_streams_as_parsed.txt")
GEMMA_STREAMS = [  # (raw, tools)
    "".join("<|tool_call>call:f%d{a:%d}<tool_call|>" % (k % 7, k) for k in range(60)),  # (a storm: the regions held)
    "".join('<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,n:%d}<tool_call|>%s' % (k, ("Okay. ", "\n", "", "<turn|>")[k % 4]) for k in range(30)),
    '<|tool_call>call:f{a:1}<tool_call|>He said "<|tool_call>call:g{b:2}<tool_call|>" and <|tool_call>call:h{}<tool_call|>',
    '<|tool_call>call:w{c:<|"|>Two:\n<|tool_call>call:f{a:1}<tool_call|>\n<|tool_call>call:f{a:2}<tool_call|><|"|>}<tool_call|>'
    + "<|tool_call>call:f{a:3}<tool_call|>" * 12,
    _QUOTED_CALLS.read_bytes().decode("utf-8"),
]  # fmt: skip


@pytest.mark.parametrize("raw", GEMMA_STREAMS, ids=range(len(GEMMA_STREAMS)))
@pytest.mark.parametrize("tools", [None, ["f", "f1", "f2", "get_weather", "g", "rm_rf"]])
def test_a_stream_reads_gemma_calls_by_the_frame_at_the_general_ways_deltas(raw: str, tools: Any) -> None:
    # A stream reads a plain Gemma call by the frame where the general way would begin its
    # region (Scanner._in_prose): every feed() gives what it gives with the frame's stream
    # reading off (each call the driver's), the events and the delta of each the same.
    from toolgram._scan import gemcall

    streamed = gemcall.GemmaFrame.streamed
    seen = [0]

    def spy(self: Any, *args: Any) -> Any:
        got = streamed(self, *args)
        seen[0] += type(got) is toolgram.ToolCall
        return got

    for size in (1, 7, 16, 64, 256):
        for announce in ("done", "name"):
            gemcall.GemmaFrame.streamed = spy  # type: ignore[method-assign]
            try:
                fast = _feeds(raw, tools, size, announce)
            finally:
                gemcall.GemmaFrame.streamed = streamed  # type: ignore[method-assign]
            # (The general way's stream: the frame reads no call, nor at the end, where the
            # general way reads what it reads: test_fast_path_reads_what_the_general_way_reads.)
            gemcall.GemmaFrame.streamed = lambda self, buf, pos, tools: None  # type: ignore[method-assign]
            try:
                general_feeds = _feeds(raw, tools, size, announce)
            finally:
                gemcall.GemmaFrame.streamed = streamed  # type: ignore[method-assign]
            assert [repr(f) for f in fast] == [repr(f) for f in general_feeds], (size, announce)
    assert seen[0] > 0  # (the frame read calls in the streams)


# Calls of many parameters, their closes written or left out, values plain or not: the
# tag reader reads a run of them, each value with its tag where _plain_value tells it
# (Driver._tag_tokens), the rest the general way. (Runs longer than the dozen openers
# ahead that the nesting check asks of each value.)
_RUN_CALLS = {
    "qwen3_coder_xml": ("<tool_call>\n<function=search>\n", "<parameter={k}>", "</parameter>", "</function>\n</tool_call>"),
    "minicpm5_function_param": ('<function name="search">\n', '<param name="{k}">', "</param>", "</function>"),
    "minimax_m2_invoke": ('<minimax:tool_call>\n<invoke name="search">\n', '<parameter name="{k}">', "</parameter>", "</invoke>\n</minimax:tool_call>"),
    "deepseek_v32_dsml": ("<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"search\">\n", '<｜DSML｜parameter name="{k}" string="true">',
                          "</｜DSML｜parameter>", "</｜DSML｜invoke>\n</｜DSML｜function_calls>"),
    "glm45_arg_kv": ("<tool_call>search\n", "<arg_key>{k}</arg_key> <arg_value>", "</arg_value>", "</tool_call>"),
    "hy_v3_tool_sep_kv": ("<tool_calls>\n<tool_call>search<tool_sep>\n", "\n<arg_key>{k}</arg_key>\n<arg_value>", "</arg_value>", "</tool_call>\n</tool_calls>"),
}
_RUN_KEYS = ["q", "q", "r", "path", "a/", "x y", "'k'", "é"]
_RUN_VALUES = ["x\n", "x", "x ", "\nx\n", "", "\n", " ", "a < b\n", "Use <b>\n", "x\n\n", "<", "x/>", "1\n", "[1, 2]\n", "x\r\n", "名\n"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(_RUN_CALLS)),
    st.lists(
        st.tuples(st.sampled_from(["q"] * 4 + _RUN_KEYS), st.sampled_from(["x\n", "1\n", "\nx\n"] * 4 + _RUN_VALUES), st.sampled_from([False] * 12 + [True])),
        min_size=1, max_size=48,
    ),
    st.sampled_from(["close", "cut", "prose"]),
    st.sampled_from([None, ["search"]]),
)
def test_fast_and_general_agree_on_runs_of_parameters(name: str, params: list, tail: str, tools: Any) -> None:
    head, tag, close, end = _RUN_CALLS[name]
    raw = head + "".join(tag.format(k=k) + v + (close + "\n" if closed else "") for k, v, closed in params)
    raw += {"close": end, "cut": "", "prose": end + "\nDone."}[tail]
    assert summary(toolgram.parse(raw, tools)) == summary(general(raw, tools, None, 32_768))


def test_a_run_of_plain_parameters_is_read_with_its_values() -> None:
    # (Otherwise the test above compares the general way with itself.) A value of a run
    # of parameters whose closes were left out is read with its tag, not lexed by _lex.
    from toolgram._lalr import driver as _driver

    head, tag, _, end = _RUN_CALLS["qwen3_coder_xml"]
    raw = head + "".join(tag.format(k=f"k{i}") + f"v{i}\n" for i in range(200)) + end
    lexed = []
    lex = _driver.Driver._lex

    def spy(self: Any, *args: Any) -> Any:
        tok = lex(self, *args)
        lexed.append(tok[0] if type(tok) is tuple else tok)
        return tok

    _driver.Driver._lex = spy  # type: ignore[method-assign]
    try:
        result = toolgram.parse(raw, ["search"])
    finally:
        _driver.Driver._lex = lex  # type: ignore[method-assign]
    assert result.calls[0].arguments == {f"k{i}": f"v{i}" for i in range(200)}
    assert lexed.count("VALUE") <= 40, lexed  # (the first values, read before the reading is far; the last dozen)
    assert summary(result) == summary(general(raw, ["search"], None, 32_768))


# A value of the format's own call openers, one a line (or glued, or after blanks), then
# the closers or not: the tag reader reads each `<function=f>` with the blanks before it
# (tagread._build_function_param), where the loop lexed each of its tokens.
@pytest.mark.parametrize("name", ["qwen3_coder_xml", "seed_oss_xml"])
@pytest.mark.parametrize("sep", ["\n", "", " ", "\n\n", "\t\n"])
@pytest.mark.parametrize("tail", ["\n</parameter>\n</function>\n</tool_call>", "", "\n</function>", "\nDone."])
def test_fast_and_general_agree_on_a_value_of_call_openers(name: str, sep: str, tail: str) -> None:
    start = "<seed:tool_call>" if name == "seed_oss_xml" else "<tool_call>"
    raw = start + "\n<function=write>\n<parameter=content>\n" + "".join(f"<function={f}>{sep}" for f in ["f", "name=g", "f", "h"] * 30) + tail
    if name == "seed_oss_xml":
        raw = raw.replace("</tool_call>", "</seed:tool_call>")
    for tools in (None, ["write"]):
        assert summary(toolgram.parse(raw, tools, formats=[name])) == summary(general(raw, tools, [name], 32_768))
        assert summary(toolgram.parse(raw, tools)) == summary(general(raw, tools, None, 32_768))


def test_a_value_of_call_openers_is_read_by_the_tag_reader() -> None:
    # (Otherwise the test above compares the general way with itself.)
    from toolgram._lalr import driver as _driver

    raw = "<tool_call>\n<function=write>\n<parameter=content>\n" + "<function=f>\n" * 300 + "\n</parameter>\n</function>\n</tool_call>"
    lexed = []
    lex = _driver.Driver._lex

    def spy(self: Any, *args: Any) -> Any:
        tok = lex(self, *args)
        lexed.append(tok[0] if type(tok) is tuple else tok)
        return tok

    _driver.Driver._lex = spy  # type: ignore[method-assign]
    try:
        result = toolgram.parse(raw, ["write"])
    finally:
        _driver.Driver._lex = lex  # type: ignore[method-assign]
    assert lexed.count("FUNCTION") <= 40, lexed
    assert summary(result) == summary(general(raw, ["write"], None, 32_768))


# Cohere's elements nested deep, or one after another, attributes as the template writes
# them or not, closed or left open: the tag reader reads each `<cofl:value name="k"
# type="t">` with the blanks before it (tagread._build_cofl), where the loop lexed its
# fifteen tokens one by one.
_COFL_TAGS = ['<cofl:value name="a" type="dict">', "<cofl:value name='a'>", '\n  <cofl:value name="b" type="str">x</cofl:value>',
              '<cofl:value type="dict" name="a">', '<cofl:value name="a" other="z">', '<cofl:value name="a"/>', " <cofl:value name=a>"]


@pytest.mark.parametrize("tail", ["", "</cofl:value>" * 3 + "</cofl:tool_call></cofl:tool_calls>", "x</cofl:value>\n</cofl:tool_call>\nDone."])
@pytest.mark.parametrize("mix", range(len(_COFL_TAGS)))
def test_fast_and_general_agree_on_cofl_elements(mix: int, tail: str) -> None:
    tags = [_COFL_TAGS[0]] * 40 + [_COFL_TAGS[mix]] * 3 + [_COFL_TAGS[0], _COFL_TAGS[2]] * 20
    raw = '<cofl:tool_calls><cofl:tool_call id="0" name="run">' + "".join(tags) + tail
    for tools in (None, ["run"]):
        assert summary(toolgram.parse(raw, tools)) == summary(general(raw, tools, None, 32_768))


def test_cofl_elements_are_read_by_the_tag_reader() -> None:
    # (Otherwise the test above compares the general way with itself.)
    from toolgram._lalr import driver as _driver

    raw = '<cofl:tool_calls><cofl:tool_call id="0" name="run">' + '<cofl:value name="a" type="dict">' * 300
    lexed = []
    lex = _driver.Driver._lex

    def spy(self: Any, *args: Any) -> Any:
        tok = lex(self, *args)
        lexed.append(tok[0] if type(tok) is tuple else tok)
        return tok

    _driver.Driver._lex = spy  # type: ignore[method-assign]
    try:
        result = toolgram.parse(raw, ["run"])
    finally:
        _driver.Driver._lex = lex  # type: ignore[method-assign]
    assert lexed.count("ATTR") <= 40, lexed
    assert summary(result) == summary(general(raw, ["run"], None, 32_768))
