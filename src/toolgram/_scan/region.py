"""One region's reading: its candidate formats, their drivers in order, the fast
frame until given up, and what failed (Scanner._begin makes a RegionReader per
region; Scanner._end_region drops it).

The policies for what the candidates' results mean are beside it: mention.py
(a bare tag in prose, or a broken call: the failure told) and salvage.py (the
calls read before a broken one). The Scanner's `_decode` and `_note_failure` stay
its methods (explain records through them); the reader calls them through the
scanner.
"""

from __future__ import annotations

import functools
from typing import Any

import regex

from . import fastpath as _frame
from . import gemframe as _gemframe
from . import pyframe as _pyframe
from . import twin as _twin
from . import quotation as _quotation
from .items import OUTER_CUT as _OUTER_CUT, Failure, Region, listed_closed as _listed_closed
from .._recover import repair as _repair
from .mention import _ENDED, _cut_at_marker, cut_inside as _cut_inside, marker_pending as _marker_pending, cut_may_come as _cut_may_come, cut_opener as _cut_opener, failed_prose as _failed_prose, mention as _mention, payload_terminals as _payload_terminals, settle_failure as _settle_failure
from .salvage import list_closed as _list_closed, listed as _listed, salvage as _salvage, salvaged as _salvaged
from .._build.builder import Builder, Draft, Unreadable
from .._lalr.driver import DONE, FAIL, WAIT, Driver, turn_end_at, turn_tokens
from .._lalr.tokens import _SNIPPET, PAUSE
from .._lalr.close import CUT_ROOM as _CUT_ROOM
from .._lalr.extent import scalar_end
from .._lalr.tree import Tree
from .._lalr.tokens import Tok
from .opening import fails_at_once as _fails_at_once
from .._lalr.earley import EarleyDriver
from .._lalr.table import ends_something, skip_ignored
from .._result.model import ToolCall
from .._grammar.registry import Format

# A stream retries the fast frame on each delta, from the region's start, while the
# region is shorter than this; a longer one goes to the driver, which reads on from
# where it stopped (so a long region costs linear time, not quadratic).
_FRAME_WAIT = 512

# The head of a Python call a draft's span begins with (after a `,` or `;` and blanks, or
# the region's own `[`): where the name of a call that could not be built is written.
_BROKEN_HEAD = regex.compile(r"[\s,;]*+([A-Za-z_][\w.\-]*+)[ \t]*+\(")

# (How far back a stream's look at a delta reads again: the longest name or marker that
# may have begun before it.)
_LOOK_BACK = 512

#: How far after a region the offered names are counted (_offered_broken): a stream
#: holds at most this much text after it until the text (or the reply's end) tells.
BROKEN_HORIZON = 2048


def _offered_broken(sc: Any, drv: Driver, items: list, buf: str, tools: Any, end: int) -> tuple | None:
    """A marker-less region of Python calls (a list first on its line, bare calls that are
    the whole reply, or a code fence's calls, the fence the region) whose whole calls name
    no offered tool, and which holds a call of an offered tool that could not be built
    (its draft an error, its name gone: `[g(b=1), f(a=1, 3)]`, `g(b=2); f(a="x"y")` with
    f offered): (the heads of those calls, where the region ends, the broken call's
    reason, whether that reason is a value it cannot read: Draft.value_broke). None: not
    so. Asked of the region's own drivers only, not of the salvage's shorter readings (see
    decode: the rule is the region's, decided once)."""
    c = getattr(drv, "c", None)
    ends = drv.fmt.ends
    fence = bool(ends) and all(e.startswith("```") for e in ends)
    if (ends and not fence) or c is None or "PYVALUE" not in c.terminals:
        return None
    heads, first = set(), None
    drafts = [item for item in items if isinstance(item, Draft)]
    if drafts and "closed_tag" in drv.repairs and not drv.stray:
        # (The end of the reply closed the region: its last call is the one it cut, whose
        # broken reading (`get_weather(day`, a word for a positional argument) the salvage
        # mends to the call so far, as at main; it is no broken call of the model's.)
        drafts.pop()
    for item in drafts:
        if item.error and not item.name and item.span is not None:
            # (Where the call itself begins: the first of several calls a stream announces by
            # name has its span moved back to the region's opener, a fence's ```` ```python ````
            # (Draft.opened); its head is looked for where the model wrote it.)
            at = item.span[0] if item.opened is None else item.opened
            if at == drv.start and buf.startswith("[", at):
                at += 1  # (the list's own `[`; a `[` of a later item opens a list in the list)
            m = _BROKEN_HEAD.match(buf, at, item.span[1])
            if m is not None and m.group(1) in tools:
                heads.add(m.start(1))
                first = first or item
    if not heads or not fence and _fence_open_at(sc, drv.start):
        return None  # (a list inside a fenced block: the fence's, where its format reads it)
    return frozenset(heads), end, first.error, first.value_broke


def _fence_open_at(sc: Any, at: int) -> bool:
    """Whether a fenced block of the prose since the last call is open at `at` (local), as
    quotation.Fences reads it: the scanner's own reading copied, and read on to `at` (the
    copy kept while the regions it is asked at come later, over text the buffer holds; a
    stream's _trim reads the scanner's up to where it drops text)."""
    own, mine = sc.fences, sc.rule_fences
    if mine is None or mine.start != sc.prose_from or mine.to < own.to or mine.to > sc.base + at:
        mine = sc.rule_fences = _quotation.Fences()
        mine.start, mine.to, mine.mid, mine.open = own.start, own.to, own.mid, own.open
    mine.read(sc.buf, sc.base, sc.prose_from, at)
    return mine.open is not None


def _needs_offered_name(tree: Any) -> bool:
    """Whether a marker-less call's first parameter was read by a terminal named
    *_OFFERED: a reading that holds only where the call names an offered tool
    (glm45_bare's key set apart from its `<arg_key>` and cut short, `read_file` then
    `<arg_key> path </arg_key>` where the reply ended: with `read_file` offered it is
    that call, cut; without tools the same line may be prose that mentions the tag,
    `Note` then `<arg_key> is a GLM tag I mention.`, issue 19). Only the call's first
    parts are looked at: the name line and its first key are all that tell it."""
    call = tree.children[0] if isinstance(tree, Tree) and tree.children else None
    if not isinstance(call, Tree):
        return False
    for part in call.children[:3]:
        if isinstance(part, Tree) and part.children and isinstance(part.children[0], Tree):
            key = part.children[0]
            tok = key.children[0] if key.children else None
            if type(tok) is Tok and tok.type.endswith("_OFFERED"):
                return True
    return False


def offered_elsewhere(rule: tuple, buf: str, start: int, tools: Any, final: bool, markers: Any) -> bool | None:
    """Whether the model wrote more than the broken list (rule: _offered_broken's) in the
    region and the BROKEN_HORIZON characters after it (from `start`: what an earlier look
    read needs no second): an offered tool's name as a word, other than as the head of a
    call the region could not build, or, after the region, a marker of any format (the
    scanner's `markers`, as plain text). True: so (the model called that tool there, or
    will, `[get_weather("Paris"), …,\n[get_weather(city="Paris")]`, `\n[TOOL_CALLS]…`, or
    names it in prose: the broken list stays prose, as before, and a call after it is read
    as before, when its text comes); False: not so, the list is the model's calls; None: a
    stream's text cannot tell yet (short of the horizon, not final)."""
    heads, end = rule[0], rule[1]
    stop = min(len(buf), end + BROKEN_HORIZON)
    short = not final and stop < end + BROKEN_HORIZON
    if markers is not None and markers.search(buf, max(start, end), stop) is not None:
        return True  # (one the next delta could make a longer one is still a marker)
    for m in _names_as_words(tools.names).finditer(buf, start, stop):
        if m.start() in heads:
            continue
        if short and m.end() >= stop:
            return None  # (the word may go on in the next delta: `f` of `foo`)
        return True
    return None if short else False


