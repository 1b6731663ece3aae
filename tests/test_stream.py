"""StreamParser: streamed in any pieces, it reports what parse() reports, and no later.

For every case (the corpus, the inline cases below, the raws of
../shared/reference/format-examples.jsonl), fed in chunks of 1, 2, 3, 7 and 64
characters and in random splits:
  * close() equals parse(whole) (text, calls, errors, reasoning);
  * the Text events concatenated equal result.text, the Reasoning events
    result.reasoning, the Error events result.errors;
  * each call: one CallStart (index = its place in result.calls), its
    ArgumentsDelta texts adding up to json.dumps(arguments), one CallDone whose
    call equals result.calls[index];
  * a call that ends well before the stream does is completed by feed(), not flush().
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolgram
from toolgram.events import ArgumentsDelta, CallDone, CallStart, Error, Reasoning, Text
from toolgram._pipeline import DEFAULT_MAX_CHARS
from toolgram._stream.parser import _LANE_SYNC, StreamParser
from toolgram._lalr import nest as _nest

from conftest import best_cpu_time, corpus_cases, shared_path

# XML-ish formats whose value is raw text up to the next tag: XMLISH and xmlish(), shared
# with benchmarks/bench_stream_formats.py (benchmarks/_replies.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from _replies import XMLISH, xmlish  # noqa: E402

CHUNK_SIZES = (1, 2, 3, 7, 64)

# (id, raw, tools, formats, max_chars)
H = '<tool_call>{{"name": "{}", "arguments": {}}}</tool_call>'

# "<" at the start, inside, doubled, before the close tag; tag names with more after them.
_LT_VALUE = "<b>x</b> a<b <<c <param2 <functionx <invoke_ </parameterx <\n<div class=a>y</div>\n<"
INLINE: list[tuple[str, str, Any, Any, int]] = [
    ("empty", "", None, None, DEFAULT_MAX_CHARS),
    ("blank", " \n\t \n", None, None, DEFAULT_MAX_CHARS),
    ("prose_only", "Just words, 3 < 5 and x > 2, <b>bold</b> & `code`.", None, None, DEFAULT_MAX_CHARS),
    ("seed_prose_filter", 'Sure <tool_call>{"name":"open_cart"}</tool_call> done', None, None, DEFAULT_MAX_CHARS),
    ("hermes_one", "Sure." + H.format("search", '{"q": "cats", "n": 1500.25}') + " done", None, None, DEFAULT_MAX_CHARS),
    ("hermes_two_adjacent", H.format("a", '{"x": 1}') + H.format("b", '{"y": [1, 2]}'), None, None, DEFAULT_MAX_CHARS),
    (
        "hermes_newlines",
        'Let me look.\n\n<tool_call>\n{"name": "a", "arguments": {"x": true}}\n</tool_call>\n'
        '<tool_call>\n{"name": "b", "arguments": {"y": null}}\n</tool_call>\n\nDone.  \n',
        None, None, DEFAULT_MAX_CHARS,
    ),
    ("hermes_words_around", "Before" + H.format("a", "{}") + "after" + H.format("b", "{}") + "end", None, None, DEFAULT_MAX_CHARS),
    (
        "hermes_ids",
        '<tool_call>{"name": "a", "id": "call_123", "arguments": {}}</tool_call>'
        '<tool_call>{"name": "a", "id": "call_123", "arguments": {"k": 2}}</tool_call> dup ids',
        None, None, DEFAULT_MAX_CHARS,
    ),
    (
        # A Python value broken for good (Driver._cut): the region ends at the end
        # marker, and the stream reads the next call before its own end.
        "lfm2_stray_quote_then_call",
        '<|tool_call_start|>[get_weather(city="Par"is")]<|tool_call_end|> and then '
        '<|tool_call_start|>[search(q="hotels")]<|tool_call_end|> with closing words after both calls.',
        None, None, DEFAULT_MAX_CHARS,
    ),
    (
        # An apostrophe in a single-quoted string ('It's'): split right after the quote,
        # the stream must wait for the next character (Driver's _Extent, `closing`).
        "lfm2_apostrophe",
        "<|tool_call_start|>[say(text='It's fresh', to='O'Brien')]<|tool_call_end|> and more text after it.",
        None, None, DEFAULT_MAX_CHARS,
    ),
    (
        "hermes_unclosed_at_end",
        'Opening it.<tool_call>{"name": "open_product", "arguments": {"slug": "trail-cap"}}',
        ["open_product", "search_products"], None, DEFAULT_MAX_CHARS,
    ),
    (
        "hermes_unclosed_then_next",
        '<tool_call>{"name": "a", "arguments": {"x": 1}}\n<tool_call>{"name": "b", "arguments": {}}</tool_call> ok',
        None, None, DEFAULT_MAX_CHARS,
    ),
    ("hermes_truncated_json", 'On it <tool_call>{"name": "a", "arguments": {"q": "hal', None, None, DEFAULT_MAX_CHARS),
    ("hermes_unknown_tool", "Hm " + H.format("nope", "{}") + " and " + H.format("search", '{"q": 1}') + " x", ["search"], None, DEFAULT_MAX_CHARS),
    ("hermes_broken", 'A <tool_call>{"name": "search", "arguments": {"q": @}}</tool_call> B ' + H.format("ok", "{}") + " tail text here", None, None, DEFAULT_MAX_CHARS),
    ("hermes_duplicate_name_key", '<tool_call>{"name": "a", "arguments": {}, "name": "b"}</tool_call> after', None, None, DEFAULT_MAX_CHARS),
    ("hermes_not_object", '<tool_call>{"name": "a", "arguments": 5}</tool_call> after', None, None, DEFAULT_MAX_CHARS),
    ("hermes_repairs", "<tool_call>{'name': 'a', 'arguments': {'x': True, 'y': [1, 2,],}}</tool_call>", None, None, DEFAULT_MAX_CHARS),
    ("hermes_trailing_text", '<tool_call>{"name": "a", "arguments": {}} then words</tool_call> fin', None, None, DEFAULT_MAX_CHARS),
    # A marker inside a JSON string is string content; an unclosed string still ends at it.
    ("hermes_close_tag_in_string", '<tool_call>{"name": "a", "arguments": {"t": "x </tool_call> y"}}</tool_call> and after it, words', None, None, DEFAULT_MAX_CHARS),
    ("hermes_open_tag_in_string", 'Hi <tool_call>{"name": "a", "arguments": {"t": "<tool_call>"}}</tool_call> ' + H.format("b", "{}") + " words", None, None, DEFAULT_MAX_CHARS),
    ("hermes_unclosed_string_then_call", '<tool_call>{"name": "a", "arguments": {"t": "x}}</tool_call> ' + H.format("b", "{}") + " and words after", None, None, DEFAULT_MAX_CHARS),
    ("mfcs_close_tag_in_string", '<mfcs_tool><name>f</name><parameters>{"h": "</parameters>"}</parameters></mfcs_tool> after it', None, None, DEFAULT_MAX_CHARS),
    ("mention", "Use <tool_call> tags to call tools, and `<tool_call>` in code.", None, None, DEFAULT_MAX_CHARS),
    ("near_markers", "<tool_cab> <tool_call <|tool_call_sta <think ``` json", None, None, DEFAULT_MAX_CHARS),
    (
        "unicode",
        "Voilà 😀 — " + H.format("ünï", '{"s": "naïve ✓ 😀", "e": "\\u00e9\\ud83d\\ude00"}') + " fin ✓",
        None, None, DEFAULT_MAX_CHARS,
    ),
    ("crlf", "Line one\r\n<tool_call>\r\n" + '{"name": "a", "arguments": {"x": "a\\r\\nb"}}' + "\r\n</tool_call>\r\nLine two\r\n", None, None, DEFAULT_MAX_CHARS),
    ("long_strings", "x " + H.format("w", json.dumps({"content": "<html> " * 300 + "tail", "n": 12345678901234})) + " y", None, None, DEFAULT_MAX_CHARS),
    ("think_then_call", "<think>plan: call a, 3 < 4</think>\nAnswer" + H.format("a", "{}") + "ok", None, None, DEFAULT_MAX_CHARS),
    ("think_unclosed_with_call", "<think>I will call " + H.format("a", '{"x": 1}') + " now", None, None, DEFAULT_MAX_CHARS),
    ("think_close_only", "reasoning here</think>The answer is 4." + H.format("a", "{}"), None, None, DEFAULT_MAX_CHARS),
    ("think_nested", "<think>outer <think> inner</think> after", None, None, DEFAULT_MAX_CHARS),
    (
        "lfm2",
        '<|tool_call_start|>[get_weather(city="Paris", days=3), add(a=1, b=[1, 2], c={"k": (1, 2)})]<|tool_call_end|>Done.',
        None, None, DEFAULT_MAX_CHARS,
    ),
    ("lfm2_json", 'x <|tool_call_start|>[{"name": "a", "arguments": {"q": "v"}}]<|tool_call_end|> y', None, None, DEFAULT_MAX_CHARS),
    ("lfm2_unclosed", "Check <|tool_call_start|>[f(x=1.5, s='a, b')]", None, None, DEFAULT_MAX_CHARS),
    ("lfm2_no_brackets", "<|tool_call_start|>f(x=None), g(y=False)<|tool_call_end|> and more text follows", None, None, DEFAULT_MAX_CHARS),
    ("fenced", 'Here:\n```json\n{"name": "a", "arguments": {"x": [1, 2]}}\n```\nthanks', None, None, DEFAULT_MAX_CHARS),
    ("fenced_list", '```json\n[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"z": "`"}}]\n``` ok', None, None, DEFAULT_MAX_CHARS),
    ("fenced_example", 'Example:\n```json\n{"a": 1}\n```\nand ```python\nprint(1)\n``` done', None, None, DEFAULT_MAX_CHARS),
    ("json_reply_call", '{"type": "tool_call", "name": "a", "arguments": {"x": 1}}', None, None, DEFAULT_MAX_CHARS),
    ("json_reply_message", '  {"type": "message", "text": "hello there"}\n', None, None, DEFAULT_MAX_CHARS),
    ("json_reply_then_text", '{"name": "a", "arguments": {}} and then some words', None, None, DEFAULT_MAX_CHARS),
    (
        "mfcs",
        "Sure.\n<mfcs_tool><instructions>look up</instructions><call_id>1</call_id><name>get_weather</name>"
        '<parameters>{"city": "Paris"}</parameters></mfcs_tool>\n'
        '<mfcs_agent><agent_id>a1</agent_id><name>helper</name><parameters>{}</parameters></mfcs_agent>'
        '<mfcs_memory><memory_id>m</memory_id><name>store</name><parameters>{"v": "<x>"}</parameters></mfcs_memory> bye',
        None, None, DEFAULT_MAX_CHARS,
    ),
    ("mfcs_broken", "<mfcs_tool><name>search</name><parameters>{\"q\": 1}</parameters><bogus></mfcs_tool> after", None, None, DEFAULT_MAX_CHARS),
    ("pythonic_tools", '[get_weather(city="Paris"), get_time(tz="UTC")]', ["get_weather", "get_time"], None, DEFAULT_MAX_CHARS),
    ("pythonic_line", 'Let me check.\n[get_weather(city="Paris")]\nDone, and more words after it.', ["get_weather"], None, DEFAULT_MAX_CHARS),
    ("pythonic_not_offered", "[1, 2, 3] are numbers and [f(x=1)] too", ["g"], None, DEFAULT_MAX_CHARS),
    (
        "mixed_formats",
        "a " + H.format("a", "{}") + ' b <|tool_call_start|>[f(x=1)]<|tool_call_end|> c '
        '<mfcs_tool><name>m</name><parameters>{}</parameters></mfcs_tool> d ```json\n{"name": "z"}\n``` e',
        None, None, DEFAULT_MAX_CHARS,
    ),
    ("only_hermes", "a " + H.format("a", "{}") + " <|tool_call_start|>[f(x=1)]<|tool_call_end|>", None, ["hermes"], DEFAULT_MAX_CHARS),
    ("max_chars_mid_call", "Some prose first. " + H.format("a", '{"x": "long value here"}') + " after the cap", None, None, 40),
    ("max_chars_mid_prose", "Words before the cap, <think>and</think> words after it " + H.format("a", "{}"), None, None, 25),
    ("max_chars_zero", "Hello " + H.format("a", "{}"), None, None, 0),
    ("max_chars_at_end_of_call", H.format("a", "{}") + "x", None, None, len(H.format("a", "{}"))),
    # An open call's prose that max_chars cuts, then the rest (QA7 D10), and a call whole
    # at the limit (QA7 D11).
    *((f"max_chars_in_open_calls_prose_{n}", '<tool_call>{"name": "f", "arguments": {"a": 1}}xxxxxxxxxx', None, None, n) for n in (47, 48, 49, 50)),
    ("max_chars_at_a_whole_calls_end", '<tool_call>{"name": "f", "arguments": {"a": \'x\'}}</tool_call>\n\nmore', None, None, 61),
    *((f"{f}_value_with_lt", "Writing it. " + xmlish(f, _LT_VALUE) + " Done.", None, None, DEFAULT_MAX_CHARS) for f in XMLISH),
    *((f"{f}_value_with_lt_alone", xmlish(f, _LT_VALUE), None, [f], DEFAULT_MAX_CHARS) for f in XMLISH),
    # (Longer than the value's pattern: its match is resumed inside the value.)
    *((f"{f}_long_value_with_lt", xmlish(f, _LT_VALUE * 24) + " end", None, [f], DEFAULT_MAX_CHARS) for f in XMLISH),
    # A marker in a string, a key after it: `tr` of `true` (and `-` of a number) still grows.
    ("marker_in_string_then_a_literal", '<tool_call>{"name": "f", "arguments": {"a": "x</tool_call>y", "city1": true}}</tool_call>', None, None, DEFAULT_MAX_CHARS),
    ("fence_in_string_then_a_key", '```json\n{"name": "write_file", "arguments": {"content": "Run:\\n```\\nmake\\n```\\n", "path": "README.md"}}\n```\nDone.', None, None, DEFAULT_MAX_CHARS),
    ("marker_in_string_then_a_number", '<longcat_tool_call>{"name": "f", "arguments": {"s": "</longcat_tool_call>", "n": -3.5}}</longcat_tool_call> ok', None, None, DEFAULT_MAX_CHARS),
    # The failure quotes the token at the start of the region: the stream waits for all it quotes.
    ("cofl_unexpected_at_region_start", "<cofl:tool_calls><cofl:tool_callxyz</cofl:tool_calls>", None, None, DEFAULT_MAX_CHARS),
    # A reply that is only the start of a marker: no region began, so no close tag was cut.
    ("only_the_start_of_a_marker", "<|", None, None, DEFAULT_MAX_CHARS),
    # A whole-reply call cut off is the whole reply or nothing: no part of it is kept.
    ("bare_call_cut_in_its_arguments", "arg2(x", None, None, DEFAULT_MAX_CHARS),
    ("bare_call_cut_then_markup", ' arg2(</a><|eot_id|> b<invoke name="search">', None, None, DEFAULT_MAX_CHARS),
    # A section whose next call is cut off: the finished call is kept.
    (
        "kimi_k2_cut_at_next_call",
        '<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"a": 1}'
        "<|tool_call_end|><|tool_call_begin|>",
        None, None, DEFAULT_MAX_CHARS,
    ),
    # A value's close-tag run, then `</parameter><parameter` glued: the opener after the run
    # is told only once the text shows all of it (a 1-character stream saw `<param` at a
    # delta's end and took it for a whole `<param` tag; then its replay of the failed region
    # waited, and the calls before it were not kept).
    (
        "minimax_other_close_tags_then_the_next_parameter",
        '<minimax:tool_call><invoke name="write_file"><parameter name="content">It ends with </param></function>'
        '</parameter><parameter name="path">a.md</parameter></invoke></minimax:tool_call>',
        None, None, DEFAULT_MAX_CHARS,
    ),
    ("dots_other_close_tags_then_cut", '<dots_function_call><invoke name="f"><parameter name="b">x</param></function></parameter><parameter name="e">', None, None, DEFAULT_MAX_CHARS),
    ("minimax_close_tags_again_after_the_call", '<minimax:tool_call><invoke name="f"><parameter name="b">x</parameter></invoke></parameter><parameter name=', None, None, DEFAULT_MAX_CHARS),
    ("dots_close_tags_again_then_cut_in_a_tag", '<dots_function_call><invoke name="g"><parameter name="c"> </minimax:tool_call></parameter></invoke></parameter><paramete', None, None, DEFAULT_MAX_CHARS),
    ("minimax_parameter_with_no_name", '<invoke name=s><parameter e=></parameter>t<parameter ', None, None, DEFAULT_MAX_CHARS),
    ("minimax_cut_after_text_glued_to_a_close_tag", '<invoke name=s><parameter name="a">1</parameter>t<parameter ', None, None, DEFAULT_MAX_CHARS),    # A tag cut short in a value (`<cofl:`, no name, no `>`), then the value's own close: the
    # stream's look at the tag kept a place to read the value's pattern on from past that
    # close (the end of the text so far, not where the match stopped), and read the value
    # on to the end of the reply (cut_value) where parse() ends it at the close (fuzz seed 7
    # #7209).
    ("cofl_value_with_a_cut_tag_then_its_close", '<cofl:tool_call id="0" name="c"><cofl:value name="q" type="raw">See <cofl:</cofl:value></cofl:tool_call>', None, None, DEFAULT_MAX_CHARS),
]


def _format_examples() -> list[tuple[str, str, Any, Any, int]]:
    shared = shared_path()
    path = shared / "reference" / "format-examples.jsonl" if shared else None
    if path is None or not path.exists():
        return []
    cases = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if line.strip():
            record = json.loads(line)
            cases.append((f"example_{n:02d}", record["raw"], None, None, DEFAULT_MAX_CHARS))
    return cases


EXAMPLES = _format_examples()
CASES = INLINE + EXAMPLES


def test_shared_format_examples_are_streamed(shared_dir: Path) -> None:
    """The stream tests here, in test_frame, test_prose_filter and test_stream_announce
    take every format example of ../shared as a case: without that folder they run on
    the other cases only, and this test's skip says so."""
    assert len(EXAMPLES) >= 50, len(EXAMPLES)


