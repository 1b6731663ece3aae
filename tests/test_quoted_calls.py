"""A call quoted in a string of a call no format reads, and a real call after a string
left open in prose (instring.py; QA16 G1, G2, G3): the quoted one is prose, whatever its
own quotes, the text around it in the string, or its lines; the real one is read,
whatever quotes come after it. A stream decides each as parse() does (deltas 1, 2, 3, 7)."""

from __future__ import annotations

import pytest

from conftest import assert_done_by
from toolgram import StreamParser, parse, render_call

TOOLS = ["search", "write_file", "rm_rf", "f", "w"]
FORMATS = [
    "hermes", "qwen3_coder_xml", "glm45_arg_kv", "seed_oss_xml", "minimax_m2_invoke", "deepseek_v32_dsml",
    "deepseek_v31", "kimi_k2", "mistral", "gemma4_call", "lfm2", "dots_invoke", "minicpm5_function_param", "granite",
]
# A string of a call no format reads, around the quoted call (before, after).
WRAPPERS = [
    ('Here: {"note": "', '"}'),
    ('{"name": "write_file", "parameters": {"content": "', '"}}'),
    ("Sure. [write_file(content='", "')]"),
    ('Sure. [write_file(content="', '")]'),
    ('Let me write it: call:write_file{content:<|"|>', '<|"|>}'),
    # A Python call written without its list (QA18 Q1).
    ('Sure: write_file(content="', '")'),
    ("write_file(path='a', content='", "')"),
]
# Text in the string around the quoted call: none; words; closers before it and a quoted
# word, an apostrophe after it; an escaped one; a stray quote right before the close (QA17 H3),
# or blanks between them (QA18 Q2).
AROUND = [
    ("", ""), ("x ", " y"), ("Steps: (1) run, 2) ", " (see docs) but don't"), ("Docs: ", " \u2014 that\\'s it"),
    ("x ", '"'), ("x ", "'"), ("x ", '" '), ("x ", "' "),
    # The string's line breaks unescaped, before the call or lines after it (QA18 Q4).
    ("first\nsecond ", ""), ("x ", "\nl2\nl3"),
]
# Prose that leaves a string open, then a real call, then prose with quotes.
LEFT_OPEN = ['Saving {"path": "C:\\dir\\"} now ', 'Saving {"path": "C:\\dir\\"} now.\n', "Try [f(q='", "Try f(q='", 'Try call:w{c:<|"|>']
AFTER = [
    "", ' for the 27", 32" screens', "\nThe users', admins' files.", "\n\nThat is all. " + "More words here. " * 20,
    # Escaped quotes, which close no string (QA17 H2).
    '\nThe 27\\", 32\\" screens', '\nDone\\"}', "\n(see C:\\tmp\\\")",
    # A quote before a closer of prose's own bracket, or before `, 5` after a keyword
    # argument's value (QA18 Q4's guards).
    "\nDone (see the users').", "\nThe kids', 5 of them.",
]


def _key(result) -> tuple:
    return ([(c.name, c.arguments, c.repairs) for c in result.calls], result.errors, result.text, result.reasoning)


def _streams_as_parse(raw: str) -> tuple:
    want = _key(parse(raw, TOOLS))
    for size in (1, 2, 3, 7):
        stream = StreamParser(TOOLS)
        for i in range(0, len(raw), size):
            stream.feed(raw[i : i + size])
        assert _key(stream.close()) == want, (size, raw)
    return want


# The formats with no canonical form (render_call cannot write them), one argument `p`.
WRITTEN = {
    "seed_oss_xml": "<seed:tool_call>\n<function={n}>\n<parameter={k}>{v}</parameter>\n</function>\n</seed:tool_call>",
    "deepseek_v32_dsml": (
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="{n}">\n<｜DSML｜parameter name="{k}" string="true">{v}'
        "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>"
    ),
    "gemma4_call": '<|tool_call>call:{n}{{{k}:<|"|>{v}<|"|>}}<tool_call|>',
    "dots_invoke": '<dots_function_call><invoke name="{n}"><parameter name="{k}">{v}</parameter></invoke></dots_function_call>',
    "minicpm5_function_param": '<function name="{n}"><param name="{k}">{v}</param></function>',
}


