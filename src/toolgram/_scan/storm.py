"""A memo of region outcomes, for marker storms: the same marker, with the same text
around it, again and again (`<tool_call>{` repeated to 32 KB: thousands of regions,
each trying its candidates' drivers, repairs and mention checks, all to the same end).

parse() (a whole reply) and a stream ask it at each region a marker begins
(Scanner._in_prose, through region(); parse() through prose_end() then read(): a
remembered outcome that is prose alone joins the prose around it, one piece):

 - its key is the marker, the scanner state a region reads that changes along a reply
   (in_open_think: whether its prose is reasoning, and a broken list's relist: _think; where the last line of calls ended,
   when within the look-behind: key_of), and a window: what the region's reading can
   tell of the text before its marker (_behind: most often one character and a blank,
   a normalized fact; the look-behind a stream keeps when it drops text at the marker,
   Scanner._trim, after a reasoning tag or a line of calls), then the text from the
   marker to the first end marker of its formats (_closed_within), or _AHEAD
   characters after the marker, or further where a window of that text waited
   (memo.wide). A region whose window runs past the end of the text is read the usual
   way (its reading may ask about the reply's end).
 - A key seen at a region before (one of the last _RECENT) is certified: the
   region is read the usual way, and again by a stream's reading (final=False) of its
   window alone, in a copy of the scanner. If that reading decides the region, and
   decides it as the usual one did (the same items, at the same places from the
   marker, the same end), its outcome is remembered for the key.
 - A region whose key is remembered takes that outcome, moved to its place, without
   being read.

Why that outcome is the region's: a stream decides a region only when no more text can
change the decision (it waits otherwise: stream == parse() in every chunking, which
tests/test_stream.py, the properties and the fuzz runs check); so a decision made on
the text up to the window's end holds for any text after it. A stream keeps, of the
text before a region, only what _trim keeps, so the decision does not read further
back. The scanner state the reading reads is the copy's, the same at each region of a
key but for what the key holds and what is reset (the per-text answers of the marker
searches, the buffer's). The rest is the usual reading's own, deterministic: the same
window and state give the same decision, which the certification saw equal the
usual one.

One reading of a whole text reads past the window, and a stream's reading of the window
alone waits on it: a Python list whose call's `)` was left out before the list's `]`,
text after it (`[f(a="x"] ok`, issue 17). Its value ends only at a `,` or `)` at its
depth, and where none comes to the end of the reply (nor a marker cuts it, nor a code
fence's close ends it), the whole text's reading reads it up to that `]` (Driver.
listed); a stream waits, since any later text may end it. A storm of such lines, one a
line, had no key certified, and each region was read (705 ms at 32 KB). So the
certification notes the values the usual reading read so (Driver.listed_log: the
format, the place from the marker), and tells the window's reading to read them so
too (Driver.listed_hint), once the window holds the list's `]` and text after it (what
the whole reading read there is the window's); the outcome is remembered with them.
It is given to a region of the key only where each such value of it reads so in that
reply too: runs on to its end, uncut (_listed_hold, told by the reply's one index of
Python values' ends, and a driver of the format's cut). The rest of the reading is the
window's, as above; a whole text only (a stream's own reading never reads a value so,
and takes no such outcome).

So too a Python list whose last value runs on to the end of the reply (`[…]\n[…]`, a
subscript to Python, one value over every line after it: each broken line of a reply
of such lines): its reading is the window's but for that value, which the reply's end
closes, and a stream's reading of the window waits on it. The certification of a whole
text remembers such an outcome where everything else the reading found lies inside the
window (storm._tail), and each region it is given to checks that its value, too, runs
on to the end of the reply (_tail_hold). A whole text only, as above.

So too a Python string left open to the end of the reply, cut at its own format's start
marker where a call of that format reads (issue 19 P1: `[f(a='x ` before each LFM2
marker, again and again; _close._own_call_at): only the end of the reply tells that the
string never closes, and a stream's reading of the window waits there. Each region was
read the general way, with the region after (begins_call), 425 ms at 32 KB. The
certification notes the cut (_close._own_noted: the format, the value's place, the
marker's) with the call read at the marker (Scanner._own_reads_at, which reads it up to
the format's next start marker: its end, and that text), and tells the window's reading
to cut there too (Driver.own_hint). It is given to a region of the key only where the
value is cut so in that reply too (_own_hold: the driver's questions before its cut, then
_close.cut itself, the call at the marker, where its text is the same, put in as the
certification's answer, not read again).

A stream (final=False) uses its own memo the same way, in a storm only: from the
_STREAK-th region in a row of a marker, each begun within _AHEAD characters of the one
before, or with no more than _AHEAD characters of text outside regions between it and the
one before (regions longer than _AHEAD, one right after another: Kimi K2 values each cut by
the next section's marker), and no call read by a fast frame since (a reply of ordinary
calls is never held; but a call right where the region before ended, its marker cutting
that region, ends only its own marker's run: Memo.frame_call), it holds the region, unread (Scanner.hold: a wait that takes deltas unlooked at),
until the text holds the region's window, at most _AHEAD_LONG characters after its
marker, and _BATCH more (the regions after it are read on the same delta). Then the key is known, and the region goes as in parse(): a remembered outcome
moved into place, or the certification, whose usual reading is the stream's own
(final=False, on the text so far, which holds the window: when it does not decide the
region yet, the key is refused and the region read on the usual way). Why that is
parse()'s outcome: the stream's usual reading of that region decides what parse()'s
does (stream == parse()), and the window's reading decides the same, so, as above,
does every later region with that window, whatever text follows it, the end of the
reply included. Holding decides nothing: the region is read (or takes its outcome)
on more text than a delta brought, as a longer delta would give it. What the
stream's Scanner does on its own (dropping text before the region: _trim) keeps the
key's look-behind, which starts at the marker's (so parse() takes its key from the
marker as well, not from where the prose before it began).

`enabled = False` turns it off (tests compare parse() with and without it).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from .items import Failure, Piece, Region, _rebase
from . import fastpath as _frame, stray as _stray
from .opening import _START_WAIT, openers
from .._build.builder import Draft, Prose, Reasoning
from .._lalr.close import _QUOTED_CALL, fence_cut as _fence_cut
from .._lalr.driver import Driver
from .._lalr.extent import StopIndex
from .._recover import repair as _repair
from .._result.model import ToolCall

enabled = True

# How far after a marker the window runs (the text a stream's decision may read): the
# first, and the longer one a marker's keys take once a stream's reading of the first
# waited (a call cut inside a value: its stream holds it until more text tells). The
# longer one holds a Gemma call quoted whole in a string left open, its opener within
# _AHEAD of the marker, as far as a stream waits for its end marker (_QUOTED_CALL:
# `call:w{c:<|"|>` + `<|tool_call>`, repeated, each string left open, waits that far
# past the next opener; with 2,048 no window of it was ever decided, and each of its
# thousand regions was read whole: 117 -> 27 ms at 30 KB, QA18 Q12).
_AHEAD = 256
_AHEAD_LONG = _QUOTED_CALL + _AHEAD
# How far after an end marker within _AHEAD a window runs (_closed_within): a region
# that its end marker ends is decided there (a stream's reading of the window, which
# certifies the key, says where not so).
_SHUT_MARGIN = 0
# How many of the last regions' keys are kept for certification (a storm of several
# kinds of region in turn: `<tool_call>x<tool_call>{`; and a reply of a dozen kinds
# of block in turn, each a region whose key comes again a dozen regions on: QA12 N7's
# OLMo 3 mix, each block with a spaced name read four or five times at each turn,
# 64 -> 38 ms at 32 KB once its keys are remembered so long). A certification costs
# a second reading of the window, at most _KEPT of them twice over per reply,
# however many keys are kept. A fence storm has hundreds of region texts, each again
# a hundred regions or more on (its keys were the last 64's only now and then).
_RECENT = 512
# (And the most characters their windows hold in all: as 64 of the longest windows did.)
_RECENT_CHARS = 64 * (_AHEAD_LONG + 64)
# The most outcomes remembered per reply (a storm has a few; a fence storm's texts,
# a hundred or two), and the most keys whose certification failed before no more are
# tried (each costs a second reading).
_KEPT = 256
# A stream holds a marker's region for its window from the _STREAK-th region of that
# marker in a row (see region()): before, its regions are read as they come.
_STREAK = 3
# How far before a region's marker _to_note keeps the text what it notes reads back (the
# closers' width back from a short region's end), beyond the key's look-behind.
_PRE = 32
# How much text past a held region's window the hold waits for too: the regions after it
# whose windows that holds are read with it, on one delta's work (a storm of prose regions
# in 8-character deltas was each delta's scan, join and report: ```x repeated, 152-161 ms
# at 32 KB, 4x parse()). Holding decides nothing (see above); the regions wait that much more.
_BATCH = 64


class Memo:
    """One reply's memo (Scanner.storm)."""

    __slots__ = ("recent", "recent_chars", "known", "refused", "wide", "exact", "pending", "widened", "tag_ends", "streak", "ends", "run", "last", "probes", "owned")

    def __init__(self) -> None:
        # (marker, look-behind, the window up to _closed_within's end) -> the window's
        # length after the marker, where a region of that window waited (key_of), and
        # how many times that was set (prose_end's reuse of the last key asks).
        self.wide: dict = {}
        self.widened = 0
        # A stream's: memo.wide's entries whose width is the least on which a stream's
        # reading of that text decides its region (_least_width): its regions are held for
        # their windows and no _BATCH more, so that none is decided later than its own
        # reading decides it.
        self.exact: dict = {}
        # A stream's: (memo.wide's entry, where the text after the marker begins, how much
        # of it the certification held, the key, its relist) of a region its certification
        # left undecided, until it is (_certify, region()).
        self.pending: tuple | None = None
        self.tag_ends: frozenset | None = None  # (_tag_ends)
        self.ends: dict = {}  # marker -> the end markers of the formats it begins (_closed_within)
        self.recent: dict = {}  # the keys of the last regions read (in order)
        self.recent_chars = 0  # the length of their windows, in all
        self.known: dict = {}  # key -> (items relative to the marker, end relative to it, _to_note's, _listed_hold's, the region's outer_watch relative to it, _relist's)
        self.refused: set = set()  # keys whose certification failed (read the usual way)
        # A stream's: marker -> (where its last region began, in the reply; how many of
        # its regions in a row followed the one before). See region().
        self.streak: dict = {}
        # A stream's: where the run of regions the last one is in began, each read at most
        # _AHEAD after the end of the one before (see region()).
        self.run = 0
        # parse()'s: marker -> the last key prose_end found for it, where it began and
        # memo.widened then (see _key_at). Per marker: a storm of lines each holding two
        # markers (```` ```json\n[{"a": 1}\n ```` repeated: the fence and the line's `[`)
        # found each key anew when the one last key was the other marker's.
        self.last: dict = {}
        # format name -> a driver of it on this reply, whose _cut tells whether a marker
        # cuts a value read up to a list's `]` (_listed_hold).
        self.probes: dict = {}
        # (the text, the cuts _own_hold found to hold in it: (format, value's place, marker's)).
        # Each is a region's and, the value of the region its marker begins, the one before's.
        self.owned: tuple | None = None

    def frame_call(self, sc: Any, marker: str, start: int) -> None:
        """A fast frame read a call at `marker`, at `start` in the buffer (a stream's):
        no storm of that marker is going on (see region()), nor of any other (a reply of
        ordinary calls in several formats is never held), but where the region before
        ended at that call's marker, which cut it (a value left open before the call:
        `[f(a="x` then a Hermes call, then the next line's list, again and again, QA26
        S2). There the other markers' runs go on over the call: each call is read by the
        frame as it comes, and the regions around it, each the same, are held for their
        windows and read through the memo (without that, each was read again at every
        delta until its next line told where its value ends: 8-character deltas of 32 KB,
        193 -> 42 ms, parse 29). (A method, so that region.py, which storm.py reads
        through, need not import this module: test_layers.)"""
        if sc.ended == sc.base + start:
            self.streak.pop(marker, None)
        else:
            self.streak.clear()


