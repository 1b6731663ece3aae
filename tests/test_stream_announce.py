"""StreamParser(announce="name"): a JSON call object is announced by its name, before
its end, and its arguments stream as json.dumps writes them (JsonEcho); a call that
then fails is withdrawn (CallCancelled), and the closing result is parse()'s all the
same.

Over every corpus and stream case, in several chunkings: close() equals parse();
each CallStart is followed by its call's CallDone or by a CallCancelled of its index,
never both; an index is never given twice (a withdrawn call's is not used again); the
CallDone calls are result.calls, in order, each with its arguments and with the id
result.to_openai_message() gives it in its CallStart;
the Text, Reasoning and Error events are those of the default stream.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import toolgram
from toolgram import ArgumentsDelta, CallCancelled, CallDone, CallStart, Error, Reasoning, StreamParser, Text
from toolgram._stream.jsonecho import JsonEcho

from conftest import corpus_cases
from test_stream import CASES, SOUP, chunked, random_chunks

ALL = [(c.id, c.raw, c.tools, c.formats, 32_768, c.truncated) for c in corpus_cases()] + [(*c, "repair") for c in CASES]
REPLY = 'Checking.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call> Done.'


def feed_all(raw: str, chunks: list[str], tools: Any = None, formats: Any = None, max_chars: int = 32_768, **kw: Any):
    sp = StreamParser(tools, formats=formats, max_chars=max_chars, announce="name", **kw)
    fed = [sp.feed(chunk) for chunk in chunks]
    tail = sp.flush()
    return fed, tail, sp.close()


def check(raw: str, chunks: list[str], tools: Any, formats: Any, max_chars: int, truncated: str = "repair") -> list[Any]:
    expected = toolgram.parse(raw, tools, formats=formats, max_chars=max_chars, truncated=truncated)
    fed, tail, result = feed_all(raw, chunks, tools, formats, max_chars, truncated=truncated)
    assert result == expected
    events = [e for batch in fed for e in batch] + tail
    assert "".join(e.text for e in events if type(e) is Text) == expected.text
    assert "".join(e.text for e in events if type(e) is Reasoning) == expected.reasoning
    assert [e.message for e in events if type(e) is Error] == expected.errors
    done: list[Any] = []
    # The calls announced and not done yet (several, in a block of several calls: each
    # announced once its name shows), by index: their argument deltas and id.
    open_calls: dict[int, tuple[list[str], str]] = {}
    given = 0  # indexes given
    ids = [c["id"] for c in expected.to_openai_message().get("tool_calls", [])]
    for e in events:
        if type(e) is CallStart:
            assert e.index == given
            given += 1
            open_calls[e.index] = ([], e.id)
        elif type(e) is ArgumentsDelta:
            assert e.index in open_calls
            open_calls[e.index][0].append(e.text)
        elif type(e) is CallDone:
            assert min(open_calls) == e.index  # (done in order: the calls before it are settled)
            args, open_id = open_calls.pop(e.index)
            assert "".join(args) == json.dumps(e.call.arguments, ensure_ascii=False)
            assert open_id == ids[len(done)]
            done.append(e.call)
        elif type(e) is CallCancelled:
            assert e.index in open_calls
            del open_calls[e.index]
    assert not open_calls
    assert done == expected.calls
    return events


def test_a_call_is_announced_once_its_name_has_come() -> None:
    cut = REPLY.index('"city"')  # after `"arguments": {`
    fed, tail, result = feed_all(REPLY, [REPLY[:cut], REPLY[cut : cut + 10], REPLY[cut + 10 :]])
    call_id = result.to_openai_message()["tool_calls"][0]["id"]
    assert fed[0] == [Text("Checking."), CallStart(0, "get_weather", call_id), ArgumentsDelta(0, "{")]
    assert fed[1] == [ArgumentsDelta(0, '"city": "P')]  # (what is certain: the string so far)
    assert fed[2] == [ArgumentsDelta(0, 'aris", "days": 3}'), CallDone(0, result.calls[0]), Text(" Done.")]
    assert tail == []


def test_the_arguments_stream_as_json_dumps_writes_them() -> None:
    # Other spacing, an escape, a number json.dumps writes otherwise, a trailing comma.
    raw = '<tool_call>{"name": "a", "arguments": {"q":"caf\\u00e9\\n",  "n": 1.50, "xs": [1,2,],}}</tool_call>'
    events = check(raw, chunked(raw, 3), None, None, 32_768)
    deltas = [e.text for e in events if type(e) is ArgumentsDelta]
    assert "".join(deltas) == '{"q": "café\\n", "n": 1.5, "xs": [1, 2]}'
    assert len(deltas) > 5  # (piece by piece, not with the end)


def test_a_key_written_twice_with_the_same_value_streams_once() -> None:
    # (Read once, at the first one's place: the echo stops at the second key, and the
    # rest comes with the end.)
    raw = '<tool_call>{"name": "a", "arguments": {"k": 1, "j": [2], "k": 1}}</tool_call> ok'
    events = check(raw, chunked(raw, 2), None, None, 32_768)
    kinds = [type(e).__name__ for e in events]
    assert "CallCancelled" not in kinds and kinds[-2:] == ["CallDone", "Text"]
    assert "".join(e.text for e in events if type(e) is ArgumentsDelta) == '{"k": 1, "j": [2]}'


def test_a_key_given_twice_with_two_values_cancels_the_call() -> None:
    # (Which value the model meant, nothing tells: the call is an error.)
    raw = '<tool_call>{"name": "a", "arguments": {"k": 1, "k": 2}}</tool_call> ok'
    events = check(raw, chunked(raw, 2), None, None, 32_768)
    kinds = [type(e).__name__ for e in events]
    assert "CallCancelled" in kinds and "CallDone" not in kinds
    assert [e.message for e in events if type(e).__name__ == "Error"] == [
        'Couldn\'t read a tool call: "k" is given twice (1, then 2).'
    ]


def test_before_the_arguments_open_nothing_is_announced() -> None:
    cut = REPLY.index("{", REPLY.index("arguments"))
    fed, _, _ = feed_all(REPLY, [REPLY[:cut], REPLY[cut:]])
    assert fed[0] == [Text("Checking.")]
    assert [(e.index, e.name) for e in fed[1] if type(e) is CallStart] == [(0, "get_weather")]


def test_a_call_that_fails_after_its_name_is_withdrawn() -> None:
    raw = (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Par"is"}}</tool_call> Then'
        ' <tool_call>{"name": "search", "arguments": {}}</tool_call>'
    )
    events = check(raw, chunked(raw, 4), None, None, 32_768)
    kinds = [type(e).__name__ for e in events]
    assert events[0].__class__ is CallStart and (events[0].index, events[0].name) == (0, "get_weather")
    assert "".join(e.text for e in events if type(e) is ArgumentsDelta and e.index == 0).startswith('{"city": "Par"')
    assert kinds.index("CallCancelled") < kinds.index("Error")  # (withdrawn with the region's failure)
    assert [e.name for e in events if type(e) is CallStart] == ["get_weather", "search"]
    # Index 0 is not given again: an OpenAI client would glue "search" onto "get_weather".
    assert [e.index for e in events if type(e) is CallStart] == [0, 1]
    assert [e.index for e in events if type(e) is CallDone] == [1]


def test_a_name_that_is_not_offered_is_not_announced() -> None:
    raw = REPLY.replace("get_weather", "delete_everything")
    events = check(raw, chunked(raw, 3), ["get_weather"], None, 32_768)
    assert not [e for e in events if type(e) in (CallStart, CallCancelled)]
    assert [e.message for e in events if type(e) is Error] == [
        'Unknown tool "delete_everything". Available now: get_weather.'
    ]


def test_a_later_name_key_cancels_the_call() -> None:
    # (A name given twice: which tool the model meant, nothing tells. The "a" announced
    # is cancelled, and the call is an error.)
    raw = '<tool_call>{"name": "a", "arguments": {}, "name": "b"}</tool_call> ok'
    events = check(raw, chunked(raw, 5), None, None, 32_768)
    kinds = [type(e).__name__ for e in events]
    assert [e.name for e in events if type(e) is CallStart] == ["a"]
    assert "CallCancelled" in kinds and "CallDone" not in kinds
    assert [e.message for e in events if type(e) is Error] == [
        'Couldn\'t read a tool call: "name" is given twice ("a", then "b").'
    ]


def test_the_default_announces_with_the_end() -> None:
    cut = REPLY.index('"city"')
    sp = StreamParser()
    assert sp.feed(REPLY[:cut]) == [Text("Checking.")]
    with pytest.raises(ValueError):
        StreamParser(announce="early")


@pytest.mark.parametrize("case", ALL, ids=[c[0] for c in ALL])
def test_announced_stream_adds_up_to_parse(case: tuple) -> None:
    _, raw, tools, formats, max_chars, truncated = case
    for size in (1, 7, 64):
        check(raw, chunked(raw, size), tools, formats, max_chars, truncated)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_announced_marker_soup_adds_up_to_parse(data: Any) -> None:
    parts = [*SOUP, '{"name": "a", "arguments": {"x": "y"b"}}', '{"name": "get_weather", "arguments": {', '"}}',
             # (Qwen3-Coder XML pieces: XmlParamEcho)
             "<tool_call>\n<function=get_weather>\n", "<function=get_weather>", "<parameter=city>\n", "<parameter=days>",
             "Par is", "42", " < ", "\n", "</parameter>\n", "</parameter>", "</function>\n</tool_call>", "</function>"]  # fmt: skip
    raw = "".join(data.draw(st.lists(st.sampled_from(parts), max_size=14), label="parts"))
    tools = data.draw(st.sampled_from([None, ["get_weather"]]), label="tools")
    check(raw, random_chunks(data, raw), tools, None, 32_768)


def test_a_call_its_schema_refuses_is_withdrawn_with_its_error() -> None:
    tools = [{"name": "get_weather", "inputSchema": {"type": "object", "properties": {"days": {"type": "string"}}}}]
    sp = StreamParser(tools, announce="name", validate=True)
    cut = REPLY.index('"city"')
    start = CallStart(0, "get_weather", toolgram.parse(REPLY, ["get_weather"]).to_openai_message()["tool_calls"][0]["id"])
    assert sp.feed(REPLY[:cut]) == [Text("Checking."), start, ArgumentsDelta(0, "{")]
    end = REPLY.index("</tool_call>") + len("</tool_call>")
    assert [type(e) for e in sp.feed(REPLY[cut:end])][-2:] == [Error, CallCancelled]  # (with the call's end)
    assert sp.feed(REPLY[end:]) == [Text(" Done.")]
    assert sp.close() == toolgram.parse(REPLY, tools, validate=True)


# -- JsonEcho ------------------------------------------------------------------------

# (No Infinity: decoded arguments never hold one, see non_finite_number; the echo stops at it.)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=5),
    st.sampled_from([(", ", ": "), (",", ":"), (" , ", " :  ")]),
    st.booleans(),
    st.integers(1, 9),
)
# (A quote, then `,` at the value's end: `"}` after it might begin a key, but the string's
# own close stood first; the echo held it to the end and never finished.)
@example({"": "',"}, (", ", ": "), False, 1)
@example({"": "'}"}, (",", ":"), True, 3)
def test_json_echo_writes_what_json_dumps_writes(obj: dict, separators: tuple, ascii_: bool, size: int) -> None:
    text = json.dumps(obj, separators=separators, ensure_ascii=ascii_)
    echo = JsonEcho()
    out = "".join(echo.feed(text[i : i + size]) for i in range(0, len(text), size))
    assert (out, echo.done, echo.stopped) == (json.dumps(obj, ensure_ascii=False), True, False)


# -- Qwen3-Coder XML parameters (XmlParamEcho) ------------------------------------------


def test_the_echo_strips_a_value_of_what_str_strip_strips() -> None:
    # (xmlecho writes the list out; working it out at import walked all of Unicode.)
    from toolgram._stream import xmlecho

    every = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())
    assert xmlecho._WS == every

WRITE = [{"name": "write_file", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "content": {"type": "string"}, "mode": {"type": "integer"}}}}]  # fmt: skip
XML_CALL = (
    "Writing it.\n<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/tides.py\n</parameter>\n"
    "<parameter=content>\ndef high_tide(port):\n    if port.depth < 3:\n        return None\n"
    '    return "<b>" + port.name\n\n</parameter>\n</function>\n</tool_call>\nDone.'
)
QWEN_CASES = [c for c in corpus_cases() if c.format == "qwen3_coder_xml"]


@pytest.mark.parametrize("tools", [WRITE, None], ids=["schema", "no schema"])
def test_qwen3_coder_parameters_stream_as_they_are_written(tools: Any) -> None:
    # The name once `<function=write_file>` ends its line; then each string value's text as it
    # comes (its newlines of framing, and a "<" until it shows it is no tag, held back), as
    # json.dumps writes the arguments; nothing withdrawn.
    end = XML_CALL.index("</function>")
    for size in (1, 3, 8):
        events = check(XML_CALL, chunked(XML_CALL, size), tools, None, 32_768)
        assert not [e for e in events if type(e) is CallCancelled]
        fed, _, result = feed_all(XML_CALL, chunked(XML_CALL, size), tools)
        early = "".join(e.text for batch in fed[: end // size] for e in batch if type(e) is ArgumentsDelta)
        assert early.startswith('{"path": "src/tides.py", "content": "def high_tide(port):\\n    if port.depth < 3:')
        assert json.dumps(result.calls[0].arguments, ensure_ascii=False).startswith(early)


@pytest.mark.parametrize(
    "body, sent",
    [
        # (what is sent of the parameters before the call's end, without a schema: a value
        # that may be another type than a string once its close is certain, the last one's
        # with the call's end)
        ("<parameter=n>\n42\n</parameter>\n<parameter=s>\nhi\n</parameter>\n", '{"n": 42, "s": "hi'),  # 42: a number
        ("<parameter=s>\nhi\n</parameter>\n<parameter=n>\nnull\n</parameter>\n", '{"s": "hi"'),
        ("<parameter=s>\ntruex\n</parameter>\n<parameter=t>\n{\"a\": 1}\n</parameter>\n", '{"s": "truex"'),
        ("<parameter=s>\nx</parameter></function> and on\n</parameter>\n", '{"s": "x'),  # (inline: text)
        ("<parameter=s> layout\n</parameter>\n", ""),  # (spaces on the tag's line: kept only if closed)
    ],
)
def test_qwen3_coder_values_that_may_not_be_strings_wait_for_their_close(body: str, sent: str) -> None:
    raw = f"<tool_call>\n<function=f>\n{body}</function>\n</tool_call>"
    events = check(raw, chunked(raw, 2), None, None, 32_768)
    before = [e for e in events[: [type(e) for e in events].index(CallDone) - 1] if type(e) is ArgumentsDelta]
    assert "".join(e.text for e in before) == sent
    assert not [e for e in events if type(e) is CallCancelled]


def test_a_qwen3_coder_key_written_twice_is_withdrawn_with_its_error() -> None:
    # (A parameter given twice with two values is an error: which one the model meant is not
    # known. What was sent of it is withdrawn; the same value twice streams once.)
    raw = "<tool_call>\n<function=f>\n<parameter=s>\nhi\n</parameter>\n<parameter=s>\nho\n</parameter>\n</function>\n</tool_call>"
    events = check(raw, chunked(raw, 2), None, None, 32_768)
    assert [type(e).__name__ for e in events][-3:] == ["CallCancelled", "Text", "Error"]
    assert "given twice" in events[-1].message
    same = raw.replace("ho", "hi")
    events = check(same, chunked(same, 2), None, None, 32_768)
    assert [type(e).__name__ for e in events if type(e) in (CallStart, CallDone, CallCancelled)] == ["CallStart", "CallDone"]


def test_a_qwen3_coder_call_cut_after_a_parameter_name_is_not_withdrawn() -> None:
    # (The end drops a parameter whose value never began: its key goes out with its value.)
    raw = "<tool_call>\n<function=write_file>\n<parameter=path>\nmap.txt\n</parameter>\n<parameter=content>\n"
    events = check(raw, chunked(raw, 4), WRITE, None, 32_768)
    assert [type(e) for e in events if type(e) in (CallStart, CallDone, CallCancelled)] == [CallStart, CallDone]


def test_a_mentioned_function_tag_is_not_announced() -> None:
    raw = "Wrap each call in <function=write_file> tags, then go on."
    events = check(raw, chunked(raw, 3), WRITE, None, 32_768)
    assert not [e for e in events if type(e) in (CallStart, CallCancelled)]


@pytest.mark.parametrize("case", QWEN_CASES, ids=[c.id for c in QWEN_CASES])
def test_qwen3_coder_calls_read_without_error_are_never_withdrawn(case: Any) -> None:
    result = toolgram.parse(case.raw, case.tools, formats=case.formats, truncated=case.truncated)
    for size in (1, 5, 13):
        events = check(case.raw, chunked(case.raw, size), case.tools, case.formats, 32_768, case.truncated)
        if not result.errors:
            assert not [e for e in events if type(e) is CallCancelled]


@pytest.mark.parametrize(
    "raw",
    [
        # The other quote before the list's `]`, the call's `)` left out (QA19 R14).
        "<|tool_call_start|>[say(text='x\"]<|tool_call_end|>",
        "<|tool_call_start|>[say(text='x\" ]<|tool_call_end|>",
        # A string left open before the format's end marker: closed there, not its text.
        '<|tool_call_start|>[say(text="hi<|tool_call_end|>',
        '<|tool_call_start|>[say(text="hi )]<|tool_call_end|>',
    ],
)
def test_a_python_call_read_whole_is_never_withdrawn(raw: str) -> None:
    for size in (1, 2, 5):
        events = check(raw, chunked(raw, size), None, None, 32_768)
        assert not [e for e in events if type(e) is CallCancelled]
        sent = "".join(e.text for e in events if type(e) is ArgumentsDelta)
        assert "tool_call_end" not in sent


@pytest.mark.parametrize(
    "raw",
    [
        '<tool_call>\n<function=write_file>\n<parameter=content>\nhé ✓\n</parameter>\n</function>\n</tool_call>',
        '<tool_call>{"name": "search", "arguments": {"q": "café ✓"}}</tool_call>',
    ],
)
def test_announce_name_takes_bytes_and_none_as_feed_does(raw: str) -> None:
    # (The echo was handed the delta before it was decoded: a TypeError for bytes or None.)
    data = raw.encode()
    sp = StreamParser(announce="name")
    events = [e for i in range(len(data)) for e in sp.feed(data[i : i + 1])] + sp.feed(None) + sp.flush()
    result = sp.close()
    assert result == toolgram.parse(raw)
    (call,) = result.calls
    assert "".join(e.text for e in events if type(e) is ArgumentsDelta) == json.dumps(call.arguments, ensure_ascii=False)


# A block holding two calls, per format whose calls share one region (and GLM's, a block
# each): the second call is announced once its name shows, not at the block's end.
TWO_CALL_BLOCKS = {
    "minimax_m2_invoke": (
        '<minimax:tool_call>\n<invoke name="read_file">\n<parameter name="path">notes.md</parameter>\n</invoke>\n'
        '<invoke name="write_file">\n<parameter name="path">out.md</parameter>\n'
        '<parameter name="content">Day one: we walked to the harbour and back.</parameter>\n</invoke>\n</minimax:tool_call>',
        "</minimax:tool_call>",
    ),
    "deepseek_v32_dsml": (
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="read_file">\n<｜DSML｜parameter name="path" string="true">notes.md</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
        '<｜DSML｜invoke name="write_file">\n<｜DSML｜parameter name="path" string="true">out.md</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="content" string="true">Day one: we walked to the harbour and back.</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        "</｜DSML｜function_calls>",
    ),
    "deepseek_v4_dsml": (
        '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="read_file">\n<｜DSML｜parameter name="path" string="true">notes.md</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
        '<｜DSML｜invoke name="write_file">\n<｜DSML｜parameter name="path" string="true">out.md</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="content" string="true">Day one: we walked to the harbour and back.</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
        "</｜DSML｜tool_calls>",
    ),
    "deepseek_v41_dsml": (
        '<｜DSML｜ calls>\n<｜DSML｜ invoke name="read_file">\n<｜DSML｜ parameter name="path" string="true">notes.md</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n'
        '<｜DSML｜ invoke name="write_file">\n<｜DSML｜ parameter name="path" string="true">out.md</｜DSML｜ parameter>\n'
        '<｜DSML｜ parameter name="content" string="true">Day one: we walked to the harbour and back.</｜DSML｜ parameter>\n'
        "</｜DSML｜ invoke>\n</｜DSML｜ calls>",
        "</｜DSML｜ calls>",
    ),
    "kimi_k3_open_close": (
        '<|open|>tools<|sep|><|open|>call tool="read_file"<|sep|><|open|>argument key="path" type="string"<|sep|>notes.md'
        '<|close|>argument<|sep|><|close|>call<|sep|><|open|>call tool="write_file"<|sep|>'
        '<|open|>argument key="path" type="string"<|sep|>out.md<|close|>argument<|sep|>'
        '<|open|>argument key="content" type="string"<|sep|>Day one: we walked to the harbour and back.'
        "<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>",
        "<|close|>tools<|sep|>",
    ),
    "qwen3_coder_xml": (
        "<tool_call>\n<function=read_file>\n<parameter=path>\nnotes.md\n</parameter>\n</function>\n"
        "<function=write_file>\n<parameter=path>\nout.md\n</parameter>\n"
        "<parameter=content>\nDay one: we walked to the harbour and back.\n</parameter>\n</function>\n</tool_call>",
        "</tool_call>",
    ),
    "seed_oss_xml": (
        "<seed:tool_call>\n<function=read_file>\n<parameter=path>notes.md</parameter>\n</function>\n"
        "<function=write_file>\n<parameter=path>out.md</parameter>\n"
        "<parameter=content>Day one: we walked to the harbour and back.</parameter>\n</function>\n</seed:tool_call>",
        "</seed:tool_call>",
    ),
    "dots_invoke": (
        '<dots_function_call>\n<invoke name="read_file">\n<parameter name="path">notes.md</parameter>\n</invoke>\n'
        '<invoke name="write_file">\n<parameter name="path">out.md</parameter>\n'
        '<parameter name="content">Day one: we walked to the harbour and back.</parameter>\n</invoke>\n</dots_function_call>',
        "</dots_function_call>",
    ),
    "hy_v3_tool_sep_kv": (
        "<tool_calls>\n<tool_call>read_file<tool_sep>\n<arg_key>path</arg_key>\n<arg_value>notes.md</arg_value>\n</tool_call>\n"
        "<tool_call>write_file<tool_sep>\n<arg_key>path</arg_key>\n<arg_value>out.md</arg_value>\n"
        "<arg_key>content</arg_key>\n<arg_value>Day one: we walked to the harbour and back.</arg_value>\n</tool_call>\n</tool_calls>",
        "</tool_calls>",
    ),
    "hermes": (  # (two call objects in one tag: repair several_objects)
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.md"}}\n'
        '{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}\n'
        "</tool_call>",
        "</tool_call>",
    ),
    "fenced_json": (
        '```json\n{"name": "read_file", "arguments": {"path": "notes.md"}};\n'
        '{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}\n'
        "```",
        "```",
    ),
    "step3_steptml": (  # (calls apart by <｜tool_call_end｜><｜tool_sep｜>: stream_sep)
        '<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="read_file"><steptml:parameter name="path">notes.md'
        '</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_sep｜><｜tool_call_begin｜><steptml:invoke name="write_file">'
        '<steptml:parameter name="path">out.md</steptml:parameter><steptml:parameter name="content">Day one: we walked to the '
        "harbour and back.</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
        "<｜tool_calls_end｜>",
    ),
    "step3_steptml_function_sep": (  # (each call after "function<｜tool_sep｜>": an opener written two ways)
        '<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="read_file"><steptml:parameter name="path">notes.md'
        '</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_sep｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="write_file">'
        '<steptml:parameter name="path">out.md</steptml:parameter><steptml:parameter name="content">Day one: we walked to the '
        "harbour and back.</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
        "<｜tool_calls_end｜>",
    ),
    "kimi_k2": (  # (JSON arguments after a declared opener, stream_json; the model's ids)
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>"
        '{"path": "notes.md"}<|tool_call_end|><|tool_call_begin|>functions.write_file:1<|tool_call_argument_begin|>'
        '{"path": "out.md", "content": "Day one: we walked to the harbour and back."}<|tool_call_end|>'
        "<|tool_calls_section_end|>",
        "<|tool_calls_section_end|>",
    ),
    "mistral": (  # (v11: NAME[ARGS]{…}, each call its own [TOOL_CALLS], no end marker)
        '[TOOL_CALLS]read_file[ARGS]{"path": "notes.md"}[TOOL_CALLS]write_file[ARGS]'
        '{"path": "out.md", "content": "Day one: we walked to the harbour and back."}',
        "",
    ),
    "mistral_token_once": (  # (the second call without its own [TOOL_CALLS]: one region)
        '[TOOL_CALLS]read_file[ARGS]{"path": "notes.md"}write_file[ARGS]'
        '{"path": "out.md", "content": "Day one: we walked to the harbour and back."}',
        "",
    ),
    "mistral_call_id": (  # (Small 3.2: NAME[CALL_ID]id[ARGS]{…}, the model's ids)
        '[TOOL_CALLS]read_file[CALL_ID]abc123XYZ[ARGS]{"path": "notes.md"}[TOOL_CALLS]write_file[CALL_ID]def456UVW[ARGS]'
        '{"path": "out.md", "content": "Day one: we walked to the harbour and back."}',
        "",
    ),
    "llama3_json": (  # (Llama 3's call objects joined by "; ", stream_json and stream_sep; done with the reply's end)
        '<|python_tag|>{"name": "read_file", "parameters": {"path": "notes.md"}}; {"name": "write_file", "parameters": '
        '{"path": "out.md", "content": "Day one: we walked to the harbour and back."}}',
        "",
    ),
    "harmony": (  # (a message per call, the recipient before the channel: stream_json)
        '<|start|>assistant to=functions.read_file<|channel|>commentary <|constrain|>json<|message|>{"path": "notes.md"}<|call|>'
        '<|start|>assistant to=functions.write_file<|channel|>commentary <|constrain|>json<|message|>'
        '{"path": "out.md", "content": "Day one: we walked to the harbour and back."}<|call|>',
        "<|call|>",
    ),
    "harmony_recipient_after_channel": (  # (the recipient after the channel; <|constrain|> left out)
        '<|channel|>commentary to=functions.read_file json<|message|>{"path": "notes.md"}<|call|>'
        '<|start|>assistant<|channel|>commentary to=functions.write_file<|message|>'
        '{"path": "out.md", "content": "Day one: we walked to the harbour and back."}<|call|>',
        "<|call|>",
    ),
    "deepseek_v31": (  # (NAME<｜tool▁sep｜>{…}, stream_json; stream_sep between the calls)
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{"path": "notes.md"}<｜tool▁call▁end｜>'
        '<｜tool▁call▁begin｜>write_file<｜tool▁sep｜>{"path": "out.md", "content": "Day one: we walked to the harbour and back."}'
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "<｜tool▁calls▁end｜>",
    ),
    "deepseek_v3": (  # (the arguments in a ```json fence after the name: the fence is the opener's)
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{"path": "notes.md"}\n```<｜tool▁call▁end｜>\n'
        '<｜tool▁call▁begin｜>function<｜tool▁sep｜>write_file\n```json\n{"path": "out.md", "content": "Day one: we walked to the harbour and back."}'
        "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "<｜tool▁calls▁end｜>",
    ),
    "functionary_v31": (  # (<function=NAME>{…}</function>: a region per call)
        '<function=read_file>{"path": "notes.md"}</function>\n<function=write_file>'
        '{"path": "out.md", "content": "Day one: we walked to the harbour and back."}</function>',
        "</function>",
    ),
    "hermes_function_tag": (  # (<tool_call><function>NAME</function>{…}</tool_call>: a region per call)
        '<tool_call><function>read_file</function>{"path": "notes.md"}</tool_call>\n<tool_call><function>write_file</function>'
        '{"path": "out.md", "content": "Day one: we walked to the harbour and back."}</tool_call>',
        "</tool_call>",
    ),
    "internlm": (  # (<|plugin|> and a call object whose name comes first: "parameters", or "arguments")
        '<|action_start|><|plugin|>\n{"name": "read_file", "parameters": {"path": "notes.md"}}<|action_end|>\n'
        '<|action_start|><|plugin|>\n{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}'
        "<|action_end|>",
        "<|action_end|>",
    ),
    "hermes_im_start": (  # (a call object after <|im_start|>: stream_json, a region per call)
        '<|im_start|>\n{"name": "read_file", "arguments": {"path": "notes.md"}}\n<|im_start|>\n'
        '<|im_start|>\n{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}\n<|im_end|>',
        "<|im_end|>",
    ),
    "hermes_response_tools": (  # (<response><tools>{…}</tools></response>: a region per call)
        '<response><tools>{"name": "read_file", "arguments": {"path": "notes.md"}}</tools></response>\n'
        '<response><tools>{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}</tools></response>',
        "</response>",
    ),
    "fenced_xml": (  # (a call object in a ```xml fence, bare or in a call tag)
        '```xml\n{"name": "read_file", "arguments": {"path": "notes.md"}}\n```\n'
        '```xml\n<function_call>\n{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}\n</function_call>\n```',
        "</function_call>",
    ),
    "granite": (  # (a JSON list of call objects: stream_json with and without its `[`, stream_sep `} ,`)
        '<|tool_call|>[{"name": "read_file", "arguments": {"path": "notes.md"}}, '
        '{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}]<|/tool_call|>',
        "<|/tool_call|>",
    ),
    "nemotron": (  # (as granite's)
        '<TOOLCALL>[{"name": "read_file", "arguments": {"path": "notes.md"}},\n'
        '{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}]</TOOLCALL>',
        "</TOOLCALL>",
    ),
    "apertus": (  # (name-keyed objects: the key is the tool, its value the arguments)
        '<|tools_prefix|>[{"read_file": {"path": "notes.md"}}, '
        '{"write_file": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}]<|tools_suffix|>',
        "<|tools_suffix|>",
    ),
    "jamba": (  # (<tool_calls> and a JSON list of call objects, as granite's)
        '<tool_calls>[{"name": "read_file", "arguments": {"path": "notes.md"}}, '
        '{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}]</tool_calls>',
        "</tool_calls>",
    ),
    "apriel": (  # (jamba's block after the final response's marker, a region of its own, and text)
        '[BEGIN FINAL RESPONSE]Writing it now.\n<tool_calls>[{"name": "read_file", "arguments": {"path": "notes.md"}}, '
        '{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}]</tool_calls>[END FINAL RESPONSE]',
        "</tool_calls>",
    ),
    "xlam": (  # (a bare JSON list: its `[` is its start marker)
        '[{"name": "read_file", "arguments": {"path": "notes.md"}}, '
        '{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}]',
        "",
    ),
    "xlam_tool_calls": (  # (an object whose "tool_calls" holds the list)
        '{"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}, '
        '{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}]}',
        "",
    ),
    "cohere": (  # (a JSON list of call objects whose written id and name come before the parameters)
        '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "read_file", "parameters": {"path": "notes.md"}}, '
        '{"tool_call_id": "1", "tool_name": "write_file", "parameters": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}]<|END_ACTION|>',
        "<|END_ACTION|>",
    ),
    "command_r": (  # (Action: and a ```json fence holding a JSON list)
        'Action:\n```json\n[{"tool_name": "read_file", "parameters": {"path": "notes.md"}}, '
        '{"tool_name": "write_file", "parameters": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}]\n```',
        "\n```",
    ),
    "granite_20b_fc": (  # (<function_call> and a call object, repeated)
        '<function_call> {"name": "read_file", "arguments": {"path": "notes.md"}}\n'
        '<function_call> {"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}',
        "",
    ),
    "functools": (  # (functools[…]: a JSON list after the word)
        'functools[{"name": "read_file", "arguments": {"path": "notes.md"}}, '
        '{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}]',
        "",
    ),
    "plamo3": (  # (the name between its tokens, then JSON arguments; stream_sep between the requests)
        '<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>read_file<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{"path": "notes.md"}<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>'
        '<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>write_file<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{"path": "out.md", "content": "Day one: we walked to the harbour and back."}<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>',
        "<|plamo:end_tool_requests:plamo|>",
    ),
    "functionary_v32": (  # (>>>NAME then its JSON arguments; the first >>> is the prompt's)
        'read_file\n{"path": "notes.md"}\n>>>write_file\n{"path": "out.md", "content": "Day one: we walked to the harbour and back."}',
        "",
    ),
    "glm45_arg_kv": (  # (a block per call: the second is a region of its own)
        "<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>notes.md</arg_value>\n</tool_call>\n"
        "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>out.md</arg_value>\n"
        "<arg_key>content</arg_key>\n<arg_value>Day one: we walked to the harbour and back.</arg_value>\n</tool_call>",
        "</tool_call>",
    ),
}


_FORMAT_OF = {"mistral_token_once": "mistral", "mistral_call_id": "mistral", "step3_steptml_function_sep": "step3_steptml", "harmony_recipient_after_channel": "harmony", "xlam_tool_calls": "xlam"}  # (rows of one format in another shape)


def _fed(sp: StreamParser, raw: str, size: int, end: int) -> tuple[list[Any], list[Any]]:
    """raw fed to sp in deltas of `size`: the events, and those of the deltas fed before
    the block's end marker at `end` is."""
    events: list[Any] = []
    before_end: list[Any] = []
    for i in range(0, len(raw), size):
        got = sp.feed(raw[i : i + size])
        events += got
        if i + size <= end:
            before_end += got
    return events, before_end