def first_named(heads: Any, buf: str, start: int, tools: Any) -> int:
    """Where the first offered name written as a word after `start` ends, not the head of
    a call the region could not build (heads: _offered_broken's), as offered_elsewhere
    finds it; -1: none."""
    for m in _names_as_words(tools.names).finditer(buf, start):
        if m.start() not in heads:
            return m.end()
    return -1


@functools.lru_cache(maxsize=32)
def _names_as_words(names: tuple[str, ...]) -> Any:
    """The offered names as whole words (offered_elsewhere): compiled once per set of tools,
    not at each delta a stream waits on a broken list."""
    alternatives = "|".join(regex.escape(n) for n in sorted(names, key=len, reverse=True))
    return regex.compile(r"(?<![\w\-])(?:" + alternatives + r")(?![\w\-])")


_FAILED = "Couldn't read a tool call: "

# At most this much of a region cut by the end of the reply is quoted in its error.
_QUOTED = 80


def _whole_before_list_close(buf: str, drv: Any) -> bool:
    """Whether the last value drv read, cut at a call marker (Driver.cut_at), is whole
    before a `]` that blanks at most separate from that marker (`b='x']<tool_call>`):
    the list closed there, the call's `)` left out, and the cut took nothing of the value
    (`b='x"]<tool_call>'s`: Python's string runs on over that `]`: it did). More closers
    may stand between that `]` and the marker (`a="x"]] <function=`: the call's `)` written
    as a `]`, then the list's, extent.twin_close; `a="x"]) ]`): the value closed before
    them all, so the marker cut nothing of it (QA26 R1: an error "runs on over
    '<function='" and the call lost)."""
    pos, at = drv.last_start, drv.cut_at
    if drv.last_term != "PYVALUE" or not 0 <= pos < at:
        return False
    close = pos + scalar_end(buf[pos:at], 0, "]")
    return close < at and not buf[close + 1 : at].replace("]", "").replace(")", "").strip()


def _cut_unread(sc: Any, drv: Any, region: Region) -> str:
    """Why the call drv read, its value cut at a call marker that begins no call
    (RegionReader.run), is no call: the value is named (the last argument read, the one
    the cut ended), with the marker it ran on over."""
    marker = sc.call_re.match(sc.buf, drv.cut_at).group()  # (one there: _cut_at_marker)
    last = region.items[-1]
    keys = list(last.arguments) if isinstance(last, Draft) and isinstance(last.arguments, dict) else []
    what = f"the value of {keys[-1]!r}" if keys else "a value"
    return f"cannot read {what} (it runs on over {marker!r}, which begins no call)"


def _closer(drv: Any, buf: str) -> bool | None:
    """Whether the last token the driver read from the text ends something (a close
    tag, a closing bracket, an end marker: table.ends_something); None when which
    token it was is not known (an Earley parse)."""
    term = getattr(drv, "last_term", None)
    if term is None:
        return None
    terminal = drv.c.terminals.get(term)
    if terminal is not None and terminal.literal is None and term in (_payload_terminals(drv.fmt) or ()):
        # (A value's text that is the end marker, BFCL's `value="</functions>` where the
        # reply ended, ends nothing: the value was cut, as `value="abc</functions>` was.)
        return False
    return ends_something(terminal, buf[drv.last_start : drv.last_end], drv.fmt.ends)


_LIST_BOUNDARY = regex.compile(r"\][ \t\r\n]*\[")


def _whole_lists(items: list, buf: str) -> int:
    """Lists in a row read as one region (a Python call list's with no end marker: without
    tools, or on one line), its close supplied where the end cut the last list: how many
    of its first calls, those up to the last `]` that ends a list before the next `[`,
    are whole and take none of the region's closed_tag (Region.whole), as where each list
    is a region of its own (issue 19: `[g()]` then a broken list on the next line gave g
    closed_tag). The region keeps the repair: what is read after it is read as after a
    region whose close the end supplied (`[g()]\n[f(a=1), g(b=)]` tells `, g(b=)]`)."""
    drafts = [i for i in items if type(i) is Draft and i.span is not None]
    whole = 0
    for k in range(len(drafts) - 1):
        if _LIST_BOUNDARY.search(buf, drafts[k].span[1], drafts[k + 1].span[0]) is not None:
            whole = k + 1
    return whole


def cut_failure(r: RegionReader, failure: Failure | None, whole: bool = False) -> Failure:
    """The error for a region that is a call's opener the end of the reply cut (see
    mention.cut_opener), or a call it cut before the grammar could close it (`whole`:
    mention.cut_inside): the failure told, or one that says so, quoting the opener
    (or all the region, its start when long); its text is no prose."""
    buf = r.sc.buf
    if failure is None:
        marker = buf[r.region_start : len(buf) if whole else r.region_start + r.marker_len].strip()
        if len(marker) > _QUOTED:
            marker = marker[: _QUOTED - 1] + "…"
        failure = Failure(r.region_start, len(buf), f"Couldn't read a tool call: the reply ended right after {marker!r}.")
    failure.start, failure.end, failure.prose = r.region_start, len(buf), False
    return failure


def _before_turn_end(sc: Any, drv: Driver) -> str:
    """The whole reply as drv's format reads it: without an end-of-turn token of that
    format that ends it (blanks after it at most), which is no text of the call it
    ends (`<function=f>{"a": 1}<|eot_id|>`: a call its close left out, as the same
    reply without the token is; the token is markup). A stream's driver waits at such a
    token (Driver._run), so that it reads what this reads. The text without it is made
    once for all the regions of the reply (sc.turn_cut): the drivers' BracketIndex and
    other memos keyed on the text's identity start over on a new one (a reply of 450
    calls whose braces never close, ending in `<|eot_id|>`, scanned each call's
    brackets anew: 275 ms at 32 KB)."""
    buf = sc.buf
    tokens = turn_tokens(drv) if hasattr(drv, "c") else ()
    if not tokens:
        return buf
    pos = drv.pos
    at = next((a for a in _turn_hits(sc, tokens) if a >= pos), -1)
    if at < 0:
        return buf
    kept = sc.turn_cut
    if kept is not None and kept[0] is buf and kept[1] == at:
        return kept[2]
    cut = buf[:at]
    sc.turn_cut = (buf, at, cut)
    return cut


def _turn_hits(sc: Any, tokens: tuple) -> tuple:
    """Where those of `tokens` (end-of-turn tokens) that end the scanner's text (blanks
    after at most) begin, in their order: turn_end_at(buf, tokens, pos) is the first of
    them at pos or after. Worked out once per text and set of tokens (sc.turn_hits), not
    by each driver that reads the text whole (_before_turn_end) nor each candidate asked
    about (RegionReader._drop_failing)."""
    buf = sc.buf
    ends = sc.turn_hits
    if ends is None or ends[0] is not buf:
        ends = sc.turn_hits = (buf, {})
    hits = ends[1].get(tokens)
    if hits is None:
        hits = ends[1][tokens] = tuple(a for a in (turn_end_at(buf, (t,), 0) for t in tokens) if a >= 0)
    return hits


def sc_quiet(r: Any) -> bool:
    """Whether the region's drivers may be left out where they tell nothing new: a
    marker's region, nobody watching (explain), the fast path on (_drop_failing)."""
    return r.marker_len > 0 and r.sc.observer is None and _frame.enabled


def _twins_of(sc: Any, marker: str, fmt: Format) -> dict:
    """{a candidate before fmt at `marker`: fmt's texts that may make their readings
    differ} for those fmt is a twin of (twin.py), worked out once per scanner (sc.twins),
    not at each region that asks."""
    twins = sc.twins
    if twins is None:
        twins = sc.twins = {}
    got = twins.get((marker, fmt))
    if got is None:
        got = twins[(marker, fmt)] = {}
        for a in sc.by_marker.get(marker, ()):
            if a is fmt:
                break
            extra = _twin.twin(a, fmt, marker)
            if extra is not None:
                got[a] = extra
    return got