# -- the checker ------------------------------------------------------------------
def chunked(raw: str, size: int) -> list[str]:
    return [raw[i : i + size] for i in range(0, len(raw), size)]


def random_chunks(data: Any, raw: str) -> list[str]:
    """raw cut at up to 30 places hypothesis draws."""
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=30), label="cuts"))
    return [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)])]


def stream(
    raw: str, chunks: list[str], tools: Any, formats: Any, max_chars: int, in_think: bool = False, truncated: str = "repair"
):
    assert "".join(chunks) == raw
    sp = StreamParser(tools, formats=formats, max_chars=max_chars, in_think=in_think, truncated=truncated)
    fed = []
    for chunk in chunks:
        fed.append(sp.feed(chunk))
    tail = sp.flush()
    return fed, tail, sp.close()


def _in_open_think(raw: str, start: int) -> bool:
    before = raw[:start]
    return before.rfind("<think>") > before.rfind("</think>") and "</think>" not in raw[start:]


_EXPECTED: dict[tuple, Any] = {}


def expected_result(
    raw: str, tools: Any, formats: Any, max_chars: int, in_think: bool = False, truncated: str = "repair"
) -> Any:
    """parse(raw, ...), once per case (cases are checked with many splits)."""
    key = (raw, repr(tools), repr(formats), max_chars, in_think, truncated)
    if key not in _EXPECTED:
        if len(_EXPECTED) > 64:
            _EXPECTED.clear()
        _EXPECTED[key] = toolgram.parse(
            raw, tools, formats=formats, max_chars=max_chars, in_think=in_think, truncated=truncated
        )
    return _EXPECTED[key]


