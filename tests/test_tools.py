"""normalize_tools: every accepted shape of tool definitions, reduced to the same ToolSet."""

from __future__ import annotations

import pytest

import toolgram
from toolgram._tools.tools import Tool, ToolSet, normalize_tools

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["city"],
}
CART = {
    "type": "object",
    "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
    "required": ["sku", "qty"],
}

# (id, tools=, expected [(name, description, parameters, kind, group)])
SHAPES = [
    (
        "openai_chat_list",
        [
            {"type": "function", "function": {"name": "get_weather", "description": "Weather now", "parameters": WEATHER}},
            {"type": "function", "function": {"name": "add_to_cart", "parameters": CART}},
        ],
        [("get_weather", "Weather now", WEATHER, "tool", ""), ("add_to_cart", "", CART, "tool", "")],
    ),
    (
        "openai_single_definition",
        {"type": "function", "function": {"name": "get_weather", "description": "Weather now", "parameters": WEATHER}},
        [("get_weather", "Weather now", WEATHER, "tool", "")],
    ),
    (
        "openai_chat_without_type",  # (the "type" is often left out; the nesting says enough)
        [{"function": {"name": "get_weather", "description": "Weather now", "parameters": WEATHER}}],
        [("get_weather", "Weather now", WEATHER, "tool", "")],
    ),
    (
        "openai_responses_flat",
        [{"type": "function", "name": "get_weather", "description": "Weather now", "parameters": WEATHER}],
        [("get_weather", "Weather now", WEATHER, "tool", "")],
    ),
    (
        "openai_legacy_functions_body",
        {"functions": [{"name": "add_to_cart", "parameters": CART}]},
        [("add_to_cart", "", CART, "tool", "")],
    ),
    (
        "mcp_input_schema",
        [{"name": "add_to_cart", "description": "Put an item in the cart", "inputSchema": CART}],
        [("add_to_cart", "Put an item in the cart", CART, "tool", "")],
    ),
    (
        "mcp_tools_list_result_with_cursor",
        {"tools": [{"name": "add_to_cart", "inputSchema": CART}], "nextCursor": "abc"},
        [("add_to_cart", "", CART, "tool", "")],
    ),
    (
        "anthropic_input_schema",
        [{"name": "get_weather", "description": "Weather now", "input_schema": WEATHER}],
        [("get_weather", "Weather now", WEATHER, "tool", "")],
    ),
    (
        "gemini_function_declarations",
        [{"function_declarations": [{"name": "get_weather", "parameters": WEATHER}]}],
        [("get_weather", "", WEATHER, "tool", "")],
    ),
    (
        "mfcs_packet_two_groups",
        {
            "weather": {"description": "Weather tools", "tool_list": [{"name": "get_weather", "description": "Weather now", "parameters": WEATHER, "returns": {"type": "object"}}]},
            "shop": {"description": "Shop tools", "tool_list": [{"name": "add_to_cart", "parameters": CART}]},
        },
        [("get_weather", "Weather now", WEATHER, "tool", "weather"), ("add_to_cart", "", CART, "tool", "shop")],
    ),
    (
        "mfcs_bare_group",
        {"description": "Shop tools", "tool_list": [{"name": "add_to_cart", "parameters": CART}]},
        [("add_to_cart", "", CART, "tool", "")],
    ),
    (
        "name_to_schema",
        {"get_weather": WEATHER, "add_to_cart": CART},
        [("get_weather", "", WEATHER, "tool", ""), ("add_to_cart", "", CART, "tool", "")],
    ),
    (
        "name_to_definition_without_name",
        {"get_weather": {"description": "Weather now", "parameters": WEATHER}},
        [("get_weather", "Weather now", WEATHER, "tool", "")],
    ),
    (
        "name_to_definition_own_name_wins",
        {"weather": {"name": "get_weather", "inputSchema": WEATHER}},
        [("get_weather", "", WEATHER, "tool", "")],
    ),
    (
        "name_to_description_or_nothing",
        {"ping": "Check the server is up", "now": None, "anything": True},
        [("ping", "Check the server is up", None, "tool", ""), ("now", "", None, "tool", ""), ("anything", "", None, "tool", "")],
    ),
    (
        "tool_named_name_with_schema",
        {"name": {"type": "object"}},
        [("name", "", {"type": "object"}, "tool", "")],
    ),
    ("list_of_names", ["get_weather", "add_to_cart"], [("get_weather", "", None, "tool", ""), ("add_to_cart", "", None, "tool", "")]),
    ("single_name", "get_weather", [("get_weather", "", None, "tool", "")]),
    ("single_tool_object", Tool("get_weather", parameters=WEATHER), [("get_weather", "", WEATHER, "tool", "")]),
    (
        "mixed_list",
        ["ping", {"name": "add_to_cart", "inputSchema": CART}, {"get_weather": WEATHER}, Tool("recall", kind="memory")],
        [("ping", "", None, "tool", ""), ("add_to_cart", "", CART, "tool", ""), ("get_weather", "", WEATHER, "tool", ""), ("recall", "", None, "memory", "")],
    ),
    (
        "kind_named_by_definition",
        [{"name": "researcher", "kind": "agent", "parameters": WEATHER}, {"type": "function", "kind": "memory", "function": {"name": "remember"}}],
        [("researcher", "", WEATHER, "agent", ""), ("remember", "", None, "memory", "")],
    ),
    (
        "first_definition_of_a_name_wins",
        [{"name": "get_weather", "parameters": WEATHER}, {"name": "get_weather", "parameters": CART}],
        [("get_weather", "", WEATHER, "tool", "")],
    ),
    (
        "non_mapping_schema_is_no_schema",
        [{"name": "get_weather", "parameters": "city: str"}],
        [("get_weather", "", None, "tool", "")],
    ),
    ("empty_list", [], []),
    ("empty_mapping", {}, []),
]