@pytest.mark.parametrize("fmt", sorted(TWO_CALL_BLOCKS))
@pytest.mark.parametrize("size", [1, 3, 7])
def test_the_second_call_of_a_block_streams_before_the_block_ends(fmt: str, size: int) -> None:
    raw, end_marker = TWO_CALL_BLOCKS[fmt]
    fmt = _FORMAT_OF.get(fmt, fmt)
    tools = ["read_file", "write_file"]
    expected = toolgram.parse(raw, tools, formats=[fmt])
    assert [c.name for c in expected.calls] == tools and not expected.errors
    # (the first call holds the block's opening markers; Apriel's begins at <tool_calls>)
    assert expected.calls[0].span[0] == (raw.index("<tool_calls>") if fmt == "apriel" else 0)
    end = raw.rindex(end_marker)  # (no end marker, "": the end of the reply, before flush())
    sp = StreamParser(tools, formats=[fmt], announce="name")
    events, before_end = _fed(sp, raw, size, end)
    events += sp.flush()
    assert sp.close() == expected
    ids = [c["id"] for c in expected.to_openai_message()["tool_calls"]]
    starts = [e for e in events if type(e) is CallStart]
    assert [(e.index, e.name, e.id) for e in starts] == [(0, "read_file", ids[0]), (1, "write_file", ids[1])]
    assert not any(type(e) is CallCancelled for e in events)
    # The second call's CallStart and its arguments as they are written, before the end:
    assert any(type(e) is CallStart and e.index == 1 for e in before_end)
    early = [e.text for e in before_end if type(e) is ArgumentsDelta and e.index == 1]
    assert len(early) >= 2 and "".join(early).startswith('{"path": "out.md", "content": "Day')
    for call in expected.calls:
        index = expected.calls.index(call)
        sent = "".join(e.text for e in events if type(e) is ArgumentsDelta and e.index == index)
        assert sent == json.dumps(call.arguments, ensure_ascii=False)


