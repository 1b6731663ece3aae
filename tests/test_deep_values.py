"""One bound on how deep an argument's value nests (VALUE_DEPTH, _build/depth.py), in
every format: the deepest value read survives every conversion of the library at
Python's default recursion limit; one level deeper is an error that names the
argument (never a value cut short); and a deep value left open is told, not lost.
(QA6 D7/D8: MiniMax M3 and Cohere cofl values 800-989 deep were read, then
to_openai() raised RecursionError; left open they were dropped with no error.)"""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stdout

import pytest

import toolgram
import toolgram.openai as tgo
from toolgram._audit.cli import main as cli_main
from toolgram._build.depth import VALUE_DEPTH, depth_over, too_deep_argument
from toolgram._result.openai import arguments_json

P = "]<]minimax[>["


def _json(d: int) -> str:
    return '<tool_call>{"name": "run", "arguments": {"a": ' + "[" * d + "1" + "]" * d + "}}</tool_call>"


def _gemma(d: int) -> str:
    return "<|tool_call>call:run{a:" + "{b:" * d + "1" + "}" * d + "}<tool_call|>"


def _m3(d: int) -> str:
    # The argument element `a` holds d nested elements: a value d deep.
    opened = (P + "<a>") * (d + 1)
    closed = (P + "</a>") * (d + 1)
    return P + "<tool_call>\n" + P + '<invoke name="run">' + opened + "Z" + closed + P + "</invoke>\n" + P + "</tool_call>"


_COFL_OPEN = '<cofl:value name="a" type="dict">'


def _cofl(d: int) -> str:
    return (
        '<cofl:tool_calls><cofl:tool_call id="0" name="run">' + _COFL_OPEN * d + '<cofl:value name="a" type="raw">Z'
        + "</cofl:value>" * (d + 1)
        + "</cofl:tool_call></cofl:tool_calls>"
    )


def _pythonic(d: int) -> str:
    return "[run(a=" + "[" * d + "1" + "]" * d + ")]"


SHAPES = {"hermes": _json, "pythonic": _pythonic, "gemma4_call": _gemma, "minimax_m3_nested_xml": _m3, "cohere_cofl_xml": _cofl}


def _depth(value) -> int:
    d = 0
    while depth_over(value, d):
        d += 1
    return d


@pytest.mark.parametrize("fmt", SHAPES)
def test_the_deepest_value_is_read_and_one_deeper_names_the_argument(fmt):
    r = toolgram.parse(SHAPES[fmt](VALUE_DEPTH), tools=["run"], max_chars=None)
    assert r.errors == [] and len(r.calls) == 1
    assert _depth(r.calls[0].arguments["a"]) == VALUE_DEPTH
    r = toolgram.parse(SHAPES[fmt](VALUE_DEPTH + 1), tools=["run"], max_chars=None)
    assert r.calls == []
    assert r.errors == [f"Couldn't read a tool call: \"a\" is nested too deeply (more than {VALUE_DEPTH} levels)."]


@pytest.mark.parametrize("fmt", ["minimax_m3_nested_xml", "cohere_cofl_xml"])
@pytest.mark.parametrize("depth", [VALUE_DEPTH + 1, 900, 2000])
def test_a_deep_value_left_open_is_an_error_not_lost(fmt, depth):
    raw = SHAPES[fmt](depth)
    raw = raw[: raw.index("Z")]  # (cut by the end of the reply, every element open)
    r = toolgram.parse(raw, tools=["run"], max_chars=None)
    assert r.calls == []
    assert r.errors == [f"Couldn't read a tool call: \"a\" is nested too deeply (more than {VALUE_DEPTH} levels)."]
    stream = toolgram.StreamParser(tools=["run"], max_chars=None)
    for i in range(0, len(raw), 64):
        stream.feed(raw[i : i + 64])
    assert stream.close().errors == r.errors


@pytest.mark.parametrize("fmt", ["minimax_m3_nested_xml", "cohere_cofl_xml"])
def test_a_deep_value_cut_inside_its_closing_tags_is_an_error(fmt):
    raw = SHAPES[fmt](900)
    # (Its value closed, close tags after it, the end cutting one. Not right after
    # `]<]minimax[>[<` or `</`: there an M3 call of any depth is dropped with no error,
    # an older fault of the lexing of a cut close tag, see the report of branch deep6.)
    raw = raw[: raw.index("Z") + 110]
    r = toolgram.parse(raw, tools=["run"], max_chars=None)
    assert r.calls == []
    assert r.errors == [f"Couldn't read a tool call: \"a\" is nested too deeply (more than {VALUE_DEPTH} levels)."]


def test_a_python_value_past_the_readers_own_bound_is_the_error_not_its_text():
    # (It was kept as the text it is, repair unquoted_string: a list became a string.)
    r = toolgram.parse(_pythonic(600), tools=["run"])
    assert r.calls == []
    assert r.errors == [f"Couldn't read a tool call: \"a\" is nested too deeply (more than {VALUE_DEPTH} levels)."]


def _at_stack_depth(frames: int, fn):
    """fn() called with `frames` more Python frames on the stack (a server's, a test
    runner's): the conversions must leave the caller room."""
    if frames:
        return _at_stack_depth(frames - 1, fn)
    return fn()


@pytest.mark.parametrize("fmt", SHAPES)
def test_every_conversion_survives_the_deepest_value(fmt, tmp_path):
    assert sys.getrecursionlimit() == 1000
    raw = SHAPES[fmt](VALUE_DEPTH)
    r = toolgram.parse(raw, tools=["run"], max_chars=None)
    (call,) = r.calls

    def convert():
        json.dumps(call.arguments)
        json.dumps(call.arguments, indent=2)
        message = r.to_openai_message()
        assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == call.arguments
        json.dumps(tgo.completion(r))
        stream = tgo.CompletionStream(["run"], max_chars=None)
        chunks = [c for i in range(0, len(raw), 97) for c in stream.feed(raw[i : i + 97])] + stream.close()
        json.dumps(chunks)
        parser = toolgram.StreamParser(tools=["run"], max_chars=None)
        events = [e for i in range(0, len(raw), 7) for e in parser.feed(raw[i : i + 7])] + list(parser.close().calls)
        repr(events)
        path = tmp_path / "reply.txt"
        path.write_text(raw, encoding="utf-8")
        tools = tmp_path / "tools.json"
        tools.write_text('["run"]', encoding="utf-8")
        out = io.StringIO()
        with redirect_stdout(out):
            code = cli_main(["parse", "--json", "--tools", str(tools), "--max-chars", "none", str(path)])
        assert code == 0, out.getvalue()[-300:]
        return True

    assert _at_stack_depth(150, convert)


def test_arguments_json_converts_deep_values_whole():
    # (It wrote a value 200 levels down as its str: a cut no one was told about.)
    value: object = 1
    for _ in range(VALUE_DEPTH):
        value = [value]
    assert json.loads(arguments_json({"a": value})) == {"a": value}
    shared = [1, 2]
    assert json.loads(arguments_json({"p": shared, "q": shared})) == {"p": [1, 2], "q": [1, 2]}
    circular: list = [1]
    circular.append(circular)
    assert arguments_json({"a": circular}) == json.dumps(str({"a": circular}))


def test_too_deep_argument_names_the_first():
    value: object = 1
    for _ in range(VALUE_DEPTH + 1):
        value = {"k": value}
    assert too_deep_argument({"ok": [1], "bad": value}) == "bad"
    assert too_deep_argument({"ok": value["k"]}) is None
