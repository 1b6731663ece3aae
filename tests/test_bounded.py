"""Bounded: no reply can hang toolgram, and the never-raise guard swallows only
toolgram's own bugs (issue "Bounded").

The inputs that used to hang run in a child process with a deadline, so that a
regression fails this test instead of hanging the suite."""

from __future__ import annotations

import functools
import json
import signal
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any, NamedTuple

import pytest

import toolgram
from conftest import result_key, streamed
from toolgram._grammar.registry import default_registry
from toolgram._scan import scanner as _scan

# Each of these sent the Gemma-style argument reader into an endless loop (an array
# left open inside an object: `[` then `}`), its memory growing until the process died.
HUNG = [
    "call:f{a:[}",
    "<|tool_call>call:f{a:[}<tool_call|>",
    "call:f{a:[1}",
    "<|tool_call>call:f{a:[[[[[[}<tool_call|>",
    "<start_function_call>call:f{a:[<escape>x<escape>}<end_function_call>",
]

_CHILD = """
import json, sys, toolgram
out = []
for raw in json.load(sys.stdin):
    r = toolgram.parse(raw)
    sp = toolgram.StreamParser()
    for ch in raw:
        sp.feed(ch)
    s = sp.close()
    out.append([[c.name, c.arguments, list(c.repairs)] for c in r.calls] + [s == r])
print(json.dumps(out))
"""


def test_replies_that_hung_return() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], input=json.dumps(HUNG), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    for raw, got in zip(HUNG, results):
        *calls, same = got
        assert same, raw  # the stream, one character a delta, equals the parse
        assert [c[0] for c in calls] == ["f"], raw
        # The array left open is closed where the object closes, and says so.
        assert "closed_json" in calls[0][2], raw
    assert results[0][0][1] == {"a": []}
    assert results[2][0][1] == {"a": [1]}


# -- the guard -------------------------------------------------------------------
class CallerDeadline(Exception):
    """What a caller's signal handler raises to enforce a deadline."""