LONE_CALLS = {
    # (a format whose reply holds one call: its arguments stream before the call's last `}`)
    "gigachat": 'Looking that up.<|message_sep|>\n\nfunction call<|role_sep|>\n'
    '{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}',
    "gigachat_31": '<|function_call|>{"name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}',
    "json_reply": '{"type": "tool_call", "name": "write_file", "arguments": {"path": "out.md", "content": "Day one: we walked to the harbour and back."}}',
}


@pytest.mark.parametrize("key", sorted(LONE_CALLS))
@pytest.mark.parametrize("size", [1, 3, 7])
def test_a_lone_call_streams_its_arguments_before_its_end(key: str, size: int) -> None:
    raw = LONE_CALLS[key]
    fmt = key.split("_3")[0]
    expected = toolgram.parse(raw, ["write_file"], formats=[fmt])
    assert [c.name for c in expected.calls] == ["write_file"] and not expected.errors
    sp = StreamParser(["write_file"], formats=[fmt], announce="name")
    events, before_end = _fed(sp, raw, size, raw.rindex("}" if raw.endswith("}") else "<") - 1)
    events += sp.flush()
    assert sp.close() == expected
    starts = [e for e in events if type(e) is CallStart]
    assert [(e.index, e.name, e.id) for e in starts] == [(0, "write_file", expected.to_openai_message()["tool_calls"][0]["id"])]
    assert not any(type(e) is CallCancelled for e in events)
    early = [e.text for e in before_end if type(e) is ArgumentsDelta]
    assert len(early) >= 2 and "".join(early).startswith('{"path": "out.md", "content": "Day')
    assert "".join(e.text for e in events if type(e) is ArgumentsDelta) == json.dumps(expected.calls[0].arguments, ensure_ascii=False)