def region(sc: Any, out: list, start: int, marker: str, final: bool) -> bool | None:
    """The region of `marker` at `start`, through the memo: True when done (out and the
    scanner set as the region's reading sets them); False: read it the usual way; None
    (a stream, in a storm): hold it until the text holds its window (sc.hold)."""
    memo = sc.storm
    if memo is None:
        memo = sc.storm = Memo()
    if not final:
        if memo.pending is not None:
            # (The region whose certification it waited on is decided by now, the text
            # being in prose again: on no more text than the stream holds.)
            short, after, held, was, relisted = memo.pending
            memo.pending = None
            seen = sc.base + len(sc.buf) - after
            if seen >= _QUOTED_CALL:
                _widen_short(memo, short, _AHEAD_LONG)
            else:
                # (Decided within that: its windows see as far as its reading needed. Only
                # the wider case was widened before, and a region decided within it kept its
                # key refused and no wider one: each region of the storm was read the usual
                # way, a value left open until the dozen openers after it were told
                # (`<function name="f"><param name="c">x` repeated, 8-character deltas,
                # 32 KB: 293 ms, parse 28).)
                least = _least_width(sc, was, after, held, seen, relisted)
                if least is not None and _widen_short(memo, short, least):
                    memo.exact[short] = least
        at = sc.base + start
        last, n = memo.streak.get(marker, (-1, 0))
        if at - sc.ended > _AHEAD:
            memo.run = at  # (prose longer than that before it: a new run of regions)
        if at != last:  # (not the region held before: its text is here now)
            n = n + 1 if 0 <= at - last and (at - last <= _AHEAD or last >= memo.run) else 1
            memo.streak[marker] = at, n
        if n < _STREAK:
            return False
        need = start + len(marker) + _AHEAD
        if need > len(sc.buf):
            sc.hold = sc.base + need + _BATCH
            return None
        key = key_of(sc, start, marker, True)
        if type(key) is int:
            # (A window of this text waited before (memo.wide): its key sees further, and
            # the region is held for that much. Only such a text's regions: a hold for
            # every region of the marker (as memo.ahead was) held a Gemma call that its
            # own reading decides within _AHEAD for _AHEAD_LONG, once one region of
            # another text had waited: test_stream's quoted_calls_then_a_call_whose_
            # end_is_past_the_look, done 2,114 characters later.)
            sc.hold = sc.base + key
            return None
    else:
        key = _key_at(sc, memo, start, marker)
    return key is not None and read(sc, out, key, start, final)


def prose_end(sc: Any, start: int, marker: str, kind: str) -> tuple:
    """A whole text's region of `marker` at `start` (parse: region() with final), asked
    before the prose before it goes out: (its end, relative to the marker, where the memo
    remembers its outcome as one piece of prose of `kind` (the marker's text and what
    the region read of the text after it) and no call: the scanner set as read() sets
    it, the piece left to the prose around it, which Scanner._in_prose puts out as one;
    else 0), and the region's key, for read() (None: the memo does not apply)."""
    memo = sc.storm
    if memo is None:
        memo = sc.storm = Memo()
    key = _key_at(sc, memo, start, marker)
    if key is None:
        return 0, None
    known = memo.known.get(key)
    if known is None:
        return 0, key
    items, end, noted, listed, watch, relist = known
    if noted is not None or listed or watch is not None or relist is not None or sc.relist or len(items) != 1:
        return 0, key
    item = items[0]
    if type(item) is not Piece or item[0] != kind or item[1] != 0 or item[2] != end:
        return 0, key
    sc.pos = start + end
    sc._end_region()  # (and the rest as read() does)
    sc.stray = None
    return end, key


def _key_at(sc: Any, memo: Memo, start: int, marker: str) -> tuple | None:
    """key_of, for a whole text's region (prose_end, region() with final): where this
    marker's window holds the same text as the last one's (a storm's, each marker's),
    that key, for what the scanner's state gives it, not found anew at each marker."""
    ahead = memo.widened
    last = memo.last.get(marker)
    if last is not None and last[1] < start and last[2] == ahead:
        # (key_of finds it so: the look-behind's fact (_behind) is this marker's, and
        # the first end marker after it is that text's; its start is further on. What
        # key_of reads is the text there and the scanner's state asked below, not the
        # regions of other markers read between the two.)
        k = last[0]
        buf = sc.buf
        key = None
        n = last[6]
        if n and buf.startswith(last[5], start - n) and not 0 <= start - (sc.line_call_end - sc.base) <= n:
            # (The look-behind _look_behind keeps is the last one's, as it is, and
            # no line of calls ends in it: _behind's answer is the last one's. A
            # pure storm's regions: each after the same text.)
            key = (marker, k[1], _think(sc), k[3], -1)
        elif buf.startswith(last[3], start):
            back = k[1]
            if back == 1 and start > 0:
                # (_behind's own answer, asked inline: a storm's thousands of
                # regions, each glued to the text before it. The character is never
                # a space or tab here: _behind gives those with a blank after them.)
                c = buf[start - 1]
                w = last[4]
                tw = sc.think_width
                ends = memo.tag_ends
                if (
                    (c == w or (w == "x" and not c.isspace() and c != "`"))
                    and c not in (ends if ends is not None else _tag_ends(sc))
                    and start >= tw and sc.base + start - tw > 0
                    and not 0 <= start - (sc.line_call_end - sc.base) <= tw
                    and tw > 1
                ):
                    key = (marker, 1, _think(sc), k[3], -1)
            elif _behind(sc, buf, start) == k[3][:back]:
                key = _key(sc, marker, start, back, k[3])
        if key is not None:
            last[0] = key
            last[1] = start
            return key
    key = key_of(sc, start, marker)
    if key is None:
        return None
    # (memo.last: the key, where, memo.widened then, the window's text from the marker
    # on, its first character, and where no line of calls ends in the look-behind
    # _look_behind keeps, that text with the window's from the marker on, and its length.)
    tail = key[3][key[1] :]
    same, n = "", 0
    if key[4] < 0:
        keep = _look_behind(sc, sc.buf, start, " \t")
        same, n = sc.buf[keep:start] + tail, start - keep
    memo.last[marker] = [key, start, ahead, tail, key[3][:1], same, n]
    return key


