"""The public API is what __all__ says, and every name in it is importable."""

import importlib
import sys
from typing import Any

import pytest

import toolgram

# The core, and the public modules.
PROMISED = {
    "parse", "StreamParser", "ProseFilter", "MfcsSession", "ParseResult", "ToolCall", "Segment",
    "Format", "GrammarError", "events", "tools", "prompts", "constrain", "openai",
}
# Every name that was importable from toolgram stays importable, from there and from
# its public module.
KEPT = {
    "events": ["ArgumentsDelta", "CallCancelled", "CallDone", "CallStart", "Error", "Event", "Reasoning", "Text"],
    "tools": ["Tool", "ToolSet", "normalize_tools", "validate"],
    "prompts": ["PROMPT_FORMATS", "example_call", "register_prompt", "render_call", "render_prompt", "render_results"],
}


def test_all_names_exist():
    for name in toolgram.__all__:
        assert hasattr(toolgram, name), name


def test_all_is_the_core_and_the_public_modules():
    assert set(toolgram.__all__) == PROMISED


def test_the_openai_module_is_small():
    import toolgram.openai

    assert sorted(toolgram.openai.__all__) == ["CompletionStream", "completion", "message"]
    for name in toolgram.openai.__all__:
        assert not hasattr(toolgram, name), name  # (only in its module)


@pytest.mark.parametrize("module", sorted(KEPT))
def test_names_of_the_public_modules_stay_importable_from_toolgram(module):
    public = importlib.import_module(f"toolgram.{module}")
    assert sorted(public.__all__) == sorted(KEPT[module])
    for name in KEPT[module]:
        assert getattr(toolgram, name) is getattr(public, name), name


def test_formats_table_stays_importable():
    assert toolgram.formats_table().startswith("| format |")


def test_make_call_builds_the_same_tool_call_as_the_constructor() -> None:
    import dataclasses

    from toolgram._result.model import ToolCall, make_call

    values = {
        "name": "a", "arguments": {"x": 1}, "id": "call_1", "kind": "agent", "format": "mfcs", "span": (3, 9),
        "repairs": ("closed_tag",), "instructions": "do it",
    }  # fmt: skip
    assert [f.name for f in dataclasses.fields(ToolCall)] == list(values)
    made, built = make_call(*values.values()), ToolCall(**values)
    assert made == built and vars(made) == vars(built)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.name = "b"  # type: ignore[misc]


def test_a_draft_made_whole_is_what_the_constructor_makes() -> None:
    # (Builder._call makes its Draft with _draft, its __dict__ given whole: every field,
    # in the class's order, each list its own.)
    from toolgram._build.builder import Draft, _draft

    made, built = _draft("agent", (3, 9)), Draft(name="", kind="agent", span=(3, 9))
    assert made == built and list(vars(made)) == list(vars(built)) and vars(made) == vars(built)
    assert made.repairs is not _draft("tool", (0, 0)).repairs and made.params is not _draft("tool", (0, 0)).params


def test_a_moved_call_is_what_dataclasses_replace_makes() -> None:
    import dataclasses

    from toolgram._result.model import ToolCall, moved_call

    call = ToolCall("a", {"x": [1]}, "call_1", "agent", "mfcs", (3, 9), ("closed_tag",), "do it")
    moved, replaced = moved_call(call, (13, 19)), dataclasses.replace(call, span=(13, 19))
    assert moved == replaced and vars(moved) == vars(replaced) and moved.span == (13, 19)
    assert call.span == (3, 9) and moved.instructions == "do it"
    with pytest.raises(dataclasses.FrozenInstanceError):
        moved.span = (0, 0)  # type: ignore[misc]


def test_a_segment_is_a_named_tuple_however_it_is_made() -> None:
    from toolgram._result.model import make_segment

    made = make_segment("call", 3, 9)
    assert type(made) is toolgram.Segment and made == toolgram.Segment(kind="call", start=3, end=9)
    assert (made.kind, made.start, made.end) == tuple(made) == ("call", 3, 9)
    assert repr(made) == "Segment(kind='call', start=3, end=9)"


