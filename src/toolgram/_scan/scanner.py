"""The scanner: splits a reply into prose, reasoning and call regions.

It is incremental. `feed(text)` appends to the buffer and reports every piece
whose meaning can no longer change; `finish()` reports the rest. One-shot
parsing is `read(all)`, the same as `feed(all); finish()` (a stream in one
piece), so a stream and a whole reply take the same decisions: where more text
could change a decision, the scanner waits.

Prose is never given to Lark: a search for plain text finds the next start
marker of any active format (or <think>) -- in a whole text, a str.find of each
first character or word that the text holds (_whole_next), in a stream the
searches of _next_literal -- and only the region from there is parsed by that
format's grammar (see _lalr/driver.py), or, when the first format at that marker
has a fast frame and the region is a plain call, by one regex (fastpath.py). In a
whole reply, a run of such calls goes to the Assembler as it is read
(fastpath.run).

The parts: markers.py (Markers and the marker searches: MarkerSearch, a base of
Scanner), region.py (RegionReader: one region's candidates and drivers), the
recovery policies in mention.py and salvage.py, and the
opening tests of reply-anchored formats in opening.py.
"""

from __future__ import annotations

import copy as _copy
from dataclasses import replace as _replace
from typing import Any

import regex

from . import fastpath as _frame
from .gemcall import GemmaFrame as _GemmaFrame
from .items import INVISIBLE, OUTER_CUT as _OUTER_CUT, Failure, Piece, Region, _piece, _rebase
from .markers import THINK_CLOSE, THINK_OPEN, Frames, MarkerSearch, Markers, _CharWait, _trie, markers_for  # noqa: F401
from .opening import _START_WAIT, line_opening, marker_opens, marker_test_local, may_open, opening, openers
from .region import _FRAME_WAIT, RegionReader, list_walk as _list_walk
from . import storm as _storm
from . import instring as _instring
from . import quotation as _quotation
from . import stray as _stray
from .mention import _name_terminals, held_wait as _held_wait, note_failure
from .stray import PY_NOT_AFTER as _PY_NOT_AFTER, PY_TAGS as _PY_TAGS
from .._lalr.driver import DONE, WAIT, Driver
from .._recover import repair as _repair
from .._lalr.growth import _LoopWait
from .._lalr.close import cut_marker
from .._lalr.extent import value_end as _value_end
from .._build.builder import Draft
from .._result.model import ToolCall
from .._grammar.registry import Format
from .._grammar.tags import attr_tags_of, json_tags_of, loose_tags_of, py_tags_of, tags_of
from .._grammar.words import lazy

__all__ = ["THINK_CLOSE", "THINK_OPEN", "Failure", "Markers", "Piece", "Region", "Scanner", "markers_for"]


# What Scanner.early_call looks for at the start of a payload, within _EARLY_SPAN
# characters: a call object whose first key is a plain name and whose second opens
# the arguments as an object (the first of a list of them, too).
_EARLY_SPAN = 300
_EARLY_NAME = lazy(regex.compile, 
    r'[ \t\r\n]*(?:\[[ \t\r\n]*)?\{[ \t\r\n]*"name"[ \t\r\n]*:[ \t\r\n]*"([A-Za-z0-9_][A-Za-z0-9_.\-:/]{0,127})"'
    r'[ \t\r\n]*,[ \t\r\n]*"(?:arguments|parameters)"[ \t\r\n]*:[ \t\r\n]*\{'
)
# And a call of a format whose header declares its tags (`stream_call:`): its opener first
# in its region, then blanks and a tag (Tags.call in _grammar/tags.py; `Use
# <function=get_weather> blocks.` is a mention), its parameters streamed by
# _stream/xmlecho.py from group `rest` on.

# (_quote_before: a quote found at a search's end may begin before it, `<escape>`)
_QUOTE_WIDTH = len("<escape>") - 1
# (_in_prose: a frame not tried yet at a marker)
_UNREAD = object()
# (Scanner._close_wait: a fast frame -> its close markers, where each is a plain string that
# begins with the one character that may end its payload and holds no other; else ().)
_CLOSES: dict = {}
# The characters after which neither CALL_TAG_FIRST nor TAG_FIRST can match (a payload's
# first after its blanks: a JSON payload's `{`), whatever follows.
_FIRST_SETTLED = frozenset(">{}[]()\"',=`")
_SHOWN = -2  # (_first_run: the marker's call is quoted, prose)
_PROSE = ("text", "reasoning")  # (the kinds of Piece that are prose: see _told)

# Blanks to the end of the text (after an end-of-turn token: see _in_prose).
_BLANK_TO_END = lazy(regex.compile, r"\s*+\Z")
_BLANK_RUN = lazy(regex.compile, r"\s{0,64}+")
# A chat template's turn boundary after its end-of-turn token (see Scanner._turn_between).
_TURN_BOUNDARY, _TURN_MOST = _frame.TURN_BOUNDARY, _frame.TURN_MOST
# A call object's head, as Llama 3 writes it (grammars/llama3_json.lark's _OBJECT_HEAD
# up to the name's colon), and how far back from a line's `}` it is looked for
# (Scanner._glued_call; a stream keeps that much: _trim).
_CALL_HEAD = lazy(regex.compile, r"""\{\s*(?:["']type["']\s*:\s*["']function["']\s*,\s*)?["']name["']\s*:""")
_OBJECT_LOOK = _instring.LOOK  # (as far as a marker's check in a string reads back: 2,048)
# The name's value after _CALL_HEAD, a string (either quote, as _OBJECT_HEAD takes them).
_NAME_VALUE = lazy(regex.compile, r"""\s*["']([^"'\\]*)["']""")
# A Python call list's start, `[f(`, its name group 1 (call_before).
_LIST_CALL = lazy(regex.compile, r"\[[ \t]*([A-Za-z_][\w.\-]*)[ \t]*\(")