def key_of(sc: Any, start: int, marker: str, hold: bool = False) -> tuple | int | None:
    """The memo key of the region at `start`, or None where the memo does not apply
    (with `hold`, a stream's: where its window, widened, runs past the text, how long
    the text must be to hold it and, but for an exact width (memo.exact), _BATCH more)."""
    buf = sc.buf
    memo = sc.storm
    ahead = _AHEAD if memo is None else _closed_within(memo, sc, buf, start, marker)
    if start + len(marker) + ahead > len(buf):
        return None
    # The look-behind a stream keeps (Scanner._trim at the marker: a stream drops text
    # there, between two deltas, and keeps at least this; its buffer holds it). (_trim
    # keeps instring.LOOK more, for the check of a marker inside a string, which the
    # scanner makes before it asks the memo: a region's reading reads back no further.)
    behind = _behind(sc, buf, start)
    if behind is None:
        return None
    # Where the last line of calls ended (Scanner.line_call_end), back from the marker,
    # when in the look-behind: a region right after such a line reads it (mention.
    # _next_line_call: its object broken, the model's next call, told), so two regions
    # of the same window, one after a line of calls and one after prose, are two keys
    # (-1: none so near; before the look-behind, which is think_width or more, no
    # reading asks about it). Without it, a llama3_json storm took the outcome of a
    # region after prose, its broken object prose untold, for one right after a call's
    # line, whose object a stream, reading it, told (fuzz seed 7 #8136182).
    if memo is not None and memo.wide:
        # (A window of this text waited before, read alone: this one sees further, as
        # that region's certification found it must. Only such windows: a storm of
        # fences, a few of which wait on a call, keeps the rest's short keys, which
        # come again; a window that reached 256 characters seldom does.)
        short = (marker, len(behind), behind + buf[start : start + len(marker) + ahead])
        wide = memo.wide.get(short)
        if wide is not None:
            ahead = wide
            if start + len(marker) + ahead > len(buf):
                return start + len(marker) + ahead + (0 if short in memo.exact else _BATCH) if hold else None
    return _key(sc, marker, start, len(behind), behind + buf[start : start + len(marker) + ahead])


def _key(sc: Any, marker: str, start: int, back: int, window: str) -> tuple:
    """The memo key of the region of `marker` at `start` whose window (from `back`
    characters before the marker) is `window`: those, and the scanner's state the
    region reads (key_of; prose_end's reuse of the last marker's window)."""
    line_call = start - (sc.line_call_end - sc.base)
    if not 0 <= line_call <= back:
        line_call = -1
    return (marker, back, _think(sc), window, line_call)


def _think(sc: Any) -> Any:
    """The key's third item: in_open_think, and where a line break ahead opens lists
    again (Scanner.relist: a broken list's line, its markers read before that break),
    that relist's look too, which the prose a region puts out moves on (_relist_past) and
    a call's after_call ends (relist_tail): the region's reading reads it and sets it
    anew, as read() sets it where the outcome is given (_relist)."""
    return sc.in_open_think if not sc.relist else (sc.in_open_think, sc.relist_tail, sc.relist_open, sc.relist_quote)


def _closed_within(memo: Memo, sc: Any, buf: str, start: int, marker: str) -> int:
    """The window's length after the marker, where an end marker of the formats it
    begins comes within _AHEAD: to that end marker, and _SHUT_MARGIN after it (so a
    region whose reading ends there has one key whatever text follows: a reply of a
    few kinds of block in varying order; QA12 N7). Its certification tells whether a
    stream's reading decides the region on so much text; where one waits, the windows of
    that text see further from then on (memo.wide). _AHEAD where none comes so."""
    ends = memo.ends.get(marker)
    if ends is None:
        ends = memo.ends[marker] = tuple({e for fmt in sc.by_marker[marker] for e in fmt.ends if e})
    lo = start + len(marker)
    shut = -1
    for e in ends:
        at = buf.find(e, lo, lo + _AHEAD - _SHUT_MARGIN)
        if at >= 0 and (shut < 0 or at + len(e) < shut):
            shut = at + len(e)
    return _AHEAD if shut < 0 else shut - lo + _SHUT_MARGIN


def read(sc: Any, out: list, key: tuple, start: int, final: bool = True) -> bool:
    """Read the region at `start` through the memo (True: done, out and the scanner
    set as the region's reading sets them, or the region begun: a stream's); False:
    read it the usual way."""
    memo = sc.storm
    known = memo.known.get(key)
    if known is not None and (not known[3] or _listed_hold(sc, memo, marker_of(key), known[3], start, final)):
        items, end, noted, _, watch, relist = known
        moved = _moved(items, start)
        out.extend(moved)
        sc.pos = start + end
        # (As the usual reading ends its region: where the last region ended, read_to,
        # too. Left behind, _after_object read a `}` inside the remembered regions as
        # the model's prose and parse() declined the call on the next line that a
        # stream, which read that region itself, read: fuzz seed 7 #4436.)
        sc._end_region()
        # (A region begun ends the watch for stray closers after the last call, as
        # Scanner._begin does for the usual reading: left armed, the prose after a
        # remembered outcome was searched where the usual reading's was not, and
        # parse() told closers in a fence as an error that a stream, which had not
        # the key, read as text: fuzz seed 7 #507206.)
        sc.stray = None
        if noted is not None:
            _noted(sc, moved, noted, final)
            if sc.read_to < sc.base + start + end:
                # (after_call set it at the last call's end; the usual reading ends its
                # region after that call, at the region's end (_end_region), where text
                # follows the call in the region: `<|START_ACTION|>{…}<|END_RESPONSE|> `.
                # Left at the call's end, Scanner._after_object looked back into the
                # region's text where the usual reading did not.)
                sc.read_to = sc.base + start + end
        if watch is not None:
            # (The end markers of a Python region broken at the next call's marker, which
            # the prose after that call takes as the region's markup: RegionReader.
            # _watch_after, Scanner.after_call. Left unset, parse() kept the
            # `<|tool_call_end|>` after a remembered region's call as text where a stream,
            # which read that region itself, made it markup: fuzz seed 7 #95016453. Set
            # after the last call's note, as the reading sets it after that call's
            # after_call, which drops any watch: a Hermes payload closed by its
            # `</tool_call>`, cut at a call after its JSON, RegionReader.run.)
            sc.outer_watch = (watch[0], sc.base + start + watch[1], *watch[2:])
        if relist is not None:
            # (A marker's list of Python calls, its end marker left out, its line ended at
            # the list's `]`: the next line opens lists again (Scanner.relist, set at the
            # region's end by salvage). Left unset, parse() read the next line's list
            # `[g(a="x")]` as prose after a remembered `<|tool_call_start|>[f()]` where
            # the reading without the memo read it as a call: LFM2 list storms, no tools.
            # Where it was on before the region (the key's, _think), as its reading left it.)
            sc.relist, sc.relist_tail, sc.relist_open, sc.relist_quote = relist
        elif sc.relist:
            sc.relist = False  # (a line break in its prose: _relist_past)
        return True
    if known is not None:
        return False  # (its values read up to a list's `]` do not hold here: read the usual way)
    recent = memo.recent
    if key in recent and key not in memo.refused and len(memo.known) < _KEPT and len(memo.refused) < _KEPT:
        return _certify(sc, out, key, start, memo, final)
    _note_recent(memo, key)
    return False


def _note_recent(memo: Memo, key: tuple) -> None:
    """Note `key` as the last region's (memo.recent): the last _RECENT keys, fewer where
    their windows hold more than _RECENT_CHARS characters in all (so many short keys of
    a storm are kept, and no more text than 64 of the longest windows)."""
    recent = memo.recent
    if recent.pop(key, 0) is None:
        memo.recent_chars -= len(key[3])
    recent[key] = None
    memo.recent_chars += len(key[3])
    while len(recent) > _RECENT or memo.recent_chars > _RECENT_CHARS:
        old = next(iter(recent))
        del recent[old]
        memo.recent_chars -= len(old[3])


