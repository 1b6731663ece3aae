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
format's grammar (see _driver.py), or, when the first format at that marker has
a fast frame and the region is a plain call, by one regex (_frame.py). In a
whole reply, a run of such calls goes to the Assembler as it is read (_run).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import regex

from . import fastpath as _frame
from .._recover import repair as _repair
from .._build.builder import Builder, Draft, Prose, Unreadable, _extent, _rule
from .._lalr.driver import DONE, FAIL, WAIT, Driver, salvage_points
from .._result.model import Segment, ToolCall
from .._grammar.registry import Format

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


@dataclass
class Region:
    start: int
    end: int
    fmt: str
    items: list  # Draft | Prose
    repairs: list[str] = field(default_factory=list)


class Piece(NamedTuple):
    """A slice of the reply: kind "text", "reasoning" or "markup" (tags removed),
    `value` the text it contributes (a slice of the reply unless given). (A tuple:
    one is made per run of prose, and a tuple is made fastest; see _piece.)"""

    kind: str
    start: int
    end: int
    value: str


def _piece(kind: str, start: int, end: int, value: str, _new=tuple.__new__) -> Piece:
    return _new(Piece, (kind, start, end, value))


@dataclass
class Failure:
    """A region that could not be read: its text stays prose, `message` says why."""

    start: int
    end: int
    message: str


class Markers:
    """What the scanner searches prose for, for one ordered set of formats
    (built once per set: parse() is called per reply).

    Whether tools were given changes two things: `offered_only: always` formats
    are left out without tools, and an `anchor: line` format is searched for (its
    start literal first on any line) only with tools; without, it may only open
    the reply, like `anchor: reply`."""

    def __init__(self, formats: tuple[Format, ...], tools_given: bool = True) -> None:
        self.by_marker: dict[str, list[Format]] = {}
        self.anchored: list[Format] = []
        for fmt in formats:
            if fmt.needs_tools and not tools_given:
                continue
            if fmt.anchor == "line" and not tools_given:
                self.anchored.append(fmt)
                continue
            if fmt.anchor and fmt.anchor != "line":
                self.anchored.append(fmt)
            for marker in fmt.starts:
                self.by_marker.setdefault(marker, []).append(fmt)
        markers = sorted(self.by_marker, key=len, reverse=True)
        # A literal that only line-anchored formats start with counts only first on a line.
        line = {m for m in markers if all(f.anchor == "line" for f in self.by_marker[m])}

        # (The end of a <think> block starts a line too: models write
        # `</think>[get_weather(city="LA")]` as often as with a newline between.)
        after = r"(?<=(?:^|" + regex.escape(THINK_CLOSE) + r")[ \t]*)"

        def pattern(m: str) -> str:
            return after + regex.escape(m) if m in line else regex.escape(m)

        self.call_re = regex.compile("|".join(map(pattern, markers)), regex.M) if markers else None
        markers = sorted([*markers, THINK_OPEN, THINK_CLOSE], key=len, reverse=True)
        self.any_re = regex.compile("|".join(map(pattern, markers)), regex.M)
        self.prefixes = frozenset(m[:i] for m in markers for i in range(1, len(m)))
        self.max_prefix = max((len(m) for m in markers), default=1) - 1
        self.quick = _quick_searches(self.by_marker)
        # For _in_prose: markers that start with a letter ("functools", "Action:") are
        # found by str.find, the others by one search. (One search for all of them
        # stops at every a, c, f of the prose: several times slower.)
        literal = sorted({*self.by_marker, THINK_OPEN, THINK_CLOSE} - {""}, key=lambda m: (-len(m), m))
        self.words = tuple(m for m in literal if m[0].isalnum())
        symbols = [m for m in literal if not m[0].isalnum()]
        self.symbols = re.compile(_trie(symbols) or "(?!)")
        # Symbol markers that no other one starts with: where such a marker starts, it is
        # the longest one there (Scanner._run takes it for the one it just read).
        self.unextended = frozenset(m for m in symbols if not any(o != m and o.startswith(m) for o in symbols))
        # Where one may start: found by a character class first (an alternation of
        # dozens of markers is tried at every character of the prose: ten times slower).
        starts = "".join(sorted({m[0] for m in symbols}))
        self.symbol_firsts = re.compile(f"[{re.escape(starts)}]" if starts else "(?!)")
        self.symbol_chars = frozenset(starts)
        # Where a driver may cut a broken value short (Driver._cut): the markers of three
        # characters or more. (`{` and `[` open a reply's JSON, and are in every value.)
        cut = [m for m in symbols if len(m) >= 3]
        self.cut_symbols = re.compile(_trie(cut) or "(?!)")
        self.cut_firsts = re.compile("[" + re.escape("".join(sorted({m[0] for m in cut}))) + "]" if cut else "(?!)")
        # What a whole text is searched for (Scanner._whole_next): those characters,
        # then the word markers, longest first; each with the character that finish()
        # looks for first (see _guard).
        self.literal_keys = (*sorted(starts), *self.words)
        self.key_guards = tuple((k, _guard(k)) for k in self.literal_keys)
        # The fast frame (see _frame.py) of the first format each marker opens.
        self.frames = {k: f for k, fmts in self.by_marker.items() if (f := _frame.frame_of(fmts[0])) is not None}
        # A found literal needs the full search only if a line-start condition applies.
        self.line = frozenset(line)
        self.openers: dict[str, tuple] = {}  # _frame.opening() of each first character (Scanner._start)
        self.line_openers: dict[str, tuple | None] = {}  # _line_opening() of each marker in `line`
        quick, risky_ends, firsts, literals, first_set, end_pairs = self.quick
        self.shared = {
            "by_marker": self.by_marker, "anchored": self.anchored, "call_re": self.call_re,
            "any_re": self.any_re, "prefixes": self.prefixes, "max_prefix": self.max_prefix,
            "quick": quick, "risky_ends": risky_ends, "firsts": firsts, "literals": literals,
            "first_set": first_set, "end_pairs": end_pairs, "line": self.line,
            "symbols": self.symbols, "symbol_firsts": self.symbol_firsts, "words": self.words, "unextended": self.unextended,
            "symbol_chars": self.symbol_chars, "literal_keys": self.literal_keys, "key_guards": self.key_guards,
            "cut_symbols": self.cut_symbols, "cut_firsts": self.cut_firsts, "cut_keys": ("", *self.words),
            "frames": self.frames, "openers": self.openers, "line_openers": self.line_openers,
        }  # fmt: skip


_MARKERS: dict[tuple, Markers] = {}


def _line_opening(fmts: list[Format], firsts: frozenset, marker: str) -> tuple | None:
    """_frame.opening() of the formats a line-anchored marker opens, when each is
    quiet; None: the drivers decide (a failure there would be told)."""
    if not all(f.quiet for f in fmts):
        return None
    return _frame.opening([f for f in fmts if may_open(f, marker[0])], firsts, marker[0])


