"""What each region of a marker storm costs, counted (issue 17: any reply up to 32 KB
parses in 50 ms; a storm of N markers costs N times what one rejected region costs, so
what a region costs whatever the reply's length must stay small, and no search in it may
run on to the end of the reply). Not timed: each test counts what the old way did per
region, or compares a bounded look with the look it replaces."""

from __future__ import annotations

import random

import pytest

import toolgram
from toolgram._lalr import table as _table
from toolgram._scan import salvage as _salvage
from toolgram._scan import storm as _storm
from toolgram._scan import stray as _stray

# Kimi K3's call cut inside its argument (tests/corpus/kimi_k3_open_close/truncated_in_argument),
# repeated: each region fails where the next call opens, at the same parse stack.
K3_CUT = (
    '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
    '<|open|>argument key="city" type="string"<|sep|>Fuku\n'
)


def test_a_storm_of_one_broken_call_works_out_its_closing_plan_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # (Each region's failure asked for the plan that closes its frame, and its salvage
    # asked again: the table simulated for each terminal of each state on the way, the
    # same answer each time.)
    planned = []
    plan = _table._plan
    monkeypatch.setattr(_table, "_plan", lambda c, stack, *a: planned.append(len(stack)) or plan(c, stack, *a))
    toolgram.parse(K3_CUT)
    first = len(planned)
    result = toolgram.parse(K3_CUT * 60)
    assert [c.name for c in result.calls] == ["get_weather"]
    assert len(planned) - first <= 8, len(planned) - first


def test_closing_plans_are_the_same_remembered_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    replies = [
        K3_CUT * 5,
        '<tool_call>{"name": "f", "arguments": {"a": [1, {"b": "x"',
        "<function=f>\n<parameter=a>\n1\n" * 4,
        '[f(a=1), g(b="x"' * 3,
        "<minimax:tool_call>\n<invoke name=\"f\">\n<parameter name=\"a\">x" * 3,
    ]

    def read() -> list:
        return [repr(toolgram.parse(raw)) + repr(list(toolgram.parse(raw).segments)) for raw in replies]

    remembered = read()
    monkeypatch.setattr(_table, "_PLAN_STACK", -1)  # (no stack is short enough: none remembered)
    assert read() == remembered


class _Recorder:
    """salvage._SPACED, recording how much text after the place each match is given."""

    def __init__(self, pattern: object) -> None:
        self.pattern = pattern
        self.given: list[int] = []

    def match(self, buf: str, at: int, endpos: int | None = None, partial: bool = False):
        self.given.append((len(buf) if endpos is None else endpos) - at)
        if endpos is None:
            return self.pattern.match(buf, at, partial=partial)
        return self.pattern.match(buf, at, endpos, partial=partial)


def test_a_spaced_name_is_looked_for_in_bounded_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # (The `regex` engine looks for the `(` the pattern needs from the place to the end
    # of the text it is given before it matches: at each region a storm failed in, the
    # rest of the reply.)
    recorder = _Recorder(_salvage._SPACED)
    monkeypatch.setattr(_salvage, "_SPACED", recorder)
    toolgram.parse(K3_CUT * 60)
    toolgram.parse('<function_calls>\nget_weather(city="Paris")\nget time(tz="UTC")\n</function_calls>\n' * 40)
    assert recorder.given and max(recorder.given) < 200, max(recorder.given)


def test_the_bounded_spaced_match_is_the_match() -> None:
    rng = random.Random(17)
    alphabet = ["a", "_", "x1", " ", "\t", "\n", "\r\n", "(", ")", ".", "-", "é", "名", "<", "=", '"', "get", "  "]
    spaced = _salvage._SPACED

    def sig(m) -> tuple | None:
        return None if m is None else (m.span(), m.span(1), m.span(2), m.partial)

    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        at = rng.randint(0, len(text))
        for partial in (False, True):
            assert sig(_salvage._spaced_at(text, at, partial)) == sig(spaced.match(text, at, partial=partial)), (text, at)