def _certify(sc: Any, out: list, key: tuple, start: int, memo: Memo, final: bool) -> bool:
    """Read the region the usual way, and remember its outcome if a stream's reading of
    the key's window decides it the same (False: the usual way is left to read it:
    a call the fast frame reads, or, in a stream, may still read)."""
    marker, back, _, window, line_call = key
    candidates = sc.by_marker[marker]
    frame = None if marker in sc.line else sc.frames[marker]
    if frame is not None and frame.read(sc.buf, start, final, sc.tools) is not None:
        # (A call the fast frame reads: the usual way reads it, and the calls after it.)
        memo.refused.add(key)
        return False
    n = len(out)
    relisted = _relist(sc)  # (the key's, _think: the stream's reading starts from it too)
    # (The values its drivers read up to a list's `]`, a whole text's: Driver.listed_log.)
    log = sc.listed_log = [] if final else None
    outer = sc.outer_watch
    sc._begin(candidates, start, len(marker), None)
    reader = sc.region
    try:
        sc.region.run(out, final, False)
    finally:
        sc.listed_log = None
    if sc.region is not None or sc.mode != "prose":
        # (Not decided on the text so far, a stream's: its region reads on, as usual.
        # Once it is decided, the windows of its text see as far as its reading read
        # (memo.pending, region()): no further. A hold of _AHEAD_LONG for every later
        # region of the marker, as once, delayed calls that their own reading decides
        # sooner, where keys come again soon: a Gemma call quoted after others,
        # test_stream's quoted_calls_then_a_call_whose_end_is_past_the_look, done 2,000
        # characters later. Without any widening, a storm of strings each quoting a
        # call, each waiting so, was read region by region: 59 -> 309 ms, 8-character
        # deltas, 32 KB.)
        memo.refused.add(key)
        if sc.region is not None:
            sc.mode = "region"
            memo.pending = (_short(sc, memo, key, start), sc.base + start + len(marker), len(sc.buf) - start - len(marker), key, relisted)
        return True
    got = _relative(out[n:], start), sc.pos - start, _relist(sc)
    listed = _logged(sc, log, start) if log else ()
    if listed is None:
        memo.refused.add(key)  # (a call read at a value's cut that the memo cannot check: see _logged)
        return True
    seen = _stream_reading(sc, window, back, marker, candidates, line_call, listed, relisted)
    # (The watch the reading armed for the region's end marker, at the marker that broke
    # it, relative to the region: read() arms it as the reading did.)
    watch = sc.outer_watch
    watch = None if watch is None or watch is outer else (watch[0], watch[1] - sc.base - start, *watch[2:])
    # (What _to_note finds must lie in the text the window holds as it is: from the
    # marker on, where its look-behind is _behind's fact, not the text.)
    real = back if sc.buf.startswith(window[:back], start - back) else 0
    if seen is not None and repr(seen) == repr(got):
        memo.known[key] = (_planned(got[0]), got[1], _to_note(sc, got[0], marker, start, real, len(window) - back + real, final), listed, watch, got[2])
        return True
    if seen is None and final and not listed:
        # (A whole text's region whose list's last value runs on to the end of the
        # reply: a stream's reading of any window waits on it, and each such region was
        # read and salvaged anew, 336-388 ms at 32 KB: see _tail.)
        width = len(window) - back
        tail = _tail(sc, reader, start, width) if got[1] < width - _TAIL_MARGIN and all(getattr(i, "end", 0) < width - _TAIL_MARGIN for i in got[0]) else None
        if tail is not None:
            memo.known[key] = (_planned(got[0]), got[1], _to_note(sc, got[0], marker, start, real, len(window) - back + real, final), tail, watch, got[2])
            return True
    memo.refused.add(key)
    if seen is None and len(window) - back - len(marker) < _AHEAD_LONG:
        # (It waited: the next keys of its window see further; _AHEAD first, where it
        # was shorter. A stream holds the marker's regions for so much text.)
        _widen(sc, memo, key, start, _AHEAD if len(window) - back - len(marker) < _AHEAD else _AHEAD_LONG)
    return True


def _least_width(sc: Any, key: tuple, after: int, held: int, seen: int, relisted: tuple | None) -> int | None:
    """The least width after the marker of a window of the region whose key is `key`,
    its text after the marker beginning at `after` in the reply, that a stream's reading
    of it alone decides: more than `held` (the text its certification held, on which the
    stream's own reading waited), at most `seen` (the text when it was decided, which the
    delta that decided it, and the prose after it up to the next marker, may have brought
    more of than the reading needed). None where the buffer no longer holds that text.
    Held for `seen`, a region of the key was decided up to a delta (or a few characters of
    prose) later than its own reading decides it: the memo's regions are held for this
    width, no _BATCH more (memo.exact), and no later than that. (A reading that decides
    on a text decides on any longer one: that is what a stream's wait is. The width's key
    is certified as any other: its window's reading must decide as the usual one does.)"""
    marker, back, _, window, line_call = key
    at = after - sc.base  # (in the buffer)
    if at - len(marker) < 0 or not sc.buf.startswith(window[back:], at - len(marker)):
        return None
    text = window[:back] + sc.buf[at - len(marker) : at + seen]
    candidates = sc.by_marker[marker]
    lo, hi = held, seen  # (lo does not decide; hi did)
    walks: dict = {}
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _stream_reading(sc, text[: back + len(marker) + mid], back, marker, candidates, line_call, (), relisted, walks) is None:
            lo = mid
        else:
            hi = mid
    return hi


def _short(sc: Any, memo: Memo, key: tuple, start: int) -> tuple:
    """The entry of memo.wide for `key`'s text up to _closed_within's end (the first part
    of its window, or all of it)."""
    marker, back, _, window, _ = key
    return marker, back, window[: back + len(marker) + _closed_within(memo, sc, sc.buf, start, marker)]


def _widen(sc: Any, memo: Memo, key: tuple, start: int, wide: int) -> None:
    """Note that the windows of `key`'s text up to _closed_within's end are `wide` after
    the marker from now on (key_of)."""
    _widen_short(memo, _short(sc, memo, key, start), wide)


def _widen_short(memo: Memo, short: tuple, wide: int) -> bool:
    if memo.wide.get(short, 0) < wide and len(memo.wide) < _KEPT:
        memo.wide[short] = wide
        memo.widened += 1
        memo.exact.pop(short, None)
        return True
    return False


def _to_note(sc: Any, items: list, marker: str, start: int, back: int, width: int, final: bool) -> tuple | None:
    """What the reading of a call also notes, for an outcome moved into place (_noted):
    (the index of its last call, or of the last region holding one, that call's format,
    and what Scanner.after_call finds in the text there: (stray.watch_args' arguments,
    the closer of the call, and, where `final`, what stray.line_after then tells of the
    call's line: _line_told), or None where that reads outside the key's window, which
    begins `back` before the marker at `start` and is `width` long), or None. Found once,
    when the outcome is remembered. Its fifth item: (the index of a region with no call
    in it after that, the last one, and its format) where the reading ended its
    after_call there, or None: see _empty_after.)"""
    empty = _empty_after(sc, items, marker, start)
    for k in range(len(items) - 1, -1, -1):
        item = items[k]
        if type(item) is ToolCall:
            name = item.format
        elif type(item) is Region and any(type(part) is Draft for part in item.items):
            name = item.fmt
        else:
            continue
        if empty is not None and empty[0] < k:
            empty = None  # (a call after it: that call's after_call is the last)
        for fmt in sc.by_marker[marker]:
            if fmt.name == name:
                known = None
                if type(item) is Region:
                    end = start + item.end
                    args, low = _stray.watch_args(fmt, item, sc.buf, end)  # (of its Drafts: names, keys)
                    closers = [e for e in fmt.ends if len(e) >= 3]
                    if fmt.stream_call is not None:
                        closers.append(fmt.stream_call[1])
                    low = min(low, end - max(map(len, closers), default=0))
                    if low >= start - back:
                        told = _line_told(sc, args, end, start - back + width) if final and args is not None else None
                        known = args, _frame.closer_of(fmt, sc.buf, end), told
                    elif low >= max(0, start - _PRE):
                        # (It reads back past the window's look-behind, a few characters
                        # (the closers' width back from the region's end, where the region
                        # is shorter: `<function=x` repeated). That text, as it is, goes
                        # with it: _noted takes `known` where a region's text there is the
                        # same. The key's look-behind is a normalized fact, _behind.)
                        told = _line_told(sc, args, end, start - back + width) if final and args is not None else None
                        return k, fmt, (args, _frame.closer_of(fmt, sc.buf, end), told), (sc.buf[low:start], low - end), empty
                return k, fmt, known, None, empty
        break  # (the last call's format is not the marker's: nothing of it to note)
    return None if empty is None else (-1, None, None, None, empty)