def _last_at(sc: Any, text: str) -> int:
    """Where `text` last begins in the scanner's text (-1: nowhere), worked out once per
    text (sc.last_hits), not at each region that asks whether it is written after it."""
    buf = sc.buf
    hits = sc.last_hits
    if hits is None or hits[0] is not buf:
        hits = sc.last_hits = (buf, {})
    at = hits[1].get(text)
    if at is None:
        at = hits[1][text] = buf.rfind(text)
    return at


def _lists_on(r: Any, region: Region) -> bool:
    """Whether `region`, kept of an anchored region whose drivers broke after it (salvage:
    no failure told), is whole lists of Python calls (a format that reads them, as the
    lines after a broken one are opened for: Scanner.relisted) whose line ends at the last
    list's `]`: the run broke on a later line."""
    buf = r.sc.buf
    end = region.end
    if end < 1 or buf[end - 1] != "]" or _LINE_ENDS.match(buf, end) is None:
        return False
    return any(f.name == region.fmt and f.stream_python and f.anchor != "whole" for f in r.given)


_LINE_ENDS = regex.compile(r"[ \t]*\r?\n")


def relist_from(r: Any, on: bool) -> None:
    """Scanner.relist set (`on`) where the anchored region r began told a list of Python
    calls broken, the prose going on from sc.pos: relist_open, how many of the list's
    brackets the text read so far (from the region's start) left open (list_walk)."""
    sc = r.sc
    sc.relist, sc.relist_tail = on, "]"
    if on:
        sc.relist_open, sc.relist_quote = list_walk(sc.buf, r.region_start, sc.pos, 0, "", True)


# (list_walk: what it looks for next, in a string, inside the list, after it.)
_IN_STRING = regex.compile(r"[\\\"']")
_IN_LIST = regex.compile(r"[()\[\]{}\"']")
_AFTER = regex.compile(r"\S")


def list_walk(buf: str, i: int, end: int, depth: int, quote: str, lists: bool = False) -> tuple:
    """Where a list of Python calls that a marker cut stands after buf[i:end] (depth, quote):
    how many of its brackets are open (0: it closed, -1: text other than blanks followed its
    close, the line going on after it), and the quote of a string open in it ("": none;
    the quote and a backslash: the next text's first character is escaped).
    Brackets in strings count for nothing; `lists`: another list may begin after one closes
    (`[f(a=1)] [g(b=<tool_call>` the text a region read up to the cut; `)] [g()]` after
    the cut), where other text ends the walk (-1)."""
    while i < end and depth >= 0:
        if quote:
            if len(quote) > 1:  # (a backslash that ended the text before: this character is escaped)
                quote = quote[0]
                i += 1
                continue
            m = _IN_STRING.search(buf, i, end)
            if m is None:
                break
            i = m.end()
            ch = m.group()
            if ch == "\\":
                i += 1
                if i > end:
                    quote += ch  # (the escaped character is the next text's: a stream's delta may end here)
            elif ch == quote:
                quote = ""
        elif depth:
            m = _IN_LIST.search(buf, i, end)
            if m is None:
                break
            i = m.end()
            ch = m.group()
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            else:
                quote = ch
        else:
            m = _AFTER.search(buf, i, end)
            if m is None:
                break
            i = m.end()
            depth = 1 if lists and m.group() == "[" else -1
    return depth, quote

# (region._read: how many lists at most the driver reads on its own after lists pyframe
# handed over, before pyframe looks again.)
_PY_BACK = 64