def _line_after_by_copy(w: _stray.Watch, buf: str, base: int, final: bool) -> bool | None:
    """stray.line_after as it was: a find of the line break and a copy of the line."""
    start = max(0, w.seen - base)
    nl = buf.find("\n", start)
    stop = len(buf) if nl < 0 else nl
    if buf[start:stop].strip():
        w.armed = True
        return True
    if nl < 0 and not final:
        w.seen = base + len(buf)
        return None
    return False


def test_the_line_after_a_call_is_told_as_by_a_copy_of_it() -> None:
    rng = random.Random(21)
    alphabet = [" ", "\t", "\n", "\r", "\u00a0", "\u2028", "\x0c", "x", "<", "é"]
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        base = rng.randint(0, 3)
        seen = base + rng.randint(0, len(text))
        final = rng.random() < 0.5
        a = _stray.Watch(None, ("</p>",), ("</f>",), "f", "", seen, frozenset("<"), 4)
        b = _stray.Watch(None, ("</p>",), ("</f>",), "f", "", seen, frozenset("<"), 4)
        a.fresh = False  # (past the look for a run of closers right after the call: the line's part)
        assert _stray.line_after(a, text, base, final) == _line_after_by_copy(b, text, base, final), (text, seen)
        assert (a.seen, a.armed) == (b.seen, b.armed)


def test_calls_a_storm_takes_from_the_memo_share_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # (A remembered outcome's copy shares only what cannot change: each call's arguments
    # and repairs are its own.)
    moved = []
    original = _storm._moved
    monkeypatch.setattr(_storm, "_moved", lambda items, start: moved.append(start) or original(items, start))
    result = toolgram.parse("<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\nok " * 40)
    assert moved and len(result.calls) == 40
    result.calls[10].arguments["b"] = 2
    assert all(c.arguments == {"a": 1} for k, c in enumerate(result.calls) if k != 10)
    assert len({id(c.arguments) for c in result.calls}) == 40


def _olmo_mix() -> tuple[str, list[str]]:
    """tests/corpus/olmo3_pythonic/'s cases joined, each after a separator of its own,
    and the tools they are offered (benchmarks/bench_pathological.py's mix: QA12 N7)."""
    import json
    from pathlib import Path

    folder = Path(__file__).parent / "corpus" / "olmo3_pythonic"
    seps = ("\n", "", " ", "\n\n")
    parts, names = [], []
    for k, path in enumerate(sorted(folder.glob("*.txt"))):
        parts.append(path.read_bytes().decode("utf-8") + seps[k % len(seps)])
        tools = path.with_name(path.name[:-4] + ".tools.json")
        for tool in json.loads(tools.read_text("utf-8")) if tools.exists() else ():
            name = tool if isinstance(tool, str) else tool.get("function", tool).get("name")
            if name and name not in names:
                names.append(name)
    return "".join(parts), names


def test_a_reply_of_a_dozen_kinds_of_block_in_turn_reads_each_kind_a_few_times(monkeypatch: pytest.MonkeyPatch) -> None:
    # (Each block is a region whose memo key comes again a dozen regions on: only the
    # last four regions' keys were kept, so each block was read the usual way at each
    # turn, those with a spaced name four or five times over.)
    unit, names = _olmo_mix()
    begun = []
    original = _storm._certify
    monkeypatch.setattr(_storm, "_certify", lambda sc, out, key, *a: begun.append(key) or original(sc, out, key, *a))

    def regions(turns: int) -> int:
        from toolgram._scan import region as _region

        count = [0]
        init = _region.RegionReader.__init__

        def counted(self, *a, **k):
            count[0] += 1
            init(self, *a, **k)

        monkeypatch.setattr(_region.RegionReader, "__init__", counted)
        toolgram.parse(unit * turns, names)
        monkeypatch.setattr(_region.RegionReader, "__init__", init)
        return count[0]

    few, more = regions(6), regions(12)
    assert begun
    # (Six turns more: each of the blocks whose outcome is remembered is read no more.
    # A block whose window does not decide it, the string left open that runs into the
    # next blocks, is read at each turn; it was some fifteen regions a turn.)
    assert more - few <= 3 * 6, (few, more)


