"""What each token of a long reading costs, counted (issue 17: any reply up to 32 KB parses
in 50 ms; a value of a format's own call openers one a line reads thousands of tokens
whatever else is done, so each must cost little). Not timed: the tests count the table
simulations and the patterns tried, and check that the shortcuts give the answers of the
way they replace (the table's simulation, the pattern itself)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import toolgram
from toolgram._grammar.registry import default_registry
from toolgram._lalr import driver as _driver
from toolgram._lalr import table as _table

CORPUS = Path(__file__).parent / "corpus"

# A value of the format's own openers one a line, then the real closers (as
# benchmarks/bench_pathological.py's "value of own openers one a line").
OPENER_LINES = {
    "minimax_m2_invoke": ('<minimax:tool_call>\n<invoke name="write">\n<parameter name="content">', '<invoke name="f">\n',
                          "</parameter>\n</invoke>\n</minimax:tool_call>"),
    "qwen3_coder_xml": ("<tool_call>\n<function=write>\n<parameter=content>\n", "<function=f>\n",
                        "\n</parameter>\n</function>\n</tool_call>"),
    "dots_invoke": ('<dots_function_call>\n<invoke name="write">\n<parameter name="content">', '<invoke name="f">\n',
                    "</parameter>\n</invoke>\n</dots_function_call>"),
}  # fmt: skip


def _cases(limit: int | None = None) -> list[tuple[str, object]]:
    out = []
    for path in sorted(CORPUS.glob("*/*.txt")):
        side = path.with_suffix(".tools.json")
        tools = json.loads(side.read_text(encoding="utf-8")) if side.exists() else None
        out.append((path.read_bytes().decode("utf-8"), tools))
    return out[:limit]


def _read(cases: list) -> list[str]:
    return [repr(r) + repr(list(r.segments)) for r in (toolgram.parse(raw, tools) for raw, tools in cases)]


@pytest.mark.parametrize("name", sorted(OPENER_LINES))
def test_a_value_of_openers_simulates_the_table_a_bounded_number_of_times(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # (Each opener reduces the call before it: the driver asked whether the table takes
    # the token by simulating it, three times an opener. The table's own states tell.)
    prefix, line, tail = OPENER_LINES[name]
    simulated = []
    peek = _table.peek
    monkeypatch.setattr(_table, "peek", lambda c, stack, term, *a: simulated.append(term) or peek(c, stack, term, *a))
    toolgram.parse(prefix + line * 100 + tail, formats=[name])
    few = len(simulated)
    toolgram.parse(prefix + line * 400 + tail, formats=[name])
    assert len(simulated) - few <= few + 8, (few, len(simulated) - few)  # (before: about 460, then 1,350: three an opener)


def test_a_sure_answer_is_the_simulations(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every question the corpus asks, told by the table's states (takes) and by the
    # simulation (peek): the same answers.
    asked = []
    takes = _table.takes

    def both(c, stack, term):
        told = takes(c, stack, term)
        asked.append(told == _table.peek(c, stack, term))
        return told

    monkeypatch.setattr(_driver, "takes", both)
    _read(_cases())
    assert len(asked) > 1000 and all(asked), asked.count(False)


def test_a_terminal_is_skipped_only_where_its_pattern_cannot_match() -> None:
    # For each plain terminal of each built-in grammar (see driver._Firsts), at each place
    # of its format's corpus texts: a character the first item refuses begins no match.
    toolgram.parse("")
    told = 0
    for fmt in default_registry().select(None):
        c = fmt.compiled
        if c.earley is not None:
            continue
        texts = [p.read_bytes().decode("utf-8") for p in sorted((CORPUS / fmt.name).glob("*.txt"))] or [""]
        text = "".join(texts)[:4000] + "é名\u0301\u200d\t\r\n <|｜"
        firsts = _driver._firsts(c)
        for name, t in c.terminals.items():
            chars = firsts[name]
            if chars is None or t.first is None:
                continue
            for pos in range(len(text)):
                if not chars[text[pos]]:
                    m = t.pattern.match(text, pos)
                    assert m is None or m.end() == pos, (fmt.name, name, t.source, text[pos : pos + 40])
                    told += 1
    assert told > 10000


@pytest.mark.parametrize("source, first", [
    ("<(?:a|b)>", "<"), (r'["\']', r'["\']'), (r"[^\s<]+", r"[^\s<]"), (r"\s+x", r"\s"), (r"\/x", r"\/"),
    ("a|b", None), ("(?:name=)?[^<]+", None), ("a?b", None), ("a*b", None), ("a{0,2}b", None), (r"\bx", None),
    (r"\p{L}+", None), ("[[:alpha:]]x", None), ("(?i)a", None), ("^a", None), ("", None),
])  # fmt: skip
def test_the_first_item_of_a_pattern(source: str, first: str | None) -> None:
    from toolgram._grammar.compile import Terminal

    got = Terminal("T", source, None, 0).first
    assert (got.pattern if got is not None else None) == first


def test_readings_are_the_same_without_the_shortcuts(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = _cases()[::3]
    for name, (prefix, line, tail) in OPENER_LINES.items():
        cases.append((prefix + line * 50 + tail, None))
    shortcut = _read(cases)
    # (No terminal plain, no first character told, no table state sure: the general ways.)
    monkeypatch.setattr(_driver._Firsts, "__missing__", lambda self, name: None)
    monkeypatch.setattr(_table, "_sure", lambda *a: False)
    _forget()
    try:
        assert _read(cases) == shortcut
    finally:
        _forget()  # (what the general ways kept: the tests after this one read with the shortcuts)


def _forget() -> None:
    for fmt in default_registry().select(None):
        fmt.compiled.derived.pop("firsts", None)
        fmt.compiled.derived.pop("sure_takes", None)


# Open parameters of the invoke formats (benchmarks/bench_pathological.py's "open
# parameters"): each plain tag's tokens are read by _lalr/tagread.py, not lexed one by one.
OPEN_PARAMETERS = {
    "minicpm5_function_param": ('<function name="search">\n', '<param name="q">x\n'),
    "dots_invoke": ('<dots_function_call>\n<invoke name="search">\n', '<parameter name="q" type="str">x\n'),
    "deepseek_v41_dsml": ('<｜DSML｜ calls>\n<｜DSML｜ invoke name="search">\n', '<｜DSML｜ parameter name="q" string="true">x\n'),
    "step3_steptml": ('<｜tool_calls_begin｜>\n<｜tool_call_begin｜><steptml:invoke name="search">\n', "<steptml:parameter name='q'>x\n"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(OPEN_PARAMETERS))
def test_plain_parameter_tags_are_read_whole_and_alike(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    head, param = OPEN_PARAMETERS[name]
    raw = head + param * 200
    lexed = []
    lex = _driver.Driver._lex
    monkeypatch.setattr(_driver.Driver, "_lex", lambda d, buf, final, allowed: lexed.append(d.pos) or lex(d, buf, final, allowed))
    fast = toolgram.parse(raw, formats=[name])
    assert len(lexed) < 2 * 200 + 40, len(lexed)  # (each value, and the tags near the end)
    streamed = toolgram.StreamParser(formats=[name])
    for i in range(0, len(raw), 8):
        streamed.feed(raw[i : i + 8])
    fast_stream = streamed.close()
    monkeypatch.setattr(_driver.Driver, "_tag_tokens", lambda d, buf, final: False)
    slow = toolgram.parse(raw, formats=[name])
    assert repr(fast) + repr(list(fast.segments)) == repr(slow) + repr(list(slow.segments))
    assert repr(fast_stream) == repr(slow)


# A value of an invoke format's own call openers one a line (OPENER_LINES): each opener,
# `<invoke name="f">`, after its line's break, is a call of its own, and its tokens are read
# by _lalr/tagread.py with the blanks before it, not lexed one by one (1,664 lexer calls
# for 200 lines, 110 now).
@pytest.mark.parametrize("name", ["minimax_m2_invoke", "dots_invoke"])
def test_invoke_opener_lines_are_read_whole_and_alike(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    head, unit, tail = OPENER_LINES[name]
    raw = head + unit * 200 + tail
    lexed = []
    lex = _driver.Driver._lex
    monkeypatch.setattr(_driver.Driver, "_lex", lambda d, buf, final, allowed: lexed.append(d.pos) or lex(d, buf, final, allowed))
    fast = toolgram.parse(raw, ["write"], formats=[name])
    assert len(lexed) < 200, len(lexed)  # (the call around them, its value, the tags near the end)
    streamed = toolgram.StreamParser(["write"], formats=[name])
    for i in range(0, len(raw), 8):
        streamed.feed(raw[i : i + 8])
    fast_stream = streamed.close()
    monkeypatch.setattr(_driver.Driver, "_tag_tokens", lambda d, buf, final: False)
    slow = toolgram.parse(raw, ["write"], formats=[name])
    assert repr(fast) + repr(list(fast.segments)) == repr(slow) + repr(list(slow.segments))
    assert repr(fast_stream) == repr(slow)


def test_last_argument_is_found_from_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    # A call of parameters whose closes were left out, cut by the end of the reply: the
    # builder asks for the call's last part that holds arguments (builder._last_arg) once,
    # at the first missing close; it looked through every part of the call for it (each
    # parameter's key, value and `unclosed`: 2,000 rule names asked), and now from the end.
    import sys

    from toolgram._build import builder as _builder

    asked = []

    class Counting(dict):
        def get(self, key, default=None):
            if sys._getframe(1).f_code.co_name == "_last_arg":
                asked.append(key)
            return super().get(key, default)

    monkeypatch.setattr(_builder, "_RULE_NAMES", Counting(_builder._RULE_NAMES))
    rule = _builder._rule

    def counted_rule(node, *args):
        if sys._getframe(1).f_code.co_name == "_last_arg":
            asked.append(node.data)
        return rule(node, *args)

    monkeypatch.setattr(_builder, "_rule", counted_rule)
    raw = "<tool_call>\n<function=search>\n" + "<parameter=q>x\n" * 500
    result = toolgram.parse(raw, ["search"], formats=["qwen3_coder_xml"])
    assert result.errors  # ("q" given twice)
    assert 0 < len(asked) < 20, len(asked)