def _deadline(*_: object) -> None:
    raise CallerDeadline


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer (POSIX)")
@pytest.mark.parametrize("surface", ["parse", "stream", "prose_filter"])
def test_a_callers_timeout_passes_through(surface: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A parse that takes long (made so by a mode that never gives up), stopped by the
    # caller's timer: the caller's exception reaches the caller, not an error result.
    def forever(self: object, out: list, final: bool) -> bool:
        return True

    monkeypatch.setitem(_scan._MODES, "prose", forever)
    old = signal.signal(signal.SIGALRM, _deadline)
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    try:
        with pytest.raises(CallerDeadline):
            if surface == "parse":
                toolgram.parse("Hello <tool_call> there")
            elif surface == "stream":
                sp = toolgram.StreamParser()
                sp.feed("Hello <tool_call> there")
                sp.close()
            else:
                pf = toolgram.ProseFilter()
                pf.push("Hello <tool_call> there")
                pf.flush()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


_COLD = """
import signal, sys, toolgram
from toolgram._scan import scanner as _scan

class CallerDeadline(Exception):
    pass

fired = 0

def deadline(*_):
    global fired
    fired += 1
    raise CallerDeadline

_scan._MODES["prose"] = lambda self, out, final: True  # a parse that never ends
signal.signal(signal.SIGALRM, deadline)
# (Again every 50 ms: one that fires inside a __del__ is lost, by Python, which says so on
# stderr: "Exception ignored in". The test tells that apart from toolgram swallowing it.)
signal.setitimer(signal.ITIMER_REAL, float(sys.argv[1]), 0.05)
try:
    toolgram.parse("Hello <tool_call> there")
except CallerDeadline:
    signal.setitimer(signal.ITIMER_REAL, 0)
    print("deadline", fired)
"""


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer (POSIX)")
def test_a_callers_timeout_passes_through_the_first_compile() -> None:
    # In a fresh process the first parse compiles the grammars it meets; a deadline that
    # fires there (in Lark, in a derived pattern, in a marker table) must reach the caller
    # too, not be taken for a broken grammar (and then the parse runs on forever), nor be
    # swallowed by code toolgram calls (Lark's cache load, entry-point discovery). The
    # deadlines are spread over the first compile.
    for ms in range(2, 200, 16):
        done = subprocess.run([sys.executable, "-c", _COLD, str(ms / 1000)], capture_output=True, text=True, timeout=30)
        out = done.stdout.strip()
        assert out == "deadline 1" or (out.startswith("deadline") and "Exception ignored in" in done.stderr), (
            ms,
            out,
            done.stderr[-2000:],
        )


@pytest.mark.parametrize("exc", [MemoryError, TimeoutError])
def test_memory_and_timeout_errors_pass_through(exc: type, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(self: object, out: list, final: bool) -> bool:
        raise exc

    monkeypatch.setitem(_scan._MODES, "prose", fail)
    with pytest.raises(exc):
        toolgram.parse("Hello there")
    with pytest.raises(exc):
        sp = toolgram.StreamParser()
        sp.feed("Hello <tool")
        sp.feed("_call> there")
        sp.close()


def test_a_bug_of_ours_is_an_error_result(monkeypatch: pytest.MonkeyPatch, bugs_as_results: None) -> None:
    # The mode called with the wrong arguments: a TypeError raised in toolgram's code.
    monkeypatch.setitem(_scan._MODES, "prose", functools.partial(_scan._trie, None))
    result = toolgram.parse("Hello <tool_call> there")
    assert result.calls == []
    assert result.text == "Hello <tool_call> there"
    assert result.errors == ["Couldn't read a tool call: internal error (TypeError)."]


def test_the_suite_sees_a_bug_of_ours_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    # In the tests (conftest sets toolgram._guard.raise_bugs) the same bug raises, in
    # parse() and in the stream, so that no test passes on an internal-error result.
    monkeypatch.setitem(_scan._MODES, "prose", functools.partial(_scan._trie, None))
    with pytest.raises(TypeError):
        toolgram.parse("Hello <tool_call> there")
    sp = toolgram.StreamParser()
    with pytest.raises(TypeError):
        sp.feed("Hello <tool_call> there")
        sp.close()


# -- work grows linearly with the reply ----------------------------------------------
# Work is counted, not timed: the tokens the LALR drivers take and the characters they
# cover, over a reply of one shape repeated to two sizes. Linear work doubles; each of
# these grew with the square of the reply (or worse) before.
REPEATED = [
    # (unit, tools): a BFCL-style call list whose calls cannot be read (positional
    # arguments, no schema), one a line: each line's region ran to the last line.
    ("[get_weather('Lyon')]\n", ["get_weather", "get_time"]),
    # xLAM lists naming no offered tool, one a line: the same.
    ('[{"name": "rm_rf", "arguments": {"path": "/"}}]\n', ["get_weather"]),
    # Functionary's <function= left unclosed: its name ran on through every later tag.
    ("<function=", None),
    ("<function=x", None),
]


class Counted(NamedTuple):
    """_counted's answer."""

    calls: int
    weight: int
    result: Any  # (the ParseResult read)


def _counted(
    raw: str,
    owner: Any,
    name: str,
    weigh: Any = None,
    *,
    tools: Any = None,
    size: int | None = None,
    got: bool = False,
    check: str = "counted",
    options: dict | None = None,
) -> Counted:
    """The skeleton of the counting helpers below: owner.name (a module's function, or a
    class's method, self then first) wrapped with a counter while raw is parsed (size
    None) or streamed in `size`-character deltas, the stream's result checked against
    parse()'s: counted with it (check "counted"), made before the count ("apart"), or
    not at all (None). Returns (calls, weight, the result): weight sums weigh(*args) over
    the calls, asked before each (what it reads may change in it), or with got, weigh(got,
    *args) after (the call's answer first). parse() and the stream get tools and
    max_chars=None, or `options` instead of max_chars."""
    options = {"max_chars": None} if options is None else options
    real = getattr(owner, name)
    count = [0, 0]

    def counting(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        if got:
            answer = real(*args, **kwargs)
            count[1] += weigh(answer, *args)
            return answer
        if weigh is not None:
            count[1] += weigh(*args)
        return real(*args, **kwargs)

    expected = toolgram.parse(raw, tools, **options) if size is not None and check == "apart" else None
    with pytest.MonkeyPatch.context() as m:
        m.setattr(owner, name, counting)
        if size is None:
            result = toolgram.parse(raw, tools, **options)
        else:
            sp = toolgram.StreamParser(tools, **options)
            for i in range(0, len(raw), size):
                sp.feed(raw[i : i + size])
            result = sp.close()
            if check == "counted":
                expected = toolgram.parse(raw, tools, **options)
    if check is not None and size is not None:
        assert result == expected
    return Counted(count[0], count[1], result)


def _work(raw: str, tools: list | None) -> int:
    from toolgram._lalr import driver as _driver

    # (The wrapped _feed's answer passes through: pyframe's check of its shortcut reads it.)
    return _counted(raw, _driver.Driver, "_feed", lambda self, tok: 1 + len(tok.value), tools=tools).weight


@pytest.mark.parametrize("unit,tools", REPEATED, ids=[repr(u[:24]) for u, _ in REPEATED])
def test_work_grows_linearly(unit: str, tools: list | None, monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = (_work(unit * (size // len(unit)), tools) for size in (4_000, 16_000))
    assert small > 0  # (the shape reaches the drivers at all)
    assert large <= 4.5 * small, (small, large)


def _calls(fn: object) -> int:
    """The calls fn() makes, of Python functions and of builtins (a regex search, a
    str.find): work counted wherever it is done."""
    count = [0]

    def profile(frame: object, event: str, arg: object) -> None:
        if event == "call" or event == "c_call":
            count[0] += 1

    sys.setprofile(profile)
    try:
        fn()  # type: ignore[operator]
    finally:
        sys.setprofile(None)
    return count[0]


# Replies whose cost grew with their square in calls the drivers' tokens do not show.
CALLS = [
    # A Python argument value that never ends (its quote closed by the next call's): each
    # value's scan for its end ran on to the end of the reply, once per call.
    ('<|python_tag|>brave_search.call(query="weather in Men\n', ["brave_search"]),
    # A bare pythonic list's single-quoted value left open before another format's call
    # (R15): each value walked every marker to the end of the reply for one of its own
    # format's, and a bare list has none to stop at (QA22 D3: 16 KB 1 -> 156 ms).
    ("[f(a='x\n<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>\n", ["f"]),
    # Issue 17: a Python call list whose call's `)` was left out before the list's `]`,
    # prose after it, one a line: each is read to the end of the reply (its value ends
    # only at a `,` or `)`), then again up to its `]` (salvage.list_closed), one region
    # a line. Calls 4 -> 16 KB: 3.8x (the characters its tokens take: see below).
    ('[f(a="x"] ok\n', ["f"]),
]


@pytest.mark.parametrize("unit", ['[f(a="x"] ok\n', "[f(a=x] ok\n"])
def test_lists_closed_before_their_call_take_linear_work(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The storm of CALLS' issue 17 list (`[f(a="x"] ok`, one a line): each region's
    # first reading lexed its value on to the end of the reply (a token of the rest of
    # it), before salvage.list_closed read the region again up to the list's `]`: the
    # characters the drivers took grew with the square of the reply (4 -> 16 KB:
    # 622,002 -> 9,871,385). The driver now reads on as a reply that ends at that `]`
    # where the value ran on over it (Driver.listed): each list is read up to its `]`.
    # A bare word there (`a=x]`: no whole call, an error up to the `]`) so too: the
    # salvage tells it from that reading, not from one of the value to the end.
    small, large = (_work(unit * (size // len(unit)), ["f"]) for size in (4_000, 16_000))
    assert small > 0
    assert large <= 4.5 * small, (small, large)


def _copied_for_lists(raw: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """The text copied to read each list closed before its call's `)` up to its `]`
    (Driver.run's LISTED reading) over a parse without tools, in characters: a text its
    _run is given that is not the one run() was given, and the text cut at the list's
    `]` by a step of that reading that reads no bound (Driver._unbound)."""
    from toolgram._lalr import driver as _driver

    count = [0]
    given: list = []
    run, inner, unbound = _driver.Driver.run, _driver.Driver._run, _driver.Driver._unbound

    def running(self: Any, buf: str, final: bool, at_marker: Any) -> Any:
        given.append(buf)
        try:
            return run(self, buf, final, at_marker)
        finally:
            given.pop()

    def inner_run(self: Any, buf: str, final: bool, at_marker: Any) -> Any:
        if given and buf is not given[-1]:
            count[0] += len(buf)
        return inner(self, buf, final, at_marker)

    def unbinding(self: Any, buf: str) -> str:
        cut = unbound(self, buf)
        count[0] += len(cut)
        return cut

    with monkeypatch.context() as m:
        m.setattr(_driver.Driver, "run", running)
        m.setattr(_driver.Driver, "_run", inner_run)
        m.setattr(_driver.Driver, "_unbound", unbinding)
        got = toolgram.parse(raw, None, max_chars=None)
    assert len(got.calls) == raw.count("(")  # (each list is read: f, then g)
    return count[0]


@pytest.mark.parametrize("unit", ['[f(a="x"] [g(b=1)]\n', "[f(a='x'] [g(b=2)]\n", "[f(a=1] [g(b=2)]\n", "[f(a=[1,2] ] [g(b=2)]\n"])
def test_lists_closed_before_their_call_copy_no_text_each(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 17 without tools (max_chars=None): each list whose value ran on over its `]`
    # was read up to that `]` in a copy of the text up to there, one a list: the square of
    # the reply (4 -> 16 KB: 0.4 M -> 7 M characters; 7.2 GB copied at 512 KB, 17% of the
    # time). That reading now reads the whole text bounded at the `]` (Driver.stop).
    small, large = (_copied_for_lists(unit * (size // len(unit)), monkeypatch) for size in (4_000, 16_000))
    assert large <= 4.5 * small + 16_000, (small, large)


def _values_lexed(raw: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """How many times the drivers lexed a Python argument value (a lexing where PYVALUE
    is the only terminal the state takes), and at how many places."""
    from toolgram._lalr import driver as _driver

    places: list[int] = []
    lex = _driver.Driver._lex

    def counting(self: object, buf: str, final: bool, allowed: list) -> object:
        if [t.name for t in allowed] == ["PYVALUE"]:
            places.append(self.pos)  # type: ignore[attr-defined]
        return lex(self, buf, final, allowed)

    with monkeypatch.context() as m:
        m.setattr(_driver.Driver, "_lex", counting)
        toolgram.parse(raw, max_chars=None)
    return len(places), len(set(places))


@pytest.mark.parametrize(
    "unit",
    [
        '[f(a="x"]]\n',
        '[f(a="x"] [g(b=1)]\n',
        "[f(a=1]\n",
        "[f(a='x', b=[1, 2]]\n",
        # (A marker in the value's string: the text up to the `]` was read again, bounded
        # there, and the value lexed a third time in a copy of it, where _close.cut's reading,
        # which no bound holds, stopped that reading at the marker: two readings a list.)
        '[f(a="x [TOOL_CALLS]"]\n[f(a="y <tool_call>"]\n',
    ],
)
def test_a_list_closed_before_its_call_reads_its_value_once(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 17, no tools: each list's call `)` left out, its value running on over the
    # list's `]` (Driver.listed). The driver lexed that value in the whole text, then
    # again in the text up to that `]` (run: LISTED), for the same token: a second
    # reading of each broken list, 4x a well-formed one's cost. Read once now where the
    # text up to that `]` reads it the same (Driver._listed_whole).
    raw = unit * (4_000 // len(unit))
    lexed, places = _values_lexed(raw, monkeypatch)
    assert places >= raw.count("\n")  # (each list's broken value is the driver's)
    assert lexed == places, (lexed, places)


def test_a_marker_in_a_lists_value_is_read_by_its_frame_once_a_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 17: a marker in a Python value's string (a list closed before its call's `)`)
    # was read by its format's frame for each question of the value's cut and of the list
    # closed after it (_close._call_in_open_string, _quoted_call_span,
    # Driver._call_before_close): three reads of the same text at the same place, where
    # no call reads. Once now (Scanner.call_reads_at keeps where none does, per text).
    from toolgram._scan import fastpath as _fastpath

    unit = '[f(a="x [TOOL_CALLS]"]\n[f(a="y <tool_call>"]\n'
    raw = unit * (4_000 // len(unit))
    toolgram.parse(raw[:200], None)  # (the grammars and frames are built outside the count)
    texts: list = []  # (each text read, kept: its id is no other's while the count runs)
    reads: dict = {}

    def counting(read: Any) -> Any:
        def counted(self: object, buf: str, pos: int, final: bool, tools: object, wait: object = None) -> object:
            if not any(t is buf for t in texts):
                texts.append(buf)
            key = (id(buf), pos, final)
            reads[key] = reads.get(key, 0) + 1
            return read(self, buf, pos, final, tools, wait)

        return counted

    with monkeypatch.context() as m:
        m.setattr(_fastpath.Frame, "read", counting(_fastpath.Frame.read))
        m.setattr(_fastpath.JsonFrame, "read", counting(_fastpath.JsonFrame.read))
        got = toolgram.parse(raw, None, max_chars=None)
    assert len(got.calls) == raw.count("(")
    # (Each list's marker is read in the whole text, or in the text cut at its `]`, but
    # the last list's, the reply ending at its `]`; in the text cut at the `]`, a value
    # written the same as one before is not asked again: Driver._uncut_listed.)
    assert len(reads) >= raw.count("\n") // 2 - 1
    assert max(reads.values()) == 1, sorted(reads.values())[-3:]



def test_a_value_read_uncut_up_to_its_lists_bracket_is_not_cut_again_each_list(monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 17: each list closed before its call's `)` whose value holds a marker in its
    # string was asked, in the text up to its `]`, whether close.cut cuts it there
    # (Driver._uncut_listed): a fifth of the reading of a storm of such lists, each asked
    # anew of the same value text. That answer is told by the value's text alone: asked
    # once a text now.
    from toolgram._lalr import close as _close

    unit = '[f(a="x [TOOL_CALLS]"]\n[f(a="y <tool_call>"]\n'
    raw = unit * (4_000 // len(unit))
    asked: list = []
    cut = _close.cut

    def counting(d: Any, buf: str, pos: int, stop: int, final: bool, open_to: bool = False) -> Any:
        if len(buf) < len(raw):
            asked.append(buf[pos:stop])
        return cut(d, buf, pos, stop, final, open_to)

    with monkeypatch.context() as m:
        m.setattr(_close, "cut", counting)
        got = toolgram.parse(raw, None, max_chars=None)
    assert len(got.calls) == raw.count("(")
    assert sorted(asked) == sorted(set(asked)) and len(asked) <= 2, len(asked)



@pytest.mark.parametrize("unit", ['[f(a="""x"""]\n', '[f(a="x [TOOL_CALLS]"]\n[f(a="y <tool_call>"]\n', '[get_weather(city="Paris"]\n'])
def test_lists_the_driver_reads_on_its_own_take_their_first_tokens_unlexed(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 17: after lists in a row pyframe handed over, none plain, the driver reads the
    # next ones on its own (Driver.py_back), and lexed each one's `[f(a=` token by token,
    # a third of its reading of a list closed before its call's `)`. Those tokens are
    # taken now as pyframe's look hands them over (pyframe.take_head, Driver.take_read).
    from toolgram._lalr import driver as _driver

    raw = unit * (4_000 // len(unit))
    lists = raw.count("[f(") + raw.count("[get_weather(")
    heads = [0]
    lex = _driver.Driver._lex

    def counting(self: Any, buf: str, final: bool, allowed: list) -> Any:
        got = lex(self, buf, final, allowed)
        if type(got) is tuple and got[0] in ("LSQB", "NAME", "LPAR", "KEY", "EQUAL"):
            heads[0] += 1
        return got

    with monkeypatch.context() as m:
        m.setattr(_driver.Driver, "_lex", counting)
        got = toolgram.parse(raw, None, max_chars=None)
    assert len(got.calls) == lists
    assert heads[0] <= lists, (heads[0], lists)  # (5 a list before)


@pytest.mark.parametrize("unit,tools", CALLS, ids=[repr(u[:24]) for u, _ in CALLS])
def test_calls_grow_linearly(unit: str, tools: list | None) -> None:
    toolgram.parse(unit, tools)  # (the grammars are built outside the count)
    small, large = (
        _calls(lambda raw=unit * (size // len(unit)): toolgram.parse(raw, tools, max_chars=None))
        for size in (4_000, 16_000)
    )
    assert large <= 4.5 * small, (small, large)


# Markers right after an opening quote, many on one line, none with its end on the line
# (QA22b R1): whether each is a quotation (quotation.py) walked its call's brackets to
# the line's end, once per marker (32 KB: 2.4 s). Each group is walked once a line.
QUOTED = [
    ('"<|tool_call_start|>[f(a="x ', None),
    ('"<tool_call>{"name": "f", "arguments": {"a": "xxxxxxxx ', None),
    (' "[TOOL_CALLS]f[ARGS]{"a": [', ["f"]),
    # (No `{` or `(`: each walk went over every later marker's `[TOOL_CALLS]` group.)
    (' "[TOOL_CALLS]f ', ["f"]),
    # (Issue 17: a string each marker's quote opens in the call before it, instring's
    # walk of its nested groups read REACH characters at each marker: 460 ms at 32 KB.)
    ('"<|tool_call_start|>[f(a=1, ', None),
]


def _streamed16(raw: str, tools: list | None) -> None:
    sp = toolgram.StreamParser(tools=tools, max_chars=None)
    for i in range(0, len(raw), 16):
        sp.feed(raw[i : i + 16])
    sp.close()


def _lines(fn: object, files: tuple = ("",)) -> int:
    """The lines of Python fn() runs in the modules whose file names end with one of
    `files` (all of them by default): work counted in a loop that calls nothing (a
    bracket walk's characters, a comprehension's loop, a set's test) as well."""
    count = [0]

    def local(frame: Any, event: str, arg: object) -> Any:
        if event == "line":
            count[0] += 1
        return local

    def start(frame: Any, event: str, arg: object) -> Any:
        return local if frame.f_code.co_filename.endswith(files) else None

    sys.settrace(start)
    try:
        fn()  # type: ignore[operator]
    finally:
        sys.settrace(None)
    return count[0]


@pytest.mark.parametrize("stream", [False, True], ids=["parse", "stream"])
@pytest.mark.parametrize("unit,tools", QUOTED, ids=[repr(u[:24]) for u, _ in QUOTED])
def test_quoted_markers_on_one_line_are_walked_once(unit: str, tools: list | None, stream: bool) -> None:
    toolgram.parse(unit, tools)  # (the grammars are built outside the count)
    run = _streamed16 if stream else (lambda raw, tools: toolgram.parse(raw, tools, max_chars=None))
    small, large = (_lines(lambda raw=unit * (size // len(unit)): run(raw, tools)) for size in (1_000, 4_000))
    assert large <= 4.5 * small, (small, large)


# Issue 17: each `<function=` inside a string of the call before it (instring), whose
# walk from its call's `{` meets none of the other walks' groups: each `{` after it sits
# inside a string of that walk (the strings pair up otherwise from each call's `{`). Each
# walk read REACH characters: parse 250 ms, an 8-character stream 200 ms at 32 KB.
STRING_STORM = ('<function=get_weather>{"city": "Par<|eot_id|> ', ["functionary_v31"])


@pytest.mark.parametrize("stream", [False, True], ids=["parse", "stream"])
def test_markers_each_in_a_string_of_the_call_before_read_its_tokens_once(stream: bool) -> None:
    unit, formats = STRING_STORM

    def run(raw: str) -> None:
        if stream:
            sp = toolgram.StreamParser(formats=formats, max_chars=None)
            for i in range(0, len(raw), 16):
                sp.feed(raw[i : i + 16])
            sp.close()
        else:
            toolgram.parse(raw, formats=formats, max_chars=None)

    run(unit * (2_000 // len(unit)))  # (the grammars and what the first reply builds, outside the count)
    small, large = (_lines(lambda raw=unit * (size // len(unit)): run(raw)) for size in (2_000, 16_000))
    assert large <= 9 * small, (small, large)


def _unbounded(t: object) -> bool:
    from re import _parser as _sre  # (the `re` module's pattern parser)

    try:
        return _sre.parse(t.pattern.pattern).getwidth()[1] > 1_000  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a pattern only the `regex` module reads
        return True


def _stream_work(raw: str) -> int:
    """The text the drivers' regex terminals may scan over a stream of one character a
    delta: from each lexing's position to the end of the text it is given, where a
    pattern that can match without bound is tried (not a literal, nor a bounded
    pattern, nor JSON or PYVALUE, which resume their scans)."""
    from toolgram._lalr import driver as _driver

    def weigh(self: Any, buf: str, final: bool, allowed: list) -> int:
        if any(t.literal is None and t.name not in ("JSON", "PYVALUE") and _unbounded(t) for t in allowed):
            return 1 + len(buf) - self.pos
        return 0

    return _counted(raw, _driver.Driver, "_lex", weigh, size=1).weight


@pytest.mark.parametrize("unit", ["Action:", "functools", "call:f{a:[}"])
def test_a_long_growing_token_is_not_lexed_again_per_delta(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A reply that opens with a name that never ends (reply-anchored formats wait on it):
    # lexed again on every delta, a stream cost the square of the reply.
    small, large = (_stream_work(unit * (size // len(unit))) for size in (2_000, 8_000))
    assert small > 0
    assert large <= 4.5 * small, (small, large)


def test_a_gemma_string_open_past_a_marker_is_not_lexed_again_per_delta(monkeypatch: pytest.MonkeyPatch) -> None:
    # A delimited string with call markers in it (`{a:<|"|>x <tool_call|> …`) waits, in a
    # stream, for the delimiter that closes it: each delta that cannot bring it is put
    # aside, not lexed again from the token's start (nor searched from the marker on).
    def reply(size: int) -> str:
        return '<|tool_call>call:f{a:<|"|>' + "x <tool_call|> " * (size // 15) + '<|"|>}<tool_call|>'

    small, large = (_stream_work(reply(size)) for size in (2_000, 8_000))
    assert small > 0
    assert large <= 4.5 * small, (small, large)



def _held_read(raw: str) -> int:
    """The text take_plain reads (what is held back, then the delta) over a stream of one
    character a delta, where it may take the delta (a kind of plain text set)."""

    def weigh(self: Any, text: str) -> int:
        return len(self.held) + len(text) if self.plain is not None else 0

    return _counted(raw, _scan.Scanner, "take_plain", weigh, size=1).weight


def test_a_marker_held_in_a_string_open_before_it_is_not_read_again_per_delta(monkeypatch: pytest.MonkeyPatch) -> None:
    # A call marker inside a Gemma string opened in the prose before it, after a MiniMax
    # call whose line goes on (its stray closers watched for): held from the marker on
    # until the string closes or its reach ends. take_plain found the marker in every
    # delta joined to the held text and gave way, after plain_hold walked each `<` of it:
    # the square of the text held (fuzz seed 7 #107105106: 1-char stream 330 ms, budget 215).
    head = (
        '<minimax:tool_call>\n<invoke name="a">\n<parameter name="x">1</parameter>\n</invoke>\n</minimax:tool_call>'
        ' Gemma quotes with <|"|> as in call:f{a:<|"|>\n<minimax:tool_call>\n<invoke name="b">\n<parameter name="c">'
    )

    def reply(size: int) -> str:
        return head + "<b>x</b> " * ((size - len(head)) // 9)

    small, large = (_held_read(reply(size)) for size in (1_000, 4_000))
    assert small > 0
    assert large <= 4.5 * small, (small, large)


def test_a_value_of_tags_left_open_is_not_read_again_at_each_character_after_a_lt(monkeypatch: pytest.MonkeyPatch) -> None:
    # A MiniMax value of tags whose parameter never closes: after each `<`, the VALUE
    # token's wait refused every delta within `width` (278) characters of it, though `<b`
    # or `</b` already tells its look no closer: the driver read the text again at 3
    # deltas in 4 (a 16 KB value streamed by 1 character in 315 ms, budget 172: issue 17).
    # Now a delta that settles the look is absorbed: the driver reads at a `<` and at a
    # `</`'s `/` (its look still open), 3 deltas in 9.
    raw = '<minimax:tool_call>\n<invoke name="b">\n<parameter name="c">' + "<b>x</b> " * 400
    runs = _driver_calls_streaming_by_character(raw, "_run")
    assert 0 < runs <= 0.45 * len(raw), (runs, len(raw))


def _cut_over(raw: str, tools: list | None) -> int:
    """The text the cuts of broken values (_lalr.close.cut) look over, from each value's
    start to where it stops, over a stream of one character a delta."""
    from toolgram._lalr import close as _close

    return _counted(raw, _close, "cut", lambda d, buf, pos, stop, final: 1 + stop - pos, tools=tools, size=1).weight


# A value whose quotes a stray one shifted, so that its reading closes in the next call.
STRAY = [
    # `city="Par"is", …`: Python's reading closes at a `,` in the next call (27 cuts a
    # call, 30 characters looked over for each one of the reply).
    ('[get_weather(city="Par"is", unit="celsius")]\n', ["get_weather"]),
    # `{"a": "x"y}}`: JSON's brackets close in the next call's payload (18 cuts a call).
    ('<tool_call>{"name": "f", "arguments": {"a": "x"y}}</tool_call>\n', None),
]


@pytest.mark.parametrize("unit,tools", STRAY, ids=["python", "json"])
def test_a_value_closed_past_a_stray_quote_is_not_cut_again_per_delta(
    unit: str, tools: list | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whether a marker breaks such a value before that end is known once the text runs a
    # marker's length past it. Each delta until then cut the value again from its start:
    # now it is looked at again once, then.
    raw = unit * (4_000 // len(unit))
    assert 0 < _cut_over(raw, tools) <= 6 * len(raw)



@pytest.mark.parametrize("prose", ["Some prose. ", "Some prose with <b>tags</b>. "], ids=["plain", "tags"])
def test_a_value_waiting_on_the_call_its_string_quotes_is_not_cut_again_per_delta(
    prose: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `b='"]<tool_call>'s'`: Python's string closes inside the Hermes call it quotes,
    # whose payload never closes, so the cut waits on that call (_close._quoted_call_span)
    # to the end of the reply. Each delta cut the value again from its start (and read
    # the call's payload to the end of the text): one cut a character of the prose after
    # it (fuzz fzX_91002190, a 1-character stream three times its budget, issue 17). Now
    # it waits with the call's frame's wait, read on from there.
    head = "<|tool_call_start|>f(b='\"]<tool_call>'s')"
    small, large = (_cut_over(head + prose * (size // len(prose)), None) for size in (2_000, 8_000))
    assert 0 < large <= small <= 10 * len(head)


def _resumed_over(raw: str, tools: list | None) -> tuple[int, int]:
    """The reads of a fast frame's payload that a stream resumes (fastpath.Frame._resumed)
    over a stream of one character a delta: how many, and the characters they read again,
    from where each resumed to the end of the text."""
    from toolgram._scan import fastpath as _fastpath

    def weigh(self: Any, buf: str, pos: int, tools: Any, wait: Any) -> int:
        return len(buf) - (wait.resume[0] if wait.resume is not None else wait.token)

    counted = _counted(raw, _fastpath.Frame, "_resumed", weigh, tools=tools, size=1)
    return counted.calls, counted.weight


# A Hermes call quoted in a Python value, its payload never closed, then prose with `<`
# in it: the frame's wait is read on (see the test above) from where its match may resume.
QUOTED_CALL_HEADS = [
    "<|tool_call_start|>f(b='\"]<tool_call>'s')",  # LFM2's wrapper
    "[f(b='\"]<tool_call>'s')",  # a bare list
]


@pytest.mark.parametrize("head", QUOTED_CALL_HEADS, ids=["lfm2", "list"])
@pytest.mark.parametrize("tools", [None, ["f", "g"]], ids=["no_tools", "tools"])
def test_a_quoted_calls_payload_is_read_on_from_where_it_stopped(head: str, tools: list | None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Where no `<` lay far enough from the end past the place a read resumed from, the
    # read gave no place to resume from, and the next went back to the payload's start:
    # every other delta read the whole prose again (`<b>` every 29 characters; 16 KB
    # streamed a character a delta in 567 ms against a 176 ms budget, issue 17). The
    # place kept, each read goes over the last few dozen characters only.
    prose = "Some prose with <b>tags</b>. "
    raw = head + prose * (8_000 // len(prose))
    reads, chars = _resumed_over(raw, tools)
    assert reads > 0
    assert chars <= 60 * len(raw), (reads, chars)


@pytest.mark.parametrize("head", QUOTED_CALL_HEADS, ids=["lfm2", "list"])
def test_a_quoted_calls_payload_waits_out_the_deltas_its_looks_have_settled(head: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The payload's wait let pass only deltas a `<` was not within the loop's width
    # (12) of, its look (`<(?!/?tool_call>|…)`) not known settled: with `<b>` and `</b>`
    # every 29 characters, two deltas in three were read (_resumed) again. Now the wait
    # follows how far each `<`'s look reads (growth._looks_settled, as a driver's token's
    # wait does), and that look reads `/?` as the choice it is (regex_loops._seq_reads):
    # a `</b>` is settled at its `b`. Those left: the `<` and the few after each.
    prose = "Some prose with <b>tags</b>. "
    raw = head + prose * (8_000 // len(prose))
    reads, _ = _resumed_over(raw, None)
    assert 0 < reads <= 0.3 * len(raw), (reads, len(raw))


def _held_readings(raw: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """How many readings of a broken frame with the words after its name blanked
    (mention._held_name: the drivers it makes) parse() makes, and how many a stream of
    one character a delta makes."""
    from toolgram._lalr import driver as _driver
    from toolgram._scan import mention as _mention

    made = [0]

    class Counted(_driver.Driver):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            made[0] += 1
            super().__init__(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(_mention, "Driver", Counted)
        whole = toolgram.parse(raw, None, max_chars=None)
        parsed, made[0] = made[0], 0
        sp = toolgram.StreamParser(None, max_chars=None)
        for ch in raw:
            sp.feed(ch)
        assert sp.close() == whole
    return parsed, made[0]


HELD_HEADS = [
    # fuzz seed 7 #91024132's (a mutated minimax_m2_invoke case): a name with a space,
    # then a parameter whose close was cut short, and the call never closed.
    '<minimax:tool_call>\n<invoke name="wrhe ex_file">\n<parameter name="path">notes.txt</parameter>\n<parameter name="content">Day one.</param\n',
    '<minimax:tool_call>\n<invoke name="get weather">\n<parameter name="city">',
]


@pytest.mark.parametrize("head", HELD_HEADS, ids=["fuzz", "open_parameter"])
@pytest.mark.parametrize("unit", ["Some prose with <b>tags</b>. ", 'x</parameter>\n<parameter name="q">y'], ids=["tags", "parameters"])
def test_a_name_with_a_space_in_a_call_left_open_is_read_on_not_again_per_delta(
    head: str, unit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whether the model meant a call with a name the format cannot hold is told by
    # reading the frame again with the words after its name blanked: in a stream whose
    # call does not close, that reading waited, and was made afresh from the region's
    # start at each delta the scanner did not put aside (one a `<` near the end: each
    # one, with tags in the value). The fuzz input, 16 KB: 1,669 readings of about 1,200
    # characters, a character a delta 739 ms against a 289 ms budget. Now it is kept and
    # read on as the text grows (RegionReader.held_read, 46383544): as many readings as
    # parse() makes.
    raw = head + unit * (4_000 // len(unit))
    parsed, streamed = _held_readings(raw, monkeypatch)
    assert 0 < parsed and streamed <= parsed, (parsed, streamed)


@pytest.mark.parametrize("head", HELD_HEADS, ids=["fuzz", "open_parameter"])
def test_a_name_with_a_space_in_a_call_left_open_waits_on_its_reading(head: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # While that reading waits (settle_failure says WAIT whatever markers come), the
    # scanner waited on the broken frame's end markers and call markers: with a `<` in
    # every few characters of the value, no delta was put aside, and each ran the region
    # again (its drivers, salvage, settle_failure) to be told WAIT. Now the scanner waits
    # with that reading's own wait (mention.held_wait): the `<` and the few after it.
    from toolgram._scan import mention as _mention

    unit = "Some prose with <b>tags</b>. "
    raw = head + unit * (4_000 // len(unit))
    asked = [0]
    held = _mention._held_name

    def counting(*args: Any) -> Any:
        asked[0] += 1
        return held(*args)

    with monkeypatch.context() as m:
        m.setattr(_mention, "_held_name", counting)
        sp = toolgram.StreamParser(None, max_chars=None)
        for ch in raw:
            sp.feed(ch)
        assert sp.close() == toolgram.parse(raw, None, max_chars=None)
    assert 0 < asked[0] <= 0.4 * len(raw), (asked[0], len(raw))


def _read_for_a_cut(raw: str, tools: list | None, size: int) -> int:
    """The text the lenient pass reads to tell where a value breaks (_recover.repair.
    failure, which breaks_at and the Spans that _lalr.close.cut asks read with), over a
    stream of `size`-character deltas."""
    from toolgram._recover import repair as _repair

    return _counted(raw, _repair, "failure", lambda text: 1 + len(text), tools=tools, size=size).weight


@pytest.mark.parametrize("size", [1, 8])
def test_a_value_still_open_with_no_marker_in_it_is_not_read_for_a_cut(size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # A JSON payload streamed in (`<|im_start|>` and a call, repeated): each time its wait
    # looked again (the text grown by a quarter), the value so far was read by the
    # lenient pass from its start to tell where it breaks, though with no marker in it
    # there is nowhere to cut it (about a third of the stream's time).
    unit = '<|im_start|>\n{"arguments": {"city": "Lyon"}, "name": "get_weather"}\n'
    raw = unit * (2_000 // len(unit))
    assert _read_for_a_cut(raw, ["get_weather", "get_time"], size) == 0


def _buffered(raw: str) -> tuple[int, int]:
    """The text a stream of 8-character deltas holds in its scanner's buffer, summed over
    the deltas (what joining each delta to it copies), and the most it held."""
    sp = toolgram.StreamParser(max_chars=None)
    held = most = 0
    for i in range(0, len(raw), 8):
        sp.feed(raw[i : i + 8])
        held += len(sp._scanner.buf)
        most = max(most, len(sp._scanner.buf))
    assert sp.close() == toolgram.parse(raw, max_chars=None)
    return held, most


@pytest.mark.parametrize("unit", ["<|tool_calls_section_begin|>", "<tool_call>{", "<function=x", "```json{"])
def test_a_stream_of_regions_drops_what_it_has_read(unit: str) -> None:
    # Each delta ended inside a region (a run of markers, each one a region that is read
    # and ends): the text before the region was dropped only between deltas in prose,
    # never, so the buffer held the whole reply and each delta joined to it copied it.
    # A stream keeps the prose that a marker's string check reads back over (instring.LOOK
    # and the character before it, since the prose began: Scanner._trim), at most about
    # twice that between two drops: sizes past that, and the most held the same at both.
    from toolgram._scan import instring as _instring

    (small, most_small), (large, most_large) = (_buffered(unit * (size // len(unit))) for size in (16_000, 64_000))
    assert large <= 4.5 * small, (small, large)
    assert most_large == most_small <= 3 * _instring.LOOK, (most_small, most_large)


@pytest.mark.parametrize("blank", ["\n", " "], ids=["newline", "space"])
def test_regions_each_cut_by_another_formats_call_are_read_through_the_storm_memo(
    blank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `[f(a="x` left open before a Hermes call, the next list on the line after, again and
    # again (QA26 S2): each list's value ends at that call's marker, which the fast frame
    # reads; that call ended the run of `[` regions, so none was held for the storm memo,
    # and each was read again at every delta until its next line told where its value
    # ends (9 reads a region; 8-character deltas of 32 KB, 193 ms against parse's 29).
    from toolgram._scan import region as _region

    unit = '[f(a="x' + blank + '<tool_call>{"name": "g", "arguments": {"c": "z"}}</tool_call>\n'
    raw = unit * (16_000 // len(unit))
    tools = ["f", "g", "h"]
    reads = [0]
    read = _region.RegionReader._read

    def counting(self: Any, drv: Any, final: bool) -> Any:
        reads[0] += 1
        return read(self, drv, final)

    with monkeypatch.context() as m:
        m.setattr(_region.RegionReader, "_read", counting)
        sp = toolgram.StreamParser(tools, max_chars=None)
        for i in range(0, len(raw), 8):
            sp.feed(raw[i : i + 8])
        got = sp.close()
    assert got == toolgram.parse(raw, tools, max_chars=None)
    assert len(got.calls) == 2 * (len(raw) // len(unit))
    assert reads[0] <= len(raw) // len(unit) // 4, reads[0]


@pytest.mark.parametrize("tools", [None, ["f"]], ids=["no_tools", "tools"])
@pytest.mark.parametrize("unit", ["<|tool_call_start|>[f(a='x ", "<|tool_call_start|>[f(a='x\n"], ids=["space", "newline"])
def test_strings_left_open_each_cut_at_the_next_call_are_read_through_the_storm_memo(
    unit: str, tools: list | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `[f(a='x ` left open, then the next LFM2 region's start marker, again and again
    # (issue 19 P1): each value's string stays open to the end of the reply, so only there
    # is it cut at the next marker, where a call reads (_close._own_call_at). The storm
    # memo refused such a region (a stream's reading of its window waits: the string may
    # yet close), and each was read the general way, twice (its own reading and
    # begins_call's of the region after), and each call at a marker twice (Scanner.
    # _own_reads_at): 2 region readings and 2 stretch readings a region, 425 ms at 32 KB.
    # Now the memo notes the cut (_close._own_noted), its window's reading takes it, and
    # each region it gives the outcome to checks it (storm._own_hold): the readings are
    # the certification's, however long the reply.
    from toolgram._recover import repair as _repair
    from toolgram._scan import region as _region
    from toolgram._scan import storm as _storm

    counts = [0, 0]
    read = _region.RegionReader._read
    enter = _repair.kept_walks.__enter__

    def counting(self: Any, drv: Any, final: bool) -> Any:
        counts[0] += 1
        return read(self, drv, final)

    def stretch(self: Any) -> Any:
        counts[1] += 1  # (a call read at a marker: Scanner._own_reads_at)
        return enter(self)

    def run(size: int) -> tuple:
        raw = unit * (size // len(unit))
        counts[:] = [0, 0]
        with monkeypatch.context() as m:
            m.setattr(_region.RegionReader, "_read", counting)
            m.setattr(_repair.kept_walks, "__enter__", stretch)
            got = toolgram.parse(raw, tools, max_chars=None)
        assert len(got.calls) == raw.count("<|tool_call_start|>")  # (each value cut at the next call)
        return got, tuple(counts)

    small, small_counts = run(4_000)
    _, large_counts = run(16_000)
    assert large_counts[0] <= 64 and large_counts == small_counts, (small_counts, large_counts)
    with monkeypatch.context() as m:
        m.setattr(_storm, "enabled", False)
        assert small == toolgram.parse(unit * (4_000 // len(unit)), tools, max_chars=None)  # (the memo's outcome is the reading's)


@pytest.mark.parametrize(
    "unit",
    [
        "[f(a=<tool_call>)]\n",
        '[g(a=<tool_call>{"name": "t", "arguments": {}}</tool_call>)]<|tool_call_end|>\n',
        # (Calls kept, then one cut: its reading leaves a watch for stray closers after the
        # call kept and an end watch, which the memo remembers too; refused before, each
        # line was read the general way: 32 KB parse 14 -> 332 ms, QA qb32.)
        "[f(a=1), g(b=<tool_call>)]\n",
    ],
    ids=["cut", "cut_by_a_call", "calls_kept_then_one_cut"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["parse", "stream"])
def test_lines_a_broken_reply_opening_list_opens_again_are_read_through_the_storm_memo(
    unit: str, stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A reply-opening list of Python calls told broken leaves the next line's lists read
    # (Scanner.relist, issue 19 R2): a storm of such lines, no tools, had each line's
    # region, begun by the line restart (Scanner._start), read the general way, which no
    # storm memo was asked about (32 KB: parse 20 -> 161 ms, 8-character stream 38 -> 373
    # ms). Now they go through the memo (storm.restart): a few readings, not one a line.
    from toolgram._scan import region as _region

    raw = unit * (16_000 // len(unit))
    reads = [0]
    read = _region.RegionReader._read

    def counting(self: Any, drv: Any, final: bool) -> Any:
        reads[0] += 1
        return read(self, drv, final)

    with monkeypatch.context() as m:
        m.setattr(_region.RegionReader, "_read", counting)
        if stream:
            sp = toolgram.StreamParser(max_chars=None)
            for i in range(0, len(raw), 8):
                sp.feed(raw[i : i + 8])
            got = sp.close()
        else:
            got = toolgram.parse(raw, max_chars=None)
    assert got == toolgram.parse(raw, max_chars=None)
    lines = raw.count("\n")
    # (Those of the last few lines, whose window runs past the reply's end, and those
    # before the storm's keys are certified, are read the usual way: about a hundred.)
    assert reads[0] <= lines // 5, (reads[0], lines)


def _looked_at_for_a_cut_close(raw: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """The text handed to cut_marker (is the rest of the reply a close marker cut short?)
    over a parse, in characters: each piece is a copy."""
    from toolgram._lalr import close as _close
    from toolgram._scan import fastpath as _fastpath

    count = [0]
    cut_marker = _close.cut_marker

    def counting(rest: str, markers: object) -> bool:
        count[0] += 1 + len(rest)
        return cut_marker(rest, markers)

    with monkeypatch.context() as m:
        m.setattr(_close, "cut_marker", counting, raising=True)
        m.setattr(_fastpath, "cut_marker", counting, raising=True)
        toolgram.parse(raw, max_chars=None)
    return count[0]


@pytest.mark.parametrize(
    "unit", ['<|tool_call|>[{"name": "f", "arguments": {"a": 1}}]\n', '<function_call>{"name": "f", "arguments": {}} ok\n']
)
def test_a_reply_of_calls_copies_no_rest_per_call(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # After each call (the general way's, a fast frame's), whether the rest of the reply
    # is a close marker cut short was asked of a copy of all of it: the square of the reply.
    small, large = (_looked_at_for_a_cut_close(unit * (size // len(unit)), monkeypatch) for size in (4_000, 16_000))
    assert large <= 4.5 * small, (small, large)


def _searched_for_lines(raw: str, tools: list, monkeypatch: pytest.MonkeyPatch) -> int:
    """The text _build.builder._objects_by_line searches for lines that open a call object, over
    a parse, in characters."""
    from toolgram._build import builder as _builder

    count = [0]
    pattern = _builder._LINE_OBJECT

    class Counting:
        def finditer(self, text: str) -> object:
            count[0] += 1 + len(text)
            return pattern.finditer(text)

    with monkeypatch.context() as m:
        m.setattr(_builder, "_LINE_OBJECT", Counting())
        toolgram.parse(raw, tools, max_chars=None)
    return count[0]


def test_lists_left_open_are_not_searched_for_lines_each(monkeypatch: pytest.MonkeyPatch) -> None:
    # xLAM lists each left open in a string (`[{…"city": "El Pa` a line): each region's
    # JSON runs on to the end of the reply, fails, and was searched to there for lines
    # of call objects (MiniMax's repair), which a list is not: the square of the reply.
    unit = '[{"name": "get_weather", "arguments": {"city": "El Pa\n'
    small, large = (
        _searched_for_lines(unit * (size // len(unit)), ["get_weather"], monkeypatch) for size in (4_000, 16_000)
    )
    assert large <= 4.5 * small, (small, large)


def _read_as_strings(raw: str, tools: list) -> int:
    """The text _lalr.extent.StopIndex reads as strings (where Python argument values end,
    in a parse), in characters."""
    from toolgram._lalr import extent as _extent

    return _counted(raw, _extent, "_STRING_MATCH", lambda m, text, pos: 1 + m.end() - pos, tools=tools, got=True).weight


@pytest.mark.parametrize(
    "unit,tools",
    [
        # Each call's value ends (past the first characters, where the index is asked), but
        # after it a 'single-quoted' string opens that the apostrophe rule runs on to the end
        # of the reply (`['get_weather(…` again and again).
        ('[\'get_weather(city="' + "Paris " * 50 + '")]\n\nThat is all for now.\n', ["get_weather"]),
        # Each call's value runs on, its quote closed by the next call's.
        ('<|python_tag|>brave_search.call(query="weather in Men\n', ["brave_search"]),
    ],
    ids=["single-quoted", "double-quoted"],
)
def test_a_string_that_never_closes_is_read_once(unit: str, tools: list, monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = (_read_as_strings(unit * (size // len(unit)), tools) for size in (4_000, 16_000))
    assert small > 0
    assert large <= 4.5 * small, (small, large)


def _looked_through_for_markers(raw: str, tools: list) -> int:
    """The text Scanner._next_marker looks through (where a driver may cut a broken value)
    over a parse, in characters: from each start to what it finds, or the end of the text."""

    def weigh(at: int, self: Any, buf: str, start: int, key: str) -> int:
        return 1 + (len(buf) if at < 0 else at) - start

    return _counted(raw, _scan.Scanner, "_next_marker", weigh, tools=tools, got=True).weight


def test_a_salvage_replay_does_not_make_markers_be_looked_for_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # PLaMo requests each read again, cut short, by a salvage replay: the replay's text
    # took the place of the reply's in the memory of where markers are, and the next
    # request looked for every word marker (absent: `functools`, `Action:`) to the end.
    unit = (
        "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>weather<|plamo:end_tool_name:plamo|>"
        '<|plamo:begin_tool_arguments:plamo|>{"city": "Kobe"}<|plamo:end_tool_arguments:plamo|>'
        "<|plamo:end_tool_request:plamo|>\n"
    )
    small, large = (
        _looked_through_for_markers(unit * (size // len(unit)), ["weather"]) for size in (4_000, 16_000)
    )
    assert small > 0
    assert large <= 4.5 * small, (small, large)


def test_a_call_cut_inside_its_argument_repeated_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Kimi K3's call cut inside its argument, repeated: each region fails where the next
    # one's call opens, no call read before. That run alone tells salvage there is
    # nothing to keep; a replay of each region read every token twice.
    from toolgram._lalr import driver as _driver

    unit = (
        '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
        '<|open|>argument key="city" type="string"<|sep|>Fuku\n'
    )
    toolgram.parse(unit)  # (the grammars are built outside the count)
    made = _counted(unit * 40, _driver.Driver, "__init__", options={})
    assert [c.name for c in made.result.calls] == ["get_weather"]  # (the last five, one value)
    assert made.calls <= 40, made.calls


def test_a_cofl_call_cut_after_stray_text_is_not_replayed_to_find_its_last_point(monkeypatch: pytest.MonkeyPatch) -> None:
    # A cofl call of many values, each followed by stray text, cut after the last one:
    # the run fails at the end (the text has no tag after it), and salvage replayed the
    # whole call only to find the point after the last value's close, the failed run's
    # own last token (qa19 R5: 175 ms at 25 KB where the closed call took 54). Now the
    # call is read twice (the run, and the reading that closes it there), not three times.
    from toolgram._lalr import driver as _driver

    head = '<cofl:tool_calls><cofl:tool_call id="0" name="f">'
    unit = '<cofl:value name="q" type="raw">x</cofl:value>junk'
    fed = [0]
    feed = _driver.Driver._feed

    def counting(self: object, tok: object) -> None:
        fed[0] += 1
        feed(self, tok)  # type: ignore[arg-type]

    def tokens(raw: str) -> tuple[int, object]:
        fed[0] = 0
        with monkeypatch.context() as m:
            m.setattr(_driver.Driver, "_feed", counting)
            result = toolgram.parse(raw)
        return fed[0], result

    toolgram.parse(head + unit)  # (the grammars are built outside the count)
    closed, whole = tokens(head + unit * 200 + "</cofl:tool_call></cofl:tool_calls>")
    cut, result = tokens(head + unit * 200)
    assert whole.calls[0].repairs == ("stray_text",)  # type: ignore[attr-defined]
    assert result.calls[0].repairs == ("closed_tag", "stray_text")  # type: ignore[attr-defined]
    assert result.text == "junk"  # type: ignore[attr-defined]
    assert cut <= 2.2 * closed, (closed, cut)


def test_a_cofl_value_nested_deep_and_broken_is_not_replayed_for_no_point() -> None:
    # A cofl list nested hundreds of levels deep, one opener broken (`<coistvalue`, a
    # fuzz mutation of list_nested_too_deeply_is_an_error_its_region_read): the run fails
    # at the last close, no call read. Every value's close leaves a state with $END among
    # its merged lookaheads (may_close), but no stack short enough to close the frame
    # there (may_end): salvage replayed the whole region to find no point (fz110 s7
    # #110032985: 55 ms at 9.8 KB; at 32 KB 220 ms). Now the replay is left out: the
    # broken list feeds about the tokens of the whole one (before: 4,832 against 2,421).
    from toolgram._lalr import driver as _driver

    head = 'Saving.\n<cofl:tool_calls><cofl:tool_call id="0" name="save">\n<cofl:value name="tree" type="list">'
    tail = "</cofl:value>\n</cofl:tool_call></cofl:tool_calls>\nDone."
    opens = ['<cofl:value type="list">'] * 300
    toolgram.parse(head + "".join(opens[:3]) + "1" + "</cofl:value>" * 3 + tail)  # (the grammars are built outside the count)
    whole = _counted(head + "".join(opens) + " x\n" + "</cofl:value>" * 300 + tail, _driver.Driver, "_feed", options={})
    opens[225] = '<coistvalue type="list">'
    broken = _counted(head + "".join(opens) + " x\n" + "</cofl:value>" * 300 + tail, _driver.Driver, "_feed", options={})
    assert "nested too deeply" in whole.result.errors[0]
    assert broken.result.errors == ["Couldn't read a tool call: unexpected '</cofl:value>\\n</cofl…'."]
    assert broken.calls <= 1.2 * whole.calls, (whole.calls, broken.calls)


# Replies of one marker run, whose cost a look-ahead or a pattern could make the square
# of their length without feeding the drivers any more tokens: timed, as a ratio of two
# sizes in one test (linear: 4; the square: 16).
RUNS = [
    ("```json```", None),  # a payload look-ahead ran on over the whole run of markers
    ("<|tool_call|>{", None),  # each broken payload's end marker was looked for to the end
    ("<|im_start|>{", None),  # each broken payload's JSON error counted the lines before it
    ("[]\n", ["get_weather"]),
    ("<tool_call>", None),  # each opener asked whether the rest was openers only: a copy of the rest
    # (each run of close tags followed by text on its line read on to the end of the reply)
    ("<tool_call><function=f><parameter=a>x</parameter></function></tool_call> ok ", None),
]


@pytest.mark.parametrize("unit,tools", RUNS, ids=[repr(u) for u, _ in RUNS])
def test_marker_runs_cost_linear_time(unit: str, tools: list | None) -> None:
    from conftest import cpu_time_per_call

    toolgram.parse(unit, tools)  # (the grammars are built outside the timing)
    small, large = (
        cpu_time_per_call(lambda raw=unit * (size // len(unit)): toolgram.parse(raw, tools, max_chars=None))
        for size in (4_000, 16_000)
    )
    assert large <= 8 * small, (small, large)


def _streamed_by_character(raw: str) -> None:
    sp = toolgram.StreamParser(max_chars=None)
    for ch in raw:
        sp.feed(ch)
    sp.close()


def _joined_blanks(n: int, cut: bool) -> None:
    from toolgram._pipeline import Joiner

    joiner = Joiner()
    joiner.add("a")
    if cut:
        joiner.mark_cut()
    for _ in range(n):
        joiner.add(" ")
    joiner.add("b")


def _event_text_made(raw: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """The text of the Text events a stream of 8-character deltas makes (each made anew
    copies its text), in characters."""
    from toolgram._stream import parser as _parser

    count = [0]

    class Counting(_parser.Text):
        def __init__(self, text: str) -> None:
            count[0] += 1 + len(text)
            super().__init__(text)

    with monkeypatch.context() as m:
        m.setattr(_parser, "Text", Counting)
        sp = toolgram.StreamParser(max_chars=None)
        for i in range(0, len(raw), 8):
            sp.feed(raw[i : i + 8])
        sp.close()
    return count[0]


def test_text_that_settles_at_once_is_joined_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A reply that opens with `functools` and never reads as its calls: all of it is prose
    # at the end, in one piece a region, and each piece was added to the Text event made
    # so far (a new string, all of it copied): the square of the reply.
    small, large = (_event_text_made("functoolsx" * (size // 10), monkeypatch) for size in (4_000, 16_000))
    assert small > 0
    assert large <= 4.5 * small, (small, large)


# One long run of blanks, whose cost a pattern or a join could make the square of its
# length: timed, as a ratio of two sizes in one test (linear: 16; the square: 256).
BLANKS = [
    # A payload of a word and blanks (`<tool_call>x   …`): the pattern of a name before
    # the arguments' "{" (_build.builder._NAMED) split the blanks in two every way it could.
    lambda n: toolgram.parse("<tool_call>x" + " " * n + "b", max_chars=None),
    # Reasoning of blanks, a character a delta: the joiner copied the blanks it held back
    # with each delta.
    lambda n: _streamed_by_character("<think>a" + " " * n + "b</think>"),
    # The joiner's two runs of blanks, a delta at a time: held back after text, and since
    # markup was cut out.
    lambda n: _joined_blanks(n, cut=False),
    lambda n: _joined_blanks(n, cut=True),
    # A Gemma argument value opened by a quote, then blanks (`{a:'\t\t…b}`): the pattern of a
    # quote closed by the delimiter (_build.loose._QUOTED_TO_DELIM) tried each end of the blanks.
    lambda n: toolgram.parse("<start_function_call>call:f{a:'" + "\t" * n + "b}<end_function_call>", max_chars=None),
    # A Qwen parameter left open, blanks, then "</": the search for a misspelt close tag
    # (_build.builder._MISSPELT_CLOSE) ran from each blank to the end of the run.
    lambda n: toolgram.parse("<tool_call>\n<function=f>\n<parameter=a>x" + " " * n + "</x", max_chars=None),
]


@pytest.mark.parametrize(
    "run", BLANKS, ids=["payload", "reasoning", "joiner-held", "joiner-after-a-cut", "gemma-quote", "qwen-close"]
)
def test_a_run_of_blanks_costs_linear_time(run: object) -> None:
    from conftest import cpu_time_per_call

    run(10)  # type: ignore[operator]  # (the grammars are built outside the timing)
    small, large = (cpu_time_per_call(lambda size=size: run(size)) for size in (2_000, 32_000))  # type: ignore[operator]
    assert large <= 32 * small, (small, large)


def test_blanks_after_an_end_of_turn_token_cost_linear_time() -> None:
    """A call, an end-of-turn token (`<|eom_id|>`: the stream waits to know whether the
    reply ends there), then blanks, a character a delta: the token is found where it
    waits and the blanks read on from where they were, not searched through again at
    each delta (426 ms for 16,000 blanks). Timed, as a ratio (linear: 8; the square: 64)."""
    from conftest import cpu_time_per_call

    call = '<function=get_weather>{"city": "Paris"}</function><|eom_id|>'
    run = lambda n: _streamed_by_character(call + " " * n)  # noqa: E731
    run(10)
    small, large = (cpu_time_per_call(lambda size=size: run(size)) for size in (1_000, 8_000))
    assert large <= 24 * small, (small, large)


def _blanks_read_after_a_quoted_call(call: str, n: int) -> int:
    """The blanks instring._forth steps over while a call quoted in a string, then n
    blanks, then the string's close (`"}`) stream in a character a delta."""
    from toolgram._scan import instring

    raw = 'Here: {"note": "x ' + call + " " * n + '"}'
    counted = _counted(raw, instring, "_forth", lambda q, buf, p, hi: 1 + q - p, tools=["rm_rf"], size=1, got=True, check="apart")
    assert not counted.result.calls
    return counted.weight


def _bare_call_reads(k: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """A Gemma string quoting a bare call whose code holds `[x]` k times, streamed a
    character a delta: how many times close._bare_end looks at the quoted call, and how
    many characters its token loop goes over in all."""
    from toolgram._lalr import close

    close._BARE_TOKEN.pattern  # (bind the lazy pattern before wrapping it)
    pattern = close._BARE_TOKEN
    looks, chars = [0], [0]

    class Counting:
        def finditer(self, buf: str, lo: int, hi: int) -> Any:
            looks[0] += 1
            chars[0] += max(0, hi - lo)
            return pattern.finditer(buf, lo, hi)

    raw = 'call:write_file{content:<|"|>See:\ncall:write_file{content:<|"|>def wrap(x):\n' + "    return [x]\n" * k
    with monkeypatch.context() as m:
        m.setattr(close, "_BARE_TOKEN", Counting())
        result = _streamed_by_character_result(raw, [])
    assert result == toolgram.parse(raw, [], max_chars=None)
    return looks[0], chars[0]


def test_a_gemma_string_quoting_a_bare_call_is_not_read_again_per_delta(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its wait refused each delta while a `]` was in its last 64 characters, and each
    # look read the call from its brace (fuzz seed 7 #94011104: 1-character stream 5x
    # its budget): now a look per `]`, each going on from the last.
    looks, chars = _bare_call_reads(80, monkeypatch)
    assert looks <= 2 * 80 + 10, looks
    assert chars <= 4 * 1300, chars


def _streamed_by_character_result(raw: str, tools: list) -> Any:
    sp = toolgram.StreamParser(tools, max_chars=None)
    for ch in raw:
        sp.feed(ch)
    return sp.close()


@pytest.mark.parametrize(
    "call",
    [
        '<tool_call>{"name": "rm_rf", "arguments": {"p": "/"}}</tool_call>',
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.rm_rf:0<|tool_call_argument_begin|>"
        '{"p": "/"}<|tool_call_end|><|tool_calls_section_end|>',
    ],
    ids=["hermes", "kimi_k2"],
)
def test_blanks_after_a_quoted_call_are_read_once(call: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream waits after a quoted call's end markers for the string's close; the blanks
    it has read there are not read again at each delta (all of them, each delta: 300 ms
    for 4,000 blanks)."""
    small, large = (_blanks_read_after_a_quoted_call(call, n) for n in (500, 2_000))
    assert small > 0
    assert large <= 6 * small, (small, large)


_DEADLINE_CHILD = """
import signal, toolgram
class Deadline(Exception):
    pass
def on_alarm(*_):
    raise Deadline
signal.signal(signal.SIGALRM, on_alarm)
reply = "<|im_start|>{" * 3000
passed = swallowed = 0
for i in range(20):
    # (The outer try: the alarm may also ring after parse() returned, before the inner
    # finally stops the timer; that is the caller's code, not toolgram's.)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.001 + 0.001 * i)
        try:
            result = toolgram.parse(reply)
            swallowed += any("Deadline" in e for e in result.errors)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except Deadline:
        passed += 1
print(passed, swallowed)
"""


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer (POSIX)")
def test_a_deadline_set_in_python_dash_c_passes_through() -> None:
    # A handler with no source file (`python -c`, a notebook, exec): its module is the
    # caller's (`__main__`), not toolgram's.
    done = subprocess.run([sys.executable, "-c", _DEADLINE_CHILD], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    passed, swallowed = map(int, done.stdout.split())
    assert swallowed == 0
    assert passed > 0  # (the parses the deadline reached: it did reach some)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer (POSIX)")
def test_a_stream_interrupted_by_a_callers_exception_reads_no_more(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its state is half done: going on would corrupt the text without a word.
    def forever(self: object, out: list, final: bool) -> bool:
        return True

    sp = toolgram.StreamParser()
    sp.feed("Hello ")
    monkeypatch.setitem(_scan._MODES, "prose", forever)
    old = signal.signal(signal.SIGALRM, _deadline)
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    try:
        with pytest.raises(CallerDeadline):
            sp.feed("<tool_call> there")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    monkeypatch.undo()
    with pytest.raises(RuntimeError, match="interrupted"):
        sp.feed(" more")
    with pytest.raises(RuntimeError, match="interrupted"):
        sp.close()


# Short replies that a reply-anchored format might open (a word that may be a name, a
# bracket, the start of a tag): parse() rules most out with one test of the whole text.
SHORT = ["Hi", "Sure.", "[f", "<tool", "ok {", "get_weather", "x" * 31, "{\"name\": \"f\""]


@pytest.mark.parametrize("raw", SHORT)
def test_a_short_reply_streamed_whole_starts_no_more_drivers_than_parse(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream given a short reply in one delta waits, with no driver started, and
    reads it at its end as parse() does: not drivers started on the delta and run
    again at the end (a one-word reply cost five times parse() that way)."""
    from toolgram._scan import region as _region

    made = [0]
    driver = _region.RegionReader.driver

    def counting(self: object, fmt: object, start: int) -> object:
        made[0] += 1
        return driver(self, fmt, start)

    toolgram.parse(raw)
    monkeypatch.setattr(_region.RegionReader, "driver", counting)
    expected = toolgram.parse(raw)
    by_parse, made[0] = made[0], 0
    sp = toolgram.StreamParser()
    sp.feed(raw)
    assert sp.close() == expected
    assert made[0] <= by_parse, (made[0], by_parse)


def _driver_calls_streaming_by_character(raw: str, method: str) -> int:
    """How many times Driver.<method> runs while raw streams in a character a delta (no
    tools), the stream's result checked against parse()'s."""
    from toolgram._lalr import driver as _driver

    return _counted(raw, _driver.Driver, method, size=1, check="apart", options={}).calls


@pytest.mark.parametrize("raw", ["Sure\nHere is the answer you asked for, in full.", "the\nhello\nworld\nagain and more"])
def test_a_failure_waiting_only_for_the_text_it_quotes_is_not_run_again_per_delta(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reply that opens with a word and a line break begins a reply-anchored region
    (Mistral's `NAME[ARGS]`) that fails at the next line; its reason quotes the text
    after that place, which a stream waits for. The failure is settled: the deltas
    until the quote is whole are put aside, not each a run of the driver again (a
    1-character stream of such a reply ran it twenty times)."""
    runs = _driver_calls_streaming_by_character(raw, "run")
    assert runs <= 6, runs


@pytest.mark.parametrize(
    "raw",
    [
        '<minimax:tool_call>\n<invoke name="get weather">\n<parameter name="city">' + "Paris and more " * 40,
        '<tool_call>\n<function=get weather>\n<parameter=city>\n' + "Paris and more " * 40,
    ],
)
def test_a_name_with_words_in_it_is_read_on_not_again_per_delta(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A frame that broke on words after its name (`get weather`) is read with those
    words as blanks to tell whether the model meant a call (mention._held_name). A
    stream's reading of it goes on at each delta from where it waited; a fresh driver
    read the whole region again at each one (fuzz seed 7 #94002338: 6x its budget)."""
    lexed = _driver_calls_streaming_by_character(raw, "_lex")
    assert lexed <= 2 * len(raw), (lexed, len(raw))


# A line-anchored marker (`[`) followed by less text than the opening test needs: the
# stream waits at it, with no driver started, until the test can tell (each line here
# is prose: a name with a zero-width joiner in it, a reference, a list of numbers).
LINES = ["[get_weather\u200d(city=\"Paris\")]\n", "[see above]\n", "[1, 2, 3]\n", "[f\u0301(a=1)]\n"]


@pytest.mark.parametrize("line", LINES)
def test_prose_lines_that_open_with_a_bracket_start_no_more_drivers_than_parse(line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamed in 3-character deltas, lines that only begin like a pythonic call cost
    no drivers parse() does not start (each was a region begun, its drivers run on
    partial text and given up: about 9x parse() a line)."""
    from toolgram._scan import region as _region

    raw = "Notes:\n" + line * 20
    made = [0]
    driver = _region.RegionReader.driver

    def counting(self: object, fmt: object, start: int) -> object:
        made[0] += 1
        return driver(self, fmt, start)

    toolgram.parse(raw, tools=["get_weather", "f"])
    monkeypatch.setattr(_region.RegionReader, "driver", counting)
    expected = toolgram.parse(raw, tools=["get_weather", "f"])
    by_parse, made[0] = made[0], 0
    sp = toolgram.StreamParser(tools=["get_weather", "f"])
    for i in range(0, len(raw), 3):
        sp.feed(raw[i : i + 3])
    assert sp.close() == expected
    assert made[0] <= by_parse, (made[0], by_parse)


def _announced(raw: str, tools: list | None = None, size: int = 5) -> None:
    sp = toolgram.StreamParser(tools, max_chars=None, announce="name")
    for i in range(0, len(raw), size):
        sp.feed(raw[i : i + size])
    sp.close()


# A long call streamed with announce="name": the echo of its arguments (JsonEcho,
# XmlParamEcho) holds back at most a bounded tail, whatever the value holds (text with
# "<" in it, runs of newlines, an untyped value that might still be JSON).
ANNOUNCED = [
    lambda n: '<tool_call>\n{"name": "f", "arguments": {"a": "' + "x < y\\n" * n + '"}}\n</tool_call>',
    lambda n: "<tool_call>\n<function=f>\n<parameter=a>\n" + "x < y <b>\n\n" * n + "</parameter>\n</function>\n</tool_call>",
    lambda n: "<tool_call>\n<function=f>\n<parameter=a>\n" + "1" * (10 * n) + "\n</parameter>\n</function>\n</tool_call>",
    lambda n: "<tool_call>\n<function=f>\n<parameter=a>\nx" + "\n" * (10 * n) + "y</parameter>\n</function>\n</tool_call>",
]


@pytest.mark.parametrize("reply", ANNOUNCED, ids=["json", "xml-text", "xml-untyped-digits", "xml-newlines"])
def test_an_announced_call_streams_in_linear_time(reply: object) -> None:
    from conftest import cpu_time_per_call

    _announced(reply(10))  # type: ignore[operator]  # (the grammars are built outside the timing)
    small, large = (cpu_time_per_call(lambda size=size: _announced(reply(size))) for size in (400, 1_600))  # type: ignore[operator]
    assert large <= 8 * small, (small, large)


def test_a_broken_frame_streamed_looks_for_call_markers_in_new_text_only() -> None:
    """A frame broken at once (`<cofl:tool_calls>` and a run of `[`), streamed a character
    at a time: while the failure waits for its end, the search for a later call marker
    goes on from where a marker may still begin (a partial match), not a marker's length
    back on every delta (30 µs a delta; 2.4x the stream's budget at 30 KB)."""
    raw = "<cofl:tool_calls>" + "[" * 3000
    sp = toolgram.StreamParser()
    searched = [0]

    class Counting:
        def __init__(self, inner: object) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

        def search(self, buf: str, pos: int = 0, *args: object, **kw: object) -> object:
            searched[0] += len(buf) - pos
            return self.inner.search(buf, pos, *args, **kw)  # type: ignore[attr-defined]

    sp._scanner.call_re = Counting(sp._scanner.call_re)
    for ch in raw:
        sp.feed(ch)
    assert sp.close() == toolgram.parse(raw)
    assert searched[0] <= 4 * len(raw), searched[0]


def test_a_name_followed_by_a_long_line_of_prose_is_looked_at_a_bounded_way(monkeypatch) -> None:
    # (Whether a name with a space in it held up a call, `get weather`, looked at the words
    # after the name to the end of their line, again on each delta: a 32 KB line of prose
    # after `<|tool_call_start|>ce` streamed in 20 s. The words looked at are at most eight.)
    from toolgram._scan import mention

    real = mention._MORE_WORDS
    seen: list[int] = []

    class Counting:
        def match(self, buf: str, pos: int):
            m = real.match(buf, pos)
            seen.append(0 if m is None else m.end() - pos)
            return m

    monkeypatch.setattr(mention, "_MORE_WORDS", Counting())
    unit = "This sentence is filler prose that keeps the reply going. "
    raw = "Hi <|tool_call_start|>ce is " + unit * 100
    sp = toolgram.StreamParser()
    for i in range(0, len(raw), 8):
        sp.feed(raw[i : i + 8])
    sp.flush()
    assert sp.close() == toolgram.parse(raw)
    assert seen and max(seen) <= 8 * 65


# -- a call past max_chars is told, not read ------------------------------------------

_PAST = "x" * 117 + '\n<tool_call>{"name": "run", "arguments": {"cmd": "ls"}}</tool_call>'


@pytest.mark.parametrize("cap", [60, 118, 120, 125])  # (120, 125: the cap cuts the marker)
def test_a_call_marker_past_max_chars_is_an_error_in_parse_and_stream(cap: int) -> None:
    result = toolgram.parse(_PAST, max_chars=cap)
    assert result.calls == [] and result.text == _PAST
    assert result.errors == [
        f"Couldn't read a tool call: the reply goes on past max_chars ({cap} characters),"
        " and a call's marker in what follows was not read."
    ]
    for size in (1, 2, 3, 7, 64):
        stream = toolgram.StreamParser(max_chars=cap)
        for i in range(0, len(_PAST), size):
            stream.feed(_PAST[i : i + size])
        assert stream.close() == result, size


def test_prose_past_max_chars_is_no_error() -> None:
    # (Nor a marker wholly before the cap, nor a quiet format's `[`, nor a closer, nor a
    # marker mentioned in a sentence: QA7 D4.)
    text = "[1] see below " * 4 + "</tool_call> more prose [2]"
    assert toolgram.parse(text, max_chars=20).errors == []
    text = "Some notes. " * 10 + "Use `<tool_call>` tags, or write [TOOL_CALLS] first."
    assert toolgram.parse(text, max_chars=50).errors == []


def test_a_call_whole_at_max_chars_is_not_cut_by_it() -> None:
    # (Its closer inside the limit, single_quotes its only repair: QA7 D11, where parse()
    # said cut_by_max_chars and a stream in 1-character deltas, which completed the call
    # at the limit, did not.)
    raw = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 'x'}}</tool_call>\n\nmore"
    result = toolgram.parse(raw, max_chars=61)
    assert result.calls[0].repairs == ("single_quotes",)
    for size in (1, 2, 3, 7):
        assert streamed(raw, size, max_chars=61) == result, size


def test_a_value_written_the_same_in_each_call_is_read_once() -> None:
    # A list of calls that each give `unit='celsius'`, or one call with a key repeated:
    # each value written the same way was read again (coerce_param) for each, a third
    # of a plain call's building. A value read once is given to each call; a list or a
    # dict is copied for each, so that no two calls share one. (A call written as the
    # one before it is read as that one, a list value too: Builder._plain_memo.)
    from toolgram._build import builder as _builder

    calls, _, result = _counted("[" + ", ".join(["f(a=1, b='xy', c=[1])"] * 40) + "]", _builder, "coerce_param")
    assert [c.arguments for c in result.calls] == [{"a": 1, "b": "xy", "c": [1]}] * 40
    # (b and c for the first calls, till the memo of calls written the same is made; a,
    # an integer, read at once, not by coerce_param: Builder._coerce. 41 before c's list
    # was kept in that memo.)
    assert calls <= 6, calls
    assert len({id(c.arguments["c"]) for c in result.calls}) == 40


@pytest.mark.parametrize(
    "unit,args",
    [
        ('[search(q=["x"], lookup(id=7)]\n', [{"q": ["x"]}, {"id": 7}]),
        ('[f(a={"k": [1, {"j": None}]})]\n', [{"a": {"k": [1, {"j": None}]}}]),
        ("[f(a=[1, 2], b='x')]\n", [{"a": [1, 2], "b": "x"}]),
    ],
)
def test_a_call_with_a_list_value_written_the_same_is_read_once(unit: str, args: list) -> None:
    # Issue 17: a reply of one list repeated whose call has a list or dict value
    # (`[search(q=["x"], lookup(id=7)]` * 1058 is 32 KB) read that value (coerce_param)
    # for each call, the builder's memo of calls written the same (Builder._plain_memo)
    # keeping scalar values only. Now it keeps a copy, and each call is given its own
    # copy: the value is read a few times a reply, and no two calls share a container.
    from toolgram._build import builder as _builder

    calls, _, result = _counted(unit * 300, _builder, "coerce_param")
    assert [c.arguments for c in result.calls] == args * 300
    assert calls <= 6, calls  # (300 before)
    values = [v for c in result.calls for v in c.arguments.values() if isinstance(v, (list, dict))]
    assert len({id(v) for v in values}) == len(values) == 300
    for v in values[:1]:  # (a caller changing one call's value in place changes no other's)
        v.append(0) if isinstance(v, list) else v.update(z=0)
    assert [c.arguments for c in result.calls if c is not result.calls[0]] == (args * 300)[1:]


# A value of the format's own call openers, one a line, then the real closers: the
# openers read as calls (each closed by the next: an opener alone), the closers fail.
# The salvage read the region again before each opener alone, from its start, to find
# a call that is more than one (issue 17: 16 KB took 13 s). The drivers made and the
# tokens lexed do not grow with the count of openers past those of one reading.
_D32, _D41 = "<｜DSML｜", "<｜DSML｜ "
OPENER_LINES = [
    ('<minimax:tool_call>\n<invoke name="write">\n<parameter name="content">', '<invoke name="f">\n',
     "</parameter>\n</invoke>\n</minimax:tool_call>"),
    ("<tool_call>\n<function=write>\n<parameter=content>\n", "<function=f>\n",
     "\n</parameter>\n</function>\n</tool_call>"),
    ("<seed:tool_call>\n<function=write>\n<parameter=content>\n", "<function=f>\n",
     "\n</parameter>\n</function>\n</seed:tool_call>"),
    ('<dots_function_call>\n<invoke name="write">\n<parameter name="content">', '<invoke name="f">\n',
     "</parameter>\n</invoke>\n</dots_function_call>"),
    (_D32 + 'function_calls>\n' + _D32 + 'invoke name="write">\n' + _D32 + 'parameter name="content" string="true">',
     _D32 + 'invoke name="f">\n', "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>"),
    (_D41 + 'calls>\n' + _D41 + 'invoke name="write">\n' + _D41 + 'parameter name="content" string="true">',
     _D41 + 'invoke name="f">\n', "</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls>"),
]


@pytest.mark.parametrize(("head", "unit", "tail"), OPENER_LINES)
def test_a_value_of_openers_one_a_line_is_salvaged_in_a_bounded_number_of_readings(
    head: str, unit: str, tail: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolgram._lalr import driver as _driver

    made, lexed = [0], [0]
    init, lex = _driver.Driver.__init__, _driver.Driver._lex

    def counting_init(self: object, *args: object, **kwargs: object) -> None:
        made[0] += 1
        init(self, *args, **kwargs)  # type: ignore[arg-type]

    def counting_lex(self: object, *args: object) -> object:
        lexed[0] += 1
        return lex(self, *args)  # type: ignore[arg-type]

    toolgram.parse(head + unit + tail)  # (the grammars are built outside the count)
    counts, results = [], []
    with monkeypatch.context() as m:
        m.setattr(_driver.Driver, "__init__", counting_init)
        m.setattr(_driver.Driver, "_lex", counting_lex)
        for n in (30, 120):
            made[0] = lexed[0] = 0
            results.append(toolgram.parse(head + unit * n + tail))
            counts.append((made[0], lexed[0]))
    for result in results:  # (the closers are unexpected after the openers: an error, no call)
        assert result.calls == [] and len(result.errors) == 1, result
    (made_small, lex_small), (made_large, lex_large) = counts
    assert made_large == made_small, counts
    assert lex_large <= 4.5 * lex_small, counts  # (linear: 4; a reading for each opener: 16)


def test_the_calls_before_a_value_of_openers_are_kept_as_before() -> None:
    # The run of openers alone is stepped over at once, to the call before it that is
    # more than an opener: kept, as the replays one opener at a time kept it.
    head = '<minimax:tool_call>\n<invoke name="a">\n<parameter name="x">1</parameter>\n</invoke>\n'
    value = '<invoke name="write">\n<parameter name="content">' + '<invoke name="f">\n' * 40
    raw = head + value + "</parameter>\n</invoke>\n</minimax:tool_call>"
    result = toolgram.parse(raw)
    assert [(c.name, c.arguments, c.repairs) for c in result.calls] == [("a", {"x": 1}, ("closed_tag",))]
    assert result.errors == ["Couldn't read a tool call: unexpected '\\n</parameter>\\n</invo…'."]
    assert result.text.startswith('<invoke name="write">\n<parameter name="content"><invoke name="f">')
    for size in (1, 7, 64):
        assert streamed(raw, size) == result, size


# A parse's own objects (its trees, tokens, drivers) are freed as it returns, none left
# in a reference cycle for the collector: a 32 KB reply's parse made some 60,000, and the
# next parse's full collection walked them all (a driver held its region reader, which
# holds it, through the marker search it was given; a call's error kept the frames of
# its traceback, which hold the builder that kept it).
NO_CYCLES = [
    ("[" + "f(a=1, b='xy'), " * 40 + "g(b=)]", None),
    ("[" + "f(a=1, b='xy'), " * 40 + "g(b=)]", ["f", "g"]),
    ("[run(cmd='a', b='" + "x', b='" * 40 + "')]", ["run"]),
    ('[run_shell(timeout=30, command="echo "hi" there")]\n' * 5, ["run_shell"]),
    ("[]\n" * 20, ["get_weather"]),
    ("call:f{a:[}\n" * 20, None),
    ("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n" * 5, None),
]


@pytest.mark.parametrize("raw, tools", NO_CYCLES)
def test_a_parse_leaves_nothing_for_the_cycle_collector(raw: str, tools: list | None) -> None:
    import gc

    toolgram.parse(raw, tools)  # (the grammars compiled, and what their tables keep)
    gc.collect()
    gc.disable()
    try:
        toolgram.parse(raw, tools)
        assert gc.collect() == 0
    finally:
        gc.enable()


def _replayed(parse: Any, monkeypatch: pytest.MonkeyPatch) -> int:
    """Tokens a salvage's replays lex (the drivers that mark points: salvage_points)
    while `parse` runs."""
    from toolgram._lalr import driver as _driver

    count = [0]
    lex = _driver.Driver._lex

    def counting(self: Any, *args: object) -> object:
        if self.marks is not None:
            count[0] += 1
        return lex(self, *args)

    with monkeypatch.context() as m:
        m.setattr(_driver.Driver, "_lex", counting)
        parse()
    return count[0]


@pytest.mark.parametrize(("head", "unit", "tail"), OPENER_LINES)
def test_the_replay_of_a_value_of_openers_starts_after_its_last_calls(
    head: str, unit: str, tail: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first reading keeps where it stood after its last calls (Driver.spots); the
    # replay that looks for the point before the last opener starts there, not at the
    # region's start: what it lexes does not grow with the count of openers.
    toolgram.parse(head + unit + tail)
    counts = [_replayed(lambda n=n: toolgram.parse(head + unit * n + tail), monkeypatch) for n in (30, 120)]
    assert 0 < min(counts) and max(counts) <= 80, counts  # (from the start: 226 and 856 for MiniMax)


def test_a_cofl_call_cut_inside_an_attribute_is_read_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    # A long cofl call the end cut inside its next value's attribute (as max_chars cuts
    # one): no point closes it after the last token, so the salvage looks for the one
    # after the last whole value. It replayed the call from its start to find it, and
    # read it again to see what the grammar takes at that point (salvage._accepts):
    # four readings. Now the replay starts from the first reading's last spot inside
    # the call (Driver.inner), and no close marker begins the text after the point, so
    # nothing is asked of the grammar there: the reading, and the call's reading up to
    # the point.
    from toolgram._lalr import driver as _driver

    def raw(n: int) -> str:
        values = "".join(f'<cofl:value name="p{i}" type="raw">x y</cofl:value>' for i in range(n))
        return '<cofl:tool_calls><cofl:tool_call id="0" name="f">' + values + '<cofl:value name="pa'

    toolgram.parse(raw(3))
    for n in (100, 400):
        count = [0, 0]
        lex = _driver.Driver._lex

        def counting(self: Any, *args: object) -> object:
            count[self.marks is None] += 1
            return lex(self, *args)

        with monkeypatch.context() as m:
            m.setattr(_driver.Driver, "_lex", counting)
            result = toolgram.parse(raw(n), max_chars=None)
        assert [(c.name, len(c.arguments), c.repairs) for c in result.calls] == [
            ("f", n, ("closed_tag", "dropped_partial_argument", "cut_value"))
        ]
        replayed, read = count
        assert replayed <= 64, (n, count)  # (from the region's start: a reading's worth)
        assert read <= 2 * 14 * n + 64, (n, count)  # (fourteen tokens a value, read twice)


def test_the_replay_of_a_deep_value_left_open_reads_only_its_first_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    # Nested thousands of levels deep and cut by the end: the points the replay marks
    # deep inside keep no stack (Driver._keep_mark), so it stops past the last that does
    # (Driver.relevant, the first levels) and takes the last point from the first
    # reading: the value is read once, not twice.
    head = '<functions><function name="run"><params>'
    toolgram.parse(head + '<param name="a"><dict>', ["run"])
    counts, results = [], []
    for n in (200, 800):
        counts.append(_replayed(lambda n=n: results.append(toolgram.parse(head + '<param name="a"><dict>' * n, ["run"])), monkeypatch))
    assert 0 < counts[1] == counts[0] <= 200, counts
    for result in results:
        assert [(c.name, c.arguments, c.repairs) for c in result.calls] == [
            ("run", {"a": ""}, ("closed_tag", "dropped_partial_argument", "cut_value"))
        ]


def test_a_k3_value_of_tags_after_prose_streams_without_matching_its_width_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # A Kimi K3 call, prose after its argument's close, then `</parameter>` lines: the
    # value runs on, and its pattern may look 1,579 characters on from each `<`. Streamed
    # one character at a time, the driver reads each character only until what the
    # last `<` looks at is settled (`</p`), not until it is 1,579 characters back.
    from toolgram._lalr import driver as _driver

    head = ('<|open|>tools<|sep|><|open|>call tool="write" index="1"<|sep|><|open|>argument key="content" '
            'type="string"<|sep|>hello<|close|>argument<|sep|> then prose ' + "x " * 200)
    count = [0]
    lex = _driver.Driver._lex

    def counting(self: Any, *args: object) -> object:
        count[0] += 1
        return lex(self, *args)

    counts = []
    with monkeypatch.context() as m:
        m.setattr(_driver.Driver, "_lex", counting)
        for n in (400, 800):
            raw = head + "\n</parameter>" * n
            count[0] = 0
            stream = toolgram.StreamParser()
            for ch in raw:
                stream.feed(ch)
            assert stream.close() == toolgram.parse(raw)
            counts.append(count[0])
    assert counts[1] - counts[0] <= 4 * 400, counts  # (a character each: 13 a line)


def test_a_value_of_markup_lines_streamed_follows_each_look_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A MiniMax value of `<parameter name="a">x</parameter>` lines, in 64-character
    # deltas: the look before the end of the text is the same text as one read before,
    # so it is unsettled without being followed again (regex_loops.reads_to), and the
    # tags' looks are kept by their text (nest._tag_reads): the looks followed do not
    # grow with the lines.
    from toolgram._grammar import regex_loops as _loops
    from toolgram._lalr import nest as _nest

    head = '<minimax:tool_call>\n<invoke name="write">\n<parameter name="content">'
    tail = "</parameter>\n</invoke>\n</minimax:tool_call>"
    count = [0]
    seq, tags = _loops._seq_reads, _nest._tag_reads

    def counting_seq(*args: Any) -> int:
        count[0] += 1
        return seq(*args)

    def counting_tags(*args: Any) -> int:
        count[0] += 1
        return tags(*args)

    def streamed(n: int) -> None:
        raw = head + '<parameter name="a">x</parameter>\n' * n + tail
        stream = toolgram.StreamParser()
        for i in range(0, len(raw), 64):
            stream.feed(raw[i : i + 64])
        assert stream.close() == toolgram.parse(raw)

    streamed(50)  # (the grammar built, its looks' answers kept, outside the count)
    counts = []
    with monkeypatch.context() as m:
        m.setattr(_loops, "_seq_reads", counting_seq)
        m.setattr(_nest, "_tag_reads", counting_tags)
        for n in (100, 400):
            count[0] = 0
            streamed(n)
            counts.append(count[0])
    assert counts[1] <= counts[0] + 100, counts  # (followed at each delta: 4x)


class _CountingQuote:
    """instring.QUOTE and instring.quoted, counting the characters their searches cover."""

    def __init__(self, pattern: Any, quoted: Any) -> None:
        self.pattern, self.real_quoted, self.chars = pattern, quoted, 0

    def quoted(self, buf: str, lo: int, hi: int) -> bool:
        self.chars += max(0, hi - lo)
        return self.real_quoted(buf, lo, hi)

    def search(self, buf: str, lo: int, hi: int) -> Any:
        self.chars += max(0, hi - lo)
        return self.pattern.search(buf, lo, hi)

    def finditer(self, buf: str, lo: int, hi: int) -> Any:
        self.chars += max(0, hi - lo)
        return self.pattern.finditer(buf, lo, hi)


@pytest.mark.parametrize("unit", ["```x", "Action:x", "<tool_call>x ", "[see] ```x "])
def test_the_prose_before_a_marker_is_searched_for_a_quote_once(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A marker in prose is prose where it is inside a string of a call no format read
    # (instring.py): the text before it is searched for a quote, up to LOOK characters
    # back. In a storm of markers that search went back LOOK at each (```x repeated to
    # 32 KB: 37 -> 164 ms); the scanner keeps how far it searched.
    from toolgram._scan import instring

    chars = []
    for k in (500, 2000):
        counting = _CountingQuote(instring.QUOTE, instring.quoted)
        with monkeypatch.context() as m:
            m.setattr(instring, "QUOTE", counting)
            m.setattr(instring, "quoted", counting.quoted)
            raw = "Note: " + unit * k
            result = toolgram.parse(raw)
        assert result.text is not None
        chars.append(counting.chars / len(raw))
    # Each character about once.
    assert chars[1] <= 3, chars
    assert chars[1] <= chars[0] * 1.2 + 0.1, chars


def test_a_string_opened_in_prose_is_read_on_not_again_at_each_marker(monkeypatch: pytest.MonkeyPatch) -> None:
    # Prose that opens a call's string, then markers each in a string of it: each marker
    # is read back to the call's opening (instring.py), up to 2,048 characters; the
    # scanner keeps how far the last marker's reading got (instring.Reading), so each
    # string token is read about once, not once a marker (`[f(a='```x', '```x', …`:
    # 60 -> 28 ms at 32 KB).
    from toolgram._scan import instring

    per_marker = []
    for k in (200, 800):
        count = [0]
        back = instring._back

        def counting(buf: str, lo: int, p: int) -> int:
            count[0] += 1
            return back(buf, lo, p)

        with monkeypatch.context() as m:
            m.setattr(instring, "_back", counting)
            result = toolgram.parse("Say [f(a=" + "'```x', " * k)
        assert not result.calls
        per_marker.append(count[0] / k)
    assert per_marker[1] <= 3, per_marker



@pytest.mark.parametrize("stream", [False, True])
def test_openings_of_two_kinds_before_a_run_of_markers_are_each_searched_once(stream: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # A JSON opening and a Python one in the prose (`{"a": [1, 1, …` then `[f(b=[2, 2,
    # …`), then markers: each marker is read back to each opening (instring.py). The
    # reading of each kind is kept (instring.Reading.opened: with one kept for all, each
    # kind's replaced the other's, and both were read from their openings again), and
    # the text after its last token, searched already, is not searched again at the
    # next marker (instring._tokens): 73 -> 45 ms at 32 KB, each marker searched back
    # 2,000 characters. Counted: the characters the token searches go over, a marker.
    from toolgram._scan import instring

    per_marker = []
    for k in (10, 60):
        searched = [0]

        class Counting:
            def __init__(self, pattern: Any) -> None:
                self.pattern = pattern

            def finditer(self, buf: str, pos: int, endpos: int) -> Any:
                searched[0] += endpos - pos
                return self.pattern.finditer(buf, pos, endpos)

            def match(self, *args: Any) -> Any:
                return self.pattern.match(*args)

        kinds = tuple((first, opens, Counting(tokens), one_line) for first, opens, tokens, one_line in instring._KINDS)
        raw = '{"a": [' + "1, " * 150 + "[f(b=[" + "2, " * 150 + "<tool_call> 3, " * k
        with monkeypatch.context() as m:
            m.setattr(instring, "_KINDS", kinds)
            if stream:
                sp = toolgram.StreamParser(None)
                for i in range(0, len(raw), 64):
                    sp.feed(raw[i : i + 64])
                result = sp.close()
            else:
                result = toolgram.parse(raw)
        assert not result.calls
        per_marker.append(searched[0] / k)
    # (Each marker searches its own 15 characters after the last search, for each kind:
    # ~100 a marker; on 72ef1625 each searched back to the last token of each opening:
    # 3,150 a marker.)
    assert per_marker[1] <= 200, per_marker


def _scanned(raw: str, tools: list, size: int | None, monkeypatch: pytest.MonkeyPatch) -> tuple[list, int]:
    """The items a scanner puts out for raw (whole, or fed in deltas of `size`), and how
    many times it searched the text with its full marker regex (any_re)."""
    from toolgram._grammar.registry import default_registry
    from toolgram._tools.tools import normalize_tools

    searched = [0]

    class Counting:
        def __init__(self, pattern: Any) -> None:
            self.pattern = pattern

        def search(self, *args: Any) -> Any:
            searched[0] += 1
            return self.pattern.search(*args)

    scanner = _scan.Scanner(default_registry().select(), normalize_tools(tools))
    scanner.any_re = Counting(scanner.any_re)
    if size is None:
        return scanner.read(raw), searched[0]
    items = []
    for i in range(0, len(raw), size):
        items += scanner.feed(raw[i : i + size])
    return items + scanner.finish(), searched[0]


@pytest.mark.parametrize("size", [None, 1, 8, 64])
def test_prose_lines_that_open_with_a_bracket_are_one_piece(size: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines of `[]` with tools (each `[` first on its line, a pythonic list's marker that
    opens no call): the prose they make is one piece, not two a marker (the piece before
    it and the marker), and whole or streamed, no `[` is searched for again with the full
    marker regex to tell that it starts its line (10,000 of them at 32 KB: 57 ms)."""
    raw = "[]\n" * 300 + "ok"
    items, searched = _scanned(raw, ["get_weather"], size, monkeypatch)
    assert [item[0] for item in items] == ["text"] * len(items)
    assert "".join(item[3] for item in items) == raw
    # (A stream puts out a piece a delta at most, and holds back a `[` at the end of one.)
    assert len(items) <= (1 if size is None else len(raw) // size + 2), len(items)
    assert searched == 0
    assert toolgram.parse(raw, ["get_weather"]).text == raw


@pytest.mark.parametrize(
    "opening",
    ['Try call:foo{a:<|"|>x <tool_call>', 'Say {"a": "x <tool_call>'],
    ids=["gemma", "json"],
)
def test_a_marker_waiting_for_a_string_to_close_is_not_checked_again_at_each_delta(
    opening: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stream at a marker after a string left open in prose waits until the text tells
    # whether the string closes as a value does (instring._closes), up to 4,096
    # characters. At each delta only that string is read on (Scanner.string_wait,
    # instring.closes_on): neither the marker searched for again nor in_string asked
    # again from the start (1-character deltas over 4 KB: 16 -> 120 ms when it was).
    from toolgram._scan import instring

    raw = opening + "y " * 2000 + "\n"
    asked = _counted(raw, instring, "in_string", size=1, check=None, options={})
    assert result_key(asked.result) == result_key(toolgram.parse(raw))
    assert asked.calls <= 3, asked.calls


def _read_after_the_first(raw: str, size: int | None, monkeypatch: pytest.MonkeyPatch) -> int:
    """Tokens lexed while `raw` is parsed (size None) or streamed in deltas of `size`
    characters, but those of the driver that lexed the most (the region's reading)."""
    from toolgram._lalr import driver as _driver

    counts: dict = {}
    lex = _driver.Driver._lex

    def counting_lex(self: object, *args: object) -> object:
        counts[id(self)] = counts.get(id(self), 0) + 1
        return lex(self, *args)  # type: ignore[arg-type]

    with monkeypatch.context() as m:
        m.setattr(_driver.Driver, "_lex", counting_lex)
        result = toolgram.parse(raw) if size is None else streamed(raw, size)
    assert result.calls == [] and len(result.errors) == 1, result
    return sum(counts.values()) - max(counts.values())


@pytest.mark.parametrize("size", [None, 8])
@pytest.mark.parametrize(("head", "unit", "tail"), OPENER_LINES)
def test_the_reading_up_to_the_last_opener_takes_up_where_the_first_stood(
    head: str, unit: str, tail: str, size: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The salvage reads the region again as a reply cut before its last opener. Its
    # tokens are the first reading's up to where that one's tries of the lexer looked
    # only at text before the cut (_lalr/looks.py): it takes up from a spot of the first
    # reading a margin back (Driver.back), not from the region's start: what the other
    # drivers lex does not grow with the count of openers.
    toolgram.parse(head + unit + tail)
    small, large = (_read_after_the_first(head + unit * n + tail, size, monkeypatch) for n in (100, 400))
    assert large <= small + 60, (small, large)  # (from the start: 708 and 2,808 for MiniMax)


class _Reading:
    """A compiled pattern that adds to count[0] the characters each match reads (none
    where it fails) and each search passes over (to the text's end where it finds
    nothing)."""

    def __init__(self, pattern: Any, count: list) -> None:
        self.pattern, self.count = pattern, count

    def match(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        m = self.pattern.match(text, pos) if endpos is None else self.pattern.match(text, pos, endpos)
        self.count[0] += (m.end() if m is not None else pos) - pos
        return m

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        m = self.pattern.search(text, pos) if endpos is None else self.pattern.search(text, pos, endpos)
        self.count[0] += (m.start() if m is not None else len(text) if endpos is None else endpos) - pos
        return m


def _strings_read(raw: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """The text the Python string pattern of quoted_end and the lenient JSON pass's tokens
    read over a parse, in characters."""
    from toolgram._recover import repair as _repair

    count = [0]
    with monkeypatch.context() as m:
        m.setattr(_repair, "_PY_STRING", {q: _Reading(p, count) for q, p in _repair._PY_STRING.items()})
        m.setattr(_repair, "_TOKEN", _Reading(_repair._TOKEN, count))
        toolgram.parse(raw, None, max_chars=None)
    return count[0]


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "[" + ", ".join("f(a='x\")" for _ in range(n)) + "]",
        lambda n: '<tool_call>{"name": "f", "arguments": {' + ", ".join(f"\"k{i}\": 'v\"" for i in range(n)) + "}}</tool_call>",
    ],
    ids=["python", "json"],
)
def test_strings_closed_with_the_other_quote_are_read_once(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each value's string closed with the other quote (repair mismatched_quote): the string
    # its own quote opens runs on (`'x` … `'x`: apostrophes) to the end of the text, and was
    # read so for each value, to find that quote.
    small, large = (_strings_read(make(n), monkeypatch) for n in (400, 1600))
    assert small > 0
    assert large <= 4.5 * small, (small, large)


def _quotes_read(raw: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """What the Python string pattern and first_other's quote search read over a parse
    (characters), with the storm's own tools."""
    from toolgram._recover import repair as _repair

    count = [0]
    with monkeypatch.context() as m:
        m.setattr(_repair, "_PY_STRING", {q: _Reading(p, count) for q, p in _repair._PY_STRING.items()})
        m.setattr(_repair, "_ANY_QUOTE", _Reading(_repair._ANY_QUOTE, count))
        got = toolgram.parse(raw, ["say"], max_chars=None)
    assert len(got.calls) == raw.count("[say(")  # (each value ends at its call's end marker)
    return count[0]


@pytest.mark.parametrize("unit", ["<|tool_call_start|>[say(text='hi<|tool_call_end|>", "<|python_start|>[say(text='it's<|python_end|>"])
def test_single_quoted_values_left_open_before_their_end_marker_are_read_once(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each value's single-quoted string runs on to the end of the reply as Python reads it
    # (the next value's `'h` is an apostrophe), and ends at its format's end marker as a
    # double-quoted one does: whether it runs on, and the first other quote in it, were
    # read to the end for each value (issue 19: pyend19's double-quoted rule, kept from
    # single quotes for that).
    small, large = (_quotes_read(unit * n, monkeypatch) for n in (200, 800))
    assert small > 0
    assert large <= 4.5 * small, (small, large)


def test_a_list_of_calls_each_needing_a_repair_gives_each_its_own_once() -> None:
    # Every call object of the list needs a repair (a trailing comma in each): which call
    # a repair is (R9) was told by going over every element's repairs for each element,
    # in the lenient reader's owners (repair.loads) and again in the builder's _mine (QA22
    # D2: 4/8/16/31 KB 3/5/11/21 -> 5/11/32/98 ms).
    def raw(n: int) -> str:
        return "[TOOL_CALLS] [" + ", ".join('{"name": "f", "arguments": {"a": 1,}}' for _ in range(n)) + "]"

    got = toolgram.parse(raw(3), None)
    assert [c.repairs for c in got.calls] == [("trailing_comma",)] * 3
    small, large = (
        _lines(lambda n=n: toolgram.parse(raw(n), None, max_chars=None), ("builder.py", "repair.py")) for n in (100, 400)
    )
    assert large <= 4.5 * small, (small, large)


def _read_for_open_strings(raw: str, tools: list, monkeypatch: pytest.MonkeyPatch) -> int:
    """What a parse reads (characters) to tell where values break (Spans.failure, the
    lenient pass over a value's text) and where Python strings close (the string
    pattern, under both its names)."""
    from toolgram._recover import repair as _repair

    count = [0]
    failure = _repair.Spans.failure

    def counting_failure(self: Any, text: str, pos: int, span: str) -> Any:
        count[0] += len(span)
        return failure(self, text, pos, span)

    strings = {q: _Reading(p, count) for q, p in _repair._PY_STRING.items()}
    with monkeypatch.context() as m:
        m.setattr(_repair.Spans, "failure", counting_failure)
        m.setattr(_repair, "_PY_STRING", strings)
        m.setattr(_repair, "PY_STRING", strings)
        got = toolgram.parse(raw, tools, max_chars=None)
    assert len(got.calls) == 2 * raw.count("[f(")  # (each value ends at the Hermes call after it)
    return count[0]


def test_single_quoted_values_left_open_before_another_formats_call_are_read_to_it_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # A bare pythonic list's single-quoted value left open, then a Hermes call, again and
    # again (R15): each value has no marker of its own after it, and was read for a break
    # to the end of the reply (the lenient pass over ever longer prefixes, and the string
    # pattern in _call_in_open_string) before the call ended it (QA22 D3).
    unit = "[f(a='x\n<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>\n"
    small, large = (_read_for_open_strings(unit * n, ["f"], monkeypatch) for n in (100, 400))
    assert small > 0
    assert large <= 4.5 * small, (small, large)


def _lenient_read(raw: str) -> int:
    """What a parse reads (characters) to tell where values break (Spans.failure)."""
    from toolgram._recover import repair as _repair

    counted = _counted(raw, _repair.Spans, "failure", lambda self, text, pos, span: len(span), tools=["f"])
    assert len(counted.result.calls) == raw.count("[f(")  # (each value ends at its call's end marker)
    return counted.weight


def test_single_quoted_values_left_open_past_their_end_marker_are_read_for_a_break_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each value's string runs on to the end of the reply, as Python reads it and as the
    # lenient pass does (the next value's `'x` an apostrophe): whether it breaks for good
    # after its own end marker, before a later marker (close._late_cut: where a stream cuts
    # it), was read to the end of the reply for each value (the square of it), where the
    # answer is the same for every value that the same first other quote follows.
    unit = "<|tool_call_start|>[f(a='x<|tool_call_end|>"
    small, large = (_lenient_read(unit * n) for n in (100, 400))
    assert small > 0
    assert large <= 4.5 * small, (small, large)


@pytest.mark.parametrize("stream", [False, True], ids=["parse", "stream"])
def test_a_storm_of_markers_with_no_blank_line_searches_back_for_a_paragraph_once(stream: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # instring._paragraph: each marker in prose after a string's opening looks back for
    # the last blank or fence line, up to LOOK characters; with none in the text, every
    # marker read LOOK characters (a 32 KB storm of cut MiniMax calls, 240 ms). The
    # search now reads on from the last marker's line: about the text's length in all.
    # In a stream too: its text is a new str at each delta, and the last search was kept
    # for one str, so each delta's marker read LOOK characters back again (8-character
    # deltas: 149 ms at 32 KB, 1.2x its budget); the stream's Reading keeps it, in the
    # reply's places.
    from toolgram._scan import instring

    unit = '<minimax:tool_call>\n<invoke name="rm_rf">\n<\n'
    toolgram.parse(unit * 3)  # (_BREAK compiled: its module name is the pattern now)
    real = instring._BREAK
    read: list[int] = []

    class Spy:
        def search(self, buf: str, lo: int, hi: int) -> Any:
            read.append(hi - lo)
            return real.search(buf, lo, hi)

    monkeypatch.setattr(instring, "_BREAK", Spy())
    raw = unit * 600
    got = streamed(raw, 8) if stream else toolgram.parse(raw)
    assert read, "the storm no longer asks _paragraph: find another shape"
    assert sum(read) < 2 * len(raw), (sum(read), len(raw))
    monkeypatch.undo()
    assert result_key(got) == result_key(toolgram.parse(raw))


def test_a_delta_of_many_python_values_cut_at_a_marker_scans_each_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A stream's Python argument value, at its first look, was scanned for its end by
    # its own _Extent, to the end of the text so far: a delta that holds many calls, each
    # value running on past the marker that cuts it (`city="Paris` then a JSON call),
    # scanned the rest of the delta once a call (bench_pathological's pythonic case*k
    # [double_quoted_string_left_open_then_another_formats_call_ends_it] fed in one
    # delta: 338 ms at 32 KB, 8x its parse, growing 3x a doubling; 1,946,021 characters
    # scanned for 19,400). The text's BracketIndex answers that first look, as a whole
    # text's does; the extent scans on only where the value waits.
    from toolgram._lalr import extent

    real = extent._Extent.advance
    read = [0]

    def counting(self: Any, s: str, base: int) -> Any:
        at = self.at
        got = real(self, s, base)
        read[0] += max(0, self.at - at)
        return got

    monkeypatch.setattr(extent._Extent, "advance", counting)
    unit = '[get_weather(city="Paris\n<tool_call>\n{"name": "search", "arguments": {"q": "cats"}}\n</tool_call>\n'
    raw = unit * 200
    got = streamed(raw, len(raw), ["get_weather", "search"])
    assert read[0] < 2 * len(raw), (read[0], len(raw))
    monkeypatch.undo()
    assert result_key(got) == result_key(toolgram.parse(raw, ["get_weather", "search"]))


def test_a_streamed_value_left_open_looks_at_its_quotes_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # _repair.quoted_end looks among the quotes after a quoted Python value's break for
    # the one its call's structure ends it at; a stream asks again at each delta, and
    # each time looked at them all from the first (`city="Paris` left open before a
    # JSON call of many quotes: bench_pathological's pythonic case*k [double_quoted_
    # string_left_open_then_another_formats_call_ends_it], 1.4x its budget). A quote
    # nothing after it ended a value at ends none whatever comes: the look reads on
    # from where it stopped (9,507 looks for 2,540 characters in 1-character deltas).
    from toolgram._recover import repair

    unit = '[get_weather(city="Paris\n<tool_call>\n{"name": "search", "arguments": {"q": "cats", "a": "b", "c": "d", "e": "f"}}\n</tool_call>\n'
    raw = unit * 20
    looked = _counted(raw, repair, "_settles", tools=["get_weather", "search"], size=1, check=None, options={})
    assert looked.calls < len(raw), (looked.calls, len(raw))
    assert result_key(looked.result) == result_key(toolgram.parse(raw, ["get_weather", "search"]))


def test_the_regions_of_a_reply_that_ends_in_a_turn_token_share_one_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each region of a reply ending in `<|eot_id|>` was read in a new copy of the reply
    # without it, and the drivers' BracketIndex, kept for one text, began anew at each:
    # calls whose braces never close scanned their brackets to the end once per call
    # (fuzz s7 i8069280, 450 such calls: 275 ms at 32 KB, 92 with one text).
    from toolgram._lalr import extent

    asked, anew = [0], [0]
    end = extent.BracketIndex.end

    def counting(self: Any, text: str, pos: int) -> Any:
        asked[0] += 1
        anew[0] += self.text is not None and text is not self.text
        return end(self, text, pos)

    monkeypatch.setattr(extent.BracketIndex, "end", counting)
    toolgram.parse('<function=get_weather>{"city": "Par<|eot_id|>\n' * 5, formats=["functionary_v31"])
    assert asked[0] >= 5  # (each call's region asks)
    assert anew[0] == 0


def test_a_long_streams_bracket_walks_keep_no_more_than_a_window() -> None:
    # The bracket walks' tokens (instring.Groups, read once a text since grp23) were kept
    # for the stream's whole life: a megabyte of prose with quoted calls that never close
    # held 27 MB more (QA23b M1). They begin anew as the stream's text is trimmed.
    unit = 'Prose "[TOOL_CALLS]f[ARGS]{"a": [ and more words with a quote " here\n'

    def peak(size: int) -> int:
        raw = (unit * (size // len(unit) + 1))[:size]
        toolgram.parse(raw[:2000], max_chars=None)  # (the grammars are built outside the count)
        tracemalloc.start()
        try:
            sp = toolgram.StreamParser(None, max_chars=None)
            for i in range(0, len(raw), 64):
                sp.feed(raw[i : i + 64])
            sp.close()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(100_000), peak(400_000)
    assert large < 2 * small, (small, large)


def test_a_regions_drivers_reading_two_texts_keep_each_ones_brackets(monkeypatch: pytest.MonkeyPatch) -> None:
    # A reply that ends in one format's end-of-turn token (Llama 3's `<|eom_id|>`): that
    # format's driver reads the reply without it, another format's the reply, in turns at
    # each region; the BracketIndex began anew at each turn, and calls whose braces never
    # close scanned their brackets to the end once per call (fuzz s7 i9329795: 214 ms at
    # 32 KB, 81 now). Each text keeps its tokens; and the two, the one the other and a
    # tail with no token in it, share them (BracketIndex._same_as): each token is read
    # once (3,844 reads for 1,922 tokens in #9329795 before).
    from toolgram._lalr import extent

    asked, anew, steps = [0], [0], [0]
    end = extent.BracketIndex.end
    step = extent._Run.step

    def counting(self: Any, text: str, pos: int) -> Any:
        asked[0] += 1
        kept, alias = self.kept, getattr(self, "alias", None)
        anew[0] += (
            self.text is not None
            and text is not self.text
            and not (kept is not None and kept[0] is text)
            and not (alias is not None and alias[0] is text)
        )
        return end(self, text, pos)

    def stepping(self: Any, index: Any) -> Any:
        steps[0] += 1
        return step(self, index)

    monkeypatch.setattr(extent.BracketIndex, "end", counting)
    monkeypatch.setattr(extent._Run, "step", stepping)
    raw = '<function=write_file>{"content": "Dear team, the build  \n\n' * 6 + "<|eom_id|>"
    toolgram.parse(raw)
    assert asked[0] >= 6  # (each call's region asks)
    assert anew[0] <= 1  # (the second text, once)
    assert steps[0] <= sum(raw.count(c) for c in "{}\"") + 1  # (each token once; the end once)


@pytest.mark.parametrize("head", ["", "```\n", "Code:\n```json\n"])
def test_a_fence_of_backticks_to_the_text_end_is_counted_once(head: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A line of backticks that runs on to the end of a stream's text: how many the fence
    # has decides whether it closes the block open before it, and each 1-character delta
    # counted the run again from its first backtick (`` ```\n`` then 16,000 backticks: 5 s).
    def weigh(self: Any, out: list, buf: str, i: int, final: bool) -> int:
        return i == 0 or buf[i - 1] == "\n"  # (a fence line's: its backticks are counted)

    raw = head + "`" * 4_000 + '\n{"name": "f", "arguments": {}}\n```'
    counted = _counted(raw, _scan.Scanner, "_fence_closes", weigh, size=1, options={})  # (parse()'s counted too)
    assert counted.weight <= 40, counted.weight


@pytest.mark.parametrize("unit", ['[f(a="x"] [g(b=1)]\n', '[f(a="x"]]\n'])
def test_values_closed_by_no_quote_nor_stop_are_not_looked_past_each(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Lists closed before their call's `)`, one a line, no tools (one region, each list the
    # driver's): each value looked on among the next 32 quotes of the reply for one a
    # value's end follows (_repair.quoted_end: 32 _settles a value), and scanned a
    # 256-character window for a `,` or `)` that the rising bracket depth never let come
    # (BracketIndex.argument_end). A quote passed over, and a window the index's trace
    # has passed, are not looked at again for the next value.
    from toolgram._lalr import extent
    from toolgram._recover import repair

    settles, windows = [0], [0]
    settle, scalar_end = repair._settles, extent.scalar_end

    def settling(*args: Any) -> Any:
        settles[0] += 1
        return settle(*args)

    def scanning(text: str, pos: int, stops: str) -> int:
        end = scalar_end(text, pos, stops)
        if len(text) == 256 and end == 256:  # (a window with no stop in it)
            windows[0] += 1
        return end

    monkeypatch.setattr(repair, "_settles", settling)
    monkeypatch.setattr(extent, "scalar_end", scanning)
    raw = unit * (16_000 // len(unit))
    lists = raw.count("[f(")
    assert len(toolgram.parse(raw).calls) >= lists
    assert settles[0] <= 6 * lists, (settles[0], lists)  # (about 4: before, 34)
    assert windows[0] <= 2, windows[0]


@pytest.mark.parametrize("unit", ['[f(a="x")] [g(b=1)]\n', '[f(a="x"] [g(b=1)]\n'])
@pytest.mark.parametrize("tail", ["[g", "[", "\n[g", "[g(b="])
def test_plain_lists_before_a_list_the_end_cuts_are_not_read_again(
    unit: str, tail: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 17: without tools a reply of bare call lists is one region; a last list the
    # end cuts right after its `[` (or inside its name) fails its reading, and the
    # salvage replayed the region from its start through the driver's own lexer, to
    # find the point after the last whole list and to read up to it again: the lists
    # pyframe.py had read were read three times more, ~6x the region's cost (32 KB:
    # 70 -> 460 ms; 200 lists: 2,412 characters fed -> 15,204). pyframe keeps a
    # Checkpoint where it hands the region to the driver after a list's `]`, and the
    # salvage replays from there: the cut list's own tokens are all it adds. (Counted
    # apart from the whole reply's: where each list is as many plain calls as the one
    # before, pyframe feeds the table none of its tokens (_again_shaped), and the whole
    # reply's count is a dozen characters; a replay of its lists would be thousands.)
    whole = _work(unit * 200, None)
    cut = _work(unit * 200 + tail, None)
    assert whole > 0
    assert cut - whole <= 64, (whole, cut)


def test_a_storm_of_tag_mentions_in_prose_runs_no_json_pass_on_their_words(monkeypatch: pytest.MonkeyPatch) -> None:
    # `<tool_call> gamma0 and <tool_call> beta1 and …` (issue 17, fzs30's mention storm):
    # at each marker Hermes's grammar reads the words up to the next one as a payload,
    # its close supplied, and the builder asks repair.loads for it. A payload whose first
    # token is a word that is no literal fails there whatever follows ("unexpected word
    # 'gamma0'", never told: a call its close was left out of), and loads says so before
    # the JSON decoder and the lenient pass run: each cost 50 us a marker, 1,309 of both
    # at 32 KB. The reading stays: prose, no error.
    from toolgram._recover import repair

    passes = {"decode": 0, "lenient": 0}
    real_reader, real_json = repair._Reader, repair._JSON

    class CountingReader(real_reader):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            passes["lenient"] += 1
            super().__init__(*args, **kwargs)

    class CountingDecoder:
        def decode(self, text: str) -> Any:
            passes["decode"] += 1
            return real_json.decode(text)

    monkeypatch.setattr(repair, "_Reader", CountingReader)
    monkeypatch.setattr(repair, "_JSON", CountingDecoder())
    words = ("gamma", "beta", "omega", "theta", "sigma", "delta", "alpha", "kappa")
    raw = "".join(f"<tool_call> {words[i % 8]}{i} and " for i in range(200))
    r = toolgram.parse(raw)
    assert (r.text, r.calls, r.errors) == (raw.strip(), [], [])
    assert passes == {"decode": 0, "lenient": 0}  # (200 of each before)
    # A payload the decoder or the lenient pass reads is read as before.
    r = toolgram.parse('<tool_call> true and <tool_call>{"name": "f", "arguments": {}}</tool_call>')
    assert [c.name for c in r.calls] == ["f"]
    assert passes["decode"] >= 1
    monkeypatch.undo()
    r = toolgram.parse("<tool_call> gamma0 and</tool_call>")
    assert r.errors == ["Couldn't read a tool call: unexpected word 'gamma0'."]


def _work_per_plain_call(raw: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, int]:
    """What parse() of raw does, counted: the plain lists pyframe reads (read_list), the
    tokens the driver's table is fed one by one (Driver._feed), the calls the builder
    reads part by part (Builder._plain), the drivers made and their runs (Driver.run),
    and the trees made (Tree objects); and the calls read."""
    from toolgram._build import builder as _builder
    from toolgram._lalr import driver as _driver
    from toolgram._lalr import tree as _tree
    from toolgram._scan import pyframe as _pyframe

    toolgram.parse(raw)  # (the grammar's table and pyframe's checks of it, made once a process, not counted)
    counts = {"read_list": 0, "feed": 0, "plain": 0, "drivers": 0, "run": 0, "trees": 0}

    def counted(name: str, fn: Any) -> Any:
        def counting(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return fn(*args, **kwargs)

        return counting

    monkeypatch.setattr(_pyframe, "read_list", counted("read_list", _pyframe.read_list))
    monkeypatch.setattr(_driver.Driver, "_feed", counted("feed", _driver.Driver._feed))
    monkeypatch.setattr(_builder.Builder, "_plain", counted("plain", _builder.Builder._plain))
    monkeypatch.setattr(_driver.Driver, "__init__", counted("drivers", _driver.Driver.__init__))
    monkeypatch.setattr(_driver.Driver, "run", counted("run", _driver.Driver.run))
    monkeypatch.setattr(_tree.Tree, "__init__", counted("trees", _tree.Tree.__init__))
    r = toolgram.parse(raw)
    monkeypatch.undo()
    assert r == toolgram.parse(raw)  # (the counting changed nothing)
    return counts, len(r.calls)


@pytest.mark.parametrize("unit,trees", [('[f(a="x")]\n', 7), ("[f()]\n", 4), ("[get_weather(city='Paris', unit=\"c\")]", 10)])
def test_a_run_of_plain_calls_written_the_same_is_read_once(unit: str, trees: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issues 17 and 20: a reply of one plain Python call list repeated (`[f(a="x")]\n`
    # * 2978 is 32 KB) cost ~22 µs a call: each list read by pyframe's patterns again,
    # its `[` and `]` fed to the table one by one, each call read by the builder part by
    # part. A list written as the one before it now takes that one's tokens at its own
    # places (pyframe's `last`), is put on the stack as the one before was (_again: no
    # token fed), and its call is read as the one before (Builder._plain_memo): each
    # done a few times a reply, not once a call. The trees a call needs are still made
    # (its own, its name's and its arguments', the list's items', and the tree of the
    # lists before, made anew around its children as the table makes it): no more.
    raw = unit * 400
    counts, calls = _work_per_plain_call(raw, monkeypatch)
    assert calls == 400
    assert counts["read_list"] <= 2, counts  # (400 before)
    assert counts["feed"] <= 12, counts  # (at least 800 before: each list's `[` and `]`)
    assert counts["plain"] <= 3, counts  # (400 before; the last, which the reply's end may cut, read so)
    assert counts["drivers"] + counts["run"] <= 2, counts
    assert counts["trees"] <= trees * calls + 20, counts


def _lexed_by_pythonic_drivers(raw: str, tools: list | None, monkeypatch: pytest.MonkeyPatch) -> tuple[int, Any]:
    """How many tokens the pythonic format's drivers looked for with their own lexer
    (Driver._lex) in parse() of raw, and the result."""
    from toolgram._lalr import driver as _driver

    count = [0]
    lex = _driver.Driver._lex

    def counting(self: Any, buf: str, final: bool, allowed: list) -> object:
        count[0] += self.fmt.name == "pythonic"
        return lex(self, buf, final, allowed)

    with monkeypatch.context() as m:
        m.setattr(_driver.Driver, "_lex", counting)
        got = toolgram.parse(raw, tools, max_chars=None)
    return count[0], got


@pytest.mark.parametrize("unit", ['[g(b=1), f(a="x", ]\n', '[f(a="x"], g(b=1)]\n\n', "[f(a='x'], g(b=\"y\")]\n"])
@pytest.mark.parametrize("tools", [None, ["f", "g"]])
def test_lists_closed_before_a_calls_paren_are_read_by_the_list_lexer(
    unit: str, tools: list | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 17: a Python call list whose last call's `)` was left out after a trailing
    # comma (`[g(b=1), f(a="x", ]`), or written as a `]` before the next call
    # (`[f(a="x"], g(b=1)]`), was read by the driver's own lexer from its last whole
    # call's `)` (or its `[`), 70-100 us a list: the slowest 32 KB replies left
    # (bench_pathological `pythonic case*k`, 156-173 ms on a loaded machine). pyframe.py
    # reads such a list now (Shut, Paren), asking the driver only the questions its lexer
    # would ask there (Driver._quoted, _comma_list_close, _bracket_for_paren...): the
    # driver lexes no token of it but near the end of the reply (Paren: within its
    # cut_closer room). Tokens lexed by the pythonic drivers, 20 -> 200 lists, before:
    # 180 -> 1,800 and 281 -> 2,801 without tools; 180 -> 180 (the storm memo's), 280 ->
    # 1,722 and 280 -> 1,638 with; now 0 -> 0 and 43 -> 43 without, 27 -> 27 and 42 -> 56
    # with. The readings are the general way's.
    from toolgram._scan import fastpath as _fastpath

    toolgram.parse(unit * 4, tools)  # (the grammars and pyframe's checks of them, outside the count)
    (small, _), (large, got) = (_lexed_by_pythonic_drivers(unit * n, tools, monkeypatch) for n in (20, 200))
    # (With tools, the storm memo's certification of a line's window, a stream's reading
    # of it, the driver's own, runs once more at 200 lists: 42 -> 56, then no more.)
    assert large <= small + 30, (small, large)
    assert len(got.calls) == 400
    _fastpath.enabled = False
    try:
        general = toolgram.parse(unit * 200, tools, max_chars=None)
    finally:
        _fastpath.enabled = True
    assert (got, got.segments) == (general, general.segments)


TRIPLE_CLOSED_EARLY = [
    '[f(a="""x"""]\n',
    "[get_weather(city=\"\"\"Paris\"\"\"]\n[get_time(tz='''UTC''']\n",
    '[g(b=1), f(a=r"""x\\y""" ]\n',
    '[f(a="""it "is" x, y)"""]\n',
    '[f(a="""x <tool_call>"""] [g(b=2)]\n',
    '[f(a="""x""", b="""y"""]\n\n',
]


@pytest.mark.parametrize("unit", TRIPLE_CLOSED_EARLY)
@pytest.mark.parametrize("tools", [None, ["f", "g", "get_weather", "get_time"]])
def test_a_triple_quoted_value_over_a_lists_bracket_is_read_once(unit: str, tools: list | None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 17: a list closed before its call's `)` after a triple-quoted value
    # (`[f(a="""x"""]`, then text) was read to its `]`, then read again from a copy of
    # the text cut there (Driver.run's LISTED: the value's Unbounded, the text up to that
    # `]` copied, the list lexed anew), each list: 126-157 ms at 32 KB (bench_pathological
    # `pythonic case*k [triple_quoted_string_then_the_list_closed_early]`). The value is
    # now taken as that reading takes it, where it is one token up to that `]` there
    # (Driver._triple_listed_whole, as _listed_whole for other values): no text is cut
    # for it (before: one cut a list, 200 at 200 lists), and the reading is the one that
    # cut text gives (the check refused: the reading it spares), whole and streamed.
    from toolgram._lalr import driver as _driver

    cuts = [0]
    unbound = _driver.Driver._unbound

    def counting(self: Any, buf: str) -> str:
        cuts[0] += 1
        return unbound(self, buf)

    raw = unit * 200
    with monkeypatch.context() as m:
        m.setattr(_driver.Driver, "_unbound", counting)
        got = toolgram.parse(raw, tools, max_chars=None)
    assert cuts[0] <= 2, cuts[0]  # (the last list's, near the end of the reply, aside)
    assert len(got.calls) >= 200
    with monkeypatch.context() as m:
        m.setattr(_driver.Driver, "_triple_listed_whole", lambda *args: False)
        cut = toolgram.parse(raw, tools, max_chars=None)
    assert (got, got.segments) == (cut, cut.segments)
    for size in (7, 64):
        sp = toolgram.StreamParser(tools, max_chars=None)
        for i in range(0, len(raw), size):
            sp.feed(raw[i : i + size])
        streamed = sp.close()
        assert (streamed, streamed.segments) == (got, got.segments), size


# Issue 17: `[f(a='x)]<tool_call>…</tool_call>][f(a='+)<|tool_call_start|>[g()]` repeated
# (tests/corpus/pythonic/string_quoted_to_a_later_lists_quote_over_another_formats_call_
# keeps_that_call): each `<|tool_call_start|>` is asked whether the string `'+)` opens
# before it quotes it, and each reading, finding the marker again after each call (a run
# of calls after a string left open: the one after tells), read every later call within
# REACH of its string's opening, 40 a marker (_Told._after's steps: 6,567 at 16 KB, about
# 40 a line). Each step from a call to the next marker's is kept (_Told._hop), and the
# next marker's reading takes up from the last one it reaches: a few steps a line.
def _quote_steps(stream: bool, size: int) -> tuple[int, int]:
    from toolgram._scan import instring

    name = "string_quoted_to_a_later_lists_quote_over_another_formats_call_keeps_that_call"
    folder = Path(__file__).parent / "corpus" / "pythonic"
    unit = (folder / f"{name}.txt").read_bytes().decode("utf-8") + "\n"
    tools = json.loads((folder / f"{name}.tools.json").read_bytes().decode("utf-8"))
    raw = unit * (size // len(unit))
    toolgram.parse(unit, tools)  # (the grammars are built outside the count)
    steps = [0]
    after = instring._Told._after

    def counted(self: Any, *args: Any) -> Any:
        steps[0] += 1
        return after(self, *args)

    instring._Told._after = counted  # type: ignore[method-assign]
    try:
        if stream:
            sp = toolgram.StreamParser(tools=tools, max_chars=None)
            for i in range(0, len(raw), 8):
                sp.feed(raw[i : i + 8])
            sp.close()
        else:
            toolgram.parse(raw, tools, max_chars=None)
    finally:
        instring._Told._after = after  # type: ignore[method-assign]
    return steps[0], raw.count("\n")


@pytest.mark.parametrize("stream", [False, True], ids=["parse", "stream"])
def test_a_run_of_calls_after_a_string_left_open_is_read_once_for_all_its_markers(stream: bool) -> None:
    steps, lines = _quote_steps(stream, 16_000)
    assert steps <= 6 * lines, (steps, lines)


def _open_parameters(fmt: Any, k: int, closed: bool) -> str:
    """A call of the format, as its header's stream_call and stream_param write it, of k
    parameters whose closes are all left out (`<parameter=q>x\n` repeated), then its
    closers (closed) or none (the reply cut): benchmarks/bench_pathological.py's
    "open parameters" shapes."""
    call_open, call_close = fmt.stream_call
    call_open = call_open.split(" | ")[0].replace("{call}", "").replace("{attrs}", "").replace("{name}", "search").replace("{id}", "0")
    param = fmt.stream_param[0].replace("{key}", "q").replace("{type}", "string" if "type=" in fmt.stream_param[0] else "true")
    start = fmt.starts[0] if fmt.starts and not call_open.startswith(fmt.starts[0]) else ""
    end = fmt.ends[0] if fmt.ends and not call_close.endswith(fmt.ends[0]) else ""
    tail = call_close + ("\n" + end if end else "") if closed else ""
    return (start + "\n" if start else "") + call_open + "\n" + (param + "x\n") * k + tail


def _work_per_parameter(fmt: Any, closed: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """Per parameter of a call of parameters whose closes were left out (what 400 cost
    more than 200): the driver's lexings, takes' simulations, the nesting check's
    readings of the openers ahead (nest._openers_ahead) and the tags it stepped over
    (nest._step, each read once per text: d.nest_chain)."""
    return _work_per_unit(lambda k: _open_parameters(fmt, k, closed), ["search"], monkeypatch)


def _work_per_unit(raw_of: Any, tools: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """_work_per_parameter's counts, per unit of the reply raw_of(k) (k = 200, 400)."""
    from toolgram._lalr import driver as _driver
    from toolgram._lalr import nest as _nest

    counts: dict[str, int] = {}

    def counted(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] = counts.get(name, 0) + 1
            return fn(*args, **kwargs)

        return wrapper

    got = []
    with monkeypatch.context() as m:
        m.setattr(_driver.Driver, "_lex", counted("lex", _driver.Driver._lex))
        m.setattr(_driver, "takes", counted("takes", _driver.takes))
        m.setattr(_nest, "_openers_ahead", counted("openers_ahead", _nest._openers_ahead))
        m.setattr(_nest, "_step", counted("step", _nest._step))
        walk_on = _nest._walk_on

        def walked(d: Any, nest: Any, buf: str, x: int, count: int, index: dict, starts: list, mets: list, tolds: list) -> int:
            # (The tags the walk was read on by here, each a step: those _walk_on found at
            # once, and those it asked _step for, counted there.)
            before, asked = len(mets), counts.get("step", 0)
            out = walk_on(d, nest, buf, x, count, index, starts, mets, tolds)
            counts["step"] = counts.get("step", 0) + max(0, len(mets) - before - (counts.get("step", 0) - asked))
            return out

        m.setattr(_nest, "_walk_on", walked)
        for k in (200, 400):
            counts.clear()
            toolgram.parse(raw_of(k), tools)
            got.append(dict(counts))
    return {name: (got[1].get(name, 0) - got[0].get(name, 0)) / 200 for name in ("lex", "takes", "openers_ahead", "step")}


@pytest.mark.parametrize("closed", [False, True], ids=["cut", "closed"])
@pytest.mark.parametrize("name", sorted(n for n, f in default_registry().formats.items() if f.stream_param is not None))
def test_open_parameters_do_bounded_work_each(name: str, closed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 17: a call of parameters whose closes were all left out (the bench's "open
    # parameters" shapes) was just over 50 ms at 32 KB; the work per parameter is counted
    # here, not timed. Each value's nesting check (_deep_run) asked _openers_ahead for the
    # dozen openers after it, which read its walk on by one tag each time: now the walk
    # is read on in batches and answers at once, about one reading in 4k = 48 values
    # (_walk_on). The tag reader asked takes at each reduction of a tag's tokens (2 to 5
    # a tag): now told once per grammar (the tag step's `sure`). The lexer reads each
    # value once (the tag reader its tag; GLM/Hunyuan/Kimi's tags are the lexer's), and
    # the walk steps each tag once (_walk_on, or _step).
    from toolgram._lalr import tagread as _tagread

    fmt = default_registry().formats[name]
    work = _work_per_parameter(fmt, closed, monkeypatch)
    assert work["openers_ahead"] <= 0.04, work  # (k = 12 openers read on at a time: 0.08)
    assert work["step"] <= 3.1, work  # (GLM's: three tags a parameter)
    # (cofl's value tags, `<cofl:value name="q" type="string">` after a value, were the
    # lexer's, a token each, thirteen a parameter: the reader took the state there for
    # "not sure", its `_VALUE` reached by two reductions to one state (tagread._shifts_plain),
    # and the parse was 65-75 ms at 32 KB.)
    if _tagread.reader(fmt.compiled) is not False:
        assert work["lex"] <= 1.15, work
        assert work["takes"] <= 0.1, work
    else:
        assert work["lex"] <= {"kimi_k3_open_close": 13.1}.get(name, 5.1), work  # (GLM's five tokens a parameter; Kimi K3's thirteen)


def _distinct_cut_calls(fmt: Any, k: int) -> str:
    """k calls of the format, each cut in its one parameter's value, the values all
    different, each written three times (`<function=f>\n<parameter=city>Nanj7` ...): the
    storm memo (_scan/storm.py) shares no region's reading."""
    call_open = fmt.stream_call[0].split(" | ")[0].replace("{call}", "").replace("{attrs}", "").replace("{name}", "get_weather").replace("{id}", "0")
    param = fmt.stream_param[0].replace("{key}", "city").replace("{type}", "string" if "type=" in fmt.stream_param[0] else "true")
    start = fmt.starts[0] if fmt.starts and not call_open.startswith(fmt.starts[0]) else ""
    unit = (start + "\n" if start else "") + call_open + "\n" + param
    return "".join(unit + "Nanj%d" % (i // 3) for i in range(k))


@pytest.mark.parametrize("name", sorted(n for n, f in default_registry().formats.items() if f.stream_param is not None))
def test_cut_calls_of_distinct_values_step_each_opener_once(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 17: a storm of calls each cut in its value, the values all different (the
    # memo shares none): each value left open is decided by the dozen openers after it
    # (nest._deep_run), and each call is a region of its own, a driver of its own. The
    # walk of the openers (nest._openers_ahead, read on by four dozen at a time) was the
    # driver's: each call's driver stepped some 60 openers again (150-380 ms at 32 KB,
    # no tools). It is the text's now (shared by the drivers of one text: Scanner.
    # nest_walks), each opener stepped about once: 0-4 steps a call (two to four tags),
    # where each call's driver took 27-62.
    fmt = default_registry().formats[name]
    work = _work_per_unit(lambda k: _distinct_cut_calls(fmt, k), None, monkeypatch)
    assert work["step"] <= 4.5, work
    assert work["openers_ahead"] <= 0.3, work


@pytest.mark.parametrize("size", [1, 8])
def test_a_stream_of_open_parameters_reads_each_value_at_few_deltas(size: int) -> None:
    # Issue 17: in a stream, a value whose close was left out is held until the dozen
    # openers after it are told (_DEPTH), each looked at when the text settles it
    # (nest._settled). A tag whose name had not all come yet was looked at again each
    # eighth of the text after it; its look runs to a `<`, `>` or line break after the
    # tag, so nothing is settled before one comes. Cohere's `<cofl:value name="q"
    # type="string">x` repeated read each value 4.4 times in 8-character deltas, 5 in
    # 1-character ones (the stream 2.7-4.3x its parse); now 2.1 and 3 (counted per
    # parameter: 400 less 200). And once the tag's `>` came, it waits for the two
    # characters its look reads past it (nest._ShutQuiet), not the next delta.
    from toolgram._lalr import nest

    fmt = default_registry().formats["cohere_cofl_xml"]
    per = [_counted(_open_parameters(fmt, k, True), nest, "through_nest", tools=["search"], size=size).calls for k in (200, 400)]
    assert (per[1] - per[0]) / 200 <= {1: 3.1, 8: 2.2}[size], per


def _walk_by_step(d: Any, nest: Any, buf: str, x: int, count: int, walk: tuple) -> int:
    """The walk read on from x by _step alone, as _openers_ahead read it before _walk_on."""
    from toolgram._lalr import nest as _nest

    index, starts, mets, tolds = walk
    for _ in range(count):
        got = _nest._step(d, nest, buf, x)
        if got is None or got[2] is None:
            break
        index[x] = len(mets)
        starts.append(got[1])
        mets.append((got[2], got[3]))
        told = x + len(got[0])
        tolds.append(told if told > tolds[-1] else tolds[-1])
        x = got[3]
    return x


@pytest.mark.parametrize("name", sorted(n for n, f in default_registry().formats.items() if f.nests))
def test_the_walk_read_on_in_one_search_steps_as_step_does(name: str) -> None:
    # Issue 17: the nesting check's walk was read on one _step at a time, and _step
    # searched three times at each tag (the tag, the character that tells it, whether it
    # closes itself): a call of parameters whose closes were left out paid that at each
    # parameter. _walk_on reads the walk on from one search of the tags, asking _step only
    # for a step of another kind. It must keep the walk _step's loop keeps, and the
    # steps it notes (d.nest_chain) must be _step's, for texts of the format's tags, self-
    # closing ones, tags whose look runs past the text's end or past the look, and pairs.
    import random
    from types import SimpleNamespace

    from toolgram._lalr import nest as _nest

    nest = default_registry().formats[name].compiled.nest
    if nest is None:
        pytest.skip("no raw value the tags may nest in")
    tags = list(nest.closer_of)
    openers = [t for t in tags if nest.closer_of[t] in nest.own]
    pieces = [*tags, *openers * 4, "/", ">", "/>", "\n", "<", "x", " ", "=q>", ' name="a">', "y" * 150, "z" * 159, "w" * 161]
    rnd = random.Random(17)
    for _ in range(300):
        buf = "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 30)))
        for x in sorted({0, rnd.randrange(len(buf))}):
            count = rnd.choice([1, 3, 12, 48])
            want, got = ({}, [], [], [0]), ({}, [], [], [0])
            d = SimpleNamespace(nest_chain={})
            end = _walk_by_step(SimpleNamespace(nest_chain={}), nest, buf, x, count, want)
            assert _nest._walk_on(d, nest, buf, x, count, *got) == end, (buf, x, count)
            assert got == want, (buf, x, count)
            for at, step in d.nest_chain.items():
                # (A None _step told is kept as (None, the text that told it): see _told_none.)
                assert step[0] is not None or step[1] is buf, (buf, at)
                assert _nest._step(SimpleNamespace(nest_chain={}), nest, buf, at) == (None if step[0] is None else step), (buf, at)
        # (_step's one search: after each tag, the character _SHUT finds within the look,
        # and whether the tag closes itself, as _SELF_CLOSING tells.)
        for m in _nest._tags_shut(nest.tags).finditer(buf):
            e, shut = m.end(), m.start(1)
            found = _nest._SHUT.search(buf, e, e + _nest._SELF_CLOSING_READ - 1)
            assert shut == (-1 if found is None else found.start()), (buf, e)
            if shut >= 0:
                closes = _nest._SELF_CLOSING.match(buf, e, e + _nest._SELF_CLOSING_READ) is not None
                assert closes == (buf[shut] == ">" and shut > e and buf[shut - 1] == "/"), (buf, e)


def test_a_held_reasoning_block_searches_for_its_call_marker_from_that_marker() -> None:
    # A stream's reasoning block not closed so far, held at a reasoning tag that a string
    # open before it may quote (Scanner._quoted_tag), its first call marker already in the
    # text: each wake (a delta with a closer's first character) searched the text from the
    # tag to that marker again (rv34: 600,000 characters for 300 deltas after 2,000). The
    # first marker is still that one: found again from a marker's length before it
    # (Scanner.call_scan).
    from toolgram._stream.parser import StreamParser

    class Counting:
        def __init__(self, rx: Any) -> None:
            self.rx, self.chars = rx, 0

        def search(self, buf: str, pos: int = 0, *rest: int) -> Any:
            m = self.rx.search(buf, pos, *rest)
            self.chars += (m.start() if m is not None else rest[0] if rest else len(buf)) - pos
            return m

        def __getattr__(self, name: str) -> Any:
            return getattr(self.rx, name)

    head = '<think>Let me call f("<|im_end|> ' + "y " * 1000
    head += '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    deltas = [head] + [" <b>x"] * 300
    sp = StreamParser(None)
    sc = sp._scanner
    sc.call_re = counting = Counting(sc.call_re)
    for delta in deltas:
        sp.feed(delta)
    sp.flush()
    assert result_key(sp.close()) == result_key(toolgram.parse("".join(deltas)))
    assert counting.chars <= len(head) + 100 * len(deltas), counting.chars


def _parse_at(depth: int, raw: str, tools: Any) -> Any:
    """parse(raw, tools) called from `depth` frames further down the stack."""
    return _parse_at(depth - 1, raw, tools) if depth else toolgram.parse(raw, tools)


@pytest.mark.parametrize("tools", [["f", "unrelated_tool", "calc"], None])
@pytest.mark.parametrize("pairs", [300, 485])
def test_a_reading_does_not_depend_on_the_callers_stack(pairs: int, tools: Any) -> None:
    # The C JSON decoder counts each container it opens against the recursion limit
    # Python's frames share: a cut value ~970 containers deep (fuzz seed 7 #99647569)
    # was decoded, then refused as too deep, when parse() was called near the top of
    # the stack, and raised RecursionError (read otherwise: no error) when called 50
    # frames down; a stream, further down, disagreed with parse(). No value deeper than
    # jsonscan.DECODER_DEPTH reaches the decoder now: the same reading from anywhere.
    raw = '{"name": "f", "arguments": {"a": ' + '[{"a": ' * pairs + "[]"
    results = [result_key(_parse_at(depth, raw, tools)) for depth in (0, 50, 200, 400)]
    assert all(result == results[0] for result in results)
    assert result_key(streamed(raw, 64, tools)) == results[0]


def _nested_call(family: str, n: int, closed: bool) -> str:
    """A call of f whose argument `a` nests n containers deep, in `family`'s notation;
    closed, or cut by the end of the reply inside the innermost container."""
    lists = "[" * n + "1" + ("]" * n if closed else "")
    loose = "{a:" * n + "1" + ("}" * n if closed else "")
    mm3 = "]<]minimax[>["
    shapes = {
        "gemma4_call": ("<|tool_call>call:f{a:", loose, "}<tool_call|>"),
        "functiongemma_call": ("<start_function_call>call:f{a:", loose, "}<end_function_call>"),
        "qwen3_coder_xml": ("<tool_call>\n<function=f>\n<parameter=a>\n", lists, "\n</parameter>\n</function>\n</tool_call>"),
        "glm45_arg_kv": ("<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>", lists, "</arg_value>\n</tool_call>"),
        "minimax_m2_invoke": ('<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">', lists, "</parameter>\n</invoke>\n</minimax:tool_call>"),
        "minimax_m3_nested_xml": (
            f'{mm3}<tool_call>\n{mm3}<invoke name="f">' + f"{mm3}<a>" * n + "1",
            "",
            f"{mm3}</a>" * n + f"{mm3}</invoke>\n{mm3}</tool_call>",
        ),
        "minimax_m3_json_leaf": (  # (elements half the depth, a JSON list in the innermost the rest)
            f'{mm3}<tool_call>\n{mm3}<invoke name="f">' + f"{mm3}<a>" * (n // 2),
            "[" * (n - n // 2) + "1" + ("]" * (n - n // 2) if closed else ""),
            f"{mm3}</a>" * (n // 2) + f"{mm3}</invoke>\n{mm3}</tool_call>",
        ),
        "hermes": ('<tool_call>{"name": "f", "arguments": {"a": ', lists, "}}</tool_call>"),
        "mistral": ('[TOOL_CALLS]f[ARGS]{"a": ', lists, "}"),
        "pythonic": ("[f(a=", lists, ")]"),
        "kimi_k2": (
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{\"a\": ",
            lists,
            "}<|tool_call_end|><|tool_calls_section_end|>",
        ),
    }
    head, value, tail = shapes[family]
    return head + value + (tail if closed else "")


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "cut"])
@pytest.mark.parametrize("n", [100, 255, 257, 400, 600])
@pytest.mark.parametrize(
    "family",
    ["gemma4_call", "functiongemma_call", "qwen3_coder_xml", "glm45_arg_kv", "minimax_m2_invoke",
     "minimax_m3_nested_xml", "minimax_m3_json_leaf", "hermes", "mistral", "pythonic", "kimi_k2"],
)  # fmt: skip
def test_no_reading_depends_on_the_stack(family: str, n: int, closed: bool) -> None:
    # Issue 17: a reader's own depth limit (VALUE_DEPTH, 256; the JSON decoder's guard,
    # jsonscan.DECODER_DEPTH) trips before the interpreter's, for a caller up to 600
    # frames down, so what parse() reads is a function of the text alone there. Before:
    # Gemma's loose values recursed two frames a level (a call with the argument dropped,
    # no error, from 300 frames down, where the top refused it as nested too deeply), and
    # an XML parameter's JSON value 257-512 deep, refused at the top, was read as a
    # string from 650 frames down (the C decoder's RecursionError), and a nested
    # element's JSON value as deep as the elements' recursion left the decoder room for.
    raw = _nested_call(family, n, closed)
    results = [result_key(_parse_at(depth, raw, ["f"])) for depth in (0, 300, 600)]
    assert results[1] == results[0]
    assert results[2] == results[0]
    assert result_key(_stream_at(600, raw, ["f"])) == results[0]


def _stream_at(depth: int, raw: str, tools: Any) -> Any:
    """streamed(raw, 64, tools) called from `depth` frames further down the stack."""
    return _stream_at(depth - 1, raw, tools) if depth else streamed(raw, 64, tools)


def _frames() -> int:
    """How many frames the stack holds here."""
    frame, n = sys._getframe(), 0
    while frame is not None:
        frame, n = frame.f_back, n + 1
    return n


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "cut"])
@pytest.mark.parametrize("n", [50, 255])
@pytest.mark.parametrize(
    "family",
    ["gemma4_call", "functiongemma_call", "qwen3_coder_xml", "glm45_arg_kv", "minimax_m2_invoke",
     "minimax_m3_nested_xml", "hermes", "mistral", "pythonic", "kimi_k2"],
)  # fmt: skip
def test_a_caller_deeper_still_gets_the_reading_or_an_error(family: str, n: int, closed: bool) -> None:
    # Past what test_no_reading_depends_on_the_stack covers (a caller within ~150
    # frames of the recursion limit), a value deep enough to reach the limit is no
    # reading of the text: the call is refused ('nested too deeply'), never read
    # otherwise. Before: a Gemma value cut by the end of the reply was salvaged to
    # f({}) with dropped_partial_argument, an XML parameter's JSON list read as a string.
    raw = _nested_call(family, n, closed)
    top = result_key(toolgram.parse(raw, ["f"]))
    for room in (150, 100, 70):
        result = _parse_at(sys.getrecursionlimit() - _frames() - room, raw, ["f"])
        assert result_key(result) == top or (not result.calls and result.errors), room


def _bracket_scan_turns(raw: str, tools: Any) -> int:
    """How many matches the bracket scans (extent's _BRACKET_SCAN: value_end, open_before;
    jsonscan's _NESTING: the decoder's depth guard; the builder's _shallow) give a parse of
    raw: each a turn of a loop in Python."""
    from toolgram._lalr import extent as _extent, jsonscan as _jsonscan

    turns = [0]

    class Counting:
        def __init__(self, pattern: Any) -> None:
            self.pattern = pattern

        def finditer(self, *args: Any) -> Any:
            for m in self.pattern.finditer(*args):
                turns[0] += 1
                yield m

        def __getattr__(self, name: str) -> Any:
            return getattr(self.pattern, name)

    with pytest.MonkeyPatch.context() as m:
        _extent.value_end("[]", 0)  # (the lazy pattern compiled, its name bound)
        m.setattr(_extent, "_BRACKET_SCAN", Counting(_extent._BRACKET_SCAN))
        m.setattr(_jsonscan, "_NESTING", Counting(_jsonscan._NESTING))
        m.setattr(_extent, "outside_strings", _counting_gen(_extent.outside_strings, turns))
        from toolgram._build import builder as _builder

        m.setattr(_builder, "outside_strings", _counting_gen(_builder.outside_strings, turns))
        toolgram.parse(raw, tools, max_chars=None)
    return turns[0]


def _counting_gen(real: Any, turns: list) -> Any:
    def counting(*args: Any) -> Any:
        for item in real(*args):
            turns[0] += 1
            yield item

    return counting


@pytest.mark.parametrize(
    "head,unit,tail",
    [
        ("```json\n", "[", "]"),  # (fuzz s7 #109016912: 32 KB, 114 -> 33 ms with tools)
        ("<tool_call>", "[", "]"),  # (#109036358)
        ("<tool_call>", "{", "}"),  # (#109027382)
    ],
    ids=["fence-lists", "tool_call-lists", "tool_call-objects"],
)
def test_deep_brackets_are_counted_a_run_at_a_time(head: str, unit: str, tail: str) -> None:
    # A value nested past the decoder's depth is read by the bracket scans, one Python turn
    # a bracket: 32 KB of `[[[…]]]` was 32,000 turns, several times a region. A run of
    # brackets is one turn.
    for n in (4_000, 16_000):
        raw = head + unit * n + tail * (n // 2)
        assert _bracket_scan_turns(raw, ["calc", "search"]) <= 200, n


def _tail_searched(raw: str, tools: Any) -> int:
    """The characters Driver._call_in_tail's searches for a call after a payload's JSON
    (its format's call_re, in _call_in_tail and _call_after_open) read over a parse."""
    from toolgram._lalr import driver as _driver

    read = [0]
    proxies: dict = {}

    class Counting:
        def __init__(self, pattern: Any) -> None:
            self.pattern = pattern

        def search(self, buf: str, at: int, end: int) -> Any:
            m = self.pattern.search(buf, at, end)
            read[0] += (end if m is None else m.start()) - at
            return m

        def __getattr__(self, name: str) -> Any:
            return getattr(self.pattern, name)

    real = _driver.Driver._call_in_tail

    def counting(self: Any, buf: str, pos: int, end: int, call_re: Any, closed: bool = False) -> int:
        proxy = proxies.setdefault(id(call_re), Counting(call_re))  # (one a pattern: memos key on it)
        return real(self, buf, pos, end, proxy, closed)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(_driver.Driver, "_call_in_tail", counting)
        toolgram.parse(raw, tools, max_chars=None)
    return read[0]


def test_a_payloads_tail_is_searched_once_for_all_the_regions_candidates() -> None:
    # `[[[…` after ```json: each candidate format of the region (fenced_json, pythonic's
    # fence, ...) searched the never-closing payload to its end for a call after it, one
    # search of every marker (1 µs a character: 22 ms each at 32 KB).
    raw = "```json\n" + "[" * 16_000 + "]" * 8_000
    assert _tail_searched(raw, ["calc", "search"]) <= 1.2 * len(raw)


@pytest.mark.parametrize(
    "unit, tools",
    [
        # (The corpus case list_broken_offered_call_then_the_same_tool_called_on_the_next_
        # line_keeps_that_call_with_tools, a line: the broken list's last value,
        # `[get_weather(city="Paris")]` and every line after it, runs on to the end of the
        # reply; the next line's list is read on its own.)
        ('[get_weather("Paris"), search(q="x"),\n[get_weather(city="Paris")]\n', ["get_weather"]),
        ('[get_weather("Paris"), search(q="x"),\n[get_weather(city="Paris")]\n', ["get_weather", "search"]),
    ],
    ids=["offered", "both_offered"],
)
def test_lists_whose_last_value_runs_to_the_end_are_read_through_the_storm_memo(unit: str, tools: list) -> None:
    # Each broken line's region read its last value to the end of the reply, so a stream's
    # reading of the storm memo's window waited on it and the key was refused: each region
    # was read and salvaged anew (a salvage a line, 336-388 ms at 32 KB). Now a whole
    # text's certification notes the value (storm._tail) and each region the outcome is
    # given to checks that its value runs to the end of that reply too (storm._tail_hold):
    # the salvages are the certification's, however long the reply.
    from toolgram._scan import salvage as _salvage
    from toolgram._scan import storm as _storm

    def salvages(size: int) -> Counted:
        return _counted(unit * (size // len(unit)), _salvage, "salvage", tools=tools)

    small, large = salvages(4_000), salvages(16_000)
    assert large.calls <= 8 and large.calls == small.calls, (small.calls, large.calls)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_storm, "enabled", False)
        assert small.result == toolgram.parse(unit * (4_000 // len(unit)), tools, max_chars=None)  # (the memo's outcome is the reading's)


def _fence_storm() -> str:
    """A few kinds of code fence, each after a line's own words (issue 17, the fuzz's fence
    storms: thousands of fences, a hundred region texts, each after different text)."""
    import random

    rng = random.Random(17)
    words = ["Step", "Then", "Note", "Also", "Next", "Here", "Look", "Done", "Okay", "Then again", "Well"]
    blocks = ['```{"name": "f", "parameters": {}}```', "```a=1```", "``` ```", "```[{```", "```to=functions.f```", "```f(a=1, b='x')```"]
    parts: list = []
    size = 0
    while size < 16_000:
        parts.append(f"{rng.choice(words)} {rng.randrange(1000)}: " + rng.choice(blocks) + "\n")
        size += len(parts[-1])
    return "".join(parts)


def test_a_fence_storm_after_varied_text_reads_each_region_text_few_times(monkeypatch: pytest.MonkeyPatch) -> None:
    # The storm memo's key held the 50 characters before each marker (the longest reasoning
    # tag's width), so no two of these regions shared one and each was read (1,111 regions
    # for 1,194 fences); its key now holds what a region's reading reads back from its
    # marker (storm._behind), and the region texts come again.
    from toolgram._scan import region as _region

    raw = _fence_storm()
    built = [0]
    init = _region.RegionReader.__init__

    def counting(self: object, *args: Any, **kwargs: Any) -> None:
        built[0] += 1
        init(self, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(_region.RegionReader, "__init__", counting)
        toolgram.parse(raw)
    assert built[0] <= raw.count("```") // 2, (built[0], raw.count("```"))


@pytest.mark.parametrize(
    "unit",
    [
        '[f(a="x", g(b=1), h() x]\n',
        '[f(a="y", 4)]\n[f(a="x", g(b=1), h() x]\n\n',
        '[f(a="x", g(b=1), h() x]\n[f(a="x", g(b=1), h() x]\n\n',
    ],
)
def test_lists_of_calls_positional_after_keyword_are_read_once(unit: str) -> None:
    # bench_pathological's pythonic case*k [keyword_then_…_without_tools]: every call of
    # the region breaks (a positional value after a keyword one), and the region was
    # built three times (its own reading, then two salvage replays that share most of its
    # call nodes), each call read anew, and each call's value parsed by ast.parse
    # (_keyword_first): 227-290 ms at 32 KB. A replay's build tells the calls an earlier
    # build found so broken from their nodes (Builder.failed_memo), and a value's look is
    # kept by its text.
    import ast

    from toolgram._build import builder as _builder

    raw = unit * 100
    calls = raw.count("[f(")
    read, _, result = _counted(raw, _builder.Builder, "_call")
    assert read < calls + 60, (read, calls)
    assert result.errors and not result.calls
    _builder._whole_value.cache_clear()
    parsed, _, again = _counted(raw, ast, "parse")
    assert parsed < 10, parsed
    assert result_key(again) == result_key(result)


@pytest.mark.parametrize(
    "head",
    [
        "<think>I will look it up. ",
        "[THINK]I will look it up. ",
        "<|channel|>analysis<|message|>I will look it up. ",
    ],
)
def test_a_reasoning_block_held_from_a_call_marker_does_not_look_at_every_tag_each_delta(head: str) -> None:
    # In a reasoning block that has not closed, a stream shows the text up to the first
    # call marker and holds the rest. Each delta after the marker asked every reasoning
    # tag of every format whether it held that place (_tag_over, 19 searches) and every
    # end-of-turn token whether it ended the text (_turn_end_at, 18), though nothing
    # more could show: ~20 µs a character (fuzz seed 7 #112005889, #112001430).
    from toolgram._scan.scanner import Scanner

    raw = head + '<tool_call>{"name": "search", "arguments": {"q": "' + "a<b [c] " * 200 + '"}}</tool_call> and more text'
    for name in ("_tag_over", "_turn_end_at"):
        looks = _counted(raw, Scanner, name, size=1).calls
        assert looks <= 64, (name, looks)


def test_a_broken_frame_waiting_for_its_end_marker_is_not_read_again_at_every_letter() -> None:
    # A frame broken before its end marker (DSML's `invoke name>`, no name) waits for that
    # marker or a call's: only a whole one decides it. The wait let through every delta
    # within 48 characters of a marker's first character, `a`, `c` and `f` among them
    # (`assistant`, `call:`, `functools`): in prose, every delta, each of which read the
    # region again (fuzz seed 7 #112002015, 13 µs a character). Now one that completes no
    # marker is put aside, a start of one at its end held for the next.
    from toolgram._scan.region import RegionReader

    raw = "<｜DSML｜ calls>\n<｜DSML｜ invoke name>\n" + "a cat fed facts to a calm fox. " * 40
    reads = _counted(raw, RegionReader, "run", size=1).calls
    assert reads <= 100, reads


def test_a_message_start_held_in_a_reasoning_block_is_not_tested_again_each_delta() -> None:
    # Harmony's `<|start|>` and `<|channel|>` close an analysis block only where a message
    # starts there and is not quoted in it (_not_quoted: a closer of the block after it
    # tells). While none has come, a stream held the block there, and each delta matched
    # the format's opening test again at each of them (marker_opens, told already) and
    # searched the text after them for a closer (fuzz seed 7 #112001430, #112000368).
    from toolgram._scan import scanner as _scanner

    raw = (
        "<|channel|>analysis<|message|>The header would be <|start|>assistant<|channel|>commentary "
        'to=functions.f <|constrain|>json<|message|>{"a": 1}' + " so a < b and b < c" * 60
    )
    assert _counted(raw, _scanner, "marker_opens", size=1).calls <= 64
    # (the look after them: _quoted_look, which _not_quoted asks only where the text since
    # its last look holds a closer; all of _not_quoted before)
    look = "_quoted_look" if hasattr(_scanner.Scanner, "_quoted_look") else "_not_quoted"
    assert _counted(raw, _scanner.Scanner, look, size=1).calls <= 64


def test_message_starts_in_a_row_of_analysis_blocks_are_each_tested_once_per_text() -> None:
    # Each harmony message here starts inside the analysis block before it (its `<|end|>`
    # left out): the block's `<|start|>` and `<|channel|>` close it only where a message
    # may start there, which a stream's text tells only some characters on (the opening
    # test matches a part of it). Each delta matched that test again, at the `<|start|>`
    # and at the `<|channel|>` after it, whose answer changes nothing while the one before
    # is untold: ~40 tests in each 49-character message, 12-19 µs a delta (fuzz seed 7
    # #112005352). Now a closer after an untold one is not asked, and the answer to a text
    # asked before (the same header, a character more at a time) is not matched again.
    from toolgram._scan import scanner as _scanner

    raw = "<|start|>assistant<|channel|>analysis<|message|>@" * 16
    assert _counted(raw, _scanner, "marker_opens", size=1).calls <= 64


def _pipeline_calls(raw: str) -> int:
    """The calls parse(raw) makes of _pipeline.py's own code (a generator's each step
    counted: its comparisons, one by one), the result checked for its segments' kinds."""
    from toolgram import _pipeline

    count = [0]
    own = _pipeline.__file__

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call" and frame.f_code.co_filename == own:
            count[0] += 1

    sys.setprofile(profile)
    try:
        result = toolgram.parse(raw, None, max_chars=None)
    finally:
        sys.setprofile(None)
    assert result.calls and result.errors  # (one region: calls given, calls refused)
    return count[0]


@pytest.mark.parametrize("unit", ['[g()]\n[f(a="x", g(b=1), h() x]\n\n', '[g()]\n[f(a="x", 4)]\n'])
def test_a_region_of_calls_given_and_refused_takes_its_segments_in_linear_work(unit: str) -> None:
    # bench_pathological's pythonic case*k [whole_list_then_a_broken_list_…_without_tools]:
    # lists in a row are one region, a call given and one refused a unit. The refused
    # calls' markup was split from the calls given by asking each refusal about every
    # call given (_split_refused) and each piece of markup about every call given
    # (_markup_kinds): the square of the reply, 4 -> 16 KB 16x (~60 ms at 32 KB). Each
    # asks a search of the spans by their start now (_Overlaps).
    small, large = (_pipeline_calls(unit * (size // len(unit))) for size in (4_000, 16_000))
    assert small > 0
    assert large <= 4.5 * small, (small, large)


def test_a_storm_of_lines_of_two_markers_finds_each_key_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # ```` ```json\n[{"a": 1}\n ```` repeated, with tools (qa48's shape, 74 ms at 32 KB):
    # each line holds two markers of the memo, the fence and the line's `[`, in turn.
    # parse() kept the last key found (storm._key_at) for one marker only, so each region
    # found its key anew (storm.key_of: 3,641 at 32 KB); it keeps one a marker now.
    from toolgram._scan import storm as _storm

    raw = ('```json\n[{"a": 1}\n' * 2000)[:32768]
    tools = ["f", "get_weather"]
    found = [0]
    key_of = _storm.key_of

    def counting(*args: Any, **kwargs: Any) -> Any:
        found[0] += 1
        return key_of(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(_storm, "key_of", counting)
        got = toolgram.parse(raw, tools)
    assert found[0] <= 64, found[0]
    with monkeypatch.context() as m:
        m.setattr(_storm, "enabled", False)
        assert result_key(got) == result_key(toolgram.parse(raw, tools))


def test_a_remembered_region_whose_call_is_followed_by_more_of_it_leaves_read_to_at_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    # A Cohere region: its call, then `<|END_RESPONSE|>` and an object glued to it, both
    # the region's; then a call object on the next line. The usual reading ends the
    # region at its end (Scanner._end_region: read_to there); the memo's replay left
    # read_to at the call's end (_noted's after_call), so _after_object took the glued
    # object's `}` for the model's prose before the next line's call and declined that
    # call: parse() read 10 calls where the reading without the memo, and a stream, read
    # 12 (and the stream in 7-character deltas 11). mb52-readto (6c61c20f).
    from toolgram._scan import storm as _storm

    unit = '<|START_ACTION|>{"tool_name": "f", "parameters": {}}<|END_RESPONSE|>{"name": "f", "arguments": {}}\n{"name": "f", "arguments": {}}\n'
    raw = unit * 6
    got = toolgram.parse(raw, ["f"])
    with monkeypatch.context() as m:
        m.setattr(_storm, "enabled", False)
        assert result_key(got) == result_key(toolgram.parse(raw, ["f"]))
    assert len(got.calls) == 12
    for size in (1, 7, 64):
        assert result_key(streamed(raw, size, ["f"])) == result_key(got), size


def test_a_region_cut_at_a_marker_is_not_built_again_while_the_region_there_waits() -> None:
    # A Cohere region's value cut at Harmony's `<|channel|>` (_close.cut), its close left
    # out: the region is a call only where that marker begins none (begins_call), which a
    # stream learns once that region's reading tells. Each delta until then read the
    # region and built it again before asking (fuzz seed 7 #112002410: 54 builds in 229
    # characters, 30 µs a delta). Now the next delta asks the region at the cut alone.
    from toolgram._scan.region import RegionReader

    raw = '<|START_ACTION|>[{<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": "' + "so a < b and c " * 20
    assert _counted(raw, RegionReader, "decode", size=1).calls <= 20


def test_a_value_of_no_loop_shape_held_at_a_quoted_tag_is_not_read_again_each_delta() -> None:
    # MiniMax's INLINE_VALUE has no loop shape (growth.py): its reading through the tags
    # of a value that begins with an `<invoke …>` it quotes is settled only _EDGE
    # characters before the end, and waited with nothing to tell which delta may change
    # it: each delta lexed the value again, every terminal the state takes (fuzz seed 7
    # #112003273, 28 µs a delta). Now a delta with no tag's first character waits, until
    # the text is long enough for the settled edge to pass where the reading stopped.
    from toolgram._lalr import nest

    raw = '<minimax:tool_call>\n<invoke name="write">\n<parameter name="content"><invoke name="rm"><parameter name="path">' + "/tmp/a b/c " * 20 + "</parameter></invoke> then lo"
    assert _counted(raw, nest, "through_nest", size=1).calls <= 80


def test_a_broken_frame_whose_failure_waits_on_its_end_marker_is_not_read_again_each_delta() -> None:
    # An MFCS frame broken at a close tag that is none (`</par-ameters>`): no candidate
    # reads it, and its failure waits on the format's end marker or a call's (mention.
    # settle_failure). Each delta read every driver again and asked the salvage before
    # that wait (fuzz seed 7 #112004220, 12 µs a delta); now the next delta asks the wait
    # alone.
    from toolgram._scan.region import RegionReader

    raw = '<mfcs_tool><name>note</name><parameters>{"body": "hi"}</par-ameters><instructions>Save it\nSaved. ' + "The note is stored under your account. " * 8
    assert _counted(raw, RegionReader, "_read", size=1).calls <= 100


@pytest.mark.parametrize("unit", ["[]\n", "[1] see the note\n", "[see above]\n", "```text\n[]\n```\n[]\n"])
def test_lines_no_call_begins_on_are_prose_without_a_look_at_their_fences(unit: str) -> None:
    # bench_pathological's pythonic case*k [empty_list] with its tools: every line's `[`
    # opens no call (the formats' opening tests tell), but _in_prose read the fences of
    # the prose up to each first (_in_sample: is it a sample's?), 30% of 50-55 ms at 32 KB.
    # The opening test is asked first in a whole text; the fences are read on at the next
    # marker that needs them. A stream (not changed) reads as parse() does.
    from toolgram._scan import quotation as _quotation

    tools = ["get_weather", "get_time", "search_web"]
    raw = unit * 500
    read, _, result = _counted(raw, _quotation.Fences, "read", tools=tools)
    assert read <= raw.count("```") + 10, read  # (a fence's own line is read at its marker)
    assert not result.calls and not result.errors and result.text == raw.strip()
    streamed = _counted(raw, _quotation.Fences, "read", tools=tools, size=7)
    assert streamed.result == result


@pytest.mark.parametrize("size", [1, 8])
@pytest.mark.parametrize(
    "unit",
    [
        '<function name="get_weather"><param name="city">Nanj\n',  # (minicpm5_function_param's truncated_in_param)
        "<tool_call>write_file\n<arg_key>content</arg_key>\n<arg_va\n",  # (glm45_arg_kv's cut_inside_the_first_values_open_tag)
    ],
)
def test_a_stream_of_calls_whose_values_wait_takes_the_storm_memo(unit: str, size: int) -> None:
    # Issue 17: a corpus case repeated (bench_pathological's (M+payload)*k), each call's
    # value left open, so that its region is decided only once the dozen openers after it
    # are told (nest._DEPTH), a few hundred characters on. The stream's storm memo held
    # its region for _AHEAD and certified its key there; the stream's reading waited, and
    # a key whose region was decided within _QUOTED_CALL got no wider window: it stayed
    # refused, and each region was read the usual way, woken 4-6 times (driver runs a
    # call): 290-330 ms at 32 KB in 8-character deltas, parse() 28 ms. Now its windows
    # see as far as the reading needed (the least width that decides: storm._least_width),
    # and each region after the first few takes the remembered outcome, no later.
    from toolgram._lalr import driver as _driver

    per = [_counted(unit * k, _driver.Driver, "run", size=size).calls for k in (100, 200)]
    assert (per[1] - per[0]) / 100 <= 0.1, per


@pytest.mark.parametrize("tail", ["[f(1, 2)", "[f(1, 2", "[f(1,", "[f(1"])
@pytest.mark.parametrize("tools", [None, ["f"]])
def test_plain_lists_the_last_cut_are_salvaged_from_the_list_before_it(tail: str, tools: list | None) -> None:
    """A row of plain Python lists (pyframe reads them, not the driver's lexer), the last
    one cut before its `]`: the salvage's replay and its readings up to each point start
    from the checkpoint between the lists before that one, not from the region's start
    (issue 17: `[f(1, 2)]` a line, 3,200 of them, then `[f(1, 2)`: each list lexed by the
    driver four times, 1 s at 32 KB). The driver lexes about as many tokens at 2,000
    lists as at 200."""
    from toolgram._lalr import driver as _driver

    def lexed(k: int) -> Counted:
        return _counted("[f(1, 2)]\n" * k + tail, _driver.Driver, "_lex", tools=tools)

    small, large = lexed(200), lexed(2000)
    assert large.calls <= small.calls + 50, (small.calls, large.calls)
@pytest.mark.parametrize("size", [None, 8])
@pytest.mark.parametrize(
    "unit",
    [
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis{i}\n</parameter>\n</function>\n</tool_call>\n",
        "<tool_call>get_weather\n<arg_key>city</arg_key> <arg_value>Paris{i}</arg_value>\n</tool_call>\n",
        '<function name="get_weather">\n<param name="city">Paris{i}</param>\n</function>\n',
    ],
)
def test_plain_values_of_many_calls_ask_no_json_decoder(unit: str, size: int | None) -> None:
    # Issue 17 (benchmarks/bench_distinct_calls.py): many well-formed XML-ish calls whose
    # values differ (no storm memo can share them) parse at ~300 µs a call, 32 KB in
    # 60-135 ms. With no schema to ask, each value went to the strict JSON decoder first,
    # which refused `Paris0` by raising its exception (~16 µs a value). A value whose
    # first character begins no JSON value is refused as the decoder would refuse it, with
    # no decoder asked (coerce._JSON_FIRST): 100 decodes -> 0; `42` is still decoded.
    from toolgram._build import coerce

    raw = "".join(unit.format(i=i) for i in range(100))
    counted = _counted(raw, json.JSONDecoder, "decode", lambda self, *args: self is coerce._STRICT, size=size)
    assert len(counted.result.calls) == 100 and counted.result.calls[7].arguments == {"city": "Paris7"}
    assert counted.weight == 0, counted.weight
    number = _counted(unit.format(i="").replace("Paris", "42"), json.JSONDecoder, "decode", lambda self, *args: self is coerce._STRICT)
    assert number.result.calls[0].arguments == {"city": 42} and number.weight >= 1


def test_a_run_of_glm_key_pairs_is_walked_once() -> None:
    # Issue 17: a GLM bare call to an offered tool whose keys' pairs run on with no value
    # tag (glm45_bare's corpus case key_apart_from_its_tag_cut_short_calls_an_offered_tool,
    # repeated: bench_pathological's payload*k): at each value, nest._step walked every
    # `<arg_key> … </arg_key>` pair after it to the end of the text for a tag that tells
    # (none comes) and kept nothing of the walk: 2 KB 10 ms, 8 KB 72, 16 KB 253, 32 KB
    # 827. Each start the walk went on from is now kept with its answer (a None with the
    # text that told it): 32 KB ~110 ms, linear (the rest is each value's own look, _loose).
    unit, tools = "read_file\n<arg_key> path </arg_key>\n", ["read_file", "get_weather"]
    toolgram.parse(unit, tools)  # (the grammars are built outside the count)
    small, large = (
        _calls(lambda raw=unit * (size // len(unit)): toolgram.parse(raw, tools, max_chars=None)) for size in (4_000, 16_000)
    )
    assert large <= 4.5 * small, (small, large)


@pytest.mark.parametrize("size", [None, 8])
@pytest.mark.parametrize(
    "unit",
    [
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis{i}\n</parameter>\n</function>\n</tool_call>\n",
        '<function name="get_weather">\n<param name="city">Paris{i}</param>\n</function>\n',
    ],
)
def test_the_stacks_of_many_calls_are_asked_whether_they_end_once(unit: str, size: int | None) -> None:
    # Issue 17 (benchmarks/bench_distinct_calls.py): each call of a reply is read by a
    # driver of its own, and each driver asked table.takes whether its stack may end
    # after each token a state with $END among its lookaheads left (Driver._may_end),
    # remembering the answers for itself only, and _ends_here without remembering: the
    # same few stacks, five questions a Qwen3-Coder call (~5% of its parse), three a
    # `<function name=…>` one. The answers are the grammar's, kept per grammar
    # (driver._takes_end): 100 calls more ask nothing more (on cand70: 500 and 300 more
    # in parse(), twice that with the stream).
    from toolgram._lalr import driver as _driver

    def asked(k: int) -> Counted:
        raw = "".join(unit.format(i=i) for i in range(k))
        return _counted(raw, _driver, "takes", lambda c, stack, term: term == "$END", size=size)

    small, large = asked(100), asked(200)
    assert len(large.result.calls) == 200 and large.result.calls[7].arguments == {"city": "Paris7"}
    assert large.weight <= small.weight + 2, (small.weight, large.weight)