def test_in_think_reads_a_reply_that_starts_inside_think() -> None:
    # DeepSeek-R1's and QwQ's templates end the prompt with <think>: the reply opens
    # with reasoning and closes a block it never opened.
    raw = "I'm\nthinking\n</think>\n<TOOLCALL>[{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}]</TOOLCALL>"
    opened = toolgram.parse(raw, in_think=True)
    assert (opened.reasoning, opened.text) == ("I'm\nthinking", "")
    assert [c.name for c in opened.calls] == ["special_function"]
    # Without it, the text before an orphan </think> is prose (the tag is dropped).
    assert (toolgram.parse(raw).reasoning, toolgram.parse(raw).text) == ("", "I'm\nthinking")
    # A model that writes <think> anyway is read as usual; one that never closes the
    # block is all reasoning, its calls read.
    assert toolgram.parse("<think>a</think> b", in_think=True) == toolgram.parse("<think>a</think> b")
    unclosed = toolgram.parse('no end <tool_call>{"name": "a", "arguments": {}}</tool_call>', in_think=True)
    assert (unclosed.reasoning, unclosed.text, [c.name for c in unclosed.calls]) == ("no end", "", ["a"])


def test_a_reply_given_as_utf8_bytes_reads_as_its_text() -> None:
    raw = 'héllo <tool_call>{"name": "y", "arguments": {"c": "Zürich"}}</tool_call> ok'
    data = raw.encode()
    expected = toolgram.parse(raw)
    assert toolgram.parse(data) == expected
    assert expected.calls[0].arguments == {"c": "Zürich"}
    # A stream of bytes, cut inside the two-byte characters: the same result.
    sp = toolgram.StreamParser()
    for i in range(len(data)):
        sp.feed(data[i : i + 1])
    assert sp.close() == expected
    shown = toolgram.ProseFilter()
    assert "".join(shown.push(data[i : i + 1]) for i in range(len(data))) + shown.flush() == "héllo  ok"
    # A character left incomplete at the end is not lost: it shows as U+FFFD.
    sp = toolgram.StreamParser()
    sp.feed(b"ab\xc3")
    assert sp.close().text == "ab\ufffd"


# -- configuration errors raise, clearly (the model's text never does) ---------------


@pytest.mark.parametrize("make", [lambda **kw: toolgram.parse("x", **kw), lambda **kw: toolgram.StreamParser(**kw)])
def test_configuration_errors_say_what_is_wrong(make: Any) -> None:
    with pytest.raises(KeyError, match=r"unknown format 'hermess' \(did you mean hermes\?"):
        make(formats=["hermess"])
    with pytest.raises(TypeError, match="formats must be format names"):
        make(formats=5)
    with pytest.raises(TypeError, match="max_chars must be an int"):
        make(max_chars="100")
    with pytest.raises(TypeError, match="tools must be names"):
        make(tools=5)
    with pytest.raises(ValueError, match='truncated must be "repair" or "error"'):
        make(truncated="refuse")


def test_validate_without_jsonschema_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # (import jsonschema raises ImportError)
    with pytest.raises(ImportError, match=r"pip install 'toolgram\[validate\]'"):
        toolgram.parse('<tool_call>{"name": "f", "arguments": {}}</tool_call>', ["f"], validate=True)
    with pytest.raises(ImportError, match="jsonschema"):
        toolgram.StreamParser(["f"], validate=True)
    assert toolgram.parse('<tool_call>{"name": "f", "arguments": {}}</tool_call>', ["f"]).calls[0].name == "f"


# -- truncated: a call the end of the reply cut (repair cut_value) -------------------


CUT = '<tool_call>{"name": "get_weather", "arguments": {"city": "Par'
WHOLE_BUT_OPEN = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"'


def test_truncated_error_makes_a_cut_call_an_error_for_the_model() -> None:
    repaired = toolgram.parse(CUT, ["get_weather"])
    assert [(c.arguments, c.repairs) for c in repaired.calls] == [({"city": "Par"}, ("closed_tag", "closed_json", "cut_value"))]
    refused = toolgram.parse(CUT, ["get_weather"], truncated="error")
    assert refused.calls == []
    assert refused.errors == ['Arguments for "get_weather" were cut off where the reply ended. Write the call again in full.']
    # Its text is the call's, not prose, as a refused call's is (ProseFilter shows the same).
    assert [tuple(s) for s in refused.segments] == [("error", 0, len(CUT))] and refused.text == repaired.text == ""
    shown = toolgram.ProseFilter(tools=["get_weather"])
    assert shown.push("Checking. " + CUT) + shown.flush() == "Checking. "
    # Brackets left open around complete values: a call either way.
    assert toolgram.parse(WHOLE_BUT_OPEN, truncated="error").calls == toolgram.parse(WHOLE_BUT_OPEN).calls
    assert toolgram.parse(WHOLE_BUT_OPEN).calls[0].repairs == ("closed_tag", "closed_json")