def _empty_after(sc: Any, items: list, marker: str, start: int) -> tuple | None:
    """The last region of `items` (relative to the marker at `start`) with no call in it
    (a message's markers, `<tool_calls></tool_calls>`) whose after_call the reading made
    (Scanner._after_call: where the last call read ends, call_to, is its end; no watch
    for stray closers, no end watch), and its format; None where none is. That is the
    scanner's state after it: left as it was before the remembered outcome, an
    end-of-turn token after it was text in parse() where a stream, which read that
    region itself, found it right after a call and made it markup (Scanner.
    _turn_between; fuzz seed 7 #112011417). It reads no text: kept for any window."""
    for k in range(len(items) - 1, -1, -1):
        item = items[k]
        if type(item) is ToolCall:
            return None
        if type(item) is not Region:
            continue
        if any(type(part) is Draft for part in item.items):
            return None
        if sc.call_to != sc.base + start + item.end:
            return None  # (its after_call not made, or another's after it)
        for fmt in sc.by_marker[marker]:
            if fmt.name == item.fmt:
                return k, fmt
        return None
    return None


def _line_told(sc: Any, args: tuple, end: int, stop: int) -> tuple | None:
    """What stray.line_after tells (final) of the line a call ends on, at `end`, where
    what it reads lies before `stop` (the window's end): (armed, fresh) of the Watch
    after it, or () where it ends the watch (False); None: it reads further."""
    buf = sc.buf
    widest = max(map(len, (*args[1], *args[2])))
    # (What it reads: the blanks after the call, at most _AFTER, and a closer there; the
    # blanks to the line's end or its next character.)
    j = _stray._BLANKS_AFTER.match(buf, end).end()
    if max(j + widest, _stray._LINE_BLANKS.match(buf, end).end() + 1) >= stop:
        return None
    w = _stray.Watch(args[0], args[1], args[2], args[3], args[4], sc.base + end, args[5], args[6])
    if _stray.line_after(w, buf, sc.base, True) is False:
        return ()
    return w.armed, w.fresh


def _noted(sc: Any, moved: list, noted: tuple, final: bool) -> None:
    """What the reading of a call also notes, noted for the outcome moved into place: the
    last call's closer, which the model may write again right after it (Scanner.after_call;
    without it, from a storm's fourth call on, a closer written twice was text: QA7 D1),
    and what the prose after it is searched for (stray.Watch), as found when the outcome
    was remembered where that is the window's (the same text at each region of the key);
    and (final: as a whole text reads it) what stray.line_after tells of the call's line,
    which Scanner._in_prose asks first (the watch armed, or ended: not asked again)."""
    k, fmt, known, pre, empty = noted
    if k >= 0:
        item = moved[k]
        if type(item) is ToolCall:
            sc.after_call(item.span[1], fmt, start=item.span[0])
        else:
            if pre is not None:
                at = item.end + pre[1]
                if at < 0 or not sc.buf.startswith(pre[0], at):
                    known = None  # (the text it read back differs here: after_call finds it)
            sc.after_call(item.end, fmt, item, known, item.start)
            if final and known is not None and known[2] is not None:
                told = known[2]
                if not told:
                    sc.stray = None
                elif sc.stray is not None:  # (none after a call at a broken call's cut: after_call)
                    sc.stray.armed, sc.stray.fresh = told
    if empty is not None:
        # (A region with no call after it, as the reading ended it: _empty_after.)
        item = moved[empty[0]]
        sc.after_call(item.end, empty[1], item, None, item.start)


def marker_of(key: tuple) -> str:
    return key[0]


def _logged(sc: Any, log: list, start: int) -> tuple | None:
    """The certification's log (Driver.listed_log), relative to the marker at `start`:
    (format, place) of each value read up to a list's `]`; (format, place, the marker
    it was cut at, where the call read there ends from that marker, the text that call
    was read in) of each string left open cut at its own start marker (_close.
    _own_noted). That text is what Scanner._own_reads_at reads, the stretch from the
    marker up to the format's next start marker, and that start marker: the same text
    at another marker (_own_hold) is the same stretch, read to the same end. None where
    it is not so told: a format of more than one start marker (which of them ends the
    stretch is told by the order they are looked for in), a stretch to the end of the
    text (no next marker), or a call a fast frame read (which the memo does not check)."""
    out = set()
    buf = sc.buf
    for entry in log:
        if len(entry) == 2:
            out.add((entry[0], entry[1] - start))
            continue
        name, at, m = entry
        fmt = _named(sc, name)
        kept = sc.own_reads
        if fmt is None or len(fmt.starts) != 1 or kept is None or kept[0] is not buf or kept[1] is not fmt or not kept[2].get(m):
            return None
        own = fmt.starts[0]
        stop = buf.find(own, m + 1)
        if stop < 0:
            return None
        out.add((name, at - start, m - start, kept[2][m] - m, buf[m : stop + len(own)]))
    return tuple(sorted(out))


def _named(sc: Any, name: str) -> Any:
    """The format named `name` of those the scanner reads."""
    for fmts in sc.by_marker.values():
        for fmt in fmts:
            if fmt.name == name:
                return fmt
    return None


def _probe(sc: Any, memo: Memo, name: str, start: int) -> Any:
    """A driver of the format named `name` on this reply, made as RegionReader.driver
    makes a region's (its cutter the scanner's), whose _cut tells how a value of the
    format at a place is cut (_listed_hold, _own_hold); None for an Earley format."""
    probe = memo.probes.get(name)
    if probe is None:
        fmt = _named(sc, name)
        if fmt is None or fmt.parser == "earley":
            return None
        room = max(sc.max_prefix + 1, *map(len, fmt.ends)) if fmt.ends else sc.max_prefix + 1
        probe = memo.probes[name] = Driver(fmt, start, sc.brackets, (sc._markers_from, room, sc.prefixes, sc.find, sc.call_reads_at, sc.turn_list, sc.call_re, sc.call_before, sc.cut_symbols, sc.cut_keys), False)
    return probe


def _own_hold(sc: Any, memo: Memo, entry: tuple, start: int) -> bool:
    """Whether the value the certified region's reading cut at its own format's start
    marker, a call read there (_close._own_noted: (format, place, marker, the call's
    end), from the marker at `start`), is cut so in this reply too: read as the whole
    text's driver reads it (Driver._lex: no code fence's close ends it, Python's reading
    of its string does not close it, and _close.cut cuts it at that marker: its string
    open to the end of this reply, nothing breaking it before). The call at the marker is
    the one the certification read there where the stretch Scanner._own_reads_at reads,
    up to the format's next start marker, and that marker, are the text the certification
    read it in (_logged): the same text gives the same answer, put in as that reading's,
    not read again."""
    name, rel, mrel, erel, stretch = entry
    buf = sc.buf
    at, m = start + rel, start + mrel
    owned = memo.owned
    if owned is None or owned[0] is not buf:
        owned = memo.owned = (buf, set())
    if (name, at, m) in owned[1]:
        return True  # (told at the region before: told by the text and the places alone)
    if not buf.startswith(stretch, m):
        return False  # (another call at the marker, or none: read the usual way)
    probe = _probe(sc, memo, name, start)
    brackets = sc.brackets
    if probe is None or probe.brackets is not brackets:
        return False
    kept = sc.own_reads
    if kept is None or kept[0] is not buf or kept[1] is not probe.fmt:
        kept = sc.own_reads = (buf, probe.fmt, {})
    kept[2][m] = m + erel  # (the stretch's: see _logged)
    if _fence_cut(probe, buf, at) >= 0:
        return False
    if buf[at] in "'\"":
        quoted = probe._quoted(buf, at, True)
        if quoted is not None and quoted is not _repair.OPEN and (type(quoted) is _repair.QuoteWait or quoted[1] is not False):
            return False
    end = None if _repair.open_known(buf, at) else brackets.argument_end(buf, at)
    if probe._cut(buf, at, end, True) != m:
        return False
    owned[1].add((name, at, m))
    return True


