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
