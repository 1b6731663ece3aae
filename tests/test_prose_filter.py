"""ProseFilter: the prose of a streaming reply, call markup held back and dropped.

It shows the raw prose (no trimming, no separators: see _prose_filter.py), so:
  * however the reply is split, the pieces add up to the same text;
  * that text is result.text but for whitespace (parse() trims it and puts a
    separator where markup was cut out): equal once all whitespace is removed;
  * text is held back only while it may still start a marker.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolgram
from toolgram._stream.prose_filter import ProseFilter

from test_stream import CASES, _all_cases, chunked, random_chunks


def filtered(chunks: list[str], **kw: Any) -> tuple[list[str], str]:
    f = ProseFilter(**kw)
    return [f.push(c) for c in chunks], f.flush()


def _no_space(text: str) -> str:
    # (A byte order mark or zero-width space before the reply is leading whitespace: shown raw
    # here, as blanks are, and not in result.text.)
    return re.sub(r"[\s\ufeff\u200b]+", "", text)


def check(raw: str, chunks: list[str], tools: Any, formats: Any, truncated: str = "repair") -> None:
    pushed, rest = filtered(chunks, formats=formats, tools=tools)
    whole, whole_rest = filtered([raw], formats=formats, tools=tools)
    shown = "".join(pushed) + rest
    assert shown == "".join(whole) + whole_rest
    # (A call refused as cut off, truncated="error", is no prose either: ProseFilter
    # shows the same text whatever parse() makes of it.)
    expected = toolgram.parse(raw, tools, formats=formats, max_chars=len(raw) + 1, truncated=truncated)
    assert _no_space(shown) == _no_space(expected.text)


def test_seed_example() -> None:
    f = ProseFilter()
    assert f.push("Sure <tool_") == "Sure "
    assert f.push('call>{"name":"open_cart"}</tool_call> done') == " done"
    assert f.flush() == ""


def test_a_lone_less_than_is_released_as_soon_as_it_starts_no_marker() -> None:
    f = ProseFilter(formats=["hermes"])
    assert f.push("3 <") == "3 "
    assert f.push(" 5") == "< 5"
    assert f.push(" and x <t") == " and x "
    assert f.push("o") == ""  # "<to" may still become <tool_call>
    assert f.push("p") == "<top"
    assert f.flush() == ""


def test_think_and_calls_are_dropped() -> None:
    raw = "A<think>hidden</think>B <tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call> C"
    for size in (1, 2, 5, len(raw)):
        pushed, rest = filtered(chunked(raw, size), formats=["hermes"])
        assert "".join(pushed) + rest == "AB  C"


def test_a_reply_that_starts_inside_think_hides_its_reasoning() -> None:
    raw = "I'm thinking</think> Here you go. <tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call> Done"
    for size in (1, 2, 5, len(raw)):
        pushed, rest = filtered(chunked(raw, size), formats=["hermes"], in_think=True)
        assert "".join(pushed) + rest == " Here you go.  Done"
    assert "".join(filtered([raw], formats=["hermes"])[0]).startswith("I'm thinking")


def test_held_text_comes_out_at_flush() -> None:
    f = ProseFilter(formats=["hermes"])
    assert f.push("see <tool_c") == "see "
    assert f.flush() == "<tool_c"


def test_a_mentioned_tag_is_shown() -> None:
    pushed, rest = filtered(chunked("Wrap calls in <tool_call> tags.", 3), formats=["hermes"])
    assert "".join(pushed) + rest == "Wrap calls in <tool_call> tags."


def test_unreadable_call_stays_prose() -> None:
    raw = 'x <tool_call>{"name": "a", "arguments": {"q": @}}</tool_call> y'
    pushed, rest = filtered(chunked(raw, 4), formats=["hermes"])
    # (Its text stays prose, its tags markup, never prose: issue 19, mention.failed_prose.)
    assert "".join(pushed) + rest == 'x {"name": "a", "arguments": {"q": @}} y'


def test_whole_reply_as_json_message() -> None:
    pushed, rest = filtered(['{"type": "message", ', '"text": "hello"}'], formats=["json_reply"])
    assert pushed == ["", ""] and rest == "hello"


def test_push_after_flush_raises_and_none_is_empty() -> None:
    f = ProseFilter()
    assert f.push(None) == ""  # type: ignore[arg-type]
    f.flush()
    assert f.flush() == ""
    with pytest.raises(RuntimeError):
        f.push("x")


def test_internal_error_shows_the_rest(monkeypatch: pytest.MonkeyPatch, bugs_as_results: None) -> None:
    f = ProseFilter(formats=["hermes"])
    assert f.push("a <tool") == "a "

    def boom(*args: Any, **kwargs: Any) -> list:
        raise ZeroDivisionError

    monkeypatch.setattr(f._scanner, "feed", boom)
    assert f.push("_x") == "<tool_x"
    assert f.push(" more") == " more"
    assert f.flush() == ""


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_chunked(case: tuple) -> None:
    _, raw, tools, formats, _ = case
    for size in (1, 3, 7):
        check(raw, chunked(raw, size), tools, formats)


def test_corpus_filters(corpus_case: Any) -> None:
    for size in (1, 7):
        check(corpus_case.raw, chunked(corpus_case.raw, size), corpus_case.tools, corpus_case.formats, corpus_case.truncated)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_splits(data: Any) -> None:
    cases = _all_cases()
    _, raw, tools, formats, _ = cases[data.draw(st.integers(0, len(cases) - 1), label="case")]
    check(raw, random_chunks(data, raw), tools, formats)


def test_holds_back_only_what_may_start_a_marker() -> None:
    """Pushed a character at a time, what is held back is always a start of a marker."""
    raw = "Compare 3 < 5, <b>bold</b>, `code`, <thin k>, </tool, a <t and <tool_call x."
    f = ProseFilter(formats=["hermes"])
    shown = ""
    for i, ch in enumerate(raw, 1):
        shown += f.push(ch)
        held = raw[len(shown) : i]
        assert raw.startswith(shown)
        assert held == "" or any(m.startswith(held) for m in ("<tool_call>", "<think>", "</think>")), (i, held)
    assert shown + f.flush() == raw
