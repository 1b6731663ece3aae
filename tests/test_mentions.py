"""A tag that prose merely mentions stays prose, with no call and no error.

Every registered format's start markers are put into sentences ("Use the <tool_call> tag
to call tools."): the text must come back whole. A region that holds a call's name and
nothing more of it (no arguments, JSON, parameter tags) is a mention when the model never
closed it and prose follows, or when the name stands apart from its tag by a space. Before
the next call's marker, or at the end of the reply, it is a call whose close was left out
or cut off; a real call cut short that has begun its arguments is read too.
"""

from __future__ import annotations

import pytest

import toolgram
from toolgram import ProseFilter, StreamParser
from toolgram._grammar.registry import default_registry

# Start markers that open no call: answer blocks and the end of a section of calls (their
# tag is markup), and <|python_tag|>, after which Llama 3.1 writes raw code for
# code_interpreter, which any text can be. (Reasoning blocks are no start markers: see
# test_reasoning.py.)
NOT_CALL_MARKERS = frozenset({
    "[BEGIN FINAL RESPONSE]", "[END FINAL RESPONSE]", "<|START_RESPONSE|>", "<|START_TEXT|>",
    "<|message_sep|>", "<|open|>response<|sep|>", "<|close|>response<|sep|>",
    "<|close|>message<|sep|>", "<|tool_calls_section_end|>", "<|python_tag|>",
    "</minimax:tool_call>",
})

SENTENCES = (
    "Use the {} tag to call tools.",
    "Write {} then",
    "I will not call {} now.",
    "I will not call {} now",
    "Models write {} around calls.",
)

MARKERS = sorted(
    {m for fmt in default_registry().select() for m in fmt.starts if m not in NOT_CALL_MARKERS}
)


@pytest.mark.parametrize("tools", [None, ["get_weather"]], ids=["no_tools", "tools"])
@pytest.mark.parametrize("sentence", SENTENCES)
@pytest.mark.parametrize("marker", MARKERS)
def test_a_mentioned_marker_stays_prose(marker: str, sentence: str, tools) -> None:
    raw = sentence.format(marker)
    result = toolgram.parse(raw, tools)
    assert (result.text, result.calls, result.errors) == (raw, [], [])


@pytest.mark.parametrize(
    "raw, tools",
    [
        ("Use <function=get_weather> blocks.", None),
        ('Write <function name="f"> then', None),
        ("I will not call <tool_call> now.", ["get_weather"]),
        ("I will not call <tool_call> now.", None),
        ("Models write <tool_call> and </tool_call> around the call.", None),
    ],
)
def test_qa_mentions_stay_prose_in_a_stream_too(raw: str, tools) -> None:
    assert (toolgram.parse(raw, tools).text, toolgram.parse(raw, tools).calls) == (raw, [])
    for size in (1, 3, 64):
        sp = StreamParser(tools=tools)
        for i in range(0, len(raw), size):
            sp.feed(raw[i : i + size])
        sp.flush()
        assert sp.close() == toolgram.parse(raw, tools)
        f = ProseFilter(tools=tools)
        assert "".join(f.push(raw[i : i + size]) for i in range(0, len(raw), size)) + f.flush() == raw


@pytest.mark.parametrize(
    "raw, name, arguments",
    [
        ('<tool_call>{"name": "a", "arguments": {"x": 1', "a", {"x": 1}),
        ("<function=get_weather>\n<parameter=city>\nParis", "get_weather", {"city": "Paris"}),
        ("<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>Paris", "get_weather", {"city": "Paris"}),
        ('<function name="get_weather"><param name="city">Paris', "get_weather", {"city": "Paris"}),
        ("<|tool_call_start|>[get_weather(city='Paris'", "get_weather", {"city": "Paris"}),
    ],
)
def test_a_call_cut_short_is_still_read(raw: str, name: str, arguments: dict) -> None:
    result = toolgram.parse(raw)
    assert [(c.name, c.arguments) for c in result.calls] == [(name, arguments)]
    assert "closed_tag" in result.calls[0].repairs and result.errors == []


def test_a_bare_name_before_the_next_call_is_a_call() -> None:
    # The model left out </tool_call> and went on to its next call: both are calls.
    raw = "<tool_call>get_time\n<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
    assert [(c.name, c.arguments) for c in toolgram.parse(raw).calls] == [("get_time", {}), ("get_weather", {"city": "Paris"})]


def test_a_bare_name_at_the_end_of_the_reply_is_a_call_cut_off() -> None:
    # (A call with no arguments, cut off or stopped before its close tag, is as long
    # as a mention; at the end of the reply, nothing says it is prose. Its arguments
    # may have been cut before they began: cut_value, not an invented {} alone.)
    for raw in ("<tool_call>get_time", "Checking. <tool_call>get_time", "<function=get_time>"):
        result = toolgram.parse(raw, ["get_time"])
        expected = [("get_time", {}, ("closed_tag", "cut_value"))]
        assert [(c.name, c.arguments, c.repairs) for c in result.calls] == expected, raw
        sp = StreamParser(["get_time"])
        for ch in raw:
            sp.feed(ch)
        assert sp.close() == result


def test_a_bare_name_closed_flush_is_a_call() -> None:
    assert [(c.name, c.arguments) for c in toolgram.parse("<tool_call>list_folders</tool_call>").calls] == [("list_folders", {})]


# -- a close tag cut short at the end of the reply is the call's, not prose ----------------


@pytest.mark.parametrize(
    "raw, text",
    [
        ('Hi <tool_call>{"name": "s", "arguments": {"q": "d"}}</tool_call', "Hi"),
        ('Action:\n```json\n[{"tool_name": "a", "parameters": {}}]\n``', ""),
        ("<function=f>\n<parameter=city>\nParis\n</parameter>\n</func", ""),
        ("<|tool_call_start|>[f(a=1)]<|tool_call_e", ""),
    ],
)
def test_a_close_tag_cut_short_is_markup(raw: str, text: str) -> None:
    result = toolgram.parse(raw)
    assert result.text == text and len(result.calls) == 1 and result.calls[0].span[1] == len(raw)
    f = ProseFilter()
    assert (f.push(raw) + f.flush()).strip() == text


def test_a_close_tag_cut_by_max_chars_is_shown_once() -> None:
    raw = '<tool_call>{"name": "a", "arguments": {}}</tool_call> Done.'
    result = toolgram.parse(raw, max_chars=45)  # the limit falls inside </tool_call>
    assert result.calls[0].span == (0, 45)
    assert result.text == "ol_call> Done."  # only what lies beyond the limit, kept unparsed


@pytest.mark.parametrize("sentence", SENTENCES[:3])
def test_a_block_close_with_no_block_is_markup_only_at_its_lines_end(sentence: str) -> None:
    """MiniMax's `</minimax:tool_call>` opens nothing: with no block open, at the end of
    its line (prose after the last invoke, then the close) it is markup; in a sentence
    it is text, as any mentioned tag."""
    raw = sentence.format("</minimax:tool_call>")
    for result in (toolgram.parse(raw), toolgram.parse(raw, tools=["get_weather"])):
        if raw.endswith("</minimax:tool_call>"):
            assert result.text == raw[: -len("</minimax:tool_call>")].strip(), result
        else:
            assert result.text == raw and not result.errors, result
    assert toolgram.parse("Checking now.\n</minimax:tool_call>\nDone.").text == "Checking now.\nDone."
