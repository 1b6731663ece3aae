"""validate(call, tools): arguments checked against the tool's JSON Schema, errors worded for the model."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolgram._result.model import ToolCall
from toolgram._tools.validate import MAX_ERRORS, MAX_PHRASE, validate

CART = {
    "type": "object",
    "properties": {
        "sku": {"type": "string"},
        "qty": {"type": "integer", "minimum": 1},
        "colour": {"enum": ["red", "blue"]},
        "lines": {
            "type": "array",
            "items": {"type": "object", "properties": {"qty": {"type": "integer"}}, "required": ["qty"]},
        },
    },
    "required": ["sku", "qty"],
    "additionalProperties": False,
}
TOOLS = [{"name": "add_to_cart", "inputSchema": CART}]

# (id, arguments, expected messages)
CASES = [
    ("valid", {"sku": "cap", "qty": 2}, []),
    ("valid_with_optional", {"sku": "cap", "qty": 2, "colour": "red", "lines": [{"qty": 1}]}, []),
    ("missing_required", {"sku": "cap"}, ["Arguments for \"add_to_cart\" are invalid: 'qty' is a required property."]),
    (
        "two_missing_joined_in_schema_order",
        {},
        ["Arguments for \"add_to_cart\" are invalid: 'sku' is a required property; 'qty' is a required property."],
    ),
    ("wrong_type_gets_its_path", {"sku": "cap", "qty": "two"}, ["Arguments for \"add_to_cart\" are invalid: qty: 'two' is not of type 'integer'."]),
    ("below_minimum", {"sku": "cap", "qty": 0}, ['Arguments for "add_to_cart" are invalid: qty: 0 is less than the minimum of 1.']),
    ("not_in_enum", {"sku": "cap", "qty": 1, "colour": "green"}, ["Arguments for \"add_to_cart\" are invalid: colour: 'green' is not one of ['red', 'blue']."]),
    (
        "unexpected_argument",
        {"sku": "cap", "qty": 1, "size": "L"},
        ["Arguments for \"add_to_cart\" are invalid: Additional properties are not allowed ('size' was unexpected)."],
    ),
    (
        "shallowest_error_first",
        {"sku": "cap", "qty": 1, "lines": [{"qty": "x"}, {}], "size": "L"},
        [
            "Arguments for \"add_to_cart\" are invalid: Additional properties are not allowed ('size' was unexpected); "
            "lines[1]: 'qty' is a required property; lines[0].qty: 'x' is not of type 'integer'."
        ],
    ),
    ("arguments_not_an_object", [1, 2], ["Arguments for \"add_to_cart\" are invalid: [1, 2] is not of type 'object'."]),
]


@pytest.mark.parametrize("arguments, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_messages(arguments, expected):
    assert validate(ToolCall("add_to_cart", arguments), TOOLS) == expected


def test_anyof_descends_to_the_branch_that_stands_out():
    schema = {"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "object", "required": ["c"]}]}}}
    assert validate(ToolCall("f", {"a": {"b": 1}}), {"f": schema}) == ["Arguments for \"f\" are invalid: a: 'c' is a required property."]


def test_anyof_without_a_best_branch_says_what_each_wanted():
    schema = {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "object"}]}}}
    assert validate(ToolCall("f", {"a": 1}), {"f": schema}) == [
        "Arguments for \"f\" are invalid: a: 1 is not valid under any of the given schemas "
        "(1 is not of type 'string'; 1 is not of type 'object')."
    ]


def test_at_most_max_errors_are_listed():
    schema = {"type": "object", "required": [f"p{i}" for i in range(MAX_ERRORS + 3)]}
    (message,) = validate(ToolCall("f", {}), {"f": schema})
    assert message.count("is a required property") == MAX_ERRORS
    assert message.endswith("; and 3 more.")


def test_a_huge_value_is_shortened_keeping_the_rule():
    (message,) = validate(ToolCall("add_to_cart", {"sku": "cap", "qty": "9" * 10_000}), TOOLS)
    assert len(message) < MAX_PHRASE + 100
    assert message.endswith("is not of type 'integer'.")
    assert " ... " in message


@pytest.mark.parametrize(
    "call",
    [
        ToolCall("add_to_cart", {"sku": "cap"}),
        {"name": "add_to_cart", "arguments": {"sku": "cap"}},
        {"name": "add_to_cart", "parameters": {"sku": "cap"}},
        # an OpenAI tool_calls entry: arguments as JSON text
        {"id": "call_1", "type": "function", "function": {"name": "add_to_cart", "arguments": '{"sku": "cap"}'}},
    ],
    ids=["ToolCall", "mapping", "mapping_parameters", "openai_entry"],
)
def test_call_shapes(call):
    assert validate(call, TOOLS) == ["Arguments for \"add_to_cart\" are invalid: 'qty' is a required property."]


def test_arguments_json_text_that_is_not_json():
    call = {"function": {"name": "add_to_cart", "arguments": "{sku: cap"}}
    assert validate(call, TOOLS) == ["Arguments for \"add_to_cart\" are invalid: '{sku: cap' is not of type 'object'."]


@pytest.mark.parametrize(
    "tools",
    [None, [], ["add_to_cart"], {"other": CART}, [{"name": "add_to_cart"}]],
    ids=["tools_none", "no_tools", "name_only", "unknown_tool", "no_schema"],
)
def test_nothing_to_check_gives_no_message(tools):
    # Unknown names are the parser's error ("Unknown tool ..."), not validate's.
    assert validate(ToolCall("add_to_cart", {"anything": 1}), tools) == []


def test_tools_in_every_shape():
    for tools in (
        {"add_to_cart": CART},
        [{"type": "function", "function": {"name": "add_to_cart", "parameters": CART}}],
        {"shop": {"description": "", "tool_list": [{"name": "add_to_cart", "parameters": CART}]}},
    ):
        assert validate(ToolCall("add_to_cart", {"sku": "cap"}), tools) == [
            "Arguments for \"add_to_cart\" are invalid: 'qty' is a required property."
        ]


@pytest.mark.parametrize(
    "schema, expected",
    [
        (
            {"type": "strin"},
            "Tool \"f\" has an invalid JSON Schema, so its arguments were not checked: 'strin' is not valid under any of the given schemas.",
        ),
        (
            {"properties": {"a": {"pattern": "("}}},
            "Tool \"f\" has an invalid JSON Schema, so its arguments were not checked: '(' is not a 'regex'.",
        ),
    ],
    ids=["bad_type", "bad_pattern"],
)
def test_a_broken_schema_is_reported_not_raised(schema, expected):
    assert validate(ToolCall("f", {"a": "x"}), {"f": schema}) == [expected]


@pytest.mark.parametrize("ref", ["#/$defs/missing", "https://example.com/never-fetched.json"])
def test_an_unresolvable_ref_is_reported_not_raised(ref):
    (message,) = validate(ToolCall("f", {"a": "x"}), {"f": {"$ref": ref}})
    # the reason after the colon is jsonschema's own wording, which varies by version
    assert message.startswith('Tool "f" has a JSON Schema that could not be applied, so its arguments were not checked: ')


def test_schema_draft_is_taken_from_dollar_schema():
    # draft-04's boolean exclusiveMinimum: only valid, and only enforced, under draft-04.
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 1, "exclusiveMinimum": True}},
    }
    assert validate(ToolCall("f", {"n": 1}), {"f": schema}) == [
        'Arguments for "f" are invalid: n: 1 is less than or equal to the minimum of 1.'
    ]


def test_format_is_an_annotation_not_checked():
    schema = {"type": "object", "properties": {"d": {"type": "string", "format": "date"}}}
    assert validate(ToolCall("f", {"d": "next tuesday"}), {"f": schema}) == []


def test_without_jsonschema_nothing_is_checked(monkeypatch):
    # sys.modules[name] = None makes `import name` raise ImportError.
    for name in [m for m in sys.modules if m == "jsonschema" or m.startswith("jsonschema.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    assert validate(ToolCall("add_to_cart", {}), TOOLS) == []


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)
schema_keywords = st.sampled_from(
    ["type", "properties", "required", "items", "enum", "const", "anyOf", "minimum", "pattern", "$ref", "additionalProperties", "format"]
)


@settings(max_examples=300, deadline=None)
@given(
    schema=st.dictionaries(schema_keywords, json_values, max_size=4),
    arguments=json_values,
)
def test_never_raises_and_says_at_most_one_thing(schema, arguments):
    messages = validate(ToolCall("f", arguments if isinstance(arguments, dict) else {"v": arguments}), {"f": schema})
    assert isinstance(messages, list) and len(messages) <= 1
    assert all(isinstance(m, str) and m.endswith(".") and '"f"' in m for m in messages)


def test_parse_validate_turns_invalid_calls_into_errors():
    import toolgram

    tools = [{"type": "function", "function": {"name": "add_to_cart", "parameters": {
        "type": "object", "properties": {"qty": {"type": "integer"}}, "required": ["qty"]}}}]
    raw = '<tool_call>{"name": "add_to_cart", "arguments": {}}</tool_call>'
    plain = toolgram.parse(raw, tools)
    assert [c.name for c in plain.calls] == ["add_to_cart"] and plain.errors == []
    checked = toolgram.parse(raw, tools, validate=True)
    assert checked.calls == []
    assert checked.errors == ["Arguments for \"add_to_cart\" are invalid: 'qty' is a required property."]
    ok = toolgram.parse(raw.replace("{}", '{"qty": 2}'), tools, validate=True)
    assert [c.arguments for c in ok.calls] == [{"qty": 2}] and ok.errors == []