def test_truncated_error_comes_after_unknown_tool_and_before_validation() -> None:
    assert toolgram.parse(CUT, ["search"], truncated="error").errors == ['Unknown tool "get_weather". Available now: search.']
    pytest.importorskip("jsonschema")
    tools = {"get_weather": {"type": "object", "properties": {"city": {"type": "string", "minLength": 5}}}}
    assert toolgram.parse(CUT, tools, validate=True).errors[0].startswith('Arguments for "get_weather" are invalid')
    assert toolgram.parse(CUT, tools, validate=True, truncated="error").errors[0].startswith(
        'Arguments for "get_weather" were cut off'
    )


def test_truncated_error_streams_as_it_parses() -> None:
    for announce in ("done", "name"):
        sp = toolgram.StreamParser(["get_weather"], truncated="error", announce=announce)
        events = [e for ch in CUT for e in sp.feed(ch)] + sp.flush()
        assert sp.close() == toolgram.parse(CUT, ["get_weather"], truncated="error")
        assert [e.message for e in events if isinstance(e, toolgram.Error)] == sp.close().errors
        assert not [e for e in events if isinstance(e, toolgram.CallDone)]
        if announce == "name":  # (announced while its arguments came, then withdrawn)
            assert isinstance(events[-1], toolgram.CallCancelled)


def test_a_result_whose_segments_are_made_when_read_is_a_result_like_any_other() -> None:
    # parse() keeps a run of fast-path calls as one CallRun among the segments, made
    # whole when result.segments is first read (model._LazySegments): what every way of
    # looking at the result sees must be what ParseResult(...) with the list gives.
    import copy
    import dataclasses
    import pickle

    from toolgram._result.model import CallRun, ParseResult

    call = '<tool_call>{"name": "f", "arguments": {"n": %d}}</tool_call>'
    raw = "Hello.\n" + "\n".join(f"Step {n}: {call % n}" for n in range(4)) + "\nDone."
    lazy = toolgram.parse(raw)
    assert "_segment_parts" in vars(lazy) and any(type(s) is CallRun for s in vars(lazy)["_segment_parts"])
    # (with a schema to validate against: each call taken one by one)
    eager = toolgram.parse(raw, formats=None, tools={"f": {"type": "object"}}, validate=True)
    assert "_segment_parts" not in vars(eager)
    lazy.calls.pop()  # (the segments are the reply's, whatever is done to the lists after)
    assert [tuple(s) for s in lazy.segments] == [tuple(s) for s in eager.segments]
    assert vars(lazy).keys() == vars(eager).keys() and lazy.segments is lazy.segments
    for read in (copy.copy, copy.deepcopy, lambda r: pickle.loads(pickle.dumps(r))):
        fresh = toolgram.parse(raw)
        assert read(fresh).segments == eager.segments
    fresh = toolgram.parse(raw)
    assert dataclasses.asdict(fresh)["segments"] == [tuple(s) for s in eager.segments]
    assert dataclasses.replace(toolgram.parse(raw), text="x").segments == eager.segments
    fresh = toolgram.parse(raw)
    fresh.segments = []
    assert fresh.segments == [] and ParseResult().segments == [] and ParseResult(segments=eager.segments).segments is eager.segments


def test_the_fast_paths_call_is_what_the_constructor_builds() -> None:
    # fastpath.Frame._call makes its ToolCall inline, as make_call does: every field, no other.
    import dataclasses

    from toolgram._result.model import ToolCall

    (call,) = toolgram.parse('<tool_call>{"name": "f", "arguments": {"n": 1}}</tool_call>').calls
    assert list(vars(call)) == [f.name for f in dataclasses.fields(ToolCall)]
    assert vars(call) == vars(ToolCall(**vars(call)))


def test_a_streamed_calls_events_are_what_their_constructors_build() -> None:
    # StreamParser._items makes a call's CallStart, ArgumentsDelta and CallDone inline,
    # each given its __dict__ whole: every field, in the class's order, no other.
    import dataclasses

    from toolgram.events import ArgumentsDelta, CallDone, CallStart
    sp = toolgram.StreamParser()
    events = sp.feed('<tool_call>{"name": "f", "arguments": {"n": 1}}</tool_call>') + sp.flush()
    made = [e for e in events if type(e) in (CallStart, ArgumentsDelta, CallDone)]
    assert [type(e) for e in made] == [CallStart, ArgumentsDelta, CallDone]
    for event in made:
        assert list(vars(event)) == [f.name for f in dataclasses.fields(event)]
        built = type(event)(**vars(event))
        assert event == built and vars(event) == vars(built)
        with pytest.raises(dataclasses.FrozenInstanceError):
            event.index = 9  # type: ignore[misc]