# What Scanner.early_call looks for at the start of a payload, within _EARLY_SPAN
# characters: a call object whose first key is a plain name and whose second opens
# the arguments as an object.
_EARLY_SPAN = 300
_EARLY_NAME = regex.compile(
    r'[ \t\r\n]*\{[ \t\r\n]*"name"[ \t\r\n]*:[ \t\r\n]*"([A-Za-z0-9_][A-Za-z0-9_.\-:/]{0,127})"'
    r'[ \t\r\n]*,[ \t\r\n]*"(?:arguments|parameters)"[ \t\r\n]*:[ \t\r\n]*\{'
)

_LAST: dict[bool, tuple] = {}  # tools_given -> (the tuple of formats last asked for, its Markers)


# Characters from the rarest in replies to the most frequent (any other is rarer still):
# "|", lower-case letters, what markup is made of, what JSON and prose are full of.
_COMMON = '|zqxjkvbpygfwmucldrhsnioate_/[]<> .,:"{}\n'


def _guard(key: str) -> str:
    """The character of `key` that a text lacks most often: finish() looks for it
    before the key. A one-character search is a memchr, a word's is several times
    slower, and a text without the guard cannot hold the key ("=" for "commentary
    to=", "|" for "function call<|role_sep|>"). A one-character key is its own guard."""
    if len(key) == 1:
        return key
    return min(key, key=_COMMON.find)


def markers_for(formats, tools_given: bool = True) -> Markers:
    last = _LAST.get(tools_given)
    if last is not None and last[0] is formats:
        return last[1]  # (the registry's own tuple, asked for again: no key to hash)
    key = (*formats, tools_given)
    found = _MARKERS.get(key)
    if found is None:
        found = _MARKERS[key] = Markers(tuple(formats), tools_given)
    if type(formats) is tuple:  # (a list could change under the same identity)
        _LAST[tools_given] = (formats, found)
    return found


_OPENS: dict[tuple[Format, str], bool] = {}


def may_open(fmt: Format, ch: str) -> bool:
    """Could a region of fmt start with this character? A reply-anchored format
    whose first token cannot start with the reply's first character would fail at
    once; skipping it saves building a driver for each of them on every reply."""
    key = (fmt, ch)
    found = _OPENS.get(key)
    if found is None:
        c = fmt.compiled
        found = any(_frame.can_start(t, ch) for t in (*c.allowed[c.start_state], *c.ignore))
        if len(_OPENS) < 100_000:
            _OPENS[key] = found
    return found


