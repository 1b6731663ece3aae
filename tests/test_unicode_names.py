"""Names with combining marks, joiners and other characters that the stdlib `re` and the
`regex` module read differently (see src/toolgram/_grammar/words.py): parse() and a stream, in
any chunking, give the same result, and a name is read by one rule.

`\\w` in a grammar is a word character as Unicode has it (letters, combining marks,
digits, connector punctuation) without the zero-width joiners: `cafe\\u0301` is a name,
`f\\u200d` is not. parse() used to run some patterns with `re` (a name with a combining
mark was prose) while the stream ran them with `regex` (the same name was a call).
"""

from __future__ import annotations

from typing import Any

import pytest
import regex

import toolgram

from conftest import result_key, streamed
from toolgram._scan import fastpath as _frame
from toolgram._grammar.words import SPACE, WORD, fast, words

MARK = "\u0301"  # COMBINING ACUTE ACCENT
ZWJ = "\u200d"  # ZERO WIDTH JOINER

# (id, raw, tools, the names of the calls it must give: the precondition that the
# case reads a call at all, or none)
CASES: list[tuple[str, str, Any, list[str]]] = [
    ("bare_mark", f"t{MARK}(", None, [f"t{MARK}"]),
    ("bare_zwj", f"f{ZWJ}(", None, []),
    ("bare_mark_args", f"buscar_cafe{MARK}(ciudad='Bogota')", None, [f"buscar_cafe{MARK}"]),
    ("bare_mark_offered", f"buscar_cafe{MARK}(ciudad='Bogota')", [f"buscar_cafe{MARK}"], [f"buscar_cafe{MARK}"]),
    ("pythonic_mark", f"[f{MARK}(a=1)]", None, [f"f{MARK}"]),
    ("pythonic_mark_key", f"[f{MARK}(a{MARK}=1)]", None, [f"f{MARK}"]),
    ("pythonic_zwj", f"[f{ZWJ}(a=1)]", None, []),
    ("pythonic_zwj_offered", f"[get_weather{ZWJ}(city='Paris')]", ["get_weather"], []),
    ("pythonic_mark_prose", f"Sure.\n[weathe{MARK}r(city='Paris'), f(b=2)]", [f"weathe{MARK}r", "f"], [f"weathe{MARK}r", "f"]),
    ("pythonic_superscript", "[f\u00b2(a=1)]", None, []),
    ("pythonic_connector", "[f\u203fg(a=1)]", None, ["f\u203fg"]),
    ("lfm2_mark", f"<|tool_call_start|>[cafe{MARK}(a=1)]<|tool_call_end|>", None, [f"cafe{MARK}"]),
    ("lfm2_zwj", f"<|tool_call_start|>[f{ZWJ}(a=1)]<|tool_call_end|> then text", None, []),
    ("llama4_mark", f"<|python_start|>[cafe{MARK}(a=1)]<|python_end|>", None, [f"cafe{MARK}"]),
    ("gemma_bare_mark", f"call:f{MARK}{{a:1}}", None, [f"f{MARK}"]),
    ("gemma_bare_zwj", f"call:f{ZWJ}{{a:1}}", None, []),
    ("gemma_mark", f'<|tool_call>call:cafe{MARK}{{a:<|"|>x<|"|>}}<tool_call|>', None, [f"cafe{MARK}"]),
    ("gemma_zwj", f'<|tool_call>call:f{ZWJ}{{a:<|"|>x<|"|>}}<tool_call|>', None, []),
    ("glm_mark", f"<tool_call>cafe{MARK}\n<arg_key>a</arg_key>\n<arg_value>1</arg_value></tool_call>", None, [f"cafe{MARK}"]),
    ("glm_zwj", f"<tool_call>f{ZWJ}\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>", None, []),
    ("mistral_mark", f'[TOOL_CALLS]cafe{MARK}[ARGS]{{"a": 1}}', None, [f"cafe{MARK}"]),
    # JSON names are strings: any character is kept (a name not offered is an error).
    ("hermes_mark", f'<tool_call>{{"name": "f{MARK}", "arguments": {{}}}}</tool_call>', None, [f"f{MARK}"]),
    ("hermes_zwj", f'<tool_call>{{"name": "f{ZWJ}", "arguments": {{}}}}</tool_call>', None, [f"f{ZWJ}"]),
    ("hermes_zwj_offered", f'<tool_call>{{"name": "f{ZWJ}", "arguments": {{}}}}</tool_call> and on', ["f"], []),
    ("hermes_name_mark_then_tag", f"<tool_call>cafe{MARK} <x>\n</tool_call>", None, []),
    ("hermes_mark_prose", f'Caf{MARK}e first. <tool_call>{{"name": "f", "arguments": {{}}}}</tool_call>', None, ["f"]),
    # Separators that `re`'s \s takes and `regex`'s does not (U+001C..U+001F).
    ("hermes_file_separator", '<tool_call>\x1c{"name": "f", "arguments": {}}</tool_call>', None, ["f"]),
    ("bare_file_separator", "f\x1c(a=1)", None, []),
    ("pythonic_nbsp", "[f(\xa0a=1)]", None, []),
    ("hermes_nbsp", '<tool_call>\xa0cafe{MARK}\xa0<b></tool_call>', None, []),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_stream_reads_names_as_parse_does(case: tuple) -> None:
    _, raw, tools, names = case
    expected = toolgram.parse(raw, tools)
    assert [c.name for c in expected.calls] == names
    for size in (1, 2, 3, 7):
        assert result_key(streamed(raw, size, tools)) == result_key(expected), f"chunks of {size}"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_fast_paths_change_nothing(case: tuple) -> None:
    """The frames and opening tests (run by `re` where it reads as `regex`) decide
    nothing the general way would not."""
    _, raw, tools, _ = case
    expected = toolgram.parse(raw, tools)
    _frame.enabled = False
    try:
        slow = toolgram.parse(raw, tools)
    finally:
        _frame.enabled = True
    assert result_key(slow) == result_key(expected)


def test_a_grammars_word_is_unicodes_without_the_joiners() -> None:
    word = regex.compile(words(r"\w+\Z"))
    for name in ("cafe\u0301", "t\u0301", "get_weather", "f\u203fg", "\u0663\u0661", "\u24b6"):
        assert word.match(name), name
    for name in ("f\u200d", "f\u200c", "f\u00b2", "f-g", "f g"):
        assert not word.match(name), name
    # In a class and outside one, \W the rest.
    assert regex.fullmatch(words(r"[\w.\-]+"), "a.b-c\u0301")
    assert regex.fullmatch(words(r"\W"), ZWJ)
    assert regex.fullmatch(words(r"[^\w]"), ZWJ)
    assert words(r"[\]\w]\\w") == rf"[\]{WORD}]\\w"


@pytest.mark.parametrize(
    "pattern",
    [
        words(r"(?:[A-Za-z_]|\\_)(?:[\w.\-]|\\_)*(?=\s*\()"),
        r"\s*(?:[^\s<>{}\[\]()]+\s*)?<",
        r"thought\b[ \t]*\n?",
        r"\d+\S",
        r"[^\s<]+",
    ],
)
def test_the_stdlib_runs_a_pattern_only_where_it_reads_it_alike(pattern: str) -> None:
    compiled = regex.compile(pattern)
    for_ascii, for_any = fast(compiled)
    texts = ["f(", "f \t(", "t\u0301(", "f\u200d(", "f\x1c(", "f\xa0<", "thought\u0301 x", "\u0663\u00b2x", "x<"]
    for text in texts:
        got = for_any.match(text)
        want = compiled.match(text)
        assert (got and got.span()) == (want and want.span()), (text, for_any)
        if text.isascii():
            got = for_ascii.match(text)
            assert (got and got.span()) == (want and want.span()), (text, for_ascii)
    if r"\w" in pattern or "\\p" in pattern or r"\b" in pattern or r"\d" in pattern:
        assert for_any is compiled  # (no `re` spelling reads those alike on any text)
    else:
        assert SPACE in for_any.pattern or r"\s" not in pattern
