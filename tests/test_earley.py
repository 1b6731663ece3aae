"""`parser: earley`: a user grammar LALR cannot express, read by Lark's Earley parser.

tests/earley/plaincall.lark is such a grammar (a value of several words runs on to
the next `key:`, which LALR(1) cannot see coming); tests/earley/cases.json holds
replies with what they read to (calls, repairs, errors, text, segments). A region is
delimited by markers and parsed once, when it ends: a stream reads what a whole
reply does, in any chunking, parsing each region once.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

import toolgram
from toolgram import GrammarError
from toolgram._grammar.registry import load_user_format_header
from toolgram._lalr import earley as _earley
from toolgram._stream.parser import StreamParser

HERE = Path(__file__).resolve().parent / "earley"
GRAMMAR = HERE / "plaincall.lark"
CASES = json.loads((HERE / "cases.json").read_text(encoding="utf-8"))
CAP = _earley.EARLEY_MAX_REGION


def parse(raw: str, tools: Any = None) -> toolgram.ParseResult:
    return toolgram.parse(raw, tools, grammar_paths=[GRAMMAR])


def stream(raw: str, tools: Any, size: int) -> toolgram.ParseResult:
    sp = StreamParser(tools, grammar_paths=[GRAMMAR])
    for i in range(0, len(raw), size):
        sp.feed(raw[i : i + size])
    return sp.close()


def summary(r: toolgram.ParseResult) -> tuple:
    return r.text, r.calls, r.errors, r.reasoning, r.segments


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_case_reads_as_written(case: dict) -> None:
    r = parse(case["raw"], case.get("tools"))
    calls = [
        {"name": c.name, "format": c.format, "arguments": c.arguments, "repairs": list(c.repairs), "span": list(c.span)}
        for c in r.calls
    ]
    assert calls == case["calls"]
    assert list(r.errors) == case["errors"]
    assert r.text == case["text"]
    assert [f"{s.kind} {s.start} {s.end}" for s in r.segments] == case["segments"]


@pytest.mark.parametrize("size", [1, 2, 7, 0], ids=["1", "2", "7", "whole"])
@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_a_stream_reads_what_a_whole_reply_does(case: dict, size: int) -> None:
    raw = case["raw"]
    assert summary(stream(raw, case.get("tools"), size or len(raw))) == summary(parse(raw, case.get("tools")))


def test_lalr_rejects_the_grammar_with_a_conflict(tmp_path: Path) -> None:
    lalr = tmp_path / "plaincall.lark"
    lalr.write_text(GRAMMAR.read_text(encoding="utf-8").replace("// parser: earley\n", ""), encoding="utf-8")
    with pytest.raises(GrammarError, match="LALR shift/reduce conflict"):
        toolgram.parse("x", grammar_paths=[lalr])


def _grammar(tmp_path: Path, header: str, body: str = 'start: "<<c>>" call "<</c>>"\ncall: name\nname: /\\w+/\n') -> Path:
    path = tmp_path / "mine.lark"
    path.write_text(textwrap.dedent(header) + "\n" + body, encoding="utf-8")
    return path


def test_an_earley_grammar_needs_an_end_marker(tmp_path: Path) -> None:
    path = _grammar(tmp_path, "// format: mine\n// start: <<c>>\n// parser: earley\n")
    with pytest.raises(GrammarError) as info:
        load_user_format_header(path)
    assert str(info.value).startswith(f"{path}:3: 'parser: earley' needs '// end: <marker>'")
    assert info.value.line == 3
    with pytest.raises(GrammarError, match="needs '// end: <marker>'"):
        toolgram.parse("x", grammar_paths=[path])


def test_an_unknown_parser_is_a_grammar_error(tmp_path: Path) -> None:
    path = _grammar(tmp_path, "// format: mine\n// start: <<c>>\n// end: <</c>>\n// parser: glr\n")
    with pytest.raises(GrammarError, match=r"mine\.lark:4: parser must be 'lalr' or 'earley'"):
        load_user_format_header(path)


def test_an_earley_grammar_has_no_bracket_scanned_terminal(tmp_path: Path) -> None:
    body = 'start: "<<c>>" json_calls "<</c>>"\njson_calls: JSON\nJSON: /[\\[{]/\n'
    path = _grammar(tmp_path, "// format: mine\n// start: <<c>>\n// end: <</c>>\n// parser: earley\n", body)
    with pytest.raises(GrammarError, match=r"mine\.lark:8: terminal JSON is delimited by a bracket scanner"):
        toolgram.parse("x", grammar_paths=[path])


def _long(n: int, close: bool = True) -> str:
    words = ("word " * (n // 5 + 1))[: n - 1].rstrip() + "z"
    return "Before. <<call>>note text: " + words + ("<</call>> After." if close else "")


def test_a_region_over_the_cap_is_an_error_and_stays_prose() -> None:
    raw = _long(CAP)
    r = parse(raw)
    assert r.calls == []
    assert list(r.errors) == [f"Couldn't read a tool call: the region is longer than {CAP} characters (parser: earley)."]
    assert r.text == raw.replace("<<call>>", "").replace("<</call>>", "")  # (its markers markup, never prose)
    for size in (1, 7, 4096):
        assert summary(stream(raw, None, size)) == summary(r)


@pytest.mark.parametrize("at", range(-12, 4))
def test_a_call_marker_at_the_cap_ends_the_region_alike_in_a_stream(at: int) -> None:
    head = "<<call>>note text: "
    words = ("word " * (CAP // 5 + 1))[: CAP + at - len(head)].rstrip() + "z"
    raw = head + words + '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    r = parse(raw)
    assert [c.name for c in r.calls] == (["note", "f"] if len(head + words) <= CAP else ["f"])
    for size in (1, 7):
        assert summary(stream(raw, None, size)) == summary(r)


def test_a_region_under_the_cap_is_read() -> None:
    raw = _long(CAP - 100)
    r = parse(raw)
    assert [c.name for c in r.calls] == ["note"] and not r.errors
    assert summary(stream(raw, None, 7)) == summary(r)


def test_a_stream_parses_each_region_once_and_absorbs_its_deltas(monkeypatch: pytest.MonkeyPatch) -> None:
    sp = StreamParser(None, grammar_paths=[GRAMMAR], formats=["plaincall"])
    parses: list[int] = []
    runs: list[int] = []
    real_parse = _earley.EarleyDriver._parse
    real_run = _earley.EarleyDriver.run
    monkeypatch.setattr(_earley.EarleyDriver, "_parse", lambda self, *a: parses.append(1) or real_parse(self, *a))
    monkeypatch.setattr(_earley.EarleyDriver, "run", lambda self, *a: runs.append(1) or real_run(self, *a))
    raw = _long(4000) + " " + _long(3000)
    for ch in raw:
        sp.feed(ch)
    r = sp.close()
    assert [c.name for c in r.calls] == ["note", "note"]
    assert len(parses) == 2
    assert len(runs) < 100, len(runs)  # (a delta with no marker character is put aside unseen)


def test_announce_name_has_no_early_name_for_an_earley_region() -> None:
    raw = CASES[0]["raw"]  # (a call, then prose)
    closed = raw.index("<</call>>") + len("<</call>>")
    sp = StreamParser(None, grammar_paths=[GRAMMAR], announce="name")
    started = []
    for i in range(len(raw)):
        kinds = [type(e).__name__ for e in sp.feed(raw[i])]
        assert "CallCancelled" not in kinds
        if "CallStart" in kinds:
            started.append(i + 1)
    assert started == [closed]  # (the call comes whole, when its end marker has)
    assert sp.close().calls == parse(raw).calls