class Scanner:
    # The state of a scan. Scalars start as these class attributes (a scanner is made
    # per reply: assigning them all in __init__ cost more than a short reply's scan).
    buf = ""
    pos = 0
    mode = "start"
    in_open_think = False  # prose is reasoning: an unclosed <think> block
    think_opened = False  # the reply starts inside a <think> block (in_think), until seen
    think_from = 0  # where the current <think> content starts
    think_scan = 0  # how far </think> has been searched for
    after_think = "prose"  # the mode to return to after </think>
    frame: _frame.Frame | None = None  # the first candidate's fast frame, until given up
    frame_wait: Any = None  # what Frame.read waits with (a _LoopWait: see _settle)
    region_start = 0
    marker_len = 0
    first_failure: Failure | None = None
    failure_taken = 0  # how many tokens the driver of first_failure read
    failure_stray = False  # first_failure is a call a stray quote broke (see _note_failure)
    failed_frame: Driver | None = None
    mentioned = False  # a format read the region as a mention of its tag (_mention)
    fail_scan = 0
    salvaged: Any = None  # _salvage's answer for the region (False: none), once asked
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
    word_buf: str | None = None  # the buffer word_next is about
    word_first: tuple[int, str] | None = None  # the first word marker in it (-1: none)
    symbol_next: tuple[int, str] | None = None  # the next other marker (-1: none)
    finds: Any = None  # _find's answers: (the buffer, {text: (since, at)}), for two buffers
    brackets: Any = None  # the drivers' _repair.BracketIndex (made with the first driver)
    whole_keys: list = []  # what _whole_next looks for (set by finish; never changed in place)
    sink: Any = None  # read()'s Assembler (see _run)
    whole_next: dict | None = None  # its answers
    mf_buf: str | None = None  # the text mf_found is about (see _markers_from)
    mf_found: dict = {}
    mf_first = (-1, -1)  # (the start it is about, the first marker at or after it)

    def __init__(self, formats: list[Format], tools: Any = None, in_think: bool = False) -> None:
        self.tools = tools
        if in_think:
            self.think_opened = True
        m = markers_for(formats, tools is not None)
        # What the set of formats decides: by_marker, anchored, call_re, any_re,
        # prefixes, max_prefix, the searches of _quick_searches, line, symbols, words,
        # frames, openers (see Markers).
        self.__dict__.update(m.shared)
        if not _frame.enabled:
            self.frames = {}
        self.drivers: list[Driver] = []
        self.candidates: list[Format] = []
        self.pending: list[str] = []
        self.word_next: dict[str, int] = {}  # a word marker's next place in word_buf (-1: none)

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
        if self.waiting.absorbs(text, len(self.buf) + self.pending_n):
            self.pending.append(text)
            self.pending_n += len(text)
            return True
        self.waiting = None
        return False

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
        hold = 0
        q = self.quick.search(value)
        ends = self.risky_ends
        if q is not None or value[-1:] in ends or value[-2:] in ends or value[-3:] in ends:
            # (No marker starts before quick's first match.)
            if q is not None and self.literals.search(value, q.start()) is not None:
                return None
            # Hold back the longest end that may start a marker (one of two characters
            # or more ends as one of those does).
            if value[-1] in self.first_set or value[-2:] in self.end_pairs:
                hold = self._held(value)
                if hold:
                    self.held = value[-hold:]
                    value = value[:-hold]
        if not hold:
            self.held = ""
        self.buf = buf = self.buf + text
        self.pos = len(buf) - hold
        self.think_scan = len(buf)  # (in <think>: searched for </think> up to here)
        if len(buf) > 256:
            self._trim()
        return kind, value, hold

    def lane(self) -> tuple | None:
        """For a caller taking many deltas of plain prose in a row: when nothing is
        held back, (kind, search, risky): a delta for which search() finds nothing
        is all `kind` text, with nothing to hold back, as take_plain() would find,
        but for its longest end in risky (of three characters at most: a longer
        start of a marker would hold a match of search()): that is held, and goes
        before the next delta. The caller may take such deltas and must hand them
        over, joined, with extend_plain() (saying how much is held) before anything else."""
        if self.plain is None or self.held:
            return None
        return self.plain, self.quick.search, self.risky_ends

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
        reply, "x", where the arguments' `{` is); (its start, None) once it cannot
        begin so (or shows nothing within _EARLY_SPAN characters); None while it may still, or outside a region, or for
        the region starting at `settled` (already answered). Only a region whose
        first candidate reads a JSON call object through a fast frame is looked at;
        the name then is what that format reads, unless the rest of the region changes
        it (the stream withdraws the call: see StreamParser)."""
        start = self.base + self.region_start
        if self.mode != "region" or start == settled or not self.candidates or self.in_open_think:
            return None
        if type(_frame.frame_of(self.candidates[0])) is not _frame.Frame:
            return start, None
        at = self.region_start + self.marker_len
        head = self.buf[at : at + _EARLY_SPAN]
        for piece in self.pending:
            if len(head) >= _EARLY_SPAN:
                break
            head += piece
        m = _EARLY_NAME.match(head, 0, partial=True)
        if m is None or (m.partial and len(head) >= _EARLY_SPAN):
            return start, None
        return None if m.partial else (start, m.group(1), self.base + at + m.end() - 1)

    def text_from(self, pos: int) -> str:
        """The text taken from `pos` (in the reply) on, while it is kept: in a region."""
        at = pos - self.base
        if at >= len(self.buf):  # (in the text put aside)
            return "".join(self.pending)[at - len(self.buf) :]
        return self.buf[at:] + "".join(self.pending)

    def in_region(self, start: int) -> bool:
        """Whether the region that starts at `start` (in the reply) is still being read."""
        return self.mode == "region" and self.base + self.region_start == start

    def unread(self) -> str:
        """The text taken but not yet reported (held back, or in an open region)."""
        return self.buf[self.pos :] + "".join(self.pending)

    def _settle(self) -> None:
        """After a feed: note a driver that may skip deltas, drop consumed text,
        prepare take_plain."""
        drivers = self.drivers
        self.plain = None
        if drivers:
            drv = drivers[-1]
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
            elif self.mode == "region" and self.failed_frame is not None and len(drivers) == len(self.candidates):
                # A broken frame waits for its end marker (_settle_failure): only that,
                # or a call marker, decides it.
                ends = self.failed_frame.fmt.ends
                self.waiting = _CharWait.of(buf=self.buf, firsts=self.first_set, more=ends, width=self.max_prefix + 1)
        elif self.frame is not None:
            if self.frame_wait is not _frame.WAIT:
                self.waiting = self.frame_wait  # the payload runs on: see Frame.read
        elif self.mode == "prose" or self.mode == "think":
            if self.pos > 256:
                self._trim()
            buf = self.buf
            if self.mode == "think" and len(buf) - self.pos > self.max_prefix:
                # In <think>, held from a call marker on: only </think> matters now.
                self.waiting = _CharWait.of(buf=buf, firsts=frozenset("<"), more=(), width=len(THINK_CLOSE))
                return
            self.plain = "reasoning" if self.mode == "think" or self.in_open_think else "text"
            self.held = buf[self.pos :]

    def _trim(self) -> None:
        """Drop the text before pos, keeping what look-behinds read: back to the
        last character that is not a space or tab (a marker first on its line,
        the "`" before a marker in inline code), and the seven before it (a whole
        `</think>` that a line-anchored marker may follow; the character before
        a "`")."""
        buf = self.buf
        pos = self.pos
        keep = pos - 1
        floor = max(0, pos - 256)
        while keep > floor and buf[keep] in " \t":
            keep -= 1
        if keep <= 0 or buf[keep] in " \t" or 2 * keep < len(buf):
            return  # a long run of blanks, or too little to gain: keep it all
        keep -= len(THINK_CLOSE) - 1
        if keep <= 0:
            return
        self.buf = buf[keep:]
        self.base += keep
        self.pos = pos - keep
        self.think_from = max(0, self.think_from - keep)
        self.think_scan = max(0, self.think_scan - keep)
        self.blank_to = max(0, self.blank_to - keep)

    # -- helpers ----------------------------------------------------------------
    def at_marker(self, buf: str, pos: int):
        """Does a call marker start at pos? None: the text ends inside a possible one."""
        if self.call_re is None:
            return False
        if self.call_re.match(buf, pos):
            return True
        tail = buf[pos : pos + self.max_prefix]
        if len(buf) - pos <= self.max_prefix and tail in self.prefixes:
            return None
        return False

    def _held(self, text: str, start: int = 0) -> int:
        """How many characters at the end of text (none before start) might begin a
        marker: hold them back."""
        # The longest such tail starts at the first place that can start a marker.
        end = len(text)
        prefixes, search = self.prefixes, self.firsts.search
        m = search(text, max(start, end - self.max_prefix))
        while m is not None:
            p = m.start()
            if text[p:] in prefixes:
                return end - p
            m = search(text, p + 1)
        return 0

    def _prose(self, out: list, start: int, end: int) -> None:
        if end > start:
            kind = "reasoning" if self.in_open_think else "text"
            out.append(_piece(kind, start, end, self.buf[start:end]))

    # -- the state machine --------------------------------------------------------
    def _advance(self, final: bool) -> list:
        out: list = []
        modes = _MODES
        while modes[self.mode](self, out, final):
            pass
        if self.base and out:
            _rebase(out, self.base)
        return out

    def _start(self, out: list, final: bool) -> bool:
        """The reply's beginning: marker-less formats must open it."""
        buf = self.buf
        p = max(self.pos, self.blank_to)
        n = len(buf)
        while p < n and buf[p].isspace():
            p += 1
        self.blank_to = p  # (whitespace is not scanned again)
        if self.think_opened:
            # The prompt opened a <think> block (in_think): the reply starts inside it,
            # unless the model writes the tag itself.
            if not final and (p >= n or (n - p < len(THINK_OPEN) and THINK_OPEN.startswith(buf[p:]))):
                return False  # (only blanks so far, or what may still become <think>)
            self.think_opened = False
            if not buf.startswith(THINK_OPEN, p):
                self.mode = "think"
                self.after_think = "start"
                self.think_from = self.think_scan = self.pos
                return True
        if not self.anchored:
            self.mode = "prose"
            return True
        if p >= n:
            if final:
                self.mode = "prose"
                return True
            return False
        if not self.drivers and buf.startswith(THINK_OPEN[: n - p], p):
            # Reasoning may come first; the reply proper starts after it.
            if n - p < len(THINK_OPEN):
                if final:
                    self.mode = "prose"
                    return True
                return False
            self._prose(out, self.pos, p)
            out.append(Piece("markup", p, p + len(THINK_OPEN), ""))
            self.pos = self.think_from = self.think_scan = p + len(THINK_OPEN)
            self.mode = "think"
            self.after_think = "start"
            return True
        if not self.drivers:
            ch = buf[p]
            test = self.openers.get(ch)
            if test is None:
                test = _frame.opening([f for f in self.anchored if may_open(f, ch)], self.first_set, ch)
                if len(self.openers) < 1000:  # (per set of formats; replies start with anything)
                    self.openers[ch] = test
            candidates = _frame.openers(test, buf, p, final)
            if not candidates:
                self.mode = "prose"
                return True
            self._begin(candidates, p, 0)
        return self._run_region(out, final, anchored=True)

    def _in_prose(self, out: list, final: bool) -> bool:
        buf = self.buf
        pos = self.pos
        kind = "reasoning" if self.in_open_think else "text"
        frames, line, tools = self.frames, self.line, self.tools
        whole = self.whole_next if final else None
        while True:  # (a run of calls the fast path reads is taken here, in one go)
            # Every marker is found as plain text first (the stdlib search is much
            # faster); the full search, with its line-start conditions, starts there.
            found = self._whole_next(buf, pos, whole) if whole is not None else self._next_literal(buf, pos)
            if found is not None and found[1] in line:
                m = self.any_re.search(buf, found[0])
                found = (m.start(), m.group()) if m is not None else None
            if found is None:
                end = len(buf) if final else len(buf) - self._held(buf, pos)
                if end > pos:
                    out.append(_piece(kind, pos, end, buf[pos:end]))
                    self.pos = end
                return False
            i, marker = found
            after = i + len(marker)
            if i > pos:
                out.append(_piece(kind, pos, i, buf[pos:i]))
            self.pos = pos = i
            if not final and len(buf) - i <= self.max_prefix and buf[i:] in self.prefixes:
                return False  # a longer marker may start here ("```" of "```json"): wait
            if i > 0 and buf[i - 1] == "`" and (i < 2 or not (buf[i - 2].isalnum() or buf[i - 2] in ")]}")):
                # `<tool_call>` (or `<think>`) in inline code names the tag; it opens nothing. (A
                # backtick right after a word closes a code span: `ls`<tool_call>… is a call.)
                self._prose(out, i, after)
                self.pos = after
                return True
            if marker == THINK_OPEN:
                if self.in_open_think:  # a nested <think>: keep it as reasoning text
                    self._prose(out, i, after)
                    self.pos = after
                    return True
                out.append(Piece("markup", i, after, ""))
                self.pos = self.think_from = self.think_scan = after
                self.mode = "think"
                return True
            if marker == THINK_CLOSE:
                # A close with no open (the template opened it in the prompt) is removed;
                # it also ends an unclosed block that we were reading calls out of.
                out.append(Piece("markup", i, after, ""))
                self.pos = after
                self.in_open_think = False
                return True
            frame = frames.get(marker)
            if frame is not None:
                got = frame.read(buf, i, final, tools)
                if type(got) is ToolCall:
                    if final and self.sink is not None and kind == "text" and not self.base:
                        stop = self._run(out, buf, got, whole, marker, frame)
                        if stop < 0:
                            self.pos = len(buf)
                            return False  # (the rest was prose: the text is all read)
                        self.pos = pos = stop
                        continue
                    out.append(got)
                    self.pos = pos = got.span[1]
                    continue
                if type(got) is Region:  # (a JsonFrame's, read as the general way would)
                    out.append(got)
                    self.pos = pos = got.end
                    continue
                if got is None:
                    frame = None
            candidates = self.by_marker[marker]
            if marker in line and frame is None:
                # A line-anchored marker (`[`) is mostly prose: the formats' opening
                # tests, one search, tell the lines no grammar can begin a call on
                # (`[]`, `[1]`, `[see above]`) without a driver for each. (Those
                # formats are quiet: a region that fails at once leaves only prose.)
                test = self.line_openers.get(marker)
                if test is None:
                    test = self.line_openers[marker] = _line_opening(candidates, self.first_set, marker)
                if test is not None and not _frame.openers(test, buf, i, final):
                    self._prose(out, i, after)
                    self.pos = pos = after
                    continue
            self._begin(candidates, i, len(marker), frame)
            self.mode = "region"
            if frame is not None:  # the frame waits for more text
                self.frame_wait = got
                return False
            return True

    def _run(
        self, out: list, buf: str, call: ToolCall, nxt: dict, marker: str, frame: Any, _new=tuple.__new__
    ) -> int:
        """A whole reply with a sink (parse), at a call a fast frame read: that call and
        the ones after it that fast frames read, each with the prose before it, go to
        the sink at once (after the items so far), with none of the items that the
        general loop would make and the sink take apart again. Returns where the run
        stops: at the next marker that is not such a call (the loop reads it, as it
        would have); or -1 where no marker follows, the rest of the text, as the loop
        would make it, put in `out`."""
        sink = self.sink
        take = sink.take
        start = end = -1
        prose = ""
        if out:
            last = out[-1]
            if type(last) is Piece and last[2] == call.span[0] and last[0] == "text":
                out.pop()  # (the prose just before the call goes with it, as in the loop below)
                _, start, end, prose = last
            if out:
                sink.extend(out)
                out.clear()
        frames, line, tools, Frame = self.frames, self.line, self.tools, _frame.Frame
        pos = call.span[1]
        take(start, end, prose, call)
        keys = self.whole_keys
        one, symbols = (keys[0], self.symbols) if len(keys) == 1 and keys[0] in self.symbol_chars else ("", None)
        # The marker of the call just read, when the next one found in the text may be
        # taken for it without a look at the markers: the text holds one marker character,
        # and this marker is a symbol marker that no other extends, with no line condition
        # (the common case: call after call in one format).
        unextended = self.unextended
        again = marker if one and type(frame) is Frame and marker in unextended and marker not in line else None
        plain = sink.plain()
        if plain is not None:
            segment, note, cut, keep = plain
        ascii = buf.isascii()  # (see Frame.after)
        while True:
            if again is not None:
                # The next call of the same format, right after prose (or none), read
                # by one match (see Frame.after); else the same, the long way below.
                after = frame.after(again, ascii)
                read, payload = frame._call, frame.payload
                while after is not None:
                    m = after(buf, pos)
                    if m is None:
                        break
                    i = m.start(1)
                    end = m.end()
                    got = read(m.group(payload), i, end, tools)
                    if got is None:
                        return pos  # (the loop reads it again, and takes the general way)
                    if plain is None:
                        take(pos, i, buf[pos:i], got)
                    else:  # (take(), inline)
                        if pos < i:
                            segment(_new(Segment, ("text", pos, i)))
                            note(buf[pos:i])
                        cut()
                        keep(got)
                        segment(_new(Segment, ("call", i, end)))
                    pos = end
            # (_whole_next's search when the text holds one symbol character, inline)
            i = buf.find(one, pos) if one else -1
            if again is not None and i >= 0 and buf.startswith(again, i) and buf[i - 1] != "`":
                got = frame.read(buf, i, True, tools)
                if type(got) is not ToolCall:
                    return pos  # (the loop reads it again, and takes the general way)
                take(pos, i, buf[pos:i], got)
                pos = got.span[1]
                continue
            m = symbols.match(buf, i) if i >= 0 else None
            if m is not None:
                marker = m.group()
            else:
                found = None if one and i < 0 else self._whole_next(buf, pos, nxt)  # (one: the only key)
                if found is None:
                    if pos < len(buf):
                        if plain is None:
                            out.append(_piece("text", pos, len(buf), buf[pos:]))
                        else:  # (what the sink would do with that piece)
                            segment(_new(Segment, ("text", pos, len(buf))))
                            note(buf[pos:])
                    return -1
                i, marker = found
            frame = frames.get(marker)
            # (What the loop does first, at a marker that is neither <think> tag nor in
            # `line`, has no backtick before it, and has a Frame: it reads the frame.)
            if type(frame) is not Frame or marker in line or (i > 0 and buf[i - 1] == "`"):
                return pos
            got = frame.read(buf, i, True, tools)
            if type(got) is not ToolCall:
                return pos  # (the loop reads it again, and takes the general way)
            take(pos, i, buf[pos:i], got)
            pos = got.span[1]
            again = marker if one and marker in unextended else None  # (not in line: see above)

    def _whole_next(self, buf: str, pos: int, nxt: dict) -> tuple[int, str] | None:
        """_next_literal for the whole text (final): the first marker, as plain text,
        at or after pos. It looks only for what the text holds (whole_keys: of the
        symbol markers' first characters, then the word markers, longest first),
        each by str.find, its answer kept in nxt until pos passes it. (A character
        class search is several times slower than a find of one character.)"""
        look = pos
        symbol_chars = self.symbol_chars
        keys = self.whole_keys
        one = keys[0] if len(keys) == 1 else None  # (most replies hold one: "<")
        while True:
            if one is not None:
                i = buf.find(one, look)
                key = one
            else:
                i = -1
                key = ""
                for k in keys:
                    at = nxt[k]
                    if at < look and at != -1:  # (-2: not looked for yet)
                        at = nxt[k] = buf.find(k, look)
                    if at >= 0 and (i < 0 or at < i):
                        i, key = at, k
            if i < 0:
                return None
            if key not in symbol_chars:
                return i, key  # (a word marker)
            m = self.symbols.match(buf, i)  # (the longest symbol marker there)
            if m is not None:
                return i, m.group()
            look = i + 1

    def _next_literal(self, buf: str, pos: int) -> tuple[int, str] | None:
        """The first marker (as plain text) at or after pos: (where, which), the
        longest there; None."""
        # Each search's answer holds until pos passes it (the buffer being the same):
        # a text dense with one kind of marker does not search on for the other kind
        # to its end every time.
        if self.word_buf is not buf:
            self.word_buf = buf
            self.word_next = {}
            self.word_first = self.symbol_next = None
        sym = self.symbol_next
        if sym is None or pos > sym[0] >= 0:
            sym = (-1, "")
            find_start, match = self.symbol_firsts.search, self.symbols.match
            c = find_start(buf, pos)
            while c is not None:
                at = c.start()
                m = match(buf, at)  # (the longest marker there: they are tried longest first)
                if m is not None:
                    sym = (at, m.group())
                    break
                c = find_start(buf, at + 1)
            self.symbol_next = sym
        i, marker = sym if sym[0] >= 0 else (len(buf), "")
        if self.words:
            first = self.word_first
            if first is None or pos > first[0] >= 0:
                # Where each word marker is next: found again only once passed.
                nxt = self.word_next
                first = (-1, "")
                for w in self.words:  # (longest first: the longest wins a tie)
                    at = nxt.get(w, -2)
                    if at != -1 and at < pos:
                        at = nxt[w] = buf.find(w, pos)
                    if at >= 0 and (first[0] < 0 or at < first[0]):
                        first = (at, w)
                self.word_first = first
            if 0 <= first[0] < i:
                i, marker = first
        return (i, marker) if marker else None

    def _think(self, out: list, final: bool) -> bool:
        """Inside <think>: reasoning up to </think>. A call marker inside is only
        read as a call if the block is never closed."""
        buf = self.buf
        close = buf.find(THINK_CLOSE, max(self.think_from, self.think_scan - len(THINK_CLOSE)))
        stop = close if close >= 0 else len(buf)
        call = self.call_re.search(buf, self.pos, stop) if self.call_re is not None else None
        if close >= 0:
            self._reason(out, self.pos, close)
            out.append(Piece("markup", close, close + len(THINK_CLOSE), ""))
            self.pos = close + len(THINK_CLOSE)
            self.mode = self.after_think
            self.after_think = "prose"
            return True
        self.think_scan = len(buf)
        if not final:
            # Show reasoning up to a possible call marker or marker prefix; hold the rest.
            end = call.start() if call is not None else len(buf) - self._held(buf, self.pos)
            self._reason(out, self.pos, end)
            self.pos = max(self.pos, end)
            return False
        # The block never closed: read the rest as prose-that-is-reasoning, calls included.
        self.in_open_think = True
        self.mode = "prose"
        self.after_think = "prose"
        return True

    def _reason(self, out: list, start: int, end: int) -> None:
        if end > start:
            out.append(_piece("reasoning", start, end, self.buf[start:end]))

    # -- regions -------------------------------------------------------------------
    def _begin(self, candidates: list[Format], start: int, marker_len: int, frame: _frame.Frame | None = None) -> None:
        """Start reading a region: by its first candidate's fast frame when given
        (it waits for more text), else by the candidates' drivers, in order."""
        self.candidates = list(candidates)
        self.region_start = start
        self.marker_len = marker_len
        self.first_failure = None
        self.failure_taken = 0
        self.failure_stray = False
        self.failed_frame = None
        self.mentioned = False
        self.fail_scan = start
        self.salvaged = None
        self.frame = frame
        self.drivers = [] if frame is not None else [self._driver(self.candidates[0], start)]

    def _driver(self, fmt: Format, start: int) -> Driver:
        if self.brackets is None:
            self.brackets = _repair.BracketIndex()
        room = max(self.max_prefix + 1, *map(len, fmt.ends)) if fmt.ends else self.max_prefix + 1
        lines = fmt.anchor == "line" and self.tools is not None  # (see Driver.lines)
        return Driver(fmt, start, self.brackets, (self._markers_from, room, self.prefixes, self._find), lines)

    def _markers_from(self, buf: str, start: int, stop: int) -> int:
        """The first place in [start, stop) where a marker of three characters or more
        starts (a call's, <think> or </think>, as plain text, whole in buf), or -1. A
        driver cuts a broken value there (Driver._cut)."""
        # Each kind's first place at or after a start is kept (with the start) while
        # the text is the same: regions ask for places further on, one after another,
        # and a marker that is not in the rest of the text is not looked for again.
        if self.mf_buf is not buf:
            self.mf_buf, self.mf_found, self.mf_first = buf, {}, (-1, -1)
        # (The first of them all, kept the same way: most questions end here.)
        s0, first = self.mf_first
        if 0 <= s0 <= start and (first < 0 or first >= start):
            return first if first < stop else -1
        found = self.mf_found
        first = -1
        for key in self.cut_keys:
            known = found.get(key)
            if known is not None and known[0] <= start and (known[1] < 0 or known[1] >= start):
                i = known[1]
            else:
                i = self._next_marker(buf, start, key)
                found[key] = (start, i)
            if i >= 0 and (first < 0 or i < first):
                first = i
        self.mf_first = (start, first)
        return first if first < stop else -1

    def _next_marker(self, buf: str, start: int, key: str) -> int:
        """The first place at or after start where the word marker `key` starts, or ("")
        a symbol marker; -1."""
        if key:
            return buf.find(key, start)
        search, match = self.cut_firsts.search, self.cut_symbols.match
        m = search(buf, start)
        while m is not None:
            i = m.start()
            if match(buf, i) is not None:
                return i
            m = search(buf, i + 1)
        return -1

    def _region(self, out: list, final: bool) -> bool:
        return self._run_region(out, final, anchored=False)

    def _run_region(self, out: list, final: bool, anchored: bool) -> bool:
        if self.frame is not None:
            got = self.frame.read(self.buf, self.region_start, final, self.tools)
            if type(got) is ToolCall:
                out.append(got)
                self.pos = got.span[1]
                self._end_region()
                return True
            if got is not None and len(self.buf) - self.region_start < _FRAME_WAIT:
                self.frame_wait = got
                return False
            # The general way reads it, from the start of the region.
            self.frame = None
            self.drivers = [self._driver(self.candidates[0], self.region_start)]
        while True:
            drv = self.drivers[-1]
            if anchored:
                drv.quotes = False  # its failures are never shown
            status = drv.run(self.buf, final, self.at_marker)
            if status == WAIT:
                return False
            if status == DONE:
                if anchored and drv.fmt.anchor == "whole":
                    rest = self.buf[drv.end :]
                    if rest.strip():
                        status = drv.status = FAIL
                        drv.reason = "text follows the reply's JSON"
                    elif not final:
                        return False
                    else:
                        drv.end = len(self.buf)
                if status == DONE and not anchored:
                    mention = self._mention(drv, final)
                    if mention is WAIT:
                        return False
                    if mention:
                        # No call, and no error: the other formats' failures at this
                        # marker are not told either (they misread a mention). Unless
                        # one read its frame whole, through its end, and further than
                        # this: its call is broken, not mentioned (`<function=f>Lyon
                        # </function>`: a word for arguments, closed).
                        status = FAIL
                        drv.reason = ""
                        earlier = self.first_failure
                        if earlier is None or self.failed_frame is not None or earlier.end <= drv.end:
                            self.mentioned = True
                            self.first_failure = self.failed_frame = None
                if status == DONE:
                    region = self._decode(drv)
                    if isinstance(region, Region) and not region.items and "closed_tag" in region.repairs:
                        # A marker closed with nothing in it does not hide the calls an
                        # earlier candidate read before its own failure (see _salvage).
                        salvaged = self._salvaged(out, final)
                        if salvaged is not None:
                            return salvaged
                    if isinstance(region, Region):
                        self._prose(out, self.pos, region.start)  # whitespace before an anchored region
                        out.append(region)
                        self.pos = region.end
                        self._end_region()
                        return True
                    self._note_failure(drv, region)
            else:
                self._note_failure(drv, drv.reason)
            if len(self.drivers) < len(self.candidates):
                self.drivers.append(self._driver(self.candidates[len(self.drivers)], self.region_start))
                continue
            # No candidate read it: the text stays prose.
            if anchored:  # (its failures are never shown, but a stray quote's: nothing to settle)
                salvaged = self._salvage(final, True)
                if salvaged:
                    region, tail, _ = salvaged
                    if region is not None:
                        self._prose(out, self.pos, region.start)  # (whitespace before it)
                        out.append(region)
                        self.pos = region.end
                    if tail is not None:
                        self._prose(out, self.pos, tail.end)
                        out.append(tail)
                        self.pos = tail.end
                elif self.failure_stray and self.first_failure is not None:
                    failure = self.first_failure
                    self._prose(out, self.pos, failure.end)
                    out.append(failure)
                    self.pos = failure.end
                self._end_region()
                self.mode = "prose"
                return True
            salvaged = self._salvaged(out, final)
            if salvaged is not None:
                return salvaged
            failure = self._settle_failure(final)
            if failure is WAIT:
                return False
            if failure is not None:
                self._prose(out, failure.start, failure.end)
                out.append(failure)
                self.pos = failure.end
            else:
                end = self.region_start + self.marker_len
                self._prose(out, self.region_start, end)
                self.pos = end
            self._end_region()
            return True

    def _mention(self, drv: Driver, final: bool):
        """Whether a region the grammar read is only a mention of its tag in prose
        (True; False: a call; WAIT: the text after it decides). A region that holds
        a name and nothing more of a call (no arguments, JSON, parameter tags,
        brackets: only the rest of its tags) is a mention when
         - the name stands apart from its tag by a space (`write <tool_call> and
           </tool_call> around…`): a model writes a name flush against its tag;
         - or the model never closed it and prose follows (`use <function=get_weather>
           blocks`, `not call <tool_call> now.`).
        The same unclosed name with the next call right after it, or at the end of
        the reply, is a call whose close tag was left out (or cut off: a call with no
        arguments, `<tool_call>get_time`, is as long as a mention)."""
        bare = _bare_name(drv.tree)
        if bare is None:
            return False
        lo, hi, unclosed = bare
        buf = self.buf
        rest = buf[hi : drv.end]
        for e in drv.fmt.ends:
            rest = rest.replace(e, "")
        if rest.strip(_TAG_REST):
            return False
        if buf[lo - 1 : lo] in (" ", "\t"):
            return True
        if not unclosed and "closed_tag" not in drv.repairs:
            return False
        p, n = drv.end, len(buf)
        while p < n and buf[p].isspace():
            p += 1
        if p >= n:
            return False if final else WAIT
        hit = self.at_marker(buf, p)
        if hit is None:
            return True if final else WAIT
        return not hit

    def _note_failure(self, drv: Driver, reason: str) -> None:
        # A marker the model never closed, with nothing readable after it, is a
        # mention of the tag ("use <tool_call> to…"), not a broken call. (A quiet
        # format's failure is not told, but a call's that a stray quote broke: that
        # was a call, `[get_weather(city="Par"is", unit="C")]`.)
        if (drv.fmt.quiet and not drv.stray) or not reason or "closed_tag" in drv.repairs or self.mentioned:
            return
        # Of the formats that share the marker, the one whose grammar read the most
        # tokens says why (a broken Qwen3-XML block is not told about JSON); the
        # first of them, on a tie.
        if self.first_failure is None or drv.taken > self.failure_taken:
            self.failure_taken = drv.taken
            end = max(drv.end, drv.pos, self.region_start + self.marker_len)
            self.first_failure = Failure(self.region_start, end, f"Couldn't read a tool call: {reason}.")
            self.failure_stray = drv.stray
            # A broken frame counts as a call attempt only if the format's end
            # marker follows (before the next call); _settle_failure decides.
            self.failed_frame = drv if drv.status == FAIL else None
            self.fail_scan = end

    def _settle_failure(self, final: bool):
        """For a broken frame: the failure, extended through the end marker that
        shows the model meant a call; None when it was only a mention; WAIT."""
        failure, drv = self.first_failure, self.failed_frame
        if failure is None or drv is None:
            return failure
        buf = self.buf
        hits = [(self._find(e, self.fail_scan), e) for e in drv.fmt.ends]
        hits = [(i, e) for i, e in hits if i >= 0]
        # (From where the last search stopped: a marker before that was found then.)
        nxt = self.call_re.search(buf, max(failure.end, self.fail_scan)) if self.call_re is not None else None
        if hits:
            i, e = min(hits)
            if nxt is None or i < nxt.start():
                failure.end = i + len(e)
                return failure
        if nxt is not None or final:
            return None
        # Keep searching from here next time (an end marker may straddle deltas,
        # and may be longer than any start marker).
        longest = max((len(e) for e in drv.fmt.ends), default=1) - 1
        self.fail_scan = max(self.fail_scan, len(buf) - max(self.max_prefix, longest))
        return WAIT

    def _salvaged(self, out: list, final: bool) -> bool | None:
        """Put out what _salvage keeps, as _run_region does (True; False: wait for the
        tail's failure to settle); None: nothing is kept."""
        if self.salvaged is None:
            self.salvaged = self._salvage(final)
        if not self.salvaged:
            return None
        region, tail, settle = self.salvaged
        if region is not None:  # (None: no call before a broken one; see _salvage)
            self._prose(out, self.pos, region.start)
            if settle:
                # (A tail no end marker closes is still a broken call: the section held
                # calls. It runs to where the grammar stopped.)
                tail = self._settle_failure(final) or self.first_failure
                if tail is WAIT:
                    return False
            out.append(region)
            self.pos = region.end
        if tail is not None:  # (its text stays prose, as any failure's)
            self._prose(out, self.pos, tail.end)
            out.append(tail)
            self.pos = tail.end
        self._end_region()
        return True

    def _salvage(self, final: bool, quiet: bool = False):
        """No candidate read the region, but one (the first that can, in order) may
        still be closed where its calls so far end (see _driver.salvage_points): the calls
        finished before a broken or cut-off one are kept. (Region, tail, settle):
        the region read up to there; the failure of what follows it, or None; settle:
        that failure is decided as any broken frame's (_settle_failure). False: none.
        A quiet format's (or, `quiet`, an anchored region's) tail gives no failure:
        it stays prose."""
        buf = self.buf
        for drv in self.drivers:  # (the candidates in order: the first that keeps calls)
            if drv.fmt.anchor == "whole":
                continue  # (its region is the whole reply or nothing)
            got = self._salvage_one(drv, final)
            if got:
                break
        else:
            return False
        region, drafts, end, opened, truncated = got
        dropped = buf[end:].strip()
        if opened and drv.stray:
            # What ran on to the end is a value with a stray quote (`city="Par"is")]`,
            # _repair.quoted_end): the call is broken, not cut short, and is no call
            # without that argument. It fails, named, and its text stays prose; the
            # calls before it are kept (with none, nor is the region: None).
            last = drafts[-1]
            why = drv.reason if drv.status == FAIL else self._decode(drv)
            if not why or not isinstance(why, str):
                why = "a value holds a stray quote"
            at = region.items.index(last)
            start = last.span[0] if at else region.start  # (the region's own markers too)
            del region.items[at:]
            region.end = start
            return (region if at else None), Failure(start, len(buf), f"Couldn't read a tool call: {why}."), False
        if opened:
            # The reply ended inside its last call: it takes the rest of the reply, and
            # what was begun after the point (a parameter's name) is dropped; the
            # beginning of a close marker is only that call's closed_tag.
            last = drafts[-1]
            last.span = (last.span[0], len(buf))
            if dropped and not any(t.literal and t.literal.startswith(dropped) for t in drv.c.terminals.values()):
                last.repairs.append("dropped_partial_argument")
        if opened or not dropped or quiet or drv.fmt.quiet:
            return region, None, False
        if drv.prose_at >= end and not buf[end : drv.prose_at].strip():
            # Prose right after the last call, where the section's (or the call's)
            # close was left out: the region ends there, and the prose is prose, not a
            # broken call (nothing to report, and nothing to wait for).
            return region, None, False
        why = drv.reason if drv.status == FAIL else self._decode(drv)
        if not why or not isinstance(why, str):
            why = "the reply ended inside the call"
        message = f"Couldn't read a tool call: {why}."
        if truncated:
            return region, Failure(end, len(buf), message), False
        fail_end = max(drv.end, drv.pos, end)
        self.first_failure = Failure(end, fail_end, message)
        self.failed_frame = drv
        self.fail_scan = fail_end
        return region, None, True

    def _salvage_one(self, drv: Driver, final: bool):
        """(region, its drafts, end, opened, truncated) for one candidate's driver
        (see _salvage), or None."""
        buf = self.buf
        points, truncated = salvage_points(drv, buf, final, self.at_marker)
        for end, opened in points:
            # Read again up to there as a reply that ends there (the missing markers
            # are supplied): the table cannot be rolled back, its tree callbacks share lists.
            fresh = Driver(drv.fmt, self.region_start, None, drv.cutter, drv.lines)
            fresh.quotes = False
            if fresh.run(buf[:end], True, self.at_marker) != DONE:
                continue
            if not opened and self._mention(fresh, True) is True:
                continue  # (a name alone, prose after it, is a mention here too: `the <marker> tag to…`)
            if opened:
                fresh.end = len(buf)
            region = self._decode(fresh)
            drafts = [i for i in region.items if isinstance(i, Draft)] if isinstance(region, Region) else None
            if drafts:
                return region, drafts, end, opened, truncated
        return None

    def _find(self, text: str, start: int, buf: str | None = None) -> int:
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

    def _end_region(self) -> None:
        self.frame = None
        self.drivers = []
        self.candidates = []
        self.mode = "prose"

    def _decode(self, drv: Driver) -> Region | str:
        region = (drv.start, drv.end)
        try:
            builder = Builder(drv.fmt, self.tools, region)
            if drv.closed_at >= 0:
                builder.cut_at = drv.last_end
            items = builder.build(drv.tree)
        except Unreadable as exc:
            return str(exc)
        except RecursionError:
            return "nested too deeply"
        # A region the grammar read with no call in it (an empty list `[]`) says
        # "no calls": it is consumed, silently. Not so one that only the missing
        # markers made whole (a section's start marker and no more): it is no region.
        if not items and drv.repairs:
            return ""
        if drv.fmt.offered_only and self.tools is not None:
            # Marker-less shapes count as calls only when they name an offered tool; a
            # list that names one is the model's calls, and its other names are errors
            # (Unknown tool "x"), not prose the model never hears about. (A draft with
            # no name and an error is a call the end of the reply cut off.)
            names = [item.name for item in items if isinstance(item, Draft) and not (item.error and not item.name)]
            if names and not any(name in self.tools for name in names):
                return ""
        return Region(drv.start, drv.end, drv.fmt.name, items, list(drv.repairs))


