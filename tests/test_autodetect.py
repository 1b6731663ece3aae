"""Auto-detection (formats=None) of marker-less shapes: pythonic lists, bare calls, fences.

Markers decide first. A shape with no marker counts as calls only when every name is an
offered tool, or -- with no tools given -- when it is unmistakable: a call list that opens
the reply, or a reply that is nothing but calls. Prose that explains JSON or shows code
stays prose, with no error. After prose, a call list counts only on a line of its own and
only when tools are given (`anchor: line`); a ```python fence only when tools are given
(`offered_only: always`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import toolgram
from toolgram import StreamParser

TOOLS = ["get_weather", "search_web", "math.factorial"]


def calls(raw: str, tools: Any = TOOLS) -> list[tuple[str, dict]]:
    result = toolgram.parse(raw, tools)
    return [(c.name, c.arguments) for c in result.calls]


def assert_prose(raw: str, tools: Any) -> None:
    result = toolgram.parse(raw, tools)
    assert result.calls == [], result.calls
    assert result.errors == []
    assert result.text == raw.strip()


PROSE = [
    "Use `print(x)` to debug",
    "Call f(x) later",
    "Call get_weather(city='Paris') once the user confirms.",
    "print(x)",
    "Paris",
    "Yes.",
    "sorted(items, key=len) returns a new list.",
    'A call looks like this: {"name": "get_weather", "arguments": {"city": "Paris"}}, with your city.',
    'The reply format is:\n{"name": "get_weather", "arguments": {"city": "Paris"}}\nReplace the city.',
    "Here is the code:\n```python\nimport requests\nprint(requests.get(url))\n```",
    "```python\nresult = compute(a=1)\nprint(result)\n```",
    "```python\nget_weather(city='Paris')\n```\nRun this in your notebook.",
    "See [the docs](https://example.com) and [1].\n[1] A footnote.\n[x] done",
    "[1, 2, 3] is a list.",
    "[len(x) for x in rows]",
    "Steps:\n[a] do this\n[b] then that",
]


@pytest.mark.parametrize("raw", PROSE)
def test_prose_and_code_stay_prose_without_tools(raw: str) -> None:
    assert_prose(raw, None)


@pytest.mark.parametrize("raw", [p for p in PROSE if "```python\nget_weather" not in p])
def test_prose_and_code_stay_prose_with_tools(raw: str) -> None:
    assert_prose(raw, TOOLS)


def test_pythonic_list_opening_the_reply() -> None:
    raw = "[get_weather(city='Paris'), search_web(query=\"news\", n=2)]"
    expected = [("get_weather", {"city": "Paris"}), ("search_web", {"query": "news", "n": 2})]
    assert calls(raw, None) == expected
    assert calls(raw) == expected
    assert calls("\n\n" + raw + "\n\nI called both.") == expected


def test_pythonic_list_after_prose_needs_offered_tools() -> None:
    raw = "Here are the calls:\n\n[get_weather(city='Paris')]\n[math.factorial(n=5)]\nDone."
    assert calls(raw) == [("get_weather", {"city": "Paris"}), ("math.factorial", {"n": 5})]
    assert toolgram.parse(raw, TOOLS).text == "Here are the calls:\n\nDone."
    assert_prose(raw, None)  # no tools: after prose it is not unmistakable
    assert_prose(raw, ["send_email"])  # not offered
    assert_prose("Here: [get_weather(city='Paris')]", TOOLS)  # not first on its line


def test_a_list_naming_an_offered_tool_is_read_and_its_unoffered_names_are_errors() -> None:
    # (The model is told about the name it got wrong; a list naming no offered tool
    # stays prose: it may be any bracketed text.)
    result = toolgram.parse("[get_weather(city='Paris'), launch_rocket(force=True)]", TOOLS)
    assert [(c.name, c.arguments) for c in result.calls] == [("get_weather", {"city": "Paris"})]
    assert result.errors == [f'Unknown tool "launch_rocket". Available now: {", ".join(TOOLS)}.']
    assert result.text == ""
    assert_prose("[launch_rocket(force=True), abort(now=True)]", TOOLS)


def test_bare_calls_must_be_the_whole_reply() -> None:
    assert calls("math.factorial(n=5); get_weather(city='Oslo');") == [
        ("math.factorial", {"n": 5}),
        ("get_weather", {"city": "Oslo"}),
    ]
    assert calls('lookup_docs(topic="routing", limit=3)', None) == [("lookup_docs", {"topic": "routing", "limit": 3})]
    assert calls("get_weather(city='Oslo')\nI'll let you know.") == []
    assert_prose("launch_rocket(force=True)", TOOLS)


def test_python_fence_needs_offered_tools() -> None:
    raw = "Sure:\n```python\n[get_weather(city='Paris')]\n```\nThat's it."
    assert calls(raw) == [("get_weather", {"city": "Paris"})]
    assert toolgram.parse(raw, TOOLS).text == "Sure:\nThat's it."
    assert_prose(raw, None)
    assert_prose(raw, ["search_web"])


def test_markers_decide_before_marker_less_shapes() -> None:
    raw = "[get_weather(city='Paris')]\n<tool_call>{\"name\": \"search_web\", \"arguments\": {\"query\": \"x\"}}</tool_call>"
    result = toolgram.parse(raw, TOOLS)
    assert [(c.name, c.format) for c in result.calls] == [("get_weather", "pythonic"), ("search_web", "hermes")]


@pytest.mark.parametrize(
    "raw",
    [
        "Here are the calls:\n\n[get_weather(city='Paris')]\n[math.factorial(n=5)]\nDone.",
        "[1] note\n  [get_weather(city='Paris')]",
        "Sure:\n```python\n[get_weather(city='Paris')]\n```\nok",
    ],
)
@pytest.mark.parametrize("size", [1, 2, 5])
def test_stream_agrees_with_one_shot(raw: str, size: int) -> None:
    whole = toolgram.parse(raw, TOOLS)
    assert "get_weather" in [c.name for c in whole.calls]  # (a call to compare)
    sp = StreamParser(TOOLS)
    for i in range(0, len(raw), size):
        sp.feed(raw[i : i + size])
    streamed = sp.close()
    assert (streamed.text, streamed.calls, streamed.errors) == (whole.text, whole.calls, whole.errors)


# -- the header keys themselves, on a user grammar -------------------------------------------

BANG = """// format: bang
// start: !
// anchor: line
// quiet: yes
// offered_only: yes
start: "!" call
%import .pycall (call, name, kwarg, posarg, key, value, NAME, KEY, PYVALUE)
%import common.WS
%ignore WS
"""


def test_anchor_line_on_a_user_grammar(tmp_path: Path) -> None:
    path = tmp_path / "bang.lark"
    path.write_text(BANG, encoding="utf-8")

    def run(raw: str, tools: Any) -> list[str]:
        return [c.name for c in toolgram.parse(raw, tools, formats=["bang"], grammar_paths=[path]).calls]

    assert run("!f(a=1)", None) == ["f"]  # opens the reply: like anchor: reply
    assert run("ok\n!f(a=1)", None) == []  # after prose only with tools
    assert run("ok\n  !f(a=1)", ["f"]) == ["f"]
    assert run("ok !f(a=1)", ["f"]) == []  # not first on its line
    assert run("ok\n!g(a=1)", ["f"]) == []  # offered_only


def test_offered_only_always_on_a_user_grammar(tmp_path: Path) -> None:
    path = tmp_path / "bang.lark"
    path.write_text(BANG.replace("anchor: line", "anchor: reply").replace("offered_only: yes", "offered_only: always"), encoding="utf-8")

    def run(raw: str, tools: Any) -> list[str]:
        return [c.name for c in toolgram.parse(raw, tools, formats=["bang"], grammar_paths=[path]).calls]

    assert run("!f(a=1)", None) == []
    assert run("!f(a=1)", ["f"]) == ["f"]
    assert run("!g(a=1)", ["f"]) == []
