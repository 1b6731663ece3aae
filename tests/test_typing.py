"""Schema typing of raw parameter text (src/toolgram/_build/coerce.py).

XML-ish formats give text; the tool's JSON Schema decides what it becomes. The
peers' documented complaints are covered by name: "typed parameters from
XML-ish formats decoded with the wrong type" and "int turned str".
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

import toolgram
from toolgram._build.coerce import Node, coerce_node, coerce_param, frame, kinds_of

S = {"type": "string"}
I = {"type": "integer"}
N = {"type": "number"}
B = {"type": "boolean"}
O = {"type": "object"}
A = {"type": "array"}
NULL = {"type": "null"}

# (raw text, type the model wrote, the parameter's schema, expected value)
TABLE: list[tuple[str, str | None, Any, Any]] = [
    # -- int turned str: a number for an integer/number parameter is a number
    ("5", None, I, 5),
    ("\n5\n", None, I, 5),
    (" 42 ", None, I, 42),
    ("5", "string", I, 5),  # Kimi K3 type="string" / DSML string="true": the schema wins
    ("5", "true", I, 5),  # DSML string="true"
    ("5.0", None, I, 5),
    ("-17", None, I, -17),
    ("1.5", None, N, 1.5),
    ("2", None, N, 2),
    ("1e3", None, N, 1000.0),
    ('"5"', None, I, 5),  # quoted by the model: read inside the quotes once
    ("5.5", None, I, "5.5"),  # not an integer: kept as written
    ("five", None, I, "five"),
    ("12345678901234567890", None, I, 12345678901234567890),
    # -- the wrong type: a string parameter keeps the text as written
    ("03106", None, S, "03106"),
    ("5", None, S, "5"),
    ("5", "number", S, "5"),
    ("null", None, S, "null"),
    ("true", None, S, "true"),
    ("false", "false", S, "false"),  # DSML string="false" with a string schema
    ('"quoted"', "false", S, "quoted"),  # JSON text said to be JSON: the string inside
    ('"quoted"', None, S, '"quoted"'),  # without that, the quotes are the model's text
    ("[1, 2]", None, S, "[1, 2]"),
    # (no framing: a string is what the model wrote, whitespace and all)
    ("  indented\n    code", None, S, "  indented\n    code"),
    ("\n    indented\n    code\n", None, S, "\n    indented\n    code\n"),
    (" 5 ", None, I, 5),  # a number is decoded with the whitespace around it ignored
    ("a, ", None, S, "a, "),  # a trailing space is content
    ("", None, S, ""),
    # -- booleans, null
    ("true", None, B, True),
    ("False", None, B, False),  # Python spelling (BFCL value="False")
    ("TRUE", None, B, True),
    ("yes", None, B, "yes"),
    ("null", None, NULL, None),
    ("None", None, NULL, None),
    # -- objects and arrays
    ('{"a": 1}', None, O, {"a": 1}),
    ("{'a': 1}", None, O, {"a": 1}),  # a JSON slip, repaired (single_quotes)
    ("[1, 2,]", None, A, [1, 2]),  # trailing comma, repaired
    ('["x", "y"]', "list", A, ["x", "y"]),
    ("not json", None, O, "not json"),
    ("", None, A, ""),
    # -- type lists, anyOf / oneOf, enum, const
    ("null", None, {"type": ["integer", "null"]}, None),
    ("7", None, {"type": ["integer", "null"]}, 7),
    ("null", None, {"type": ["string", "null"]}, None),
    ("None", None, {"type": ["string", "null"]}, None),
    ("nothing", None, {"type": ["string", "null"]}, "nothing"),
    ("5", None, {"type": ["string", "integer"]}, 5),
    ("5", "string", {"type": ["string", "integer"]}, "5"),  # the written type breaks the tie
    ("05", None, {"type": ["string", "integer"]}, "05"),
    ("3", None, {"anyOf": [I, NULL]}, 3),
    ("null", None, {"oneOf": [I, NULL]}, None),
    ("[1]", None, {"anyOf": [A, S]}, [1]),
    ("{'a': 1}", None, {"anyOf": [O, S]}, "{'a': 1}"),  # string allowed: no repairs
    ("2", None, {"enum": [1, 2, 3]}, 2),
    ("2", None, {"enum": ["1", "2"]}, "2"),
    ("auto", None, {"enum": [1, "auto"]}, "auto"),
    ("1", None, {"enum": [1, "auto"]}, 1),
    ("1", None, {"const": 1}, 1),
    ("1", None, {"type": "string", "enum": ["1", "2"]}, "1"),
    # -- schema spellings seen in tool definitions
    ("3", None, {"type": "int"}, 3),
    ("2.5", None, {"type": "float"}, 2.5),
    ("true", None, {"type": "bool"}, True),
    ('{"k": 1}', None, {"type": "dict"}, {"k": 1}),
    ("[1]", None, {"type": "tuple"}, [1]),
    ("7", None, {"type": "any"}, 7),  # says nothing: as without a schema
    ("7", None, {"properties": {}}, "7"),  # no type but properties: an object
    ("[7]", None, {"items": I}, [7]),
    ("7", None, {"description": "no type at all"}, 7),
    ("7", None, {"$ref": "#/$defs/Count"}, 7),  # resolved against the root below
    ("07", None, {"$ref": "#/$defs/Code"}, "07"),
    ("7", None, {"$ref": "https://example.com/remote.json"}, 7),  # not followed: no schema
    # -- no schema: JSON numbers, true/false/null, objects and arrays; the rest is text
    ("5", None, None, 5),
    ("-2.5", None, None, -2.5),
    ("true", None, None, True),
    ("null", None, None, None),
    ('{"a": [1]}', None, None, {"a": [1]}),
    ("[1, 2]", None, None, [1, 2]),
    ("03106", None, None, "03106"),
    ("True", None, None, "True"),
    ('"hi"', None, None, '"hi"'),
    ("NaN", None, None, "NaN"),
    ("Infinity", None, None, "Infinity"),
    ("{'a': 1}", None, None, "{'a': 1}"),
    ("hello world", None, None, "hello world"),
    ("\nDallas\n", None, None, "\nDallas\n"),
    ("\n42\n", None, None, 42),
    # -- no schema: a number only where it writes back as written (a version stays text)
    ("3.10", None, None, "3.10"),
    ("0.10", None, None, "0.10"),
    ("1e5", None, None, "1e5"),
    ("-0", None, None, "-0"),
    ("3.0", None, None, 3.0),
    ("12345678901234567890", None, None, 12345678901234567890),
    ("3.14159265358979323846", None, None, "3.14159265358979323846"),
    # -- no schema, a type the model wrote decides
    ("5", "string", None, "5"),
    ("5", "raw", None, "5"),
    ("5", "true", None, "5"),  # DSML string="true"
    ("5", "false", None, 5),  # DSML string="false"
    ("hello", "false", None, "hello"),  # not JSON after all: the text
    ("{'a': 1}", "json", None, {"a": 1}),
    ("1", "number", None, 1),
    ("False", "boolean", None, False),
    ('{"a": 1}', "dict", None, {"a": 1}),
    ('"x"', "json", None, "x"),
]

ROOT = {
    "type": "object",
    "properties": {},
    "$defs": {"Count": {"type": "integer"}, "Code": {"type": "string"}},
}


@pytest.mark.parametrize(("raw", "typ", "schema", "expected"), TABLE, ids=[f"{i}:{r[0]!r}:{r[1]}" for i, r in enumerate(TABLE)])
def test_coerce_param(raw: str, typ: str | None, schema: Any, expected: Any) -> None:
    value, _ = coerce_param(raw, typ, schema, ROOT)
    assert value == expected
    assert type(value) is type(expected)
    json.dumps(value, allow_nan=False)  # always plain JSON data


def test_repairs_are_named() -> None:
    assert coerce_param("{'a': 1}", None, O) == ({"a": 1}, ("single_quotes",))
    assert coerce_param("[1, 2,]", None, A) == ([1, 2], ("trailing_comma",))
    assert coerce_param("5", None, I) == (5, ())
    # A word is never "completed" into a literal: `t` is not true.
    assert coerce_param("t", None, B) == ("t", ())
    assert coerce_param('{"a": 1', None, O) == ({"a": 1}, ("closed_json",))


def test_python_keyword_values_unchanged() -> None:
    assert coerce_param("True", "python", None) == (True, ())
    assert coerce_param("'x'", "python", None) == ("x", ())
    assert coerce_param("celsius", "python", None) == ("celsius", ("unquoted_string",))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("\nvalue\n", "value"),
        ("  \nvalue\n  ", "  \nvalue\n  "),  # (spaces are no template's)
        (" value", " value"),
        ("value ", "value "),
        ("\n\nvalue\n\n", "\nvalue\n"),  # one newline each side, no more
        ("\r\nvalue\r\n", "value"),
        ("\n  code\n\n", "  code\n"),
        ("\n", ""),
        ("   ", "   "),
        ("line1\n  line2", "line1\n  line2"),
    ],
)
def test_frame(raw: str, expected: str) -> None:
    assert frame(raw, "newline") == expected
    assert frame(raw) == frame(raw, "none") == raw


@pytest.mark.parametrize(
    ("schema", "kinds"),
    [
        (None, None),
        ({}, None),
        (S, {"string"}),
        ({"type": ["integer", "number"]}, {"number"}),
        ({"anyOf": [S, {}]}, None),  # one alternative allows anything
        ({"allOf": [I, {"minimum": 0}]}, {"integer"}),
        ({"enum": ["a", None]}, {"string", "null"}),
    ],
)
def test_kinds_of(schema: Any, kinds: Any) -> None:
    assert kinds_of(schema) == (None if kinds is None else frozenset(kinds))


ORDER = {
    "type": "object",
    "properties": {
        "user_id": I,
        "items": {"type": "array", "items": {"type": "object", "properties": {"sku": S, "qty": I}}},
        "address": {"type": "object", "properties": {"zip": S}, "additionalProperties": I},
        "tags": {"type": "array", "items": S},
    },
}


def _leaf(key: str | None, text: str, typ: str | None = None) -> Node:
    return Node(key=key, type=typ, text=text)


def test_nested_elements_typed_by_schema() -> None:
    item = lambda sku, qty: Node(key="item", children=[_leaf("sku", sku), _leaf("qty", qty)])  # noqa: E731
    root = Node(
        type="object",
        children=[
            _leaf("user_id", "42"),
            Node(key="items", children=[item("001", "2"), item("002", "1")]),
            Node(key="address", children=[_leaf("zip", "02134"), _leaf("floor", "3")]),
            _leaf("tags", "a"),
            _leaf("tags", "7"),
        ],
    )
    assert coerce_node(root, ORDER, ORDER) == {
        "user_id": 42,
        "items": [{"sku": "001", "qty": 2}, {"sku": "002", "qty": 1}],
        "address": {"zip": "02134", "floor": 3},
        "tags": ["a", "7"],
    }


def test_nested_elements_without_schema() -> None:
    root = Node(
        type="object",
        children=[
            Node(key="items", children=[_leaf("item", "x"), _leaf("item", "2")]),
            Node(key="list", type="list", children=[_leaf(None, "a"), _leaf(None, "true")]),
            Node(key="unnamed", children=[_leaf(None, "1")]),
            Node(key="empty_list", type="list"),
            Node(key="empty_dict", type="dict"),
            _leaf("text", "\nhello\n"),
            _leaf("spaced", "  hi  "),
        ],
    )
    assert coerce_node(root, None) == {
        "items": {"item": ["x", 2]},
        "list": ["a", True],
        "unnamed": [1],
        "empty_list": [],
        "empty_dict": {},
        "text": "\nhello\n",
        "spaced": "  hi  ",
    }
    # A format whose template writes a newline around each value: those are dropped.
    assert coerce_node(root, None, framing="newline")["text"] == "hello"


def test_empty_element_for_container_schema() -> None:
    assert coerce_node(Node(key="items"), ORDER["properties"]["items"]) == []
    assert coerce_node(Node(key="address"), ORDER["properties"]["address"]) == {}
    assert coerce_node(Node(key="s"), S) == ""


# -- end to end: the formats hand their raw values to the typing above --------

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {
                    "n": {"type": "integer"},
                    "zip": {"type": "string"},
                    "flag": {"type": "boolean"},
                    "maybe": {"type": ["integer", "null"]},
                    "word": {"type": "string"},
                },
            },
        },
    }
]
EXPECTED = {"n": 5, "zip": "03106", "flag": True, "maybe": None, "word": "null"}
D = "｜DSML｜"

END_TO_END = [
    (
        "qwen3_coder_xml",
        "<tool_call>\n<function=f>\n<parameter=n>\n5\n</parameter>\n<parameter=zip>\n03106\n</parameter>\n"
        "<parameter=flag>\ntrue\n</parameter>\n<parameter=maybe>\nnull\n</parameter>\n<parameter=word>\nnull\n</parameter>\n"
        "</function>\n</tool_call>",
    ),
    (
        "glm45_arg_kv",
        "<tool_call>f<arg_key>n</arg_key><arg_value>5</arg_value><arg_key>zip</arg_key><arg_value>03106</arg_value>"
        "<arg_key>flag</arg_key><arg_value>true</arg_value><arg_key>maybe</arg_key><arg_value>null</arg_value>"
        "<arg_key>word</arg_key><arg_value>null</arg_value></tool_call>",
    ),
    (
        "deepseek_v32_dsml",
        f'<{D}function_calls><{D}invoke name="f"><{D}parameter name="n" string="true">5</{D}parameter>'
        f'<{D}parameter name="zip" string="false">03106</{D}parameter><{D}parameter name="flag" string="true">true</{D}parameter>'
        f'<{D}parameter name="maybe" string="false">null</{D}parameter><{D}parameter name="word" string="true">null</{D}parameter>'
        f"</{D}invoke></{D}function_calls>",
    ),
    (
        "kimi_k3_open_close",
        '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|>'
        '<|open|>argument key="n" type="string"<|sep|>5<|close|>argument<|sep|>'
        '<|open|>argument key="zip" type="number"<|sep|>03106<|close|>argument<|sep|>'
        '<|open|>argument key="flag" type="boolean"<|sep|>true<|close|>argument<|sep|>'
        '<|open|>argument key="maybe" type="null"<|sep|>null<|close|>argument<|sep|>'
        '<|open|>argument key="word" type="null"<|sep|>null<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>",
    ),
    (
        "cohere_cofl_xml",
        '<cofl:tool_calls><cofl:tool_call id="0" name="f"><cofl:value name="n" type="raw">5</cofl:value>'
        '<cofl:value name="zip" type="json">03106</cofl:value><cofl:value name="flag" type="json">true</cofl:value>'
        '<cofl:value name="maybe" type="json">null</cofl:value><cofl:value name="word" type="json">null</cofl:value>'
        "</cofl:tool_call></cofl:tool_calls>",
    ),
    (
        "gemma4_call",
        '<|tool_call>call:f{n:<|"|>5<|"|>,zip:03106,flag:true,maybe:null,word:null}<tool_call|>',
    ),
    (
        "minimax_m3_nested_xml",
        ']<]minimax[>[<tool_call>]<]minimax[>[<invoke name="f">]<]minimax[>[<n>5]<]minimax[>[</n>'
        "]<]minimax[>[<zip>03106]<]minimax[>[</zip>]<]minimax[>[<flag>true]<]minimax[>[</flag>"
        "]<]minimax[>[<maybe>null]<]minimax[>[</maybe>]<]minimax[>[<word>null]<]minimax[>[</word>"
        "]<]minimax[>[</invoke>]<]minimax[>[</tool_call>",
    ),
    (
        "bfcl_verbose_xml",
        '<functions><function name="f"><params><param name="n" value="5" type="string"/>'
        '<param name="zip" value="03106" type="integer"/><param name="flag" value="True" type="boolean"/>'
        '<param name="maybe" value="None" type="integer"/><param name="word" value="null" type="string"/>'
        "</params></function></functions>",
    ),
]


@pytest.mark.parametrize(("fmt", "raw"), END_TO_END, ids=[f for f, _ in END_TO_END])
def test_formats_type_by_schema(fmt: str, raw: str) -> None:
    result = toolgram.parse(raw, TOOLS, formats=[fmt])
    assert result.errors == []
    assert [c.arguments for c in result.calls] == [EXPECTED]
    assert all(type(result.calls[0].arguments[k]) is type(v) for k, v in EXPECTED.items())


def test_no_nan_or_infinity_without_schema() -> None:
    result = toolgram.parse("<tool_call>\n<function=f>\n<parameter=x>\nNaN\n</parameter>\n</function>\n</tool_call>")
    value = result.calls[0].arguments["x"]
    assert value == "NaN" and not (isinstance(value, float) and math.isnan(value))
