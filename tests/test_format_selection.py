"""A format picked by name reads what auto-detect reads of its models' replies.

A user who passes `formats=[the format of their model]` must not get less than
`formats=None`: every format named for a model reads every shape that model's
documentation, chat template and common drift produce (a shape another grammar reads is
brought along by the format's `also:` header lines; see grammars/README.md). Checked,
with only that format selected, on

- each row of ../shared/reference/format-examples.jsonl (skipped when ../shared is
  absent), under the format its label names: its expected calls;
- each corpus case filed under a format's folder (tests/corpus/<format>/) that is about
  that format (auto-detect reads a call of it, or of a format its `also:` lines bring):
  the calls auto-detect reads.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

import toolgram
from conftest import CorpusCase, corpus_cases, format_example_params
from toolgram._grammar.registry import default_registry

# The labels of format-examples.jsonl that are no format's name: the format that is
# named for those models (see docs/formats.md, its models column).
LABELS = {
    "hermes_json": "hermes",
    "ernie45_json": "hermes",
    "longcat_json": "longcat",
    "pythonic_list": "pythonic",
    "lfm2_pythonic": "lfm2",
    "mistral_json_array": "mistral",
    "mistral_args": "mistral",
    "mistral_call_id": "mistral",
    "glm47_arg_kv": "glm45_arg_kv",
    "granite_tool_call_array": "granite",
    "granite_20b_fc": "granite_20b_fc",
    "internlm_action": "internlm",
    "jamba_tool_calls_array": "jamba",
    "hunyuan_a13b_tool_calls_array": "jamba",
    "minimax_m1_jsonl": "jamba",
    "apriel_tool_calls_array": "apriel",
    "nemotron_toolcall_array": "nemotron",
    "phi4_mini_functools": "functools",
    "firefunction_v2_functools": "functools",
    "phi4_mini_native_tool_call": "granite",
    "xlam_bare_json_array": "xlam",
    "functionary_v31_function_tag": "functionary_v31",
    "functionary_v32_recipient": "functionary_v32",
    "glm4_0414_markerless": "functionary_v32",
    "cohere_action_json": "cohere",
    "command_r_plus_action_markdown": "command_r",
    "gigachat3_function_call": "gigachat",
    "apertus_name_keyed_json": "apertus",
    "plamo3_markers": "plamo3",
    "llama31_builtin_python_tag": "llama3_builtin",
}

REGISTRY = default_registry()


def named_format(label: str) -> str | None:
    """The format a row's label names: its first word, when a format has that name
    (`harmony (gpt-oss)`), else LABELS's entry."""
    word = re.match(r"\w+", label)
    first = word.group() if word else label
    return first if first in REGISTRY.formats else LABELS.get(first)


def family(name: str) -> set[str]:
    """The format and those formats=[name] brings along (its `also:` lines)."""
    return {f.name for f in REGISTRY.select([name])}


def _rows() -> list[Any]:
    return format_example_params(lambda row: row["format"].split()[0])


@pytest.mark.parametrize("row", _rows())
def test_format_example_with_only_its_format(row: dict[str, Any]) -> None:
    fmt = named_format(row["format"])
    assert fmt is not None, f"label {row['format']!r} names no format: add it to LABELS"
    expected = row["expected_calls"]
    tools = list(dict.fromkeys(call["name"] for call in expected))
    result = toolgram.parse(row["raw"], tools, formats=[fmt])
    got = [{"name": call.name, "arguments": call.arguments} for call in result.calls]
    assert got == expected, f"formats=[{fmt!r}]: {got}\n  errors: {result.errors}\n  text: {result.text!r}"