# What may stand between a bare call's name and its region's end, besides the
# format's end markers: the rest of the open tag (`">`), whitespace.
_TAG_REST = " \t\r\n\"'>"


def _bare_name(tree: Any) -> tuple[int, int, bool] | None:
    """Where the name of a region's one call is, and whether the grammar took a close
    tag as missing (an `unclosed` rule), when the region has one call, one name and
    no arguments (a parse tree's rules); None otherwise."""
    if tree is None or not hasattr(tree, "iter_subtrees"):
        return None
    calls = names = 0
    found = None
    unclosed = False
    for node in tree.iter_subtrees():
        rule = _rule(node)
        if rule in ("call", "agent_call", "memory_call"):
            calls += 1
        elif rule == "name":
            names += 1
            found = node
        elif rule == "unclosed":
            unclosed = True
        elif rule in _NOT_BARE:
            return None
    ext = _extent(found) if calls == 1 and names == 1 else None
    return None if ext is None else (*ext, unclosed)


# Rules that carry a call's arguments or more calls: a region holding one is not a bare name.
_NOT_BARE = frozenset({
    "args", "param", "typed_param", "element", "loose_args", "kwarg", "posarg", "code",
    "json_calls", "keyed_calls", "json_reply", "id", "instructions", "not_call",
})


