"""StreamParser(announce="name") for the formats whose arguments are no JSON and no
declared XML tags: Gemma's loose objects (`stream_loose:`, LooseEcho: Gemma 4, its bare
call body, FunctionGemma) and a Python-style call that is no list's item
(`stream_pycall:`, PyEcho: Llama 3.1's built-in tools) or a list of them in a code fence
(`stream_python:`, PyEcho: a ```python fence), and Cohere's
cofl XML (`stream_call:` with the id the model writes, XmlParamEcho) and MFCS's tool blocks
(`stream_json:` with `{text}` for the instructions, JsonEcho), MiniMax-M3's nested XML
(`stream_call:` whose tags begin `]<]minimax[>[`, closers naming their key), BFCL's values in
attributes (`stream_attr:`, AttrEcho). Each call's
argument deltas, concatenated, are json.dumps of its final arguments; they begin before
the call ends (a long value is not sent whole at the end); a call withdrawn midway never
leaves JSON a client can run.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolgram
from toolgram import ArgumentsDelta, CallCancelled, CallDone, CallStart, StreamParser

from conftest import corpus_cases
from test_stream import chunked, random_chunks
from test_stream_announce import check

ECHOED = ("gemma4_call", "gemma4_bare", "functiongemma_call", "llama3_builtin", "fenced_python", "cohere_cofl_xml", "mfcs", "minimax_m3_nested_xml", "bfcl_verbose_xml")
CASES = [c for c in corpus_cases() if c.format in ECHOED]

CONTENT = "Day one: we walked to the harbour and back, then wrote it all down. " * 45  # (~3,000 characters)
D = '<|"|>'
M3 = "]<]minimax[>["
# A long write_file call per format, and what the arguments' JSON starts with before the call ends.
LONG = {
    "gemma4_call": f"Saving it.<|tool_call>call:write_file{{path:{D}notes.md{D},content:{D}{CONTENT}{D}}}<tool_call|>",
    "gemma4_bare": f"call:write_file{{path:{D}notes.md{D},content:{D}{CONTENT}{D}}}",
    "functiongemma_call": f"<start_function_call>call:write_file{{path:<escape>notes.md<escape>,content:<escape>{CONTENT}<escape>}}<end_function_call>",
    "llama3_builtin": f'<|python_tag|>write_file.call(path="notes.md", content="{CONTENT}")<|eom_id|>',
    "fenced_python": f'Saving it.\n```python\n[write_file(path="notes.md", content="{CONTENT}")]\n```\nDone.',
    "cohere_cofl_xml": '<cofl:tool_calls><cofl:tool_call id="0" name="write_file"><cofl:value name="path" type="raw">notes.md</cofl:value>'
    f'<cofl:value name="content" type="raw">{CONTENT}</cofl:value></cofl:tool_call></cofl:tool_calls>',
    "mfcs": "<mfcs_tool><instructions>Save the notes</instructions><call_id>call_1</call_id><name>write_file</name>"
    f'<parameters>{{"path": "notes.md", "content": "{CONTENT}"}}</parameters></mfcs_tool>',
    "minimax_m3_nested_xml": f"{M3}<tool_call>\n{M3}<invoke name=\"write_file\">\n{M3}<path>notes.md{M3}</path>\n"
    f"{M3}<content>{CONTENT}{M3}</content>\n{M3}</invoke>\n{M3}</tool_call>",
    # (its value in an attribute, typed by the schema: the type written after it cannot change it)
    "bfcl_verbose_xml": '<functions><function name="write_file"><params><param name="path" value="notes.md" type="string"/>'
    f'<param name="content" value="{CONTENT}" type="string"/></params></function></functions>',
    # (GLM's call with its <tool_call> left out: announced once <arg_key> follows the name line)
    "glm45_bare": f"write_file\n<arg_key>path</arg_key>\n<arg_value>notes.md</arg_value>\n<arg_key>content</arg_key>\n<arg_value>{CONTENT}</arg_value>",
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
        },
    }
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_argument_deltas_add_up_to_the_final_arguments(case: Any) -> None:
    result = toolgram.parse(case.raw, case.tools, formats=case.formats, truncated=case.truncated)
    for size in (1, 3, 7):
        events = check(case.raw, chunked(case.raw, size), case.tools, case.formats, 32_768, case.truncated)
        if not result.errors:
            # (a call read without error is never withdrawn: what was sent of it stands.
            # Bare Python calls send theirs whole: a bare call that prose follows is no
            # call, and streamed it would be withdrawn.)
            assert not [e for e in events if type(e) is CallCancelled]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_argument_deltas_add_up_in_random_chunks(data: Any) -> None:
    case = data.draw(st.sampled_from(CASES), label="case")
    check(case.raw, random_chunks(data, case.raw), case.tools, case.formats, 32_768, case.truncated)


def _first_delta(raw: str, fmt: str, size: int, tools: Any = TOOLS) -> tuple[int, list[Any]]:
    """Where in the reply (characters fed) the first argument delta came, and the events."""
    sp = StreamParser(tools, formats=[fmt], announce="name")
    first = -1
    events: list[Any] = []
    for i in range(0, len(raw), size):
        got = sp.feed(raw[i : i + size])
        if first < 0 and any(type(e) is ArgumentsDelta and e.text for e in got):
            first = min(i + size, len(raw))
        events += got
    events += sp.flush()
    return first, events


@pytest.mark.parametrize("fmt", sorted(LONG))
@pytest.mark.parametrize("size", [1, 3, 7, 64])
def test_a_long_value_streams_before_the_call_ends(fmt: str, size: int) -> None:
    raw = LONG[fmt]
    expected = toolgram.parse(raw, TOOLS, formats=[fmt])
    assert [c.arguments for c in expected.calls] == [{"path": "notes.md", "content": CONTENT}] and not expected.errors
    first, events = _first_delta(raw, fmt, size)
    # (the first argument delta comes with the content's start, thousands of characters
    # before the call's end; sent whole, it would come with the end)
    assert 0 <= first <= raw.index("Day one") + size + 1
    deltas = [e for e in events if type(e) is ArgumentsDelta]
    before = "".join(e.text for e in deltas[:-1])
    assert before.startswith('{"path": "notes.md", "content": "Day one: we walked')
    assert len(deltas) > 10 or size == 64
    assert "".join(e.text for e in deltas) == json.dumps(expected.calls[0].arguments, ensure_ascii=False)
    assert [type(e) for e in events if type(e) in (CallStart, CallDone, CallCancelled)] == [CallStart, CallDone]


# A call that goes wrong after its arguments began to stream: a key given twice.
WITHDRAWN = {
    "gemma4_call": f"<|tool_call>call:write_file{{path:{D}a.md{D},content:{D}Day one.{D},path:{D}b.md{D}}}<tool_call|>",
    "gemma4_bare": f"call:write_file{{path:{D}a.md{D},content:{D}Day one.{D},path:{D}b.md{D}}}",
    "functiongemma_call": "<start_function_call>call:write_file{path:<escape>a.md<escape>,content:<escape>Day one.<escape>,path:<escape>b.md<escape>}<end_function_call>",
    "llama3_builtin": '<|python_tag|>write_file.call(path="a.md", content="Day one.", path="b.md")<|eom_id|>',
    "fenced_python": '```python\n[write_file(path="a.md", content="Day one.", path="b.md")]\n```',
    "cohere_cofl_xml": '<cofl:tool_calls><cofl:tool_call id="0" name="write_file"><cofl:value name="path" type="raw">a.md</cofl:value>'
    '<cofl:value name="content" type="raw">Day one.</cofl:value><cofl:value name="path" type="raw">b.md</cofl:value></cofl:tool_call></cofl:tool_calls>',
    "mfcs": "<mfcs_tool><instructions>Save</instructions><call_id>call_1</call_id><name>write_file</name>"
    '<parameters>{"path": "a.md", "content": "Day one.", "path": "b.md"}</parameters></mfcs_tool>',
    # (MiniMax-M3 collects a key written twice into a list: a value nested too deeply fails)
    "minimax_m3_nested_xml": f'{M3}<tool_call>{M3}<invoke name="write_file">{M3}<path>a.md{M3}</path>{M3}<content>Day one.{M3}</content>'
    f"{M3}<b.md>{(M3 + '<x>') * 300}1{(M3 + '</x>') * 300}{M3}</b.md>{M3}</invoke>{M3}</tool_call>",
    "bfcl_verbose_xml": '<functions><function name="write_file"><params><param name="path" value="a.md" type="string"/>'
    '<param name="content" value="Day one." type="string"/><param name="path" value="b.md" type="string"/></params></function></functions>',
    "glm45_bare": "write_file\n<arg_key>path</arg_key>\n<arg_value>a.md</arg_value>\n<arg_key>content</arg_key>\n"
    "<arg_value>Day one.</arg_value>\n<arg_key>path</arg_key>\n<arg_value>b.md</arg_value>",
}


@pytest.mark.parametrize("fmt", sorted(WITHDRAWN))
@pytest.mark.parametrize("size", [1, 3, 7])
def test_a_call_withdrawn_midway_never_leaves_valid_json(fmt: str, size: int) -> None:
    raw = WITHDRAWN[fmt]
    expected = toolgram.parse(raw, TOOLS, formats=[fmt])
    assert not expected.calls and expected.errors
    first, events = _first_delta(raw, fmt, size)
    assert 0 <= first < raw.index("b.md")  # (it streamed before it failed)
    assert [type(e) for e in events if type(e) in (CallStart, CallDone, CallCancelled)] == [CallStart, CallCancelled]
    sent = "".join(e.text for e in events if type(e) is ArgumentsDelta)
    assert sent.startswith('{"path": "a.md", "content": "Day one.')
    with pytest.raises(ValueError):
        json.loads(sent)


@pytest.mark.parametrize(
    "body, sent",
    [
        # (what goes out before the call ends: a value other than a string once its end shows,
        # typed as the end types it; a string's text up to what may end it)
        ("{n:3,content:" + D + "Day", '{"n": 3, "content": "Day'),
        ("{n:1.50,content:" + D + "Day", '{"n": 1.5, "content": "Day'),
        ("{o:{a:" + D + "x" + D + ",b:[1,2]},content:" + D + "Day", '{"o": {"a": "x", "b": [1, 2]}, "content": "Day'),
        ("{content:" + D + "a, b  ", '{"content": "a, b'),  # (blanks held: a string left open loses them)
        ("{content:" + D + "x}", '{"content": "x'),  # (`}`: a string left open may end there)
        ("{content:" + D + "x<", '{"content": "x'),  # (a `<` that may begin a delimiter)
        ("{content:" + D + "x<b>y", '{"content": "x<b>y'),
        ("{content:" + D + "x" + D + ",", '{"content": "x'),  # (the next key not yet written)
        ("{content:" + D + "x" + D + ",path:", '{"content": "x"'),
    ],
)
def test_gemma_values_go_out_as_far_as_they_are_certain(body: str, sent: str) -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"n": {"type": "number"}, "o": {"type": "object"}, "content": {"type": "string"}, "path": {"type": "string"}}}}}]
    raw = "<|tool_call>call:f" + body
    sp = StreamParser(tools, formats=["gemma4_call"], announce="name")
    events = sp.feed(raw)
    assert "".join(e.text for e in events if type(e) is ArgumentsDelta) == sent


def test_a_delimited_value_the_schema_types_otherwise_waits_for_its_end() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}}]
    raw = f"<|tool_call>call:f{{n:{D}3{D}}}<tool_call|>"
    sp = StreamParser(tools, formats=["gemma4_call"], announce="name")
    events = [e for ch in chunked(raw, 1) for e in sp.feed(ch)] + sp.flush()
    assert "".join(e.text for e in events if type(e) is ArgumentsDelta) == '{"n": 3}'
    assert toolgram.parse(raw, tools, formats=["gemma4_call"]).calls[0].arguments == {"n": 3}


# Gemma values built of the pieces that may end a string or a value early: delimiters,
# markers, closers, commas and colons, line breaks; strings left open; nested values.
_PIECES = ["a", "b c", " ", "\n", "\ncall:", "<", "}", "{", "]", "[", ",", ":", ", k:", D, "<escape>", "<tool_call|>", "<|tool_call>", "<turn|>", "'", '"', "\\", "1", "é", "<b>"]
_STRINGS = st.lists(st.sampled_from(_PIECES), max_size=6).map("".join)
_SCALARS = st.sampled_from(["1", "2.5", "-3", "1.50", "true", "null", "abc", "a, b"])


def _values(delim: str) -> Any:
    leaf = _STRINGS.map(lambda s: delim + s + delim) | _SCALARS | _STRINGS.map(lambda s: delim + s)
    return st.recursive(
        leaf,
        lambda inner: st.lists(inner, max_size=2).map(lambda xs: "[" + ",".join(xs) + "]")
        | st.lists(inner, max_size=2).map(lambda xs: "{" + ",".join(f"k{i}:{x}" for i, x in enumerate(xs)) + "}"),
        max_leaves=4,
    )


_LOOSE = {"gemma4_call": ("<|tool_call>call:f", "<tool_call|>", D), "functiongemma_call": ("<start_function_call>call:f", "<end_function_call>", "<escape>"), "gemma4_bare": ("call:f", "", D)}
_F_TOOLS = [None, [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "array"}}}}}]]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_gemma_arguments_built_of_what_may_end_them_keep_the_contract(data: Any) -> None:
    fmt = data.draw(st.sampled_from(sorted(_LOOSE)), label="fmt")
    opener, closer, delim = _LOOSE[fmt]
    keys = data.draw(st.lists(st.sampled_from("abcd"), min_size=1, max_size=4), label="keys")
    body = "{" + ",".join(f"{k}:{data.draw(_values(delim), label=k)}" for k in keys) + data.draw(st.sampled_from(["}", "", " }"]), label="end")
    raw = opener + body + data.draw(st.sampled_from([closer, closer + " Done.", ""]), label="after")
    check(raw, random_chunks(data, raw), data.draw(st.sampled_from(_F_TOOLS), label="tools"), [fmt], 32_768)


# GLM's call with its <tool_call> left out opens with a bare name line: a prose line is one
# too, until a tag follows it that is not an <arg_key>. Announced only once the first
# <arg_key> follows the name line, no prose line is ever named as a call and withdrawn,
# whether the line's word is an offered tool or not (issue 21).
_GLM_BARE_WORDS = [
    "Head\n<function name=\"get_weather\"><param name=\"city\">Oslo</param></function>\nTail",
    "Head\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>\n</tool_call>",
    "Head\n\n<b>bold</b> and prose\nget_weather\n<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>",
    "Head\n<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>\nand prose after it",
    "get_weather\n<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>\nI asked for the weather.",
    "\n\nget_weather\n  <arg_key>city</arg_key>\n<arg_value>Oslo, a long name to stream</arg_value>",
]
_GLM_TOOLS = [None, ["get_weather"], ["get_weather", "Head"]]


@pytest.mark.parametrize("raw", _GLM_BARE_WORDS)
@pytest.mark.parametrize("tools", _GLM_TOOLS, ids=["no_tools", "offered", "head_offered"])
def test_a_bare_name_line_is_announced_only_once_an_arg_key_follows(raw: str, tools: Any) -> None:
    result = toolgram.parse(raw, tools)
    for size in (1, 2, 3, 7, 64):
        events = check(raw, chunked(raw, size), tools, None, 32_768, "repair")
        assert not [e for e in events if type(e) is CallCancelled]
        assert [e.name for e in events if type(e) is CallStart] == [c.name for c in result.calls]
    if any(c.format == "glm45_bare" for c in result.calls) and "stream" in raw:
        # (the value's text streams before the reply ends)
        sp = StreamParser(tools, announce="name")
        early = [e for piece in chunked(raw, 3) for e in sp.feed(piece) if type(e) is ArgumentsDelta]
        assert len(early) > 5


# BFCL's verbose XML: a value sits in an attribute, before the `type=` that types it.
_BFCL = '<functions><function name="f"><params>'
_BFCL_TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
    "s": {"type": "string"}, "n": {"type": "integer"}, "b": {"type": "boolean"}, "l": {"type": "array"},
    "o": {"type": "string"}, "m": {"type": ["string", "null"]}}}}}]  # fmt: skip


@pytest.mark.parametrize(
    "params, tools, sent",
    [
        # (a string the schema types: its text as it comes, markers as written, character
        # references read as parse() reads them, one begun held until it ends or cannot be one)
        ('<param name="s" value="Day one', _BFCL_TOOLS, '{"s": "Day one'),
        ('<param name="s" value="a &quot;b&quot; &amp; c', _BFCL_TOOLS, '{"s": "a \\"b\\" & c'),
        ('<param name="s" value="a &#x3C;b&#62; &am', _BFCL_TOOLS, '{"s": "a <b> '),
        ('<param name="s" value="a &nbsp; &#0; &', _BFCL_TOOLS, '{"s": "a &nbsp; &#0; '),
        ('<param name="s" value="&#34;hi', _BFCL_TOOLS, ""),  # (a `"` first: as written below, it stops)
        ('<param name="s&amp;t" type="str&#105;ng" value="x', None, '{"s&t": "x'),
        ('<param name="s" value="a > b <tool_call> c', _BFCL_TOOLS, '{"s": "a > b <tool_call> c'),
        ('<param name="s" value="x </param> y', _BFCL_TOOLS, '{"s": "x </param> y'),
        ('<param name="s" value="x </param></funct', _BFCL_TOOLS, '{"s": "x '),  # (a cut there drops the closers: held)
        ('<param name="s" value="x /', _BFCL_TOOLS, '{"s": "x '),
        ('<param name="s" value="   ', _BFCL_TOOLS, ""),  # (blanks only: a cut there drops the parameter)
        ('<param name="s" value="x" type="string"', _BFCL_TOOLS, '{"s": "x'),  # (a second value= may add to it)
        ('<param name="s" value="x" type="string"/>', _BFCL_TOOLS, '{"s": "x"'),
        ("<param name='s' value='say \"hi\"' type='string'/>", _BFCL_TOOLS, '{"s": "say \\"hi\\""'),
        ("<param name='s' value='\"hi", _BFCL_TOOLS, ""),  # (typed json, it would be that JSON string: stops)
        # (any other value whole at its element's end, typed as the end types it)
        ('<param name="n" value="42', _BFCL_TOOLS, ""),
        ('<param name="n" value="42" type="integer"/><param name="s" value="x', _BFCL_TOOLS, '{"n": 42, "s": "x'),
        ('<param name="b" value="False" type="boolean"/>', _BFCL_TOOLS, '{"b": false'),
        ('<param name="m" value="null"/>', _BFCL_TOOLS, '{"m": null'),
        # (no schema: a string only where a type= before it says so)
        ('<param name="s" value="Day', None, ""),
        ('<param name="s" value="42" type="string"/><param name="n" value="42"/>', None, '{"s": "42", "n": 42'),
        ('<param name="s" type="string" value="Day', None, '{"s": "Day'),
        # (the key after the value, an array, nested content: whole, or with the end)
        ('<param value="Day" name="s" type="string"/><param name="o" value="x', _BFCL_TOOLS, '{"s": "Day", "o": "x'),
        ('<param name="l" value="[1]" type="list"/>', _BFCL_TOOLS, ""),
        ('<param name="o"><dict><param name="a" value="1"/></dict></param><param name="s" value="x', _BFCL_TOOLS, ""),
        # (a tool without that parameter: untyped)
        ('<param name="z" value="Day', _BFCL_TOOLS, ""),
        ('<param name="z" value="Day" type="string"/><param name="s" value="x', _BFCL_TOOLS, '{"z": "Day", "s": "x'),
    ],
)
def test_bfcl_values_go_out_as_far_as_they_are_certain(params: str, tools: Any, sent: str) -> None:
    raw = _BFCL + params
    sp = StreamParser(tools, formats=["bfcl_verbose_xml"], announce="name")
    events = [e for piece in chunked(raw, 1) for e in sp.feed(piece)]
    assert [e.name for e in events if type(e) is CallStart] == ["f"]
    assert "".join(e.text for e in events if type(e) is ArgumentsDelta) == sent
    check(raw, chunked(raw, 3), tools, ["bfcl_verbose_xml"], 32_768)  # (and the reply cut there keeps the contract)


# BFCL values built of what may end a value or a call early, or be read otherwise: the
# grammar's closers, other formats' markers, entities, quotes, blanks; every attribute order,
# a type or none, cut anywhere.
_BFCL_PIECES = ["a", "b c", " ", "\n", "<", ">", "/", "/>", "</", "</param>", "</params>", "</function>", "</functions>", "<functions>",
                "<param ", "<tool_call>", "<|im_end|>", "&quot;", "&amp;", "&#39;", "&#x22;", "&am", "&#", "'", '"', "42", "true", "[1]", "é"]  # fmt: skip
_BFCL_TOOLSETS = [None, _BFCL_TOOLS, [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}]]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_bfcl_arguments_built_of_what_may_end_them_keep_the_contract(data: Any) -> None:
    params = []
    for _ in range(data.draw(st.integers(1, 3), label="n")):
        quote = data.draw(st.sampled_from(['"', "'"]), label="quote")
        value = "".join(p for p in data.draw(st.lists(st.sampled_from(_BFCL_PIECES), max_size=6), label="value") if quote not in p)
        attrs = [f'name="{data.draw(st.sampled_from("snbmz"), label="key")}"', f"value={quote}{value}{quote}"]
        typ = data.draw(st.sampled_from(["", "string", "integer", "json", "boolean"]), label="type")
        if typ:
            attrs.append(f'type="{typ}"')
        attrs = data.draw(st.permutations(attrs), label="order")
        params.append("<param " + " ".join(attrs) + "/>")
    raw = _BFCL + "".join(params) + "</params></function></functions>"
    raw = raw[: data.draw(st.integers(len(_BFCL), len(raw)), label="cut")]
    tools = data.draw(st.sampled_from(_BFCL_TOOLSETS), label="tools")
    check(raw, random_chunks(data, raw), tools, ["bfcl_verbose_xml"], 32_768)
