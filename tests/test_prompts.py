"""render_prompt / example_call / register_prompt / render_results, and the round trip
prompt -> example -> parse() -> the call the example shows."""

from __future__ import annotations

import copy
import dataclasses
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolgram
from toolgram._result.model import ToolCall
from toolgram._tools.prompts import (
    PLACEHOLDERS,
    PROMPT_FORMATS,
    _Call,
    _formats,
    _kinds,
    example_call,
    register_prompt,
    render_prompt,
    render_results,
)
from toolgram._tools.tools import Tool, normalize_tools

EVENT = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "date": {"type": "string", "format": "date", "description": "YYYY-MM-DD"},
        "attendees": {"type": "array", "items": {"type": "string"}},
        "all_day": {"type": "boolean", "default": False},
        "priority": {"type": "integer", "minimum": 1},
        "notes": {"type": "string"},
    },
    "required": ["title", "date", "attendees", "all_day", "priority"],
}
WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["city"],
}
TOOLS = [
    {"type": "function", "function": {"name": "create_event", "description": "Create a calendar event", "parameters": EVENT}},
    {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather for a city", "parameters": WEATHER}},
]
EXAMPLE_ARGS = {"title": "example", "date": "2024-05-01", "attendees": ["example"], "all_day": False, "priority": 1}
ARGS_JSON = '{"title": "example", "date": "2024-05-01", "attendees": ["example"], "all_day": false, "priority": 1}'

FORMATS = ("hermes", "lfm2", "llama3_json", "mistral", "pythonic", "fenced_json", "json_reply", "mfcs")

# The exact example each prompt shows for TOOLS.
EXAMPLES = {
    "hermes": f'<tool_call>\n{{"name": "create_event", "arguments": {ARGS_JSON}}}\n</tool_call>',
    "lfm2": '<|tool_call_start|>[create_event(title="example", date="2024-05-01", attendees=["example"], all_day=False, priority=1)]<|tool_call_end|>',
    "llama3_json": f'{{"name": "create_event", "parameters": {ARGS_JSON}}}',
    "mistral": f"[TOOL_CALLS]create_event[ARGS]{ARGS_JSON}",
    "pythonic": '[create_event(title="example", date="2024-05-01", attendees=["example"], all_day=False, priority=1)]',
    "fenced_json": f'```json\n{{"name": "create_event", "arguments": {ARGS_JSON}}}\n```',
    "json_reply": f'{{"type": "tool_call", "name": "create_event", "arguments": {ARGS_JSON}}}',
    "mfcs": (
        "<mfcs_tool>\n<instructions>Create a calendar event</instructions>\n<call_id>1</call_id>\n"
        "<name>create_event</name>\n<parameters>\n"
        + json.dumps(EXAMPLE_ARGS, indent=2)
        + "\n</parameters>\n</mfcs_tool>"
    ),
}

# How each prompt lists the tools: (text before, JSON after it, text after).
TOOL_LISTS = {
    "hermes": ("<tools>\n", "lines_openai", "\n</tools>"),
    "lfm2": ("List of tools: ", "list_plain", "\n"),
    "llama3_json": ("Do not use variables.\n\n", "lines_openai", "\n\nFor example:"),
    "mistral": ("[AVAILABLE_TOOLS]", "list_openai", "[/AVAILABLE_TOOLS]"),
    "pythonic": ("Here is the list of functions in JSON format:\n", "list_plain", None),
    "fenced_json": ("You can use these tools:\n", "list_plain", "\n\n"),
    "json_reply": ("Tools:\n", "list_plain", "\n\n"),
    "mfcs": ("<tool_list>\n", "list_plain", "\n</tool_list>"),
}


@pytest.fixture
def registry():
    """Lets a test register prompts, then puts the registry back as it was."""
    saved_formats, saved_kinds = copy.deepcopy(_formats), dict(_kinds)
    yield
    _formats.clear()
    _formats.update(saved_formats)
    _kinds.clear()
    _kinds.update(saved_kinds)


def test_prompt_formats_are_the_parser_names():
    assert set(PROMPT_FORMATS) == set(FORMATS)
    assert PROMPT_FORMATS["mfcs"] == ("tool", "agent", "memory")
    assert all(PROMPT_FORMATS[f] == ("tool",) for f in FORMATS if f != "mfcs")
    with pytest.raises(TypeError):
        PROMPT_FORMATS["x"] = ("tool",)  # read-only view


@pytest.mark.parametrize("fmt", FORMATS)
def test_example_call(fmt):
    assert example_call(TOOLS, fmt) == EXAMPLES[fmt]


@pytest.mark.parametrize("fmt", FORMATS)
def test_prompt_shows_its_example_once(fmt):
    prompt = render_prompt(TOOLS, fmt)
    assert prompt.count(EXAMPLES[fmt]) == 1
    assert "$" not in prompt  # every placeholder was filled
    assert not prompt.endswith("\n")


@pytest.mark.parametrize("fmt", FORMATS)
def test_prompt_lists_every_tool_as_json(fmt):
    prompt = render_prompt(TOOLS, fmt)
    before, style, after = TOOL_LISTS[fmt]
    start = prompt.rindex(before) + len(before)
    end = prompt.index(after, start) if after else len(prompt)
    text = prompt[start:end]
    toolset = normalize_tools(TOOLS)
    if style == "lines_openai":
        assert [json.loads(line) for line in text.split("\n")] == [t.to_openai() for t in toolset]
    elif style == "list_openai":
        assert json.loads(text) == [t.to_openai() for t in toolset]
    else:
        assert json.loads(text) == [t.to_dict() for t in toolset]


def test_hermes_prompt_matches_the_qwen_template_shape():
    prompt = render_prompt(TOOLS, "hermes")
    assert prompt.startswith("# Tools\n\nYou may call one or more functions to assist with the user query.")
    assert "within <tool_call></tool_call> XML tags:\n<tool_call>\n" in prompt


@pytest.mark.parametrize(
    "kind, calling, block, id_tag, listing, result",
    [
        ("tool", "tool_calling", "mfcs_tool", "call_id", "tool_list", "tool_result"),
        ("agent", "agent_calling", "mfcs_agent", "agent_id", "agent_list", "agent_result"),
        ("memory", "memory_calling", "mfcs_memory", "memory_id", "memory_list", "memory_result"),
    ],
)
def test_mfcs_prompt_layout(kind, calling, block, id_tag, listing, result):
    prompt = render_prompt(TOOLS, "mfcs", kind=kind)
    parts = [
        f"<{calling}>\n",
        "===Interface Usage===",
        f"## {block}",
        f"<{block}>\n<instructions>Create a calendar event</instructions>\n<{id_tag}>1</{id_tag}>\n<name>create_event</name>",
        "===Restrictions===",
        f"<{listing}>\n[",
        f"]\n</{listing}>",
        f"</{calling}>",
    ]
    positions = [prompt.index(p) for p in parts]
    assert positions == sorted(positions)
    assert prompt.startswith(f"<{calling}>") and prompt.endswith(f"</{calling}>")
    assert f"<{result}>" in prompt  # tells the model where results will come back
    # The rules name the block without brackets: a model that parrots them writes no
    # stray call marker. The example is the one block in the prompt.
    assert prompt.count(f"<{block}>") == 1
    assert "[object Object]" not in prompt


def test_mfcs_lists_only_the_tools_of_the_kind():
    toolset = normalize_tools([
        Tool("search", "Search the web", WEATHER),
        Tool("researcher", "Researches a topic", WEATHER, kind="agent"),
        Tool("remember", "Store a fact", WEATHER, kind="memory"),
    ])
    for kind, name in (("tool", "search"), ("agent", "researcher"), ("memory", "remember")):
        prompt = render_prompt(toolset, "mfcs", kind=kind)
        listed = json.loads(prompt.rsplit(f"<{kind}_list>\n", 1)[1].split(f"\n</{kind}_list>")[0])
        assert [t["name"] for t in listed] == [name]
        assert f"<name>{name}</name>" in prompt
    # single-kind formats list every tool
    assert all(n in render_prompt(toolset, "hermes") for n in ("search", "researcher", "remember"))


def test_plain_definitions_take_the_kind_asked_for():
    prompt = render_prompt(TOOLS, "mfcs", kind="agent")
    assert "<mfcs_agent>" in prompt and '"name": "get_weather"' in prompt


def test_mfcs_prompt_from_an_mfcs_packet_keeps_returns():
    packet = {"user": {"description": "User tools", "tool_list": [
        {"name": "getProductList", "description": "Get product list", "parameters": {
            "type": "object",
            "properties": {"page": {"type": "number", "description": "Page number"}, "limit": {"type": "number"}},
            "required": ["page", "limit"],
        }, "returns": {"type": "array", "description": "Product list"}},
    ]}}
    prompt = render_prompt(packet, "mfcs")
    assert '"returns": {"type": "array", "description": "Product list"}' in prompt
    assert '"page": 1.5,\n  "limit": 1.5' in prompt


def test_explicit_example():
    call = ToolCall("get_weather", {"city": "Paris"}, id="7", instructions="Weather in Paris")
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in render_prompt(TOOLS, "hermes", example=call)
    mfcs = render_prompt(TOOLS, "mfcs", example=call)
    assert "<instructions>Weather in Paris</instructions>\n<call_id>7</call_id>\n<name>get_weather</name>" in mfcs
    mapping = {"name": "get_weather", "arguments": {"city": "Oslo"}}
    assert '[get_weather(city="Oslo")]' in render_prompt(TOOLS, "pythonic", example=mapping)


@pytest.mark.parametrize(
    "tools, fmt, expected",
    [
        (["ping"], "pythonic", "[ping()]"),  # a name without a schema: no arguments to show
        ([], "hermes", '<tool_call>\n{"name": "tool_name", "arguments": {"argument": "value"}}\n</tool_call>'),
        (None, "mistral", '[TOOL_CALLS]tool_name[ARGS]{"argument": "value"}'),
        ({"f": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}}, "llama3_json", '{"name": "f", "parameters": {"a": "example"}}'),
    ],
    ids=["name_only", "no_tools", "tools_none", "nothing_required_shows_one_argument"],
)
def test_example_edge_cases(tools, fmt, expected):
    assert example_call(tools, fmt) == expected