# A stream retries the fast frame on each delta, from the region's start, while the
# region is shorter than this; a longer one goes to the driver, which reads on from
# where it stopped (so a long region costs linear time, not quadratic).
_FRAME_WAIT = 512


# The scanner's modes, by name (Scanner.mode).
_MODES = {"start": Scanner._start, "prose": Scanner._in_prose, "think": Scanner._think, "region": Scanner._region}


# See Scanner._settle: a token longer than this that waits is matched again after its
# text has grown by a quarter.
_REGROW = 64


class _GrowWait:
    """The scanner's wait on a long growing token: deltas are put aside until the text
    reaches `until` characters."""

    __slots__ = ("until",)

    def __init__(self, until: int) -> None:
        self.until = until

    def absorbs(self, text: str, n: int) -> bool:
        return n + len(text) < self.until


_CHAR_WAITS: dict[tuple, tuple] = {}


class _CharWait:
    """The scanner's own wait, where only a marker (or end marker) can change
    anything: a delta matters if it holds a character one starts with, or may
    complete one begun in the last `width` characters."""

    __slots__ = ("search", "last", "width")

    def __init__(self, search: Any, last: int, width: int) -> None:
        self.search = search
        self.last = last  # such a character among the last `width`, or -1
        self.width = width

    @classmethod
    def of(cls, buf: str, firsts: frozenset, more: tuple, width: int) -> _CharWait:
        # (Made after every delta of a broken frame: what the markers decide is kept.)
        key = (firsts, more, width)
        known = _CHAR_WAITS.get(key)
        if known is None:
            chars = "".join(sorted(firsts | {m[0] for m in more if m}))
            known = (chars, re.compile("[" + re.escape(chars) + "]").search, max([width, *map(len, more)]))
            if len(_CHAR_WAITS) < 1000:
                _CHAR_WAITS[key] = known
        chars, search, width = known
        # The last such character among the last `width`: one search of that tail.
        tail = buf[max(0, len(buf) - width) :]
        m = search(tail[::-1])
        last = len(buf) - 1 - m.start() if m is not None else -1
        return cls(search, last, width)

    def absorbs(self, text: str, n: int) -> bool:
        return self.search(text) is None and (self.last < 0 or n - self.last >= self.width)


