"""Properties that hold for every input: parse never raises, and every character
of the reply is accounted for (text, reasoning, a call, or an error)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolgram

from conftest import best_cpu_time
from toolgram._grammar.registry import default_registry

CORPUS = Path(__file__).parent / "corpus"

MARKERS = [
    "<tool_call>", "</tool_call>", "<|tool_call_start|>", "<|tool_call_end|>", "```json", "```",
    "<think>", "</think>", "<mfcs_tool>", "</mfcs_tool>", "<mfcs_agent>", "<name>", "</name>",
    "<parameters>", "</parameters>", "<call_id>", "</call_id>", "[TOOL_CALLS]", "[ARGS]",
    '{"name": "f", "arguments": ', '{"type": "tool_call", ', '"', "'", "{", "}", "[", "]", "(",
    ")", ",", ":", "=", "\\", "f(", "a=1", "True", "None", "1.5", "\n", " ", "<", ">", "x",
]

pieces = st.lists(st.one_of(st.sampled_from(MARKERS), st.text(max_size=5)), max_size=40).map("".join)


# The reasoning blocks' markers (`<think>`, `[THINK]`, harmony's analysis…): markup, in
# reasoning segments, that the reasoning does not show.
THINK_MARKUP = sorted(
    {"<think>", "</think>"}
    | {m for fmt in default_registry().select() for o, cs in fmt.reasoning for m in (o, *cs) if m},
    key=len,
    reverse=True,
)


def _unmarked(text: str) -> str:
    for m in THINK_MARKUP:
        text = text.replace(m, "")
    return text


def _squeeze(text: str) -> str:
    # (A byte order mark or zero-width space before the reply's text is leading blanks too.)
    return "".join(text.split()).replace("\ufeff", "").replace("\u200b", "")


def _subsequence(want: str, hay: str) -> bool:
    it = iter(hay)
    return all(ch in it for ch in want)


def check_accounting(raw: str, result: toolgram.ParseResult) -> None:
    """Every character of raw lies in one segment, and what the result shows comes
    from the segments of its kind, in order, both ways (whitespace aside: the text
    joins its pieces with whitespace of its own)."""
    segments = result.segments
    pos = 0
    for seg in segments:
        assert seg.kind in ("text", "reasoning", "call", "error", "markup"), seg
        assert seg.start == pos, (raw, segments)
        assert seg.end >= seg.start
        pos = seg.end
    assert pos == len(raw), (raw, segments)
    call_segments = [(s.start, s.end) for s in segments if s.kind == "call"]
    for call in result.calls:
        start, end = call.span
        assert any(s <= start and end <= e for s, e in call_segments), (call, call_segments)
    # Each text segment is in the text, in order.
    text = _squeeze(result.text)
    at = 0
    for seg in segments:
        if seg.kind == "text":
            piece = _squeeze(raw[seg.start : seg.end])
            found = text.find(piece, at)
            assert found >= 0, (raw, seg, piece, result.text)
            at = found + len(piece)
    # And the text holds nothing else: it is made of what the segments that are not
    # reasoning hold (a call's segment may hold prose after a call left unclosed), in
    # order. (A whole-reply JSON message is decoded: its escapes are not in raw.)
    if not (raw.lstrip().startswith("{") and '"message"' in raw):
        rest = "".join(_squeeze(raw[s.start : s.end]) for s in segments if s.kind != "reasoning")
        assert _subsequence(text, rest), (raw, result.text, segments)
    thought = _squeeze(result.reasoning)
    reasoning = "".join(_squeeze(raw[s.start : s.end]) for s in segments if s.kind == "reasoning")
    assert _subsequence(thought, reasoning), (raw, result.reasoning, segments)
    for seg in segments:
        if seg.kind == "reasoning" and _unmarked(_squeeze(raw[seg.start : seg.end])):
            assert thought, (raw, seg)
    # Every error segment is told: at least as many messages as error segments.
    errors = sum(1 for s in segments if s.kind == "error")
    assert len(result.errors) >= errors, (raw, result.errors, segments)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(raw):
    result = toolgram.parse(raw)
    check_accounting(raw, result)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces, st.sampled_from([None, ["f", "get_weather"], []]), st.booleans())
def test_marker_soup_never_raises(raw, tools, in_think):
    result = toolgram.parse(raw, tools, in_think=in_think)
    check_accounting(raw, result)
    assert not any("internal error" in e for e in result.errors), result.errors
    json.dumps([c.arguments for c in result.calls])  # arguments are plain JSON values


@pytest.mark.parametrize("opener,closer", [("[", "]"), ("{", "}"), ("(", ")")])
@pytest.mark.parametrize(
    "frame",
    ["<tool_call>{{}}</tool_call>", "<|tool_call_start|>[f(a={})]<|tool_call_end|>", "```json\n{}\n```",
     "{}", '<tool_call>{{"name": "f", "arguments": {{"a": {}}}}}</tool_call>', "{} trailing"],
)
def test_ten_thousand_nested_brackets(frame, opener, closer):
    deep = opener * 10_000 + closer * 10_000
    for body in (deep, opener * 10_000):
        raw = frame.replace("{}", body, 1).replace("{{", "{").replace("}}", "}")
        result = toolgram.parse(raw, max_chars=100_000)
        check_accounting(raw, result)
        assert not any("internal error" in e for e in result.errors), result.errors


def corpus_texts() -> list[str]:
    return [p.read_bytes().decode("utf-8") for p in sorted(CORPUS.glob("*/*.txt"))]


def test_every_truncation_of_every_corpus_case():
    texts = corpus_texts()
    if not texts:
        pytest.skip("no corpus cases")
    for raw in texts:
        step = max(1, len(raw) // 60)  # every cut on short cases, 60 cuts on long ones
        cuts = set(range(0, len(raw) + 1, step)) | {len(raw) - 1, len(raw)}
        for cut in sorted(c for c in cuts if c >= 0):
            prefix = raw[:cut]
            result = toolgram.parse(prefix)
            check_accounting(prefix, result)
            assert not any("internal error" in e for e in result.errors), (prefix, result.errors)


def test_non_string_input_is_read_as_text():
    assert toolgram.parse(None).text == ""
    assert toolgram.parse(b"abc").text  # bytes are shown, not lost
    assert toolgram.parse(12).text == "12"


def test_max_chars_keeps_the_rest_as_text():
    raw = "a" * 10 + '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    result = toolgram.parse(raw, max_chars=10)
    assert result.calls == []
    assert result.text == raw
    check_accounting(raw, result)


def test_max_chars_none_means_no_limit():
    raw = "x" * 40_000 + '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    result = toolgram.parse(raw, max_chars=None)
    assert [c.name for c in result.calls] == ["f"]
    assert result.text == "x" * 40_000


def test_negative_max_chars_is_a_configuration_error():
    with pytest.raises(ValueError):
        toolgram.parse("hi", max_chars=-1)


def _parse_time(raw: str) -> float:
    return best_cpu_time(lambda: toolgram.parse(raw, max_chars=None))


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda n: "<tool_call>" * (n // 11), id="markers_only"),
        pytest.param(lambda n: "functools commentary to= Action: " * (n // 34), id="word_markers_only"),
        pytest.param(lambda n: '<tool_call>{"name": @@ }</tool_call> words ' * (n // 40), id="many_broken_calls"),
        pytest.param(lambda n: 'x <tool_call>{"name": @@ ' + "a < b " * (n // 6), id="broken_call_then_lt"),
        # Each payload a JSON value that never closes, running to the end of the reply.
        pytest.param(lambda n: "<TOOLCALL>[@" * (n // 12), id="broken_json_markers"),
        pytest.param(lambda n: "<|im_start|>{" * (n // 13), id="broken_json_objects"),
        pytest.param(lambda n: ("word " * 20 + '<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>') * (n // 155), id="calls"),
    ],
)
def test_parse_takes_linear_time(make) -> None:
    # Each search the scanner makes is remembered until passed: text dense with one
    # kind of marker is not searched to its end for another kind at every marker.
    ratio = _parse_time(make(50_000)) / _parse_time(make(10_000))
    # Linear: about 5; quadratic would be about 25 (the margin is for a busy machine).
    assert ratio < 12, ratio