def check(
    raw: str,
    chunks: list[str],
    tools: Any = None,
    formats: Any = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    timely: bool = True,
    in_think: bool = False,
    truncated: str = "repair",
) -> None:
    expected = expected_result(raw, tools, formats, max_chars, in_think, truncated)
    fed, tail, result = stream(raw, chunks, tools, formats, max_chars, in_think, truncated)
    where = f"chunks {[len(c) for c in chunks][:12]}…"
    assert (result.text, result.calls, result.errors, result.reasoning) == (
        expected.text,
        expected.calls,
        expected.errors,
        expected.reasoning,
    ), where
    events = [e for batch in fed for e in batch] + tail
    assert "".join(e.text for e in events if type(e) is Text) == expected.text, where
    assert "".join(e.text for e in events if type(e) is Reasoning) == expected.reasoning, where
    assert [e.message for e in events if type(e) is Error] == expected.errors, where
    assert all(e.text for e in events if type(e) in (Text, Reasoning)), "empty text event"
    # The audit trail: the same segments (ParseResult leaves them out of ==), however
    # the deltas cut the prose.
    assert result.segments == expected.segments, where

    # The calls: CallStart, ArgumentsDelta*, CallDone, indexes in order.
    args: dict[int, list[str]] = {}
    done: list[Any] = []
    open_index = None
    for e in events:
        if type(e) is CallStart:
            assert open_index is None and e.index == len(done), where
            assert e.name == expected.calls[e.index].name, where
            assert e.id == expected.to_openai_message()["tool_calls"][e.index]["id"], where
            open_index = e.index
            args[e.index] = []
        elif type(e) is ArgumentsDelta:
            assert e.index == open_index and e.text, where
            args[e.index].append(e.text)
        elif type(e) is CallDone:
            assert e.index == open_index, where
            done.append(e.call)
            open_index = None
    assert open_index is None
    assert done == expected.calls, where
    for i, call in enumerate(done):
        assert "".join(args[i]) == json.dumps(call.arguments, ensure_ascii=False)

    # Timeliness: a call whose region ends well before the stream does is done by feed().
    if not timely:
        return
    done_at: dict[int, int] = {}  # call index -> chunk number (len(fed) = flush)
    for k, batch in enumerate([*fed, tail]):
        for e in batch:
            if type(e) is CallDone:
                done_at[e.index] = k
    limit = len(raw) if max_chars is None else min(len(raw), max_chars)
    regions: list[tuple[int, int]] = []
    last_kind = ""
    for s in expected.segments:
        if s.kind not in ("call", "error"):
            continue
        if regions and regions[-1][1] == s.start and (s.kind == "error" or last_kind == "error"):
            # (A call refused in a region that gave one is an error segment of its
            # own, between the region's call segments: one region still.)
            regions[-1] = (regions[-1][0], s.end)
        else:
            regions.append((s.start, s.end))
        last_kind = s.kind
    for i, call in enumerate(expected.calls):
        # The region holding the call (several calls may share one) ends at `end`.
        end = max([b for a, b in regions if a <= call.span[0] < b] or [call.span[1]])
        later = raw[end:limit]
        if call.format == "json_reply" or _in_open_think(raw, call.span[0]) or len(later.strip()) < 32:
            continue
        rest = [x for x in expected.segments if x.start >= end]
        kept = "".join(raw[x.start : x.end] for x in rest if x.kind == "text")
        as_prose = any(x.kind == "markup" for x in rest) and all(x.kind in ("text", "markup") for x in rest) and "".join(expected.text.split()).endswith("".join(kept.split()))
        if expected.errors and (expected.text.endswith(later.strip()) or as_prose):
            # The rest of the reply is a call cut off by the end, kept as prose with its
            # error (its markers markup, no text, mention.failed_prose: the rest text and
            # markup alone): the region holding both calls could only be settled by the end.
            continue
        if "closed_tag" in call.repairs and expected.text.endswith(later.strip()):
            # A call whose close was left out, then prose to the end of the reply: its
            # region, still open, holds the prose (Hermes's remark after the JSON) until
            # the end tells that no close comes.
            continue
        if "closed_tag" in call.repairs and call.format == "hermes" and "<" not in later:
            # A Hermes call whose close was left out, then prose and a call of another
            # format read from its payload's tail (issue 19: `{…}\nAnd the time:\n
            # [TOOL_CALLS]…`): the payload token runs to the next `<` or the end of the
            # reply, and only its end tells whether `</tool_call>` closes it after that
            # text (then the text is the call's remark, as before): held as before.
            continue
        if "mismatched_quote" in call.repairs and '"' not in raw[call.span[1] : limit]:
            # A JSON string closed with the other quote, its own quote nowhere after it
            # (`{"a": "x'} Then it's fine.` with no end marker): a later `"` could still
            # make it a whole string holding the prose, so only the end tells (QA22 D9;
            # a Hermes call so repaired waits the same way).
            continue
        assert done_at[i] < len(fed), f"call {i} ({call.name}) left to flush(); {where}"


# -- the tests ----------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_stream_matches_parse(case: tuple) -> None:
    _, raw, tools, formats, max_chars = case
    for size in CHUNK_SIZES:
        check(raw, chunked(raw, size), tools, formats, max_chars)


SHORT = [c for c in INLINE if len(c[1]) <= 400]  # (the long ones: covered by the chunked runs)


@pytest.mark.parametrize("case", SHORT, ids=[c[0] for c in SHORT])
def test_every_single_split(case: tuple) -> None:
    """Two pieces, cut at every position: every marker split at every place."""
    _, raw, tools, formats, max_chars = case
    for cut in range(len(raw) + 1):
        check(raw, [raw[:cut], raw[cut:]], tools, formats, max_chars)


# Replies the end cut inside a call, of each family (the corpus has more, whole and
# streamed in chunks): every split, with each truncated mode.
TRUNCATED = [
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Par',
    '<tool_call>{"name": "get_time"',
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"',
    '[get_weather(city="Lyon"), get_time(',
    '[get_weather(city="Lyon"] [get_time(tz="UTC")] [get_time(tz="Eu',  # (QA26 R2: a list closed before its `)` first)
    "<tool_call>\n<function=run_shell>\n<parameter=command>\nrm -rf /",
    "<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>unit</arg_key>",
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json",
    '<|tool_call>call:get_weather{city:<|"|>Par',
]


@pytest.mark.parametrize("raw", TRUNCATED)
@pytest.mark.parametrize("truncated", ["repair", "error"])
def test_a_reply_cut_inside_a_call_streams_as_it_parses(raw: str, truncated: str) -> None:
    for cut in range(len(raw) + 1):
        check(raw, [raw[:cut], raw[cut:]], truncated=truncated)
    check(raw, chunked(raw, 1), truncated=truncated)


# Replies the end cut one token after a call's opener (mention.cut_opener: an error, no
# prose), and their likes that more text makes prose: a stream that decided on the text so
# far, `{` after the opener, told prose where parse() told the error (fuzz 7/1011656).
CUT_AFTER_OPENER = [
    "<｜tool\\_calls\\_begin｜>\n{",
    "<｜tool▁calls▁begin｜>{",
    "<｜tool\\_calls\\_begin｜>\n\n{  ",
    "<｜tool\\_calls\\_begin｜>\n<｜tool",
    "<｜tool\\_calls\\_begin｜>\n{ x",
    "<｜tool\\_calls\\_begin｜>\n{x",
    "<｜tool\\_calls\\_begin｜>\n" + "{" * 30,
]


@pytest.mark.parametrize("raw", CUT_AFTER_OPENER)
@pytest.mark.parametrize("tools", [None, ["get_weather"]])
def test_a_reply_cut_after_an_opener_streams_as_it_parses(raw: str, tools: Any) -> None:
    for cut in range(len(raw) + 1):
        check(raw, [raw[:cut], raw[cut:]], tools)
    for size in (1, 2, 3, 7):
        check(raw, chunked(raw, size), tools)