def _trie(words: list[str]) -> str:
    """A pattern matching the longest of words at a place, spelled as a trie: each
    character is tried once, where an alternation of dozens of markers that share
    their first characters tries them all (the scanner matches one at every marker)."""
    root: dict = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def spell(node: dict) -> str:
        branches = [re.escape(ch) + spell(sub) for ch, sub in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        # A word ending here is taken only when no longer one goes on from here.
        return f"(?:{body})?" if "" in node else body

    return spell(root)


_QUICK: dict[tuple, tuple] = {}


_WORD_START = 4  # (the characters quick looks for of a marker that starts with a letter)


def _quick_searches(by_marker: dict) -> tuple:
    """Searches for take_plain, built once per set of markers (with <think> tags):

      quick       where a marker may start: its first four characters when it starts
                  with a letter or digit ("comm" for "commentary to="; "co" would
                  stop at every "could"), else its first (`<`); a marker, or a start
                  of one at the end longer than three characters, holds a match;
      risky_ends  the starts of a marker that quick cannot see, at the end: the
                  proper prefixes of the starts it spells with more than one
                  character ("c", "co", "com");
      firsts      any first character of a marker;
      literals    any marker, as plain text (the line-start condition of some is
                  left out: finding one only sends the text the slow way);
      first_set   the first characters, as a set;
      end_pairs   the last two characters of every start of a marker (proper prefix).

    The stdlib engine is several times faster than `regex` at these."""
    markers = tuple(sorted({*by_marker, THINK_OPEN, THINK_CLOSE}, key=lambda m: (-len(m), m)))
    found = _QUICK.get(markers)
    if found is None:
        markers = tuple(m for m in markers if m)
        starts = {m[:_WORD_START] if m[0].isalnum() else m[0] for m in markers}
        singles = "".join(sorted(x for x in starts if len(x) == 1))
        words = sorted(x for x in starts if len(x) > 1)
        quick = "|".join(([f"[{re.escape(singles)}]"] if singles else []) + [re.escape(x) for x in words])
        found = _QUICK[markers] = (
            re.compile(quick or "(?!)"),
            frozenset(x[:i] for x in words for i in range(1, len(x))),
            re.compile("[" + re.escape("".join(sorted({m[0] for m in markers}))) + "]"),
            re.compile("|".join(re.escape(m) for m in markers)),
            frozenset(m[0] for m in markers),
            frozenset(m[i - 2 : i] for m in markers for i in range(2, len(m))),
        )
    return found


def _rebase(out: list, base: int) -> None:
    """Positions in the scanner's buffer -> positions in the reply."""
    for k, item in enumerate(out):
        if type(item) is ToolCall:  # (the fast path's: frozen)
            start, end = item.span
            out[k] = replace(item, span=(start + base, end + base))
            continue
        if type(item) is Piece:
            out[k] = _piece(item.kind, item.start + base, item.end + base, item.value)
            continue
        item.start += base
        item.end += base
        if type(item) is Region:
            for part in item.items:
                if type(part) is Draft or (isinstance(part, Prose) and part.span is not None):
                    part.span = (part.span[0] + base, part.span[1] + base)
