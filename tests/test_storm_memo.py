"""parse()'s memo of region outcomes (src/toolgram/_scan/storm.py): a marker storm's
regions take a certified region's outcome instead of being read again, and parse()
reads every reply the same with it as without it (storm.enabled = False)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import toolgram
from toolgram._grammar.registry import default_registry
from toolgram._scan import storm


def _both(raw: str, tools=None, **kw) -> tuple[str, str]:
    def canon(r) -> str:
        return repr(r) + "|" + repr(list(r.segments))

    storm.enabled = True
    try:
        with_memo = canon(toolgram.parse(raw, tools, **kw))
        storm.enabled = False
        without = canon(toolgram.parse(raw, tools, **kw))
    finally:
        storm.enabled = True
    return with_memo, without


def _starts() -> list[str]:
    return sorted({m for f in default_registry().select(None) for m in f.starts})


@pytest.mark.parametrize("start", _starts())
def test_a_storm_reads_the_same_with_the_memo(start):
    rng = random.Random(start)
    for after in ("", "{", "x", "\n", ' {"name": "f"', "`"):
        unit = start + after
        for before in ("", "Sure.\n", "<think>"):
            raw = before + unit * (1400 // len(unit) + 1)
            tools = ["f", "x"] if rng.random() < 0.5 else None
            a, b = _both(raw, tools)
            assert a == b, (unit, before)


def _remembered(raw, monkeypatch):
    """How many of raw's regions took a remembered outcome (storm._moved makes each, or,
    for one that is prose, parse() joins it to the prose around it: storm.prose_end), the
    memo's reading being the same as the reading without it."""
    taken = []
    moved = storm._moved
    monkeypatch.setattr(storm, "_moved", lambda items, start: taken.append(start) or moved(items, start))
    prose_end = storm.prose_end

    def prose(sc, start, *a):
        got = prose_end(sc, start, *a)
        if got[0]:
            taken.append(start)
        return got

    monkeypatch.setattr(storm, "prose_end", prose)
    a, b = _both(raw)
    assert a == b
    return len(taken)