# A single-quoted Python value broken before a marker that its string, as Python reads
# it, runs over: whether a stream cut it there hung on the text it had when it looked
# (fuzz seed 7 #8029655, #8128411, #8138410, minimized): the string never closing (its
# `'a` an apostrophe), parse() took the end marker for the string's text, an empty call
# (4359011); closing after the marker with a quote too many, parse() read it on as the
# stray quote's, where a stream that looked before that close cut it at the marker; cut at
# another format's marker, the blank before it was the string's in parse() alone; its
# own start marker first in it, then a break before its end marker (`'x` an apostrophe,
# fuzz seed 7 #9065238), parse() took the start marker for a mention, the value whole to
# the reply's end (an empty call holding the calls after it), where a stream that looked
# before the end cut it at the end marker. Cut at a start marker that begins no call
# (another format's, then nothing a call reads; its own, then ` )]`), the broken call is
# told, an error, as parse() tells it once that marker's region is read (QA23 R1, R2): a
# stream waits for that reading (a call salvage keeps there is a call, the broken one prose).
# Every delta size, so every place a look can fall.
OPEN_STRING_CUTS = [
    "<|tool_call_start|>y(t='\"]|<|tool_call_end|>'a f",
    "<|tool_call_start|>y(t='\"]='x<|tool_call_start|>",
    "<|tool_call_start|>y(t='x\"]='x<|tool_call_start|>'')]",
    "<|tool_call_start|>y(t='\"] <tool_call>'/')|",
    "<|tool_call_start|>e(c='<|tool_call_start|>'x\"]<|tool_call_end|>",
    # Read up to its own marker, then broken for good before a later one (#9067311,
    # #9071606): cut at that later marker as a stream cuts it while the reply goes on,
    # where parse() took it whole at its start marker (an empty call) or cut it at its
    # end marker, told by the end of the reply.
    "<|tool_call_start|>[e(nt='\n\n<|tool_call_start|>[sat='x\"]o<|tool_call_start|>[",
    "<|tool_call_start|>y(t='.<|tool_call_start|>[say='x\"]<|tool_call_end|>",
    "<|tool_call_start|>y(t='<|tool_call_end|>'x\"]<tool_call>",
    "<|tool_call_start|>[f(a=1, b='\"]|<tool_call><|tool_call_end|>",
    "<|tool_call_start|>[r(y='\"]=[TOOL_CALLS]<|tool_call_end|>",
    "<|tool_call_start|>[say(text='x\"]|<|tool_call_start|> )]",
    "<|tool_call_start|>[say(text='x\"]|<|tool_call_start|>",
    "<|tool_call_start|>[y(t='\"]='y<tool_call>'')]",
    "<|tool_call_start|>[say(text='x\"]|<|tool_call_start|>[g(b=1)]<|tool_call_end|>",
    "<|tool_call_start|>[f(a=1, b=\"x\"]|<|tool_call_start|>[g(b=1)]\")]",
    # Read up to such a marker, the value cut there is a call, but the marker begins no
    # call: an error naming the value, told once that marker's region is read (QA23 P4).
    # A value whole before the list's `]` right before the marker is the list closed (the
    # call, then prose). (Where the marker begins a call, `…'x"]<tool_call>{…}</tool_call>`,
    # the cut stands: both calls, held to flush() by a stream, as before.)
    "<|tool_call_start|>[f(a=1, b='x\"]<tool_call>'s all.<|tool_call_end|>",
    "<|tool_call_start|>[f(a=1, b='x']<tool_call>'s all.<|tool_call_end|>",
    # Nor a value whole before `]]` (the call's `)` written as a `]`, then the list's) or
    # other closers, then the marker: the calls, the marker prose (QA26 R1).
    '<|tool_call_start|>[f(a="x"]] <function= ok',
    '<|tool_call_start|>[g(b="y"),f(a="x"]] <function=',
    "<|python_start|>[f(a=\"x\"]] <tool_call>not json",
    '<|tool_call_start|>[f(a="x"]] [TOOL_CALLS]',
    '<|tool_call_start|>[f(a="x"]]\n```\nprose',
    '<|tool_call_start|>[f(a="x"]) ] <function= ok',
    # A value begun that runs to the end of the reply and no reading cut there reads: an
    # error naming it, never an empty or partial call (QA23 P2); the same before an
    # end-of-turn token.
    "<|tool_call_start|>[f(a=1, b='x\"] ok",
    "[say(text='x\"]|<|tool_call_end|>' '",
    "<|tool_call_start|>[say(text='|</tool_call>, text=\"]\")]<|tool_call_end|>",
    "<|tool_call_start|>f(text='x\"]'s all.<|im_end|>",
]


@pytest.mark.parametrize("raw", OPEN_STRING_CUTS)
@pytest.mark.parametrize("tools", [None, ["f"]])
def test_a_value_cut_inside_its_open_string_streams_as_it_parses(raw: str, tools: Any) -> None:
    for size in range(1, len(raw) + 1):
        check(raw, chunked(raw, size), tools)


# A double-quoted Python value left open before another format's call, which Python reads
# as closed by the first `"` of that call's JSON: parse() ends the string at the call's
# marker where the call runs to the end of the reply (blanks after it at most), and reads
# the call; a stream cut the value at a marker after its break instead, one inside that
# call's JSON (a name or a value holding ``` , ```json or another format's marker), sent
# the pythonic call with the quoted call's head as its value and left the rest, the call's
# close tag too, in the text, no error, in every chunking (fuzz seed 7 #12170362, issue 17).
# Now a stream waits until the end of the reply, or text after that call, tells, as parse()
# reads it. Where text follows, the string quoted that call (docs/repairs.md): a marker in
# the call is its text, and cuts the value in neither (both cut it there, the call's close
# tag left in the prose with no error).
STRING_OPEN_BEFORE_A_CALL = [
    '[e(y="<tool_call>{"name":"```","arguments":{"":""}}</tool_call>',
    '[e(y="<tool_call>{"name":"```json","arguments":{"a":"b"}}</tool_call>\n',
    '[e(y="<tool_call>{"name":"get","arguments":{"a":"```"}}</tool_call>',
    '[e(y="x <tool_call>{"name":"get","arguments":{"a":"<|tool_call_start|>"}}</tool_call>',
    '[e(y="x <tool_call>{"name":"get","arguments":{"a":"[TOOL_CALLS]"}}</tool_call>',
    '[e(y="x <tool_call>{"name":"get","arguments":{"a":"<function=f>"}}</tool_call>',
    '[e(y="<tool_call>\n{"name": "get", "arguments": {"a": "```"}}\n</tool_call>  \n ',
    'Sure.\n[e(y="<tool_call>{"name":"```","arguments":{}}</tool_call>',
    '<|tool_call_start|>[e(y="<tool_call>{"name":"```","arguments":{}}</tool_call>',
    # (Text after the call: the string quoted it; cut at the later marker, in both.)
    '[e(y="<tool_call>{"name":"```","arguments":{}}</tool_call> Done.',
    '[e(y="<tool_call>{"name":"```","arguments":{}}</tool_call>\n<tool_call>{"name":"get","arguments":{}}</tool_call>',
    '[e(y="<tool_call>{"name":"```","arguments":{@}}</tool_call>',
    '[e(y="Docs:\n<tool_call>{"name":"get","arguments":{"a":"<|tool_call_start|>"}}</tool_call>\nThat is all.")]',
    # (Text after the call the model's next list, on a line of its own: with tools, the
    # value is cut before that list, not at a marker in it, nor run on over it (QA26 S1,
    # S2); the same shape again and again reads each time as the first.)
    '[e(y="x <tool_call>{"name":"get","arguments":{"a":"z"}}</tool_call>\n[e(y="x <tool_call>{"name":"get","arguments":{"a":"z"}}</tool_call>\n',
    '[e(y="x <tool_call>{"name":"get","arguments":{"a":"z"}}</tool_call>\n[e(y="x <tool_call>{"name":"get","arguments":{"a":"z"}}</tool_call>\n[e(y="x <tool_call>{"name":"get","arguments":{}}</tool_call> ',
    '[e(y="x\n<tool_call>{"name":"get","arguments":{}}</tool_call>\n[get(a=1)]\nDone.',
    # (Without tools too, where the lists in a row are one region: the list is closed at
    # that line and the region reads on, not failed untold, its calls prose (issue 19).)
    '[e(y="x <tool_call>{"name":"get","arguments":{"a":"z"}}</tool_call>\n' * 3 + 'ok',
    # (A single-quoted one, whose next lines' `'x` Python reads as apostrophes: the string
    # runs on to the reply's end, and is cut where the next list begins all the same.)
    "[e(y='x <tool_call>{\"name\":\"get\",\"arguments\":{\"a\":\"z\"}}</tool_call>\n" * 3 + 'ok',
    "[e(y='x <tool_call>{\"name\":\"get\",\"arguments\":{\"a\":\"z\"}}</tool_call>\n" * 3,
    # (And one that a later quote closes, after the next list's `'y`, an apostrophe as the
    # lenient reading takes it: cut before that list too, not run on over it.)
    "[e(y='x <tool_call>{\"name\":\"get\",\"arguments\":{}}</tool_call>\n[get(a='y')]\nDone.",
    "[e(y='x <tool_call>{\"name\":\"get\",\"arguments\":{}}</tool_call>\n<tool_call>{\"name\":\"get\",\"arguments\":{}}</tool_call>\n[get(a='y')]",
]


