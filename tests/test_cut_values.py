"""A value the end of the reply cut short is kept as the model wrote it, in every format.

Issue 19: a string value's whitespace is never changed but for the one framing newline a
format's template writes around it (Qwen3-Coder's `<parameter=x>\\n…\\n</parameter>`). A
value the reply's end cut has no close, so nothing frames its end: its trailing
whitespace (a space after a word, the indentation of a file's next line) is what was
written, and it is kept (repair cut_value says it was cut). This once depended on the
format: the XML-ish ones, the Python ones and Gemma's stripped it, JSON, Hy3 and Kimi K3
kept it.

The cases are corpus files, `tests/corpus/<format>/cut_value_keeps_its_whitespace.txt`
(their snapshots are checked by test_corpus.py, the stream by test_stream.py): one for
every format folder, each a call whose last string value runs to the end of the reply
and ends with whitespace.
"""

from __future__ import annotations

from typing import Any

import pytest

import toolgram
from conftest import FORMAT_FOLDERS, corpus_cases

CASE = "cut_value_keeps_its_whitespace"
CASES = [c for c in corpus_cases() if c.name == CASE]


def test_every_format_folder_has_a_cut_value_case() -> None:
    assert sorted(c.format for c in CASES) == sorted(FORMAT_FOLDERS)


def _last_value(call: Any) -> Any:
    return list(call.arguments.values())[-1]


@pytest.mark.parametrize("case", CASES, ids=[c.format for c in CASES])
def test_cut_value_keeps_its_trailing_whitespace(case: Any) -> None:
    result = toolgram.parse(case.raw, case.tools, formats=case.formats)
    assert not result.errors
    assert len(result.calls) == 1
    call = result.calls[0]
    assert "cut_value" in call.repairs
    assert call.span[1] == len(case.raw)  # (the whitespace is the call's, not the text's)
    trailing = case.raw[len(case.raw.rstrip()) :]
    assert trailing.strip() == "" and len(trailing) >= 2
    value = _last_value(call)
    assert isinstance(value, str) and value.endswith(trailing) and not value.endswith(" " + trailing)
    # Refused under truncated="error", as any cut value is.
    refused = toolgram.parse(case.raw, case.tools, formats=case.formats, truncated="error")
    assert not refused.calls and refused.errors


# A value whose close never came (cut by the reply's end, or left out before the next
# tag) keeps its first line's indentation: only one space between the tag and a value
# on its line is layout (`<parameter=path> notes.txt`), as a separator; more, or a tab,
# is the value's own text (QA15 F3: `    def f():` lost its four spaces, silently:
# cut_value speaks of the end only, closed_tag of no text at all).
INDENTED = [
    c for c in corpus_cases()
    if c.name in ("cut_value_keeps_the_indentation_on_its_tag_line", "close_left_out_keeps_the_indentation_on_its_tag_line")
]


def test_indentation_cases_cover_the_tag_formats() -> None:
    assert len(INDENTED) == 20


@pytest.mark.parametrize("case", INDENTED, ids=[f"{c.format}-{c.name[:3]}" for c in INDENTED])
def test_a_value_with_no_close_keeps_its_indentation(case: Any) -> None:
    result = toolgram.parse(case.raw, case.tools, formats=case.formats)
    assert not result.errors and len(result.calls) == 1
    call = result.calls[0]
    assert call.arguments["content"].startswith("    def f():\n        return 1")
    assert "closed_tag" in call.repairs
    assert ("cut_value" in call.repairs) == case.name.startswith("cut_")


def test_one_space_after_the_tag_is_layout() -> None:
    (case,) = [c for c in corpus_cases() if c.name == "one_space_after_the_tag_is_layout_where_no_close_came"]
    call = toolgram.parse(case.raw, case.tools, formats=case.formats).calls[0]
    assert call.arguments == {"path": "notes.txt", "content": "hello world"}


# A reply cut inside what may open a call's arguments (Kimi K2's `functions.f:0 <|t`,
# which begins `<|tool_call_argument_begin|>` as much as `<|tool_call_end|>`; an XML
# call's `<` after its opener, a parameter's tag as much as the call's close): the
# arguments may have been cut before they began, so the call's `{}` carries cut_value
# and truncated="error" refuses it (QA15 F4: `closed_tag` only, the call let through).
ARGS_UNBEGUN = [
    c for c in corpus_cases()
    if c.name.startswith(("cut_inside_the_marker_that_opens_", "cut_at_a_tag_after_the_")) and c.format != "mfcs"
]


def test_args_unbegun_cases_cover_the_formats() -> None:
    assert len(ARGS_UNBEGUN) >= 11


@pytest.mark.parametrize("case", ARGS_UNBEGUN, ids=[c.id for c in ARGS_UNBEGUN])
def test_a_call_cut_where_its_arguments_may_begin_is_cut(case: Any) -> None:
    result = toolgram.parse(case.raw, case.tools, formats=case.formats)
    assert not result.errors and len(result.calls) == 1
    assert result.calls[0].arguments == {} and "cut_value" in result.calls[0].repairs
    refused = toolgram.parse(case.raw, case.tools, formats=case.formats, truncated="error")
    assert not refused.calls and refused.errors


def test_a_cut_marker_after_a_whole_call_leaves_it_whole() -> None:
    (case,) = [c for c in corpus_cases() if c.name == "cut_in_a_marker_after_a_whole_call_keeps_it_whole"]
    result = toolgram.parse(case.raw, case.tools, formats=case.formats, truncated="error")
    assert [(c.name, c.arguments, "cut_value" in c.repairs) for c in result.calls] == [("search", {"q": "x"}, False)]