@pytest.mark.parametrize(
    "raw",
    [
        # (the python tool's body is raw code, not JSON arguments, braces in it too)
        '<|start|>assistant to=python<|channel|>analysis code<|message|>print(6 * 7)<|call|>',
        '<|start|>assistant to=python<|channel|>analysis<|message|>x = {"a": 1}\nprint(x["a"])<|call|>',
        # (another recipient, a built-in tool: whole, as before)
        '<|start|>assistant to=browser.search<|channel|>analysis<|message|>{"query": "Oslo"}<|call|>',
        # (the analysis channel: whole)
        '<|start|>assistant to=functions.read_file<|channel|>analysis<|message|>{"path": "a"}<|call|>',
        # (stripped special tokens: where the call ends is not known)
        'commentary to=functions.read_file json{"path": "a"}',
    ],
)
def test_harmony_messages_that_are_no_declared_json_call_are_not_announced_early(raw: str) -> None:
    end = raw.rindex("}") if raw.endswith("}") else raw.rindex("<|call|>")
    for size in (1, 4):
        sp = StreamParser(None, formats=["harmony"], announce="name")
        _, before_end = _fed(sp, raw, size, end)
        assert not any(type(e) is CallStart for e in before_end)
        check(raw, [raw[i : i + size] for i in range(0, len(raw), size)], None, ["harmony"], 32_768)


