"""ToolCall.to_openai() and ParseResult.to_openai_message(): OpenAI chat-completions shapes."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolgram
from toolgram._result.model import ParseResult, ToolCall

GENERATED_ID = re.compile(r"call_[0-9a-f]{24}\Z")


def test_call_with_a_model_id():
    call = ToolCall("get_weather", {"city": "Paris"}, id="000000001", format="mistral", span=(0, 40))
    assert call.to_openai() == {
        "id": "000000001",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }


def test_generated_id_is_deterministic():
    a = ToolCall("get_weather", {"city": "Paris", "unit": "celsius"}, span=(10, 80))
    b = ToolCall("get_weather", {"unit": "celsius", "city": "Paris"}, span=(10, 80))  # key order is not content
    assert GENERATED_ID.match(a.to_openai()["id"])
    assert a.to_openai()["id"] == b.to_openai()["id"]


@pytest.mark.parametrize(
    "other",
    [
        ToolCall("get_weather", {"city": "Paris"}, span=(100, 170)),  # same call, elsewhere in the reply
        ToolCall("get_time", {"city": "Paris"}, span=(10, 80)),
        ToolCall("get_weather", {"city": "Paris"}, kind="agent", span=(10, 80)),
    ],
    ids=["span", "name", "kind"],
)
def test_generated_id_changes_with(other):
    base = ToolCall("get_weather", {"city": "Paris"}, span=(10, 80))
    assert other.to_openai()["id"] != base.to_openai()["id"]


def test_what_a_stream_knows_late_does_not_change_the_id():
    # A stream gives a call its id once its name is read: its arguments and where it ends
    # come later, so they are not part of it.
    base = ToolCall("get_weather", {"city": "Paris"}, span=(10, 80))
    later = ToolCall("get_weather", {"city": "Rome", "unit": "C"}, span=(10, 95))
    assert later.to_openai()["id"] == base.to_openai()["id"]


def test_format_and_repairs_do_not_change_the_id():
    a = ToolCall("f", {"x": 1}, span=(0, 9), format="hermes")
    b = ToolCall("f", {"x": 1}, span=(0, 9), format="lfm2", repairs=("closed_tag",))
    assert a.to_openai()["id"] == b.to_openai()["id"]


@pytest.mark.parametrize(
    "arguments, text",
    [
        ({}, "{}"),
        ({"city": "Zürich"}, '{"city": "Zürich"}'),  # non-ASCII kept, as OpenAI sends it
        ({"n": 1.5, "ok": True, "none": None}, '{"n": 1.5, "ok": true, "none": null}'),
        ({"pair": (1, 2)}, '{"pair": [1, 2]}'),
        ({"x": float("nan"), "y": float("inf")}, '{"x": null, "y": null}'),  # NaN is not JSON
        ({"tags": {"b", "a"}}, '{"tags": ["a", "b"]}'),
        ({"obj": object}, '{"obj": "<class \'object\'>"}'),
    ],
    ids=["empty", "unicode", "literals", "tuple", "non_finite", "set", "unknown_object"],
)
def test_arguments_are_json_text(arguments, text):
    assert ToolCall("f", arguments).to_openai()["function"]["arguments"] == text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(arguments=st.dictionaries(st.text(), json_values, max_size=5), start=st.integers(0, 10_000))
def test_arguments_text_loads_back_and_ids_repeat(arguments, start):
    call = ToolCall("f", arguments, span=(start, start + 10))
    out = call.to_openai()
    assert json.loads(out["function"]["arguments"]) == arguments
    assert out["id"] == ToolCall("f", json.loads(json.dumps(arguments)), span=(start, start + 10)).to_openai()["id"]


# (id, ParseResult, expected message); None in an id slot means "a generated id"
MESSAGES = [
    ("prose_only", ParseResult(text="Hello."), {"role": "assistant", "content": "Hello."}),
    ("empty_reply", ParseResult(), {"role": "assistant", "content": None}),
    ("whitespace_is_no_content", ParseResult(text=" \n"), {"role": "assistant", "content": None}),
    (
        "calls_only",
        ParseResult(calls=[ToolCall("get_weather", {"city": "Paris"}, id="1")]),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}],
        },
    ),
    (
        "text_calls_and_reasoning",
        ParseResult(text="Checking.", calls=[ToolCall("get_weather", {"city": "Paris"}, id="a")], reasoning="The user wants weather."),
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}],
            "reasoning_content": "The user wants weather.",
        },
    ),
    ("errors_are_not_in_the_message", ParseResult(text="x", errors=['Unknown tool "y".']), {"role": "assistant", "content": "x"}),
]


@pytest.mark.parametrize("result, expected", [m[1:] for m in MESSAGES], ids=[m[0] for m in MESSAGES])
def test_message(result, expected):
    assert result.to_openai_message() == expected


def test_generated_ids_are_unique_within_a_message():
    # Two identical calls built by hand share span (0, 0): their ids would collide.
    same = ToolCall("ping", {})
    message = ParseResult(calls=[same, same, ToolCall("ping", {}, id="m1"), ToolCall("ping", {}, id="m1")]).to_openai_message()
    ids = [c["id"] for c in message["tool_calls"]]
    assert all(GENERATED_ID.match(i) for i in ids[:2])
    assert ids[0] == same.to_openai()["id"] and ids[1] != ids[0]
    assert ids[2:] == ["m1", "m1"]  # the model's own ids are kept verbatim: it refers back to them


def test_a_salted_message_keeps_its_ids_unique():
    # (toolgram.openai salts generated ids per response: the place still tells two calls at one place apart.)
    from toolgram._result.openai import result_to_openai_message

    same = ToolCall("ping", {})
    result = ParseResult(calls=[same, same])
    plain = [c["id"] for c in result.to_openai_message()["tool_calls"]]
    salted = [c["id"] for c in result_to_openai_message(result, salt="chatcmpl-9")["tool_calls"]]
    assert all(GENERATED_ID.match(i) for i in salted)
    assert len(set(salted)) == 2 and not set(salted) & set(plain)


def test_message_is_json_serializable_and_stable():
    result = ParseResult(text="t", calls=[ToolCall("f", {"a": [1, {"b": None}]}, span=(3, 30))], reasoning="r")
    assert json.loads(json.dumps(result.to_openai_message())) == result.to_openai_message()
    assert result.to_openai_message() == result.to_openai_message()


def test_from_a_parsed_reply():
    parse = toolgram.parse
    raw = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    first = parse(raw, ["get_weather"]).to_openai_message()
    assert first["role"] == "assistant"
    assert first["content"] == "Let me check."
    (entry,) = first["tool_calls"]
    assert GENERATED_ID.match(entry["id"])
    assert entry["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert parse(raw, ["get_weather"]).to_openai_message() == first  # same reply, same ids


@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from(["tool", "agent", "memory", "ü\"\\"]), st.text(max_size=5))
def test_a_generated_id_hashes_the_json_of_name_start_kind_and_salt(name, start, kind, salt):
    # id_for writes that JSON itself for str, int, str, str (not through json's encoder):
    # it must be what the encoder writes, or every generated id changes.
    import hashlib

    from toolgram._result.openai import id_for

    canonical = json.dumps([name, start, kind, salt], ensure_ascii=False)
    expected = "call_" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    assert id_for(name, start, kind, salt) == expected


def test_a_generated_id_of_a_subclassed_or_odd_value_is_the_encoders():
    # (bool is an int to isinstance, not to JSON: the general way writes it.)
    from toolgram._result.openai import id_for

    assert id_for("f", True) != id_for("f", 1)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _JSON, max_size=5))
def test_a_streams_arguments_are_what_json_dumps_writes(arguments):
    # StreamParser's ArgumentsDelta text: written by json's C encoder made once
    # (parser._DICT_JSON), not by a JSONEncoder each time; the same text either way.
    from toolgram._stream.parser import arguments_json

    assert arguments_json(arguments) == json.dumps(arguments, ensure_ascii=False)