def _listed_hold(sc: Any, memo: Memo, marker: str, listed: tuple, start: int, final: bool) -> bool:
    """Whether the values the certified region's drivers read up to a list's `]`, which
    ran on to the end of its window (Driver.listed_log: (format, place from the marker)),
    are read so in the region at `start` too: each runs on to the end of this reply (no
    `,` or `)` at its depth ends it), no marker cuts it, and no code fence's close ends
    it, as the whole text's reading asks before it reads the value so (Driver._lex). The
    rest of that reading is the window's (the list's `]`, text after it), which the key
    holds. A whole text only (a stream's own reading never reads a value so)."""
    brackets = sc.brackets
    if not final or brackets is None:
        return False
    buf = sc.buf
    if brackets.arguments is None:
        brackets.arguments = StopIndex(",)")
    for entry in listed:
        if len(entry) == 3:
            if not _tail_hold(sc, memo, entry, start):
                return False
            continue
        if len(entry) == 5:
            if not _own_hold(sc, memo, entry, start):
                return False
            continue
        name, rel = entry
        at = start + rel
        # (argument_end's answer; not its look at the next characters first, which
        # finds no end in such a value: only the index's, to the end of the text.)
        if brackets.arguments.end(buf, at) < len(buf):
            return False
        probe = _probe(sc, memo, name, start)
        if probe is None or probe.brackets is not brackets:
            return False
        if _fence_cut(probe, buf, at) >= 0:
            return False
        cut = probe._cut(buf, at, None, True)
        if cut is not None and not (probe._cut_past_list(buf, cut) and (brackets.list_close(buf, at) or cut) < cut):
            return False  # (a marker cuts it, not one after the list's `]`: see Driver._lex)
    return True


def _tail(sc: Any, reader: Any, start: int, width: int) -> tuple | None:
    """A whole text's region whose reading a stream's reading of its window cannot
    decide only because a Python list's last value runs on to the end of the reply
    (`[get_weather("Paris"), search(q="x"),\n[get_weather(city="Paris")]\n[…` one a
    line: `[…]\n[…]` is one value, ended by no `,`, `)` or `]` at its depth): every
    candidate's driver failed inside the window, or read such a list, the end of the
    reply closing it (closed_tag), and the region's outcome, its failures' quotes and the
    list rule's looks (RegionReader.elsewhere) lie inside the window. Then the reading
    is the window's but for that value, which ends with the reply: (format, the value's
    place from the marker, "end") for each, which _tail_hold checks at each region the
    outcome is given to. None where not so. (Formats with end markers are left out: a
    failure of theirs is settled by an end marker after it, which the rest may hold.)"""
    if reader is None or sc.tools is None or any(fmt.ends for fmt in reader.candidates):
        return None  # (a format with end markers: its failure is settled by one after it, which the tail may hold)
    buf = sc.buf
    if _NONBLANK.search(buf, start + width) is None:
        return None  # (the window reaches the end of the reply: read it the usual way)
    out = []
    for d in reader.drivers:
        if getattr(d, "c", None) is None or d.fmt.parser == "earley":
            return None
        if d.status == "fail" and max(d.pos, d.end) - start < width - _TAIL_MARGIN:
            continue
        if d.status != "done" or "closed_tag" not in d.repairs or d.last_term != "PYVALUE" or d.listed not in (None, -1):
            return None
        if _NONBLANK.search(buf, d.end) is not None or not 0 <= d.last_start - start < width - _TAIL_MARGIN:
            return None
        out.append((d.fmt.name, d.last_start - start, "end"))
    if not out:
        return None
    from .region import first_named  # (region.py imports this module)

    for rule, at, told in reader.rule_looks:
        # (The list rule's looks (offered_elsewhere): each told by an offered name written
        # inside the window, after the text it looked from, so told the same in any region
        # of the key, whatever the text after the window.)
        if not told or not 0 <= first_named(rule[0], buf, at, sc.tools) - start < width - 1:
            return None
    return tuple(sorted(out))


_NONBLANK = re.compile(r"\S")
# (How far inside the window what _tail takes must lie: a failure's quote of the text, and
# the rest of the reply a salvage point compares with the close literals, are the window's.)
_TAIL_MARGIN = 128


def _tail_hold(sc: Any, memo: Memo, entry: tuple, start: int) -> bool:
    """Whether the value _tail noted runs on to the end of this reply too, as the
    certified reading read it: no `,` or `)` at its depth ends it, no `]` at its depth
    (salvage.list_closed finds none), no marker cuts it, no code fence's close ends it,
    and no end-of-turn token ends the reply (the text the drivers read is the buffer)."""
    brackets = sc.brackets
    buf = sc.buf
    name, rel, _ = entry
    at = start + rel
    if brackets.arguments.end(buf, at) < len(buf):
        return False
    if brackets.list_closes is None:
        brackets.list_closes = StopIndex("]")
    if brackets.list_closes.end(buf, at) < len(buf):
        return False  # (list_close's answer, from its index alone: no `]` at its depth after it)
    probe = _probe(sc, memo, name, start)
    if probe is None or probe.brackets is not brackets:
        return False
    if _fence_cut(probe, buf, at) >= 0:
        return False
    if probe._cut(buf, at, None, True) is not None:
        return False
    from .region import _before_turn_end

    return _before_turn_end(sc, probe) is buf


def _stream_reading(sc: Any, window: str, back: int, marker: str, candidates: list, line_call: int = -1, listed: tuple = (), relisted: tuple | None = None, walks: dict | None = None) -> tuple | None:
    """What a stream's reading (final=False) of the region at `back` in `window` decides,
    as Scanner._in_prose begins it (the fast frame, or a line-anchored marker's opening
    test, first): (its items relative to the marker, its end relative to it, the relist
    it sets: _relist; `relisted` is the scanner's before the usual reading); None when
    it waits, or does not go as the usual way went (a call the frame reads, a line no
    grammar begins a call on)."""
    o = copy.copy(sc)
    # Nothing of the reply's text, nor the answers about it, is the copy's (they are
    # kept per buffer, in objects the scanner shares with its copy: fresh ones here).
    o.buf, o.pos, o.base, o.mode, o.region = window, back, 0, "region", None
    # (Where the last line of calls ended, as the key has it: in the window, or none.)
    o.line_call_end = back - line_call if line_call >= 0 else -1
    o.reply_end = -1
    o.finds = o.brackets = o.nest_walks = o.sink = o.waiting = o.start_test = o.plain = o.observer = None
    # (But the nest walks of readings of one text cut at several places, which _least_width
    # makes: each kept with the text that tells it, as the scanner's are.)
    o.nest_walks = walks
    o.mf_buf, o.mf_found, o.mf_first, o.mf_kept, o.mf_spare = None, {}, (-1, -1), None, None
    o.word_buf, o.word_next, o.word_first, o.symbol_next = None, {}, None, None
    o.whole_next, o.whole_keys = None, []
    o.opener_runs = {}
    o.pending, o.pending_n, o.held = [], 0, ""
    o.storm = None
    # (Told that the whole text's reading read these values up to a list's `]`, which
    # the memo checks at each region it gives the outcome to: _listed_hold.)
    o.listed_log, o.listed_hint = None, frozenset((e[0], back + e[1]) for e in listed if len(e) == 2) or None
    o.own_hint = {(e[0], back + e[1]): back + e[2] for e in listed if len(e) == 5} or None
    o.own_reads = None
    # (The relist as it was before the usual reading, which may have set it.)
    o.relist = False
    if relisted is not None:
        o.relist, o.relist_tail, o.relist_open, o.relist_quote = relisted
    frame = o.frames[marker]
    if frame is not None and frame.read(window, back, False, o.tools) is not None:
        return None
    if marker in o.line:
        test = o.line_openers.get(marker)
        if test is not None and (not openers(test, window, back, False) or len(window) - back < _START_WAIT):
            return None
    o._begin(candidates, back, len(marker), None)
    out: list = []
    if not o.region.run(out, False, False) or o.region is not None or o.mode != "prose":
        return None
    return _relative(out, back), o.pos - back, _relist(o)


def _relist(sc: Any) -> tuple | None:
    """The scanner's relist and its look (Scanner.relist: the next line break opens lists
    again), where on: what a region's reading may set at its end (salvage, a marker's
    list of Python calls whose end marker was left out), which a remembered outcome sets
    too (read); None where off."""
    return (True, sc.relist_tail, sc.relist_open, sc.relist_quote) if sc.relist else None


def _relative(items: list, start: int) -> list:
    moved = [_copy(item) for item in items]
    _rebase(moved, -start)
    return moved


def _moved(items: list, start: int, _new=tuple.__new__) -> list:
    """A copy of the items, `start` further on: a Piece, most of a prose storm's, made
    moved at once, not copied and then made again by _rebase; a Region, most of a call
    storm's, made from its plan (_planned: no walk of it); the rest copied and moved."""
    moved = []
    for item in items:
        t = type(item)
        if t is Piece:
            moved.append(_new(Piece, (item[0], item[1] + start, item[2] + start, item[3])))
        elif t is tuple:  # (a Region's plan)
            moved.append(_region_from(item, start))
        else:
            one = [_copy(item)]
            _rebase(one, start)
            moved.append(one[0])
    return moved