def _about_its_format() -> list[Any]:
    """Corpus cases (without a formats.json of their own) whose folder's format, or those
    it brings along, read every call of them under auto-detect, with those calls."""
    out = []
    for case in corpus_cases():
        if case.formats is not None or case.format not in REGISTRY.formats:
            continue
        auto = _parse(case, None)
        # (Every call of its format's family: a case about another format's call in
        # one of its values, QA19 R15's, reads that call only with that format.)
        if auto.calls and {c.format for c in auto.calls} <= family(case.format):
            out.append(pytest.param(case, [(c.name, c.arguments) for c in auto.calls], id=case.id))
    return out


def _parse(case: CorpusCase, formats: list[str] | None) -> toolgram.ParseResult:
    return toolgram.parse(
        case.raw, case.tools, formats=formats, in_think=case.in_think, truncated=case.truncated
    )


@pytest.mark.parametrize("case,calls", _about_its_format())
def test_corpus_case_with_only_its_format(case: CorpusCase, calls: list[Any]) -> None:
    result = _parse(case, [case.format])
    got = [(c.name, c.arguments) for c in result.calls]
    assert got == calls, f"formats=[{case.format!r}]: {got}\n  errors: {result.errors}"


def test_also_names_formats() -> None:
    """Every built-in `also:` line names a format (select passes over a name none has)."""
    for fmt in REGISTRY.formats.values():
        for name in fmt.also:
            assert name in REGISTRY.formats, f"{fmt.name}: also: {name} is no format"


@pytest.mark.parametrize("name", sorted(REGISTRY.formats))
def test_also_brings_only_the_formats_it_names(name: str) -> None:
    # (not the ones those name in turn: QA7 D12)
    fmt = REGISTRY.formats[name]
    assert [f.name for f in REGISTRY.select([name])] == [name, *dict.fromkeys(a for a in fmt.also if a != name)]


@pytest.mark.parametrize(
    "raw",
    [
        # Hermes's and Mistral's other shapes, which their own `also:` lines bring: not
        # xLAM's (xlam names hermes and mistral for its list in their wrappers). QA7 D12.
        '<response><tools>{"name": "book_table", "arguments": {"venue": "Nopa"}}</tools></response>',
        '<|im_start|>assistant\n<tool_call>\n<function>book_table</function>\n{"venue": "Nopa"}\n</tool_call><|im_end|>',
    ],
)
def test_a_format_named_by_also_brings_none_of_its_own(raw: str) -> None:
    assert toolgram.parse(raw, ["book_table"], formats=["xlam"]).calls == []


@pytest.mark.parametrize(
    "formats,raw,name",
    [
        # The shapes of issue 19: a model's format picked by name reads them.
        (["llama4_pythonic"], '[book_table(venue="Nopa", guests=4)]', "book_table"),
        (["llama3_json", "llama3_builtin"], '{"name": "book_table", "arguments": {"venue": "Nopa"}}', "book_table"),
        (["gemma4_call"], "call:book_table{venue:<|\"|>Nopa<|\"|>}", "book_table"),
        (["fenced_json"], '```\n{"name": "book_table", "arguments": {"venue": "Nopa"}}\n```', "book_table"),
        (["glm45_arg_kv"], "book_table\n<arg_key>venue</arg_key>\n<arg_value>Nopa</arg_value>", "book_table"),
        # (xLAM-2 wraps its list in Hermes's tags or opens it with Mistral's token: QA6 D4)
        (["xlam"], '<tool_call>[{"name": "book_table", "arguments": {"venue": "Nopa"}}]</tool_call>', "book_table"),
        (["xlam"], '[TOOL_CALLS][{"name": "book_table", "arguments": {"venue": "Nopa"}}]', "book_table"),
    ],
)
def test_a_models_format_reads_its_other_shapes(formats: list[str], raw: str, name: str) -> None:
    result = toolgram.parse(raw, [name], formats=formats)
    assert [c.name for c in result.calls] == [name], result.errors
    assert result.calls[0].format in family(formats[0])
    # (and formats= still restricts: a format of other models reads none of it)
    assert toolgram.parse(raw, [name], formats=["harmony"]).calls == []