# (id, property schema, sample value) for a tool with one required property "p"
SAMPLES = [
    ("string", {"type": "string"}, "example"),
    ("const", {"const": "fixed"}, "fixed"),
    ("examples_first", {"type": "string", "examples": ["Rome", "Oslo"], "default": "x"}, "Rome"),
    ("enum_first", {"type": "string", "enum": ["celsius", "fahrenheit"]}, "celsius"),
    ("default", {"type": "integer", "default": 7}, 7),
    ("date_time", {"type": "string", "format": "date-time"}, "2024-05-01T09:30:00Z"),
    ("email", {"type": "string", "format": "email"}, "user@example.com"),
    ("uri", {"type": "string", "format": "uri"}, "https://example.com"),
    ("integer", {"type": "integer"}, 1),
    ("integer_minimum", {"type": "integer", "minimum": 3}, 3),
    ("exclusive_minimum", {"type": "integer", "exclusiveMinimum": 3}, 4),
    ("maximum_below_one", {"type": "integer", "maximum": 0}, 0),
    ("number", {"type": "number"}, 1.5),
    ("boolean", {"type": "boolean"}, True),
    ("null", {"type": "null"}, None),
    ("nullable_string", {"type": ["null", "string"]}, "example"),
    ("array", {"type": "array", "items": {"type": "integer"}}, [1]),
    ("array_without_items", {"type": "array"}, []),
    ("object", {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "string"}}, "required": ["a"]}, {"a": True}),
    ("untyped_object", {"properties": {"a": {"type": "string"}}}, {"a": "example"}),
    ("anyof_skips_null", {"anyOf": [{"type": "null"}, {"type": "integer"}]}, 1),
    ("ref_not_followed", {"$ref": "#/$defs/x"}, "example"),
]