def test_a_harmony_function_named_like_the_content_type_is_announced_by_its_whole_name() -> None:
    raw = '<|start|>assistant to=functions.to_json<|channel|>commentary<|message|>{"value": "Oslo"}<|call|>'
    sp = StreamParser(None, formats=["harmony"], announce="name")
    _, before_end = _fed(sp, raw, 3, raw.rindex("<|call|>"))
    assert [e.name for e in before_end if type(e) is CallStart] == ["to_json"]
    check(raw, [raw[i : i + 3] for i in range(0, len(raw), 3)], None, ["harmony"], 32_768)


# A list of Python-style calls, per format that declares it (`stream_python:`): each call is
# announced once its name and "(" show, its arguments come whole with the list's end.
PYTHON_LISTS = {
    "pythonic": ('[read_file(path="notes.md"), write_file(path="out.md", content="Day one: (a walk), \'the harbour\'.")]', "]"),
    "llama4_pythonic": (
        '<|python_start|>[read_file(path="notes.md"), write_file(path="out.md", content="Day one: [a walk].")]<|python_end|>',
        "]<|python_end|>",
    ),
    "olmo3_pythonic": (  # (a call a line, no list: stream_python's first opener)
        '<function_calls>\nread_file(path="notes.md")\nwrite_file(path="out.md", content="Day one: (a walk), \'the harbour\'.")\n</function_calls>',
        "</function_calls>",
    ),
    "olmo3_pythonic_list": (  # (a list in the block: its second opener)
        '<function_calls>[read_file(path="notes.md"); write_file(path="out.md", content="Day one: [a walk].")]</function_calls>',
        "]</function_calls>",
    ),
    "lfm2": (
        '<|tool_call_start|>[read_file(path="notes.md"), write_file(path="out.md", content="Day one: a \\"walk\\".")]<|tool_call_end|>',
        "]<|tool_call_end|>",
    ),
    "fenced_python": (
        'Reading, then writing.\n```python\n[read_file(path="notes.md"), write_file(path="out.md", content="Day one: (a walk) [`x`].")]\n```\nDone.',
        "]\n```",
    ),
}


