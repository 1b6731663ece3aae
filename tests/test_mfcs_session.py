"""MfcsSession does what MFCS's AiResponseParser promises, without its failures."""

from __future__ import annotations

import json

import pytest

import toolgram
from toolgram import MfcsSession

TOOL = (
    "<mfcs_tool><instructions>xxx</instructions><call_id>{id}</call_id><name>{name}</name>"
    '<parameters>{{"param": "value"}}</parameters></mfcs_tool>'
)
AGENT = (
    "<mfcs_agent><instructions>xxx</instructions><agent_id>{id}</agent_id><name>{name}</name>"
    '<parameters>{{"message": "hi"}}</parameters></mfcs_agent>'
)


def run(chunks, results=None):
    seen, fired = [], []
    session = MfcsSession(on_call=seen.append, on_results=fired.append)
    for i, chunk in enumerate(chunks):
        session.process_chunk(chunk, is_last=i == len(chunks) - 1)
    for call in list(seen):
        session.add_result(call.id, call.name, (results or {}).get(call.name, {"ok": True}), call.kind)
    return session, seen, fired


def test_seed_process_chunk_sequence():
    chunks = ["Some text", TOOL.format(id=1, name="toolName"), AGENT.format(id=1, name="toolName"), "More text"]
    session, seen, fired = run(chunks)
    assert [(c.name, c.id, c.kind) for c in seen] == [("toolName", "1", "tool"), ("toolName", "1", "agent")]
    assert session.text == "Some text\nMore text"  # the prose is kept, unlike AiResponseParser
    assert fired == [session.results_text()]
    assert fired[0] == (
        '<tool_result>\n{call_id: 1, name: toolName} {"ok": true}\n</tool_result>\n'
        '<agent_result>\n{agent_id: 1, name: toolName} {"ok": true}\n</agent_result>'
    )


def test_two_blocks_in_one_chunk_are_both_reported():
    raw = TOOL.format(id="call_1", name="a") + TOOL.format(id="call_2", name="b")
    session, seen, _ = run([raw])
    assert [c.name for c in seen] == ["a", "b"]


def test_string_ids_stay_strings():
    session, seen, _ = run([TOOL.format(id="call_123", name="a")])
    assert seen[0].id == "call_123"


def test_duplicate_ids_each_take_a_result_and_results_fire():
    raw = TOOL.format(id=7, name="a") + TOOL.format(id=7, name="b")
    session, seen, fired = run([raw], results={"a": 1, "b": 2})
    assert len(fired) == 1
    assert fired[0].splitlines()[1:3] == ["{call_id: 7, name: a} 1", "{call_id: 7, name: b} 2"]


def test_objects_are_written_as_json():
    session, seen, fired = run([TOOL.format(id=1, name="a")], results={"a": {"rows": [{"x": 1}], "ok": None}})
    line = fired[0].splitlines()[1]
    assert "[object Object]" not in line
    assert json.loads(line.split("} ", 1)[1]) == {"rows": [{"x": 1}], "ok": None}


def test_no_calls_gives_none_at_the_end():
    session, seen, fired = run(["Just prose, 3 < 5."])
    assert seen == [] and fired == [None] and session.results_text() is None
    assert session.text == "Just prose, 3 < 5."


def test_calls_are_reported_before_the_reply_ends():
    session = MfcsSession()
    raw = "Checking. " + TOOL.format(id=1, name="a") + " and more prose to come"
    got = []
    for ch in raw:
        got += session.feed(ch)
    assert [c.name for c in got] == ["a"]
    assert not session.ended


def test_results_wait_for_the_end_and_for_every_call():
    fired = []
    session = MfcsSession(on_results=fired.append)
    session.feed(TOOL.format(id=1, name="a") + TOOL.format(id=2, name="b"))
    session.add_result("1", "a", "x")
    with pytest.raises(RuntimeError):
        session.results_text()  # the reply has not ended
    session.end()
    assert fired == [] and [c.name for c in session.pending] == ["b"]
    session.add_result(2, "b", "y")
    assert fired and '{call_id: 2, name: b} "y"' in fired[0]


def test_feeding_after_the_end_names_the_session():
    # (Not "StreamParser.feed() after flush() or close()": the caller holds a session.)
    session = MfcsSession()
    session.feed(TOOL.format(id=1, name="a"))
    session.end()
    for more in (lambda: session.feed("more"), lambda: session.process_chunk("more", is_last=True)):
        with pytest.raises(RuntimeError, match=r"^MfcsSession\.feed\(\) after end\(\): the reply has ended"):
            more()
    assert session.end() == [] and [c.name for c in session.calls] == ["a"]


def test_unknown_result_is_a_key_error():
    session = MfcsSession()
    session.process_chunk(TOOL.format(id=1, name="a"), is_last=True)
    with pytest.raises(KeyError):
        session.add_result("9", "a", 1)


def test_memory_blocks_and_result_text():
    raw = (
        "<mfcs_memory><memory_id>m1</memory_id><name>remember</name>"
        '<parameters>{"key": "city", "value": "Paris"}</parameters></mfcs_memory>'
    )
    session, seen, fired = run([raw])
    assert seen[0].kind == "memory"
    assert fired[0] == '<memory_result>\n{memory_id: m1, name: remember} {"ok": true}\n</memory_result>'


@pytest.mark.parametrize("size", [1, 3, 17])
def test_any_chunking_gives_the_same_calls(size):
    raw = "Intro " + TOOL.format(id=1, name="a") + " mid " + AGENT.format(id="x", name="b") + " end"
    session = MfcsSession()
    for i in range(0, len(raw), size):
        session.feed(raw[i : i + size])
    session.end()
    whole = toolgram.parse(raw, formats=["mfcs"])
    assert [c.name for c in whole.calls] == ["a", "b"]  # (two calls to compare)
    assert session.calls == whole.calls
    assert session.text == whole.text