@pytest.mark.parametrize("raw", STRING_OPEN_BEFORE_A_CALL)
@pytest.mark.parametrize("tools", [None, ["e", "get", "```"]])
def test_a_string_left_open_before_a_call_holding_a_marker_streams_as_it_parses(raw: str, tools: Any) -> None:
    # (The first call is done when the reply ends, as for LATE_CALLS' such cases.)
    for size in range(1, len(raw) + 1):
        check(raw, chunked(raw, size), tools, timely=False)
    if "@" not in raw:
        # (The quoted call's markup is a call's text, never prose.)
        assert "</tool_call>" not in toolgram.parse(raw, tools).text


# A Hermes JSON string left open before its format's next call: where only blanks follow
# that call's end marker, the end of the reply, the string's close was left out and the
# call is the model's next (close._quoted_call); where text follows, the string quoted it.
# An end-of-turn token that ends the reply is no text (region._before_turn_end: parse()
# reads the reply without it), but a stream that saw the token after the end marker took
# it for text and read the string as quoting the call: one call, its value holding the
# marker, where parse() read two calls, or the error and the prose of a quoted call that
# reads as none (fuzz seed 7 #50015594, issue 17). Now a stream waits at such a token for
# the end of the reply or more text (so the first call is done at the end). Every delta size.
TURN_END_AFTER_A_CALL_IN_AN_OPEN_STRING = [
    '<tool_call>{"name":"g","":"<tool_call>"</tool_call><|endoftext|>',
    '<tool_call>{"name":"g","a":"x<tool_call>"</tool_call>\n<|endoftext|> ',
    '<tool_call>{"name":"g","a":"<tool_call>\n{"name":"h","arguments":{}}\n</tool_call><|endoftext|>',
    # (Text after the token: the string quoted the call, in both.)
    '<tool_call>{"name":"g","a":"<tool_call>"</tool_call><|endoftext|>x',
    '<tool_call>{"name":"g","a":"<tool_call>\n{"name":"h","arguments":{}}\n</tool_call><|endoftext|> Done.',
]


@pytest.mark.parametrize("raw", TURN_END_AFTER_A_CALL_IN_AN_OPEN_STRING)
@pytest.mark.parametrize("tools", [None, ["g", "h"]])
def test_a_call_in_an_open_string_then_an_end_of_turn_token_streams_as_it_parses(raw: str, tools: Any) -> None:
    # (The first call is done when the reply ends, as for LATE_CALLS' such cases.)
    for size in range(1, len(raw) + 1):
        check(raw, chunked(raw, size), tools, timely=False)


# A list of Python calls whose last call's `)` was left out before the list's `]`, prose
# after it: the value ran on over the `]` to the end of the reply, and parse() read an
# empty call (dropped_partial_argument, cut_value) that swallowed the prose (issue 17).
# Now the call up to the `]`, as the list alone reads it, and the prose after it (or,
# where that reading is no whole call, an error naming the value); a stream waits on the
# value to the end of the reply, as parse() reads it. Every delta size.
LIST_CLOSED_BEFORE_PROSE = [
    '[get_weather(city="Paris"] Let me check.',
    '[get_weather(city="Paris"]\nLet me check.',
    '[y(t="x"] Done.',
    '[y(t="x"]=s Done.',
    '[get_weather(city="Paris"]\n[get_weather(city="Rome")]',
    '[get_weather(city=Paris] Let me check.',
    '[get_weather(city=Paris] Let me check.\n[get_weather(city="Rome")]',
    'Sure.\n[get_weather(city="Paris", unit="c"] Let me check.',
    '[get_weather(city="Paris"), y(t="x"] Done.',
    '[search_web(q="x"), get_weather(city="Paris"] Then I answer.',
    '<|tool_call_start|>[y(t="x"] Done.',
    '[y(t="x"]=<|im_end|>\'s Done.',  # (QA: an end-of-turn token inside the prose after it)
    # (QA24c R1: a list after it on its line, or right after it, is read as after a list
    # written whole; R2: its `]]` is the call's `)` and the list's `]`.)
    '[get_weather(city="Paris"] [y(t="x")]',
    '[get_weather(city="Paris"][y(t="x")]',
    '[y(t="x"), get_weather(city="Paris"] [y(t="z")] Done.',
    '[get_weather(city="Paris"] [y(t="x"] ok',
    '[get_weather(city="Paris"]] Let me check.',
    '<|tool_call_start|>[y(t="x"]]',
    # (QA26 R2: then a list the reply's end cuts, as after lists written whole: the calls
    # kept, the cut list's text prose; tests TRUNCATED has one cut inside its call.)
    '[get_weather(city="Paris"] [y(t="x")] [y',
    '[get_weather(city="Paris"] [y(t="x")]\n[y',
    # (QA26 S3: `]]` then a `,`, which ended the value after it: the list closed there all
    # the same, what follows prose, as after `[y(t="x")]`.)
    '[y(t="x"]],h()',
    '[get_weather(city="Paris"]] , then y(t="z")',
    '[y(t="z"), get_weather(city="Paris"]],h()\n[y(t="x")]',
    '<|tool_call_start|>[y(t="x"]],h()',
    # (QA26b: `]]` then the call's own `)`: the `]]` stray, the call closed by its `)`, the
    # list read on: no prose, as the reading of the whole text has it.)
    '[y(t="x"]]), get_weather(city="Paris")] ok',
    '<|python_start|>[y(t="x"]])]<|python_end|> ok',
]


@pytest.mark.parametrize("raw", LIST_CLOSED_BEFORE_PROSE)
@pytest.mark.parametrize("tools", [None, ["get_weather", "y"]])
def test_a_list_closed_before_its_call_then_prose_streams_as_it_parses(raw: str, tools: Any) -> None:
    for size in range(1, len(raw) + 1):
        check(raw, chunked(raw, size), tools)
    # (The reply went on past the `]`: nothing in it was cut, and no call is empty.)
    result = toolgram.parse(raw, tools)
    assert all(not {"cut_value", "dropped_partial_argument"} & set(c.repairs) for c in result.calls), result.calls
    assert all(c.arguments for c in result.calls), result.calls


# Streamed as parsed, but a call is done only at flush() with the reply going on (see
# test_call_done_at's HELD): a cofl block's first call, prose after it and the next call,
# then the block's close at the reply's end. The calls of a block are done when the
# block is (one region, settled a bounded look after its close: with more prose after
# it, before flush()); the prose splits the block's segments, so the check below, which
# finds a call's region by its segment, takes the first call's to end before that prose.
# (A cofl call whose closes were left out, then prose and the next call on the value's
# line, QA13 F6, is no longer held: the prose, a value's text the table does not take
# there, was read on to the reply's end before it was refused; nest.through_nest now
# asks the table first.)
LATE_CALLS = {
    # xLAM's object of calls with its "thought" written after the calls: the object,
    # the call's region, closes with the reply (a field after it could still be an error).
    "xlam/thought_after_the_calls_stays_out_of_the_call_span",
    "cohere_cofl_xml/text_between_calls_in_a_block_is_prose",
    # An LFM2 list whose end marker was left out, then a list on the next line: that list
    # is the region's (issue 19), and the region's end marker may still come after it,
    # so both calls are done when the reply ends (test_call_done_at's HELD).
    "lfm2/list_on_the_next_line_its_end_marker_left_out_then_a_whole_list_is_its_call",
    # Bounded: a call after a JSON string left open in prose, then lines of prose with no
    # `"` to the reply's end: the string may close on any line of that paragraph (QA18 Q4),
    # so the call is done at a blank line, a quote, 4,096 characters from the string's
    # opening, or the end.
    "qwen3_coder_xml/call_after_a_windows_path_left_open_on_an_earlier_line_then_lines_of_prose",
    # A Python string left open, then another format's call: the string may still close
    # after that call (then it quotes it), so the first call is done when the reply ends
    # (QA19 R15).
    "pythonic/string_left_open_then_another_formats_call_ends_it",
    # The same twice in LFM2 blocks: the first string runs on over the next block's start
    # marker, so the calls are done when the reply ends too (QA22 D8).
    "lfm2/single_quoted_string_left_open_before_another_formats_call_twice",
    # The same where the Nemotron call the string holds has another format's marker in its
    # JSON (string content): the reply's end tells that the string ends at `<TOOLCALL>`
    # (fuzz seed 7 #108059290, #108081703).
    "nemotron/call_quoted_in_a_python_string_its_key_holding_another_marker_streams_as_it_parses",
    "nemotron/call_quoted_in_a_python_string_its_name_holding_another_marker_streams_as_it_parses",
    # The same at its own format's start marker where a call of it reads (issue 19 P1),
    # prose after that call: the string may still close after the prose (then it quotes
    # both), so the first call is done when the reply ends.
    "lfm2/string_left_open_then_its_own_start_marker_and_a_call_then_prose",
    "lfm2/string_left_open_then_its_own_start_marker_and_a_call_with_prose_before_the_next_one",
    # A double-quoted one that Python reads as closed inside that call: it was left open
    # only where nothing but blanks follows the call, which the end tells (QA22 D7).
    "pythonic/double_quoted_string_left_open_then_another_formats_call_ends_it",
    "lfm2/double_quoted_string_left_open_then_another_formats_call_ends_it",
    # The same after a line whose string quoted such a call (QA26 S1): that line's call is
    # done when the next list begins; the last line's, when the reply ends.
    "pythonic/double_quoted_string_quoting_another_formats_call_then_the_next_list_is_its_own_call",
    # Without tools the lists in a row are one region, the list closed at that line and
    # read on (issue 19): its calls are done when the region ends, at the reply's end.
    "pythonic/double_quoted_string_quoting_another_formats_call_line_after_line_without_tools_reads_each_list",
    "pythonic/single_quoted_string_quoting_another_formats_call_line_after_line_without_tools_reads_each_list",
    # The same, the call's JSON holding a code fence: a stream cut the value at its ```
    # (fuzz seed 7 #12170362).
    "pythonic/double_quoted_string_left_open_then_another_formats_call_whose_json_holds_a_code_fence",
    # A Gemma string left open in prose, then a call, then a call cut before its close
    # marker whose only `<tool_call|>` is inside its own string: the prose's string may
    # close as a value after that second call's end (then it quotes both), and that end
    # never comes, so the first call is done at the end (or REACH characters from the
    # string's opening). A stream that read the second call's body from `ca` took the
    # marker in its string for its end and the close after it for the prose string's:
    # both calls prose (fuzz seed 7 #7625498).
    "gemma4_call/string_open_in_prose_then_a_call_then_a_cut_one_whose_string_holds_the_close_marker",
    # A Hermes JSON string left open before the next call, then an end-of-turn token: the
    # string's close was left out only if the reply ends there (the token is no text), so
    # the first call is done when the reply ends (fuzz seed 7 #50015594). (Not held in
    # test_call_done_at.py: with its prose after the token, no end of the reply is there.)
    "hermes/string_left_open_before_the_next_call_then_an_end_of_turn_token",
    # (The same with `<|im_end|>`, which the Hermes grammar reads as the call's close:
    # close._turn_ends.)
    "hermes/string_left_open_before_the_next_call_then_the_im_end_token_that_the_grammar_reads",
    # A list closed before its call's `)`, text after it, then a call marker (another
    # format's, in the next line's string value, or its call): the value runs on over the
    # `]` to that marker, and only the reply's end tells it went on (issue 19): read up to
    # the `]` then, as where no marker comes (salvage.list_closed, Driver.listed).
    "pythonic/list_closed_early_then_prose_then_another_formats_call",
    "pythonic/list_closed_early_value_holding_another_formats_marker_each_line_a_call",
}