def _call(fmt: str, name: str, args: dict) -> str:
    if fmt in WRITTEN:
        ((k, v),) = args.items()
        return WRITTEN[fmt].format(n=name, k=k, v=v)
    return render_call({"name": name, "arguments": args}, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_call_quoted_in_a_string_does_not_run(fmt: str) -> None:
    quoted = _call(fmt, "rm_rf", {"p": "/"})
    for before, after in WRAPPERS:
        if "'" in before and "'" in quoted:
            continue  # (a Python string quoting a call with its own apostrophes: not told)
        for pre, post in AROUND:
            raw = before + pre + quoted + post + after
            calls, errors, text, _ = _streams_as_parse(raw)
            assert not any(c[0] == "rm_rf" for c in calls), raw


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_call_after_a_string_left_open_in_prose_is_read(fmt: str) -> None:
    real = _call(fmt, "search", {"q": "x"})
    for prose in LEFT_OPEN:
        for after in AFTER:
            raw = prose + real + after
            calls, errors, text, _ = _streams_as_parse(raw)
            assert [c[:2] for c in calls] == [("search", {"q": "x"})], raw


# Replies a stream once read otherwise than parse() (QA17 H1: the Gemma quote `<|"|>`
# cut at a delta's end, in the call read after a marker in a string left open, was
# skipped, and its string's `}` taken as the call's end).
STREAMED = [
    'Let me write it: call:w{c:<|"|><think>Plan.</think>\n<|tool_call>call:create_event{city:<|"|>Example:\n'
    '<|tool_call>call:rm_rf{path:<|"|>/home<|"|>}<tool_call|>\nThat is it.<|"|>}<tool_call|>',
    'Let me write it: call:w{c:<|"|><think>Plan.</think>\ncall:create_event{city:<|"|>Example:\n'
    'call:rm_rf{path:<|"|>/home<|"|>}\nThat is it.<|"|>,content:<|"|>notes<|"|>}',
    # A run of end markers after the call cut at a delta's end (`<｜tool▁calls▁e`), then a
    # stray quote and a blank ending the reply: a stream fixed where the call ended before
    # the run's last marker had come, and ran the call parse() keeps as the string's text.
    'Sure. [write_file(content="it\\\'s <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>rm_rf```json'
    '{"p": "/"}```<｜tool▁call▁end｜><｜tool▁calls▁end｜>" ',
]


@pytest.mark.parametrize("raw", STREAMED)
def test_a_stream_tells_a_string_as_parse_does(raw: str) -> None:
    _streams_as_parse(raw)


# A real call whose own value names its end marker, after a string left open in prose:
# its end is where its reading ends, not that marker in its value (QA17 H2b).
NAMES_ITS_END = [
    'Saving {"path": "C:\\dir\\"} now <tool_call>\n{"name": "search", "arguments": {"q": "Use </tool_call> to end a call."}}\n</tool_call>',
    "Try [f(q='<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": \"Wrap calls in <tool_call></tool_call> tags.\"}}</tool_call>",
    'Saving {"path": "C:\\dir\\"} now <|tool_call>call:search{q:<|"|>Line one.\nUse <tool_call|> to end"}<|"|>}<tool_call|>',
]


@pytest.mark.parametrize("raw", NAMES_ITS_END)
def test_a_real_call_naming_its_end_marker_is_read(raw: str) -> None:
    calls, errors, text, _ = _streams_as_parse(raw)
    assert [c[0] for c in calls] == ["search"], raw


@pytest.mark.parametrize("fmt", FORMATS)
def test_calls_after_gemma_strings_left_open_on_each_line_are_read(fmt: str) -> None:
    # Each string left open in prose quotes nothing: the next one's opening, after its
    # key, is no close of the one before (QA17 H4).
    real, gemma = _call(fmt, "search", {"q": "x"}), _call("gemma4_call", "f", {"q": "y"})
    raw = 'Try call:w{q:<|"|>l\n' + real + '\nTry call:w{q:<|"|>l\n' + gemma
    calls, errors, text, _ = _streams_as_parse(raw)
    assert [c[:2] for c in calls] == [("search", {"q": "x"}), ("f", {"q": "y"})], raw


# A code string left open, then what ends it before the real call: a code fence's close
# (the string is code inside the fence, QA19 R1), a blank line (its paragraph ended, as
# its close must come within the call's, R2); or a `"` string that only prose's other
# quote and a closer follow on a later line (R3). Each real call was read as quoted, and
# lost silently, where a quote and a closer came after it.
CODE_LEFT_OPEN = [
    ('```python\nprint("hi\n```\n', '\nIt printed: hi")'),
    ("```python\nprint('hi\n```\n", "\nThe kids') toys."),
    ('~~~\nprint("hi\n~~~\n', '\n")]'),
    ('print("hi\n\n', '\nIt printed: hi")'),
    ('Fix: f(q="x\n\n', '\n")'),
    ('Bug: print("hi\nFix below.\n\n', "\nIt printed: hi')]"),
    ('Try f(q="dogs\n', "\nThat's it')"),
    ('Try f(q="dogs\n', "\nThe kids') are fine."),
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_call_after_a_code_string_that_ended_is_read(fmt: str) -> None:
    real = _call(fmt, "search", {"q": "x"})
    for before, after in CODE_LEFT_OPEN:
        raw = before + real + after
        calls, errors, text, _ = _streams_as_parse(raw)
        if fmt == "lfm2" and errors and not calls:
            # (LFM2's bare Python call body reads `print("hi` at a line's start as a call
            # with a positional argument, run to `hi")`, and tells it: QA19 R10, as at
            # 5a77358, before the changes these replies were lost by; told, not silent.)
            continue
        assert [c[:2] for c in calls] == [("search", {"q": "x"})], raw


# A call the prose shows (QA18 Q14; _scan/quotation.py): quoted in a sentence, its start
# marker right after an opening quote and its end right before the matching close, on one
# line; or in a fenced block of text (```text, ```md, ...). Prose, no call, no error.
SHOWN = [
    ('The syntax is "', '". I will not run it.'), ("The syntax is \u201c", "\u201d. I will not run it."),
    ("The syntax is '", "'. I will not run it."), ("Write \u2018", "\u2019 to call."), ("(\u00ab", "\u00bb)"),
    ('"', '"'), ("For example:\n```text\n", "\n```\nI will not run it."), ("```md\n", "\n```"),
    ("Ex:\n````markdown\nSee:\n\n", "\n\nok\n````\n"), ("```plaintext\n```json\n", "\n```\n"),
]
# Real calls beside those shapes, which stay calls: a quote not right before the marker,
# or not right after the call, a quote glued to a word, other fences, a closed text block.
SHOWN_GUARDS = [
    ('"Calling: ', '"'), ("Here's the call:", ""), ('She said "ok"', ' "fine"'), ('"', ' now"'), ('"', ''),
    ("```\n", "\n```"), ("~~~\n", "\n~~~"), ("```python\n", "\n```"), ("```text\nfoo\n```\n", ""),
    ("It's:'", "'"), ("x'", "'"), ('A\n```text\nB\n```\n\n', '\n"done"'),
]
# (The formats whose calls are written on one line: a quotation is on one line.)
ONE_LINE = [f for f in FORMATS if "\n" not in _call(f, "rm_rf", {"p": "/"})]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_call_the_prose_shows_does_not_run(fmt: str) -> None:
    quoted = _call(fmt, "rm_rf", {"p": "/"})
    for before, after in SHOWN:
        if "\n" in quoted and "\n" not in before:
            continue  # (a quotation is on one line: a call on its lines is not one)
        raw = before + quoted + after
        calls, errors, text, _ = _streams_as_parse(raw)
        assert not calls and not errors, raw
        assert text == raw.strip(), raw  # (all of it prose: the reply's own text)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_call_beside_a_quote_or_fence_that_does_not_show_it_runs(fmt: str) -> None:
    real = _call(fmt, "search", {"q": "x"})
    for before, after in SHOWN_GUARDS:
        raw = before + real + after
        calls, errors, text, _ = _streams_as_parse(raw)
        assert [c[:2] for c in calls] == [("search", {"q": "x"})], raw


def test_one_line_formats_are_most_of_the_grid() -> None:
    assert len(ONE_LINE) >= 8, ONE_LINE


@pytest.mark.parametrize("formats", [None, ["hermes"]])
def test_a_stream_keeps_a_text_fence_that_opened_long_before_the_call(formats) -> None:
    # The block's opener thousands of characters back, and no marker between (with only
    # Hermes, ``` is none): a stream that dropped the opener's line before reading it ran
    # the call that parse() keeps as a code sample.
    quoted = _call("hermes", "rm_rf", {"p": "/"})
    for raw in (
        "Intro.\n```text\n" + "Lorem ipsum dolor sit amet. " * 200 + "\n" + quoted + "\n```\nok",
        "```md\n" + "line of text\n" * 300 + quoted + "\n```",
    ):
        want = parse(raw, TOOLS, formats=formats)
        assert not want.calls and not want.errors, raw
        for size in (1, 8, 64):
            stream = StreamParser(TOOLS, formats=formats)
            for i in range(0, len(raw), size):
                stream.feed(raw[i : i + size])
            assert _key(stream.close()) == _key(want), (size, raw)


@pytest.mark.parametrize("formats", [None, ["hermes"]])
@pytest.mark.parametrize("tools", [None, TOOLS], ids=["no_tools", "tools"])
def test_a_stream_keeps_a_fence_line_that_a_call_opening_comes_on_later(formats, tools) -> None:
    # A ```<page> fence line, prose on it, then a JSON opening whose string quotes a call
    # on the next line: parse() reads that call (a fence line's text is no string's). A
    # stream that dropped the line's start before the opening came on it (it kept only
    # from an opening already come, and its line) read the string as open and the call
    # as quoted (fuzz seed 7 #112083369, #112089106, #112103948). How long the line is
    # decides where a stream drops text: several lengths, several delta sizes.
    for n in range(16):
        raw = (
            'Pinging it first.\n<|im_start|>{"name": "ping_host", "arguments": {"host": "10.0.0.7"}}<|im_end|>'
            "Hi <tool_call>{bad json}</tool_call> ok, I will save a page.\n"
            "```<page> The page quotes one call as its example. " + "Then I check the repository. " * n + "Saving it now: "
            '{"name": "write_file", "parameters": {"content": "Docs:\n<tool_call>\n{"name": "rm_rf", "arguments": {"p": "/"}}\n'
            '</tool_call>\nThat is the whole format."}}\n'
        )
        want = parse(raw, tools, formats=formats)
        assert "rm_rf" in [c.name for c in want.calls], raw
        for size in (1, 2, 3, 7, 8, 64):
            stream = StreamParser(tools, formats=formats)
            for i in range(0, len(raw), size):
                stream.feed(raw[i : i + size])
            got = stream.close()
            assert (got.text, got.calls, got.errors, got.segments) == (want.text, want.calls, want.errors, want.segments), (n, size)


@pytest.mark.parametrize(
    "line", ["````  ```json", "see ```json", "```a`b ```json", "Let me check the weather. ```json"], ids=repr
)
def test_a_json_key_left_open_holds_no_later_line(line: str) -> None:
    # A JSON object's key that its line's end breaks (`"arg` of `"arguments"`, the call
    # object given up) is no string a call on a later line is in: a key holds no lines of
    # text, as a value whose line breaks were left unescaped may. The stream held the call
    # to flush() waiting on a close for it (qa54 F1: once ```` ```` ```json ```` was no
    # fence line, nothing before the reply's end told the string closed or not).
    raw = 'tool_call {"name": "get_weather", "arg\n' + line + '\r\n{"name": "get_weather", "arguments": {}}\n```\nLet me check.\n``'
    tools = ["get_weather", "search_web"]
    want = parse(raw, tools)
    assert [c.name for c in want.calls] == ["get_weather"]
    end = raw.index("```\nLet") + 3
    assert_done_by(raw, tools, end, want)
    # A value's string is held as before: it may quote the call (`{"note": "Docs:\n…`).
    quoted = 'I wrote {"note": "Docs:\n' + line + '\r\n{"name": "get_weather", "arguments": {}}\n```\nend."}'
    assert parse(quoted, tools).calls == []