PYTHON_LIST_TOOLS = ["read_file", "write_file"]


def _python_list_fed(key: str, size: int) -> tuple:
    """PYTHON_LISTS[key] fed in `size`-character deltas with announce="name": (the reply,
    its format, parse()'s result, the stream, its events, those before the list's end)."""
    raw, end_marker = PYTHON_LISTS[key]
    fmt = key.removesuffix("_list")
    expected = toolgram.parse(raw, PYTHON_LIST_TOOLS, formats=[fmt])
    sp = StreamParser(PYTHON_LIST_TOOLS, formats=[fmt], announce="name")
    events, before_end = _fed(sp, raw, size, raw.rindex(end_marker))
    return raw, fmt, expected, sp, events, before_end


@pytest.mark.parametrize("fmt", sorted(PYTHON_LISTS))
@pytest.mark.parametrize("size", [1, 3, 7])
def test_each_call_of_a_python_list_is_named_before_the_list_ends(fmt: str, size: int) -> None:
    tools = PYTHON_LIST_TOOLS
    raw, fmt, expected, sp, _, before_end = _python_list_fed(fmt, size)
    assert [c.name for c in expected.calls] == tools and not expected.errors
    assert sp.close() == expected
    ids = [c["id"] for c in expected.to_openai_message()["tool_calls"]]
    assert [(e.index, e.name, e.id) for e in before_end if type(e) is CallStart] == [
        (0, "read_file", ids[0]),
        (1, "write_file", ids[1]),
    ]
    check(raw, [raw[i : i + size] for i in range(0, len(raw), size)], tools, [fmt], 32_768)


@pytest.mark.parametrize(
    "raw",
    [
        # (a string that may be triple-quoted: the next call is not looked for, it comes whole)
        "[read_file(path='''a'b'''), write_file(path='x')]",
        # (a parenthesis in a string is no call's end)
        '[read_file(path="a) , write_file("), write_file(path="x")]',
        # (a positional argument: parse() reads it otherwise, and what was announced is withdrawn)
        '[read_file("a"), write_file(path="x")]',
    ],
)
def test_a_python_list_keeps_the_contract(raw: str) -> None:
    tools = ["read_file", "write_file"]
    for size in (1, 2, 5):
        check(raw, [raw[i : i + size] for i in range(0, len(raw), size)], tools, ["pythonic"], 32_768)


# -- Python-style keyword arguments (PyEcho) ----------------------------------------------


@pytest.mark.parametrize("fmt", sorted(PYTHON_LISTS))
@pytest.mark.parametrize("size", [1, 3, 7])
def test_python_keyword_arguments_stream_as_they_are_written(fmt: str, size: int) -> None:
    raw, fmt, expected, sp, events, before_end = _python_list_fed(fmt, size)
    events += sp.flush()
    assert sp.close() == expected
    assert not any(type(e) is CallCancelled for e in events)
    early = [e.text for e in before_end if type(e) is ArgumentsDelta and e.index == 1]
    assert "".join(early).startswith('{"path": "out.md", "content": "Day one')
    assert len(early) >= 3  # (the value's characters as they come, not in one piece)
    check(raw, chunked(raw, size), PYTHON_LIST_TOOLS, [fmt], 32_768)