def _planned(items: list) -> list:
    """The items of a remembered outcome, each Region as its plan: what _copy would copy
    of it and of its Drafts (a list or dict of atoms and atom tuples: copied flat, which
    is what _copy makes of it; anything else by _copy), found once, so that a memo hit,
    of which a call storm has thousands, copies a Region in a third of _copy's time."""
    out = []
    for item in items:
        if type(item) is not Region:
            out.append(item)
            continue
        parts = []
        for part in item.items:
            parts.append((_record_plan(part), type(part)) if type(part) is Draft else part)
        out.append((_record_plan(item, "items"), parts))
    return out


def _record_plan(record: Any, *skip: str) -> tuple:
    """(its fields, the keys of those copied flat, the keys of those copied by _copy)."""
    fields = record.__dict__.copy()  # (as _copy copies it: a dict sharing its class's keys, the smaller)
    flat, deep = [], []
    for k, v in fields.items():
        tv = type(v)
        if k in skip or tv in _ATOMS or (tv is tuple and _plain(v)):
            continue
        if (tv is list or tv is dict) and all(
            type(x) in _ATOMS or (type(x) is tuple and _plain(x)) for x in (v.values() if tv is dict else v)
        ):
            flat.append(k)
        else:
            deep.append(k)
    return fields, tuple(flat), tuple(deep)


def _region_from(plan: tuple, start: int, _new=object.__new__) -> Region:
    """A Region made from its plan (_planned), `start` further on: what _copy then
    _rebase make of it (its Drafts' spans moved; any other item copied, a Prose's
    span moved)."""
    (fields, flat, deep), parts = plan
    items = []
    for part in parts:
        if type(part) is tuple:
            (copied, p_flat, p_deep), t = part
            copied = copied.copy()
            for k in p_flat:
                copied[k] = copied[k].copy()
            for k in p_deep:
                copied[k] = _copy(copied[k])
            span = copied["span"]
            copied["span"] = (span[0] + start, span[1] + start)
            if copied["opened"] is not None:  # (a position too: Draft.opened)
                copied["opened"] += start
            new = _new(t)
            new.__dict__ = copied
        else:
            new = _copy(part)
            if isinstance(new, Prose) and new.span is not None:
                new.span = (new.span[0] + start, new.span[1] + start)
        items.append(new)
    fields = fields.copy()
    for k in flat:
        fields[k] = fields[k].copy()
    for k in deep:
        fields[k] = _copy(fields[k])
    fields["start"] += start
    fields["end"] += start
    fields["items"] = items
    region = _new(Region)
    region.__dict__ = fields
    return region


_ATOMS = frozenset((str, int, float, bool, type(None)))


def _copy(value: Any, _new=object.__new__) -> Any:
    """A deep copy of an item (copy.deepcopy, faster on the types items are made of:
    a memo hit copies its items, and a storm has thousands). What cannot change is
    shared, not copied: str, numbers, a Piece, a tuple of those (a span); an empty list
    or dict of a record is made new in place, not copied by another call."""
    t = type(value)
    if t in _ATOMS or t is Piece:
        return value
    if t in _RECORDS:
        new = _new(t)
        fields = value.__dict__
        copied = fields.copy()
        for k, v in fields.items():
            tv = type(v)
            if tv in _ATOMS:
                continue
            if not v and (tv is list or tv is dict):
                copied[k] = tv()
            elif tv is not tuple or not _plain(v):
                copied[k] = _copy(v)
        new.__dict__ = copied
        return new
    if t is list:
        out = value.copy()
        k = 0
        for v in value:
            if type(v) not in _ATOMS:
                out[k] = _copy(v)
            k += 1
        return out
    if t is dict:
        out = value.copy()
        for k, v in value.items():
            if type(v) not in _ATOMS:
                out[k] = _copy(v)
        return out
    if t is tuple:
        return value if _plain(value) else tuple([_copy(v) for v in value])
    return copy.deepcopy(value)


def _plain(value: tuple) -> bool:
    """Whether a tuple holds atoms only (then it is shared, not copied)."""
    for v in value:
        if type(v) not in _ATOMS:
            return False
    return True


_RECORDS = frozenset((Region, Failure, Draft, Prose, Reasoning))


# -- regions a line restart begins (Scanner._start, relisted) ---------------------------
#
# After a list of Python calls that opened the reply was told broken, the next line, where
# the list's line ended at its `]`, opens lists again, as at the reply's start (Scanner.
# relist, relisted): a region begun by _start, with no marker (its candidates are the
# formats the line's first characters may open, lists of Python calls only). A storm of
# such lines (`[f(a=<tool_call>)]` one a line, to 32 KB) had each line's region read the
# general way (issue 17: 140 -> 20 ms at 32 KB). They go through the memo as a marker's
# regions do (see above), with these differences:
#
#  - the key's "marker" is _RESTART, and it holds, with the window (from the look-behind
#    before the line, as key_of's, to _AHEAD after the line's first character), where the
#    prose before the region began (the line break: its blanks go out as the region's
#    prose), the candidates, and the scanner state such a region reads that changes along
#    a reply: in_open_think, line_call_end and outer_watch, relative to the line (a broken
#    region's watch for its end marker: RegionReader._watch_after, Scanner.after_call; its
#    third item, a closed Hermes payload's close, kept as read() keeps it);
#  - the reading is the one _start begins (anchored), and its stream reading in a copy too;
#  - what the reading sets of the scanner's state (the region's end, the relist and its
#    tail, the watches and their places, the last call's closer) is remembered with the
#    outcome, relative to the line, and set so where it is given: the watch for stray
#    closers after the last call kept (stray.Watch, a new one each time: the prose after
#    it moves it on), and the end watch (end_watch: its markers) too, which a line whose
#    calls are kept and then one broken leaves (`[f(a=1), g(b=<tool_call>)]` a line: each
#    line read the usual way before, 14 -> 332 ms at 32 KB, QA qb32); a key whose reading
#    sets any other state, or reads a value up to a list's `]` (listed_log), is refused,
#    read the usual way; and the copy's reading must set that state as the usual one did
#    (as well as its items and end).
#
# A stream holds such a region (from the _STREAK-th in a row, each begun within _AHEAD of
# where the region before ended) until the text holds its window and _BATCH more, as above.

_RESTART = "\n"
# The scanner's fields the region's reading may set (Scanner.__dict__), and how each is
# remembered: a place in the reply (relative to the line's first character; -1 kept), a
# value as it is, or an (end markers, place) watch. Any other that changes: refused.
_REPLY_AT = ("ended", "read_to", "call_to", "line_call_end", "closed_at")
_AS_IS = ("relist", "relist_tail", "relist_open", "relist_quote", "relisted", "line_restart", "end_watch", "watch_outer", "watch_anchored", "closer", "closer_turn", "mode", "region")
_CACHES = frozenset(("brackets", "nest_walks", "turn_hits", "turn_cut", "reply_end", "storm", "pos", "finds", "mf_buf", "mf_found", "mf_first", "mf_kept", "mf_spare",
                     "word_buf", "word_next", "word_first", "symbol_next", "whole_next", "whole_keys", "opener_runs", "listed_log", "outer_watch"))
# (All the fields above, and the watch for stray closers: _state.)
_SET = frozenset((*_REPLY_AT, *_AS_IS, "stray")) | _CACHES


def _state(sc: Any, at: int, before: tuple) -> tuple:
    """What the reading of a restart region set (see _REPLY_AT, _AS_IS), relative to `at`
    (the line's first character, in the reply): of the places, those it changed from
    `before` (None: left as they were)."""
    watch = sc.outer_watch
    w = sc.stray
    return (
        tuple(None if v == b else v if v < 0 else v - at for v, b in zip((getattr(sc, k) for k in _REPLY_AT), before)),
        tuple(getattr(sc, k) for k in _AS_IS),
        None if watch is None else (watch[0], watch[1] - at, *watch[2:]),
        # (The watch for stray closers, its place relative to the line: a Watch is the
        # prose's to move on, so a new one is made of this where the outcome is given.)
        None if w is None else (w.own, w.tags, w.holders, w.name, w.key, w.seen - at, w.firsts, w.longest, w.armed, w.fresh),
    )