def test_a_reply_of_kinds_of_block_in_turn_reads_the_same_remembered_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolgram._stream.parser import StreamParser

    unit, names = _olmo_mix()
    raw = unit * 5

    def read() -> str:
        result = toolgram.parse(raw, names)
        return repr(result) + repr(list(result.segments))

    remembered = read()
    for size in (7, 64):
        sp = StreamParser(names)
        for k in range(0, len(raw), size):
            sp.feed(raw[k : k + size])
        sp.flush()
        streamed = sp.close()
        assert repr(streamed) + repr(list(streamed.segments)) == remembered, size
    monkeypatch.setattr(_storm, "_RECENT", 4)
    assert read() == remembered
    monkeypatch.setattr(_storm, "enabled", False)
    assert read() == remembered


@pytest.mark.parametrize("unit", ["<tool_call>x", "<function=x", "<function={", "<tool_call>x\n", "<tool_call>x then"])
def test_a_remembered_outcome_takes_its_calls_line_as_found_once(monkeypatch: pytest.MonkeyPatch, unit: str) -> None:
    # (A memo hit looked again, at each region, for its call's closers written before its
    # end (stray.watch_args) and at the line after it (stray.line_after): the same text at
    # each, the key's window. Found once, where the outcome is remembered; the same result
    # as without the memo.)
    looks = []
    for name in ("watch_args", "line_after"):
        original = getattr(_stray, name)
        monkeypatch.setattr(_stray, name, lambda *a, _f=original, _n=name: looks.append(_n) or _f(*a))
    raw = unit * 400
    moved = []
    original_moved = _storm._moved
    monkeypatch.setattr(_storm, "_moved", lambda items, start: moved.append(start) or original_moved(items, start))
    original_prose = _storm.prose_end

    def prose_end(sc, start, *a):  # (an outcome that is prose joins the prose around it: not moved)
        got = original_prose(sc, start, *a)
        if got[0]:
            moved.append(start)
        return got

    monkeypatch.setattr(_storm, "prose_end", prose_end)
    got = toolgram.parse(raw)
    assert len(moved) > 300
    assert len(looks) < 100, len(looks)
    monkeypatch.setattr(_storm, "enabled", False)
    want = toolgram.parse(raw)
    assert (got, got.segments) == (want, want.segments)


# A `<tool_call>` storm whose payloads are other formats' calls and fragments (the fuzz's
# marker storms: seed 7 #8091806), each region read by hermes (its payload runs to the
# next marker, and does not build) and then by the formats `<tool_call>` also begins.
_FOREIGN = (
    "[f(a=1)]<|/tool_call|>", "f(a=1, b='x')<|/tool_call|>", '{"a": [1, 2]}<|/tool_call|>',
    '"arguments": {<|/tool_call|>', "call:f{a:<escape>x<escape>}<|/tool_call|>", "a=1",
    "```json\n<|/tool_call|>", "to=functions.f", '{"type": "tool_call", ',
)


def _foreign_storm(n: int) -> str:
    rng = random.Random(17)
    return "".join("<tool_call>" + rng.choice(_FOREIGN) + rng.choice((" ", "\n", "\t", "\r\n")) for _ in range(n))


def test_a_storm_of_foreign_payloads_gives_few_drivers_a_region(monkeypatch: pytest.MonkeyPatch) -> None:
    # (Each region made a driver for each of the five formats `<tool_call>` begins, three
    # of which failed at their second token after hermes's failure, telling nothing:
    # RegionReader._drop_failing gives them none.)
    from toolgram._scan import region as _region

    made, begun = [], []
    driver, init = _region.RegionReader.driver, _region.RegionReader.__init__
    monkeypatch.setattr(_region.RegionReader, "driver", lambda self, *a: made.append(1) or driver(self, *a))
    monkeypatch.setattr(_region.RegionReader, "__init__", lambda self, *a, **k: begun.append(1) or init(self, *a, **k))
    toolgram.parse(_foreign_storm(300))
    assert len(made) <= 3 * len(begun), (len(made), len(begun))  # (4 a region before)