def test_corpus_streams(corpus_case: Any) -> None:
    case = corpus_case
    timely = case.id not in LATE_CALLS
    for size in CHUNK_SIZES:
        check(case.raw, chunked(case.raw, size), case.tools, case.formats, in_think=case.in_think, truncated=case.truncated, timely=timely)


_ALL = None


def _all_cases() -> list[tuple[str, str, Any, Any, int]]:
    global _ALL
    if _ALL is None:
        corpus = [(c.id, c.raw, c.tools, c.formats, DEFAULT_MAX_CHARS) for c in corpus_cases()]
        _ALL = CASES + corpus
    return _ALL


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_splits(data: Any) -> None:
    cases = _all_cases()
    case_id, raw, tools, formats, max_chars = cases[data.draw(st.integers(0, len(cases) - 1), label="case")]
    check(raw, random_chunks(data, raw), tools, formats, max_chars, timely=case_id not in LATE_CALLS)


IN_THINK = [
    # The prompt opened <think> (DeepSeek-R1, QwQ): reasoning, then the reply proper.
    "I'm\nthinking\n</think>\n<TOOLCALL>[{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}]</TOOLCALL>",
    "Let me look it up.</think>\n\nSure. <tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n</tool_call> done",
    "<think>the model wrote the tag itself</think> answer",  # read as usual
    "  \n<thin and then</think> more",  # what could have become <think> did not
    'never closed <tool_call>{"name": "a", "arguments": {}}</tool_call>',  # all reasoning; the call is read
    '[TOOL_CALLS]search[ARGS]{"q": 1}',  # no reply-start format: the reply starts in the block
    "",
    "   ",
]


@pytest.mark.parametrize("raw", IN_THINK)
def test_a_reply_that_starts_inside_think_streams_as_it_parses(raw: str) -> None:
    for size in CHUNK_SIZES:
        check(raw, chunked(raw, size), in_think=True)
    for cut in range(len(raw) + 1):
        check(raw, [raw[:cut], raw[cut:]], in_think=True)


# Pieces of markers, the starts of word markers among them ("co", "comm"), and prose.
SOUP = [
    "<tool_call>", "</tool_call>", '{"name": "get_weather", "arguments": {"city": "Paris"}}', "<think>", "</think>",
    "functools", '[{"name": "get_weather", "arguments": {}}]', 'functools[{"name": "get_weather", "arguments": {}}]',
    "commentary to=", "comm", "co", "as", "fun", "Action:",
    "assistant", "c", "a", "f", "<", "`", "```json\n", "```", "\n", " ", "We could colour the cab", "3 < 5", "}",
]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_marker_soup_streams_as_it_parses(data: Any) -> None:
    # The fast paths of feed() (the prose lane and what it holds back, a region's
    # deltas put aside) against parse(), on text built to cross them. (Not timeliness:
    # in soup, a region that ends early may wait on one that an earlier format could
    # still read to a later close tag: `<tool_call>comm```json\n{…}`.)
    raw = "".join(data.draw(st.lists(st.sampled_from(SOUP), max_size=16), label="parts"))
    tools = data.draw(st.sampled_from([None, ["get_weather"]]), label="tools")
    # (Small deltas: the lane is taken after one plain delta, and left at a marker.)
    size = data.draw(st.integers(1, 6), label="size")
    check(raw, chunked(raw, size), tools, timely=False)
    check(raw, random_chunks(data, raw), tools, timely=False)


# -- specific behaviour ------------------------------------------------------------
def test_prose_lane_holds_what_may_start_a_word_marker() -> None:
    # Runs of plain prose take the lane (StreamParser.feed), which holds back up to
    # three characters that may start a word marker ("com" of "commentary to=",
    # "fun" of "functools"): cut everywhere, in deltas of 1 to 5 characters.
    raw = (
        "We could colour a cab, as far as the fun function goes; com co c "
        'functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]'
        " then the common assistant could act, Ac Act com"
    )
    tools = ["get_weather"]
    assert [c.format for c in toolgram.parse(raw, tools).calls] == ["functools"]
    for size in range(1, 6):
        for offset in range(size):
            check(raw, [raw[:offset], *chunked(raw[offset:], size)] if offset else chunked(raw, size), tools)


def _format_names() -> list[str]:
    from toolgram._grammar.registry import registry_for

    return sorted(registry_for().builtin)


@pytest.mark.parametrize("grammar", [None, *_format_names()])
def test_lane_search_tells_prose_a_held_end_and_the_slow_way(grammar: Any) -> None:
    # The lane's one search (Scanner.lane) against what it stands for, for every set of
    # markers: any match of quick (where a marker may start) sends the delta the slow
    # way; otherwise the longest end that may start a marker (risky_ends) and that quick
    # finds nothing in is held (the match's lastindex set, its start where the end
    # starts); otherwise nothing is found.
    import random

    from toolgram._pipeline import read_calls, select_formats
    from toolgram._scan.scanner import Scanner

    for thinking in (False, True):
        sc = Scanner(select_formats(None if grammar is None else [grammar]), None, thinking, read_calls)
        search, quick = sc.lane_search.search, sc.quick.search
        tails = sorted((t for t in sc.risky_ends if quick(t) is None), key=len, reverse=True)
        alphabet = sorted({c for m in sc.by_marker for c in m} | set(sc.first_set) | set("ax \n"))
        rnd = random.Random(grammar)
        words = [*sc.risky_ends, *(m[:5] for m in sc.by_marker)]
        for _ in range(3000):
            value = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 6)))
            if words and rnd.random() < 0.5:
                value += rnd.choice(words)
            m = search(value)
            if quick(value) is not None:
                assert m is not None and not m.lastindex, (grammar, value)
                continue
            tail = next((t for t in tails if value.endswith(t)), None)
            if tail is None:
                assert m is None, (grammar, value, m)
            else:
                assert m is not None and m.lastindex and m.start() == len(value) - len(tail), (grammar, value, m)


# Prose whose deltas end and start with whitespace (held back by the joiner, which the
# lane takes over while nothing is held), runs of blanks, ends that may start a word
# marker, after a call and in reasoning: the lane's own cases, cut every way.
LANE_CASES = [
    "Words then  \n\n  more words ,  and  a  c  f  com  fun  as   end \n",
    "  lead " + H.format("search", '{"q": "x"}') + "   after the call  comes prose \n\n and more   ",
    "<think> we could  think a bit   \n  then</think>\n\n  Answer:  it is  so  . ",
    "a" * 9 + " " * 9 + "c" * 9 + "\n" * 9 + "f" * 9 + "\t" * 9 + "x",
]