def restart(sc: Any, out: list, candidates: list, p: int, final: bool) -> int:
    """The region a line restart begins at `p` (Scanner._start, relisted; sc.start_test
    set), through the memo: 1 done (out and the scanner set as its reading sets them), 2
    read and waiting (a stream's: its reading's own), 0 read it the usual way, -1 (a
    stream, in a storm) hold it until the text holds its window (sc.hold)."""
    memo = sc.storm
    if memo is None:
        memo = sc.storm = Memo()
    at = sc.base + p
    if not final:
        last, n = memo.streak.get(_RESTART, (-1, 0))
        if at != last:
            n = n + 1 if 0 <= at - last and (at - last <= _AHEAD or at - sc.ended <= _AHEAD) else 1
            memo.streak[_RESTART] = at, n
        if n < _STREAK:
            return 0
        need = p + _AHEAD
        if need > len(sc.buf):
            sc.hold = sc.base + need + _BATCH
            return -1
    key = _restart_key(sc, p, candidates)
    if key is None:
        return 0
    known = memo.known.get(key)
    if known is not None:
        items, end, state = known
        out.extend(_moved(items, p))
        sc.pos = p + end
        reply_at, as_is, watch, w = state
        for k, v in zip(_REPLY_AT, reply_at):
            if v is not None:
                setattr(sc, k, v if v < 0 else v + at)
        for k, v in zip(_AS_IS, as_is):
            setattr(sc, k, v)
        sc.outer_watch = None if watch is None else (watch[0], watch[1] + at, *watch[2:])
        if w is None:
            sc.stray = None
        else:
            sc.stray = _stray.Watch(w[0], w[1], w[2], w[3], w[4], w[5] + at, w[6], w[7])
            sc.stray.armed, sc.stray.fresh = w[8], w[9]
        return 1
    recent = memo.recent
    if key in recent and key not in memo.refused and len(memo.known) < _KEPT and len(memo.refused) < _KEPT:
        return _certify_restart(sc, out, key, candidates, p, memo, final)
    _note_recent(memo, key)
    return 0


def _look_behind(sc: Any, buf: str, at: int, blanks: str) -> int | None:
    """Where the look-behind a key holds begins, for a region at `at`: back over the
    `blanks` before it (at most 256), then think_width more; None at the reply's start
    or after a longer run of blanks (look-behinds read it). Shared by _key and
    _restart_key."""
    keep = at - 1
    floor = max(0, at - 256)
    while keep > floor and buf[keep] in blanks:
        keep -= 1
    if keep < 0 or sc.base + keep <= 0 or buf[keep] in blanks:
        return None
    keep -= sc.think_width - 1
    if keep < 0 or sc.base + keep <= 0:
        return None
    return keep


def _tag_ends(sc: Any) -> frozenset:
    """The last characters of the scanner's reasoning tags (_behind), found once a reply."""
    memo = sc.storm
    ends = None if memo is None else memo.tag_ends
    if ends is None:
        ends = frozenset(tag[-1] for tag in sc.think_tags)
        if memo is not None:
            memo.tag_ends = ends
    return ends


def _behind(sc: Any, buf: str, start: int) -> str | None:
    """The look-behind of the key of a region at `start` (the text its window holds
    before the marker): what the region's reading can tell of the text before it.
    Most often that is a small fact, written as text: the last character before the
    marker that is not a space or tab, as it is where it is a line break, another
    space or a backtick, else "x"; then " " where blanks come between it and the
    marker. So a storm whose regions follow varied text has a key per region text, not
    per 50 characters before it (fence storms: 1,233 regions of 108 texts, each its
    own key; issue 17). Where more is read back, the key holds what _look_behind keeps (a stream keeps it too,
    _trim): a reasoning tag ending at that character; the last line of calls ending
    within the look-behind (mention._next_line_call reads the line breaks between it
    and the marker). None: as _look_behind.

    What reads before a marker (every read back in _scan/region, salvage, mention,
    opening, fastpath's frames, pyframe, gem*, twin and _lalr/*: each is bounded by the
    region's start, the value's or the tag's own, but mention._next_line_call's, in
    the key as line_call): nothing. The character kept stands for "not at the reply's
    start, not after a longer run of blanks" (_look_behind; the stream's reading of
    the window alone must not read its marker at the start of a text), and is kept as
    it is where it is a space of any kind or a backtick, for what a reading
    might tell by it; the scanner's own looks back (_in_inline_code, _fence_close,
    quotation.opening, _after_object, instring) are asked before the memo is, in
    Scanner._in_prose, and are not the region's. The rest of what a region's reading
    reads of the text before it is the scanner's state (the key's in_open_think and
    line_call, what _stream_reading resets) and the reply's indexes of brackets and
    values' ends (Scanner.brackets, _lalr/extent.py), whose answers are those of a
    scan forward from the place asked about, in the region: the text after it only."""
    keep = _look_behind(sc, buf, start, " \t")
    if keep is None:
        return None
    last = keep + sc.think_width - 1  # (the last character before the marker that is not a blank)
    if 0 <= start - (sc.line_call_end - sc.base) <= start - keep:
        return buf[keep:start]
    c = buf[last]
    if c in _tag_ends(sc):  # (one look at a character where no reasoning tag ends: most)
        for tag in sc.think_tags:
            if buf.startswith(tag, last + 1 - len(tag)):
                return buf[keep:start]
    if not (c.isspace() or c == "`"):
        c = "x"
    return c if last + 1 == start else c + " "


def _restart_key(sc: Any, p: int, candidates: list) -> tuple | None:
    buf = sc.buf
    if p + _AHEAD > len(buf):
        return None
    keep = _look_behind(sc, buf, p, " \t\n\r")  # (line breaks too: a line restart's text)
    if keep is None or sc.pos < keep:
        return None
    at = sc.base + p
    line_call = at - sc.line_call_end
    if not 0 <= line_call <= p - keep:
        line_call = -1
    watch = sc.outer_watch
    watch = None if watch is None else (watch[0], watch[1] - at, *watch[2:])
    names = tuple(f.name for f in candidates)
    return (_RESTART, p - keep, sc.in_open_think, buf[keep : p + _AHEAD], line_call, p - sc.pos, watch, names)


def _certify_restart(sc: Any, out: list, key: tuple, candidates: list, p: int, memo: Memo, final: bool) -> int:
    """_certify's, for a restart region (see restart)."""
    n = len(out)
    before = dict(sc.__dict__)
    places = tuple(getattr(sc, k) for k in _REPLY_AT)
    log = sc.listed_log = [] if final else None
    sc._begin(candidates, p, 0)
    try:
        done = sc.region.run(out, final, True)
    finally:
        sc.listed_log = None
    if not done or sc.region is not None or sc.mode != "prose":
        memo.refused.add(key)
        return 1 if done else 2
    at = sc.base + p
    got = _relative(out[n:], p), sc.pos - p
    state = _state(sc, at, places)
    after = sc.__dict__
    known = _SET
    changed = [k for k, v in after.items() if k not in known and (k not in before or before[k] is not v and before[k] != v)]
    if log or changed:
        memo.refused.add(key)
        return 1
    seen = _restart_reading(sc, key, candidates, places)
    if seen is not None and repr(seen) == repr((got, state)):
        memo.known[key] = (_planned(got[0]), got[1], state)
        return 1
    memo.refused.add(key)
    return 1


def _restart_reading(sc: Any, key: tuple, candidates: list, places: tuple) -> tuple | None:
    """_stream_reading's, for a restart region: ((items, end), state) relative to the
    line's first character, or None where the copy's reading waits."""
    _, back, _, window, line_call, pos_back, watch, _ = key
    o = copy.copy(sc)
    o.buf, o.pos, o.base, o.mode, o.region = window, back - pos_back, 0, "start", None
    o.line_call_end = back - line_call if line_call >= 0 else -1
    o.outer_watch = None if watch is None else (watch[0], watch[1] + back, *watch[2:])
    o.reply_end = -1
    o.finds = o.brackets = o.nest_walks = o.sink = o.waiting = o.start_test = o.plain = o.observer = None
    o.turn_hits = o.turn_cut = None
    o.mf_buf, o.mf_found, o.mf_first, o.mf_kept, o.mf_spare = None, {}, (-1, -1), None, None
    o.word_buf, o.word_next, o.word_first, o.symbol_next = None, {}, None, None
    o.whole_next, o.whole_keys = None, []
    o.opener_runs = {}
    o.pending, o.pending_n, o.held = [], 0, ""
    o.storm = None
    o.listed_log = o.listed_hint = None
    for k, v in zip(_REPLY_AT, places):
        setattr(o, k, v if v < 0 else -1 - v)  # (before the window: changed, or left as they were)
    o.line_call_end = back - line_call if line_call >= 0 else -1
    places = tuple(getattr(o, k) for k in _REPLY_AT)
    o._begin(candidates, back, 0)
    out: list = []
    if not o.region.run(out, False, True) or o.region is not None or o.mode != "prose":
        return None
    return (_relative(out, back), o.pos - back), _state(o, back, places)