def test_a_storm_of_foreign_payloads_reads_the_same_with_every_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolgram._scan import region as _region
    from toolgram._scan import scanner as _scanner

    raw = _foreign_storm(200)

    def read() -> tuple:
        result = toolgram.parse(raw)
        return repr(result), list(result.segments)

    dropped = read()
    monkeypatch.setattr(_region.RegionReader, "_failure_stands", lambda self: False)  # (no loud candidate dropped)
    monkeypatch.setattr(_scanner, "_CALLS_HELD", 0)  # (no payload's calls remembered)
    assert read() == dropped


def test_python_calls_in_payloads_are_read_once_per_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # (Builder._python_calls parses a payload of Python-style calls on its own: hermes's
    # build and granite's of each region of the storm parsed the same few texts again.)
    from toolgram import _pipeline

    read = []
    calls = _pipeline.read_calls
    monkeypatch.setattr(_pipeline, "read_calls", lambda text, listed: read.append(text) or calls(text, listed))
    toolgram.parse(_foreign_storm(300))
    assert read and len(read) == len(set(read)), (len(read), len(set(read)))


@pytest.mark.parametrize("unit", ["```x", "```{", "```x\n"])
def test_a_storm_of_prose_regions_is_one_piece_of_prose(monkeypatch: pytest.MonkeyPatch, unit: str) -> None:
    # (parse(): each region the memo remembers as prose, ``` and nothing more, was a piece,
    # and the prose before the next marker another: two a marker, each made, moved,
    # joined and segmented. Joined to the prose around it: a few pieces for the storm.)
    from toolgram._pipeline import read_calls, registry_for
    from toolgram._scan.scanner import Scanner

    raw = unit * 2000
    items = Scanner(registry_for(None).select(None), None, False, read_calls).read(raw)
    assert len(items) < 40, len(items)
    got = toolgram.parse(raw)
    monkeypatch.setattr(_storm, "enabled", False)
    want = toolgram.parse(raw)
    assert (got, got.segments) == (want, want.segments)


def test_a_streamed_storm_reads_its_held_regions_in_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    # (A stream holds a storm's region until the text holds its window: it held each for
    # the next delta, whose work (scan, join, report) then read a marker or two. Held
    # _BATCH characters more, the deltas between are put aside unlooked at.)
    from toolgram._scan.scanner import Scanner
    from toolgram._stream.parser import StreamParser

    advances = []
    advance = Scanner._advance
    monkeypatch.setattr(Scanner, "_advance", lambda self, final: advances.append(final) or advance(self, final))
    raw = "```x" * 2000
    sp = StreamParser()
    for k in range(0, len(raw), 8):
        sp.feed(raw[k : k + 8])
    sp.flush()
    got = sp.close()
    assert len(advances) < 300, len(advances)  # (1,000 deltas; one a delta before)
    want = toolgram.parse(raw)
    assert (got, got.segments) == (want, want.segments)


# A `<tool_calls>` storm of junk payloads (the fuzz's marker mixes: seed 7 #101014252): jamba
# reads each region and builds no call, and apriel, whose `<tool_calls>` block is jamba's
# written out again, read it once more, to the same end (twin.py).
_JUNK = (
    '{"a": [1, 2, {"b": null}]}', "call:f{a:<escape>x<escape>}", "f(a=1, b='x')", '"arguments": {',
    '[{', "}]", '"name": "f"', '{"type": "tool_call", ', "a=[1, {'b': (2,)}]</tool_calls>",
)


def _junk_storm(n: int) -> str:
    rng = random.Random(23)
    return "".join("<tool_calls>" + rng.choice(_JUNK) + rng.choice((" ", "\n", "\t", "\r\n")) for _ in range(n))


def test_apriel_reads_no_tool_calls_block_that_jamba_read_as_no_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolgram._scan import region as _region

    made = []
    driver = _region.RegionReader.driver
    monkeypatch.setattr(_region.RegionReader, "driver", lambda self, fmt, *a: made.append(fmt.name) or driver(self, fmt, *a))
    # (The storm memo's stream reading of a window, one a certification, gives it one:
    # a stream cannot tell the twins apart before the text does. Those are counted apart:
    # since keys come again sooner (storm._behind) there are more certifications, and
    # fewer regions read, 362 + 4 -> 342 + 9 drivers of the two in all.)
    windows = []
    reading = _storm._stream_reading

    def stream_reading(*a, **k):
        windows.append(len(made))
        try:
            return reading(*a, **k)
        finally:
            windows.append(len(made))

    monkeypatch.setattr(_storm, "_stream_reading", stream_reading)
    toolgram.parse(_junk_storm(300))
    inside = sum(made[lo:hi].count("apriel") for lo, hi in zip(windows[::2], windows[1::2]))
    # (Some near the reply's end still give it one.)
    assert made.count("jamba") >= 300 and made.count("apriel") - inside <= 5, (made.count("jamba"), made.count("apriel"), inside)
    assert inside <= len(windows) // 2, (inside, len(windows) // 2)