@pytest.mark.parametrize(
    "unit",
    ["<tool_call>{", "<tool_call>x", "```{", "<function=x", "<tool_call>{<tool_call>x\n", "[TOOL_CALLS]{"],
)
def test_a_storm_is_read_through_the_memo(unit, monkeypatch):
    """Most of a storm's regions take a remembered outcome (storm._moved makes each)."""
    raw = unit * (8192 // len(unit))
    assert _remembered(raw, monkeypatch) > raw.count(unit[:4]) * 0.8


def test_a_kimi_k3_storm_is_read_through_the_memo(monkeypatch):
    """QA9 P3: each value runs to the next tools section's opener. A stream's reading of
    the window did not decide such a region while the VALUE pattern's width (1,579
    characters) was not past every tag of its reading, so no key was certified and
    parse() read every region again (94 ms at 32 KB)."""
    unit = '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|><|open|>argument key="a" type="string"<|sep|>abc\n'
    raw = unit * (8192 // len(unit))
    assert _remembered(raw, monkeypatch) > raw.count("<|open|>tools<|sep|>") * 0.4


def test_a_reply_with_no_storm_takes_nothing_from_the_memo(monkeypatch):
    """A key is certified only where it came at a recent region: a reply whose calls differ
    is read the usual way throughout."""
    taken = []
    monkeypatch.setattr(storm, "_certify", lambda *a: taken.append(a) or False)
    raw = "".join(f'<tool_call>{{"name": "f{i}", "arguments": {{"a": {i}}}}}</tool_call>\n' for i in range(200))
    toolgram.parse(raw)
    assert not taken


def test_parse_asks_no_memo_about_a_region_a_fast_frame_reads(monkeypatch):
    """The memo refuses every region a fast frame reads (storm._certify), so parse() tries
    the frame first and asks the memo nothing about a reply of well-formed calls (its
    key and bookkeeping were a tenth of a small reply's parse); once a region no frame
    reads has asked it (a storm), it is asked first. The results are as without it."""
    asked = []
    key_of = storm.key_of  # (what region() and, parse()'s, prose_end() ask first)
    monkeypatch.setattr(storm, "key_of", lambda sc, start, *a: asked.append(start) or key_of(sc, start, *a))
    call = '<tool_call>\n{"name": "f", "arguments": {"a": %d}}\n</tool_call>\n'
    raw = "".join(f"Step {i}.\n" + call % i for i in range(5))
    assert len(toolgram.parse(raw).calls) == 5 and asked == []
    broken = "Now <tool_call>{oops</tool_call>\n"
    raw = raw + broken + raw
    result = toolgram.parse(raw)
    assert len(result.calls) == 10 and asked[0] == raw.index(broken) + 4
    assert len(asked) > 1  # (after it, the next run's first call asks the memo first, as before)
    assert _both(raw) == (_both(raw)[1],) * 2


def test_mutated_storms_read_the_same_with_the_memo():
    rng = random.Random(17)
    pieces = ["<tool_call>", "{", "x", "</tool_call>", "\n", " ", '"', "`", "<think>", "</think>", "[TOOL_CALLS]", "<function=f>", "```"]
    for _ in range(60):
        unit = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 4)))
        raw = unit * (1200 // len(unit) + 1)
        for _ in range(rng.randint(0, 3)):
            at = rng.randrange(len(raw))
            raw = raw[:at] + rng.choice(pieces) + raw[at:]
        a, b = _both(raw, ["f"] if rng.random() < 0.5 else None, in_think=rng.random() < 0.1)
        assert a == b, raw[:80]


@pytest.mark.parametrize(
    "unit,kw",
    [
        # Calls the fast frame does not read (single quotes), each closer written twice: a
        # call's reading notes its closer (Scanner.after_call), which a moved outcome did not
        # (QA7 D1: from the fourth call on, the second closer was text).
        ("<tool_call>{'name': 'f', 'arguments': {'a': 1}}</tool_call></tool_call>", {}),
        ('<tool_call>\n<function="f">\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>\n</tool_call>\n', {}),
        (
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n</tool_call>\n"
            "<function=get_time>\n<parameter=tz>\nUTC\n</parameter>\n</function>\n</function></tool_call>",
            {"in_think": True},
        ),
    ],
)
def test_calls_with_their_closer_written_twice_read_the_same_with_the_memo(unit, kw):
    a, b = _both(unit * 8 + "\nDone.", **kw)
    assert a == b


def _stream(raw: str, n: int, tools=None, **kw) -> tuple:
    sp = toolgram.StreamParser(tools, **kw)
    events = []
    for i in range(0, len(raw), n):
        events += sp.feed(raw[i : i + n])
    events += sp.flush()
    return sp.close(), events


@pytest.mark.parametrize(
    "unit,kw",
    [
        ("<tool_call>{", {}),
        ("<tool_call>x", {}),
        ("```{", {}),
        ("[TOOL_CALLS]{", {}),
        ("<tool_call>{<tool_call>x\n", {}),
        # Calls the fast frame does not read, their closer written twice (QA7 D1: a moved
        # outcome notes the closer, as the call's reading does).
        ("<tool_call>{'name': 'f', 'arguments': {'a': 1}}</tool_call></tool_call>", {"announce": "name"}),
        ("<tool_call>{'name': 'f', 'arguments': {'a': 1}}</tool_call>\n", {"max_chars": 3000}),
    ],
)
def test_a_storm_streams_through_the_memo(unit, kw, monkeypatch):
    """A stream holds a storm's region until the text holds its window, then takes the
    remembered outcome (storm._moved makes each) while the deltas come, not only at the
    end: in every chunking it reads what parse() reads, with the memo and without it."""
    raw = unit * (6000 // len(unit)) + "\nDone."
    storm.enabled = False
    try:
        without = toolgram.parse(raw, max_chars=kw.get("max_chars", 32768))
        _, plain = _stream(raw, 7, **kw)
    finally:
        storm.enabled = True
    whole = toolgram.parse(raw, max_chars=kw.get("max_chars", 32768))
    assert repr(whole) + repr(whole.segments) == repr(without) + repr(without.segments)
    for n in (1, 3, 7, 64):
        taken = []
        moved = storm._moved
        monkeypatch.setattr(storm, "_moved", lambda items, start: taken.append(start) or moved(items, start))
        sp = toolgram.StreamParser(None, **kw)
        events = []
        for i in range(0, len(raw), n):
            events += sp.feed(raw[i : i + n])
        fed = len(taken)  # (before flush(): the reply's end reads only its last regions)
        events += sp.flush()
        result = sp.close()
        monkeypatch.setattr(storm, "_moved", moved)
        assert repr(result) + repr(result.segments) == repr(whole) + repr(whole.segments), n
        regions = raw[: kw.get("max_chars", len(raw))].count(unit[:4])
        assert fed > regions * 0.6, (n, fed, regions)
        if kw.get("announce") == "name":
            # Each call started once, its arguments' JSON in its deltas, the same calls done
            # as without the memo (a held region's call starts when it is read).
            starts = [e.index for e in events if type(e) is toolgram.CallStart]
            assert len(starts) == len(set(starts))
            done = [e for e in events if type(e) is toolgram.CallDone]
            for e in done:
                sent = "".join(d.text for d in events if type(d) is toolgram.ArgumentsDelta and d.index == e.index)
                assert sent == json.dumps(e.call.arguments, ensure_ascii=False)
            assert [(e.call.name, e.call.arguments) for e in done] == [
                (e.call.name, e.call.arguments) for e in plain if type(e) is toolgram.CallDone
            ]
            assert len(done) == len(whole.calls)


# A Qwen3-Coder call whose line goes on with prose arms the watch for stray closers
# (stray.py), which a region begun ends; a fence whose region outcome the memo remembers
# (its key seen at the two fences before) did not end it, so parse() told the closers shown
# in the next fence as an error that its reading without the memo, and a stream (no key
# yet: no storm), read as text (fuzz seed 7 #507206).
_FENCE = "l_call> Done, the file is written.\n\nThe format:\n```xml\n</parameter>\n</function>\n</tool_call>\n```"
_FENCES_AROUND_A_CALL = "x" + _FENCE * 2 + "<function=x><parameter=x></function><" + _FENCE


def test_a_remembered_region_ends_the_watch_for_stray_closers():
    a, b = _both(_FENCES_AROUND_A_CALL)
    assert a == b
    whole = toolgram.parse(_FENCES_AROUND_A_CALL)
    for n in (1, 7, len(_FENCES_AROUND_A_CALL)):
        streamed, _ = _stream(_FENCES_AROUND_A_CALL, n)
        assert repr(streamed) + repr(streamed.segments) == repr(whole) + repr(whole.segments), n


@pytest.mark.parametrize(
    "case",
    [
        # Each value is cut by the next section's marker, and its region runs on to the one
        # after: 266 characters from one region of a marker to the next.
        "kimi_k2/cut_value_keeps_its_whitespace",
        # Each call is a region of 320 characters.
        "kimi_k3_open_close/argument_close_then_prose_call_close_left_out",
    ],
)
def test_a_storm_of_regions_longer_than_the_window_streams_through_the_memo(case, monkeypatch):
    """A stream's streak of a marker's regions counted only those begun within _AHEAD of
    the one before: regions longer than that, each right after the one before, never
    made one, and the stream read every region while parse() took most from the memo
    (issue 17: 8-character deltas of 32 KB cost 14 times the parse, over the budget of 3
    times it and 10 µs a delta). The streak goes on over regions each read right after
    the one before."""
    unit = (Path(__file__).parent / "corpus" / (case + ".txt")).read_text(encoding="utf-8") + "\n"
    raw = unit * (8000 // len(unit))
    whole = toolgram.parse(raw)
    for n in (1, 7, 64):
        taken = []
        moved = storm._moved
        monkeypatch.setattr(storm, "_moved", lambda items, start: taken.append(start) or moved(items, start))
        sp = toolgram.StreamParser(None)
        for i in range(0, len(raw), n):
            sp.feed(raw[i : i + n])
        fed = len(taken)  # (before flush(): the reply's end reads only its last regions)
        sp.flush()
        result = sp.close()
        monkeypatch.setattr(storm, "_moved", moved)
        assert repr(result) + repr(result.segments) == repr(whole) + repr(whole.segments), n
        assert fed > raw.count(unit) * 0.4, (n, fed)


def test_a_broken_line_right_after_a_line_of_calls_reads_the_same_with_the_memo():
    """Llama 3's `{` with tools: a line the grammar takes and cannot read is told when it
    comes right after a line of calls (mention._next_line_call, which reads where the last
    one ended: Scanner.line_call_end), prose after prose. The memo's key holds where that
    line ended when the look-behind does (storm.key_of): a broken line after a call took
    the outcome remembered for the same window after prose, untold, and a stream that read
    it told it (fuzz seed 7 #8136182: 48 errors in parse(), 47 in a stream of 64)."""
    tail = '\nThat is the whole format: one object a line, nothing around it."}}'
    broken = '{"name": "write_file", "parameters": {"content": "Docs:\n{"name": "get_weather"}' + tail
    call = '{"name": "write_file", "parameters": {"content": "Docs: see below.' + tail
    raw = "Here is the file.\n\n" + "\n\n".join([broken] * 4 + [call] + [broken] * 3)
    tools = ["get_weather", "write_file"]
    a, b = _both(raw, tools)
    assert a == b
    whole = toolgram.parse(raw, tools)
    assert len(whole.calls) == 1 and len(whole.errors) == 1
    for n in (1, 7, 64):
        result, _ = _stream(raw, n, tools)
        assert repr(result) + repr(result.segments) == repr(whole) + repr(whole.segments), n


@pytest.mark.parametrize("unit", ['[f(a="x"] ok\n', "[f(a=x] ok\n", '[f(a="x", b=2] ok\n'])
def test_a_storm_of_lists_closed_before_their_call_is_read_through_the_memo(unit, monkeypatch):
    """Issue 17: a list whose call's `)` was left out before its `]`, prose after it, one a
    line. The value runs on to the end of the reply (no `,` or `)` at its depth ends it),
    and the whole text's reading reads it up to that `]` (Driver.listed); a stream's
    reading of the window waited on it, so no key was certified and every region was
    read (705 ms at 32 KB). Told what the whole text's reading read so (Driver.
    listed_hint), the window's reading reads it as that did, and the memo checks, at each
    region it gives the outcome to, that its value runs on so there too (_listed_hold)."""
    taken = []
    moved = storm._moved
    monkeypatch.setattr(storm, "_moved", lambda items, start: taken.append(start) or moved(items, start))
    raw = unit * (8192 // len(unit))
    a, b = _both(raw, ["f"])  # (without tools, `[f(` begins no region of its own a line)
    assert a == b
    assert len(taken) > raw.count("\n") * 0.8


@pytest.mark.parametrize(
    "tail",
    [")", ")" * 50, ")" * 500, "), g(b=1)]", "\n<tool_call>\n", '"', "\n```\n", "]", '\n[f(a="y")]'],
)
def test_a_list_closed_storm_whose_end_tells_otherwise_reads_the_same_with_the_memo(tail):
    """The text after the window tells whether the value runs on to the end of the reply:
    a `)` or `,` there ends it, a marker may cut it. Each region the memo gives the
    outcome to is checked for that (_listed_hold): the same reading with and without
    (without that check, fifty `)` at the end, which end the values of the last fifty
    lines' calls, read otherwise: the key was certified hundreds of lines before)."""
    for unit in ('[f(a="x"] ok\n', "[f(a=x] ok\n"):
        for n in (40, 400):
            raw = unit * n + tail
            a, b = _both(raw, ["f"])
            assert a == b, (unit, n, tail)


_OWN_CUT = ["<|tool_call_start|>[f(a='x ", "<|tool_call_start|>[f(a='x\n", "<|tool_call_start|>[f(b=1, a='x "]


@pytest.mark.parametrize("unit", _OWN_CUT)
def test_a_storm_of_strings_cut_at_their_own_start_marker_is_read_through_the_memo(unit, monkeypatch):
    """Issue 19 P1: a Python string left open before the next region's own start marker,
    again and again. Only the end of the reply tells that the string never closes, and
    then it ends at that marker, where a call reads (_close._own_call_at); a stream's
    reading of the window waited on it, so no key was certified and every region was
    read, with the region after it (425 ms at 32 KB). Told the cut the whole text's
    reading made (Driver.own_hint), the window's reading cuts there too, and the memo
    checks, at each region it gives the outcome to, that the value is cut so there too
    (storm._own_hold)."""
    taken = []
    moved = storm._moved
    monkeypatch.setattr(storm, "_moved", lambda items, start: taken.append(start) or moved(items, start))
    raw = unit * (8192 // len(unit))
    for tools in (None, ["f"]):
        taken.clear()
        a, b = _both(raw, tools)
        assert a == b
        assert len(taken) > raw.count("<|tool_call_start|>") * 0.8


@pytest.mark.parametrize("tail", ["')]", "'", '"', "\n```\n", ")", "\n\n", "<|tool_call_start|>[g()]<|tool_call_end|>", "x')]\nok"])
def test_a_storm_of_strings_cut_at_their_own_start_marker_whose_end_tells_otherwise_reads_the_same_with_the_memo(tail):
    """The text after the window tells whether each string stays open to the end of the
    reply (a quote there may close it, a fence end it): each region the memo gives the
    outcome to is checked for that (storm._own_hold): the same reading with and without."""
    for unit in _OWN_CUT[:2]:
        raw = unit * 40 + tail
        a, b = _both(raw)
        assert a == b, (unit, tail)


@pytest.mark.parametrize("alt", ["word " * 12 + "wor) " + "word " * 4, "word " * 16 + "wo\n\n", "word " * 12 + "<|tool_call_end|>", "word " * 12 + "wor' " + "word " * 4])
def test_a_storm_of_long_strings_cut_at_their_own_start_marker_checks_the_call_after_the_window(alt):
    """The call read at a cut's marker (Scanner._own_reads_at) runs to the format's next
    start marker, past the key's window where the values are long: the memo gives the
    outcome only where that text is the certification's (_own_hold), else the region is
    read the usual way. One value unlike the others in a storm of them (its text past
    the window of the region two before it): the same reading with and without."""
    unit = "<|tool_call_start|>[f(a='" + "word " * 17
    raw = unit * 30 + "<|tool_call_start|>[f(a='" + alt + unit * 30
    for tools in (None, ["f"]):
        a, b = _both(raw, tools)
        assert a == b, (alt, tools)


def test_storms_of_lines_a_broken_reply_opening_list_opens_again_read_the_same_with_the_memo():
    # (storm.restart: the regions a line restart begins after a broken reply-opening list
    # of Python calls, Scanner.relist; lines broken, whole, cut by another format's call,
    # with end markers and prose among them, with tools and without.)
    rng = random.Random(19)
    broken = ["[f(a=<tool_call>)]", '[g(a=<tool_call>{"name": "t", "arguments": {}}</tool_call>)]<|tool_call_end|>',
              "[f(a=1, a=2)]", "[f(a=<|python_tag|>)]", "[f(a=<function=x>)]", "[f(a=<|tool_call_start|>)]"]
    others = ["[h()]", "[f(a=1)]", 'g(city="x")', "ok then", "<|tool_call_end|>", "<|eot_id|>",
              '<tool_call>{"name":"k","arguments":{}}</tool_call>', "[f(a='x)]"]
    for _ in range(40):
        lines = [rng.choice(broken) + rng.choice(["\n", "\r\n", "\n\n"])] * rng.randint(40, 120)
        for _ in range(rng.randint(0, 4)):  # (a few other lines among them)
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(broken + others) + rng.choice(["\n", " \n", " ok\n", ""]))
        raw = "".join(lines)
        tools = ["f", "g", "h", "k"] if rng.random() < 0.4 else None
        a, b = _both(raw, tools)
        assert a == b, raw[:120]


def test_storms_of_relisted_lines_whose_reading_leaves_stray_and_end_watches_read_the_same_with_the_memo():
    # (storm.restart remembers the watch for stray closers after the calls a line's list
    # kept, and the end watch, which its cut call left (`[f(a=1), g(b=<tool_call>)]` a
    # line): lines of closers and end markers among them, which those watches read.)
    rng = random.Random(234)
    broken = ["[f(a=1), g(b=<tool_call>)]", "[f(a=1), g(b=<|python_tag|>)]", "[f(a=1), g(b=[TOOL_CALLS])]",
              '[f(a=1), g(b=<tool_call>{"name": "t", "arguments": {}}</tool_call>)]', "[f(a=1), g(b=<tool_call>)]<|tool_call_end|>"]
    others = [")]", "[f(a=1)])]", "  )", "<|tool_call_end|>", "<|python_end|>", "<|eot_id|>", "[h()]", "ok then",
              "[f(a=1)]\n[h(a=<tool_call>)]", '<tool_call>{"name":"k","arguments":{}}</tool_call>']
    for _ in range(30):
        lines = [rng.choice(broken) + rng.choice(["\n", "\r\n", "\n\n", " \n"])] * rng.randint(40, 100)
        for _ in range(rng.randint(0, 5)):
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(broken + others) + rng.choice(["\n", " \n", " ok\n", ""]))
        raw = "".join(lines)
        tools = ["f", "g", "h", "k"] if rng.random() < 0.3 else None
        a, b = _both(raw, tools)
        assert a == b, raw[:120]


def test_a_region_whose_certification_waits_holds_no_other_text_of_its_marker():
    """A stream's certification of a region whose reading has not decided it yet (a Gemma
    string quoting calls) held every later region of the marker for _AHEAD_LONG: the
    calls after it, decided on a few hundred characters, were done 2,000 characters
    later, once keys came again sooner (storm._behind). Only the text that waited so long
    is held so (memo.pending)."""
    path = Path(__file__).parent / "corpus" / "gemma4_call" / "quoted_calls_then_a_call_whose_end_is_past_the_look_streams_as_parsed.txt"
    raw = path.read_text(encoding="utf-8")
    sp = toolgram.StreamParser(None)
    done = []
    for i in range(0, len(raw), 7):
        done += [(min(i + 7, len(raw)), e.call.span[1]) for e in sp.feed(raw[i : i + 7]) if isinstance(e, toolgram.CallDone)]
    # (The calls before the last quoted one, whose end is past instring's look.)
    late = [(at, end) for at, end in done if end < 1_549 and at - end > 900]
    assert len(done) > 20 and not late, late


@pytest.mark.parametrize(
    "unit",
    [
        '<|tool_call_start|>[get_time()]\n[get_weather(city="Paris")]\nDone.\n\n',
        "<|tool_call_start|>[f()]\n[g()]\n",
        "<|tool_call_start|>[f()]\n[g()]\nx\n",
    ],
)
def test_a_storm_of_lfm2_lists_left_open_reads_the_next_lines_list_with_the_memo(unit, monkeypatch):
    """An LFM2 marker's list, its `<|tool_call_end|>` left out, its line ended at the
    list's `]`: the next line opens lists again (Scanner.relist, which salvage sets at the
    region's end), and its `[g()]` is a call, no tools. A remembered outcome left relist
    unset, and parse() read that line as prose from the fourth region on (25 calls of 26
    in `<|tool_call_start|>[f()]\\n[g()]\\n` * 13; fs52's find). The memo sets relist as
    the region's reading set it (storm._relist), and still takes the storm's outcomes."""
    raw = unit * (2048 // len(unit))
    assert _remembered(raw, monkeypatch) > raw.count("<|tool_call_start|>") * 0.8
    whole = toolgram.parse(raw)
    assert len(whole.calls) == 2 * raw.count("<|tool_call_start|>")
    for n in (1, 2, 3, 7, 64):
        result, _ = _stream(raw, n)
        assert repr(result) + repr(result.segments) == repr(whole) + repr(whole.segments), n