@pytest.mark.parametrize("raw", LANE_CASES)
def test_lane_joins_whitespace_as_parse_does(raw: str) -> None:
    for size in range(1, 10):
        for offset in range(size):
            check(raw, [raw[:offset], *chunked(raw[offset:], size)] if offset else chunked(raw, size), ["search"])
    # The lane hands its text to the scanner every _LANE_SYNC characters: a longer run
    # of it, then a marker split across two deltas right after it.
    raw = ("some prose, " * (_LANE_SYNC // 12 + 20)) + "and then <tool_" + 'call>{"name": "search", "arguments": {}}</tool_call> end'
    for size in (7, 8, 9):
        check(raw, chunked(raw, size), ["search"])
    cut = raw.index("<tool_") + 3
    check(raw, [*chunked(raw[:cut], 8), raw[cut:]], ["search"])
    # A delta longer than the lane keeps, in the lane and then after it; blanks alone.
    long = _LANE_SYNC + 88
    for at in (9, 11, 12, 13):
        check(raw, [raw[:at], raw[at : at + long], "", *chunked(raw[at + long :], 8)], ["search"])
        blanks = raw[:at] + " " + " \n " + raw[at : at + long + 100] + "  " + raw[at + long + 100 :]
        check(blanks, [raw[:at], " ", " \n ", raw[at : at + long + 100], "  ", *chunked(raw[at + long + 100 :], 5)], ["search"])
    raw = raw.replace(", ", ",  \n ")
    for size in (1, 3, 8):
        check(raw, chunked(raw, size), ["search"])


def test_lane_delta_crossing_max_chars() -> None:
    raw = "plain words in a lane " * 10
    for limit in (5, 47, 48, 49, 100, len(raw) - 1):
        for size in (3, 8):
            check(raw, chunked(raw, size), max_chars=limit)


def test_lane_takes_bytes_deltas() -> None:
    raw = "café au lait, a crêpe  \n and a cake " * 3
    data = raw.encode()
    sp = StreamParser()
    events = [e for i in range(0, len(data), 5) for e in sp.feed(data[i : i + 5])] + sp.flush()  # type: ignore[arg-type]
    assert sp.close() == toolgram.parse(raw)
    assert "".join(e.text for e in events) == toolgram.parse(raw).text


def _events(chunks: list[str], tools: Any = None, **kw: Any) -> tuple[list[list], list]:
    sp = StreamParser(tools, **kw)
    fed = [sp.feed(c) for c in chunks]
    return fed, sp.flush()


def test_two_calls_in_one_delta() -> None:
    raw = "go " + H.format("a", '{"x": 1}') + H.format("b", '{"y": 2}') + " done"
    (batch,), tail = _events([raw])
    kinds = [type(e).__name__ for e in batch]
    assert kinds == ["Text", *["CallStart", "ArgumentsDelta", "CallDone"] * 2, "Text"]
    assert [e.index for e in batch if type(e) is CallDone] == [0, 1]
    assert tail == []


def test_call_is_done_when_its_close_tag_arrives() -> None:
    head = "Sure. " + H.format("search", '{"q": "cats"}')
    fed, tail = _events([head[:-1], head[-1], " more"])
    assert not any(type(e) is CallStart for e in fed[0])
    assert [type(e) for e in fed[1]] == [CallStart, ArgumentsDelta, CallDone]
    assert fed[1][0] == CallStart(0, "search", toolgram.parse(head).to_openai_message()["tool_calls"][0]["id"])
    assert fed[1][1] == ArgumentsDelta(0, '{"q": "cats"}')


# A Kimi K3 call closed on one line, then prose (issue 21): whether that run of closers is
# the value's text is told by a look of nest._HORIZON characters past it (_lalr/nest.py,
# _inline_past), so the call is completed once that look is over, and not, as before,
# once the text ran the value pattern's width (1,579 characters for K3's VALUE) past
# every tag of the run: about 2,150 characters after the close.
_K3_CALL = (
    '<|open|>tools<|sep|><|open|>call tool="save_page" index="1"<|sep|>'
    '<|open|>argument key="body" type="string"<|sep|>{}<|close|>argument<|sep|>'
    "<|close|>call<|sep|><|close|>tools<|sep|>"
)


@pytest.mark.parametrize(
    "value",
    ["abc", 'An example: <|open|>argument key="units" type="string"<|sep|>metric<|close|>argument<|sep|>', "x" * 1000],
    ids=["plain", "quoted_argument", "long"],
)
@pytest.mark.parametrize("size", [1, 7, 64])
def test_a_kimi_k3_call_then_prose_is_done_a_bounded_look_after_its_close(value: str, size: int) -> None:
    head = _K3_CALL.format(value)
    raw = head + "Then done. " * 300
    check(raw, chunked(raw, size), None, ["kimi_k3_open_close"])
    fed, _ = _events(chunked(raw, size), formats=["kimi_k3_open_close"])
    done = [k for k, batch in enumerate(fed) if any(type(e) is CallDone for e in batch)]
    assert done, "the call was left to flush()"
    held = min((done[0] + 1) * size, len(raw)) - len(head)
    assert held <= _nest._HORIZON + size, held


def test_ids_like_call_123_and_duplicates() -> None:
    raw = '<tool_call>{"name": "a", "id": "call_123", "arguments": {}}</tool_call>' * 2
    fed, tail = _events(chunked(raw, 5))
    starts = [e for batch in fed for e in batch if type(e) is CallStart]
    assert starts == [CallStart(0, "a", "call_123"), CallStart(1, "a", "call_123")]


def test_unknown_tool_is_an_error_not_a_call() -> None:
    raw = H.format("nope", "{}") + " then " + H.format("search", "{}") + " end"
    fed, tail = _events(chunked(raw, 4), ["search"])
    events = [e for batch in fed for e in batch] + tail
    assert [type(e).__name__ for e in events if type(e) is not Text] == [
        "Error",
        "CallStart",
        "ArgumentsDelta",
        "CallDone",
    ]
    assert next(e for e in events if type(e) is CallStart).index == 0


def test_whitespace_is_held_until_more_text() -> None:
    fed, tail = _events(["  Hi, ", "  ", "world  ", "\n"])
    assert [[e.text for e in batch] for batch in fed] == [["Hi,"], [], [" " * 3 + "world"], []]
    assert tail == []


def test_separator_where_a_call_was_cut_out() -> None:
    raw = "Before" + H.format("a", "{}") + "after"
    texts = [e.text for batch in _events(chunked(raw, 3))[0] for e in batch if type(e) is Text]
    assert "".join(texts) == toolgram.parse(raw).text == "Before\nafter"


def test_max_chars_rest_is_prose() -> None:
    raw = "x" * 10 + H.format("a", "{}")
    for size in (1, 4, len(raw)):
        fed, tail = _events(chunked(raw, size), max_chars=12)
        events = [e for batch in fed for e in batch] + tail
        assert "".join(e.text for e in events if type(e) is Text) == toolgram.parse(raw, max_chars=12).text
        assert not any(type(e) is CallStart for e in events)


@pytest.mark.parametrize("cap", [47, 48, 49, 50, 53])
def test_max_chars_in_an_open_calls_prose_adds_no_separator(cap: int) -> None:
    # (The prose of a call left open runs to the limit and the rest continues it: no
    # markup between, so no "\n" put in the user's text. QA7 D10.)
    raw = '<tool_call>{"name": "f", "arguments": {"a": 1}}xxxxxxxxxx'
    result = toolgram.parse(raw, max_chars=cap)
    assert result.text == toolgram.parse(raw).text == "xxxxxxxxxx"
    assert [s[0] for s in result.segments] == ["call", "text"] and result.segments[-1].end == len(raw)
    # (The call ends with its JSON, and the text segment is the text: the call's span took
    # the prose up to the limit, a character both the call's and the text's. QA8 Q13.)
    assert result.calls[0].span == (0, raw.index("}}") + 2)
    assert "".join(raw[s.start : s.end] for s in result.segments if s.kind == "text") == result.text


def test_no_limit() -> None:
    raw = "y " * 20_000 + H.format("a", "{}") + " z"
    sp = StreamParser(max_chars=None)
    for chunk in chunked(raw, 4096):
        sp.feed(chunk)
    assert sp.close() == toolgram.parse(raw, max_chars=len(raw))
    assert len(sp.close().calls) == 1


def test_flush_and_close() -> None:
    sp = StreamParser()
    sp.feed('Hi <tool_call>{"name": "a", "arguments": {"q": "x')
    tail = sp.flush()
    assert [type(e) for e in tail] == [CallStart, ArgumentsDelta, CallDone]
    assert sp.flush() == []
    result = sp.close()
    assert result is sp.close()
    assert result == toolgram.parse('Hi <tool_call>{"name": "a", "arguments": {"q": "x')
    with pytest.raises(RuntimeError):
        sp.feed("more")
    assert StreamParser().close() == toolgram.parse("")


def test_feed_takes_none_and_empty() -> None:
    sp = StreamParser()
    assert sp.feed("") == [] and sp.feed(None) == []  # type: ignore[arg-type]
    assert sp.close() == toolgram.parse("")


# Deltas that are not str, as docs/api.md and docs/streaming.md say they are read:
# (deltas, the whole reply given to parse()). None is no text; bytes are one UTF-8 text
# (é split between two deltas); anything else is its str().
NON_STR_DELTAS = {
    "none": ([None, "Hi", None], "Hi"),
    "bytes split inside a character": (
        [b"caf\xc3", b'\xa9 <tool_call>{"name": "f", "arguments": {}}</tool_call>'],
        'café <tool_call>{"name": "f", "arguments": {}}</tool_call>',
    ),
    "invalid utf-8": ([b"a\xffb"], b"a\xffb"),
    "a number": ([12, None, "x"], "12x"),
}


@pytest.mark.parametrize("case", list(NON_STR_DELTAS), ids=list(NON_STR_DELTAS))
def test_non_str_deltas_are_read_as_parse_reads_them(case: str) -> None:
    deltas, whole = NON_STR_DELTAS[case]
    sp = StreamParser()
    events = [e for d in deltas for e in sp.feed(d)] + sp.flush()  # type: ignore[arg-type]
    result = sp.close()
    assert result == toolgram.parse(whole)
    assert "".join(e.text for e in events if isinstance(e, Text)) == result.text


def test_negative_max_chars_is_refused() -> None:
    with pytest.raises(ValueError):
        StreamParser(max_chars=-1)


def test_internal_error_keeps_the_rest_as_prose(monkeypatch: pytest.MonkeyPatch, bugs_as_results: None) -> None:
    sp = StreamParser()
    assert [e.text for e in sp.feed("Hello, there ")] == ["Hello, there"]

    # A bug of ours: the exception is raised inside toolgram's own code (an exception
    # that code outside toolgram raises passes through: see test_bounded.py).
    monkeypatch.setattr(sp._scanner, "feed", functools.partial(toolgram._scan.scanner._trie, None))
    events = sp.feed("<tool_call>x")
    events += sp.feed(" and more")
    events += sp.flush()
    assert [type(e) for e in events][0] is Error
    assert "internal error (TypeError)" in events[0].message
    text = "".join(e.text for e in events if type(e) is Text)
    assert text.endswith("and more")
    assert sp.close().errors == [events[0].message]


# -- cost: work per delta is proportional to the delta ------------------------------
def _stream_time(raw: str, size: int) -> float:
    def run() -> None:
        sp = StreamParser(max_chars=None)
        for i in range(0, len(raw), size):
            sp.feed(raw[i : i + size])
        sp.close()

    return best_cpu_time(run)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda n: "word " * (n // 5), id="prose"),
        pytest.param(lambda n: "a < b, c <d " * (n // 12), id="prose_with_lt"),
        pytest.param(lambda n: H.format("w", json.dumps({"s": "x" * n})), id="long_json_string"),
        pytest.param(lambda n: H.format("w", json.dumps({"s": ["ab", 1] * (n // 9)})), id="long_json_list"),
        pytest.param(lambda n: "<think>" + "hm " * (n // 3) + "</think>ok", id="reasoning"),
        pytest.param(lambda n: '<|tool_call_start|>[f(s="' + "y" * n + '")]<|tool_call_end|>', id="long_pyvalue"),
        pytest.param(lambda n: '```json\n{"name": "w", "arguments": {"s": "' + "z" * n + '"}}\n```', id="long_fence"),
        pytest.param(lambda n: H.format("w", json.dumps({"s": "a<b " * (n // 4)})), id="payload_full_of_lt"),
        pytest.param(
            lambda n: "<mfcs_tool><name>w</name><parameters>" + json.dumps({"s": "x<y " * (n // 4)}) + "</parameters></mfcs_tool>",
            id="mfcs_full_of_lt",
        ),
        pytest.param(lambda n: json.dumps({"type": "tool_call", "name": "w", "arguments": {"s": "v" * n}}), id="whole_reply_json"),
        pytest.param(lambda n: " " * n + "hi", id="leading_blanks"),
        pytest.param(lambda n: "<think>I will <tool_call> " + "hm " * (n // 3) + "</think>ok", id="call_marker_in_reasoning"),
        pytest.param(lambda n: 'x <tool_call>{"name": @@ ' + "z " * (n // 2), id="broken_call_never_closed"),
        pytest.param(lambda n: "<mfcs_tool><name>a</name><bogus>" + "z " * (n // 2), id="broken_mfcs_never_closed"),
        pytest.param(lambda n: "<|tool_call_start|>[f(x=1), @ " + "z " * (n // 2), id="broken_lfm2_never_closed"),
    ],
)
def test_linear_time(make: Any) -> None:
    small, large = make(20_000), make(100_000)
    ratio = _stream_time(large, 8) / _stream_time(small, 8)
    # Linear: about 5; quadratic would be about 25 (the margin is for a busy machine).
    assert ratio < 12, ratio


class _CountingPattern:
    """A terminal's pattern that adds up how many characters its matches span (a
    deterministic stand-in for the lexer's work: a token matched from its start on
    every delta costs its whole length each time)."""

    def __init__(self, pattern: Any, counter: list) -> None:
        self._pattern = pattern
        self._counter = counter
        self.pattern = pattern.pattern
        self.flags = pattern.flags

    def match(self, buf: str, pos: int = 0, *args: Any, **kwargs: Any) -> Any:
        m = self._pattern.match(buf, pos, *args, **kwargs)
        self._counter[0] += 1 + (m.end() - pos if m is not None else 0)
        return m

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pattern, name)


def _lexed(monkeypatch: Any, fmt_name: str, raw: str, size: int) -> int:
    """Characters the format's terminal patterns matched while raw streamed in."""
    import dataclasses

    from toolgram._grammar.compile import Terminal
    from toolgram._pipeline import select_formats

    fmt = select_formats([fmt_name], None)[0]  # (the one named; those its `also:` lines bring follow)
    c = fmt.compiled
    counter = [0]
    terminals = {k: Terminal(t.name, _CountingPattern(t.pattern, counter), t.literal, t.priority) for k, t in c.terminals.items()}
    swap = {id(t): terminals[k] for k, t in c.terminals.items()}
    counted = dataclasses.replace(
        c,
        terminals=terminals,
        ignore=tuple(swap[id(t)] for t in c.ignore),
        allowed={state: tuple(swap[id(t)] for t in ts) for state, ts in c.allowed.items()},
    )
    with monkeypatch.context() as m:
        m.setattr(fmt, "_compiled", counted)
        sp = StreamParser(formats=[fmt_name], max_chars=None)
        for i in range(0, len(raw), size):
            sp.feed(raw[i : i + size])
        result = sp.close()
    assert len(result.calls) == 1 and not result.errors, (fmt_name, result.errors)
    assert result == toolgram.parse(raw, formats=[fmt_name], max_chars=None)
    return counter[0]


@pytest.mark.parametrize("fmt", list(XMLISH))
@pytest.mark.parametrize("size", [1, 4])
def test_value_with_lt_is_lexed_in_linear_work(monkeypatch: Any, fmt: str, size: int) -> None:
    """A long raw value full of "<" that opens no tag: the lexer's work grows with the
    reply, not with its square (counted, not timed: five times the text must cost
    about five times the matching, where matching each delta's token from its start
    costs 25 times)."""
    small = _lexed(monkeypatch, fmt, xmlish(fmt, "<div class=a>x</div>\n" * 100), size)
    large = _lexed(monkeypatch, fmt, xmlish(fmt, "<div class=a>x</div>\n" * 500), size)
    assert large / small < 8, (small, large)


def test_a_value_broken_for_good_lets_the_next_call_through() -> None:
    # (Driver._cut: the broken value ends at the end marker after its break, so the
    # region ends there, the next call is read, and the stream completes it by feed().)
    # The broken call is an error, not a call whose value swallowed its brackets.
    raw = next(case[1] for case in INLINE if case[0] == "lfm2_stray_quote_then_call")
    result = toolgram.parse(raw)
    assert [c.name for c in result.calls] == ["search"]
    assert len(result.errors) == 1 and "'city'" in result.errors[0]
    sp = StreamParser()
    fed = [sp.feed(raw[i : i + 5]) for i in range(0, len(raw), 5)]
    done = [e.call.name for batch in fed for e in batch if type(e) is CallDone]
    assert done == ["search"]


def test_a_name_with_a_lone_surrogate_streams_as_parse_reads_it() -> None:
    """A name the model wrote as half an escaped pair (`get\\ud83d`): its generated id
    hashes it as it stands; the stream raised UnicodeEncodeError making that id."""
    raw = '<tool_call>{"name": "get\\ud83d", "arguments": {}}</tool_call> ok'
    sp = toolgram.StreamParser()
    events = sp.feed(raw) + sp.flush()
    result = sp.close()
    assert result == toolgram.parse(raw) and result.calls[0].name == "get\ud83d"
    start = next(e for e in events if isinstance(e, toolgram.CallStart))
    assert start.id == result.to_openai_message()["tool_calls"][0]["id"]


@pytest.mark.parametrize(
    "raw",
    [
        "Hello <b>there</b>, `x` and 3 < 5.\n\nMore <i>text</i> <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call> and more < words.",
        "<think>a < b, <c> and `d`</think>Then 1 < 2 <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call> end < here <x>.",
        # (a closer with no opener is removed: the text on its two sides, two pieces)
        "Before </think> after, 1 < 2 </think> and <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call> x </think> y",
    ],
)
def test_a_feed_gives_a_run_of_text_as_one_event(raw: str) -> None:
    # The pieces a feed settles at once (here the whole reply, then its end) come as one
    # Text (or Reasoning) event a run, not one a piece (StreamParser._items, _join_runs).
    sp = StreamParser()
    for events in (sp.feed(raw), sp.flush()):
        kinds = [type(e) for e in events]
        assert all(not (a is b and a in (Text, Reasoning)) for a, b in zip(kinds, kinds[1:])), events
    assert sp.close() == toolgram.parse(raw)