@pytest.mark.parametrize("tools, expected", [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_shapes(tools, expected):
    toolset = normalize_tools(tools)
    got = [(t.name, t.description, t.parameters, t.kind, t.group) for t in toolset.tools]
    assert got == expected
    assert toolset.names == tuple(e[0] for e in expected)
    for name, _, schema, _, _ in expected:
        assert name in toolset
        assert toolset.schema(name) == schema
        assert toolset.get(name).name == name


# Entries that name no tool: each raises TypeError showing it (`tools` is configuration;
# skipped, a tool the author meant would make its calls "Unknown tool").
NAMELESS = {
    "a number": ([42, "ok"], "42 (int) is not a tool name or definition"),
    "None in a list": ([None, "ok"], "None (NoneType) is not a tool name or definition"),
    "an empty name": (["", "ok"], "an empty tool name"),
    "a definition that lost its name": (
        [{"description": "lost its name", "parameters": CART}, "ok"],
        "a tool definition without a name: {'description': 'lost its name', 'parameters': ",
    ),
    "an empty name in a definition": ([{"name": ""}, "ok"], "a tool definition without a name: {'name': ''}"),
    "an OpenAI definition without its function": (
        [{"type": "function"}],
        "a tool definition without a name: {'type': 'function'}",
    ),
    "an OpenAI function without a name": (
        [{"type": "function", "function": {"description": "x"}}],
        "a tool definition without a name: {'type': 'function', 'function': {'description': 'x'}}",
    ),
    "a name mapped to a number": ([{"nope": 1}], "'nope': 1 is no JSON Schema, description, definition or None/True"),
    "an MFCS group listing a number": ({"g": {"tool_list": [3]}}, "group 'g' lists 3, not a tool definition or name"),
}


@pytest.mark.parametrize("case", list(NAMELESS), ids=list(NAMELESS))
def test_an_entry_that_names_no_tool_is_a_type_error(case: str) -> None:
    tools, message = NAMELESS[case]
    with pytest.raises(TypeError) as info:
        normalize_tools(tools)
    assert str(info.value).startswith("tools: " + message), str(info.value)
    with pytest.raises(TypeError):  # (parse reads tools so)
        toolgram.parse('<tool_call>{"name": "ok", "arguments": {}}</tool_call>', tools)


def test_none_means_any_name():
    assert normalize_tools(None) is None


def test_a_toolset_is_returned_as_is():
    toolset = normalize_tools(["a"])
    assert normalize_tools(toolset) is toolset


def test_kind_default_applies_to_untagged_definitions_only():
    toolset = normalize_tools([{"name": "plain"}, {"name": "tagged", "kind": "memory"}, Tool("obj")], kind="agent")
    assert [(t.name, t.kind) for t in toolset] == [("plain", "agent"), ("tagged", "memory"), ("obj", "tool")]


def test_unknown_name_and_schema_lookup():
    toolset = normalize_tools({"get_weather": WEATHER})
    assert "nope" not in toolset
    assert toolset.schema("nope") is None
    assert toolset.get("nope") is None


def test_empty_toolset_is_not_none():
    # An empty list means "no tool may be called", which the parser must tell from None.
    assert normalize_tools([]) is not None
    assert normalize_tools([]).names == ()


def test_toolset_built_from_tools_only_indexes_them():
    toolset = ToolSet((Tool("a"), Tool("b"), Tool("a", "second")))
    assert toolset.names == ("a", "b")
    assert "b" in toolset
    assert toolset.get("a").description == ""


def test_mfcs_returns_kept_for_prompts():
    toolset = normalize_tools({"g": {"description": "", "tool_list": [{"name": "f", "parameters": WEATHER, "returns": {"type": "string"}}]}})
    assert toolset.get("f").returns == {"type": "string"}
    assert toolset.get("f").to_dict() == {"name": "f", "parameters": WEATHER, "returns": {"type": "string"}}


@pytest.mark.parametrize(
    "tool, plain, openai",
    [
        (
            Tool("get_weather", "Weather now", WEATHER),
            {"name": "get_weather", "description": "Weather now", "parameters": WEATHER},
            {"type": "function", "function": {"name": "get_weather", "description": "Weather now", "parameters": WEATHER}},
        ),
        # Unknown parameters are left out, not rendered as "takes no arguments".
        (Tool("ping"), {"name": "ping"}, {"type": "function", "function": {"name": "ping"}}),
        (
            Tool("f", parameters=WEATHER, returns={"type": "string"}),
            {"name": "f", "parameters": WEATHER, "returns": {"type": "string"}},
            {"type": "function", "function": {"name": "f", "parameters": WEATHER}},
        ),
    ],
)
def test_tool_export_shapes(tool, plain, openai):
    assert tool.to_dict() == plain
    assert tool.to_openai() == openai


@pytest.mark.parametrize("shape_id", [s[0] for s in SHAPES if s[2]])
def test_exported_definitions_normalize_back_to_the_same_tools(shape_id):
    tools = next(s[1] for s in SHAPES if s[0] == shape_id)
    toolset = normalize_tools(tools)
    for export in (lambda t: t.to_openai(), lambda t: t.to_dict()):
        again = normalize_tools([export(t) for t in toolset])
        assert [(t.name, t.description, t.parameters) for t in again] == [
            (t.name, t.description, t.parameters) for t in toolset
        ]


def test_a_set_of_names_is_listed_in_sorted_order():
    import toolgram

    names = {"search_products", "open_product", "add_to_cart"}
    assert toolgram.normalize_tools(names).names == ("add_to_cart", "open_product", "search_products")
    result = toolgram.parse('<tool_call>{"name": "x", "arguments": {}}</tool_call>', names)
    assert result.errors == ['Unknown tool "x". Available now: add_to_cart, open_product, search_products.']


def test_tools_and_toolsets_made_without_their_init_are_the_constructors_own() -> None:
    # (normalize_tools makes them without the frozen dataclasses' __init__: every field,
    # no other, frozen still.)
    import dataclasses

    from toolgram._tools.tools import _tool

    values = {
        "name": "a", "description": "d", "parameters": {"type": "object"}, "kind": "agent", "group": "g",
        "returns": {"type": "string"},
    }  # fmt: skip
    assert [f.name for f in dataclasses.fields(Tool)] == list(values)
    made, built = _tool(*values.values()), Tool(**values)
    assert made == built and vars(made) == vars(built) and repr(made) == repr(built)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.name = "b"  # type: ignore[misc]
    assert vars(_tool("x")) == vars(Tool("x"))
    shapes = [["a", "b"], {"a": {"type": "object"}, "b": "what b does", "c": None}, {"g": {"tool_list": ["a", {"name": "b"}]}}]
    for shape in shapes:
        toolset = normalize_tools(shape)
        built_set = ToolSet(tuple(Tool(**vars(t)) for t in toolset))
        assert [f.name for f in dataclasses.fields(ToolSet)] == list(vars(toolset))
        assert toolset == built_set and repr(toolset) == repr(built_set) and vars(toolset) == vars(built_set)
        with pytest.raises(dataclasses.FrozenInstanceError):
            toolset.tools = ()  # type: ignore[misc]