# Python-style values the echo streams, sends whole, or leaves to the call's end; each row
# reads without an error, and nothing sent is withdrawn.
PY_VALUES = [
    r'"a\nb\t\"q\" \\ \' é"',  # (escapes Python and the builder read alike)
    "'It\\'s'", "'it's ok'",  # (an escaped quote; an apostrophe in a 'single-quoted' value)
    '""', "''", "'''tri'ple'''", '"""a\n"b"\n"""',  # (empty; triple-quoted: whole, with the end)
    "r'C:\\dir'", "'\\x41\\u00e9'",  # (a prefix; escapes Python alone reads: left to the end)
    "1.50", "-3", "1_000", "True", "None", "celsius",  # (sent whole once the value ends)
    '[1, "a)", (2, 3)]', "{'k': [1, {'x': None}]}",
    '"say "hi" now"', "'grep 'TODO' src/'",  # (quotes inside: the builder reads the inside)
    '"x" "y"',  # (literals one after another, which Python joins)
]


@pytest.mark.parametrize("value", PY_VALUES)
def test_a_python_value_keeps_the_contract(value: str) -> None:
    raw = f'[read_file(path="notes.md", v={value}, n=2), write_file(path="out.md", content={value})]'
    tools = ["read_file", "write_file"]
    expected = toolgram.parse(raw, tools, formats=["pythonic"])
    assert len(expected.calls) == 2 and not expected.errors
    for size in (1, 2, 3, 7, 64):
        events = check(raw, chunked(raw, size), tools, ["pythonic"], 32_768)
        assert not any(type(e) is CallCancelled for e in events)


@pytest.mark.parametrize(
    "raw",
    [
        '[read_file(path="a" + "b"), write_file(path="x")]',  # (an expression: its text, withdrawn)
        '[read_file(path="a".upper())]',
        '[read_file(path="a", path="b")]',  # (a keyword twice, two values: an error)
        '[read_file(path="a", "b")]',  # (a positional argument after a keyword)
        '[read_file(path="a\nb")]',  # (a line break in a quoted value)
        '[read_file(path=="a")]',
        '[read_file(path="Par"is")]',  # (a stray quote)
        '[read_file(path="notes.md"',  # (cut by the end)
        '[read_file(path="notes.md\\',
        "[read_file(path='''notes",
    ],
)
def test_python_arguments_that_are_no_plain_value_keep_the_contract(raw: str) -> None:
    tools = ["read_file", "write_file"]
    for size in (1, 2, 3, 7, 64):
        check(raw, chunked(raw, size), tools, ["pythonic"], 32_768)


def test_a_python_argument_the_schema_says_is_an_array_is_not_streamed() -> None:
    # (written twice, its values collect into a list: what was sent of the first would not stand)
    tools = [{"name": "tag", "parameters": {"type": "object", "properties": {"t": {"type": "array"}}}}]
    raw = '[tag(t="a", t="b")]'
    expected = toolgram.parse(raw, tools, formats=["pythonic"])
    assert expected.calls[0].arguments == {"t": ["a", "b"]}
    events = check(raw, chunked(raw, 1), tools, ["pythonic"], 32_768)
    assert not any(type(e) is CallCancelled for e in events)


PY_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True), st.recursive(PY_SCALARS, lambda v: st.lists(v, max_size=3), max_leaves=6), max_size=4),
    st.sampled_from([", ", ",", " , "]),
    st.integers(1, 9),
)
def test_python_arguments_written_by_repr_stream_to_json_dumps(kwargs: dict, sep: str, size: int) -> None:
    raw = "[f(" + sep.join(f"{k}={v!r}" for k, v in kwargs.items()) + ")]"
    expected = toolgram.parse(raw, ["f"], formats=["pythonic"])
    events = check(raw, chunked(raw, size), ["f"], ["pythonic"], 32_768)
    if expected.calls and not expected.errors:
        assert not any(type(e) is CallCancelled for e in events)


KIMI_OPEN = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"


@pytest.mark.parametrize(
    "raw",
    [
        # (a string left open before the end tag: parse() closes it there, "Par")
        KIMI_OPEN + '{"city": "Par<|tool_call_end|><|tool_calls_section_end|>',
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Par</tool_call>',
        # (a marker inside a string that closes after it: the string's text)
        KIMI_OPEN + '{"city": "a<|tool_call_end|>b<c"}<|tool_call_end|><|tool_calls_section_end|>',
        '<tool_call>{"name": "get_weather", "arguments": {"city": "P<a></tool_call>"}}</tool_call>',
        '[TOOL_CALLS]get_weather[ARGS]{"city": "[a] [TOOL_CALLS]b"}',
    ],
)
def test_a_string_that_may_end_at_a_marker_is_held_there_not_withdrawn(raw: str) -> None:
    expected = toolgram.parse(raw, ["get_weather"])
    assert len(expected.calls) == 1
    for size in (1, 2, 3, 7, 64):
        events = check(raw, chunked(raw, size), ["get_weather"], None, 32_768)
        assert not any(type(e) is CallCancelled for e in events)
        if size == 1:  # (what came before the marker streamed, a character at a time)
            assert len([e for e in events if type(e) is ArgumentsDelta]) > 3


# Replies whose calls close on their last line, then prose follows on that line and the
# next (issue 21: a call is completed by the delta that ends it where the format can know
# it ended). The closers then text read as the value's text only if its own close comes
# within the look (nest._inline_past): past it, the calls are settled before the end.
_CLOSED_THEN_PROSE = [
    "minimax_m2_invoke/reference_two_invokes",
    "glm45_arg_kv/reference_glm47_no_newlines",
    "step3_steptml/reference_two_calls",
    "step3_steptml/long_string_value_streams",
    "minicpm5_function_param/two_calls_no_prose",
    "dots_invoke/typed_by_schema",
    "qwen3_coder_xml/close_tag_run_inline_then_prose_after_the_call",
]
_PROSE_AFTER = " Then done.\n" + "The results come next, one per line, with their sources. " * 20


def _case(case_id: str) -> Any:
    return next(c for c in corpus_cases() if c.id == case_id)


@pytest.mark.parametrize("case_id", _CLOSED_THEN_PROSE)
@pytest.mark.parametrize("announce", ["done", "name"])
def test_calls_closed_then_prose_are_done_before_the_end(case_id: str, announce: str) -> None:
    case = _case(case_id)
    raw = case.raw + _PROSE_AFTER
    expected = toolgram.parse(raw, case.tools, formats=case.formats)
    assert expected.calls and expected.text.endswith(_PROSE_AFTER.strip())
    sp = StreamParser(case.tools, formats=case.formats, announce=announce)
    fed = [e for i in range(0, len(raw), 8) for e in sp.feed(raw[i : i + 8])]
    assert [e.call for e in fed if type(e) is CallDone] == expected.calls
    assert not [e for e in sp.flush() if type(e) is CallDone]


@pytest.mark.parametrize("case_id", _CLOSED_THEN_PROSE)
@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_calls_closed_then_prose_stream_as_parse_reads_them(case_id: str, size: int) -> None:
    case = _case(case_id)
    # (closers within the look make the first run text; past it, stray closers after prose)
    for tail in (_PROSE_AFTER, " Then done.", " Then done.</parameter></invoke>\n", _PROSE_AFTER + "</parameter></invoke>\n"):
        raw = case.raw + tail
        check(raw, chunked(raw, size), case.tools, case.formats, 32_768)