def test_twins_are_told_by_their_grammars() -> None:
    from toolgram._grammar.registry import default_registry
    from toolgram._scan.twin import twin

    formats = {f.name: f for f in default_registry().select()}
    jamba, apriel, hy = formats["jamba"], formats["apriel"], formats["hy_v3_tool_sep_kv"]
    assert twin(jamba, apriel, "<tool_calls>") == ("[BEGIN FINAL RESPONSE]", "[END FINAL RESPONSE]")
    assert twin(apriel, jamba, "<tool_calls>") is None  # (apriel's tokens jamba has not)
    assert twin(jamba, hy, "<tool_calls>") is None
    assert twin(formats["hermes"], formats["hermes_function_tag"], "<tool_call>") is None


_PROSE = "\nThat is all I have to say about it, and a little more prose to run past the end." * 2


@pytest.mark.parametrize(
    ("raw", "in_think"),
    [
        (_junk_storm(200), False),
        # (apriel's `[END FINAL RESPONSE]` after the block: where apriel's reading of the
        # string differs from jamba's, its failure is told; read near the reply's end, or
        # far from it, apriel still reads the block.)
        ('Use book_ride.\n[BEGIN FINAL RESPONSE]\nBooking it.\n<tool_calls>[{"]name": "book_ride", "argumentsl_calls>\n[END FINAL RESPONSE]', True),
        ('Use book_ride.\n[BEGIN FINAL RESPONSE]\nBooking it.\n<tool_calls>[{"]name": "book_ride", "argumentsl_calls>\n[END FINAL RESPONSE]' + _PROSE, True),
        ('<tool_calls>{"a": "x\n[END FINAL RESPONSE]\nDone."}' + _PROSE, False),
    ],
)
def test_a_twin_skipped_reads_the_same(monkeypatch: pytest.MonkeyPatch, raw: str, in_think: bool) -> None:
    from toolgram._scan import twin as _twin

    def read() -> tuple:
        result = toolgram.parse(raw, in_think=in_think)
        return repr(result), list(result.segments)

    skipped = read()
    monkeypatch.setattr(_twin, "twin", lambda a, b, marker: None)  # (every candidate given its driver)
    assert read() == skipped


def test_the_region_read_ahead_at_a_cut_is_not_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # (An LFM2 value cut at the next `<|tool_call_start|>`, which begins no call: begins_call
    # reads that marker's region ahead to tell, and then the scanner read it again as its own
    # region, a driver made and run twice (fuzz seed 7 #101015238): 3 drivers a unit, now 2.)
    from toolgram._scan import region as _region

    monkeypatch.setattr(_storm, "enabled", False)  # (the general way: no memo gives the outcome)
    unit = "<|tool_call_start|>[say(text='x\"]|<|tool_call_start|> )]\n"
    made = []
    driver = _region.Driver
    monkeypatch.setattr(_region, "Driver", lambda *a, **k: made.append(1) or driver(*a, **k))
    got = toolgram.parse(unit * 100, ["say"])
    assert len(got.errors) == 100 and len(made) <= 2 * 100, len(made)
    fresh = _region.RegionReader.driver

    def forgetting(self: _region.RegionReader, *a: object) -> object:
        self.sc.read_ahead = None  # (no driver of the reading ahead taken: each made anew)
        return fresh(self, *a)

    monkeypatch.setattr(_region.RegionReader, "driver", forgetting)
    made.clear()
    want = toolgram.parse(unit * 100, ["say"])
    assert len(made) == 3 * 100, len(made)
    assert (got, got.segments) == (want, want.segments)