class Scanner(MarkerSearch):
    # The state of a scan. Scalars start as these class attributes (a scanner is made
    # per reply: assigning them all in __init__ cost more than a short reply's scan).
    buf = ""
    pos = 0
    mode = "start"
    in_open_think = False  # prose is reasoning: an unclosed <think> block
    think_opened = False  # the reply starts inside a <think> block (in_think), until seen
    think_from = 0  # where the current <think> content starts
    think_scan = 0  # how far the block's closers have been searched for
    opens_told: dict | None = None  # (_opens_in_think's answers: (closer, place in the reply) -> told, (closer, text) -> answer)
    opens_local: dict | None = None  # (closer -> marker_test_local)
    quoted_wait: dict | None = None  # (_not_quoted's untold answers, by closer and place: how far it looked, and for what)
    tag_to = 0  # how far (in the reply) a stream's reasoning was told free of quoted tags (_quoted_tag)
    call_scan = 0  # how far (in the reply) _think searched a block's text for a call marker and found none
    think_closers = (THINK_CLOSE,)  # what ends the current reasoning block (see Markers.think_opens)
    after_think = "prose"  # the mode to return to after </think>
    region: RegionReader | None = None  # the region being read (see _begin), else None
    start_test: tuple | None = None  # opening() of a reply-start region begun before the reply ended (_start)
    start_at = -1  # where (in the reply) _start tried the reply-anchored formats
    line_opened: tuple | None = None  # (text, place, marker) of the last line marker _no_line_call found formats to open at
    reply_end = -1  # where the reply's last non-blank ends, once it has ended (mention._reply_end)
    # Right after a call whose closer the model may write again (`</tool_call></tool_call>`):
    # where it ends, in the reply (-1: not there), and that closer. See _closer_again.
    closed_at = -1
    closer = ""
    # After a call region whose end marker the model left out, prose after it: that end
    # marker (any of these: Markers' open_ends), the first in the prose before any other
    # marker, is the region's, markup, not prose (None: none watched for). See after_call.
    end_watch: tuple | None = None
    # That watch, and where (in the reply) the call marker that ended the prose it was
    # watched in begins, blanks alone before it (or a Python region broken right at such a
    # marker): a call of another format read there, whose own format watches for none,
    # watches for it after that call (the region left open around it). See after_call.
    # (A third item, True: the close of a Hermes payload the model wrote, cut at that
    # call (RegionReader.run, cut_close): watched for even by a call whose format watches
    # for its own end markers.)
    outer_watch: tuple | None = None
    # The outer region's end markers of an end_watch that after_call joined to a call's own
    # (`<|tool_call_start|>[f()]<TOOLCALL>[{…}] ok</TOOLCALL> more<|tool_call_end|>`): where
    # the call's own is taken first, these are watched for after it, the outer region still
    # open around the prose (issue 19: `<|tool_call_end|>` was left in the text). See _open_end.
    watch_outer: tuple | None = None
    # That region was of a reply-anchored format (a list of Python calls opening the reply,
    # no tools): after its end marker, the next line opens lists in a row again (_start).
    watch_anchored = False
    line_restart = False  # (_start: the reply goes on after such an end marker; see there)
    # After a list of Python calls that opened the reply was told broken (RegionReader.run):
    # the next line break in the prose after it opens lists in a row again (_start,
    # line_restart), as after such a region's end marker. Markers before that break are
    # read as ever (the one that cut the broken call: its call, or a mention).
    relist = False
    # (Set where that line break opens lists again, for _start: the formats of lists of
    # Python calls alone (stream_python), as lists in a row are read after a well-formed
    # one; not a call that is the whole reply (bare_pythonic) nor a JSON list (xlam):
    # after a list, well formed or broken, `g(city="x")` or `[{"name": …}]` on the next
    # line is prose.)
    relisted = False
    # (The last character of the prose since that list, blanks aside: the next line opens
    # lists only where its line ends as a list's line does, at the list's `]` (markup
    # after it aside: an end marker); "" after a call read since. `]` to begin with: the
    # broken list's failure took its text. After prose on its line (`[f(a=<tool_call>)]
    # ok then`), or another call there, the lists in a row are over, as after a
    # well-formed list: the next line's list is prose.)
    relist_tail = "]"
    # (And how far that list has closed, by the text since its `[` that is prose or stray
    # closers (region.list_walk: brackets in strings aside; markup and calls not looked
    # at): how many of its brackets are open, 0 where it closed, -1 where text other than
    # blanks or another list followed its close on its line (`[f(a=<tool_call>)] ok
    # [then]`, which the last character alone took for the list's `]`: the run is over,
    # as after `[f(a=1)] ok [then]`; so too closers it never opened, `)]]`, as after
    # `[f(a=1)]]`); the quote of a string open in it. The next line opens lists where the
    # line ends at a list's closing `]`: relist_tail "]" and relist_open 0 (after
    # `[f(a=<tool_call>)] [g()]` too, as with tools, where `[g()]` is prose as well).)
    relist_open = 0
    relist_quote = ""
    closer_turn = False  # (the closer is its format's end-of-turn token: _closer_again)
    # Where the last call, or the last region, ended (in the reply): text after it is
    # the model's prose (see _after_object).
    read_to = 0
    call_to = -1  # where the last call read ends, in the reply (after_call, made for a region with no call too; -1: none yet)
    # How far (in the reply) the prose was searched for a quote, and the last one found
    # (see _quote_before).
    quote_to = 0
    quote_at = quote_end = -1
    # How far instring read the call opening the last marker was read back to (instring.Reading).
    reading: Any = None
    # A stream's marker (in the reply, and which) that waits for the string open before
    # it to close or not (instring.in_string None): each delta asks only that string,
    # read on (instring.closes_on), not the search and the whole check again (-1: none).
    string_wait = -1
    # The quotation (quotation.Quotation) that marker waits on instead, or None.
    quoting: Any = None
    # What the quotations' bracket walks read on the line (quotation.Walks), made at the first.
    walks: Any = None
    # The fenced blocks of the prose read so far (quotation.Fences: a call in a code
    # sample is prose).
    fences: Any = None
    marker_ends: dict
    # An end-of-turn token a stream's text ends after, in blanks only (_blanks_to_end):
    # where it is and which, and how far the blanks after it were read (in the reply;
    # -1: none). Each delta finds it there, as a marker waiting on a string, and reads
    # on from there.
    turn_wait = -1
    turn_marker = ""
    blanks_to = -1
    string_marker = ""
    # Where _after_object last declined a call object first on its line (in the
    # reply): the call on the line after it is declined too.
    declined_at = -1
    # Where the prose being read began, in the reply: after the last call, region, error
    # or markup put out (see _told; instring.py reads back no further).
    prose_from = 0
    told_n = 0
    # _trim tries again once the buffer is this long (see _trim).
    trim_at = 0
    # Where (in the reply) the last region of calls of a format that opens a region at a
    # line's start (Llama 3's `{`, with tools) ended: the object on the next line is the
    # model's next call (see mention.note_failure). -1: none.
    line_call_end = -1
    # After a call of an XML-ish format, until the next region: its value close first on
    # a line, then the closes of what holds it, closing nothing (stray.Watch; QA10 D3).
    stray: Any = None
    # Streaming in linear time. `buf` holds the reply from `base` on: text no
    # decision needs any more is dropped (positions in `buf` are local; the
    # items reported carry positions in the whole reply). While a region's
    # driver waits on a token that a delta cannot change (Driver.absorbs), or
    # only a marker can change anything (_CharWait), deltas are kept in
    # `pending`, neither joined nor scanned. Prose goes by take_plain().
    base = 0
    pending_n = 0
    waiting: Any = None  # a Driver or a _CharWait: see their absorbs()
    plain: str | None = None  # take_plain's kind of text here (None: no fast path)
    blank_to = 0  # the reply's leading whitespace runs at least to here
    held = ""  # the text held back at the end of prose (buf[pos:])
    finds: Any = None  # find's answers: (the buffer, {text: (since, at)}), for two buffers
    brackets: Any = None  # the drivers' _repair.BracketIndex (made with the first driver)
    nest_walks: Any = None  # the drivers' nest walks, per nest (RegionReader.driver: made with the first)
    turn_cut: Any = None  # (the text, where its end-of-turn token is, the text before it): region.py
    read_ahead: Any = None  # (the text, the RegionReader begins_call read ahead in it): region.py
    twins: Any = None  # ({(marker, format): {an earlier candidate: texts}}): region._twins_of
    last_hits: Any = None  # (the text, {a literal: where it last begins}): region._last_at
    turn_hits: Any = None  # (the text, {end-of-turn tokens: where those that end it begin}): region.py
    sink: Any = None  # read()'s Assembler (see fastpath.run)
    storm: Any = None  # the memo of region outcomes (storm.Memo), once a region asks
    listed_log: Any = None  # (the storm memo's certification: see Driver.listed_log)
    listed_hint: Any = None
    own_hint: Any = None  # (the storm memo's: see Driver.own_hint)
    # _own_reads_at's answers for one text: (the text, the format, {place: answer}).
    own_reads: Any = None
    hold = -1  # a stream holds a storm's region until the reply is this long (storm.region)
    # Where the last region read ended, in the reply (a storm's streak goes on over regions
    # each read right after the one before: storm.region).
    ended = -1
    # The code fences first on their lines in the prose since prose_from, as _in_prose
    # meets them (_fence_closes): the prose_from they are counted from (-1: none yet), the
    # last one met (in the reply; -1: none), what was decided there (its backticks' end in
    # the reply where it closes a fence, 0 where not), how far the blanks after it were
    # read (a stream's wait), and the backticks of the fence the prose holds open (0: none).
    fence_prose = -1
    fence_at = -1
    fence_took = 0
    fence_blanks = -1
    fence_open = 0
    fence_ticks = -1  # (where a run of backticks to a stream's text's end began: _TICK_WAIT)
    # (The marker searches' own state: see MarkerSearch.)

    def __new__(cls, formats: Any = None, tools: Any = None, *args: Any, **kwargs: Any) -> Scanner:
        # What the set of formats decides (Markers.shared, made once per set: by_marker,
        # anchored, call_re, any_re, prefixes, max_prefix, the searches of _quick_searches,
        # line, symbols, words, frames, openers, object_look: how far back from a `}`
        # _after_object reads (0: no format has a line_start)) are the class attributes of
        # a subclass made once per set, not copied into each scanner's fields (a scanner
        # is made per reply: copying 47 of them was a twentieth of a small reply's parse).
        # (A scanner copied (copy.copy: storm.py) is made of its own class, as it is.)
        if formats is None or "_markers" in cls.__dict__:
            return object.__new__(cls)
        m = markers_for(formats, tools is not None)
        made = m.scanner_types.get(cls)
        if made is None:
            made = m.scanner_types[cls] = type(cls.__name__, (cls,), {**m.shared, "_markers": m, "__module__": cls.__module__})
        return object.__new__(made)

    def __init__(
        self, formats: list[Format], tools: Any = None, in_think: bool = False, read_calls: Any = None, observer: Any = None
    ) -> None:
        self.tools = tools
        # (For the Builder: see Builder.read_calls; each payload text read once per reply.)
        self.read_calls = None if read_calls is None else ReadCallsMemo(read_calls)
        # The call call_reads_at read last: (the text, its marker's place, the frame, the
        # ToolCall), for the scanner's own frame read of that marker (_framed).
        self.read_at: tuple | None = None
        # (call_reads_at's markers where no call reads, per text: [(text, {(place, final):
        # the frame}), ...], the scanner's own text's first; see there.)
        self.unread_marks: list | None = None
        # An observer (toolgram explain's) is told of each region begun, read, or a
        # candidate's failure: region_begins(candidates, start, marker_len),
        # region_read(driver, region), candidate_failed(driver, reason, told) (told:
        # the Failure the region now shows, when this failure made it).
        self.observer = observer
        if in_think:
            self.think_opened = True
        # (What the set of formats decides is the class's: see __new__.)
        # (call_reads_at reads with the frames whether the fast path is on or not: what
        # it tells changes what is read, so it must not depend on the fast path.)
        self.whole_frames = self.frames
        if not _frame.enabled or observer is not None:
            self.frames = Frames({})  # (the fast path builds no tree: an observer sees the general way's)
        self.pending: list[str] = []
        # (Made at once: a stream's _trim keeps the lines it has not read, from the start.)
        self.fences = _quotation.Fences()
        self.rule_fences = None  # (region._fence_open_at's reading of them, read on from the scanner's)
        self.marker_ends = {}  # marker -> its formats' end markers (ends_of)
        self.word_next: dict[str, int] = {}  # a word marker's next place in word_buf (-1: none)
        self.whole_keys: list = []  # what _whole_next looks for (set by finish)
        self.mf_found: dict = {}  # _markers_from's answers for mf_buf
        self.opener_runs: dict = {}  # mention._openers_to_end's answers, per set of markers
        self.loud: dict | None = None  # mention._loud's answers, per list of candidates


    def find(self, text: str, start: int, buf: str | None = None) -> int:
        """buf.find(text, start) (buf: the scanner's own by default), remembered for the
        same buffer: a reply with many broken calls and no end marker after them is
        not searched to its end each time. (Two buffers are remembered: the text, and
        the one a driver reads, which a salvage replay cuts short.)"""
        if buf is None:
            buf = self.buf
        finds = self.finds
        if finds is None:
            finds = self.finds = [(None, {}), (None, {})]
        if finds[0][0] is buf:
            found = finds[0][1]
        elif finds[1][0] is buf:
            found = finds[1][1]
        else:
            found = {}
            finds[buf is not self.buf] = (buf, found)
        since, at = found.get(text, (-1, -1))
        if since < 0 or start < since or 0 <= at < start:
            at = buf.find(text, start)
            found[text] = (start, at)
        return at

    # -- public ---------------------------------------------------------------
    def feed(self, text: str, quick: bool = True) -> list:
        """Take more of the reply; report what it settles. `quick=False`: the caller
        already found that take_plain() does not take it."""
        if self.waiting is not None and self.absorb(text):
            return []
        if self.pending:
            self.pending.append(text)
            text = "".join(self.pending)
            self.pending = []
            self.pending_n = 0
        elif quick:
            end = self.base + len(self.buf) + len(text)
            plain = self.take_plain(text)
            if plain is not None:
                kind, value, hold = plain
                return [Piece(kind, end - hold - len(value), end - hold, value)] if value else []
        self.buf += text
        out = self._advance(False)
        self._settle()
        return out

    def absorb(self, text: str) -> bool:
        """Put text aside when what the scanner waits on (see `waiting`) does not
        change with it; False (and no more waiting) when it may."""
        waiting = self.waiting
        if waiting.absorbs(text, len(self.buf) + self.pending_n):
            self.pending.append(text)
            self.pending_n += len(text)
            return True
        self.waiting = None
        if type(waiting) is _LoopWait and waiting.token >= 0:
            # (A fast frame's payload, and a delta that brings a character that may end
            # it: held, where it ends in the start of the frame's close: _close_wait.)
            close = self._close_wait(waiting, text)
            if close is not None:
                self.pending.append(text)
                self.pending_n += len(text)
                self.waiting = close
                return True
        return False

    def _close_wait(self, wait: _LoopWait, text: str) -> _CloseWait | None:
        """A wait for the rest of a fast frame's close, where `text`, the delta its payload's
        wait (`wait`, the frame's: Frame.read) does not absorb, brings one character that
        may end the payload (a `<`), and the delta ends there in a proper start of one of
        the frame's close markers (`30}}\n</t` of `</tool_call>`): None where not.

        Read now, the frame would only wait again: its payload's match, from where it
        resumes, runs to that character (the wait has no character of E near the end whose
        look is not settled: last < 0), which no close marker completes yet (a close
        marker is a plain string beginning with it, and holding no other), and its end
        token, a plain string too, is only begun there (fastpath._end says WAIT); a tag
        first in the payload is ruled out already (its first character after blanks is
        none of the word's that CALL_TAG_FIRST reads, nor a `<`); and the region is short
        enough for the frame to wait (RegionReader.run: _FRAME_WAIT). So the delta, and
        each after it that only goes on with the close marker, are put aside, and the text
        is read, from the frame's same wait, with the delta that completes the marker or
        ends its start: what a stream whose deltas came joined reads there. (Each such
        delta read the region again: two of a call's 8-character deltas in three at its
        end, some 13 µs each: issue 20.)"""
        r = self.region
        if wait.last >= 0 or r is None or wait is not r.frame_wait or type(r.frame) is not _frame.Frame:
            return None  # (last: a `<` near the end whose look the text did not settle, which the delta may)
        frame = r.frame
        exits = wait.exits
        closes = _CLOSES.get(frame)
        if closes is None:
            # (Every end token's strings: a plain string, or an alternation of them.)
            words = [(t.literal,) if t.literal else _frame._strings(t) for t in frame.ends]
            closes = tuple(w for ws in words for w in ws) if all(words) else ()
            if not all(w and exits.match(w) is not None and exits.search(w, 1) is None for w in closes):
                closes = ()
            _CLOSES[frame] = closes
        if not closes:
            return None
        k = exits.search(text)
        if k is None:
            return None
        k = k.start()
        if exits.search(text, k + 1) is not None:
            return None
        buf = self.buf
        if len(buf) + self.pending_n + len(text) - r.region_start >= _FRAME_WAIT:
            return None
        if frame.first is not None:
            j = _frame._SPACE.match(buf, wait.token).end()  # (`re`'s \s, as the driver's test reads it)
            if j >= len(buf) or buf[j] not in _FIRST_SETTLED:
                return None
        close = _CloseWait(text[k:], closes, r.region_start + _FRAME_WAIT)
        return close if close.begun() else None

    def take_plain(self, text: str) -> tuple[str, str, int] | None:
        """The fast path of feed(), when `text` and the text held back before it
        hold no marker: the prose or reasoning (in <think>) feed() would report.
        Takes the text and returns (kind, value, hold): kind "text" or "reasoning",
        value the text reported (it may be "") and hold how many characters at
        the end are held back, as the start of a marker (value ends there).
        None, taking nothing, when the text needs the slow way."""
        kind = self.plain
        if kind is None or not text:
            return None
        held = self.held
        value = held + text if held else text
        if self.relist:
            return None  # (a line break the next line's lists may open after, and the prose before it: the slow way, _in_prose, relist_tail)
        hold = 0
        watch = self.end_watch
        if watch is not None:
            # (A call's end marker (see _open_end) in it: the slow way; the start of one
            # at its end: held back, as the start of a marker is.)
            for e in watch:
                if e[0] in value:
                    if e in value:
                        return None
                    for i in range(max(0, len(value) - len(e) + 1), len(value)):
                        if e.startswith(value[i:]):
                            hold = max(hold, len(value) - i)
                            break
        if self.stray is not None:
            # (After a call, a close of its value first on a line: see _in_prose.)
            got = _stray.plain_hold(self.stray, self.buf, self.pos, value) if self.stray.armed else None
            if got is None:
                return None
            hold = max(hold, got)
        q = self.quick.search(value)
        ends = self.risky_ends
        if q is not None or value[-1:] in ends or value[-2:] in ends or value[-3:] in ends:
            # (No marker starts before quick's first match.)
            if q is not None and self.literals.search(value, q.start()) is not None:
                return None
            # Hold back the longest end that may start a marker (one of two characters
            # or more ends as one of those does).
            if value[-1] in self.first_set or value[-2:] in self.end_pairs:
                hold = max(hold, self._held(value))
        if hold:
            self.held = value[-hold:]
            value = value[:-hold]
        else:
            self.held = ""
        self.buf = buf = self.buf + text
        self.pos = len(buf) - hold
        self.think_scan = len(buf)  # (in <think>: searched for </think> up to here)
        if len(buf) > 256:
            self._trim()
        return kind, value, hold

    def lane(self) -> tuple | None:
        """For a caller taking many deltas of plain prose in a row: when nothing is
        held back, (kind, search): a delta for which search() finds nothing is all
        `kind` text, with nothing to hold back, as take_plain() would find; one where
        it finds only a tail (the match's lastindex is set: its longest end that may
        start a marker, of three characters at most: a longer start of a marker would
        hold another match) is that text but for the tail, which is held, and goes
        before the next delta; any other match: the slow way. The caller may take such deltas and must
        hand them over, joined, with extend_plain() (saying how much is held) before
        anything else."""
        stray = self.stray
        watch = self.end_watch
        if self.relist:
            return None  # (a line break in a delta opens lists again: see relist)
        if watch is not None and not all(e[0] in self.first_set and not e[0].isalnum() for e in watch):
            return None  # (a call's end marker whose first character the lane may not stop at: see _open_end)
        if self.plain is None or self.held or (stray is not None and (stray.fresh or not (stray.armed and stray.firsts <= self.first_set))):
            return None  # (a watch for stray closers whose first character the lane may not stop at)
        return self.plain, self.lane_search.search

    def extend_plain(self, text: str, hold: int = 0) -> None:
        """Take text found plain through lane(), its last `hold` characters (what
        the lane may hold: see lane()) held back as take_plain does."""
        self.buf = buf = self.buf + text
        self.think_scan = len(buf)
        self.pos = len(buf) - hold
        self.held = buf[self.pos :] if hold else ""
        if len(buf) > 256:
            self._trim()

    def read(self, text: str, sink: Any = None) -> list:
        """A whole reply at once (parse): what feed(text) and finish() report, without
        the waiting that only a stream needs (no token can still grow). With a sink
        (the Assembler the items go to), runs of calls the fast frames read go to it
        as they are read (see _run; positions in the sink are the buffer's, so only
        where no text was dropped: base 0); the items returned follow them."""
        self.buf += text
        self.sink = sink
        return self.finish()

    def finish(self) -> list:
        self.waiting = None
        self.plain = None
        if self.pending:
            self.buf += "".join(self.pending)
            self.pending = []
            self.pending_n = 0
        # The text is all here: what _in_prose looks for in it is the symbol markers'
        # first characters and the word markers that it holds (see _whole_next).
        buf = self.buf
        keys = []  # (a loop, not a comprehension: no function made and called)
        for k, g in self.key_guards:
            if g in buf and (k is g or k in buf):
                keys.append(k)
        self.whole_keys = keys
        self.whole_next = dict.fromkeys(keys, -2)
        return self._advance(True)

    def early_call(self, settled: int) -> tuple | None:
        """StreamParser(announce="name"): the region being read, once its payload has
        begun `{"name": "x", "arguments": {` (or "parameters"): (its start in the
        reply, "x", where the arguments' `{` is); once a region of a format that declares its
        tags (_grammar/tags.py) has begun with its call's opener (`<function=x>`): (its start,
        "x", where its parameters begin, the format's Tags, whether the opener follows the
        region's start markers, the id the model wrote in it or None, where the call's own
        opener begins); (its start, None, where the first object's `{` is, the format's
        JsonTags) once a region of a format that declares a JSON list of call objects
        (`stream_json_list:`) has begun with it; (its start, None) once it cannot
        begin so (or shows nothing within _EARLY_SPAN characters); None while it may still, or outside a region, or for
        the region starting at `settled` (already answered). Only a region whose
        first candidate reads a JSON call object through a fast frame is looked at;
        the name then is what that format reads, unless the rest of the region changes
        it (the stream withdraws the call: see StreamParser)."""
        r = self.region
        # (an anchored region at the reply's start is read in mode "start": see _start)
        if self.mode not in ("region", "start") or r is None or not r.candidates or self.in_open_think:
            return None
        start = self.base + r.region_start
        if start == settled:
            return None
        json_call = type(_frame.frame_of(r.candidates[0])) is _frame.Frame
        declared = [t for t in map(tags_of, r.candidates) if t is not None]
        declared += [t for t in map(json_tags_of, r.candidates) if t is not None]
        declared += [t for t in map(py_tags_of, r.candidates) if t is not None]
        declared += [t for t in map(loose_tags_of, r.candidates) if t is not None]
        declared += [t for t in map(attr_tags_of, r.candidates) if t is not None]
        if not (json_call or declared):
            return start, None
        at = r.region_start
        head = self.buf[at : at + r.marker_len + _EARLY_SPAN]
        for piece in self.pending:
            if len(head) >= r.marker_len + _EARLY_SPAN:
                break
            head += piece
        waits = False
        for tags in declared:  # (a 4th item: the arguments are parameters of these tags, or JSON)
            m = tags.call.match(head, 0, partial=True)
            listed = getattr(tags, "list", None)
            if m is None and listed is not None:
                # (a JSON list of call objects, `stream_json_list:`: (its start, None, where its
                # first object's `{` is, the JsonTags); the stream follows the list and announces
                # each call once its id is certain)
                m = listed.match(head, 0, partial=True)
                if m is not None and not m.partial:
                    return start, None, self.base + at + m.start("rest"), tags
            if m is not None and not m.partial:
                # (5th: whether the opener comes after the region's start markers, in a block
                # that may hold more calls; a bare opener is a region of its own call; 6th,
                # for a JsonTags opener: the id the model wrote in it, or None; PyTags: a
                # list of Python-style calls, the first's name and `(`)
                # (7th: where the call's own opener begins, its span in parse() when the
                # region read is its own and not the block's: see StreamParser._moved)
                got = start, m.group("name"), self.base + at + m.start("rest"), tags, m.start("open") > 0
                own = self.base + at + m.start(getattr(tags, "own", "open"))
                return got + (m.group("id") if "id" in m.re.groupindex else None, own)
            waits = waits or m is not None
        if json_call:
            m = _EARLY_NAME.match(head, r.marker_len, partial=True)
            if m is not None and not m.partial:
                return start, m.group(1), self.base + at + m.end() - 1
            waits = waits or m is not None
        return None if waits and len(head) < r.marker_len + _EARLY_SPAN else (start, None)

    def region_markers(self) -> tuple[str, ...]:
        """The start, end and end-of-turn markers of the formats that may read the region
        being read: a JSON string left open before one ends there (StreamParser's JsonEcho)."""
        r = self.region
        if r is None:
            return ()
        return tuple(dict.fromkeys(m for f in r.candidates for m in (*f.starts, *f.ends, *f.end_of_turn)))

    def text_from(self, pos: int) -> str:
        """The text taken from `pos` (in the reply) on, while it is kept: in a region."""
        at = pos - self.base
        if at >= len(self.buf):  # (in the text put aside)
            return "".join(self.pending)[at - len(self.buf) :]
        return self.buf[at:] + "".join(self.pending)

    def in_region(self, start: int) -> bool:
        """Whether the region that starts at `start` (in the reply) is still being read."""
        r = self.region
        return self.mode in ("region", "start") and r is not None and self.base + r.region_start == start

    def unread(self) -> str:
        """The text taken but not yet reported (held back, or in an open region)."""
        return self.buf[self.pos :] + "".join(self.pending)

    def _settle(self) -> None:
        """After a feed: note a driver that may skip deltas, drop consumed text,
        prepare take_plain."""
        r = self.region
        self.plain = None
        drivers = r.drivers if r is not None else None
        if drivers and r.lead_wait:
            # (The block broke, and only the reading of the call at its own opener after it
            # is left to tell (RegionReader._lead): that reading's wait, not the broken
            # frame's below, which would hold deltas that tell it.)
            lead = r.lead
            if lead is not None and lead is not False and lead.drivers[-1].status == WAIT and lead.drivers[-1].hint:
                self.waiting = lead.drivers[-1]
            return
        if drivers:
            drv = drivers[-1]
            if r.salvage_wait is not None and drv.status != WAIT:
                # (No candidate read the region, and salvage's replay waits: on what it waits on.)
                drv = r.salvage_wait
            ahead = r.ahead
            if drv.status != WAIT and ahead is not None and type(ahead) is not bool:
                # (The region waits on the reading of the region after it: RegionReader.begins_call.)
                r, drivers = ahead, ahead.drivers
                drv = r.salvage_wait if r.salvage_wait is not None else drivers[-1]
            if drv.status == WAIT:
                if drv.hint:
                    self.waiting = drv
                elif len(self.buf) - drv.pos > _REGROW:
                    # A long token that may still grow, whose pattern cannot tell from a
                    # delta alone (a name that runs on: `Action:Action:…`): matched again
                    # only once the text has grown by a quarter of it, not on every delta
                    # (which costs the square of its length). Its decision comes that much
                    # later; what it decides does not change.
                    self.waiting = _GrowWait(len(self.buf) + (len(self.buf) - drv.pos) // 4)
            elif self.mode == "region" and r.failed_frame is not None and len(drivers) == len(r.candidates):
                held = _held_wait(r, len(self.buf))
                if held is not None:
                    # (It waits on the reading of its frame with the words after its name
                    # blanked: only that reading can tell it more, settle_failure says WAIT
                    # until then, whatever markers come. A `<` near the end let no delta
                    # pass the wait below.)
                    self.waiting = held
                    return
                # A broken frame waits for its end marker (settle_failure): only that,
                # or a call marker, decides it.
                ends = r.failed_frame.fmt.ends
                self.waiting = _MarkWait.of(self, r, ends) or _CharWait.of(buf=self.buf, firsts=self.first_set, more=ends, width=self.max_prefix + 1)
        elif r is not None and r.frame is not None:
            if r.frame_wait is not _frame.WAIT:
                self.waiting = r.frame_wait  # the payload runs on: see Frame.read
        elif self.mode == "start" and self.hold >= 0:
            # (A storm's line restart, held until the text holds its window: storm.restart.)
            self.waiting = _GrowWait(self.hold - self.base)
            self.hold = -1
        elif self.mode == "prose" or self.mode == "think":
            if self.pos > 256:
                self._trim()
            if self.hold >= 0:
                # A storm's region, held until the text holds its window (storm.region):
                # the deltas before are put aside unlooked at.
                self.waiting = _GrowWait(self.hold - self.base)
                self.hold = -1
                return
            if self.closed_at >= 0 and self.mode == "prose":
                return  # (right after a call: the next delta goes to _closer_again)
            if self.fence_blanks >= 0 and self.fence_at == self.base + self.pos:
                # (Blanks after a fence's ``` that may close a code block, to the text's
                # end: only a delta with more than blanks tells: see _fence_closes.)
                self.waiting = _BLANK_WAIT
                return
            if self.fence_ticks >= 0 and self.fence_ticks == self.base + self.pos:
                self.waiting = _TICK_WAIT  # (a fence's backticks to the text's end: see _fence_closes)
                return
            buf = self.buf
            if self.mode == "think" and len(buf) - self.pos > self.max_prefix:
                # In a reasoning block, held from a call marker on: only its closers matter now.
                closers = self.think_closers
                self.waiting = _CharWait.of(
                    buf=buf, firsts=frozenset(c[0] for c in closers), more=(), width=max(map(len, closers))
                )
                return
            self.held = buf[self.pos :]
            if self.pos < len(buf) and self.literals.match(buf, self.pos) is not None:
                # Held from a whole marker on (one whose string, open before it, may still
                # close after it: _in_string's string_wait): take_plain finds it in every
                # delta joined to it and gives way to the slow way, after reading all it
                # holds (plain_hold walked each `<` of a held call's text, of up to REACH:
                # the square of it; issue 17, fuzz seed 7 #107105106). The slow way at once.
                return
            self.plain = "reasoning" if self.mode == "think" or self.in_open_think else "text"

    def _trim(self) -> int:
        """Drop the text before pos, keeping what look-behinds read: back to the
        last character that is not a space or tab (a marker first on its line,
        the "`" before a marker in inline code), and the seven before it (a whole
        `</think>`, or another reasoning block's closer, that a line-anchored marker
        may follow; the character before a "`"). Returns how many characters were dropped.
        After a try that drops nothing, the next waits until the buffer has grown by
        _TRIM_AGAIN characters: text kept longer is text parse() has too, and a stream
        in a call's region or holding prose back tried at every delta (900 tries, 41
        trims, in 100 KB of 8-character deltas)."""
        buf = self.buf
        if len(buf) < self.trim_at:
            return 0
        self.trim_at = len(buf) + _TRIM_AGAIN  # (unless this one trims: below)
        pos = self.pos
        keep = pos - 1
        floor = max(0, pos - 256)
        while keep > floor and buf[keep] in " \t":
            keep -= 1
        if keep <= 0 or buf[keep] in " \t":
            return 0  # a long run of blanks: keep it all
        keep -= self.think_width - 1
        keep -= self.object_look  # (the line a `}` ends, for _after_object)
        if keep <= 0 or 2 * keep < len(buf):
            return 0  # too little to gain: keep it all
        # (And all of what instring.py reads back from a marker at pos or after: the look
        # before it, since the prose began, and the character before the look, whether its
        # start is a line's (_fenced). The stream then asks of the same text as parse() does,
        # whatever it holds. Kept only from the first place a call might open there and its
        # line (3b193802), a stream that dropped a line before that opening came on it could
        # not tell the line was a fence's: the string opened in its info string read as open,
        # the call on the next line as quoted, where parse() reads it; the same with one
        # dropped from its line's start on (fuzz seed 7 #112083369, #112089106, #112103948).)
        keep = min(keep, max(pos - _instring.LOOK, self.prose_from - self.base) - 1)
        # (And the line the fenced blocks are read from: quotation.Fences, read up to pos
        # first; a line that is no fence's is read past.)
        fences = self.fences
        fences.read(buf, self.base, self.prose_from, pos)
        keep = min(keep, fences.to - self.base)
        stray = self.stray
        if stray is not None and not stray.armed:
            # (And the call's line, from its end, while the watch for stray closers after
            # the call has not told it: stray.line_after reads it from there, behind pos
            # where a failed region's tail was put out past it. Dropped, a stream read the
            # tail's next line as the call's, armed the watch where parse() did not, and
            # told closers at the reply's end as an error that parse() kept as text: fuzz
            # seed 20240, mutate #71. Kept only until the next look in prose, which tells
            # the line or moves `seen` past the blanks it waits on.)
            keep = min(keep, stray.seen - self.base)
        if keep <= 0 or 2 * keep < len(buf):
            return 0
        self.buf = buf[keep:]
        self.trim_at = 0
        self.base += keep
        reading = self.reading
        if reading is not None and len(reading.groups.tokens) > _GROUPS_KEPT:
            # The bracket walks' tokens (instring.Groups) and end-marker searches are a
            # memo of the text read so far: a long stream's grew with it (a megabyte of
            # prose with quoted calls held 27 MB more). Begun anew, the walks read again
            # only what they still reach; the answers are the same.
            reading.groups, reading.seen, reading.hops = _instring.Groups(), {}, {}
            self.walks = None
        self.pos = pos - keep
        self.think_from = max(0, self.think_from - keep)
        self.think_scan = max(0, self.think_scan - keep)
        self.blank_to = max(0, self.blank_to - keep)
        return keep

    def _flush(self, out: list, lo: int, end: int) -> int:
        """_in_prose's prose from lo (markers in it that are prose too) put out, up to
        end: where the scanner is now (returned)."""
        if end > lo:
            self._prose(out, lo, end)
        self.pos = end
        return end

    def _prose(self, out: list, start: int, end: int) -> None:
        if end > start:
            if self.relist:
                self._relist_past(start, end)
            kind = "reasoning" if self.in_open_think else "text"
            out.append(_piece(kind, start, end, self.buf[start:end]))

    def _relist_past(self, start: int, end: int) -> None:
        """relist's look at text after the broken list that goes out as prose, or as a run
        of stray closers (their error, stray.find): buf[start:end]."""
        text = self.buf[start:end]
        if "\n" in text:
            # (A line break the prose of a region read as none took, after the
            # list: the next line is not the list's; lists in a row are over.)
            self.relist = False
        if self.relist_open >= 0:
            self.relist_open, self.relist_quote = _list_walk(self.buf, start, end, self.relist_open, self.relist_quote, True)
        last = text.rstrip()[-1:]
        if last:
            # (see relist_tail. A run of closers that close nothing, the list's own `)]`
            # after a call of another format that cut its value (`[f(a=<|tool_call_start|>
            # [h()]<|tool_call_end|>)]`: the call h, then `)]` an error, where after a
            # Hermes call, which has no such watch, it is prose), ends the line as that
            # prose does: at the list's `]`.)
            self.relist_tail = last


    # -- the state machine --------------------------------------------------------
    def _advance(self, final: bool) -> list:
        out: list = []
        self.told_n = 0
        modes = _MODES
        while modes[self.mode](self, out, final):
            pass
        self._told(out)
        if self.base and out:
            _rebase(out, self.base)
        return out

    def _told(self, out: list) -> None:
        """Note where the last item of `out` that is no prose ends (a call, a region, an
        error, markup): the prose after it begins there (prose_from; out[told_n:] are the
        items not yet looked at, in the buffer's positions)."""
        for k in range(self.told_n, len(out)):
            item = out[k]
            kind = type(item)
            if kind is Piece and item[0] in _PROSE:
                continue
            self.prose_from = self.base + (item.span[1] if kind is ToolCall else item[2] if kind is Piece else item.end)
        self.told_n = len(out)

    def _start(self, out: list, final: bool) -> bool:
        """The reply's beginning: marker-less formats must open it."""
        buf = self.buf
        p = max(self.pos, self.blank_to)
        n = len(buf)
        while p < n and (buf[p].isspace() or buf[p] in INVISIBLE):
            p += 1
        self.blank_to = p  # (whitespace is not scanned again)
        if self.line_restart:
            # (After a reply-opening region's end marker: only a list on a line of its own
            # opens again; blanks so far, or the end of the reply: prose goes on.)
            if p >= n and not final:
                return False
            self.line_restart = False
            if p >= n or "\n" not in buf[self.pos : p]:
                self.relisted = False
                self.mode = "prose"
                return True
        if self.think_opened:
            # The prompt opened a reasoning block (in_think): the reply starts inside it,
            # unless the model writes an opener itself. Any closer of the formats ends it
            # (the prompt's opener is not known: `<think>`, `[THINK]`, harmony's analysis…).
            if not final and (p >= n or self._may_open(buf, p)):
                return False  # (only blanks so far, or what may still become an opener)
            self.think_opened = False
            if self._opener_at(buf, p) is None:
                self.mode = "think"
                self.after_think = "start"
                self.think_closers = self.think_ends
                self.think_from = self.think_scan = self.pos
                return True
        if not self.anchored:
            self.mode = "prose"
            return True
        if p >= n:
            if final:
                self.relisted = False
                self.mode = "prose"
                return True
            return False
        if self.region is None:
            # Reasoning may come first; the reply proper starts after it.
            # (A stream waits while a longer opener may still come: `<|channel>` of
            # `<|channel>thought`.)
            if not final and self._may_open(buf, p):
                return False
            opener = self._opener_at(buf, p)
            if opener is not None:
                self._prose(out, self.pos, p)
                out.append(Piece("markup", p, p + len(opener), ""))
                self.pos = self.think_from = self.think_scan = p + len(opener)
                self.think_closers = self.think_opens[opener]
                self.mode = "think"
                self.after_think = "start"
                self.relisted = False
                return True
        if self.region is None:
            self.start_at = self.base + p  # (their line_start literals there: see _in_prose)
            ch = buf[p]
            test = self.openers.get(ch)
            if test is None:
                test = opening([f for f in self.anchored if may_open(f, ch)], self.first_set, ch)
                if len(self.openers) < 1000:  # (per set of formats; replies start with anything)
                    self.openers[ch] = test
            if self.relisted:
                # (Kept while a stream waits below: its next delta's look filters them too.
                # The opening test of those formats alone, kept as the others are: each
                # format's test is its own, so it finds those the whole test finds of
                # them, without the others' tests at each line of a storm of such lines.)
                listed = self.openers.get((ch,))
                if listed is None:
                    listed = opening([f for f in test[0] if f.stream_python and f.anchor != "whole"], self.first_set, ch)
                    if len(self.openers) < 1000:
                        self.openers[(ch,)] = listed
                candidates = openers(listed, buf, p, final)
            else:
                candidates = openers(test, buf, p, final)
            if not candidates:
                self.relisted = False
                self.mode = "prose"
                return True
            if not final and n - p < _START_WAIT and "\n" not in buf[p:]:
                # Too little text to tell: wait, with no driver started. A short reply
                # is then read once, at its end, as parse() reads it, rather than by
                # drivers that wait and are then run again (five times parse()'s cost
                # for a reply of a word); the test above is all a delta costs here.
                # A line's end tells enough: `[f()]` then a new line is a call a stream
                # completes there, not 32 characters after its `[` (issue 21).
                return False
            relisted, self.relisted = self.relisted, False
            self.start_test = None if final else test
            if relisted and _storm.enabled and self.observer is None:
                # (A line a broken reply-opening list's run opens again: a storm of them,
                # one a line, goes through the memo, as a marker's regions do: storm.restart.)
                took = _storm.restart(self, out, candidates, p, final)
                if took < 0:
                    self.relisted = True  # (held: its next look filters the candidates too)
                    return False
                if took:
                    return took == 1
            self._begin(candidates, p, 0)
        elif final and self.start_test is not None:
            # Begun on part of the reply: the whole of it may rule out every format
            # there, as parse() finds at once, and then their drivers, waiting on a
            # prose word that might have been a name, are not run on.
            test, self.start_test = self.start_test, None
            if not openers(test, buf, self.region.region_start, True):
                self._end_region()
                return True
        return self.region.run(out, final, True)

    def _in_prose(self, out: list, final: bool) -> bool:
        if not final and self.pos > 256:
            # In a stream, after a region: the text before it is dropped here, as between
            # deltas in prose (_settle). A delta that ends in a region again (a run of
            # markers, each a region) would keep the whole reply, and each delta joined
            # to it would copy it: the square of the reply.
            dropped = self._trim()
            if dropped and out:
                _rebase(out, -dropped)  # (what out holds is in the buffer's positions)
        buf = self.buf
        # A marker that is prose (a `[` that opens no call, one a line: 10,000 of them
        # in 32 KB) joins the prose around it: the search goes on from `pos`, past it,
        # and the prose from `lo` (self.pos) is put out as one piece (_flush) where a
        # marker that is not prose is, or where the text ends; not a piece for each,
        # with its segment and join (a third of a stream's cost of such a reply).
        pos = lo = self.pos
        kind = "reasoning" if self.in_open_think else "text"
        frames, line, tools = self.frames, self.line, self.tools
        plain = self.prose_plain if final else self.line_plain
        whole = self.whole_next if final else None
        kept = None
        while True:  # (a run of calls the fast path reads is taken here, in one go)
            if self.closed_at >= 0:
                lo = self._flush(out, lo, pos)  # (nothing: a call alone sets closed_at)
                again = self._closer_again(out, pos, kind, final)
                if again is None:
                    return False  # (blanks, or the start of the closer: the next delta tells)
                if again:
                    pos = lo = self.pos
                    continue
            # Every marker is found as plain text first (the stdlib search is much
            # faster); the full search, with its line-start conditions, starts there.
            if kept is not None:
                found, kept = kept, None  # (the marker found before a call's end marker: see below)
            elif self.string_wait == self.base + pos:
                found = (pos, self.string_marker)  # (the marker waiting on a string: _in_string)
            elif self.turn_wait == self.base + pos:
                # (The end-of-turn token waiting on blanks: _blanks_to_end. The markers
                # searched for again from it, at each delta, were searched for through
                # all the blanks after it.)
                found = (pos, self.turn_marker)
            else:
                found = self._whole_next(buf, pos, whole) if whole is not None else self._next_literal(buf, pos)
            if whole is not None and found is not None and self.call_to < 0 and self.sink is not None and found[1] not in line:
                # (parse()'s first call: see _first_run.)
                stop = self._first_run(out, buf, lo, found, kind)
                if stop is not None:
                    if stop == _SHOWN:
                        return True  # (the marker's call is quoted: prose, as below)
                    if stop < 0:
                        self.pos = len(buf)
                        return False  # (the rest was prose: the text is all read)
                    self.read_to = self.call_to = stop
                    self.pos = pos = lo = stop
                    self.prose_from, self.told_n = stop, len(out)
                    continue
            if found is not None and found[1] in line:
                found = self._line_next(buf, found)
            # (After a reply-opening list told broken: the first line break in the prose,
            # before the next marker, opens lists again (relist). An end marker watched for
            # (end_watch) or a stray closer before that break is taken first, as where no
            # break follows: the text's order, which a stream's deltas keep too.)
            nl = buf.find("\n", pos, found[0] if found is not None else len(buf)) if self.relist else -1
            watch_hold = 0
            if self.end_watch is not None and (nl < 0 or any(buf.find(e, pos, nl) >= 0 for e in self.end_watch)):
                # (With that break ahead, only an end marker before it is looked at: one
                # after it, or the next marker, is the next line's to tell, where the watch
                # goes on, as in a stream whose text so far ends at the break.)
                ends, outer_ends = self.end_watch, self.watch_outer
                got = self._open_end(buf, pos, found, final)
                if got is not None and got[0] is WAIT:
                    watch_hold = len(buf) - got[1]
                elif got is not None and self.stray is not None and self._stray_before(out, buf, pos, lo, got[0], final, ends):
                    # (A run of stray closers before the region's end marker: told first, as a
                    # stream, which has the prose before the marker comes, tells it. The marker
                    # is found again from after the run.)
                    self.end_watch, self.watch_outer = ends, outer_ends
                    if self.stray is not None:
                        return False  # (WAIT: _stray_before flushed what is settled)
                    pos = lo = self.pos
                    continue
                elif got is not None:
                    self._flush(out, lo, got[0])
                    out.append(Piece("closer", got[0], got[1], ""))  # (markup)
                    self.pos = pos = lo = got[1]
                    if self.watch_anchored:
                        # The end marker of a region that opened the reply (`[f(a="x")]
                        # Checking now.<|tool_call_end|>`, no tools): the remark was inside
                        # that region, which ends there. A list on the next line follows a
                        # region of calls, as lists in a row that open the reply do (one
                        # a line, each with its remark and end marker: QA27b S3), not prose
                        # (pythonic.lark): read as at the reply's start (_start).
                        self.watch_anchored = False
                        self.line_restart = True
                        self.mode = "start"
                        return True
                    # (A marker found that begins inside the end marker's own characters is
                    # searched for again from its end, not kept: _open_end takes an end marker
                    # that runs past `found`, as in `<|python_end|>>> Done.` with tools, where
                    # Functionary's `>>>` begins at that marker's last `>`. Kept, the text after
                    # it began inside the markup: a segment over it, a `>` more in the text;
                    # fuzz seed 7 #99314848 on 7886ed42.)
                    if found is None or found[0] >= got[1]:
                        kept = found  # (the next marker is still that one: not searched for again)
                    elif found[1] in self.turn_ends:
                        # (That marker was the end marker, an end-of-turn token that closed a
                        # Hermes payload (see _open_end): as after a call that token closed,
                        # the model's own turn opened after it is the template's markup, and
                        # the token written again is markup too: _closer_again.)
                        self.closed_at, self.closer, self.closer_turn = self.base + got[1], found[1], True
                    continue
            if self.stray is not None and not self.stray.armed:
                if _stray.line_after(self.stray, buf, self.base, final) is False:
                    self.stray = None  # (the call ended its line: nothing to watch for)
            if self.stray is not None and self.stray.armed:
                stray = _stray.find(self.stray, buf, pos, nl if nl >= 0 else found[0] if found is not None else len(buf), final, self.base, self.turn_ends, self.end_watch)
                if type(stray) is tuple:  # (WAIT, where a close that may begin a run is)
                    self._flush(out, lo, max(pos, stray[1]))
                    return False
                if stray is not None:
                    self._flush(out, lo, max(pos, stray.start))
                    out.append(stray)  # (the closers are markup; the error says why)
                    if self.relist:
                        self._relist_past(stray.start, stray.end)
                    self.pos = pos = lo = stray.end
                    self.stray = None
                    continue
            if nl >= 0:
                # (The prose up to that break goes out, and the next line is read as at the
                # reply's start, lists only (see relisted), where its line ended at the
                # list's `]`: relist_tail. Else the prose goes on, as after a list.)
                lo = self._flush(out, lo, nl)
                self.relist = False
                if self.relist_tail == "]" and self.relist_open == 0:
                    self.line_restart = self.relisted = True
                    self.mode = "start"
                    return True
                pos = nl
                kept = found  # (the next marker is still that one)
                continue
            if found is None:
                end = len(buf) if final else len(buf) - self._held(buf, pos)
                if self.stray is not None and self.stray.armed and not final:
                    end = min(end, len(buf) - _stray.hold(self.stray, buf, pos))
                if watch_hold:
                    end = min(end, len(buf) - watch_hold)
                self._flush(out, lo, max(end, pos))
                return False
            i, marker = found
            after = i + len(marker)
            if marker not in plain:
                lo = self._flush(out, lo, i)
            # (Else the prose before it waits until the marker is known not to be prose
            # itself: of the branches below, only those it may take flush it first. A
            # whole text's, any marker's that takes none of the branches of reasoning,
            # turn ends and stutters: prose_plain.)
            pos = i
            if not final and len(buf) - i <= self.max_prefix and buf[i:] in self.prefixes:
                self._flush(out, lo, i)
                return False  # a longer marker may start here ("```" of "```json"): wait
            if marker[0] == "`" and marker.startswith("```"):
                closes = self._fence_closes(out, buf, i, final)
                if closes is None:
                    self._flush(out, lo, i)
                    return False  # (blanks after a fence's ``` to the text's end: the line's end tells)
                if closes:
                    pos = closes  # (prose, a code block's close: see lo)
                    continue
            if _in_inline_code(buf, i):
                # `<tool_call>` (or `<think>`) in inline code names the tag; it opens nothing. (A
                # backtick right after a word closes a code span: `ls`<tool_call>… is a call.)
                self._flush(out, lo, after)
                return True
            if final and marker in line and self._no_line_call(buf, i, marker, frames):
                pos = after  # (prose: see lo)
                continue
            quoted = self._in_string(out, buf, i, marker, final) if marker not in line else self._in_sample(out, buf, i, marker)
            if quoted is None:
                # (A string open before it: whether it closes after it, the next delta tells.)
                self._flush(out, lo, i)
                self.string_wait, self.string_marker = self.base + i, marker
                return False
            if quoted:
                # Inside a string of a call no format read (`>>>send_email\n{"content":
                # "<|tool_call>call:rm{…}<tool_call|>"}` with no tools): that call's text,
                # prose as the call is (instring.py).
                # The whole of what the string quotes is (the call's markers on the
                # lines after too: `"<tool_call>\n<function=rm_rf>…</tool_call>"}`).
                span = max(after, self.reading.span - self.base)
                self._flush(out, lo, i)  # (a line's marker's prose before it: see lo)
                self._prose(out, i, span)
                self.pos = span
                return True
            if marker in self.turn_ends and self._blanks_to_end(buf, i, marker):
                # An end-of-turn token that ends the reply (blanks after it at most): the
                # model's template token, markup. A stream waits for what follows it.
                if not final:
                    return False
                out.append(Piece("turn_end", i, after, ""))
                self.pos = pos = lo = after
                continue
            closers = self.think_opens.get(marker)
            if closers is not None:
                if self.in_open_think:  # a nested opener: keep it as reasoning text
                    self._prose(out, i, after)
                    self.pos = after
                    return True
                out.append(Piece("markup", i, after, ""))
                self.pos = self.think_from = self.think_scan = after
                self.think_closers = closers
                # (Reasoning, which a stream puts out as it comes and parse() may read
                # as prose if the block never closes: no stray closers looked for.)
                self.stray = None
                self.mode = "think"
                return True
            if marker in self.think_closes:
                if self.in_open_think:
                    # Another block's closer, in a block that never closed (read as
                    # prose that is reasoning): reasoning text, as inside a closed one.
                    self._prose(out, i, after)
                    self.pos = after
                    return True
                # A close with no open (the template opened it in the prompt) is removed;
                # it also ends an unclosed block that we were reading calls out of.
                out.append(Piece("markup", i, after, ""))
                self.pos = after
                self.in_open_think = False
                return True
            if marker in self.turn_ends:
                between = self._turn_between(buf, i, after, final)
                if between is None:
                    return False  # (what follows it may be the next call: the next delta tells)
                if between:
                    # Right after a call, the template's turn boundary, then the next call
                    # (`</tool_call><|im_end|>\n<|im_start|>assistant\n<tool_call>`: the
                    # model ran on into a turn of its own): markup, as the calls' markers.
                    out.append(Piece("turn_end", i, between, ""))
                    self.pos = pos = lo = between
                    continue
                # In the middle of the reply: the text names the token (`</s>`).
                pos = after  # (prose: see lo)
                continue
            again = self._repeated(buf, after, marker, final) if marker in self.stutters else False
            if again is None:
                return False  # (blanks, or the start of the marker again: the next delta tells)
            if again:
                # The opener written twice (a small model's stutter: `<tool_call>\n<tool_call>`):
                # the first is markup, the call read from the second says so (repeated_marker).
                out.append(Piece("markup", i, after, "repeated_marker"))
                self.pos = pos = lo = after
                continue
            frame = frames[marker]
            if marker in line and self._after_object(buf, i, marker):
                # (Both are prose, as the object before is: see _after_object.)
                pos = after  # (prose: see lo)
                continue
            # A whole text, until a region the frames do not read has asked the memo: the
            # frame is tried first. A region it reads (a call, or a JsonFrame's region) is
            # one the memo refuses (storm._certify): the memo is not asked about it (its
            # key, window and bookkeeping were a tenth of a small reply's parse). Once the
            # memo is made (a storm: `<tool_call>` repeated), it is asked first, as a
            # stream always asks it (its streaks and holds): a remembered outcome
            # needs no frame tried.
            got = self._framed(frame, buf, i, True, tools) if final and frame is not None and self.storm is None else _UNREAD
            if (got is None or got is _UNREAD) and marker not in line and _storm.enabled and self.observer is None:
                if final:
                    # (A whole text: a region the memo remembers as prose of this kind,
                    # its marker's text and no more, joins the prose around it, as a
                    # marker that is prose does (see lo): one piece for a storm of them,
                    # not two a marker, each made, moved, joined and segmented.)
                    end, key = _storm.prose_end(self, i, marker, kind)
                    if end:
                        pos = i + end  # (prose: see lo)
                        continue
                    lo = self._flush(out, lo, i)  # (the prose before goes out before the region's pieces)
                    took = key is not None and _storm.read(self, out, key, i, final)
                else:
                    lo = self._flush(out, lo, i)
                    took = _storm.region(self, out, i, marker, final)
                if took is None:
                    return False  # (a storm's region, held until its window is here)
                if took:
                    # (A storm's region, read through the memo: see storm.py. A whole
                    # text reads on here, as this call would again, and the next marker
                    # costs no new call; a stream goes back, to drop the text before.)
                    if not final or self.mode != "prose":
                        return True
                    pos = lo = self.pos
                    kind = "reasoning" if self.in_open_think else "text"
                    continue
            if frame is not None:
                lo = self._flush(out, lo, i)
                if got is _UNREAD and not final and type(frame) is _GemmaFrame:
                    # A stream, where the general way would begin this Gemma call's region
                    # (no string open before it, the storm's hold over): a plain call whose
                    # close marker is here is what that region's driver reads on this very
                    # delta (it reads to the close, which ends it, and no more: gemcall.py),
                    # so it is read here, and the region ended as its reading ends it. No
                    # Memo.frame_call: the storm counts it as the general way's (its streaks and
                    # holds, and so every later delta, as before). Else the general way.
                    got = frame.streamed(buf, i, tools)
                    if type(got) is ToolCall:
                        out.append(got)
                        self.pos = got.span[1]
                        self.after_call(self.pos, frame.fmt, start=got.span[0])
                        self._end_region()
                        return True  # (as after a region: _in_prose again, which trims first)
                    got = None
                if got is _UNREAD:
                    got = self._framed(frame, buf, i, final, tools)
                if type(got) is ToolCall:
                    self.stray = None  # (a call of another format: see after_call)
                    if final and self.sink is not None and kind == "text" and not self.base and self.outer_watch is None and not self.relist:
                        # (Not while a line break opens lists again: see relist, which the
                        # batch's reading of the prose after its calls does not look for.)
                        stop = _frame.run(self, out, buf, got, whole, marker, frame)
                        if stop < 0:
                            self.pos = len(buf)
                            return False  # (the rest was prose: the text is all read)
                        self.read_to = self.call_to = stop  # (where its last call ends: see after_call)
                        self.pos = pos = lo = stop
                        self.prose_from, self.told_n = stop, len(out)  # (calls went to the sink)
                        continue
                    out.append(got)
                    self.pos = pos = lo = got.span[1]
                    self.after_call(pos, frame.fmt, start=got.span[0])
                    if self.storm is not None:
                        self.storm.frame_call(self, marker, i)
                    continue
                if type(got) is Region:  # (a JsonFrame's, read as the general way would)
                    out.append(got)
                    self.pos = pos = lo = got.end
                    self.after_call(pos, frame.fmt, got, start=got.start)
                    if self.storm is not None:
                        self.storm.frame_call(self, marker, i)
                    continue
                if got is None:
                    frame = None
            candidates = self.by_marker[marker]
            first = marker in line and self.base + i == self.start_at
            if first:
                # The reply's start, where _start tried the reply-anchored formats: of
                # those, a `line_start` literal's (Llama 3's `{`) is not tried again.
                candidates = [f for f in candidates if not f.line_starts]
                if not candidates:
                    pos = after  # (prose: see lo)
                    continue
            if marker in line and frame is None:
                # A line-anchored marker (`[`) is mostly prose: the formats' opening
                # tests, one search, tell the lines no grammar can begin a call on
                # (`[]`, `[1]`, `[see above]`) without a driver for each. (Those
                # formats are quiet: a region that fails at once leaves only prose.)
                test = None if first else self.line_openers.get(marker)
                if test is None:
                    test = line_opening(candidates, self.first_set, marker)
                    if not first:
                        self.line_openers[marker] = test
                if test is not None:
                    opened = self.line_opened
                    if not (final and opened is not None and opened[0] is buf and opened[1] == i and opened[2] == marker) and not openers(test, buf, i, final):
                        pos = after  # (prose: see lo)
                        continue
                    if not final and len(buf) - i < _START_WAIT and "\n" not in buf[i:]:
                        self._flush(out, lo, i)
                        # Too little text to tell (`[get_wea`): wait, with no driver
                        # started, as at the reply's start. The test runs again on the
                        # next delta (on at most this much text), and a line like
                        # `[see above]` is prose without a driver begun and given up.
                        # Its line's end tells enough (as at the reply's start).
                        return False
            lo = self._flush(out, lo, i)  # (the marker is no prose: what it opens comes next)
            if marker in line and not first and _storm.enabled and self.observer is None:
                took = _storm.region(self, out, i, marker, final)
                if took is None:
                    return False  # (a storm's region, held until its window is here)
                if took:
                    # (A storm's region, read through the memo: see storm.py. A whole text
                    # reads on here, as for a marker not of a line above: a list a line,
                    # each through the memo, is thousands of them.)
                    if not final or self.mode != "prose":
                        return True
                    pos = lo = self.pos
                    kind = "reasoning" if self.in_open_think else "text"
                    continue
            self._begin(candidates, i, len(marker), frame)
            self.mode = "region"
            if frame is not None:  # the frame waits for more text
                self.region.frame_wait = got
                return False
            return True

    def _first_run(self, out: list, buf: str, lo: int, found: tuple, kind: str) -> int | None:
        """parse()'s first call, where a fast frame reads it: what _in_prose's loop decides
        at that marker, decided with fastpath.run's checks of a later marker, and that call
        and the run after it given to fastpath.run (its return); _SHOWN where the marker is
        in a string, prose (the loop's `quoted`, done here); None: the loop decides (any
        state or marker the loop treats otherwise, or a check that says no). The checks
        the loop makes before its frame read, at the first marker of a whole text's
        prose (nothing of a reasoning block, a watch, a storm or a waiting string): a
        backtick right before it (inline code: _in_inline_code says no more than that), a
        quote mark right before it or a fence in the prose (_frame._shown: _in_sample and
        a quotation, which need one of them), the opener written twice (_repeated), a
        string open around it (instring.in_string, asked as _in_string asks it, once)."""
        i, marker = found
        if (
            self.base or kind != "text" or self.closed_at >= 0 or self.string_wait >= 0 or self.turn_wait >= 0
            or self.storm is not None or self.end_watch is not None or self.stray is not None
            or self.outer_watch is not None or self.relist or self.observer is not None
            or marker in self.turn_ends or marker in self.think_opens or marker in self.think_closes
            or marker[0] == "`"
        ):  # fmt: skip
            return None
        frame = self.frames[marker]
        if type(frame) is not _frame.Frame and type(frame) is not _GemmaFrame:
            return None
        floor = self.prose_from
        for k in range(self.told_n, len(out)):
            item = out[k]
            if type(item) is not Piece or item[0] not in _PROSE:
                return None  # (an item not told yet: _told would move prose_from)
        after = i + len(marker)
        if (i > 0 and buf[i - 1] == "`") or _frame._shown(buf, floor, i):
            return None
        if marker in self.stutters:
            blanks = buf[after : after + _STUTTER_BLANKS]  # (_repeated, for a whole text: str.lstrip strips what isspace() tells)
            if buf.startswith(marker, after + len(blanks) - len(blanks.lstrip())):
                return None
        got = self._framed(frame, buf, i, True, self.tools)
        if type(got) is not ToolCall:
            self.read_at = (buf, i, frame, got)  # (the loop's _framed reads it there: the same answer)
            return None
        self._told(out)
        if _instring.quoted(buf, max(0, floor, i - _instring.LOOK), i) and _instring.in_string(buf, i, floor, _frame._reading(self), 0, True, after, self.ends_of(marker)):
            # (What the loop does with a call quoted in a string: see `quoted` there.)
            span = max(after, self.reading.span)
            self._flush(out, lo, i)
            self._prose(out, i, span)
            self.pos = span
            return _SHOWN
        self._flush(out, lo, i)
        return _frame.run(self, out, buf, got, self.whole_next, marker, frame)

    def _blanks_to_end(self, buf: str, i: int, marker: str) -> bool:
        """Whether only blanks follow the end-of-turn token `marker` at i to the text's
        end. Where they do, the token and how far they were read are kept: a stream
        waiting there finds it at the next delta and reads on from there, not through
        all the blanks again (a call, `<|eom_id|>`, then 16,000 blanks a character a
        delta: 426 ms, the square of the blanks)."""
        after = i + len(marker)
        start = after
        if self.turn_wait == self.base + i:
            start = max(after, self.blanks_to - self.base)
        if _BLANK_TO_END.match(buf, start) is None:
            self.turn_wait = -1
            return False
        self.turn_wait, self.turn_marker, self.blanks_to = self.base + i, marker, self.base + len(buf)
        return True

    def _in_string(self, out: list, buf: str, i: int, marker: str, final: bool = True) -> bool | None:
        """instring.in_string, reading back no further than the prose the marker at i is
        in: not into a call's or an error's text (`[f(a="Lis"bon")] … 'x <think>`).
        None: whether the string open before it closes, text to come tells."""
        ask = True  # (whether a quotation or a code sample is asked about: once a marker)
        if self.string_wait >= 0:
            waited, self.string_wait = self.string_wait, -1
            if waited == self.base + i:
                ask = False
                q = self.quoting
                if q is not None:
                    got = q.read(buf, self.base, final)
                    if got is None:
                        return None  # (the text so far ends before the call's end, or right after it)
                    self.quoting = None
                    if got:
                        return self._shown(q.span)
                    # (No quotation: whether a string is open around it, asked now.)
                else:
                    got = _instring.closes_on(buf, self.reading, self.base, final)
                    if got is not False:
                        return got  # (still waiting, or the string closes around it)
                    # (It does not: the other kinds of call around it are read, once.)
        self._told(out)
        if ask and marker in self.by_marker:
            # A call the prose shows, in a code sample or a quotation (quotation.py):
            # prose, as in inline code.
            if self._in_sample(out, buf, i, marker, False):
                return True
            close = _quotation.opening(buf, i, self.base) if i and buf[i - 1] in _quotation.OPENS else ""
            if close:
                walks = self.walks
                if walks is None:
                    if self.reading is None:
                        self.reading = _instring.Reading()
                    walks = self.walks = _quotation.Walks(self.reading.groups, self.reading.seen)  # (read once for both)
                q = _quotation.Quotation(self.base + i, close, self.base + i + len(marker), self.ends_of(marker), marker, walks)
                got = q.read(buf, self.base, final)
                if got is None:
                    self.quoting = q
                    return None
                if got:
                    return self._shown(q.span)
        floor = self.prose_from - self.base
        if not self._quote_before(buf, max(0, floor, i - _instring.LOOK), i):
            return False  # (the usual case, and a storm's: no string before the marker)
        if self.reading is None:
            self.reading = _instring.Reading()
        return _instring.in_string(buf, i, floor, self.reading, self.base, final, i + len(marker), self.ends_of(marker))

    def _no_line_call(self, buf: str, i: int, marker: str, frames: dict) -> bool:
        """Whether the line-anchored marker at i (`[`) is prose for _in_prose's opening
        test of the formats it may begin (`[]`, `[1]`, `[see above]`: no grammar begins a
        call there), asked first, in a whole text: each branch _in_prose takes before that
        test makes it prose too (in a sample's fence: its marker alone, prose, and the text
        read on after it; after a line's object: prose), or is of other markers (turn ends,
        reasoning tags, stutters), or of the reply's first marker, or of a fast frame's.
        (Issue 17: a reply of 10,000 such lines read each line's fences, 30% of its parse.)
        The fences are read on from where they were at the next marker asked, which reads
        the same lines (Fences.read: each line told once, whole or as far as it tells)."""
        if frames.get(marker) is not None or self.base + i == self.start_at:
            return False
        if marker in self.turn_ends or marker in self.think_opens or marker in self.think_closes or marker in self.stutters:
            return False
        candidates = self.by_marker.get(marker)
        if not candidates:
            return False
        test = self.line_openers.get(marker)
        if test is None:
            test = line_opening(candidates, self.first_set, marker)
            self.line_openers[marker] = test
        if test is None:
            return False
        if openers(test, buf, i, True):
            self.line_opened = (buf, i, marker)  # (the test below is not run again there: its answer)
            return False
        return True

    def _in_sample(self, out: list, buf: str, i: int, marker: str, tell: bool = True) -> bool:
        """Whether the marker at i is in a fenced block of the prose that shows text
        (```` ```text ````, ```` ```md ````: quotation.Fences), the call a code sample;
        its place then what the scanner puts out as prose (its marker: the text after it
        is scanned as prose, the block's markers each asked this too)."""
        if marker not in self.by_marker:
            return False
        if tell:
            self._told(out)  # (prose_from: _in_string has told it)
        fences = self.fences
        fences.read(buf, self.base, self.prose_from, i)
        if not fences.sample():
            return False
        return self._shown(self.base + i + len(marker))

    def _shown(self, span: int) -> bool:
        """A call the prose shows, up to `span` (in the reply): prose as a quoted call
        is (the scanner reads reading.span). True."""
        if self.reading is None:
            self.reading = _instring.Reading()
        self.reading.span = span
        self.reading.string = None  # (no string's reading kept: it was not asked)
        return True

    def _fence_closes(self, out: list, buf: str, i: int, final: bool) -> int | bool | None:
        """Whether the fence marker at i (```, ```python, …) is a code fence's line that
        closes a fence the prose opened before it (CommonMark's rule: ``` first on its
        line, blanks before it, nothing but blanks after its backticks, at least as many
        backticks as the opening fence had): then it opens no region, its backticks'
        end is returned (the prose goes on there). A fenced format's region there read
        a call after a code block as if the block's close opened its fence
        (`` ```python\nprint(1)\n```\n[get_weather(…)] ``: its close taken into the
        call, a closed_tag repair the model never needed; QA22 D1). False where it
        opens, or is none of a fence's lines; None while a stream's text ends in blanks
        after it (the line's end tells).

        The fence lines are counted as _in_prose meets them, each once, in the prose
        since the last call, region, error or markup (prose_from): a fence line first
        on its line is always such a marker's, and the prose's markers are met in order.
        What is kept is the fence left open (its backticks) and the last line met: one
        look per fence, whatever the text's length."""
        j = i
        while j > 0 and buf[j - 1] in " \t":
            j -= 1
        if j > 0 and buf[j - 1] != "\n":
            return False  # (inline: ``` after text on its line)
        self._told(out)
        base = self.base
        at = base + i
        if self.fence_prose != self.prose_from or at < self.fence_at:
            self.fence_prose, self.fence_open, self.fence_at = self.prose_from, 0, -1
        elif at == self.fence_at:
            if self.fence_blanks < 0:
                return self.fence_took - base if self.fence_took else False  # (met again)
        n = len(buf)
        k = i + 3
        while k < n and buf[k] == "`":
            k += 1
        if k == n and not final:
            # (Backticks to the text's end: how many the fence has, which decides whether
            # it closes the open one, the first other character tells. Until then deltas
            # of backticks are put aside, _TICK_WAIT: one count of the run, not one a delta.)
            self.fence_ticks = at
            return None
        self.fence_ticks = -1
        run = k - i
        opened = self.fence_open
        if not opened or run < opened:
            # A fence's opening line (or, with fewer backticks than the open fence's, a
            # line of its code): it opens as before.
            self.fence_at, self.fence_took, self.fence_blanks = at, 0, -1
            if not opened:
                self.fence_open = run
            return False
        # (A fence is open: this line closes it if nothing but blanks follow its backticks.)
        e = max(k, self.fence_blanks - base) if at == self.fence_at else k
        while e < n and buf[e] in " \t\r":
            e += 1
        if e == n and not final:
            self.fence_at, self.fence_took, self.fence_blanks = at, 0, base + e
            return None
        self.fence_at, self.fence_blanks = at, -1
        if e < n and buf[e] != "\n":
            self.fence_took = 0  # (```python in an open block: a line of its code, that may open)
            return False
        self.fence_open, self.fence_took = 0, base + k
        return k

    def ends_of(self, marker: str) -> tuple:
        """The end markers of the formats `marker` opens (instring reads a call quoted in
        a string to one of them), longest first."""
        got = self.marker_ends.get(marker)
        if got is None:
            got = self.marker_ends[marker] = tuple(
                sorted({e for fmt in self.by_marker.get(marker, ()) for e in fmt.ends if e}, key=len, reverse=True)
            )
        return got

    def _quote_before(self, buf: str, lo: int, i: int) -> bool:
        """Whether buf[lo:i] holds a quote (instring.QUOTE). The text is searched once:
        how far it was (quote_to) and the last quote found (quote_at, quote_end: in the
        reply, whose text a stream only adds to) are kept, so a storm of markers with
        no string between them is not searched LOOK characters back at each (`` ```x``
        repeated to 32 KB: 37 -> 164 ms when it was)."""
        base = self.base
        if lo <= self.quote_at - base and self.quote_end - base <= i:
            return True
        to = self.quote_to - base
        if to > i:  # (asked behind what was searched: searched again, nothing kept)
            return _instring.quoted(buf, lo, i)
        start = max(lo, to - _QUOTE_WIDTH)
        self.quote_to = base + i
        if not _instring.quoted(buf, start, i):
            return False
        for last in _instring.QUOTE.finditer(buf, start, i):
            pass
        self.quote_at, self.quote_end = base + last.start(), base + last.end()
        return True

    def _repeated(self, buf: str, after: int, marker: str, final: bool) -> bool | None:
        """Whether `marker`, ending at `after`, is written again right after it, blanks
        between (at most _STUTTER_BLANKS); None when the text so far cannot tell."""
        n = len(buf)
        j = after
        stop = min(n, after + _STUTTER_BLANKS)
        while j < stop and buf[j].isspace():
            j += 1
        if buf.startswith(marker, j):
            return True
        if final or j >= after + _STUTTER_BLANKS:
            return False
        return None if marker.startswith(buf[j:]) else False

    def after_call(self, end: int, fmt: Format, region: Region | None = None, known: tuple | None = None, start: int = -1) -> None:
        """A call (or a region holding one) ends at `end`: note its closer, which the model
        may write again right after it (see _closer_again), and what the prose after it
        is searched for (stray.Watch). `known`: (stray.watch_args' arguments, the closer)
        as found at a region of the same text before (a storm's memo: storm._noted).
        `start`: where the call (or region) begins, where known (outer_watch)."""
        outer = self.outer_watch
        self.outer_watch = None
        self.watch_outer = None
        if self.relist:
            self.relist_tail = ""  # (a call on the broken list's line: see relist_tail)
        called = self._after_call(end, fmt, region, known)
        cut = outer is not None and len(outer) > 2 and outer[2] == _OUTER_CUT
        if cut and called and start >= 0 and self.base + start == outer[1]:
            # (The closers after this call, `])]` of `[f(a=[1, <|tool_call_start|>[g()]
            # <|tool_call_end|>])]`, are those of the call broken at its marker, which
            # left them open: its text, as after a call of a format with no closers
            # watched for, not closers of this call's written again (issue 19: a second
            # error, "`])]` closes no call here").)
            self.stray = None
        if outer is not None and outer[0] and called and start >= 0 and self.base + start == outer[1]:
            # A Python call region whose end marker the model left out (or that broke at
            # this call's marker), then this call of another format right after it: that
            # region's end marker, the first in the prose after this call before any other
            # marker, is the region's, written around this call: markup, not text
            # (`<|tool_call_start|>[f(a=1)]<tool_call>{…}</tool_call><|tool_call_end|>`).
            # So too a Hermes payload closed by its `</tool_call>`, cut at this call after
            # its JSON (RegionReader.run: `<tool_call>{…}\n[f(a=1)]</tool_call>`). There a
            # call whose own format watches for its end markers (a bare list's: LFM2's,
            # Llama 4's) watches for both, the first of them markup: that close was
            # written. (Not a Python region's left-out end marker after such a call,
            # `<|tool_call_start|>[f()]<|python_start|>[g()]\nok<|tool_call_end|>`: the
            # call's own end marker alone is watched for, the other text, as before: rv34.)
            # A call whose JSON value token prose ended watches for its own end markers
            # too (Markers.open_ends, its format not a Python list's): it watches for both
            # either way, the first markup, as where it watched for none the outer one
            # was (`<|tool_call_start|>[f()]<TOOLCALL>[{…}] ok<|tool_call_end|>`).
            if self.end_watch is None:
                self.end_watch = outer[0]
                self.watch_anchored = False
            elif (len(outer) > 2 and outer[2] is True) or not fmt.stream_python:
                own = self.end_watch
                self.end_watch = tuple(dict.fromkeys((*own, *outer[0])))
                self.watch_outer = tuple(e for e in outer[0] if e not in own) or None

    def _after_call(self, end: int, fmt: Format, region: Region | None = None, known: tuple | None = None) -> bool:
        """after_call's work; False for a region with no call in it."""
        if known is None:
            self.stray = _stray.watch_of(fmt, region, self.buf, end, self.base)
        else:
            a = known[0]
            buf = self.buf
            if a is None or a[1] is _PY_TAGS and buf[end + 1 : end + 2] not in _PY_NOT_AFTER and buf[end : end + 1] == "\n":
                self.stray = None  # (a Python call list's line ended, the next begun with no closer: stray.of_args)
            else:
                self.stray = _stray.Watch(a[0], a[1], a[2], a[3], a[4], self.base + end, a[5], a[6])
        self.read_to = self.call_to = self.base + end
        self.end_watch = None
        self.watch_anchored = False
        if region is not None:
            for part in region.items:
                if type(part) is Draft:
                    break
            else:
                return False  # (no call in it: a message's markers)
        if fmt.line_starts:
            self.line_call_end = self.base + end
        c = _frame.closer_of(fmt, self.buf, end) if known is None else known[1]
        turn = _frame.turn_closer(fmt, self.buf, end) if fmt.end_of_turn and (not c or c in fmt.end_of_turn) else ""
        if c or turn:
            self.closed_at = self.base + end
            self.closer = c or turn
            self.closer_turn = bool(turn)
        if not c and not turn:
            # (Its end marker left out, and no end-of-turn token closed it: see end_watch.
            # Told by the format and the text the call ends with, as the closer is: a
            # storm's memo replays it alike.)
            self.end_watch = self.open_ends.get(fmt.name)
            self.watch_anchored = self.end_watch is not None and fmt in self.anchored
        return True

    def call_reads_at(self, buf: str, at: int, fmt: Format, final: bool = True, wait: Any = None, own: bool = False) -> Any:
        """Where, at the marker at `at` in a whole text, a call of another format than
        `fmt` that is not quiet reads whole, by that marker's fast frame, ends (_close.cut:
        such a call ends a Python string that `fmt`'s value left open to the end of the
        reply, QA19 R15); 0 where none does (or the marker has no fast frame). `own`: a
        call of any format, `fmt`'s own too (its own start marker in such a string: cut). With
        final=False, in a stream's text so far: WAIT where more text may still make it
        read (the frame waits: its call is not over yet; _close._quoted_call_span), or
        the frame's _LoopWait, a wait that tells which deltas leave it waiting (`wait`:
        the one it returned for the same marker in this text, shorter: read on from it)."""
        m = self.symbols.match(buf, at)  # (the longest symbol marker there)
        best = m.group() if m is not None else ""
        fmts = self.by_marker.get(best)
        if not fmts:
            return 0
        if not own and (fmt in fmts or all(f.quiet for f in fmts)):
            return 0
        frame = self.whole_frames[best]
        if frame is None and own and fmt in fmts:
            return self._own_reads_at(buf, at, fmt) if final else 0
        if frame is None:
            return 0
        # (Where the frame read no call, at that marker in that text: asked again there, the
        # same answer. A Python value's string holding a marker is asked about it by each
        # question of its cut (_close._call_in_open_string, _quoted_call_span) and of the
        # list closed after it (Driver._call_before_close): each read the call again. Kept
        # for two texts, the scanner's own and the one a driver reads, by place alone.)
        unread = self.unread_marks
        if unread is None:
            unread = self.unread_marks = [(self.buf, {}), (None, {})]
        if unread[0][0] is not self.buf:
            unread[0] = (self.buf, {})
        slot = 0 if buf is self.buf else 1
        if slot and unread[1][0] is not buf:
            unread[1] = (buf, {})
        kept = unread[slot][1]
        key = (at, final)
        if wait is None and kept.get(key) is frame:
            return 0
        if not final and type(frame) is _frame.JsonFrame:
            # (It reads only a whole text: asked of the text so far, what the whole text's
            # reading will be, or WAIT.)
            call = frame.settled(buf, at, self.tools, self.max_prefix + 1)
        else:
            call = frame.read(buf, at, final, self.tools, wait)
        if call is None:
            if wait is None:
                kept[key] = frame
            return 0
        if type(call) is ToolCall:
            if final:
                self.read_at = (buf, at, frame, call)  # (see _framed)
            return call.span[1]
        if type(call) is _LoopWait:
            return call  # (a WAIT whose absorbs() tells the deltas that change nothing)
        if type(call) is Region:
            # (A JsonFrame's reading, of a whole text only: its calls, read whole, end
            # where the region does. Told as WAIT, parse() took it for a call at one
            # question (_close._call_between) and failed on it at another (`e > close`:
            # an internal error), where a stream, asking before its text was whole, was
            # told 0: stream != parse().)
            return call.end
        return WAIT if call is not None else 0

    def call_before(self, buf: str, i: int, mark: str, end: int, fmt: Format) -> bool:
        """Whether at the call marker `mark` at i, in the text after the JSON value of a
        payload of `fmt` that the model closed at `end` (its end marker, or an
        end-of-turn token: Driver._call_in_tail), a call reads whole before `end`: then
        the payload is cut there, the call read after it, the close its markup. By that
        marker's fast frame (call_reads_at), else by a driver of each of its formats
        that is not quiet, over the text from i to `end` alone (DONE past the marker, no
        repair but its own end marker left out, as the close supplies it); a Python call
        list (`[f(`, a quiet format's marker: tools offered) whole before `end` that
        calls a tool offered. Not a marker right after a backtick (inline code names
        it, as _in_prose reads it). A stream asks once the token's closer is whole, with
        the text up to it at hand: what parse() asks, the same answer."""
        if _in_inline_code(buf, i):
            return False
        if mark == "[":
            m = _LIST_CALL.match(buf, i, end)
            if m is None or self.tools is None or m.group(1) not in self.tools:
                return False
            return _value_end(buf[i:end], 0) is not None
        fmts = self.by_marker.get(mark)
        if not fmts or all(f.quiet for f in fmts):
            return False
        e = self.call_reads_at(buf, i, fmt)
        if type(e) is int and e:
            return e <= end
        text = buf[i:end]  # (the text up to the close, as a reply that ends there)
        for f in fmts:
            if f.quiet or f.parser == "earley":
                continue
            d = Driver(f, 0)
            if d.run(text, True, self.at_marker) == DONE and d.end > len(mark) and all(r == "closed_tag" for r in d.repairs):
                return True
        return False

    def _own_reads_at(self, buf: str, at: int, fmt: Format) -> int:
        """call_reads_at(own=True) where the marker has no fast frame: where a call of
        `fmt`, begun at its own start marker at `at`, ends as `fmt`'s grammar reads it in
        the text up to that format's next start marker (or the end of the whole text),
        its end marker supplied if left out; 0 where it reads no call there (a mention of
        the marker: `'Use <|tool_call_start|> tags`). The reading stops at that next
        marker: a storm of values left open, each holding the next one's marker, reads
        each stretch once, not on to the end of the reply from each. (No cuts: a value
        left open in it runs to that bound, as at the end of a reply.)"""
        # (Kept per text: the answer is the stretch's alone, and a value cut at the marker
        # asks it, then the reading of the region that marker begins (RegionReader.
        # begins_call), then that region's own reading: a storm of such values read each
        # stretch twice. The storm memo puts in the answer it certified: storm._own_hold.)
        kept = self.own_reads
        if kept is None or kept[0] is not buf or kept[1] is not fmt:
            kept = self.own_reads = (buf, fmt, {})
        got = kept[2].get(at)
        if got is not None:
            return got
        stop = len(buf)
        for s in fmt.starts:
            i = buf.find(s, at + 1, stop)
            if i >= 0:
                stop = i
        # (Read as a text of its own, that stretch: a copy of the text up to it, for each
        # value of a storm, was the square of the reply.)
        drv = Driver(fmt, 0, None, None, False)
        text = buf[at:stop]
        with _repair.kept_walks():
            status = drv.run(text, True, self.at_marker)
        # Prose right after the calls, the end marker left out (`[g()]\nDone.`, LFM2's
        # `START (...) END`, which fails there): the region ends after them, its calls
        # whole, and the prose is prose, as the salvage reads it (salvaged: prose_at). A
        # call reads there as where the reply ends after it, or its end marker follows.
        if status == DONE or (drv.calls and drv.prose_at >= drv.end and not text[drv.end : drv.prose_at].strip()):
            got = at + drv.end if drv.calls else 0
        else:
            got = 0
        kept[2][at] = got
        return got

    def _framed(self, frame: Any, buf: str, i: int, final: bool, tools: Any) -> Any:
        """frame.read(buf, i, final, tools); in a whole text, the call call_reads_at read
        there, with the same frame, in the same text, where it is that one (a Python
        value left open before another format's call: the call read to cut the value,
        then by the scanner when it reaches the marker; a storm of them read each twice)."""
        known = self.read_at
        if known is not None and final:
            self.read_at = None
            if known[0] is buf and known[1] == i and known[2] is frame:
                return known[3]
        return frame.read(buf, i, final, tools)

    def _closer_again(self, out: list, pos: int, kind: str, final: bool) -> bool | None:
        """In prose right after a call (closed_at): its closer written again, blanks
        between (`</tool_call></tool_call>`, a small model's stutter), is markup, never
        prose: a "markup" segment (Piece "closer"). It is decided here, after the call,
        which a stream has sent by then: the call is not held back for it (and so
        records no repair). True when one was taken (pos moved on); False when none
        follows; None while the text so far cannot tell (blanks, or the closer's start)."""
        if self.closed_at != self.base + pos:
            self.closed_at = -1
            return False
        closer = self.closer
        buf = self.buf
        if self.closer_turn:
            # The call's closer is its format's end-of-turn token (Llama 3's `<|eot_id|>`):
            # the model's next turn opened after it (`<|start_header_id|>assistant
            # <|end_header_id|>\n\n`) is the template's markup, whatever follows, as after
            # a token the scanner finds (_turn_between; QA19 R8).
            turn = _frame.assistant_turn(buf, pos, final)
            if turn is None:
                return None
            if turn:
                self.closed_at = -1
                out.append(Piece("turn_end", pos, turn, ""))
                self.pos = turn
                return True
        again = self._repeated(buf, pos, closer, final)
        if not again:
            if again is not None:
                self.closed_at = -1
            return again
        j = buf.index(closer, pos)  # (blanks before it: prose, as between two calls)
        if j > pos:
            out.append(_piece(kind, pos, j, buf[pos:j]))
        self.pos = end = j + len(closer)
        out.append(Piece("closer", j, end, ""))
        self.closed_at = self.base + end  # (and a third time)
        return True

    def _stray_before(self, out: list, buf: str, pos: int, lo: int, stop: int, final: bool, ends: Any) -> bool:
        """_in_prose's look for stray closers (stray.find), in buf[pos:stop], before a
        region's end marker at `stop` that end_watch found: whether it found a run (put
        out, with the prose before it: self.pos after it, self.stray None) or the text so
        far cannot tell (the prose flushed up to there: self.stray kept). Else nothing
        is put out. `ends`: end_watch's markers, which _open_end let go. (`[f(a=1)])]\n<|python_end|>`:
        parse() put the run out as prose with the marker, where a stream, which reads
        the run before the marker comes, made it the error: QA32 R2.)"""
        stray = self.stray
        if not stray.armed and _stray.line_after(stray, buf, self.base, final) is False:
            self.stray = None
            return False
        if not stray.armed:
            return False
        got = _stray.find(stray, buf, pos, stop, final, self.base, self.turn_ends, ends)
        if got is None:
            return False
        if type(got) is tuple:
            self._flush(out, lo, max(pos, got[1]))
            return True
        self._flush(out, lo, max(pos, got.start))
        out.append(got)
        if self.relist:
            self._relist_past(got.start, got.end)  # (as in _in_prose)
        self.pos = got.end
        self.stray = None
        return True

    def _open_end(self, buf: str, pos: int, found: Any, final: bool) -> tuple | None:
        """In prose after a call whose region's end marker was left out (end_watch):
        (start, end) of that end marker, the first in buf[pos:] before the next marker
        `found` (then no more is watched for); (WAIT, where a piece of one the text so far
        ends with begins) in a stream; None: none (and none watched for past `found`).
        The region's own end marker, written after prose the model put inside it
        (`<|tool_call_start|>[f(a=1)] junk<|tool_call_end|>`): markup, as the end marker
        after a remark in a Hermes tag is, and as any format's markers are."""
        stop = found[0] if found is not None else len(buf)
        best = None
        grows = False
        held = -1  # (a stream: a quote before one at the text's end, whose close may come next)
        for e in self.end_watch:
            k = buf.find(e, pos, stop + len(e) - 1)
            while k >= 0:
                # (In inline code or in quotes the marker is named, as a marker of a call is in
                # inline code (_in_prose): "The `</TOOLCALL>` tag ends a call.", 'I wrote
                # "</TOOLCALL>" by mistake.' are the remark's text, left whole: qa36, qa37.)
                if not _in_inline_code(buf, k):
                    quote = buf[k - 1] if k > 0 and buf[k - 1] in "\"'" else ""
                    after = k + len(e)
                    if not quote:
                        break
                    if after >= len(buf):
                        if not final and (held < 0 or k < held):
                            held = k
                        break
                    if buf[after] != quote:
                        break
                k = buf.find(e, k + 1, stop + len(e) - 1)
            if k < 0 and found is not None and found[1] == e and buf.startswith(e, stop):
                # (The next marker is that end marker itself: an end-of-turn token that
                # closed a Hermes payload, cut at a call after its JSON (RegionReader.run:
                # `{…}\n[TOOL_CALLS]g[ARGS]{}<|im_end|>`), or a fence's ``` so, written
                # after that call: the region's close, markup, not a token in the middle
                # of the reply. In a stream, not while a longer marker may still begin
                # there, ```json, which a whole text finds as the next marker instead:
                # waited on, as the scanner waits on it.)
                if not final and len(buf) - stop <= self.max_prefix and buf[stop:] in self.prefixes:
                    grows = True
                    continue
                k = stop
            if 0 <= k <= stop and (best is None or k < best[0]):
                best = (k, k + len(e))
        if held >= 0 and (best is None or held <= best[0]):
            return WAIT, held
        if best is None and grows:
            return WAIT, stop
        if best is not None or found is not None:
            if best is None:
                self.outer_watch = (self.end_watch, self.base + found[0])  # (see after_call)
            outer, self.watch_outer = self.watch_outer, None
            # (The call's own end marker taken: the outer region's still watched for, see
            # watch_outer; the outer one taken ends both.)
            self.end_watch = outer if best is not None and outer is not None and buf[best[0] : best[1]] not in outer else None
            return best
        if final:
            # (The end of the reply cut the end marker as it was being written, `junk<|tool_c`,
            # `[f(a=1)])]<|t`: markup too, as a value's close the end cut is (repairs.md,
            # cut_value), not text. Two characters at least: a `<` alone names nothing.)
            n = len(buf)
            longest = max(map(len, self.end_watch), default=0)
            cut = next((i for i in range(max(pos, n - longest + 1), n - 1) if cut_marker(buf[i:], self.end_watch) and not _in_inline_code(buf, i)), -1)
            if cut >= 0:
                self.end_watch = self.watch_outer = None
                return cut, n
            return None
        n = len(buf)
        # (the earliest of them: `</tools>\n</` may begin `</tools>\n</response>`, whose `</` begins `</response>`)
        for e in self.end_watch:
            for i in range(max(pos, n - len(e) + 1), n if held < 0 else held):
                if e.startswith(buf[i:]):
                    held = i
                    break
        return (WAIT, held) if held >= 0 else None

    def _opener_at(self, buf: str, p: int) -> str | None:
        """The longest reasoning opener at p, or None."""
        if p >= len(buf) or buf[p] not in self.think_firsts:
            return None  # (most replies: one look at a character)
        found = None
        for opener in self.think_opens:
            if buf.startswith(opener, p) and (found is None or len(opener) > len(found)):
                found = opener
        return found

    def _may_open(self, buf: str, p: int) -> bool:
        """Whether the text from p is a proper start of a reasoning opener (more text decides)."""
        n = len(buf)
        if p < n and buf[p] not in self.think_firsts:
            return False
        rest = buf[p : p + self.think_width + 1]
        return any(len(rest) < len(o) and o.startswith(rest) for o in self.think_opens)

    def _think(self, out: list, final: bool) -> bool:
        """Inside a reasoning block: reasoning up to its closer (any of think_closers,
        the first in the text; the longest there). A call marker inside, or any other
        marker of its format, is reasoning text: only a closer ends the block, and a call
        marker inside is read as a call only if the block is never closed. A closer that
        is a call marker (harmony's `<|start|>`: a new message) is not markup: it is read
        next, as what it starts."""
        buf = self.buf
        close = -1
        closer = ""
        # A closer that is a call marker (harmony's `<|start|>`, which the model writes
        # where it left out `<|end|>`) closes only where a message of its format may
        # start there: `Then <|start|>assistant.` inside the analysis is its text.
        # (None: a stream's text ends before that is told; the block waits there.)
        untold = len(buf)
        for c in self.think_closers:
            at = buf.find(c, max(self.think_from, self.think_scan - len(c)))
            while at >= 0 and c not in self.think_closes:
                if at > untold:
                    # (A closer after one a stream's text cannot tell yet decides nothing
                    # now: the block waits at that one, and a close found after it is
                    # dropped below. Not asked: harmony's `<|channel|>` was tested at
                    # each delta while the `<|start|>` before it waited, fuzz seed 7
                    # #112005352.)
                    at = -1
                    break
                starts = self._opens_in_think(c, buf, at, final)
                if starts:
                    starts = self._not_quoted(c, at, final)
                    if starts:
                        break
                if starts is None:
                    untold = min(untold, at)
                    at = -1
                    break
                at = buf.find(c, at + 1)
            while at > self.think_from and c in self.think_closes and buf[at - 1] == "`":
                # A closer in backticks (`` `</think>` ``) is the reasoning's mention of
                # its tag, not its end: the rest of the reasoning is no answer. (A
                # stream's text that ends right after it waits one character.)
                after = at + len(c)
                if after >= len(buf):
                    if not final:
                        untold = min(untold, at)
                        at = -1
                    break
                if buf[after] != "`":
                    break
                at = buf.find(c, after)
            if at >= 0 and (close < 0 or at < close or (at == close and len(c) > len(closer))):
                close, closer = at, c
        if close > untold:
            close = -1
        if close >= 0:
            self._reason(out, self.pos, close)
            if closer in self.think_closes:
                out.append(Piece("markup", close, close + len(closer), ""))
                self.pos = close + len(closer)
            else:
                self.pos = close
            self.mode = self.after_think
            self.after_think = "prose"
            return True
        self.think_scan = untold
        if not final:
            # Show reasoning up to a possible call marker or marker prefix; hold the rest.
            # (The text a search found no marker in is not searched again, but for a
            # marker's length at its end: the reasoning held at a tag, _quoted_tag, is.
            # Nor the text before the marker one found: the first marker is still that
            # one, found again from a marker's length before it, not from a held tag on
            # at each wake: rv34.)
            call = None
            if self.call_re is not None:
                call = self.call_re.search(buf, max(self.pos, self.call_scan - self.base - self.max_prefix))
                self.call_scan = self.base + (len(buf) if call is None else call.start())
            end = call.start() if call is not None else len(buf) - self._held(buf, self.pos)
            if end > self.pos:
                # (Else nothing more shows, whatever tag or token follows: the usual delta of
                # a block held from a call marker on, which looked at every tag and token
                # of every format each time, 20 µs a character: fuzz seed 7 #112001430.)
                end = min(self._tag_over(buf, end), untold, self._turn_end_at(buf))
            end = self._quoted_tag(out, buf, end)
            self._reason(out, self.pos, end)
            self.pos = max(self.pos, end)
            return False
        # The block never closed: read the rest as prose-that-is-reasoning, calls included.
        # (Its lines are reasoning, not the lines of a broken reply-opening list's run:
        # relist ends at the opener, as where a line break came before it. Kept on, a
        # list on the block's next line was read as such a run's (no tools: its error
        # told, or its call kept) only where the opener stood on the list's line, and a
        # stream, which shows that reasoning as it comes, never read it so: fuzz seed 7
        # #112343487.)
        self.relist = False
        self.in_open_think = True
        self.mode = "prose"
        self.after_think = "prose"
        return True

    def _opens_in_think(self, c: str, buf: str, at: int, final: bool) -> bool | None:
        """marker_opens for the closer c at `at`, a call marker, in a reasoning block. Its
        answer, once told (True, False), is the same on more text (a match that ended
        before the text's end, or none that could begin): kept, so that a stream does not
        match the opening test again at each delta while the block is held there for
        _not_quoted (fuzz seed 7 #112001430: the same `<|channel|>` tested 30 times)."""
        told = self.opens_told
        key = (c, self.base + at)
        if not final and told is not None:
            got = told.get(key)
            if got is not None:
                return got
        # Untold, its answer is that of the text from the marker on (where no test looks
        # behind its start), which a stream asks again at each delta until it tells: the
        # same text asked before (a message's `<|start|>assistant<|channel|>…` header, one
        # character more at a time, in each message) is not matched again.
        text = (c, buf[at:]) if not final and len(buf) - at <= _OPENS_TEXT and self._opens_local(c) else None
        if text is not None and told is not None:
            got = told.get(text, told)
            if got is not told:
                if got is not None:
                    told[key] = got
                return got
        got = marker_opens(self.by_marker[c], buf, at, final, self.call_markers)
        if not final:
            if told is None or len(told) >= 256:
                told = self.opens_told = {}
            if got is not None:
                told[key] = got
            if text is not None:
                told[text] = got
        return got

    def _opens_local(self, c: str) -> bool:
        """marker_test_local for the closer c, worked out once."""
        local = self.opens_local
        if local is None:
            local = self.opens_local = {}
        got = local.get(c)
        if got is None:
            got = local[c] = marker_test_local(self.by_marker[c], c[0], self.call_markers)
        return got

    def _tag_over(self, buf: str, c: int) -> int:
        """Where the reasoning a stream shows ends, for c, its first call marker or the
        marker prefix it holds: at the start of a reasoning tag that holds c: an opener
        (`<think>>>>f`, where `>>>` starts at the opener's `>`) or another block's
        closer (`[THINK]…</think>>>>f`), else c. A block that never closes is read from
        there on as prose, and that reading takes the tag first and the marker after
        it, as parse() does from the block's start; from c it would take `>>>>f`."""
        end = c
        if c >= len(buf):
            return c  # (no tag holds c: it would end past the text)
        for tag in self.think_tags:
            j = buf.find(tag, max(self.pos, c - len(tag) + 1), c + len(tag) - 1)
            if 0 <= j < end:
                end = j
        return end

    def _quoted_tag(self, out: list, buf: str, end: int) -> int:
        """Where the reasoning a stream shows ends, for `end` (its first call marker, or
        what it holds), in a block not closed so far: at a reasoning tag or end-of-turn
        token before it (tag_re) that a string open before it may quote, else end.
        A block that never closes is read as prose from its start (parse()), and that
        reading asks at each such tag, before any call marker after it, whether a string
        quotes it (_in_prose, instring.py): where one does, the string's text is
        reasoning, up to where it closes or the end of the reply, call markers in it too.
        A stream that showed the tag read on from its first call marker, asked there with
        that marker's end markers, and took what parse() read as quoted for a call, or
        an error (`<think>f("<|channel>commentary to=|<tool_call>{…}'`: fuzz seed 7
        #99048630). So it holds the tag, and reads from it as parse() does, until the
        string is told not to quote it, or to quote it up to a place before `end`; tags
        told are not asked again (tag_to)."""
        tags = self.tag_re
        if tags is None:
            return end
        base = self.base
        p = max(self.pos, self.tag_to - base)
        stop = end + self.tag_width - 1  # (a tag that begins before end: the text after end is not searched)
        while p < end:
            m = tags.search(buf, p, stop)
            if m is None or m.start() >= end:
                p = end
                break
            j, after = m.span()
            if _in_inline_code(buf, j):
                p = after  # (in inline code: its text, the prose reading asks nothing there)
                continue
            self._told(out)
            floor = self.prose_from - base
            if self._quote_before(buf, max(0, floor, j - _instring.LOOK), j):
                if self.reading is None:
                    self.reading = _instring.Reading()
                got = _instring.in_string(buf, j, floor, self.reading, base, False, after, ())
                if got is None or (got and self.reading.span - base > end):
                    self.tag_to = base + j
                    return j
                if got:
                    after = max(after, self.reading.span - base)  # (quoted: reasoning, up to there)
            p = after
        self.tag_to = base + p
        return end

    def _turn_between(self, buf: str, i: int, after: int, final: bool) -> int | None:
        """For an end-of-turn token at i (ending at `after`) in the middle of the reply:
        where the turn boundary it begins ends, when it stands right after a call (blanks
        between) and the next call's start marker, of a format that is not quiet, follows
        it: the token, blanks, and the next turn's opener the template writes
        (`<|im_start|>assistant`, `<|start_header_id|>assistant<|end_header_id|>`), if
        any, then blanks (_TURN_BOUNDARY). 0: not so (the token is text). None: a stream's
        text cannot tell yet; it waits until more characters follow the token than the
        longest boundary and start marker (_TURN_MOST, max_prefix) or the reply ends, and
        decides on the same text as parse() does."""
        if self.call_to < 0 or self.call_to < self.read_to or self.in_open_think:
            # (No call right before it: none yet, text read since the last one (prose, a
            # think block, `<think></think><|im_end|><tool_call>`, a region that failed), or
            # reasoning: the token is its text, as the fast path has it. A region read
            # with no call in it whose after_call was made (a message's markers,
            # `<tool_calls></tool_calls>`) counts as a call here: _after_call sets call_to
            # to its end before it looks for a call (storm._empty_after replays that).)
            return 0
        at = self.read_to - self.base
        if not (0 <= at <= i and _BLANK_RUN.match(buf, at, i).end() == i):
            return 0
        if not final and len(buf) - after <= _TURN_MOST + self.max_prefix:
            return None
        boundary = _TURN_BOUNDARY.match(buf, after)
        end = boundary.end()
        if boundary.group("role") == "assistant":
            # The next turn opened as the model's own (`</tool_call><|im_end|>\n<|im_start|>
            # assistant\n`), whatever follows it: the reply's end, prose, reasoning or a
            # call. The model ran on into a turn of its own; what it writes there is the
            # reply's, the template's tokens around it markup (QA19 R8). (Another role's
            # turn, `<|im_start|>user\n…`, is text but before the next call.)
            return end
        m = self.call_re.match(buf, end) if self.call_re is not None else None
        if m is None or not any(not f.quiet for f in self.by_marker[m.group()]):
            return 0
        return end

    def _turn_end_at(self, buf: str) -> int:
        """Where an end-of-turn token that ends the text so far (blanks after it at most)
        starts, else the text's end: a stream holds it back in a reasoning block, as the
        reply may end there (and then it is markup, as parse() finds once the block
        never closed), or go on (and then it is the block's text)."""
        if self.turn_ends:
            end = len(buf)  # (the trailing blanks stepped over, not the text copied: each delta)
            while end and buf[end - 1].isspace():
                end -= 1
            if end:
                # (Only the tokens that end as the text does: one look a delta, not 18.)
                for token in self.turn_by_last.get(buf[end - 1], ()):
                    if buf.endswith(token, 0, end):
                        return end - len(token)
        return len(buf)

    def _not_quoted(self, closer: str, at: int, final: bool) -> bool | None:
        """For a closer that starts a message (harmony's `<|start|>`, the block's `<|end|>`
        left out): False when the message is quoted in the block, its text: the block's
        own markup closer comes after it, before the next such closer, and read by the
        format's grammar up to there the message ends before it, with more of the block's
        text after it, or is none (`The header is <|start|>assistant<|channel|>commentary
        to=functions.x …<|call|> and then I wait.<|end|>`). True where the message runs to
        that closer (its own end left out: `{…}<|end|>`) or no markup closer ends the
        block; None while a stream's text cannot tell."""
        buf = self.buf
        after = at + len(closer)
        waits = self.quoted_wait
        wait = waits.get((closer, self.base + at)) if waits is not None and not final else None
        if wait is not None and wait[1] is self.think_closers:
            # (Untold last time because no closer, nor the closer again, came after it:
            # so while none comes in the text since, looked for from a closer's length
            # before it. Each delta searched the block's text from the closer on.)
            lo = max(after, wait[0] - self.base - self.think_width)
            if not any(buf.find(e, lo) >= 0 for e in wait[2]):
                waits[closer, self.base + at] = (self.base + len(buf), *wait[1:])
                return None
        return self._quoted_look(closer, at, final)

    def _quoted_look(self, closer: str, at: int, final: bool) -> bool | None:
        """_not_quoted's look at the block's text after the closer."""
        buf = self.buf
        after = at + len(closer)
        # (Not a token that ends the reply and the turn of this closer's own format, where
        # that format's reasoning does not end at it: Apriel's `[BEGIN FINAL RESPONSE]` is
        # not quoted because `<|end|>`, gpt-oss's closer but Apriel's end of turn, ends the
        # reply after its answer. Any other closer, `</think>` first, shows it was.)
        turn = {
            t
            for fmt in self.by_marker[closer]
            for t in fmt.end_of_turn
            if not any(t in closers for _, closers in fmt.reasoning)
        }
        ends = []
        for e in self.think_closers:
            i = buf.find(e, after) if e in self.think_closes else -1
            if i < 0:
                continue
            if e in turn and _BLANK_TO_END.match(buf, i + len(e)) is not None:
                if not final:
                    return None  # (the reply may end there, or go on)
                continue
            ends.append(i)
        stop = min(ends) if ends else -1
        again = buf.find(closer, after)
        if stop < 0 or 0 <= again < stop:
            if not final and again < 0:
                looked = (closer, *(e for e in self.think_closers if e in self.think_closes))
                waits = self.quoted_wait
                if waits is None or len(waits) >= 64:
                    waits = self.quoted_wait = {}
                waits[closer, self.base + at] = (self.base + len(buf), self.think_closers, looked)
                return None
            return True
        for fmt in self.by_marker[closer]:
            drv = Driver(fmt, at)
            drv.quotes = False
            if drv.run(buf[:stop], True, self.at_marker) == DONE and not buf[drv.end : stop].strip():
                return True
        return False

    def _reason(self, out: list, start: int, end: int) -> None:
        if end > start:
            out.append(_piece("reasoning", start, end, self.buf[start:end]))

    # -- regions (read by a RegionReader: see region.py) -----------------------------
    def _begin(self, candidates: list[Format], start: int, marker_len: int, frame: _frame.Frame | None = None) -> None:
        """Start reading a region: by its first candidate's fast frame when given
        (it waits for more text), else by the candidates' drivers, in order."""
        if self.observer is not None:
            self.observer.region_begins(candidates, start, marker_len)
        self.stray = None
        self.end_watch = self.watch_outer = None
        self.region = RegionReader(self, candidates, start, marker_len, frame)

    def _region(self, out: list, final: bool) -> bool:
        return self.region.run(out, final, False)

    def _end_region(self) -> None:
        self.ended = self.base + self.pos
        self.region = None
        self.mode = "prose"
        self.read_to = self.base + self.pos

    def _after_object(self, buf: str, i: int, marker: str) -> bool:
        """Whether a `line_start` literal first on its line (Llama 3's `{`, with tools)
        comes right after a line of prose that ends with `}`, blanks and line breaks
        between, where that line holds a call object written after prose on it
        (`Let me check.{"name": …}`), which is not read. The call on the next line is
        not read either, so that a reply's calls are read all or none (an agent ran
        one of two); nor the one after it (declined_at). Any other line that ends with
        `}` (a JSON result, a template's `{x}`, a call object that broke in its head)
        is prose the next line's call is read after (QA13 F2). The reply's seven
        characters before that line break, and _OBJECT_LOOK before its `}`, tell: a
        stream keeps that much (_trim); the `}` must be the model's prose, not a
        call's or region's end."""
        if marker not in self.object_markers:
            return False
        j = i
        while j > 0 and buf[j - 1] in " \t":
            j -= 1
        if j == 0 or buf[j - 1] != "\n":
            return False  # (the reply's start, or after a reasoning block's closer)
        k = j - 1
        while k > max(0, j - 8) and buf[k - 1].isspace():
            k -= 1
        # (k - 1: the last character before the line break and the blanks before it.)
        if not (k > max(0, j - 8) and buf[k - 1] == "}" and self.base + k - 1 >= self.read_to):
            return False
        if self._glued_call(buf, k - 1):
            self.declined_at = self.base + i
            return True
        return False

    def _glued_call(self, buf: str, close: int) -> bool:
        """Whether the line that ends with the `}` at `close` (no further back than
        _OBJECT_LOOK) holds an object that opens as a call's after prose on that line,
        or opens it where _after_object declined a call: not read."""
        lo = max(0, close - _OBJECT_LOOK, self.read_to - self.base)
        start = buf.rfind("\n", lo, close) + 1 or lo
        # Only a call this reply could make: the object that ends the line (not one
        # inside a result's, `{"result": {"name": "Paris"}}`), naming an offered tool
        # (not `{"name": "Bob"}`, nor a format restated, `{"name": <tool>, …}`); any
        # other object is prose the next line's call is read after (QA14 R1).
        first = _CALL_HEAD.search(buf, start, close)
        if first is None:
            return False
        o = _object_open(buf, first.start(), close)
        m = _CALL_HEAD.match(buf, o) if o >= 0 else None
        if m is None or not (buf[start:o].strip() or self.base + o == self.declined_at):
            return False
        name = _NAME_VALUE.match(buf, m.end())
        return name is not None and name.group(1) in self.tools

    # The region's reader calls these two through the scanner (an observer is told).
    def _decode(self, drv: Driver) -> Region | str:
        region = self.region.decode(drv)
        if self.observer is not None:
            self.observer.region_read(drv, region)
        return region

    def _note_failure(self, drv: Driver, reason: str) -> None:
        if self.observer is None:
            note_failure(self.region, drv, reason)
            return
        before = self.region.first_failure
        note_failure(self.region, drv, reason)
        after = self.region.first_failure
        self.observer.candidate_failed(drv, reason, after if after is not before else None)

    @property
    def first_failure(self) -> Failure | None:
        """The region's failure told so far (see note_failure), or None."""
        r = self.region
        return None if r is None else r.first_failure


def _object_open(buf: str, start: int, close: int) -> int:
    """Where the object whose `}` is at `close` opens, reading from `start` (a `{`) in
    one pass: braces inside strings (either quote, backslash escapes) do not count,
    nor quotes between objects (prose: `Let's`); -1 when that `}` closes none."""
    opens: list[int] = []
    quote = ""  # (not extent.outside_strings: here a quote opens a string only inside an object)
    i = start
    while i < close:
        c = buf[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c == "{":
            opens.append(i)
        elif c == "}":
            if opens:
                opens.pop()
        elif c in "\"'" and opens:
            quote = c
        i += 1
    return opens[-1] if opens and not quote else -1


def _in_inline_code(buf: str, i: int) -> bool:
    """Whether the marker at i is written in inline code (`` `<tool_call>` ``): right
    after a backtick that opens a code span, which names the tag and opens nothing. A
    backtick right after a word or a closing bracket closes a span (`ls`<tool_call>…
    is a call), and a fence's close is no span (_fence_close)."""
    return i > 0 and buf[i - 1] == "`" and (i < 2 or not (buf[i - 2].isalnum() or buf[i - 2] in ")]}")) and not _fence_close(buf, i)


def _fence_close(buf: str, i: int) -> bool:
    """Whether the backticks before `i` are a code fence's close, ``` first on its line:
    a marker right after it (DeepSeek's `` ```<｜tool▁calls▁begin｜>``, the fence of its
    last call's JSON, or of code before the calls) is no inline code."""
    return buf.startswith("```", i - 3) and (i == 3 or buf[i - 4] == "\n")


_STUTTER_BLANKS = _frame.STUTTER_BLANKS  # (see there)



# The scanner's modes, by name (Scanner.mode).
_MODES = {"start": Scanner._start, "prose": Scanner._in_prose, "think": Scanner._think, "region": Scanner._region}


# See Scanner._settle: a token longer than this that waits is matched again after its
# text has grown by a quarter.
_REGROW = 64
#: _opens_in_think keeps its answers by the text from the marker on up to this long
#: (a message header's; longer texts are asked by place only).
_OPENS_TEXT = 64
# How much a stream's buffer grows after a _trim that dropped nothing before the next
# is tried (each try looks back over the prose for where a call may open).
_TRIM_AGAIN = 256
# How many tokens the bracket walks may keep for a stream before they begin anew (_trim).
_GROUPS_KEPT = 1 << 13


class _BlankWait:
    """The scanner's wait on the blanks after a fence's ``` (Scanner._fence_closes):
    deltas of blanks only are put aside."""

    __slots__ = ()

    def absorbs(self, text: str, n: int) -> bool:
        return not text.strip(" \t\r")


_BLANK_WAIT = _BlankWait()


class _TickWait:
    """The scanner's wait on a fence's backticks that run to the text's end (Scanner.
    _fence_closes): deltas of backticks only are put aside."""

    __slots__ = ()

    def absorbs(self, text: str, n: int) -> bool:
        return not text.strip("`")


_TICK_WAIT = _TickWait()


class _MarkWait:
    """The scanner's wait where only a whole marker (a call's, a reasoning tag, an
    end-of-turn token) or one of `ends` can change anything: a delta is put aside while
    the text since the last look, with the start of a marker that ended it before (held),
    holds none; what may start one at its end is held for the next. _CharWait's rule (a
    first character of one in the last `width`) woke at every delta within 48 characters
    of an `a`, `c`, `f` or `<`: in most text, at every delta, each of which read the
    broken frame's region again (fuzz seed 7 #112002015: 13 µs a character)."""

    __slots__ = ("sc", "ends", "held")

    def __init__(self, sc: Any, ends: tuple, held: str) -> None:
        self.sc = sc
        self.ends = ends
        self.held = held

    @staticmethod
    def of(sc: Any, r: Any, ends: tuple) -> _MarkWait | None:
        """The wait for the broken frame of region r, or None where the region's run asks
        more than settle_failure (held_wait's conditions: a salvage or a spaced call
        pending, whose reading words and lengths decide, a cut opener looked for, a replay
        waiting; a frame broken right after its name, whose next words decide)."""
        if r.salvaged is None or r.spaced is not None or r.cut_look is not False or r.cut_wait or r.salvage_wait is not None:
            return None
        drv = r.failed_frame
        if drv.last_term is not None and drv.last_term in _name_terminals(drv):
            return None  # (broken after its name: the words after it decide, _held_name)
        if any(not e for e in ends) or sc.buf[-1:] in sc.by_marker:
            # (A marker of one character at the end, `[` of a Python list with tools: the
            # next look finds it again, so every delta would wake it, after a look at the
            # text's end that costs more than the wake, in a run of `[`: fuzz seed 7
            # #112000445.)
            return None
        return _MarkWait(sc, ends, _MarkWait._tail(sc, sc.buf, ends))

    @staticmethod
    def _tail(sc: Any, text: str, ends: tuple) -> str:
        """The end of text that may begin a marker or one of ends."""
        hold = sc._held(text) if text[-1:] in sc.first_set or text[-2:] in sc.end_pairs else 0
        n = len(text)
        for e in ends:
            for k in range(min(len(e) - 1, n), hold, -1):
                if e.startswith(text[n - k :]):
                    hold = k
                    break
        return text[n - hold :] if hold else ""

    def absorbs(self, text: str, n: int) -> bool:
        value = self.held + text
        if self.sc.literals.search(value) is not None or any(e in value for e in self.ends):
            return False
        self.held = _MarkWait._tail(self.sc, value, self.ends)
        return True


class _CloseWait:
    """The scanner's wait on the rest of a fast frame's close marker (Scanner._close_wait):
    deltas are put aside while the text from the payload's last `<` on (`tail`) is a proper
    start of one of `closes` and completes none of them, and the text is shorter than
    `limit` (where the frame gives way to the general reading)."""

    __slots__ = ("tail", "closes", "limit")

    def __init__(self, tail: str, closes: tuple, limit: int) -> None:
        self.tail = tail
        self.closes = closes
        self.limit = limit

    def begun(self) -> bool:
        """Whether tail is a proper start of a close marker, and holds none whole."""
        tail = self.tail
        begun = False
        for c in self.closes:
            if tail.startswith(c):
                return False
            if len(tail) < len(c) and c.startswith(tail):
                begun = True
        return begun

    def absorbs(self, text: str, n: int) -> bool:
        if n + len(text) >= self.limit:
            return False
        tail = self.tail
        self.tail += text
        if self.begun():
            return True
        self.tail = tail
        return False


class _GrowWait:
    """The scanner's wait on a long growing token: deltas are put aside until the text
    reaches `until` characters."""

    __slots__ = ("until",)

    def __init__(self, until: int) -> None:
        self.until = until

    def absorbs(self, text: str, n: int) -> bool:
        return n + len(text) < self.until


class ReadCallsMemo:
    """The reply's read_calls (Builder._python_calls: Python-style calls in another
    format's payload, read by a parse of their own), each payload text read once. A
    storm of one marker whose payloads are a few texts again and again (`<tool_call>
    [f(a=1)]<|/tool_call|>`) was parsed anew at each region by each format whose payload
    it is (hermes's, granite's): fuzz seed 7 #8091806, 106 parses of 32 texts, a third
    of its regions' builds. A parse of a text is a function of that text alone (the
    pythonic formats, no tools, no limit), so the answer is the same; its calls are
    handed out with their arguments copied (a Draft's may be coerced in place). At
    most _CALLS_HELD characters of payloads are kept (a bound on memory, not on
    what is read: a text not kept is parsed again, to the same answer)."""

    __slots__ = ("read", "told", "held")

    def __init__(self, read: Any) -> None:
        self.read = read
        self.told: dict = {}
        self.held = 0

    def __call__(self, text: str, listed: bool) -> list | None:
        key = (text, listed)
        calls = self.told.get(key, self)
        if calls is self:
            calls = self.read(text, listed)
            if self.held + len(text) <= _CALLS_HELD:
                self.told[key] = calls
                self.held += len(text)
        if not calls:
            return calls
        return [_replace(c, arguments=_copy.deepcopy(c.arguments)) for c in calls]


_CALLS_HELD = 1 << 16