# A list of calls with no marker whose later call is broken, then text (QA10 D2): no marker
# of the format can come to tell it otherwise, so the call kept and the error are put out
# once the text the error quotes has come, not held with all the text after to flush().
_BROKEN_LIST_THEN_TEXT = [
    '[get_weather(city="Oslo"), get_time(timezone=)]\n' + "The weather comes first. " * 40,
    '[get_weather(city="Oslo"), "text", get_time(timezone="UTC")] ' + "The weather comes first. " * 40,
]


@pytest.mark.parametrize("raw", _BROKEN_LIST_THEN_TEXT, ids=range(len(_BROKEN_LIST_THEN_TEXT)))
@pytest.mark.parametrize("announce", ["done", "name"])
def test_a_broken_call_of_a_list_with_no_marker_is_told_before_the_end(raw: str, announce: str) -> None:
    expected = toolgram.parse(raw)
    assert [c.name for c in expected.calls] == ["get_weather"] and expected.errors
    sp = StreamParser(None, announce=announce)
    fed = [e for i in range(0, 80, 8) for e in sp.feed(raw[i : i + 8])]  # (the list and a little more)
    assert [e.call for e in fed if type(e) is CallDone] == expected.calls
    assert [e.message for e in fed if type(e) is Error] == expected.errors
    for size in (1, 2, 3, 7, 64):
        check(raw, chunked(raw, size), None, None, 32_768)


# Mistral's list before v11 (`stream_json_list:`): each call announced once its id is
# certain, at its object's `}` (Mistral Nemo writes the id after the arguments: name, id and
# arguments at once), or at its arguments' `{` where "name" and "id" came first (they stream).
_MISTRAL_TOOLS = ["read_file", "write_file"]
_CONTENT = "Day one: we walked to the harbour and back."
MISTRAL_LISTS = {
    "ids_after": (
        '[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "notes.md"}, "id": "abc123XYZ"}, '
        f'{{"name": "write_file", "arguments": {{"path": "out.md", "content": "{_CONTENT}"}}, "id": "def456UVW"}}] Done.'
    ),
    "ids_before": (
        '[TOOL_CALLS] [{"name": "read_file", "id": "abc123XYZ", "arguments": {"path": "notes.md"}}, '
        f'{{"id": "def456UVW", "name": "write_file", "arguments": {{"path": "out.md", "content": "{_CONTENT}"}}}}] Done.'
    ),
    "no_ids": (
        '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "notes.md"}}, '
        f'{{"name": "write_file", "arguments": {{"path": "out.md", "content": "{_CONTENT}"}}}}]'
    ),
}


def _mistral_fed(raw: str, size: int, tools: Any = _MISTRAL_TOOLS) -> tuple:
    expected = toolgram.parse(raw, tools, formats=["mistral"])
    sp = StreamParser(tools, formats=["mistral"], announce="name")
    chunks = [raw[i : i + size] for i in range(0, len(raw), size)]
    fed, at = [], 0
    for chunk in chunks:
        at += len(chunk)
        fed += [(at, e) for e in sp.feed(chunk)]
    fed += [(None, e) for e in sp.flush()]
    assert sp.close() == expected
    return expected, fed


@pytest.mark.parametrize("key", sorted(MISTRAL_LISTS))
@pytest.mark.parametrize("size", [1, 3, 7, 64])
def test_each_call_of_a_mistral_list_is_announced_once_its_id_is_certain(key: str, size: int) -> None:
    raw = MISTRAL_LISTS[key]
    expected, fed = _mistral_fed(raw, size)
    assert [c.name for c in expected.calls] == _MISTRAL_TOOLS and not expected.errors
    ids = [c["id"] for c in expected.to_openai_message()["tool_calls"]]
    starts = [(at, e) for at, e in fed if type(e) is CallStart]
    assert [(e.index, e.name, e.id) for _, e in starts] == [(0, "read_file", ids[0]), (1, "write_file", ids[1])]
    assert not any(type(e) is CallCancelled for _, e in fed)
    second = raw.index('{"', raw.index("}, ") + 1)  # (the second object's `{`)
    arguments = raw.index('"arguments": {', second) + len('"arguments": ')
    close = raw.index("}]") + 1  # (the second object's `}`)
    at = starts[1][0]
    if key == "ids_before":
        # (at its arguments' `{`, the name and id known: the content streams as written)
        assert at is not None and at < arguments + size + 1
        early = [e.text for a, e in fed if type(e) is ArgumentsDelta and e.index == 1 and a is not None and a < close]
        assert len(early) >= 2 or size == 64
    else:
        # (the id after the arguments, or none: only the object's `}` tells; then all at once)
        assert at is not None and close <= at < close + size
        deltas = [e.text for _, e in fed if type(e) is ArgumentsDelta and e.index == 1]
        assert deltas == [json.dumps(expected.calls[1].arguments, ensure_ascii=False)]
    check(raw, [raw[i : i + size] for i in range(0, len(raw), size)], _MISTRAL_TOOLS, ["mistral"], 32_768)


# A list that breaks after a complete object: the calls before stay parse()'s calls, with the
# ids announced; what breaks is never announced (or, read otherwise, withdrawn).
_MISTRAL_BROKEN = [
    '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a"}, "id": "abc123XYZ"}, {"name": "write_file", "arguments": {"path": @}}] ok',
    '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a"}, "id": "abc123XYZ"}, oops and more',
    '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a"}}, "text"] ok',
    '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a"}}, ] ok',
    '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a"}, "id": "abc123XYZ"}, {"name": "write_file", "arguments": {"pa',
    '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a"}}, {"name": "write_file", "arguments": {}, "name": "read_file"}]',
    '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a"}, "id": "abc123XYZ"}, {"name": "write_file", "arguments": {}, "id": "abc123XYZ"}]',
    '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a"}, "id": "abc123XYZ"}]}',
    '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a"}, "id": "abc123XYZ"}] read_file[CALL_ID]a',
    '[TOOL_CALLS][{"name": "read_file", "id": "abc123XYZ", "arguments": {"path": "a"}, "id": "other"}]',
    '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a [TOOL_CALLS] b"}}, {"name": "write_file", "arguments": {}}]',
    '[TOOL_CALLS][{"name": "unknown", "arguments": {}}, {"name": "write_file", "arguments": {}}]',
]


@pytest.mark.parametrize("raw", _MISTRAL_BROKEN, ids=range(len(_MISTRAL_BROKEN)))
@pytest.mark.parametrize("size", [1, 2, 5, 13, 200])
def test_a_mistral_list_that_breaks_after_an_object_streams_as_parse_reads_it(raw: str, size: int) -> None:
    for tools in (_MISTRAL_TOOLS, None):
        check(raw, [raw[i : i + size] for i in range(0, len(raw), size)], tools, None, 32_768)


def test_a_mistral_list_broken_after_an_object_keeps_the_call_announced() -> None:
    raw = _MISTRAL_BROKEN[0]
    expected, fed = _mistral_fed(raw, 4)
    assert [(c.name, c.id) for c in expected.calls] == [("read_file", "abc123XYZ")] and expected.errors
    events = [e for _, e in fed]
    assert [type(e).__name__ for e in events if type(e) in (CallStart, CallDone, CallCancelled)] == ["CallStart", "CallDone"]
    assert events[0] == CallStart(0, "read_file", "abc123XYZ")


@given(st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_mistral_lists_in_random_chunkings(data: Any) -> None:
    raw = data.draw(st.sampled_from(sorted(MISTRAL_LISTS.values()) + _MISTRAL_BROKEN))
    check(raw, random_chunks(data, raw), _MISTRAL_TOOLS, None, 32_768)
