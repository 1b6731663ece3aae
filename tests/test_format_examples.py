"""Every row of ../shared/reference/format-examples.jsonl parses to its expected calls.

Each row is one model family's reference output (taken from inference-server tests and
docs): `raw`, the exact text, and `expected_calls`, a list of {"name", "arguments"}. The
test offers exactly the tools the row calls and checks that parse() finds exactly those
calls, in order, with those arguments (ids, spans, repairs and text are the corpus
snapshots' business). One parametrized test covers every row, so a new row is tested
without touching this file; the whole test is skipped when ../shared is absent (it is not
shipped with the project).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

import toolgram
from conftest import format_example_params


def _rows() -> list[Any]:
    return format_example_params(lambda row: _slug(row["format"]))


def _slug(label: str) -> str:
    # "mistral_json_array (pre-v11)" -> "mistral_json_array-pre-v11"
    return re.sub(r"[^A-Za-z0-9_.]+", "-", label).strip("-")


def _offered(calls: list[dict[str, Any]]) -> list[str]:
    """The names the row calls, each once, in order of first use."""
    return list(dict.fromkeys(call["name"] for call in calls))


@pytest.mark.parametrize("row", _rows())
def test_format_example(row: dict[str, Any]) -> None:
    expected = row["expected_calls"]
    result = toolgram.parse(row["raw"], _offered(expected))
    got = [{"name": call.name, "arguments": call.arguments} for call in result.calls]
    assert got == expected, (
        f"{row['format']} ({row.get('source_file', '?')}):\n"
        f"  calls:  {got}\n  errors: {result.errors}\n  text:   {result.text!r}"
    )


@pytest.mark.parametrize("row", _rows())
def test_format_example_cut_inside_its_last_call(row: dict[str, Any]) -> None:
    """A reply cut anywhere inside its last call keeps every call it finished: each
    call whose whole span lies in the cut text is still read, in order (the cut-off
    one is repaired or becomes an error; it never takes the others with it)."""
    raw = row["raw"]
    tools = _offered(row["expected_calls"])
    calls = toolgram.parse(raw, tools).calls
    assert len(calls) == len(row["expected_calls"]) > 0  # (what is cut below is there)
    for cut in range(calls[-1].span[0], len(raw)):
        finished = [(c.name, c.arguments) for c in calls if c.span[1] <= cut]
        result = toolgram.parse(raw[:cut], tools)
        got = [(c.name, c.arguments) for c in result.calls][: len(finished)]
        assert got == finished, (
            f"{row['format']} cut at {cut}: {raw[:cut][-40:]!r}\n"
            f"  calls:  {got}\n  errors: {result.errors}\n  text:   {result.text[-80:]!r}"
        )
