"""StreamParser(announce="name") over the XML-ish formats whose headers declare their tags
(`stream_call:`, `stream_param:`; src/toolgram/_grammar/tags.py): every corpus case of each, in
chunkings 1, 3, 7 and random ones. The contract (test_stream_announce.check): close() is
parse(); a call's ArgumentsDelta texts, concatenated, are its final arguments as JSON;
nothing is taken back but by a CallCancelled; ids are parse()'s. And what the echo gains:
a call read without error is never withdrawn, and a long string value arrives in more
than one piece, before the delta that ends its call (`long_string_value_streams` cases).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolgram
from toolgram import ArgumentsDelta, CallCancelled, CallDone, CallStart, StreamParser
from toolgram._grammar.registry import default_registry

from conftest import corpus_cases
from test_stream import chunked, random_chunks
from test_stream_announce import check, feed_all

DECLARED = sorted(name for name, fmt in default_registry().formats.items() if fmt.stream_param is not None)
CASES = [c for c in corpus_cases() if c.format in DECLARED]
CHUNKINGS = [1, 3, 7, "random"]


def pieces(raw: str, size: int | str, seed: str) -> list[str]:
    if size != "random":
        return chunked(raw, size)
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(raw)), min(len(raw) - 1, 40))) if len(raw) > 1 else []
    return [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)])]


def test_the_formats_asked_for_declare_their_tags() -> None:
    assert set(DECLARED) >= {
        "qwen3_coder_xml", "seed_oss_xml", "glm45_arg_kv", "minimax_m2_invoke",
        "deepseek_v32_dsml", "deepseek_v4_dsml", "deepseek_v41_dsml", "kimi_k3_open_close",
    }  # fmt: skip
    assert {c.format for c in CASES} == set(DECLARED)


@pytest.mark.parametrize("size", CHUNKINGS)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_arguments_stream_as_written_and_add_up(case: Any, size: int | str) -> None:
    chunks = pieces(case.raw, size, case.id)
    events = check(case.raw, chunks, case.tools, case.formats, 32_768, case.truncated)
    result = toolgram.parse(case.raw, case.tools, formats=case.formats, truncated=case.truncated)
    if not result.errors:
        assert not [e for e in events if type(e) is CallCancelled]


@pytest.mark.parametrize("size", CHUNKINGS)
@pytest.mark.parametrize("fmt", DECLARED)
def test_a_long_string_value_arrives_in_pieces_before_its_call_ends(fmt: str, size: int | str) -> None:
    (case,) = [c for c in CASES if c.format == fmt and c.name == "long_string_value_streams"]
    sp = StreamParser(case.tools, formats=case.formats, announce="name")
    fed = [sp.feed(chunk) for chunk in pieces(case.raw, size, case.id)] + [sp.flush()]
    (call,) = sp.close().calls
    ends = next(i for i, batch in enumerate(fed) if any(type(e) is CallDone for e in batch))
    starts = next(i for i, batch in enumerate(fed) if any(type(e) is CallStart for e in batch))
    early = [e.text for batch in fed[:ends] for e in batch if type(e) is ArgumentsDelta]
    content = json.dumps(call.arguments["content"], ensure_ascii=False)[1:-1]
    # (the content's text, in more than one delta, from feeds before the one that ends the call)
    with_content = [i for i, batch in enumerate(fed[:ends]) if any(type(e) is ArgumentsDelta for e in batch)]
    assert starts < ends and len(with_content) > 2
    sent = "".join(early)
    assert sent.startswith('{"path": "notes/tides.md", "mode": 644, "content": "# Tides')
    assert len(sent) > len(content) // 2
    assert "Keep <b>this</b> file short." in sent  # (HTML's tags are text: not one of a format's)
    total = sent + "".join(e.text for batch in fed[ends:] for e in batch if type(e) is ArgumentsDelta)
    assert total == json.dumps(call.arguments, ensure_ascii=False)


def test_a_second_call_in_one_block_keeps_the_first_ones_id() -> None:
    # (The first call of a block is announced by its name before the block shows whether more
    # calls follow: its span starts where the block does either way, so its id is known.)
    raw = (
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n</invoke>\n'
        '<invoke name="get_weather">\n<parameter name="city">Oslo</parameter>\n</invoke>\n</minimax:tool_call>'
    )
    result = toolgram.parse(raw)
    assert [c.span[0] for c in result.calls] == [0, raw.index('<invoke name="get_weather">', 30)]
    for size in (1, 4):
        events = check(raw, chunked(raw, size), None, None, 32_768)
        assert not [e for e in events if type(e) is CallCancelled]
        fed, _, _ = feed_all(raw, chunked(raw, size))
        start = next(i for i, batch in enumerate(fed) if CallStart(0, "get_weather", events[0].id) in batch)
        assert start < raw.index("Paris") // size  # (announced before its value came)


@pytest.mark.parametrize(
    "raw, sent",
    [
        # (what goes out before the call's end: a value typed as a string by what the model
        # wrote streams; string="false" and type="integer" wait for their close)
        (
            '<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">\n<｜DSML｜parameter name="n" string="false">[1, 2]'
            '</｜DSML｜parameter>\n<｜DSML｜parameter name="s" string="true">[1, 2]</｜DSML｜parameter>\n'
            "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            '{"n": [1, 2], "s": "[1, 2]',
        ),
        (
            '<|open|>tools<|sep|><|open|>call tool="f"<|sep|><|open|>argument key="s" type="string"<|sep|>true'
            '<|close|>argument<|sep|><|open|>argument key="n" type="integer"<|sep|> 7 <|close|>argument<|sep|>'
            "<|close|>call<|sep|><|close|>tools<|sep|>",
            '{"s": "true"',
        ),
    ],
)
def test_a_type_the_model_wrote_decides_what_streams(raw: str, sent: str) -> None:
    events = check(raw, chunked(raw, 2), None, None, 32_768)
    done = [type(e) for e in events].index(CallDone)
    assert "".join(e.text for e in events[: done - 1] if type(e) is ArgumentsDelta) == sent


# Pieces of the declared formats' tags and of values, in any order: the contract holds
# whatever they make (a call read as written, withdrawn, or never announced).
TAG_SOUP = [
    "<minimax:tool_call>", "</minimax:tool_call>", '<invoke name="f">', "</invoke>", '<parameter name="a">',
    '<parameter name="n">', "</parameter>", '<｜DSML｜function_calls>', '<｜DSML｜invoke name="f">',
    '<｜DSML｜parameter name="a" string="true">', '<｜DSML｜parameter name="n" string="false">', "</｜DSML｜parameter>",
    "</｜DSML｜invoke>", "</｜DSML｜function_calls>", "<|open|>tools<|sep|>", '<|open|>call tool="f"<|sep|>',
    '<|open|>argument key="a" type="string"<|sep|>', '<|open|>argument key="n" type="integer"<|sep|>',
    "<|close|>argument<|sep|>", "<|close|>call<|sep|>", "<|close|>tools<|sep|>", "<tool_call>", "f\n", "</tool_call>",
    "<arg_key>a</arg_key>", "<arg_key>n</arg_key>", "<arg_value>", "</arg_value>", "<function=f>", "<parameter=a>",
    "\n", " ", "text", "42", "[1, 2]", "true", "<b>", "</b>", "3 < 4", "<", "</", "<p", '"', "\\", "é",
]  # fmt: skip
SCHEMA = [{"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer"}}}}]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_tag_soup_keeps_the_contract(data: Any) -> None:
    raw = "".join(data.draw(st.lists(st.sampled_from(TAG_SOUP), max_size=24), label="parts"))
    tools = data.draw(st.sampled_from([None, SCHEMA]), label="tools")
    size = data.draw(st.integers(1, 7), label="size")
    check(raw, chunked(raw, size), tools, None, 32_768)
    check(raw, random_chunks(data, raw), tools, None, 32_768)


@pytest.mark.parametrize(
    "raw",
    [
        "I'll use <function=get_weather>\nlater, once you say which city.",
        "To call a tool write <tool_call>get_weather\nthen its arguments.",
        'The block opens with <invoke name="get_weather">\nand ends with its close.',
    ],
)
def test_an_opener_that_ends_a_line_of_prose_is_not_announced(raw: str) -> None:
    # (An opener is announced once a tag follows it: a line of prose after it is a mention,
    # and a call announced then would be withdrawn from a reply that holds none.)
    assert not toolgram.parse(raw, ["get_weather"]).calls
    for size in (1, 3):
        events = check(raw, chunked(raw, size), ["get_weather"], None, 32_768)
        assert not [e for e in events if type(e) in (CallStart, CallCancelled)]
