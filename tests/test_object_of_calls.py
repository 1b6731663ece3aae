"""xlam's object of calls (`{…, "tool_calls": […], …}` on a line of its own): its calls
are read whatever field comes first, the fields beside them by the documented rule
("thought", "reasoning", "reasoning_content": reasoning; "content", "text": prose;
"role": "assistant" nothing; any other an error naming it), and a field given twice
with two values is an error naming it. The object is decided once it is whole (the
builder's), so a stream agrees with parse() in any pieces."""

from __future__ import annotations

import json

import pytest

import toolgram

from test_stream import check, chunked

CALLS = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
LIST = json.dumps(CALLS)


def _object(*fields: str) -> str:
    return "{" + ", ".join(fields) + "}"


# (the fields other than "tool_calls", in order; where "tool_calls" goes; the text, the
# reasoning, the fields named by errors)
CASES = [
    (['"confidence": 0.9'], 1, "", "", ["confidence"]),
    (['"confidence": 0.9'], 0, "", "", ["confidence"]),
    (['"text": "hi"'], 1, "hi", "", []),
    (['"id": "m1"', '"role": "assistant"', '"content": "x"'], 3, "x", "", ["id"]),
    (['"role": "assistant"', '"text": "hi"'], 2, "hi", "", []),
    (['"score": [1, 2]', '"thought": "t"'], 2, "", "t", ["score"]),
    (['"thought": "t"', '"thought": "u"'], 2, "", "", ["thought"]),
    (['"content": "x"', '"content": "x"'], 2, "x", "", []),  # (one value twice: read once)
    (['"a": {"b": 1}', '"a": {"b": 2}', '"reasoning": "r"'], 3, "", "r", ["a"]),
]


@pytest.mark.parametrize(("fields", "at", "text", "reasoning", "named"), CASES)
@pytest.mark.parametrize("tools", [None, ["get_weather"]])
def test_the_calls_whatever_field_comes_first(fields, at, text, reasoning, named, tools) -> None:
    parts = [*fields]
    parts.insert(at, f'"tool_calls": {LIST}')
    raw = _object(*parts)
    result = toolgram.parse(raw, tools)
    assert [(c.name, c.arguments) for c in result.calls] == [("get_weather", {"city": "Paris"})]
    assert (result.text, result.reasoning) == (text, reasoning)
    assert len(result.errors) == len(named)
    for key, error in zip(named, result.errors):
        assert repr(key) in error or json.dumps(key) in error
    for size in (1, 3, 7):
        check(raw, chunked(raw, size), tools, timely=False)


def test_calls_given_twice_are_an_error_and_none_is_read() -> None:
    raw = _object(f'"tool_calls": {LIST}', '"tool_calls": [{"name": "delete_city", "arguments": {}}]')
    result = toolgram.parse(raw)
    assert result.calls == [] and result.text == ""
    assert result.errors == ['Couldn\'t read a tool call: in the object of calls, "tool_calls" is given twice ([…], then […]).']
    check(raw, chunked(raw, 2), timely=False)


@pytest.mark.parametrize(
    "raw",
    [
        'Like this:\n{"name": "get_weather", "arguments": {"city": "Paris"}}\nok',  # a call object on no marker: JSON shown
        'Example:\n{"a": 1, "b": [2]}\nThat is all.',
        '{"confidence": 0.9, "tool_calls": "none"}',
        '{"tool": {"tool_calls": []}}',
    ],
)
def test_an_object_with_no_list_of_calls_stays_prose(raw: str) -> None:
    result = toolgram.parse(raw, ["get_weather"])
    assert (result.calls, result.errors, result.text) == ([], [], raw.strip())
    check(raw, chunked(raw, 1), ["get_weather"], timely=False)