@pytest.mark.parametrize("prop, value", [s[1:] for s in SAMPLES], ids=[s[0] for s in SAMPLES])
def test_sample_arguments(prop, value):
    tools = {"f": {"type": "object", "properties": {"p": prop}, "required": ["p"]}}
    assert json.loads(example_call(tools, "json_reply"))["arguments"] == {"p": value}


def test_samples_satisfy_their_schema():
    pytest.importorskip("jsonschema")
    from toolgram._tools.validate import validate

    for _, prop, _ in SAMPLES:
        if "$ref" in prop:
            continue
        tools = {"f": {"type": "object", "properties": {"p": prop}, "required": ["p"]}}
        args = json.loads(example_call(tools, "json_reply"))["arguments"]
        assert validate(ToolCall("f", args), tools) == [], prop


@pytest.mark.parametrize(
    "call, kwargs, message",
    [
        (render_prompt, {"format": "nope"}, 'Unknown prompt format "nope"'),
        (render_prompt, {"format": "hermes", "kind": "agent"}, 'The "hermes" format has no agent prompt'),
        (example_call, {"format": "nope"}, 'Unknown prompt format "nope"'),
    ],
)
def test_bad_format_or_kind(call, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call(TOOLS, **kwargs)


# --- register_prompt --------------------------------------------------------------------


def test_register_a_new_wording_for_a_known_syntax(registry):
    register_prompt("terse", "Tools: $tool_names\nCall like this: $example", example="hermes")
    assert PROMPT_FORMATS["terse"] == ("tool",)
    assert render_prompt(TOOLS, "terse") == "Tools: create_event, get_weather\nCall like this: " + EXAMPLES["hermes"]
    assert example_call(TOOLS, "terse") == EXAMPLES["hermes"]


def test_register_with_a_syntax_function(registry):
    register_prompt("slash", "$tools_openai\nUse: $example", example=lambda name, args: f"/{name} {json.dumps(args)}")
    prompt = render_prompt(["ping"], "slash")
    assert prompt == '[{"type": "function", "function": {"name": "ping"}}]\nUse: /ping {}'


def test_replace_a_builtin_wording_keeps_its_syntax(registry):
    register_prompt("hermes", "Call tools like $example. Tools:\n$tools_lines")
    assert render_prompt(["ping"], "hermes") == (
        'Call tools like <tool_call>\n{"name": "ping", "arguments": {}}\n</tool_call>. Tools:\n'
        '{"type": "function", "function": {"name": "ping"}}'
    )


def test_register_an_mfcs_kind(registry):
    register_prompt("mfcs", "<agents>$tools</agents>\n$example", kind="agent")
    assert render_prompt(["a"], "mfcs", kind="agent").startswith('<agents>[{"name": "a"}]</agents>\n<mfcs_agent>')
    assert render_prompt(["a"], "mfcs").startswith("<tool_calling>")  # the other kinds are untouched


def test_dollar_signs_and_literal_text_survive(registry):
    register_prompt("priced", "Costs $$5 or $5. $example", example="pythonic")
    assert render_prompt(["ping"], "priced") == "Costs $5 or $5. [ping()]"


@pytest.mark.parametrize(
    "args, error",
    [
        (("x", "Tools: $tool_list"), "Unknown placeholder(s) $tool_list"),
        (("x", "Call: ${exmple}"), "Unknown placeholder(s) $exmple"),
        (("brand_new", "Call: $example"), "say which call syntax"),
        (("x", "t", {"kind": "robot"}), "kind must be one of"),
        (("", "t"), "non-empty"),
        (("x", "t", {"example": "nope"}), 'Unknown prompt format "nope"'),
    ],
)
def test_register_rejects(registry, args, error):
    name, template, *rest = args
    with pytest.raises(ValueError, match=re.escape(error)):
        register_prompt(name, template, **(rest[0] if rest else {}))
    assert "x" not in PROMPT_FORMATS and "brand_new" not in PROMPT_FORMATS


def test_register_without_example_needs_no_syntax(registry):
    register_prompt("listing", "Tools: $tools")
    assert render_prompt(["a"], "listing") == 'Tools: [{"name": "a"}]'
    assert example_call(["a"], "listing") == ""


def test_placeholders_are_documented():
    from toolgram._tools import prompts as _prompts

    for name in PLACEHOLDERS:
        assert f"${name}" in _prompts.__doc__
        assert f"${name}" in register_prompt.__doc__


# --- render_results ---------------------------------------------------------------------


@dataclasses.dataclass
class Forecast:
    city: str
    temp: float


RESULTS = [
    (
        "tool_results_from_parsed_calls",
        [(ToolCall("get_weather", {"city": "Paris"}, id="1"), {"temp": 21, "sky": "clear"}),
         (ToolCall("get_weather", {"city": "Oslo"}, id="2"), "rain")],
        "mfcs",
        '<tool_result>\n{call_id: 1, name: get_weather} {"temp": 21, "sky": "clear"}\n'
        '{call_id: 2, name: get_weather} "rain"\n</tool_result>',
    ),
    (
        "every_kind_in_its_own_block",
        [(ToolCall("remember", {}, id="1", kind="memory"), True),
         (ToolCall("researcher", {}, id="1", kind="agent"), ["a", "b"]),
         (ToolCall("search", {}, id="3"), None)],
        "mfcs",
        "<tool_result>\n{call_id: 3, name: search} null\n</tool_result>\n"
        '<agent_result>\n{agent_id: 1, name: researcher} ["a", "b"]\n</agent_result>\n'
        "<memory_result>\n{memory_id: 1, name: remember} true\n</memory_result>",
    ),
    (
        "mappings_and_missing_ids",
        [{"name": "search", "result": {"hits": 2}}, {"name": "search", "content": "none"},
         {"agent_id": 9, "name": "helper", "result": "ok"}],
        "mfcs",
        '<tool_result>\n{call_id: 1, name: search} {"hits": 2}\n{call_id: 2, name: search} "none"\n</tool_result>\n'
        '<agent_result>\n{agent_id: 9, name: helper} "ok"\n</agent_result>',
    ),
    (
        "objects_become_json_not_reprs",
        [("forecast", Forecast("Paris", 21.5)), ("tags", {"b", "a"}), ("blob", b"bytes"), ("when", object)],
        "mfcs",
        '<tool_result>\n{call_id: 1, name: forecast} {"city": "Paris", "temp": 21.5}\n'
        '{call_id: 2, name: tags} ["a", "b"]\n{call_id: 3, name: blob} "bytes"\n'
        "{call_id: 4, name: when} \"<class 'object'>\"\n</tool_result>",
    ),
    (
        "single_mapping",
        {"call_id": "4", "name": "search", "result": "é"},
        "mfcs",
        '<tool_result>\n{call_id: 4, name: search} "é"\n</tool_result>',
    ),
    (
        "hermes_tool_response",
        [(ToolCall("get_weather", {"city": "Paris"}), {"temp": 21}), ("get_time", "09:30")],
        "hermes",
        '<tool_response>\n{"name": "get_weather", "content": {"temp": 21}}\n</tool_response>\n'
        '<tool_response>\n{"name": "get_time", "content": "09:30"}\n</tool_response>',
    ),
]


@pytest.mark.parametrize("results, fmt, expected", [r[1:] for r in RESULTS], ids=[r[0] for r in RESULTS])
def test_render_results(results, fmt, expected):
    assert render_results(results, fmt) == expected


@pytest.mark.parametrize("results", [[], None, ()])
def test_no_results_is_none(results):
    assert render_results(results) is None


def test_circular_result_does_not_raise():
    loop: list = []
    loop.append(loop)
    assert render_results([("f", loop)]).startswith('<tool_result>\n{call_id: 1, name: f} "[[...]]"')


def test_results_for_a_format_without_result_syntax():
    with pytest.raises(ValueError, match="No result block for format"):
        render_results([("f", 1)], "pythonic")


# --- round trips through the parser ------------------------------------------------------
# The example call each prompt shows must parse back, with our parser, to that call.


def _parse():
    return toolgram.parse


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_prompt_example(fmt):
    parse = _parse()
    example = example_call(TOOLS, fmt)
    assert example in render_prompt(TOOLS, fmt)
    for formats in ([fmt], None):  # the format alone, and among all formats
        result = parse(example, TOOLS, formats=formats)
        assert result.errors == []
        assert [(c.name, c.arguments) for c in result.calls] == [("create_event", EXAMPLE_ARGS)]
        assert result.text == ""
        # What the prompt teaches must be read as that format, with nothing to repair.
        assert (result.calls[0].format, result.calls[0].repairs) == (fmt, ())


@pytest.mark.parametrize("kind", ["agent", "memory"])
def test_round_trip_mfcs_kinds(kind):
    parse = _parse()
    example = example_call(TOOLS, "mfcs", kind=kind)
    result = parse(example, normalize_tools(TOOLS, kind=kind), formats=["mfcs"])
    assert [(c.name, c.arguments, c.kind, c.id) for c in result.calls] == [("create_event", EXAMPLE_ARGS, kind, "1")]
    assert result.calls[0].instructions == "Create a calendar event"


_identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda s: s not in {"if", "in", "is", "or", "and", "not", "for", "def", "del", "as", "try", "with", "else", "none", "true", "false"}
)
_safe_text = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="<>`[]|\x00", exclude_categories=("Cs", "Cc")) | st.sampled_from(['"', "'", "\\", "\n", "é", "中"]), max_size=12)
_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(-1e6, 1e6, allow_nan=False).map(lambda f: round(f, 3)) | _safe_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_identifiers, inner, max_size=3),
    max_leaves=8,
)
_calls = st.lists(st.tuples(_identifiers, st.dictionaries(_identifiers, _values, max_size=3)), min_size=1, max_size=3)


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=_calls)
def test_round_trip_any_calls(fmt, calls):
    parse = _parse()
    if fmt == "json_reply":
        calls = calls[:1]  # one JSON value per reply
    text = _formats[fmt].calls([_Call(name, args) for name, args in calls])
    result = parse(text, [name for name, _ in calls], formats=[fmt])
    assert result.errors == []
    assert [(c.name, c.arguments) for c in result.calls] == [(n, a) for n, a in calls]