class RegionReader:
    """The state of the region being read, from its start marker on."""

    def __init__(self, sc: Any, candidates: list[Format], start: int, marker_len: int, frame: Any = None) -> None:
        """Start reading a region: by its first candidate's fast frame when given
        (it waits for more text), else by the candidates' drivers, in order."""
        self.sc = sc  # the Scanner: its buffer, tools, marker searches
        self.candidates = list(candidates)  # (those not yet tried, some dropped: _drop_failing)
        self.given = candidates  # (all of them: cut_opener's loud formats)
        self.region_start = start
        self.marker_len = marker_len
        self.first_failure: Failure | None = None
        self.failure_taken = 0  # how many tokens the driver of first_failure read
        self.failure_stray = False  # first_failure is a call a stray quote broke (see note_failure)
        self.failure_marker = -1  # first_failure broke at the call marker that begins here (note_failure)
        self.failure_python = False  # first_failure's format reads lists of Python calls (stream_python)
        self.failed_frame: Driver | None = None
        # (first_failure, as note_failure made it, and the tokens its driver read of it,
        # mention.FailedTokens: its markup, for failed_prose; None: none noted.)
        self.failure_tokens: tuple | None = None
        self.mentioned = False  # a format read the region as a mention of its tag (mention)
        self.mention_end = -1  # (where that format's reading of the mention ended)
        self.fail_scan = start
        # (fail_scan when settle_failure last waited, and where a call marker may still
        # begin: before it, none can, whatever comes next.)
        self.call_hint: tuple[int, int] | None = None
        # ((the failed driver, the words' start and end), the driver reading the region
        # with them as blanks, [the text's length when it last read, when it last answered
        # WAIT]): mention._held_name's, resumed at each delta of a stream.
        self.held_read: tuple | None = None
        self.salvaged: Any = None  # salvage's answer for the region (False: none), once asked
        # The replay of a failed region whose reading the stream's text cannot tell yet
        # (salvage_points: WAIT): the scanner waits on it (Scanner._settle), not re-asking
        # salvage, a replay of the region, at every delta.
        self.salvage_wait: Driver | None = None
        self.spaced: Any = None  # what salvage.spaced_call looks at, until it tells
        # (A candidate's driver whose region, every call broken, fails with a call read
        # whole before the one the end of the reply cut (Unreadable.held), and why.)
        self.held: tuple | None = None
        self.broke = False  # (the last build's Unreadable.value: see decode)
        self.failed_memo: list = [None, None]  # (the builds' broken plain calls: Builder.failed_memo)
        # (A driver whose region _offered_broken made the model's calls, and that rule;
        # the driver for which it was found not to hold (offered_elsewhere); whether run
        # waits on it, reading no more: see run.)
        self.broken_rule: tuple | None = None
        self.rule_off: Driver | None = None
        self.rule_looks: list = []  # (see elsewhere)
        self.rule_wait = False
        self.rule_seen = 0
        # (Whether the text run reads is the whole reply, while run decodes a region of its
        # own (None elsewhere: a salvage's decode); a stray quote's rule that text after the
        # region decides and a stream cannot tell yet: decode's, for run to wait on.)
        self.rule_final: bool | None = None
        self.rule_pending: tuple | None = None
        # (A candidate's driver whose last value ran on over a list's `]` (list_closed),
        # and why the region read up to that `]` is no call: salvage's _listed_why.)
        self.listed_why: tuple | None = None
        self.cut_look: Any = None  # where mention.cut_may_come's look stopped (False: no cut opener)
        self.cut_wait = False  # the drivers are done, and only the end or more text decides (cut_may_come)
        # A call its close was left out of, whose value was cut at a call marker, that
        # cannot be built: its failure, told where no other is and that marker begins
        # no call (note_failure, begins_call); the reading of that marker's region so
        # far (a RegionReader), or whether it read a call there (True, False).
        self.cut_broken: Failure | None = None
        self.ahead: Any = None
        # The place begins_call last waited on, in a stream (run asks it alone first; None).
        self.ahead_wait: int | None = None
        # The region at the format's own call opener right after this block's opener, read
        # where the block broke with nothing to tell (see _lead): its RegionReader, or
        # False once told it is none; lead_wait: run asks it alone first (a stream).
        self.lead: Any = None
        self.lead_wait = False
        self.settle_wait = False  # (the same for settle_failure's wait, the drivers all failed)
        self.frame: _frame.Frame | None = frame  # the first candidate's fast frame, until given up
        self.frame_wait: Any = None  # what Frame.read waits with (a _LoopWait: see Scanner._settle)
        self.drivers: list[Driver] = [] if frame is not None else [self.driver(self.candidates[0], start)]

    def driver(self, fmt: Format, start: int) -> Driver:
        sc = self.sc
        kept = sc.read_ahead
        if kept is not None and kept[0] is sc.buf and kept[1] is not self:
            ahead = kept[1]
            if ahead.region_start == start and ahead.marker_len == self.marker_len and ahead.given is self.given:
                # (The region begins_call read ahead in a whole text, at the marker where
                # the region before it was cut: its drivers that are done read this one
                # so, a driver of the same format from the same place over the same text.
                # Each region was read twice. Not while the storm memo notes what a region's
                # drivers read, nor with its hints other than when the driver was made:
                # Driver.listed_log, own_hint.)
                for d in ahead.drivers:
                    if d.fmt is fmt and d.status != WAIT and sc.listed_log is None and d.listed_log is None and d.listed_hint is sc.listed_hint and d.own_hint is sc.own_hint:
                        ahead.drivers = [x for x in ahead.drivers if x is not d]
                        return d
        if fmt.parser == "earley":  # (one parse when its markers end the region: see _lalr/earley.py)
            width = max(sc.max_prefix + 1, *map(len, fmt.ends))
            return EarleyDriver(fmt, start, self.marker_len, sc.call_re, sc.first_set, width)
        if sc.brackets is None:
            sc.brackets = _repair.BracketIndex()
        room = max(sc.max_prefix + 1, *map(len, fmt.ends)) if fmt.ends else sc.max_prefix + 1
        # (See Driver.lines: and a reply-anchored format's region that a line_start literal opened.)
        lines = sc.tools is not None and (
            fmt.anchor == "line" or (self.marker_len > 0 and sc.buf[start : start + self.marker_len] in fmt.line_starts)
        )
        # (The scanner's find, not this reader's: a driver holding this reader through it would
        # make a cycle, and each parse's trees would wait for the collector's full pass.)
        drv = Driver(fmt, start, sc.brackets, (sc._markers_from, room, sc.prefixes, sc.find, sc.call_reads_at, sc.turn_list, sc.call_re, sc.call_before, sc.cut_symbols, sc.cut_keys), lines)
        nest = drv.c.nest
        if nest is not None:
            # (The steps and the walk of the openers after a value's stop are the text's,
            # each kept with the text that tells it: shared by the drivers of the format's
            # nest on one text, so that each opener is stepped once, not once per region.
            # A storm of cut calls, each value left open, each call a driver: each driver
            # walked the dozen openers after its value, and read its walk on by four dozen
            # more, 0.4 ms a call; nest._openers_ahead.)
            walks = sc.nest_walks
            if walks is None:
                walks = sc.nest_walks = {}
            shared = walks.get(id(nest))  # (a nest is no key: a dict; the scanner's formats hold it)
            if shared is None:
                shared = walks[id(nest)] = ({}, [None, {}, [], [], [], 0, 0])
            drv.nest_chain, drv.nest_walk = shared
        drv.listed = -1  # (see run)
        drv.listed_log, drv.listed_hint, drv.own_hint = sc.listed_log, sc.listed_hint, sc.own_hint  # (the storm memo's: see Driver.listed_log)
        return drv

    def run(self, out: list, final: bool, anchored: bool) -> bool:
        """Scanner mode "region" (and an anchored region in mode "start"): read on;
        False to wait for more text."""
        sc = self.sc
        if self.frame is not None:
            got = self.frame.read(sc.buf, self.region_start, final, sc.tools, self.frame_wait)
            if type(got) is ToolCall:
                out.append(got)
                sc.pos = got.span[1]
                sc.after_call(sc.pos, self.frame.fmt, start=got.span[0])
                if sc.storm is not None:
                    sc.storm.frame_call(sc, sc.buf[self.region_start : self.region_start + self.marker_len], self.region_start)
                sc._end_region()
                return True
            if got is not None and len(sc.buf) - self.region_start < _FRAME_WAIT:
                self.frame_wait = got
                return False
            # The general way reads it, from the start of the region.
            self.frame = None
            self.drivers = [self.driver(self.candidates[0], self.region_start)]
        if self.cut_wait:
            # (Each delta looks at its own text only, not at every driver again: a
            # run of blanks after the opener's head costs what a run of prose does.)
            if not final and _cut_may_come(self, self.region_start):
                return False
            self.cut_wait = False
        if self.rule_wait:
            # (A region read whole that only the text after it decides (_offered_broken):
            # each delta looks at its own text only, the region not read again.)
            drv, rule = self.broken_rule
            since = max(drv.start, self.rule_seen - _LOOK_BACK)
            if not final and offered_elsewhere(rule, sc.buf, since, sc.tools, False, sc.literals) is None:
                self.rule_seen = len(sc.buf)
                return False
        if self.settle_wait:
            # (No candidate read it, the last one failed, and its failure waits on an end
            # marker or a call's (settle_failure): the next delta asks that alone, not the
            # last driver, its failure and the salvage again, which answer as before (a
            # failed driver stays so; the salvage and the cut's look keep their answers).
            # A broken MFCS frame read them again at each of 240 deltas, fuzz seed 7
            # #112004220. Where it tells, the region is read as before, and the failure
            # settled then: settle_failure writes its answer on the failure (its end, its
            # message), which is put back first, as a second look at a failure it had
            # moved to a marker would not find it flush against that marker.)
            failure = self.first_failure
            if final or failure is None:
                self.settle_wait = False
            else:
                kept = (failure.end, failure.message, self.failure_marker)
                if _settle_failure(self, final) is WAIT:
                    return False
                self.settle_wait = False
                failure.end, failure.message, self.failure_marker = kept
        if self.ahead_wait is not None:
            # (The region read and built, begins_call waiting on the region at its cut: the
            # next delta asks that region alone, which reads on from where it stopped; the
            # region is built anew once it tells, not at each delta while it waits. A
            # Cohere region cut at a marker was built again at each of 54 deltas, fuzz
            # seed 7 #112002410.)
            if not final and self.begins_call(self.ahead_wait, final) is WAIT:
                return False
            self.ahead_wait = None
        if self.lead_wait:
            # (The block broke, its failure told nothing: only whether a call reads at its
            # own opener after it is left to tell, on this delta's text: _lead.)
            led = self._lead(final)
            if led is WAIT:
                return False
            self.lead_wait = False
            return self._led(out, led)
        while True:
            drv = self.drivers[-1]
            if self.rule_wait:
                self.rule_wait = False
                status = DONE  # (read before; decided below)
            else:
                status = self._read(drv, final)
            drv = self.drivers[-1]
            # Its last call's value ran on over the list's `]` and text after it to the end
            # of the reply, the call's `)` left out: read as a reply that ends at that `]`
            # (Driver.listed), the call up to it. Where that is no whole call, the salvage
            # tells the value broken, up to that `]` (salvage.list_closed).
            listed = _listed(self, drv, status, final) if drv.listed is not None and drv.listed > 0 else None
            if status == WAIT:
                return False
            if status == DONE:
                if anchored and drv.fmt.anchor == "whole":
                    # (The reply as the driver read it: without an end-of-turn token that
                    # ends it, which is markup, not text after the call: a bare call the
                    # turn's end cut, `write_file(content='Dear team<|eot_id|>`, or closed,
                    # `…')<|eot_id|>`, is the reply's call, as without the token.)
                    whole = _before_turn_end(sc, drv) if final else sc.buf
                    rest = whole[drv.end :]
                    if rest.strip():
                        status = drv.status = FAIL
                        drv.reason = "text follows the reply's JSON"
                    elif not final:
                        return False
                    else:
                        drv.end = len(whole)
                if status == DONE and not anchored:
                    mention = _mention(self, drv, final)
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
                            self.mention_end = drv.end
                            self.first_failure = self.failed_frame = None
                if status == DONE:
                    if listed is not None:
                        region = listed
                    else:
                        self.rule_final = final
                        region = sc._decode(drv)
                        self.rule_final = None
                    if self.rule_pending is not None:
                        # (A stray quote's region that a fence's close ended, which only the
                        # text after it decides (decode): wait, as for a region read whole.)
                        self.broken_rule, self.rule_pending = (drv, self.rule_pending), None
                        drv.decode_failed = None  # (no answer: decided again)
                        self.rule_wait = True
                        self.rule_seen = len(sc.buf)
                        return False
                    if isinstance(region, Region) and self.broken_rule is not None and self.broken_rule[0] is drv:
                        # The region is the model's calls only where no offered name is
                        # written elsewhere in it or in the text after it (a call main read
                        # there, `[get_weather("Paris"), …,\n[get_weather(city="Paris")]`):
                        # a stream waits until its text, or the end of the reply, tells.
                        told = self.elsewhere(self.broken_rule[1], sc.buf, drv.start, final)
                        if told is None:
                            self.rule_wait = True
                            self.rule_seen = len(sc.buf)
                            return False
                        self.broken_rule = None
                        if told:
                            self.rule_off = drv  # (read as before: its text prose)
                            listed = _listed(self, drv, status, final) if listed is not None else None
                            region = listed if listed is not None else sc._decode(drv)
                    if final and listed is None and (not isinstance(region, Region) or (region.items and getattr(region.items[-1], "error", None))):
                        # (Its last call's value ran on over the list's `]` and prose to the
                        # end of the reply, the call's `)` left out: read up to that `]`.)
                        closed = _list_closed(self, drv, sc.buf, final)
                        if isinstance(closed, Region):
                            region = closed
                    if isinstance(region, Region) and region.items and listed is None and not drv.fmt.quiet and _cut_at_marker(self, drv) and not self.mentioned and (self.cut_broken is None or self.cut_broken.end == drv.cut_at) and not _whole_before_list_close(sc.buf, drv):
                        # Its value was cut at a call marker (_close.cut), the close left out
                        # (closed_tag), and read up to there it is a call: only where that
                        # marker begins a call (the model went on to write it) is the cut
                        # the value's end. Where it begins none (`b='x"]<tool_call>'s all.
                        # <|tool_call_end|>`: another format's marker in the value, its own
                        # end marker after), the value runs on past it and cannot be read:
                        # an error naming it, the text prose, as where no marker is there
                        # (`b='x"] ok<|tool_call_end|>`), never the value cut silently and
                        # the region's own end marker left in the text (QA23 P4). (Not a value
                        # read whole before the list's `]`, the call's `)` left out: that is the
                        # list closed before the marker, read as salvage.list_closed reads it.
                        # begins_call keeps one reading, of one marker: another driver's cut
                        # at another one is told as before.)
                        follows = self.begins_call(drv.cut_at, final)
                        if follows is WAIT:
                            if sc.observer is None:  # (one that watches sees each reading, as before)
                                self.ahead_wait = drv.cut_at
                            return False
                        if not follows:
                            region = _cut_unread(sc, drv, region)
                    if isinstance(region, Region) and not region.items and "closed_tag" in region.repairs:
                        # A marker closed with nothing in it does not hide the calls an
                        # earlier candidate read before its own failure (see salvage.py).
                        salvaged = _salvaged(self, out, final)
                        if salvaged is not None:
                            return salvaged
                    if isinstance(region, Region):
                        return self._put(out, drv, region)
                    if not final and _marker_pending(self, drv):
                        return False  # (whether a marker follows tells whether its failure is told)
                    sc._note_failure(drv, region)
            else:
                if not final and _marker_pending(self, drv):
                    return False  # (whether a marker begins where it broke tells whether its failure is told)
                sc._note_failure(drv, drv.reason)
            if final and len(self.drivers) < len(self.candidates):
                self._drop_failing(len(self.drivers))
            if len(self.drivers) < len(self.candidates):
                self.next_driver()
                continue
            # No candidate read it: the text stays prose.
            if not final and self.marker_len and _cut_may_come(self, self.region_start):
                self.cut_wait = True
                return False  # (the end of the reply, or the text after, decides: cut_may_come)
            if anchored and self.marker_len and (_cut_opener(self, self.region_start, final) or _cut_inside(self, final)):
                # (The reply is its opener, or a call the end cut: see below.)
                out.append(cut_failure(self, None, not _cut_opener(self, self.region_start, final)))
                sc.pos = len(sc.buf)
                sc._end_region()
                sc.mode = "prose"
                return True
            if anchored:  # (its failures are never shown, but a stray quote's and a broken call's after calls kept)
                if self.salvaged is None:
                    got = _salvage(self, final, True)
                    if got is WAIT:
                        return False  # (asked again once the text has grown: salvage_wait)
                    self.salvage_wait = None
                    self.salvaged = got
                salvaged = self.salvaged
                # A list of Python calls that opened the reply, told broken (its calls before
                # the broken one kept or not): the lists in a row after it are still that
                # run's (pythonic.lark), each on a line of its own: the next line opens lists
                # again, as at the reply's start (Scanner.relist), not prose
                # (`[f(a=<tool_call>)]` then `[h()]` on the next line: h, as with tools,
                # where each line's list is read).
                if salvaged and salvaged[2]:
                    # (Calls kept, then one broken: settled as after a marker, see salvage.)
                    got = _salvaged(self, out, final)
                    if not got:
                        return False
                    relist_from(self, self.failure_python)
                    sc.mode = "prose"
                    return True
                if salvaged:
                    region, tail, _ = salvaged
                    if region is not None:
                        sc._prose(out, sc.pos, region.start)  # (whitespace before it)
                        out.append(region)
                        sc.pos = region.end
                    if tail is not None:
                        sc._prose(out, sc.pos, tail.end)
                        out.append(tail)
                        sc.pos = tail.end
                        relist_from(self, self.failure_python)
                    elif region is not None and _lists_on(self, region):
                        # (Whole lists kept, their line ended at the last one's `]`, and a
                        # list of the run on a later line broke it: that list is read on
                        # its own line as after a broken one (the next line opens lists
                        # again), told broken where it is, and the lists after it read, as
                        # with tools: `[f(a=1)]` then `[h(a=<tool_call>)]` then `[k()]`, as
                        # `[f(a=<tool_call>)]` then both: the rule is the line's own.)
                        relist_from(self, True)
                elif self.failure_stray and self.first_failure is not None:
                    failure = self.first_failure
                    sc._prose(out, sc.pos, failure.end)
                    out.append(failure)
                    sc.pos = failure.end
                    self._watch_after(failure)
                    relist_from(self, self.failure_python)
                sc._end_region()
                sc.mode = "prose"
                return True
            salvaged = _salvaged(self, out, final)
            if salvaged is not None:
                return salvaged
            failure = _settle_failure(self, final)
            if failure is WAIT:
                if sc.observer is None and self.drivers[-1].status == FAIL:
                    self.settle_wait = True
                return False
            if failure is None and self.cut_broken is not None and not self.mentioned:
                follows = self.begins_call(self.cut_broken.end, final)
                if follows is WAIT:
                    if sc.observer is None:  # (one that watches sees each reading, as before)
                        self.ahead_wait = self.cut_broken.end
                    return False
                if not follows:
                    failure = self.cut_broken
            if _cut_opener(self, self.region_start, final):
                # The reply ended right after the opener: an error, and no prose.
                failure = cut_failure(self, failure)
                out.append(failure)
                sc.pos = failure.end
                sc._end_region()
                return True
            if failure is None and _cut_inside(self, final):
                # The reply ended inside a call, before its grammar could close it: an
                # error, and no prose (not a mention: nothing follows it).
                failure = cut_failure(self, None, True)
                out.append(failure)
                sc.pos = failure.end
                sc._end_region()
                return True
            if failure is not None:
                _failed_prose(self, out, failure.start, failure.end, failure)  # (its markup no prose)
                out.append(failure)
                sc.pos = failure.end
                self._watch_after(failure)
            else:
                led = self._lead(final)
                if led is WAIT:
                    self.lead_wait = True
                    return False
                return self._led(out, led)
            sc._end_region()
            return True

    def _lead(self, final: bool) -> Any:
        """Where the block broke after its opener with nothing to tell (no failure, no
        salvage: its opener would be prose), and the format's own call opener follows the
        block's opener after blanks (`<tool_call>\n<function=f>\n<parameter=a>\nx\n
        </parameter>\n<oops>`, `<minimax:tool_call>\n<invoke name="f">…</parameter>\n<`):
        that call's region, read as the scanner would read it next, when it gives the
        block's format a call at that opener: (the driver, the region). Then the call is
        the block's first call, read alone, as parse() read it there before; its span
        starts at the block's opener (markup), as a block's first call's does, so that its
        id, made from where it starts, is the one a stream announced at that opener
        (issue 21: it was withdrawn there and sent again from its own opener). None: read
        as before (the opener prose, the call read from its own opener on); WAIT: a
        stream's text cannot tell yet. The region after is read once more here (as
        begins_call's: each region at most twice)."""
        ahead = self.lead
        if ahead is False:
            return None
        sc = self.sc
        buf = sc.buf
        if ahead is None:
            if not any(f.stream_call is not None for f in self.given):
                # (Only a format that announces a call by its tags (stream_call: XML-ish
                # blocks): any other region's opener is prose at once, as before, not held
                # on the text after it (a storm memo's window would not tell it).)
                self.lead = False
                return None
            at = self.region_start + self.marker_len
            n = len(buf)
            while at < n and buf[at] in " \t\r\n":
                at += 1
            if at >= n or (not final and buf[at:] in sc.prefixes):
                self.lead = None if not final else False
                return WAIT if not final else None
            m = sc.call_re.match(buf, at) if sc.call_re is not None else None
            marker = m.group() if m is not None else ""
            fmts = sc.by_marker.get(marker)
            opener = buf[self.region_start : self.region_start + self.marker_len]
            if not fmts or marker == opener or not any(f in self.given and f.stream_call is not None for f in fmts) or marker in sc.line or marker in sc.turn_ends:
                self.lead = False
                return None
            ahead = self.lead = RegionReader(sc, fmts, at, len(marker))
            if final:
                # (Where it tells none, the scanner reads that region next: its drivers that
                # are done read it so, as begins_call's do (driver); it was read twice.)
                sc.read_ahead = (buf, ahead)
        while True:
            # (The candidates in order, as run reads them: the first that reads it whole.)
            status, d = ahead.step(final)
            if status == WAIT:
                return WAIT
            if status == DONE or len(ahead.drivers) >= len(ahead.candidates):
                break
            ahead.next_driver()
        self.lead = False  # (told: asked no more)
        if status != DONE or d.fmt not in self.given or d.fmt.stream_call is None or (d.listed is not None and d.listed > 0):
            return None
        said = _mention(ahead, d, final)
        if said is WAIT:
            self.lead = ahead
            return WAIT
        if said:
            return None
        ahead.rule_final = final
        region = ahead.decode(d)
        ahead.rule_final = None
        if not final and (ahead.rule_pending is not None or ahead.broken_rule is not None):
            # (What only the text after it decides (a stray quote's rule): run waits on it;
            # here the region waits, and is read as before unless the whole text reads it
            # without one. Python lists' rules: no format whose block this is has them.)
            ahead.rule_pending = ahead.broken_rule = None
            d.decode_failed = None
            self.lead = ahead
            return WAIT
        if not isinstance(region, Region) or not region.items or ahead.rule_pending is not None or ahead.broken_rule is not None:
            return None
        first, last = region.items[0], region.items[-1]
        if type(first) is not Draft or first.error or not first.span or first.span[0] != ahead.region_start or region.start != ahead.region_start:
            return None
        if getattr(last, "error", None) or (not d.fmt.quiet and _cut_at_marker(ahead, d)):
            return None
        region.start = self.region_start
        if first.opened is None:
            first.opened = first.span[0]  # (its own markers start there: a refusal's error does)
        first.span = (self.region_start, first.span[1])
        return d, region

    def _led(self, out: list, led: Any) -> bool:
        """Put out what _lead told: the call's region from the block's opener on; or, where
        none, the opener as prose (the call is read from its own opener after it)."""
        sc = self.sc
        if led is None:
            end = self.region_start + self.marker_len
            sc._prose(out, self.region_start, end)
            sc.pos = end
            sc._end_region()
            return True
        return self._put(out, *led)

    def _put(self, out: list, drv: Driver, region: Region) -> bool:
        """Put out a region drv read: the blanks before it (an anchored region's) as
        prose, the region, and the scanner on after it; the region ends."""
        sc = self.sc
        sc._prose(out, sc.pos, region.start)
        out.append(region)
        sc.pos = region.end
        sc.after_call(region.end, drv.fmt, region, start=region.start)
        cut = drv.cut_close
        if cut is not None and cut[0] >= region.end:
            # (Its payload, closed by its end marker, cut at a call after its JSON: that
            # end marker, the first in the prose after that call, is this region's close,
            # written around the call: markup, as a Python region's left-out end marker
            # is. Scanner.after_call.)
            sc.outer_watch = ((cut[1],), sc.base + cut[0], True)
        sc._end_region()
        return True

    def _watch_after(self, failure: Any) -> None:
        """A Python call region told broken at the next call's marker (`[f(a=<tool_call>{…}
        </tool_call>)]<|tool_call_end|>`): its end marker, the first in the prose after that
        call, is the region's, markup (Scanner.outer_watch, after_call)."""
        at = self.failure_marker
        if at < 0 or failure is not self.first_failure:
            return
        sc = self.sc
        # (Every candidate's: which of them read the region furthest differs between
        # parse()'s fast path and the general way, and any of their end markers there is
        # the model's close of the region it left open. Every candidate the marker opens
        # (given), not only those given a driver: the fast path drops some that fail at
        # once (_drop_failing), the general way and a stream do not. A Python list's alone
        # (Markers' cut_ends, not the JSON value tokens' open_ends too): a JSON-valued
        # format's end marker after a region broken before its value (`<tool_call>Sure.
        # <tool_call>{…}</tool_call>\nDone.</tool_call>`, the first `<tool_call>` prose)
        # closes nothing the model left open.)
        ends = tuple(dict.fromkeys(e for f in self.given for e in sc.cut_ends.get(f.name, ())))
        # (With none, the place alone. Marked CUT: the closers after that call close the
        # broken call's brackets, no call's of their own, after_call.)
        sc.outer_watch = (ends, sc.base + at, _OUTER_CUT)

    def begins_call(self, at: int, final: bool) -> Any:
        """Whether the call marker at `at`, where a broken value of this region's call
        was cut (_close.cut) and its close left out (closed_tag), begins a call, read as
        that marker's region reads one (True; WAIT while the text so far cannot tell).
        Then the broken call before it is prose, a mention before the call the model went
        on to write: its failure is not told (note_failure). Where the marker begins none
        (`f(a=1, b='"]|<tool_call><|tool_call_end|>`: another format's marker, then
        nothing a call reads; its own marker, then ` )]`), the call cut there is the only
        one the model wrote there, and it is told (self.cut_broken), as where no marker
        cut it (`b='"]|<|im_end|><|tool_call_end|>`): an error, its text prose, not a
        reply silently all text, its markers in it (QA23 R1, R2). A stream waits for that
        region's reading, as parse() reads it (Scanner._settle waits on its driver). The
        region after is read once more here (each region at most twice: linear); its
        reading is kept."""
        ahead = self.ahead
        if ahead is None:
            sc = self.sc
            if not final and sc.buf[at:] in sc.prefixes:
                # (What the text holds there may yet grow into a longer marker, of other
                # formats: `` ``` `` then `` ```json ``. Read with the formats of the
                # shorter one, the call a whole text reads there was not found, and the
                # broken call before it was told where parse() keeps it a mention.)
                return WAIT
            m = sc.call_re.match(sc.buf, at) if sc.call_re is not None else None
            marker = m.group() if m is not None else ""
            if not sc.by_marker.get(marker):
                self.ahead = True  # (note_failure found one there: never so)
                return True
            ahead = self.ahead = RegionReader(sc, sc.by_marker[marker], at, len(marker))
            if final:
                sc.read_ahead = (sc.buf, ahead)  # (its drivers, done, are that region's: driver)
        if type(ahead) is bool:
            return ahead
        while True:
            status, d = ahead.step(final)
            if status == WAIT:
                return WAIT
            if status == DONE:
                said = _mention(ahead, d, final)
                if said is WAIT:
                    return WAIT
                if not said:
                    got = ahead.decode(d)
                    if isinstance(got, Region) and got.items:
                        self.ahead = True
                        return True
            if final and len(ahead.drivers) < len(ahead.candidates) and sc_quiet(ahead):
                ahead._drop_twins(len(ahead.drivers))
            if len(ahead.drivers) < len(ahead.candidates):
                ahead.next_driver()
                continue
            # (No candidate read it whole: the calls salvage keeps before its failure are
            # calls all the same, `<|tool_call_start|>[g(b=1)]")]`.)
            got = _salvage(ahead, final)
            if got is WAIT:
                return WAIT  # (asked again once the text has grown: Scanner._settle)
            ahead.salvage_wait = None
            self.ahead = bool(got) and got[0] is not None
            return self.ahead

    def _drop_failing(self, k: int) -> None:
        """In a whole text, the candidates from the k-th on (never the first) that are
        certain to fail before their second token, up to the first that may not, are
        dropped, not given a driver each (opening.fails_at_once): a quiet format's
        driver that fails there tells nothing (note_failure: no stray quote, no token
        of a call read; salvage: no point before its marker; a quiet format is no loud
        opener's: cut_opener), and the region goes on as after its failure. A fence of
        anything but calls (`` ```json<function=f>…``` ``, `` ``` ``` ``) failed
        fenced_python's driver at once at each fence, after fenced_json's reading: a
        driver made, its marker lexed, its close tried, for nothing. Only where the text
        runs on past what those two tokens may look at (at its end a closer cut short
        is read otherwise: close.cut_close), and with nobody watching the drivers
        (an observer: explain). A loud format's too, where its failure would change
        nothing (_failure_stands: a failure of more tokens is told already, or the
        region is a mention; cut_opener counts the candidates given, not those left),
        and where its driver reads the reply itself, no end-of-turn token of its format
        ending it (_before_turn_end). A `<tool_call>` storm of payloads of other formats
        (`<tool_call>[f(a=1)]<|/tool_call|>`, fuzz seed 7 #8091806) ran five drivers a
        region, three of them failing at their second token after hermes's failure."""
        sc = self.sc
        if k < 1 or not self.marker_len or sc.observer is not None or not _frame.enabled:
            return
        buf = sc.buf
        start = self.region_start
        candidates = self.candidates
        while k < len(candidates):
            fmt = candidates[k]
            if self._twin_read(fmt):
                del candidates[k]  # (its reading is an earlier driver's, no call: twin.py)
                continue
            if fmt.line_starts or fmt.anchor or fmt.parser == "earley":
                return
            if not fmt.quiet and not self._failure_stands():
                return
            if fmt.end_of_turn and any(a >= start for a in _turn_hits(sc, fmt.end_of_turn)):
                return  # (its driver would read the reply without that token: _before_turn_end)
            if sc.turn_list and "PYVALUE" in fmt.compiled.terminals and any(a >= start for a in _turn_hits(sc, sc.turn_list)):
                return  # (so too any end-of-turn token, for a Python call's: turn_tokens)
            c = fmt.compiled
            if len(buf) - skip_ignored(c, buf, start + self.marker_len, blanks=True) < c.longest_literal + _CUT_ROOM + _SNIPPET:
                return
            if not _fails_at_once(fmt, buf, start, sc.call_markers):
                return
            if sc.brackets is None:
                sc.brackets = _repair.BracketIndex()  # (as its driver would have made it)
            del candidates[k]

    def _drop_twins(self, k: int) -> None:
        """The candidates from the k-th on that are twins of a driver read (_twin_read)
        are dropped, up to the first that is not (begins_call's reading of the region
        after a cut; _drop_failing drops them in the region's own)."""
        candidates = self.candidates
        while k < len(candidates) and self._twin_read(candidates[k]):
            del candidates[k]

    def _twin_read(self, fmt: Format) -> bool:
        """Whether fmt's driver would read this region as an earlier candidate's driver
        did (twin.py: Apriel's `<tool_calls>` after Jamba's), that reading no call: the
        grammars act alike from the marker on, none of fmt's own literals and markers
        that the earlier format lacks is written from the region's start on (apriel's
        `[END FINAL RESPONSE]` cuts a value there that jamba reads on over), and the
        text runs on past where that driver stopped by more than fmt's closers cut
        short at the text's end are looked for (its longest literal may be longer).
        A storm of `<tool_calls>` regions of junk payloads read each one twice, apriel
        after jamba (fuzz seed 7 #101014252)."""
        sc = self.sc
        buf = sc.buf
        start = self.region_start
        twins = _twins_of(sc, buf[start : start + self.marker_len], fmt)
        if not twins:
            return False
        room = fmt.compiled.longest_literal + _CUT_ROOM + _SNIPPET
        for d in self.drivers:
            extra = twins.get(d.fmt)
            if extra is None or max(d.pos, d.end, d.last_end) + room > len(buf):
                continue
            if not any(_last_at(sc, x) >= start for x in extra):
                return True
        return False

    def _failure_stands(self) -> bool:
        """Whether a loud candidate's driver that fails before its second token would
        change nothing of the region's reading: a failure is told already, of a driver
        that read a token at least (note_failure tells the one that read the most
        tokens, the first on a tie), or the region was read as a mention (no failed
        driver's failure is told then); and a driver read already stopped before the
        end of the reply or not for it (cut_opener asks whether all of them did)."""
        if not (self.mentioned or (self.first_failure is not None and self.failure_taken >= 1)):
            return False
        return any(d.status != FAIL or not (d.reason or "").startswith(_ENDED) for d in self.drivers)

    def text_of(self, drv: Driver, final: bool) -> str:
        """The text drv reads (_read), and the salvage looks at: in a whole text, the
        reply without an end-of-turn token of its format that ends it (_before_turn_end)."""
        return _before_turn_end(self.sc, drv) if final else self.sc.buf

    def step(self, final: bool) -> tuple[str, Driver]:
        """The last candidate's driver read on (_read), and its status with the driver
        then last (a read may put a fresh driver in its place)."""
        status = self._read(self.drivers[-1], final)
        return status, self.drivers[-1]

    def next_driver(self) -> None:
        """The next candidate gets its driver, from the region's start."""
        self.drivers.append(self.driver(self.candidates[len(self.drivers)], self.region_start))

    def _read(self, drv: Driver, final: bool) -> str:
        """drv.run, or for a region of plain Python call lists, their tokens read by
        pyframe.py, and the driver's own reading where they are not plain (from
        which it comes back after each list's `]`)."""
        sc = self.sc
        buf = self.text_of(drv, final)
        if not _frame.enabled or sc.observer is not None:
            return drv.run(buf, final, sc.at_marker)
        if _gemframe.applies(drv):
            return self._read_lines(drv, buf, final)
        if not _pyframe.applies(drv):
            return drv.run(buf, final, sc.at_marker)
        while True:
            # (After a list's `]` (a boundary, at drv.pos): pyframe looks at what follows,
            # unless the lists before were each handed over to the driver, none plain, in a
            # row: then the driver reads the next ones on its own, more the longer the row
            # (at most _PY_BACK), as it reads a list pyframe's look hands over. Each
            # boundary counted once, a stream's text ending there or not. A storm of lists
            # closed before their call's `)` was looked at, and a checkpoint kept, at each.)
            handed, skip, seen = drv.py_back
            boundary = drv.last_term == "RSQB" and drv.pos != seen
            if skip and boundary:
                drv.py_back = (handed, skip - 1, drv.pos)
                if final:
                    _pyframe.take_head(drv, buf)  # (its `[f(a=`, not lexed: see take_head)
            elif skip and drv.last_term == "RSQB":
                pass  # (that boundary's, again: a stream's text ended there)
            else:
                at = drv.pos
                drv.py_from = -1
                got = _pyframe.advance(drv, buf, final)
                if got == DONE:
                    return DONE
                if got == _pyframe.HOLD:
                    return WAIT
                if drv.status == "spoilt":  # (a token the table refused: read afresh, the general way)
                    drv = self.drivers[-1] = self.driver(drv.fmt, self.region_start)
                    drv.py = False
                    return drv.run(buf, final, sc.at_marker)
                if boundary:
                    if drv.pos == at or drv.py_from == at:  # (handed over: no plain list there, its first tokens at most taken)
                        drv.py_back = (handed + 1, min(handed, _PY_BACK), at)
                    else:
                        drv.py_back = (0, 0, at)
            drv.pause = "RSQB"
            status = drv.run(buf, final, sc.at_marker)
            drv.pause = None
            if status != PAUSE:
                return status

    def _read_lines(self, drv: Driver, buf: str, final: bool) -> str:
        """drv.run, for a region of Gemma's bare calls: their plain lines read by
        gemframe.py, the others by the driver, which pauses after each line's _NL."""
        while True:
            if not _gemframe.advance(drv, buf):  # (a token the table refused: read afresh, the general way)
                drv = self.drivers[-1] = self.driver(drv.fmt, self.region_start)
                drv.gem = False
                return drv.run(buf, final, self.sc.at_marker)
            drv.pause = "_NL"
            status = drv.run(buf, final, self.sc.at_marker)
            drv.pause = None
            if status != PAUSE:
                return status

    def decode(self, drv: Driver, buf: str | None = None) -> Region | str:
        """The region drv read, built (Builder); a str: why it is no region. (`buf`: the
        text drv read, when not the scanner's: one with words masked, of equal length.)"""
        tools = self.sc.tools
        region = (drv.start, drv.end)
        if buf is None:
            buf = self.sc.buf
        key = (drv.start, drv.end, drv.closed_at, drv.last_end, drv.ended, getattr(drv, "goes_on", False))
        told = getattr(drv, "decode_failed", None)
        if told is not None and told[0] is drv.tree and told[1] is buf and told[2] == key:
            # (The same reading of the same text failed to build before: a salvage asks
            # again only for the reason. A second build of a long call doubled its cost.)
            return told[3]
        self.broke = False
        why = self._build(drv, buf, tools, region)
        if isinstance(why, str):
            # (With whether a value is what cannot be read: value_broke.)
            drv.decode_failed = (drv.tree, buf, key, why, self.broke)
        return why

    def elsewhere(self, rule: tuple, buf: str, start: int, final: bool) -> bool | None:
        """offered_elsewhere, for the region's own drivers; each look noted (rule_looks:
        the rule, where it looked from, its answer) for the storm memo, which gives the
        region's outcome to a later one only where the text it shares with it told the
        answer (storm._tail)."""
        told = offered_elsewhere(rule, buf, start, self.sc.tools, final, self.sc.literals)
        self.rule_looks.append((rule, start, told))
        return told

    def value_broke(self, drv: Driver) -> bool:
        """Whether drv's region, just decoded, failed where an argument's value cannot be
        read (Unreadable.value), not for any other reason."""
        told = drv.decode_failed
        return told is not None and told[4]

    def _build(self, drv: Driver, buf: str, tools: Any, region: tuple) -> Region | str:
        if tools is None and drv.fmt.offered_only and _needs_offered_name(drv.tree):
            return ""  # (no tools: nothing tells such a line from prose; see _needs_offered_name)
        try:
            builder = Builder(drv.fmt, tools, region, self.sc.read_calls, buf)
            builder.json_named = type(_frame.frame_of(drv.fmt)) is _frame.Frame  # (see Builder._streams_by_name)
            if drv.closed_at >= 0:
                builder.cut_at = drv.last_end
            builder.goes_on = getattr(drv, "goes_on", False)  # (an Earley parse is never salvaged)
            if self.sc.brackets is not None:
                builder.spans = _repair.Spans.of(self.sc.brackets)
            if drv.ended >= 0:
                builder.ended = (drv.last_end, drv.ended, _closer(drv, buf), drv.closed_at >= 0)
            builder.failed_memo = self.failed_memo
            items = builder.build(drv.tree)
            if getattr(drv, "listed_ends", None):
                ends = drv.listed_ends
                drafts = [i for i in items if type(i) is Draft and i.span is not None]
                if len(drafts) == 1:
                    # (The region's one call is the one so closed, its span the region's,
                    # markers and all: `<|tool_call_start|>[f(a="x",]<|tool_call_end|>`.)
                    ends = [*ends, drafts[0].span[1]]
                _listed_closed(items, ends)
        except Unreadable as exc:
            if exc.called:
                drv.stray = True  # (a call, broken: told as a stray quote's failure is)
            elif exc.held and drv in self.drivers:
                self.held = (drv, str(exc))  # (told where no reading keeps a call: salvage)
            if exc.deep:
                drv.deep = True
            self.broke = exc.value
            return str(exc)
        except RecursionError:
            # (The interpreter's limit, the caller deep in the stack: refused as a value
            # too deep is, never salvaged to a shorter reading, a call with less in it.)
            drv.deep = True
            return "nested too deeply"
        # A region the grammar read with no call in it (an empty list `[]`) says
        # "no calls": it is consumed, silently. Not so one that only the missing
        # markers made whole (a section's start marker and no more): it is no region.
        if not items and drv.repairs:
            return ""
        if drv.fmt.offered_only and tools is not None:
            # Marker-less shapes count as calls only when they name an offered tool; a
            # list that names one is the model's calls, and its other names are errors
            # (Unknown tool "x"), not prose the model never hears about. (A draft with
            # no name and an error is a call the end of the reply cut off.)
            names = [item.name for item in items if isinstance(item, Draft) and not (item.error and not item.name)]
            if names and not any(name in tools for name in names):
                # Unless the only offered name the region writes is in a call that could
                # not be built (_offered_broken), none after it: then the model wrote its
                # call of that tool there, broken, and is told (issue 19; it was silent
                # prose, the list's other names not offered). Decided where the region is
                # read (RegionReader.run: offered_elsewhere, which a stream waits on).
                rule = _offered_broken(self.sc, drv, items, buf, tools, max(drv.end, builder.took_to)) if drv in self.drivers and drv is not self.rule_off else None
                if rule is None:
                    return ""
                if drv.stray and "closed_tag" not in drv.repairs:
                    # (A stray quote's value that a marker or a fence's close ended: asked
                    # where run reads the region, whose text may not be whole yet; a stream
                    # waits (rule_pending) until the text after it tells. Elsewhere, and at a
                    # marker, as before.)
                    final = self.rule_final
                    if final is None or not (drv.fmt.ends and all(e.startswith("```") for e in drv.fmt.ends)):
                        return ""
                    told = self.elsewhere(rule, buf, drv.start, final)
                    if told is None:
                        self.rule_pending = rule
                        return ""
                    self.broken_rule = None
                    if told:
                        return ""
                if drv.stray:
                    # (A stray quote's value ran on to the end of the reply, which cut the
                    # region, or to the close of its fence: no Region, the salvage tells
                    # it, text prose, the error the broken call's own (`cannot read the
                    # value of 'a' (…)`) where no offered name is written elsewhere, as
                    # when that call comes first.)
                    if "closed_tag" in drv.repairs and self.elsewhere(rule, buf, drv.start, True):
                        return ""
                    why = rule[2]
                    self.broke = rule[3]  # (as a value the builder could not read: value_broke)
                    return why[len(_FAILED) : -1] if why.startswith(_FAILED) and why.endswith(".") else why
                if self.elsewhere(rule, buf, drv.start, False):
                    return ""  # (told already by the text there is, whole or not: no Region built twice)
                self.broken_rule = (drv, rule)
        region = Region(drv.start, max(drv.end, builder.took_to), drv.fmt.name, items, list(drv.repairs))
        if "closed_tag" in region.repairs and drv.fmt.stream_python and not drv.fmt.ends and len(items) > 1:
            region.whole = _whole_lists(items, buf)
        return region

    def find(self, text: str, start: int, buf: str | None = None) -> int:
        """The scanner's remembered buf.find (Scanner.find)."""
        return self.sc.find(text, start, buf)
