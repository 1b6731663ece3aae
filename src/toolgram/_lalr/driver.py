"""An incremental LALR run of one format's grammar over one call region.

We drive Lark's parse table ourselves instead of Lark's InteractiveParser: the
table and the tree-building callbacks are Lark's, but lexing is ours because
 - a region ends where the grammar is satisfied, not at the end of the text;
 - when more text may still arrive, a token that touches the end of the buffer
   is not final (`1500` may become `1500.0`, `</tool_ca` may become a marker):
   we wait instead of guessing, which keeps streaming equal to one-shot parsing;
 - JSON and Python-value payloads are delimited by a bracket scanner (grammars
   cannot count brackets), then decoded by json.loads.

The parts: table.py (facts read off the LALR table), growth.py (streaming waits
for regex terminals), extent.py (bracket scanning), tokens.py (Tok, statuses),
and the recovery moves in close.py (the Driver's _close, _close_before,
_cut_close, _cut and _through call them).
"""

from __future__ import annotations

from typing import Any

import regex
from .tree import Tree

from .._grammar.tables import Shift
from .._grammar.registry import SPECIAL_TERMINALS, Compiled, Format
from .._grammar.words import fast_source, lazy
from . import close as _close
from . import looks as _looks
from . import nest as _nest
from . import tagread as _tagread
from .._recover import repair as _repair
from .checkpoint import Checkpoint
from .extent import TripleWait, _Extent, _last_closer, open_before, scalar_end, triple_end, triple_quote, twin_before, twin_close
from .growth import _HOLD, _LoopWait, _QuoteWait, _could_grow, _loop_wait
from .table import _ENDING_NAME, _reduces_call, _sure, closing_plan, expected, plain_starting, shifts_plain, simulate, step, takes
from .tokens import _SNIPPET, DONE, FAIL, PAUSE, WAIT, WAIT_MORE, Tok, Unbounded, _snippet

_JSON_START = lazy(regex.compile, r"[ \t\n\r]*")  # (the blanks before a payload's JSON value)
_PY_CALL = lazy(regex.compile, r"\[[ \t]*[A-Za-z_][\w.\-]*[ \t]*\(")  # (a Python call list's start: `[f(`)
# (The last few searches of _call_in_tail and _call_after_open: (buf, call_re, end,
# where it began, its match). Each candidate format of a region asks the same ones over
# the same text, a search of every marker over the whole payload: 15 to 22 ms each over
# 32 KB of `[`. See _tail_find.)
_tail_searches: tuple = ()
_TAIL_SEARCHES = 4


def _tail_find(call_re: Any, buf: str, at: int, end: int) -> Any:
    """call_re.search(buf, at, end), answered by an earlier search of the same pattern,
    text and end where it tells: one that began at or before `at` and found nothing, or
    found its match at or after `at`, found the first match from `at` too (a match at a
    place does not depend on where the search began: `^` and look-behinds read the text
    before it, not the search's start)."""
    global _tail_searches
    for b, r, e, began, m in _tail_searches:
        if b is buf and r is call_re and e == end and began <= at and (m is None or m.start() >= at):
            return m
    m = call_re.search(buf, at, end)
    _tail_searches = ((buf, call_re, end, at, m),) + _tail_searches[: _TAIL_SEARCHES - 1]
    return m
_OPEN_TRIES = 8  # (_call_after_open: the markers looked at after a value that never closes)


class _ValueWait:
    """A quoted value's wait (_repair.quoted_end's QuoteWait, not pending) whose extent
    has ended: what may change quoted_end's answer is a quote of its kind (QuoteWait
    itself), a `)` where the call's end bounds the look (a positional one's: call_end),
    or a marker (the first after the value's break bounds the look: Driver._quoted's
    markers, the scanner's markers and the format's ends). A delta matters if it holds
    such a `)`, or a marker, whole in the last characters before it and it (a marker
    the text so far ends inside of is found when the delta completes it)."""

    __slots__ = ("paren", "find", "words", "tail", "width")

    def __init__(self, paren: bool, find: Any, words: tuple, tail: str, width: int) -> None:
        self.paren, self.find, self.words, self.tail, self.width = paren, find, words, tail, width

    @classmethod
    def of(cls, drv: Any, buf: str, paren: bool) -> _ValueWait:
        """(paren: the look is bounded by the call's `)`: quoted_end asked call_end,
        Driver._quoted's memo.)"""
        cutter = drv.cutter
        if not cutter:
            return cls(paren, None, (), "", 1)
        find, keys = cutter[8], cutter[9]  # (the scanner's markers: its cut_symbols and cut_keys)
        words = (*(k for k in keys if k), *drv.fmt.ends)
        width = max([cutter[1], *map(len, words)]) + 1
        return cls(paren, find, words, buf[max(0, len(buf) - width) :], width)

    def absorbs(self, text: str, n: int) -> bool:
        if self.paren and ")" in text:
            return False
        if self.find is None:
            return True
        s = self.tail + text
        if self.find.search(s) is not None:
            return False
        for w in self.words:
            if w in s:
                return False
        self.tail = s[-self.width :]
        return True


class Driver:
    __slots__ = (
        "fmt", "c", "start", "pos", "stack", "values", "status", "end", "tree", "repairs", "reason", "prose_at",
        "hint", "extents", "quotes", "resume", "taken", "brackets", "cutter", "recheck", "marks",
        "closed_at", "last_end", "calls", "lines", "line_end", "stray", "deep", "quote_memo", "quote_passed", "last_term", "last_start", "ended", "shut",
        "loose_memo", "loose_quoted", "nest_memo", "nest_unsettled", "nest_open", "nest_loose", "nest_chain", "nest_walk", "nest_found", "goes_on", "decode_failed", "may_close", "may_end", "pause", "py", "gem", "gem_at", "tags", "checkpoints",
        "spots", "spot_due", "relevant", "supplied", "halt", "text", "looks", "far", "back", "check", "checks",
        "firsts", "inner", "inner_due", "cut_at", "listed", "listed_log", "listed_hint", "own_hint", "listing", "listed_ends", "stop",
        "listed_read", "paren_due", "paren_ends", "quote_wait", "py_back", "py_from", "cut_close", "marker_memo", "uncut_memo",
        "lexed",
    )  # fmt: skip

    def __init__(self, fmt: Format, start: int, brackets: Any = None, cutter: Any = None, lines: bool = False) -> None:
        self.fmt = fmt
        # Where a JSON value broken for good is cut short: (markers_from, room, prefixes,
        # find, ...), the scanner's search for the first marker in a span of the text, the
        # longest marker's length, the markers' proper prefixes, and its remembered
        # str.find (see _cut); then its call_reads_at, turn_list, call_re,
        # call_before, cut_symbols and cut_keys (RegionReader.driver); None: never.
        self.cutter = cutter
        self.recheck = 0  # waiting on such a value: the text's length to look again at
        self.quote_wait = None  # (_close.cut's: see _closed_wait)
        # Where a JSON value ends, once the whole text is at hand: the scanner's
        # _repair.BracketIndex, shared by the drivers of one text (see there).
        self.brackets = brackets
        self.c: Compiled = fmt.compiled
        self.firsts = _firsts(self.c)  # (see _Firsts: the lexer asks at each terminal it tries)
        self.start = start
        self.pos = start
        self.stack = [self.c.start_state]
        self.values: list = []
        self.status = WAIT
        self.end = start
        self.tree = None
        self.decode_failed: tuple | None = None  # (see RegionReader.decode)
        self.repairs: list[str] = []
        self.reason = ""
        # Where the frame, open, met text that no token of the grammar starts, no end
        # marker and no call, and not even the first character of a marker of the
        # grammar (prose after a call whose close was left out); -1: not so.
        self.prose_at = -1
        # Set when run() waits on tokens that may still grow and each can tell from
        # a delta alone whether it changes anything (see absorbs()): a list of
        # _Extent (JSON, PYVALUE) and _LoopWait (regex terminals).
        self.hint: list | None = None
        self.extents: dict = {}  # stops -> the _Extent of the token at self.pos
        # terminal -> (token start, a later point its match can be resumed from): a
        # long token of the unrolled-loop shape is not matched from its start again.
        self.resume: dict = {}
        # terminal -> (token start, where the looks of its E characters are not known
        # settled from): see growth._looks_settled.
        self.looks: dict = {}
        # Whether a failure's reason may be shown: then "unexpected …" waits for the
        # text it quotes. (A reading that never shows it clears it. A quiet format's or
        # an anchored region's may be shown too: after calls read, see salvage.)
        self.quotes = True
        # Tokens read from the text (not supplied): how far the grammar got, which
        # picks the failure to report when no candidate reads a region.
        self.taken = 0
        # Every token read from the text and taken, in order (not the supplied ones), as
        # its terminal, start and end, flat: where a call that cannot be read is told, the
        # tokens of its markup, which the tree leaves out (`<parameter=`, `>`, `</parameter>`
        # are filtered out of it), are "markup" segments, not its prose (_scan/mention.py,
        # FailedTokens; issue 19). Only appended to (a Checkpoint keeps its length): the
        # failure's tokens cost no second reading of its text (a storm of told failures
        # read twice was 2x, issue 17). Names and numbers, not the Toks: a list of Toks kept
        # alive is the garbage collector's to go over again and again (+8% on a 32 KB
        # nested cofl value; these are no objects it tracks).
        self.lexed: list = []
        # Only in a replay of a failed region (see salvage_points): after each token
        # read, [its end, the state stack then, whether a call ends there: the next
        # token the text holds finishes a call].
        self.marks: list | None = None
        # Where _close supplied the missing markers (-1: never), and where the last token
        # read from the text ended: what the builder needs to tell what the end cut.
        self.closed_at = -1
        self.last_end = start
        # Where the last value broken for good before a marker was cut, at that marker
        # (_close.cut, open_cut); -1: none was. (The scanner asks what that marker begins:
        # RegionReader.begins_call.)
        self.cut_at = -1
        # Where a payload token closed by the format's end marker (or an end-of-turn token)
        # was cut at a call after its JSON (_call_after_json): (where that call begins, the
        # marker that closed the token, where that marker begins); None: it was not. The
        # scanner takes that marker after the call for the region's close, markup
        # (RegionReader.run).
        self.cut_close: tuple | None = None
        # A list of Python calls whose last call's `)` was left out before the list's `]`,
        # text after it (`[get_weather(city="Paris"] Let me check.`): a value that runs on
        # to the end of a whole text (a `,` or `)` ends it) over a `]` at its depth 0 with
        # text after it. Read on as a reply that ends at that `]` (run), the end of which
        # this is, where the value was (_lex): not on to the end of the reply for every
        # such list, the text after it read again by the next region (quadratic: issue 17).
        # -1: the driver looks for it; None: it does not (a replay, or the region's reading
        # of the value to the end of the reply: _scan/region.py, salvage.list_closed).
        self.listed: int | None = None
        # The storm memo's (_scan/storm.py _certify): a list the values read so (Driver.
        # listed) are noted in, (the format's name, the value's place), by a whole text's
        # reading; and, for a stream's reading of the key's window, the values that whole
        # reading read so (a set of the same, their places in the window). Such a value runs
        # on to the end of the window, and only the text after it tells whether it ends
        # (a `,` or `)` at its depth) or a marker cuts it: the memo checks both in the reply
        # of each region it gives the outcome to (storm._listed_hold), so the stream's
        # reading reads it as the whole text did, up to the list's `]`, once the window
        # holds that `]` and text after it.
        self.listed_log: list | None = None
        self.listed_hint: Any = None
        # So too a Python value's string left open to the end of a whole text, cut at its
        # own format's start marker where a call reads there (_close.cut: _own_call_at):
        # noted in listed_log as (the format's name, the value's place, the marker's); and,
        # for a stream's reading of the key's window, {(name, the value's place): the
        # marker's}, the cut that reading takes as the whole text's did (a stream waits
        # there: the string may yet close). The memo checks that cut, and the call read at
        # the marker, in the reply of each region it gives the outcome to (storm._own_hold).
        self.own_hint: Any = None
        # Such a list's reading up to its `]` under way (run): the end of that `]`; 0: none.
        # Its value read, the list's `]` (which the value took, its extra_bracket) is
        # closed there, the call's `)` supplied before it (closed_tag), and the region
        # reads on past it, as after a list written whole (QA24c R1: `[f(a="x"] [g(b=1)]`
        # is both calls, not f and the next list as prose).
        self.listing = 0
        # The value of that list read already, as the text up to its `]` reads it (_lex:
        # _listed_whole), and taken: run() closes the list there without reading it again.
        self.listed_read = False
        # Where the value _lex just read ends at a `]` written for its call's `)`, a call
        # after it in the list (`[f(a="x"], g(b=1)]`): _run supplies that `)` once the
        # value is taken (-1: none).
        self.paren_due = -1
        self.listed_ends: list | None = None  # (where each list so closed ends: its call's closed_tag)
        # Of those, where a `]` stood for its call's `)` and the list went on (`[f(a="x"],
        # g(b=1)]`): no list closes there, and what breaks after it is a call of the list
        # (a salvage's point there: _scan/salvage.py salvage_one).
        self.paren_ends: list | None = None
        # Where the text ends for that reading up to a list's `]` (run): it reads the whole
        # text, bounded there, as the text cut there reads (a copy of it for each list was
        # the square of the text: issue 17); None: at its end. A step that reads no such
        # bound reads on in the text cut there (tokens.Unbounded, caught by _run).
        self.stop: int | None = None
        # The terminal of that last token (None: none read), and where the text ends when
        # the region ended because the text did (-1: it did not): a whole text (final),
        # nothing but whitespace after the last token read. Then what that end cut is
        # the builder's to tell (cut_value).
        self.last_term: str | None = None
        self.last_start = start
        self.ended = -1
        self.shut: tuple | None = None  # (start, end) of the last JSON value its brackets closed
        self.calls = 0  # calls reduced so far (see salvage_points)
        # Whether a token read from the text left the parser where the frame may be whole
        # (a state that takes $END), or the stack changed otherwise than by such a token (a
        # token supplied, the finish). Without, with no call read, salvage_points tells
        # from this run alone that no point but the last can close the frame: no replay.
        self.may_close = False
        # Narrower, for a reply cut inside its first call: whether a token left a stack
        # short enough to keep a salvage point (_MARK_STACK) that takes $END as it is
        # (table.takes, not by its top state alone as may_close: cofl's value close
        # inside <cofl:tool_calls> has $END among its merged lookaheads), or may_close
        # was set otherwise (a token supplied, the finish). See salvage_points.
        self.may_end = False
        # Whether the region ends at the end of a line where it could end (see _lex): a
        # line-anchored format's, where each line's start literal is a marker of its own
        # (the scanner's, with tools). Without tools only the reply's start opens one,
        # and its lists on the next lines belong to it. line_end: set once it has.
        self.lines = lines
        self.line_end = False
        # A quoted value taken with a stray quote in it (_repair.quoted_end): a call
        # that runs on to the end of the text from there is broken, not cut short
        # (see _scan/salvage.py).
        self.stray = False
        # What was read holds an argument nested deeper than VALUE_DEPTH (the region's
        # decode said so): no shorter reading mends it (see salvage_points).
        self.deep = False
        self.quote_memo: list | None = None  # (see _quoted)
        # (_repair.quoted_end's records of the quotes that no value's end follows, per text
        # read: (text, its record), the last read first; a stream's text, which only
        # grows, is None until the reply ends: see _passed.)
        self.quote_passed: list = []
        # (marker, searched to): how far the search for the delimiter that closes a Gemma
        # string open at that marker went (close.through_loose).
        self.loose_memo: tuple | None = None
        # (marker, where the reading goes on, _bare_end's scan): the end of the last whole
        # call of the format that a Gemma string open at that marker quotes, and how far
        # the look at the bare call after it went (close._quoted_close).
        self.loose_quoted: tuple | None = None
        # Per raw value terminal (VALUE, INLINE_VALUE: both are tried at a place, each
        # with its own pattern), ((token start, stop), where the reading got to, its open
        # tags, the pattern's next stop): how far a stream's look at the tags after a raw
        # value's stop went (nest.py).
        self.nest_memo: dict = {}
        # Per raw value terminal (the looks differ with its pattern), (lo, hi, again): where
        # a stream's reading of a value found every look settled, from lo up to hi; at hi
        # one that is not, looked at again once the text is `again` long (0: hi was the
        # end of the text). See nest._settled.
        self.nest_unsettled: dict = {}
        self.nest_open: tuple | None = None  # ((token start, stop), the openers left open there: nest.py)
        # Per raw value terminal, ((token start, stop), where nest._loose's reading got to,
        # its open tags, where they last all paired): set once the reading of declared
        # tags failed there.
        self.nest_loose: dict = {}
        # Where a reading past a value's stop, at x, meets its next declared tag: x -> (the
        # text that tells it, the tag's start, whether it is an opener that opens a part).
        # See nest._openers_ahead.
        # (Both the text's: RegionReader.driver gives each driver of a text the same two,
        # per nest, Scanner.nest_walks.)
        self.nest_chain: dict = {}
        self.nest_walk: list | None = None  # (the openers nest._openers_ahead met one after another: see there)
        self.nest_found: tuple | None = None  # (the text, and the tags through_nest's readings met in it: see there)
        # Only in a salvage's replay up to a point inside the last call (_scan/salvage.py):
        # the reply goes on in that call past the text read (Builder.goes_on).
        self.goes_on = False
        # A terminal after which run() returns PAUSE, the text not all read (the caller
        # looks at what follows: _scan/pyframe.py, after each list's `]`); None: never.
        self.pause: str | None = None
        self.py: Any = None  # (_scan/pyframe.py's, for this region: see there)
        # (region._read's: the lists in a row pyframe handed over, each the driver read
        # itself; how many more the driver reads before pyframe looks again; the last
        # list's end so counted.)
        self.py_back = (0, 0, -1)
        self.marker_memo: tuple | None = None  # (_first_marker's answers: the text, {(start, stop): answer})
        self.uncut_memo: dict | None = None  # (_uncut_listed's values that close.cut cut nowhere, by their text)
        self.py_from = -1  # (where pyframe.py, handing a list over, had the driver take its first tokens from: region._read)
        self.gem: Any = None  # (_scan/gemframe.py's line pattern, False: none; see there)
        self.gem_at = -1  # (the line start gemframe.py last looked at)
        self.tags: Any = None  # (tagread.py's reader for this grammar, False: none; see _tag_tokens)
        # Where pyframe.py handed the region over to this driver's own lexer in the
        # middle of a list, in order (a salvage reads on from there: pyframe.Checkpoint).
        self.checkpoints: list = []
        # For a salvage's replay of this reading (_scan/salvage.py): Checkpoints after
        # the token whose lookahead finished a call, the last two kept (spots), taken
        # when at least `spot_due` tokens have been read (each costs a copy of the parse
        # stack: spaced by its size, their cost stays a small part of the reading).
        self.spots: list = []
        self.spot_due = 0
        # Before the first call ends, Checkpoints inside it, the last two kept (inner), as
        # spaced as spots: a salvage's replay of a reply cut inside its first call whose
        # last point cannot close the frame starts from one of them, not from the region's
        # start (salvage_points: the points it looks for come after the last token that
        # may close the frame, near the end).
        self.inner: list = []
        self.inner_due = _SPOT_TOKENS
        # Whether a token was read another way than by the lexer's tries that looks.py
        # bounds (a JSON value, a raw value read on past its tags, a close supplied):
        # then the reading looked who knows how far, and no point after is taken up by a
        # salvage's reading of the text cut shorter. `back`: the spots taken before that
        # in a whole text's reading, from the last one at least the format's margin
        # (looks.Looks) behind the newest on (see salvage._taken_up).
        self.far = False
        self.back: list = []
        # A token whose reading looked on past the tags of a raw value (_lalr/nest.py),
        # how far told by nothing simpler than that reading itself: each is kept, with
        # where its lexing began, what it read and the driver before it (a Checkpoint),
        # so that a salvage's reading of the text cut shorter reads it again alone,
        # and takes up a spot after it only where it reads the same (salvage._taken_up).
        self.check = False
        self.checks: list = []
        # Where the last token ends whose replay point (see _keep_mark) keeps its copy
        # of the stack: the stack short after it, or the next token finishing a call (a
        # point after it is dropped by _keep_mark: the replay need not go past it), and
        # `taken` when a token was last supplied (-1: never).
        self.relevant = start
        self.supplied = -1
        # Only in a replay: run() returns PAUSE after the first token ending past it.
        self.halt = _NEVER
        # (The length of the text of the last run(), and whether it was final.)
        self.text: tuple = (0, False)

    # -- the loop ---------------------------------------------------------
    def run(self, buf: str, final: bool, at_marker) -> str:
        """Advance as far as the text allows. `at_marker(buf, pos)` tells whether a
        call marker (of any format) starts at pos: True, False, or None when the
        text ends inside what could still become one."""
        if self.status != WAIT:
            return self.status
        self.text = (len(buf), final)
        status = self._run(buf, final, at_marker)
        while status is LISTED:
            # (The value ran on over the list's `]` to the end of the text: it is read as
            # the text up to that `]` reads it, a reply that ends there (a stream's reading
            # too, so hinted: see listed_hint). Its own values are read by their own scans,
            # not by the index of the whole text, which a text of its own would send back
            # to its start. Then the list is closed at that `]` and the whole text is read
            # on from there: RESUMED; or that reading is the region, ending there.)
            cut = self.listing
            self.text = (cut, True)
            brackets, self.brackets = self.brackets, None
            self.quote_memo = None  # (what it found in the whole text is not this text's)
            status = None
            if self.listed_read:
                # (The value was read so already, and taken: what that text's reading
                # does at its end, which holds nothing more, where it closes the list.)
                self.listed_read = False
                status = self._listed_end(cut)
            if status is None:
                self.stop = cut  # (the whole text read as if cut there: see stop)
                try:
                    status = self._run(buf, True, at_marker)
                finally:
                    self.stop = None
            self.brackets = brackets
            self.listing = 0
            self.quote_memo = None
            if status is RESUMED:
                self.text = (len(buf), final)
                if self.pause is not None and self.pause == self.last_term:
                    status = PAUSE  # (after a list's `]`, as the loop pauses: pyframe reads on)
                else:
                    status = self._run(buf, final, at_marker)
            else:
                buf, final = buf[:cut], True
        return self.after_run(buf, final, status)

    def _listed_whole(self, buf: str, pos: int, cut: int, allowed: Any, extent: _Extent) -> bool:
        """Whether the Python value at pos, which runs on over a list's `]` (cut: just
        past it) in the whole text, is one token up to that `]` in the text cut there, as
        run()'s reading of that text lexes it (the text bounded there, Driver.stop: its
        own lexer, brackets, quotes and markers): so that it is taken now, not read again. Told where that reading
        goes the plain way: the grammar's terminals are pythonic.lark's (pyframe._fits:
        at pos the others each match there as in the whole text, and none did), PYVALUE
        the last the state takes; no marker starts in it (close.cut cuts it nowhere: a
        marker whole in the shorter text is in the whole one, in the same place), or, in
        a quoted value's string, close.cut over that text cuts it nowhere (_uncut_listed); its
        scan (the _Extent run() would take on, over the same characters) finds no `,` or
        `)` at its depth; and a quoted value is a string Python closes before that `]`,
        no other quote in it, only blanks and `]` after it (quoted_end reads no value end
        there: None, as for the whole text's reading that led here). The table shifts it
        (_run takes it as it stands). A replay's marks, a stream's checks, a tag at pos:
        the general way."""
        if self.marks is not None or self.check or self.c.derived.get("pyframe") is not True:
            return False
        if allowed is not self.c.allowed[self.stack[-1]] or allowed[-1].name != "PYVALUE" or buf.startswith("<", self.pos):
            return False
        action = self.c.states[self.stack[-1]].get("PYVALUE")
        if action is None or action[0] is not Shift or self.pause == "PYVALUE":
            return False  # (_run takes it as it stands: no refusal, whose message quotes the text)
        marked = self.cutter and self._first_marker(buf, pos + 1, cut) >= 0
        if buf[pos] in "'\"":
            if "```" in self.fmt.ends:
                return False  # (close.fence_cut reads that text)
            close = _repair.py_string_end(buf, pos)
            if close < 0 or _LISTED_TAIL.fullmatch(buf, close, cut) is None or _repair.first_other(buf, pos) >= 0:
                return False
        elif marked:
            return False
        if not (extent.at == pos and extent.end is None and extent.advance(buf[pos:cut], pos) is None):
            return False
        return not marked or self._uncut_listed(buf, pos, cut)

    def _uncut_listed(self, buf: str, pos: int, cut: int) -> bool:
        """_listed_whole's last question, of a quoted value with a marker in it (in its
        string: only blanks and `]` follow that string's close up to the cut): whether
        that reading cuts it nowhere. That reading's scan stops at the marker (_cut: the
        cut's reading is not bounded so), and reads the value again in the text cut
        there, a text of its own, where _close.cut tells: asked here the same, of the
        same text, as that reading asks it (no index of brackets: run sets none for it),
        a whole text's (final). Where it does not cut, that reading goes on as for a
        value with no marker: the value, read to that text's end, one token (issue 17:
        a storm of `[f(a="x [TOOL_CALLS]"]`, each list read twice). Asked so, it leaves
        the driver as that reading's _cut does (quote_wait None); where it cuts, that
        reading asks it again, and a note of the cut (_close._own_noted, for a string
        left open: none here) is that reading's alone."""
        # (That answer is told by the value's text alone, buf[pos:cut], the end of the text
        # it is asked in: cut reads nothing before pos (the markers, the frames at them,
        # the string's reading, the lines after it: each from pos on), and of the driver
        # only what is its own for the region (its format, grammar, cut, lines). Where
        # cut cut it nowhere, it did no more than set quote_wait None: a value written
        # the same again, a storm of the same list, each asked anew, is not read again.)
        memo = self.uncut_memo
        text = buf[pos:cut]
        if memo is not None and text in memo and self.stop is None:
            self.quote_wait = None
            return True
        log = getattr(self.cutter[4], "__self__", self).listed_log if len(self.cutter) > 4 else None
        noted = len(log) if log is not None else 0
        brackets, self.brackets = self.brackets, None
        try:
            self.quote_wait = None
            if _close.cut(self, buf[:cut], pos, cut, True) is None:
                if self.stop is None:
                    if memo is None or len(memo) >= _UNCUT_MEMO:
                        memo = self.uncut_memo = {}
                    memo[text] = True
                return True
        finally:
            self.brackets = brackets
        if log is not None:
            del log[noted:]
        return False

    def _triple_listed_whole(self, buf: str, pos: int, shut: int, cut: int, allowed: Any) -> bool:
        """Whether the triple-quoted value at pos, whose string closes at `shut` and which
        runs on over a list's `]` (cut: just past it) in the whole text, is one token up
        to that `]` in the text cut there, as run()'s reading of that text lexes it (see
        _listed_whole, whose first conditions are these): the grammar's terminals are
        pythonic.lark's, PYVALUE the last the state takes and shifted as it stands, no
        other terminal taken at pos (best: none), a replay's marks or a stream's checks
        none; and the value's scan from the string's close (the _Extent that reading's
        _triple takes on, over the same characters) finds no `,` or `)` at its depth
        before the cut, where the value then ends (no blank before it: the `]`). Its
        string's quotes inside are its text in either reading, and no marker is looked
        for in a closed one (_triple). That reading read each such list a second time,
        from a copy of the text up to its `]` (issue 17: a storm of `[f(a=\"\"\"x\"\"\"]`)."""
        if self.marks is not None or self.check or self.c.derived.get("pyframe") is not True:
            return False
        if allowed is not self.c.allowed[self.stack[-1]] or allowed[-1].name != "PYVALUE":
            return False
        action = self.c.states[self.stack[-1]].get("PYVALUE")
        if action is None or action[0] is not Shift or self.pause == "PYVALUE":
            return False
        return shut < cut and _Extent(shut, ",)").advance(buf[shut:cut], shut) is None

    def _close_list(self, buf: str) -> str | None:
        """run's reading up to a list's `]` that the last value took: at the end of that
        text, the value read, the `]` closed (the brackets before it, the call's `)`,
        supplied: closed_tag), and RESUMED; None where the grammar closes no list there."""
        n = len(buf) if self.stop is None else self.stop
        if self.pos != n or self.last_term != "PYVALUE" or self.last_end != n:
            return None
        if not self.supply_list_close():
            return None
        marks = self.marks
        if marks is not None:
            # (A replay's point there is between calls, its stack the list's closed: a
            # salvage closes the frame there, prose or a broken call after it.)
            if marks and marks[-1][0] == self.pos:
                marks.pop()
            marks.append([self.pos, list(self.stack), True])
        return RESUMED

    def supply_list_close(self) -> bool:
        """The call and its list closed where the reading stands, their `)` and `]`
        supplied (the brackets before them too): the call's closed_tag (listed_ends). For
        a value that ran over a list's `]` (_close_list) and a value cut where the next
        line's list begins (_close._list_cut). False where the grammar closes no list."""
        plan = _close.plan_before(self.c, self.stack, self.fmt.ends, "]")
        if not plan:
            return False
        close = self.c.derived.get("list_close", False)
        if close is False:  # (the grammar's `]` terminal, looked up once a grammar)
            close = self.c.derived["list_close"] = next((t.name for t in self.c.terminals.values() if t.literal == "]"), None)
        if close is None:
            return False
        for term in (*plan, close):
            self.supply(term)
        # (The call's own repair, not the region's: the calls after the list are whole.)
        if self.listed_ends is None:
            self.listed_ends = []
        self.listed_ends.append(self.pos)
        # (The last token read from the text is that `]`, as after a list written whole:
        # what comes after it is told so, prose after a whole call.)
        self.last_term, self.last_start = close, self.pos - 1
        return True

    def _bracket_for_paren(self, buf: str, pos: int, end: int, final: bool) -> Any:
        """Where the Python value at pos, which a `,` at `end` ends, ends with a lone `]`
        right before that `,`, the first closer at its depth, and a call follows the `,`
        (`[f(a="x"], g(b=1)]`): that `]` is its call's `)`, and the list goes on (QA27 S3:
        the next call was read as a positional argument and lost, or dropped as a value
        cut). Past that `]` (the value's text, its extra_bracket; the `)` is supplied:
        closed_tag), as `[f(a="x"]]` reads. -1: not so (a keyword argument after the `,`:
        `[f(a="x"], b=2)]`, a stray `]` in the value); WAIT: a stream's text ends before
        it tells."""
        j = pos + scalar_end(buf[pos:end], 0, "]")  # (outside its strings: `"x]"]`, issue 19)
        if j >= end or buf[j + 1 : end].strip():
            return -1
        if self.stop is not None:
            raise Unbounded  # (what follows the `,` tells, past the bound)
        m = _CALL_AFTER.match(buf, end + 1, partial=not final)
        if m is None:
            return -1
        if m.partial:
            return WAIT
        return j + 1

    def _comma_after(self, buf: str, name: str, pos: int, start: int | None, end: int, final: bool) -> Any:
        """The Python value at pos, which a `,` at `end` ends, in a list not yet closed
        (Driver._lex; `start`: where its text after the string begins, for a triple-quoted
        one its close, None where that string runs on; else pos): LISTED where `]]` before
        the `,` close its call and the list (twin_before: listing set); the end to read it
        to, that `]`'s end where it stands for its call's `)` (_bracket_for_paren,
        _paren_left_out: paren_due set, _run supplies the `)`), else `end`; WAIT or the
        _CallsTail that waits, while a stream's text cannot tell."""
        close = twin_before(buf, start, end) if start is not None else -1
        if close >= 0:
            self.extents.pop(",)", None)  # (its end is past the text read up to that `]`)
            self.listing = close + 1
            if self.listed == -1:
                self.listed = close + 1
            return LISTED
        lone = self._bracket_for_paren(buf, start, end, final) if start is not None else -1
        if lone == -1:
            lone = self._paren_left_out(buf, name, pos, end, final)
        if lone is WAIT or type(lone) is _CallsTail:
            return lone
        if lone >= 0:
            self.paren_due = lone  # (the value and that `]`, its extra_bracket)
            return lone
        return end

    def _paren_left_out(self, buf: str, name: str, pos: int, end: int, final: bool) -> Any:
        """Where the Python value at pos, which a `,` at `end` ends, is followed by calls
        alone up to the list's `]`, `, g(…)`, `, h(…)`, each closed, then blanks and that
        `]` (`[f(a=["x"], g(b=1)]`, `[f(a="x", g(b=1), h(c=1)]`): the call's `)` was left
        out before that `,`, and the list reads whole with it supplied there (closed_tag),
        going on with g. Where the value ends, its blanks left out (the `)` supplied after
        it); -1: not so, read as before: anything else between g's `)` and the `]`
        (`[f(a="x", g(b=1) c="y"]`, `[f(a="x", g(b=1))]`: g f's positional argument,
        its `)` f's), a closer right after the `]` (`]]`: f's `)`, then the list's), no
        `]`, or a call in no list (_list_after_call) (issue 19: g was read as a positional argument and
        dropped, f `dropped_partial_argument, cut_value`, or the whole list an error with
        tools; fix40's rule, a `]` after g's `)` before any `)`, took the first and lost
        the list). WAIT while a stream's text cannot tell: the _CallsTail of the scan
        then, which resumes as text comes."""
        tails = self.extents.get("tails")
        if tails is None:
            tails = self.extents["tails"] = {}
        tail = tails.get(end)
        if tail is None or tail.n > len(buf) or (tail.final and tail.n != len(buf)):
            # (A new scan: no scan went past this `,`, or one in another text than the one
            # its answer was told in, the text cut at a list's `]` (run: LISTED; _unbound)
            # or the whole one. A scan that went past it, from an earlier `,` of the same
            # calls, tells the same: each `,` between them is read so, g then f's
            # positional argument, once, not each scanning the rest.)
            if self.stop is not None:
                if _CALL_AFTER.match(buf, end + 1, self.stop) is None:
                    return -1  # (no call after the `,`, as in the text cut at stop)
                raise Unbounded  # (what follows that call tells, past the bound)
            if _CALL_AFTER.match(buf, end + 1, partial=not final) is None:
                return -1  # (most values: an argument, or prose, after the `,`)
            tail = tails[end] = _CallsTail(end, tails)
        elif self.stop is not None:
            raise Unbounded
        close = tail.scan(buf, final)
        if close is WAIT:
            return tail
        if close < 0 or not self._list_after_call(name):
            return -1
        while end > pos and buf[end - 1].isspace():
            end -= 1
        return end

    def _list_after_call(self, name: str) -> bool:
        """Whether the table, the value (terminal `name`) taken where the reading stands,
        takes the call's `)` and then the list's `]`: the call an element of a list that
        a `]` closes there (_paren_left_out). Not so for a call written bare, as OLMo 3's
        `<function_calls>f(…)` may be (a `]` there is none of its)."""
        c = self.c
        paren = next((t.name for t in c.terminals.values() if t.literal == ")"), None)
        close = c.derived.get("list_close", False)
        if close is False:  # (the grammar's `]` terminal, looked up once a grammar: supply_list_close)
            close = c.derived["list_close"] = next((t.name for t in c.terminals.values() if t.literal == "]"), None)
        if paren is None or close is None:
            return False
        stack = list(self.stack)
        return step(c, stack, name) and step(c, stack, paren) and step(c, stack, close)

    def _paren_for_bracket(self) -> None:
        """The call's `)` that a `]` stood for (_bracket_for_paren), supplied after its
        value: the call's closed_tag, as for a list closed early (listed_ends)."""
        paren = next((t.name for t in self.c.terminals.values() if t.literal == ")"), None)
        if paren is None or not takes(self.c, self.stack, paren):
            return
        self.supply(paren)
        if self.listed_ends is None:
            self.listed_ends = []
        self.listed_ends.append(self.pos)
        self._list_goes_on(self.pos)

    def _list_goes_on(self, *ends: int) -> None:
        """Note `ends` (of listed_ends) as a `]` written for its call's `)`, the list
        going on after it (paren_ends)."""
        if self.paren_ends is None:
            self.paren_ends = []
        self.paren_ends += ends

    def _comma_list_close(self, buf: str, final: bool) -> Any:
        """A Python call's arguments ended by a `,`, then the list's `]` (`[f(a="x",] ok`):
        the call's `)` left out after a trailing comma, as after a value (supply_list_close:
        the list closed early), read as the well-formed `[f(a="x",)]` reads, its `)`
        supplied (closed_tag). It was all prose, and no error. Told by the stack and that
        `]` alone, which a stream has as parse() does. False where the grammar closes no
        call there, or would close more than the call's `)`. Where a `,` and a call follow
        that `]` (`[f(a="x",], g(b=1)]`), it stood for the call's `)` and the list goes on,
        as _bracket_for_paren reads it after a value: the `)` supplied there, the `]` its
        markup (the next call was prose, untold); WAIT while a stream's text cannot tell."""
        if self.last_term is None or "PYVALUE" not in self.c.terminals:
            return False
        at = _SPACE.match(buf, self.pos).end()
        if not buf.startswith("]", at):
            return False
        comma = self.c.terminals.get(self.last_term)
        if comma is None or comma.literal != ",":
            return False
        plan = _close.plan_before(self.c, self.stack, self.fmt.ends, "]")
        if not plan or any(self.c.terminals[t].literal != ")" for t in plan):
            return False
        after = _COMMA_CALL.match(buf, at + 1, partial=not final)
        if after is not None and after.partial:
            return WAIT
        if self.listed_ends is None:
            self.listed_ends = []
        if after is not None:
            self.pos = at
            for term in plan:
                self.supply(term)
            self.pos = self.last_end = at + 1  # (past the `]`: the call's markup)
            self.last_term, self.last_start = plan[-1], at
            self.listed_ends += (at, at + 1)
            self._list_goes_on(at, at + 1)
            return True
        for term in plan:
            self.supply(term)
        # (The call's closed_tag, not the region's: its span ends at the `)` supplied, or
        # past that `]`, the list's, where the call is the list's only one.)
        self.listed_ends += (self.pos, at, at + 1)
        return True

    def after_run(self, buf: str, final: bool, status: str) -> str:
        """run()'s last step, after the loop (_scan/pyframe.py reads a list without it)."""
        if final and status == DONE and _SPACE_TO_END.match(buf, self.last_end) is not None:
            # (Not when the last token is a JSON value its own brackets closed: the end
            # of the reply cut nothing of it, and a stream, which cannot know the reply
            # ends there, took it as whole: `{'a': {/*'}}` is closed, as by a stream.)
            if not (self.last_term == "JSON" and self.shut == (self.last_start, self.last_end)):
                self.ended = len(buf)
        return status

    def _run(self, buf: str, final: bool, at_marker) -> str:
        self.hint = None
        self.recheck = 0
        c = self.c
        # (token start, state, the text terminals the table offered there only through
        # merged lookaheads, found not taken: lexed again without them; see below).
        refused: tuple | None = None
        sure = c.derived.setdefault("sure_takes", {})  # (takes' first answers: see below)
        while True:
            state = self.stack[-1]
            allowed = c.allowed[state]
            if not allowed and c.accepts_end[state]:
                return self._finish(self.pos)
            at = self.pos
            if refused is not None and refused[0] == at and refused[1] == state:
                allowed = [t for t in allowed if t.name not in refused[2]]
            tags = self.tags
            if refused is None and tags is not False and buf.startswith(_tagread.LEADS if tags is None else tags[3], at):
                if self.stop is not None and at < self.stop and buf.startswith("<", at):
                    buf = self._unbound(buf)
                if self.stop is None and self._tag_tokens(buf, final):
                    continue  # (a plain parameter tag's tokens, each fed as below: tagread.py)
            if self.stop is None:
                tok = self._lex(buf, final, allowed)
            else:
                try:
                    tok = self._lex(buf, final, allowed)
                except Unbounded:
                    # (What it did up to that step, it did as in the text cut at stop: the
                    # caches it filled hold that text's answers, and it goes on from them.)
                    buf = self._unbound(buf)
                    tok = self._lex(buf, final, allowed)
            if tok is LISTED:
                return LISTED  # (see run)
            if self.check and tok is not WAIT:  # (a stream's wait: checked when it is read)
                self._checked(at, tok)
            if tok is WAIT:
                return WAIT
            if tok is None:
                self.far = True  # (what follows looks at the end of the text, or supplies a close)
                if self.listing:
                    status = self._close_list(buf)
                    if status is not None:
                        return status
                if self.stop is not None:
                    buf = self._unbound(buf)
                closed = self._comma_list_close(buf, final)
                if closed is WAIT:
                    return WAIT
                if closed:
                    continue  # (the `]` is lexed next, the list's: see _comma_list_close)
                if not final and (self.fmt.end_of_turn or self.cutter is not None and len(self.cutter) > 5 and self.cutter[5] and "PYVALUE" in self.c.terminals) and _turn_end_next(buf, turn_tokens(self), self.pos, self):
                    # (The format's end-of-turn token, or its start, ends the text so
                    # far: if the reply ends there, it is no text of this region, which
                    # the whole reply is read without: _scan/region.py.)
                    return WAIT
                if self.line_end:
                    return self._finish(self.pos)
                if final:
                    status = self._cut_close(buf, allowed)
                    if status is not None:
                        return status
                if c.accepts_end[state] and self._ends_here():
                    return self._finish(self.pos)
                status = self._close(buf, final, at_marker)
                if status is WAIT_MORE:
                    continue
                return status
            term, end = tok
            # A failure quotes the next 20 characters: near the end of the text, wait
            # for them (so a stream reports what a whole parse does), undoing the
            # reductions the token caused. Only where the failure can be shown.
            # A shift is always taken; only a reduce may fail further on (merged
            # LALR lookaheads), so only then is the parse simulated first.
            stack = self.stack  # (the driver's own list, changed in place by _feed: not put anew in this loop)
            action = c.states[stack[-1]].get(term)
            if action is None or (action[0] is not Shift and not sure.get((stack[-1], term)) and not takes(c, stack, term)):
                # (sure: takes' first answer, told without its call where it was found
                # before; a reduction at each tag token of a value nested deep.)
                self.far = True
                if self.stop is not None:
                    buf = self._unbound(buf)
                literal = self.c.terminals[term].literal
                if action is not None and (literal is None or literal not in self.fmt.ends):
                    # Text the table offers here only through merged LALR lookaheads (a
                    # reduce the frame does not take: cofl's VALUE after a value's close
                    # at the call's level, where the element's rows are shared with a
                    # value nested in a value). No such text goes here: the text is
                    # lexed again without it, and where nothing else fits, the frame
                    # closes as before any text no token starts (prose after a call whose
                    # closes were left out). Asked only of a token already read and
                    # refused (that costs nothing more on the way), and told by the
                    # stack and the token alone, which a stream has as parse() does.
                    # A literal so too, but the format's end markers (closed before,
                    # below): DeepSeek V3's fence close "```" after the arguments of a
                    # call with no fence, offered through the rows `args` shares with a
                    # fenced call's. It failed the region, and the salvage then read the
                    # end of the reply as one cut inside the call (a stream, not knowing
                    # the end, read the call as prose).
                    names = refused[2] if refused is not None and refused[0] == self.pos and refused[1] == state else ()
                    refused = (self.pos, state, (*names, term))
                    continue
                if literal is not None and literal in self.fmt.ends:
                    status = self._close_before(literal)
                    if status is WAIT_MORE:
                        continue
                    return status
                if not final and (self.quotes or self.stray) and self.told(buf) - self.pos <= _SNIPPET:
                    self.hint = [_QuoteWait(self.pos + _SNIPPET)]  # (the token is read: only the quote waits)
                    return WAIT
                if final and _close.cut_closer(self, buf, self.pos, allowed, 0):
                    # (The end cut a closer where a token read as text cannot go: M3's
                    # `]<]` after an element's close. Closed as any closer cut short, not
                    # a failure that a salvage then reads the whole region again to mend.)
                    status = self._cut_close(buf, allowed)
                    if status is not None:
                        return status
                return self._fail(f"unexpected {_snippet(buf, self.pos)}")
            if self.marks is not None:
                self._mark(term)
            calls = self.calls
            due, self.paren_due = self.paren_due, -1
            at = self.pos
            self._feed(Tok(term, buf[at:end], at, end))
            lexed = self.lexed
            lexed.append(term)
            lexed.append(at)
            lexed.append(end)
            top = stack[-1]
            if c.accepts_end[top] or top == c.end_state:
                if not self.may_close:
                    self.may_close = True
                if not self.may_end:
                    self._may_end()
            self.last_start = at
            self.pos = end
            self.last_end = end
            self.last_term = term
            self.taken += 1
            if self.calls != calls:
                # (The point before this token ends a call; the one after it is
                # counted too, the replay reading one token past the last it keeps.)
                self.relevant = end
                if self.taken >= self.spot_due:
                    self._spot()
            elif len(self.stack) <= _MARK_STACK:
                self.relevant = end
                if self.taken >= self.inner_due and not self.calls and self.marks is None:
                    self._inner()
            if self.marks is not None:
                self._keep_mark(end)
                if end > self.halt:
                    return PAUSE
            if term == self.pause:
                return PAUSE
            if due == end and term == "PYVALUE":
                self._paren_for_bracket()
            if self.listed_read:
                return LISTED  # (its value read as the text up to the list's `]` reads it: run)

    def _listed_end(self, cut: int) -> str | None:
        """The reading of the text up to a list's `]` (run: LISTED), its value read and
        taken (_listed_whole), at the end of that text: as _run's loop goes on there (the
        table takes no $END here, nothing is lexed at the end of a whole text, and the
        list is closed: _close_list), RESUMED; None where that loop would do anything
        else (it is run on that text, the general way)."""
        state = self.stack[-1]
        if self.pos != cut or (not self.c.allowed[state] and self.c.accepts_end[state]):
            return None
        self.hint = None
        self.recheck = 0
        self.far = True
        if self.last_term != "PYVALUE" or self.last_end != cut or not self.supply_list_close():
            return None
        return RESUMED

    def take_read(self, buf: str, toks: list) -> None:
        """Take the tokens (terminal, start, end) that a reader of the text read for this
        driver (_scan/pyframe.py: the plain tokens of a list before an argument it hands
        over, `[f(a=` or `, g(b=`, which it read already), one by one, each as _run takes
        the token its lexer reads there: the same token (plain ones, told by the state
        and the text at their place alone, far from the text's end), the same steps
        after it. Not lexed again (their lexing was a third of the driver's reading of a
        list closed before its call's `)`). It stops, the rest left to _run, at any token
        _run would do more at than lex and take it."""
        c = self.c
        n = len(buf)
        if self.stop is not None or self.marks is not None or self.check or self.paren_due != -1 or self.listing or n - toks[-1][2] < c.longest_literal + _close.CUT_ROOM:
            return
        states, sure = c.states, c.derived.setdefault("sure_takes", {})
        allowed, accepts_end, end_state = c.allowed, c.accepts_end, c.end_state
        stack, values, lexed = self.stack, self.values, self.lexed
        for term, at, end in toks:
            state = stack[-1]
            if not allowed[state] and accepts_end[state]:
                return  # (_run finishes there)
            tags = self.tags
            if tags is not False and buf.startswith(_tagread.LEADS if tags is None else tags[3], self.pos):
                return  # (_run asks its tag reader there)
            action = states[state].get(term)
            if action is None or (action[0] is not Shift and not sure.get((state, term)) and not takes(c, stack, term)):
                return
            if term == self.pause or (self.lines and "\n" in buf[self.pos : at]):
                return  # (a line's end before it: _lex tells whether the region ends there)
            calls = self.calls
            self.paren_due = -1
            self.pos = at
            if action[0] is Shift:  # (as _feed takes a shift: no marks here)
                stack.append(action[1])
                values.append(Tok(term, buf[at:end], at, end))
            else:
                self._feed(Tok(term, buf[at:end], at, end))
            lexed.append(term)
            lexed.append(at)
            lexed.append(end)
            top = stack[-1]
            if accepts_end[top] or top == end_state:
                if not self.may_close:
                    self.may_close = True
                if not self.may_end:
                    self._may_end()
            self.last_start = at
            self.pos = end
            self.last_end = end
            self.last_term = term
            self.taken += 1
            if self.calls != calls:
                self.relevant = end
                if self.taken >= self.spot_due:
                    self._spot()
            elif len(stack) <= _MARK_STACK:
                self.relevant = end
                if self.taken >= self.inner_due and not self.calls:
                    self._inner()

    def _unbound(self, buf: str) -> str:
        """The text cut at stop, which a step that reads no such bound reads on (see stop)."""
        buf = buf[: self.stop]
        self.stop = None
        return buf

    # -- lexing -----------------------------------------------------------
    def _lex(self, buf: str, final: bool, allowed):
        """The best token at self.pos: (terminal name, end), None, or WAIT. (The text
        ends at stop where set: a step that reads no such bound raises Unbounded.)"""
        n = len(buf) if self.stop is None else self.stop
        pos = self.pos
        if len(allowed) == 1:
            lit = allowed[0].literal
            if lit and buf.startswith(lit, pos) and pos + len(lit) <= n and not (final and len(lit) < n - pos < self.c.longest_literal + _close.CUT_ROOM):
                # (The one terminal the state takes, a literal, written there: the loop
                # below takes it alone, as it stands (`=` after an attribute's name, at
                # each level of a value nested deep), and nothing else is looked at.)
                return allowed[0].name, pos + len(lit)
        c = self.c
        firsts = self.firsts
        quick = final and not self.resume  # (a plain terminal's match is its token: see below)
        # (The state's own list, not one a refusal filtered: its terminals that may begin
        # with each character, kept per list: see _Starting.)
        starting = None
        if c.allowed.get(self.stack[-1]) is allowed:
            starting = firsts.starting.get(id(allowed))
            if starting is None:
                starting = firsts.starting[id(allowed)] = _Starting(allowed, firsts)
            room = c.longest_literal + _close.CUT_ROOM
            while quick and pos < n and n - pos >= room:
                cands, plain, lead = starting[buf[pos]]
                if not lead and not plain:
                    break
                # (Each terminal that may begin here a literal or a plain one, the
                # whole text at hand, far from its end: the loop below takes each as
                # here, and nothing else; what it finds, it returns as here. A tag's
                # tokens, a key, at each of a thousand parameters: its upkeep was
                # most of their lexing.)
                best = None
                best_len = -1
                best_prio = None
                for t in cands if plain else cands[:lead]:
                    if best_prio is not None and t.priority < best_prio:
                        break
                    lit = t.literal
                    if lit is not None:
                        if not buf.startswith(lit, pos):
                            continue
                        end = pos + len(lit)
                    else:
                        m = t.pattern.match(buf, pos, n)  # (n: see stop)
                        if m is None:
                            continue
                        end = m.end()
                        if end == pos:
                            continue
                    if end - pos > best_len:
                        best, best_len, best_prio = t.name, end - pos, t.priority
                if not plain and (best_prio is None or cands[lead].priority >= best_prio):
                    # (A terminal of another kind comes next, that the loop below takes
                    # or tries there: it reads on from here. Else it breaks there, as
                    # here, at one of a lower priority than what the plain ones before
                    # found: a key before PYVALUE.)
                    break
                if best is not None:
                    self.pos = pos  # (past blanks skipped below, as the loop below sets it)
                    return best, pos + best_len
                # (None there: the loop below, which finds none either, skips the blanks
                # there as here, and goes on after them, here again where it may: `,
                # g(` between calls, each list's `\n[` after the one before.)
                for t in c.ignore:
                    m = t.pattern.match(buf, pos, n)
                    if m and m.end() > pos:
                        if self.lines and pos > self.start and "\n" in buf[pos : m.end()] and self._ends_here():
                            self.pos = pos
                            self.line_end = True
                            return None
                        pos = m.end()
                        break
                else:
                    return None
        json_text = c.json_text
        loose_text = c.loose_text
        nest_text = c.nest.terminals if c.nest is not None else ()
        while True:
            if pos >= n:
                return None if final else WAIT
            best = None
            best_len = -1
            best_prio = None
            grow = False
            stray = False
            # What may still grow, each judged from a delta alone; None: cannot tell.
            growers: list | None = []
            refused = False  # (a JSON value the parser cannot take, still open: see _refused)
            for t in allowed if starting is None else starting[buf[pos]][0]:
                if best_prio is not None and t.priority < best_prio:
                    break
                name = t.name
                if t.literal is not None:
                    lit = t.literal
                    if buf.startswith(lit, pos) and pos + len(lit) <= n:  # (n: see stop)
                        end = pos + len(lit)
                    else:
                        if not final and n - pos < len(lit) and lit.startswith(buf[pos:]):
                            grow = True
                            growers = None
                        continue
                elif (first := firsts[name]) is not None and not first[buf[pos]]:
                    continue  # (no match of it begins with this character: see _Firsts)
                elif first is not None and quick:
                    # A plain terminal (see _Firsts), the whole text at hand, no match of it
                    # to go on with: its match is the token, as the general way below finds.
                    m = t.pattern.match(buf, pos, n)
                    if m is None:
                        continue
                    end = m.end()
                    if end == pos:
                        continue
                elif name == "JSON":
                    if buf[pos] not in "{[":
                        continue
                    if self.stop is not None:
                        raise Unbounded
                    self.far = True
                    # The pattern must match where the value starts (it may say more than
                    # its first character: `/\[\s*\{/` is a list of objects).
                    m = t.pattern.match(buf, pos) if final else t.pattern.match(buf, pos, partial=True)  # (regex: passing partial= costs more than a short match)
                    if m is None:
                        continue
                    if m.partial:
                        grow = True
                        growers = None
                        continue
                    if final and self.brackets is not None:
                        end = self.brackets.end(buf, pos)
                    else:
                        extent = self._extent(pos, None)
                        end = extent.advance(buf, 0)
                    slipped = self._slipped(buf, pos, end, final)
                    if slipped is not None:
                        if slipped >= 0:
                            end = slipped
                        else:
                            # (Whether the other quote closed a string in it, more text
                            # tells: looked at again once the text has grown by a quarter.)
                            if growers is not None:
                                self.hint = [*growers, _HOLD]
                                self.recheck = n + max(16, (n - pos) // 4)
                            if self._refused(name, pos, n, buf):
                                refused = True
                                continue
                            return WAIT
                    # A value broken for good before a marker ends there: the region
                    # does not swallow the calls after it (see _cut).
                    cut = self._cut(buf, pos, end, final) if self.cutter else None
                    if cut is not None and cut is not WAIT:
                        end = cut
                    elif end is not None and cut is None:
                        self.shut = (pos, end)  # (its brackets closed it: see run)
                    elif end is None or cut is WAIT:
                        if not final:
                            if end is not None:
                                # Closed, but a marker may still start before its end: _cut
                                # tells once the text runs `room` past the end (see _settling).
                                if growers is not None:
                                    self.hint = [*growers, self._closed_wait(end)]
                            elif growers is not None:
                                self.hint = [*growers, extent]
                                self.recheck = n + max(16, (n - pos) // 4)  # (_cut looks again then)
                            if self._refused(name, pos, n, buf):
                                refused = True  # (the other terminals tell whether that settles it)
                                continue
                            return WAIT
                        end = n  # truncated: the decoder closes it
                elif name == "PYVALUE":
                    if buf[pos].isspace() or buf[pos] in ",)]":
                        continue
                    if self.cutter and buf[pos] in self.cutter[2] and not buf[pos].isalnum() and self._marker_at(buf, pos, n):
                        # (A bare value cannot begin with a call's marker, `b=<tool_call>{…}`,
                        # `b=[TOOL_CALLS][{…}]`, `b=```json`: no value there; the marker's call
                        # is read, and this call, cut there, told (mention._broken_at_marker):
                        # QA27b S2. The markers are the scanner's (cutter: its cut search, and
                        # the prefixes of its markers for a first look), each format's start
                        # markers of three characters or more, but those that begin with a
                        # letter or digit: `functools`, `Action:` are words, and a bare value
                        # is words too (`a=functools.partial`). A stream sees it once the
                        # marker is whole, as the value's scan looks again.)
                        continue
                    self.far = True
                    triple = triple_quote(buf, pos, n) if buf[pos] in _TRIPLE_FIRST else None
                    if triple is not None:
                        if self.stop is not None:
                            raise Unbounded
                        # (A triple-quoted string: its quotes inside are its text.)
                        end, waits_on = self._triple(buf, pos, triple, final)
                        if end is None:
                            grow = True
                            if growers is not None:
                                growers.append(waits_on)
                            continue
                        if end >= n and final and self.listed is not None and not self.listing and self.brackets is not None:
                            # (Its string closed, and nothing ends the value after it: over a
                            # list's `]` with text after it, read up to that `]`, as any other
                            # value is (`[f(a="""x"""] [g()]` reads as `[f(a="x"] [g()]`: f,
                            # then g; below). The `]` looked for after the string's close: its
                            # quotes inside are its text.)
                            shut = triple_end(buf, pos, triple)
                            close = self.brackets.list_close(buf, shut) if shut is not None else None
                            if close is not None and _SPACE_TO_END.match(buf, close + 1) is None and not self._call_before_close(buf, pos, close):
                                self.listing = close + 1
                                if self.listed == -1:
                                    self.listed = close + 1
                                if self.listed_log is not None:
                                    self.listed_log.append((self.fmt.name, pos))
                                if best is None and self._triple_listed_whole(buf, pos, shut, close + 1, allowed):
                                    # (Read so in that text: taken now, not read again there.)
                                    self.listed_read = True
                                    self.pos = pos
                                    return name, close + 1
                                return LISTED
                        if end < n and self.listed is not None and not self.listing and buf.startswith(",", end):
                            # (A `,` ends it: a `]` or `]]` before it, after the string's
                            # close, read as after any other value (below): `[f(a="""x"""],
                            # g(b=1)]` is both calls, as `[f(a="x"], g(b=1)]` (issue 19: g
                            # was lost). Looked for past the string: its quotes and brackets
                            # inside are its text.)
                            got = self._comma_after(buf, name, pos, triple_end(buf, pos, triple), end, final)
                            if type(got) is not int:
                                if got is LISTED:
                                    return LISTED
                                grow, growers = True, _grown(growers, got)  # (the text or the calls after the `,` tell)
                                continue
                            end = got
                        while end > pos and buf[end - 1].isspace():
                            end -= 1
                        if end - pos > best_len:
                            best, best_len, best_prio = name, end - pos, t.priority
                        continue
                    extent = self._extent(pos, ",)")
                    # A quoted value with its own quotes inside, unescaped: where the
                    # call's structure says it ends (see _repair.quoted_end).
                    fenced = _close.fence_cut(self, buf, pos) if buf[pos] in "'\"" else -1
                    quoted = self._quoted(buf, pos, final) if buf[pos] in "'\"" else None
                    if fenced >= 0 and type(quoted) is _repair.QuoteWait:
                        # (Only a quote of the other kind before the fence can end the value
                        # before it, _repair._other_close; any other end quoted_end may find
                        # is past Python's string's close, past the fence: none such, and
                        # the fence ends it, whatever text comes. A stream waited on the
                        # text after the fence (`print("hi` then ``` and a Hermes call: the
                        # call was sent at flush, not as it came).)
                        other = _repair.first_other(buf, pos)
                        if other < 0 or other > fenced:
                            quoted = None
                    if fenced >= 0 and type(quoted) is not _repair.QuoteWait:
                        # (A value the call's structure ends before its fence's close is
                        # not left open there: `f(query='x",query='y),` then ``` is the
                        # `"` slipped for the `'`, a `query` given twice, not one value
                        # over the list's lines up to the fence. Asked in that order in a
                        # stream too, which took the structure's end while the fence had
                        # not come: fence_cut answers -1 until it has. Where the text so
                        # far cannot tell, the stream waits, as for any value.)
                        if type(quoted) is tuple and quoted[1] is not False and quoted[0] <= fenced:
                            fenced = -1
                        else:
                            quoted = None
                    if quoted is _repair.OPEN:
                        # (Python's string has not closed yet: the extent waits on it, and
                        # the value is looked at again with the recheck.)
                        quoted = None
                    if type(quoted) is _repair.QuoteWait:
                        grow = True
                        if extent.advance(buf, 0) is None:  # (a grower scans on from the end of the text)
                            if growers is not None:
                                growers += [extent, quoted]
                        elif growers is not None:
                            # (Its end found already, which no text after changes: only what
                            # quoted_end waits on, _ValueWait. A grower that has ended takes
                            # no delta: a value whose look waits on the quotes to come was
                            # read again at each, 1-character deltas 6x parse().)
                            growers += [quoted, _ValueWait.of(self, buf, self.quote_memo[4] is not None)]
                        continue
                    if fenced >= 0:
                        end, cut = fenced, None  # (a string left open at its fence's close: _close.fence_cut)
                    elif quoted is not None and quoted[1] is not False:
                        # (Its quotes inside pair up: it is read whole. None: a stray quote
                        # in it, and Python's reading never ends the call: the value is
                        # what the call's structure ends, and cannot be read.)
                        end = quoted[0]
                        cut = None
                        if self.cutter and quoted[1] is not _repair.MISMATCHED:
                            # (Unless a marker in Python's string cuts it, as a stream cut it
                            # before that string's close came: _close.open_cut.)
                            if self.stop is not None:
                                raise Unbounded
                            cut = _close.open_cut(self, buf, pos, final)
                            if cut is not None and cut is not WAIT:
                                quoted = None
                                self.cut_at = cut
                    else:
                        if self.brackets is not None and (final or (extent.at == pos and extent.end is None)):
                            # A whole text: one index for all its values, as for JSON (a scan of
                            # each value that never ends ran to the end of the text: once a call).
                            # A stream's too, at a value's first look: its text so far is one
                            # text for all the values met in it (a delta of many calls, each
                            # value cut at a marker, scanned to its end once a call, the square
                            # of it); the extent scans on from the end only where it waits.
                            end = None if _repair.open_known(buf, pos) else self.brackets.argument_end(buf, pos)
                            if end is not None:
                                extent.end = end  # (the same answer: a later delta's look takes it)
                        else:
                            end = extent.advance(buf, 0, self.stop)
                        # (Cut as a JSON value is: `city="Par"is")]` must not run on.)
                        cut_at = self.cut_at
                        cut = self._cut(buf, pos, end, final) if self.cutter else None
                        if end is None and not final and self.listed is not None and not self.listing and self.brackets is not None and self._cut_past_list(buf, cut):
                            # (A stream's: a value cut at a marker after a list's `]` it ran
                            # on over is read up to that `]` at the end of the reply, as
                            # parse() reads it (below); until then it is open, as where no
                            # marker came.)
                            close = self.brackets.list_close(buf, pos)
                            if close is not None and close < cut and not self._call_before_close(buf, pos, close):
                                self.cut_at = cut_at
                                cut = WAIT
                        if end is None and final and self.listed is not None and not self.listing and self.brackets is not None and (cut is None or self._cut_past_list(buf, cut)):
                            # (It runs on to the end of the text: over a list's `]` with text
                            # after it? Told by one index for the text's values: see listed.
                            # So too where it was cut at a call marker after that `]`: the
                            # list closed before the marker, which the text up to that `]`
                            # does not hold (`[f(a="x <tool_call>"] ok` twice: the first
                            # value ran on to the second's marker, and the first list was
                            # prose, silently; `[f(a=1] ok <tool_call>{…}`: f lost).)
                            close = self.brackets.list_close(buf, pos)
                            if close is not None and cut is not None and (close >= cut or self._call_before_close(buf, pos, close)):
                                close = None
                            if close is not None and _SPACE_TO_END.match(buf, close + 1) is None:
                                self.cut_at = cut_at  # (not cut there: read up to the `]`)
                                self.listing = close + 1
                                if self.listed == -1:
                                    self.listed = close + 1
                                if self.listed_log is not None:
                                    self.listed_log.append((self.fmt.name, pos))
                                if best is None and self._listed_whole(buf, pos, close + 1, allowed, extent):
                                    # (Read so in that text: taken now, not read again there.)
                                    self.listed_read = True
                                    self.pos = pos
                                    return name, close + 1
                                return LISTED
                        elif end is not None and cut is None and self.listed is not None and not self.listing and buf.startswith(",", end):
                            # (A `,` ends it, but after `]]` at its depth: the call's `)` written
                            # as a `]`, then the list's (twin_close), read as the list closed
                            # there, whatever follows (QA26 S3: `[f(a="x"]],h()` read `,h()` as
                            # more arguments, dropped; `[f(a="x")],h()` is the call, then prose).
                            # Not a `)`: there the call closes, the `]]` before it stray
                            # (`[f(a="x"]]), g(b=1)]`: f and g, QA26b). Told by the text up to
                            # that stop: a stream, once it has come, as parse().)
                            got = self._comma_after(buf, name, pos, pos, end, final)
                            if type(got) is not int:
                                if got is LISTED:
                                    return LISTED
                                grow, growers = True, _grown(growers, got)  # (the text or the calls after the `,` tell)
                                continue
                            end = got
                        elif end is None and (cut is None or cut is WAIT) and not final and self.listed is not None and not self.listing and self.listed_hint is not None and (self.fmt.name, pos) in self.listed_hint:
                            # (A stream's reading of a storm memo's window, told that the whole
                            # text's reading read this value so: read up to the list's `]`, as
                            # that reading did, once the window holds it and text after it.)
                            close = scalar_end(buf, pos, "]")
                            close = twin_close(buf, close) if close < n else close
                            if close < n and _SPACE_TO_END.match(buf, close + 1) is None:
                                self.listing = close + 1
                                if self.listed == -1:
                                    self.listed = close + 1
                                return LISTED
                    held = False  # (a string left open, ended at the format's marker: _close.cut)
                    if cut is not None and cut is not WAIT and _close.element_cut(self, buf, pos, cut):
                        continue  # (an element of it began at a call's marker: no value, as above)
                    if cut is not None and cut is not WAIT:
                        # (Its whitespace before the marker is the string's, as in JSON; in a
                        # stream too, which may cut it before the end: told by the text up to
                        # the marker, as parse() tells it.)
                        held = buf[pos] in "'\"" and _repair.PY_STRING[buf[pos]].match(buf, pos, cut).group(1) is None
                        end = cut
                    elif end is None or cut is WAIT:
                        closed = end is not None
                        if end is None:
                            end = n
                            if not final:
                                extent.advance(buf, 0)  # (scanned to the end: it grows from there)
                        if not final:
                            grow = True
                            if growers is None:
                                pass
                            elif closed:
                                # (Python's reading closed it; _cut waits on a marker that may
                                # still start before that end: see _settling.)
                                growers.append(self._closed_wait(end))
                            else:
                                growers.append(extent)
                                self.recheck = n + max(16, (n - pos) // 4)
                    while end > pos and buf[end - 1].isspace() and not held:
                        end -= 1
                    if end == pos:
                        continue
                    # A stray quote (`city="Par"is", unit="C")`): the value runs on as Python
                    # reads it, and cannot be read. The call went on after it, so where the
                    # value runs to the end of the reply, that is no reply cut short there
                    # (_scan/salvage.py).
                    stray = quoted is not None and not quoted[1]
                else:
                    if quick and name in nest_text and self.stop is None and name not in json_text and name not in loose_text:
                        # (A value of an XML-ish format, the whole text at hand, no match to
                        # go on with: what the general way below does with it, told at once,
                        # where its match is the token or none begins here. A value at each
                        # of a thousand parameters went through each of its questions. The
                        # rest, a value that begins at a tag, is the general way's.)
                        m = t.pattern.match(buf, pos, n)
                        if m is None:
                            if buf[pos] != "<" and self.far:
                                continue  # (no tag here, the reading far: no value, as below)
                        else:
                            end = m.end()
                            if end == pos:
                                continue
                            if end < n:
                                self.check = True  # (it reads on past the tags: see looks.py)
                                through = _nest.through_nest(self, t, buf, pos, end, final)
                                if through is not None:
                                    if type(through) is int:
                                        end = through
                                    else:  # (WAIT, with what to wait on, or None: cannot tell)
                                        grow = True
                                        if growers is not None and through[1] is not None:
                                            growers.append(through[1])
                                        else:
                                            growers = None
                                        continue
                                if end == pos:
                                    continue
                            if end - pos > best_len:
                                best, best_len, best_prio = name, end - pos, t.priority
                            continue
                    if self.stop is not None and (name in json_text or name in loose_text or name in nest_text or name in self.resume):
                        raise Unbounded
                    if name in json_text or name in loose_text:
                        self.far = True
                    if name in json_text and (
                        _CALL_TAG_FIRST if name in self.c.call_text else _TAG_FIRST
                    ).match(buf, pos) is not None:
                        # A payload read as JSON cannot begin with a tag (`<tool_call>` then
                        # `<function=…>`): no match, at once, rather than a payload that runs to
                        # the end of the reply and fails there (the next format reads it).
                        continue
                    at = pos
                    pattern = t.pattern
                    resume = self.resume.get(name)
                    if resume is not None and resume[0] == pos:
                        # A long token seen before: its match goes on as from there.
                        if not self.far:
                            # (Its loop's, read on: it looks where the match from pos would.)
                            looks = _looks.of(self.c, _close.CUT_ROOM + self.c.longest_literal)
                            self.far = looks is None or name not in looks.loops
                        at = resume[1]
                        pattern = resume[2] or pattern
                    m = pattern.match(buf, at, n) if final else pattern.match(buf, at, partial=True)  # (regex: passing partial= costs more than a short match)
                    if m is None:
                        if name not in nest_text or at != pos:
                            continue
                        if buf[pos] != "<" and self.far and name not in json_text and name not in loose_text and (final or not _nest.cut_tag(buf, pos)):
                            # (No tag begins here: whether the parser takes one or not, the
                            # value's reading below ends where it began, no value. Once the
                            # reading is far, the checks it would note tell nothing.)
                            continue
                        if buf.startswith("</", pos):
                            self.check = True  # (foreign_run reads the run of close tags)
                        if self._shifts_at(buf, pos, allowed):
                            # (Unless the tag is a run of close tags in another spelling than
                            # the value's own, which reaches that own close: a value that
                            # only quotes closers, `</parameter></invoke> ` in a MiniCPM5
                            # value, as where text comes before them: nest._foreign_run.)
                            run = _nest.foreign_run(self, buf, pos, final)
                            if run is None:
                                continue
                            if type(run) is not int:
                                grow = True
                                growers = None
                                continue
                        # (A raw value may begin with a declared tag, `<invoke …>` glued to
                        # its parameter's `>`: its pattern matches nothing there, and the
                        # tags are read below as for a value that stopped at one. Not where
                        # the parser takes that tag as it stands, GLM's `<arg_value>` after
                        # `</arg_key>`: only where it would supply a left-out close first.)
                        end = pos
                    else:
                        end = m.end()
                    # A match may still change when more text arrives: it touches the
                    # end, or the engine tried a way that ran into the end first
                    # (`match` gives "```" for /```(?:json)?/ on "```j", not a partial).
                    growing = m is not None and not final and (end >= n or _could_grow(t, buf, pos))
                    if growing:
                        grow = True
                        if growers is not None:
                            loop = _loop_wait(t, buf, at, n, pos, self.looks) if end >= n else None
                            if loop is None:
                                growers = None
                            else:
                                growers.append(loop)
                                if loop.resume is not None:
                                    self.resume[name] = (pos, *loop.resume)
                                if loop.near is not None:
                                    loop.owner = (self.resume, name, pos)  # (see _LoopWait.absorbs)
                    if m is not None and (m.partial or end == pos):
                        continue
                    through = None
                    if end < n and name in json_text:
                        through = self._through(t, buf, pos, end, final)
                    elif end < n and name in loose_text:
                        through = _close.through_loose(self, t, buf, pos, end, final)
                    elif end < n and name in nest_text:
                        self.check = True  # (it reads on past the tags: see looks.py)
                        through = _nest.through_nest(self, t, buf, pos, end, final)
                    if through is not None:
                        if type(through) is int:
                            end = through
                        else:  # (WAIT, with what to wait on, or None: cannot tell)
                            grow = True
                            if growers is not None and through[1] is not None:
                                growers.append(through[1])
                            else:
                                growers = None
                            continue
                    if end == pos:
                        continue  # (no value there: see above)
                    if not growing and name in json_text and self.cutter is not None and len(self.cutter) > 6:
                        # (Once the token is settled: asked at each delta while it may grow,
                        # the search over its text cost the square of its length.)
                        call = self._call_after_json(buf, pos, end)
                        if call > pos:
                            end = call
                if end - pos > best_len:
                    best, best_len, best_prio = name, end - pos, t.priority
            if refused:
                if best is None and not grow:
                    # Wherever the value ends, it is the token here, and the parser fails
                    # on it (_run): the whole text's answer, given now, not at its end.
                    self.pos = pos
                    return "JSON", pos + 1
                return WAIT  # (as the value's own wait would, its hint set above)
            if grow:
                self.hint = growers or None
                return WAIT
            if best is not None and final and best_len < n - pos < self.c.longest_literal + _close.CUT_ROOM:
                if self.stop is not None:
                    raise Unbounded
                if _close.cut_closer(self, buf, pos, allowed, best_len):
                    return None  # (a closer cut short: _run's cut_close reads it)
            if best is not None:
                self.pos = pos
                if stray and best == "PYVALUE":
                    self.stray = True
                return best, pos + best_len
            # Nothing fits: skip %ignore'd text, but the region never ends inside it.
            skipped = False
            for t in self.c.ignore:
                m = t.pattern.match(buf, pos, n)
                if m and m.end() > pos:
                    if self.lines and pos > self.start and "\n" in buf[pos : m.end()] and self._ends_here():
                        # A line-anchored region (a call list) that could end here ends at
                        # the end of its line: a list on the next line is found as a marker
                        # of its own. (Read as one region, each of N lines would start a
                        # region running to the last one when the whole fails: N² work.)
                        self.pos = pos
                        self.line_end = True
                        return None
                    if m.end() >= n and not final:
                        return WAIT
                    pos = m.end()
                    skipped = True
                    break
            if not skipped:
                return None

    def _tag_tokens(self, buf: str, final: bool) -> bool:
        """Read the tokens of a plain parameter tag at self.pos, each as the loop in
        _run would lex and feed it (see tagread.py); False when none was read. In a
        whole text read far (final; no replay, stop or match to go on with), the value
        after the tag too where _plain_value tells it at once, and so on through the
        parameters that follow, each tag and value as _run's loop would read them: a
        run of parameters read in one loop (a call of a thousand parameters whose closes
        were left out went round _run's loop, _lex's and through_nest's questions, for
        each value)."""
        got = self.tags
        if got is None:
            got = self.tags = _tagread.reader(self.c)
            if got is False:
                return False
        if not _tagread.on() or self.marks is not None or self.pause is not None or self.lines or self.check:
            return False
        pattern = got[0]
        pos = self.pos
        n = len(buf)
        m = pattern.match(buf, pos)
        if m is None:
            return False
        c = self.c
        room = c.longest_literal + _close.CUT_ROOM
        if n - m.end() < room:
            return False  # (near the end of the text: _lex's)
        plan0, by_literal, leads = got[1], got[2], got[3]
        firsts = self.firsts
        accepts_end, end_state, allowed_of = c.accepts_end, c.end_state, c.allowed
        stack, values, lexed = self.stack, self.values, self.lexed
        resume = self.resume
        steps = firsts.tag_steps
        macros = firsts.tag_macros
        # (Where the last token taken ends, and the rest of _run's upkeep after it: kept
        # here, written to the driver once, after the tag, or before a checkpoint reads it.)
        read = False
        taken, inner_due, relevant = self.taken, self.inner_due, self.relevant
        last_start = last_end = -1
        last_term = None
        # (Whether the values are read here too: see _plain_value. The stop, the replay's
        # marks, a pause, a match to go on with and a list read to its `]` do not change
        # on the way.)
        run = final and self.far and not resume and self.stop is None and not self.listed_read
        plans = got[4] if len(got) > 4 else None
        if run:
            steps = firsts.tag_steps_far  # (told for a whole text read far: see _tag_step)
        if not run:
            # (One tag, its tokens one by one: a stream's, a replay's, a reading not yet
            # far, a tag that opens a call of its own.)
            spans = m.regs  # (each group's span, read at once: a tag's pattern has a dozen groups, most of them absent)
            if plans is not None:
                # (The plan of the groups this match has, told by its optional parts: see
                # tagread._build_invoke's `plans`.)
                (lead, opener, kind), by_parts = plans
                plan0 = by_parts[spans[lead][0] >= 0, spans[opener][0] >= 0, kind is not None and spans[kind][0] >= 0]
            for group, term in plan0:
                s, e = spans[group]
                state = stack[-1]
                if term == "kind":
                    term = by_literal[buf[s:e]]
                key = (state, buf[s], term)
                step = steps.get(key)
                if step is None:
                    step = steps[key] = self._tag_step(state, buf[s], term)
                if step is False:
                    break  # (_run finishes there; or the lexer's token is not told so; or refused)
                verdict, action, sure = step
                if verdict:
                    # (Literals that begin with this character too: the lexer takes the
                    # longest, a literal before a pattern of its length. None may match.)
                    if buf.startswith(verdict, s):  # (verdict: a tuple of literals, any of which)
                        break
                if term is None:
                    continue  # (blanks that no terminal of the state begins: _lex skips them)
                if resume and any(r[0] == s for r in resume.values()):
                    break  # (a match to go on with, this token's or another's that may begin here: _lex's)
                if not sure and not takes(c, stack, term):
                    break  # (refused: _run's)
                # (What _run does with a token _lex read; a shift, the commonest, as _feed
                # takes it: no marks here. Only a reduction changes the calls read.)
                if action[0] is Shift:
                    stack.append(action[1])
                    values.append(Tok(term, buf[s:e], s, e))
                    lexed.append(term)
                    lexed.append(s)
                    lexed.append(e)
                    more = False
                else:
                    calls = self.calls
                    self._feed(Tok(term, buf[s:e], s, e))
                    lexed.append(term)
                    lexed.append(s)
                    lexed.append(e)
                    more = self.calls != calls
                top = stack[-1]
                if accepts_end[top] or top == end_state:
                    if not self.may_close:
                        self.may_close = True
                    if not self.may_end:
                        self._may_end()
                last_start, last_end, last_term = s, e, term
                taken += 1
                read = True
                if more:
                    relevant = e
                    if taken >= self.spot_due:
                        self.last_start, self.pos, self.last_end, self.last_term, self.taken, self.relevant = s, e, e, term, taken, e
                        self._spot()
                elif len(stack) <= _MARK_STACK:
                    relevant = e
                    if taken >= inner_due and not self.calls and self.marks is None:
                        self.last_start, self.pos, self.last_end, self.last_term, self.taken, self.relevant = s, e, e, term, taken, e
                        self._inner()
                        inner_due = self.inner_due
            if read:
                self.last_start, self.pos, self.last_end, self.last_term, self.taken, self.relevant = last_start, last_end, last_end, last_term, taken, relevant
            return read
        while True:
            spans = m.regs  # (each group's span, read at once: a tag's pattern has a dozen groups, most of them absent)
            if plans is not None:
                # (The plan of the groups this match has, told by its optional parts: see
                # tagread._build_invoke's `plans`.)
                (lead, opener, kind), by_parts = plans
                plan = by_parts[spans[lead][0] >= 0, spans[opener][0] >= 0, kind is not None and spans[kind][0] >= 0]
            else:
                plan = plan0
            whole = True
            # (The tag's tokens the general way (below) up to its first one fed, which may
            # reduce what came before (the last parameter); then those after it, all
            # shifts where the tag was read so before from the same state: told by the
            # tag's macro (each token's first character and the literals that must not
            # match there as before, its state as then), each taken as below.)
            idx = 0
            stop = len(plan)
            fed = False
            recording: list | None = None
            while True:
                while idx < stop:
                    group, term = plan[idx]
                    idx += 1
                    s, e = spans[group]
                    state = stack[-1]
                    if term == "kind":
                        term = by_literal[buf[s:e]]
                    key = (state, buf[s], term)
                    step = steps.get(key)
                    if step is None:
                        step = steps[key] = self._tag_step(state, buf[s], term, True)
                    if step is False:
                        whole = False
                        break  # (_run finishes there; or the lexer's token is not told so; or refused)
                    verdict, action, sure = step
                    if verdict:
                        # (Literals that begin with this character too: the lexer takes the
                        # longest, a literal before a pattern of its length. None may match.)
                        if buf.startswith(verdict, s):  # (verdict: a tuple of literals, any of which)
                            whole = False
                            break
                    if term is None:
                        if recording is not None:
                            recording.append((group, None, buf[s], verdict, None, False, True))
                        continue  # (blanks that no terminal of the state begins: _lex skips them)
                    if resume and any(r[0] == s for r in resume.values()):
                        whole = False
                        break  # (a match to go on with, this token's or another's that may begin here: _lex's)
                    if not sure:
                        if not takes(c, stack, term):
                            whole = False
                            break  # (refused: _run's)
                        recording = None  # (a macro holds tokens the table takes whatever the stack)
                    # (What _run does with a token _lex read; a shift, the commonest, as _feed
                    # takes it: no marks here. Only a reduction changes the calls read.)
                    if action[0] is Shift:
                        stack.append(action[1])
                        values.append(Tok(term, buf[s:e], s, e))
                        lexed.append(term)
                        lexed.append(s)
                        lexed.append(e)
                        more = False
                    else:
                        calls = self.calls
                        self._feed(Tok(term, buf[s:e], s, e))
                        lexed.append(term)
                        lexed.append(s)
                        lexed.append(e)
                        more = self.calls != calls
                        if more:
                            recording = None
                    top = stack[-1]
                    if accepts_end[top] or top == end_state:
                        if not self.may_close:
                            self.may_close = True
                        if not self.may_end:
                            self._may_end()
                    if recording is not None:
                        recording.append((group, term, buf[s], verdict, top, accepts_end[top] or top == end_state, action[0] is Shift))
                    last_start, last_end, last_term = s, e, term
                    taken += 1
                    read = True
                    if more:
                        relevant = e
                        if taken >= self.spot_due:
                            self.last_start, self.pos, self.last_end, self.last_term, self.taken, self.relevant = s, e, e, term, taken, e
                            self._spot()
                    elif len(stack) <= _MARK_STACK:
                        relevant = e
                        if taken >= inner_due and not self.calls and self.marks is None:
                            self.last_start, self.pos, self.last_end, self.last_term, self.taken, self.relevant = s, e, e, term, taken, e
                            self._inner()
                            inner_due = self.inner_due
                    if not fed:
                        fed = True
                        break
                if not whole or idx >= len(plan):
                    break
                # (After its first token fed: the rest by the macro of this state.)
                stop = len(plan)
                if resume:
                    continue
                mkey = (stack[-1], plan, idx)
                macro = macros.get(mkey)
                if macro is None:
                    if len(macros) < 1024:
                        recording = [mkey, idx]
                    continue
                for group, term, ch, verdict, top, ends, shift in macro:
                    s, e = spans[group]
                    if buf[s] != ch or (verdict and buf.startswith(verdict, s)):
                        break  # (told otherwise: the general way from this token on)
                    idx += 1
                    if term is None:
                        continue
                    if shift:
                        stack.append(top)
                        values.append(Tok(term, buf[s:e], s, e))
                        lexed.append(term)
                        lexed.append(s)
                        lexed.append(e)
                        more = False
                        reached = top
                    else:
                        # (A reduction: its trees made by _feed, its upkeep as the general
                        # way's; where it leaves another state than told, the rest of the
                        # tag is read the general way.)
                        calls = self.calls
                        self._feed(Tok(term, buf[s:e], s, e))
                        lexed.append(term)
                        lexed.append(s)
                        lexed.append(e)
                        more = self.calls != calls
                        reached = stack[-1]
                        ends = accepts_end[reached] or reached == end_state
                    if ends:
                        if not self.may_close:
                            self.may_close = True
                        if not self.may_end:
                            self._may_end()
                    last_start, last_end, last_term = s, e, term
                    taken += 1
                    if more:
                        relevant = e
                        if taken >= self.spot_due:
                            self.last_start, self.pos, self.last_end, self.last_term, self.taken, self.relevant = s, e, e, term, taken, e
                            self._spot()
                    elif len(stack) <= _MARK_STACK:
                        relevant = e
                        if taken >= inner_due and not self.calls and self.marks is None:
                            self.last_start, self.pos, self.last_end, self.last_term, self.taken, self.relevant = s, e, e, term, taken, e
                            self._inner()
                            inner_due = self.inner_due
                    if reached != top:
                        break
            if recording is not None and whole and recording[1] < len(plan):
                macros[recording[0]] = tuple(recording[2:])
            if not whole or not run:
                break
            # The value after the tag, where _plain_value tells it, read as _run reads the
            # token _lex gives (a shift: no marks, no pause; it changes no calls).
            pos = last_end
            got_value = self._plain_value(buf, pos)
            if got_value is None:
                break
            term, e, target = got_value
            stack.append(target)
            values.append(Tok(term, buf[pos:e], pos, e))
            lexed.append(term)
            lexed.append(pos)
            lexed.append(e)
            self.paren_due = -1
            top = target
            if accepts_end[top] or top == end_state:
                if not self.may_close:
                    self.may_close = True
                if not self.may_end:
                    self._may_end()
            last_start, last_end, last_term = pos, e, term
            taken += 1
            if len(stack) <= _MARK_STACK:
                relevant = e
                if taken >= inner_due and not self.calls and self.marks is None:
                    self.last_start, self.pos, self.last_end, self.last_term, self.taken, self.relevant = pos, e, e, term, taken, e
                    self._inner()
                    inner_due = self.inner_due
            pos = e
            # (_run's loop goes on: it finishes where the state takes nothing but the end,
            # and reads a tag here only where one may begin.)
            if not allowed_of[top] and accepts_end[top]:
                break
            if not buf.startswith(leads, pos):
                break
            m = pattern.match(buf, pos)
            if m is None or n - m.end() < room:
                break  # (no tag; or near the end of the text: _lex's)
        if read:
            self.last_start, self.pos, self.last_end, self.last_term, self.taken, self.relevant = last_start, last_end, last_end, last_term, taken, relevant
        return read

    def _plain_value(self, buf: str, pos: int) -> Any:
        """The token _lex reads at pos, right after a tag the tag reader read, in a whole
        text read far (_tag_tokens: final, no replay, no stop, no match to go on with,
        far from the end of the text), where that is told at once: (terminal name, end,
        the state the table shifts it to); else None (_run's loop lexes it). Each
        terminal the state may begin there (_Starting) is tried in _lex's order and way:
        a literal, a plain pattern, or a value that stops at a tag (the nest's), which
        counts only where its reading on is told at once: it stopped before no tag, or
        before an opener of the nest that a run of _DEPTH openers follows (through_nest's
        first answer, _nest._deep_run: the value ends at its stop). Any other case is
        _lex's, as are the blanks before a tag (the tag reader's, then _lex's)."""
        state = self.stack[-1]
        ch = buf[pos]
        firsts = self.firsts
        plan = firsts.value_plans.get((state, ch))
        if plan is None:
            plan = firsts.value_plans[state, ch] = self._value_plan(state, ch) if len(firsts.value_plans) < 4096 else False
        if plan is False:
            return None
        if ch in plan[0] and plan[1].match(buf, pos) is not None:
            return None  # (the next tag, the value left empty: the tag reader's)
        n = len(buf)
        best = None
        best_len = -1
        best_prio = None
        for kind, t in plan[2]:
            if best_prio is not None and t.priority < best_prio:
                break
            if kind == 0:  # (a literal)
                if not buf.startswith(t.literal, pos):
                    continue
                end = pos + len(t.literal)
            else:
                m = t.pattern.match(buf, pos, n)
                if m is None:
                    if kind == 1 or ch != "<":
                        continue
                    return None  # (a value that begins with a tag: _lex's)
                end = m.end()
                if end == pos:
                    continue
                if kind == 2 and end < n and buf[end] == "<":
                    # (through_nest's reading, where it answers None at once: _foreign_run
                    # reads close tags only; an opener of the nest, _DEPTH more after it.)
                    if buf.startswith("/", end + 1) or not _nest.opener_run(self, t, buf, pos, end):
                        return None
            if end - pos > best_len:
                best, best_len, best_prio = t.name, end - pos, t.priority
        if best is None:
            return None
        action = self.c.states[state].get(best)
        if action is None or action[0] is not Shift:
            return None  # (_run's questions)
        return best, pos + best_len, action[1]

    def _value_plan(self, state: int, ch: str) -> Any:
        """_plain_value's plan at `state` for a token that begins with `ch`: (the
        characters the tag reader's tag may begin with, its pattern, and per terminal
        _lex's loop tries there, in its order, its kind: 0 a literal, 1 a plain pattern,
        2 a value that stops at a tag), or False where one is of another kind, none is a
        value, or _lex would take its quick way (each a literal or a plain pattern; the
        state's one literal)."""
        c = self.c
        allowed = c.allowed.get(state)
        tags = self.tags
        if not allowed or (len(allowed) == 1 and allowed[0].literal) or not tags:
            return False
        firsts = self.firsts
        starting = firsts.starting.get(id(allowed))
        if starting is None:
            starting = firsts.starting[id(allowed)] = _Starting(allowed, firsts)
        cands, plain, _ = starting[ch]
        if plain:
            return False
        nest_text = c.nest.terminals if c.nest is not None else ()
        plan = []
        for t in cands:
            if t.literal is not None:
                if not t.literal:
                    return False
                plan.append((0, t))
            elif firsts[t.name] is not None:
                plan.append((1, t))
            elif t.name in nest_text and t.name not in c.json_text and t.name not in c.loose_text and t.name not in SPECIAL_TERMINALS:
                plan.append((2, t))
            else:
                return False
        if not any(kind == 2 for kind, _ in plan):
            return False
        return tags[3], tags[0], tuple(plan)

    def _tag_step(self, state: int, ch: str, term: Any, far: bool = False) -> Any:
        """What _tag_tokens does with a token of `term` (None: ignored blanks) that begins
        with `ch`, at `state` (told by these alone, kept per grammar: firsts.tag_steps):
        False where it stops there (_run finishes at the state; the lexer's token is not
        told so, tagread.verdict; the table has no action for it); else (the literals
        that must not match there, the table's action: None for blanks). `far`: asked
        for a whole text read far (firsts.tag_steps_far), where the lexer passes over
        more at once (tagread.candidates)."""
        c = self.c
        allowed = c.allowed[state]
        if not allowed and c.accepts_end[state]:
            return False
        firsts = self.firsts
        per = firsts.plains.get(id(allowed))
        if per is None:
            per = firsts.plains[id(allowed)] = _Plain(allowed, firsts)
        never = c.derived.get("tagread_never")  # (per term, terminals the lexer finds no token of at a tag's token: tagread.candidates)
        never = never.get(term) if never is not None else None
        cands = per[ch] if never is None else _tagread.candidates(c, state, allowed, firsts, ch, term, far, never)
        verdict = _tagread.verdict(cands, term, c)
        if verdict is False:
            return False
        if term is None:
            return verdict, None, True
        action = c.states[state].get(term)
        if action is None:
            return False
        # (Whether the table takes it whatever the stack under `state`: a shift, or a
        # reduction takes' first answer tells sure, as takes would at each such tag.)
        sure = c.derived.get("sure_takes")
        if sure is None:
            sure = c.derived["sure_takes"] = {}
        return verdict, action, action[0] is Shift or _sure(c, state, term, sure, set())

    def told(self, buf: str) -> int:
        """A stream's text so far as far as it is surely this region's: see told_end."""
        return told_end(self, buf)

    def _refused(self, term: str, pos: int, n: int, buf: str) -> bool:
        """Whether a value at pos still open in a stream fails the parse wherever it ends:
        the parser does not take it there (a name, then `{` where only `[ARGS]` may come:
        mistral's call at the reply's start, in `Saving {"path": "C:\\dir\\"} now.`), and
        the text runs far enough past pos for the whole reply to fail on it the same way
        (no closer cut short there: cut_closer; and the characters the failure quotes).
        Else the stream held the reply's text until its end, however long."""
        room = max(self.c.longest_literal + _close.CUT_ROOM, _SNIPPET + 1)
        if n - pos < room or self.told(buf) - pos < room:
            return False  # (an end-of-turn token that may end the reply is not its text: told_end)
        return not takes(self.c, self.stack, term)

    def _shifts_at(self, buf: str, pos: int, allowed) -> bool:
        """Whether the parser takes a token that the text at pos starts with, as the text
        stands: reducing no empty rule first (no left-out tag supplied)."""
        for u in allowed:
            if u.literal is not None:
                if not buf.startswith(u.literal, pos):
                    continue
            elif u.name in ("JSON", "PYVALUE") or u.name in self.c.nest.terminals or u.pattern.match(buf, pos) is None:
                continue
            elif not self.far:
                # (A loop's match may run on past the token read, and looks.py bounds what
                # a loop's try looked at by the end of its match.)
                looks = _looks.of(self.c, _close.CUT_ROOM + self.c.longest_literal)
                if looks is not None and u.name in looks.loops:
                    self.check = True
            if shifts_plain(self.c, self.stack, u.name):
                return True
        return False

    def _through(self, t, buf: str, pos: int, end: int, final: bool) -> Any:
        return _close.through(self, t, buf, pos, end, final)

    # -- waiting cheaply ----------------------------------------------------
    def _extent(self, pos: int, stops: str | None) -> _Extent:
        extent = self.extents.get(stops)
        if extent is None or extent.start != pos:
            extent = self.extents[stops] = _Extent(pos, stops)
        return extent

    def _triple(self, buf: str, pos: int, quote: str, final: bool) -> tuple[int | None, Any]:
        """Where a Python value that opens with a triple-quoted string ends: past its
        closing quote, where the value does (extent.triple_end). (None, what to wait
        on): not yet. A string the end of the reply left open runs to it, or to the
        marker a broken value ends at (_cut)."""
        n = len(buf)
        close = triple_end(buf, pos, quote)
        if close is None:
            if not final:
                return None, TripleWait(quote, buf)
            cut = self._cut(buf, pos, n, final) if self.cutter else None
            return (cut if cut is not None and cut is not WAIT else n), None
        if final and self.brackets is not None:
            end = self.brackets.argument_end(buf, close)
        else:
            extent = self._extent(close, ",)")
            end = extent.advance(buf, 0)
            if end is None and not final:
                return None, extent
        return (n if end is None else end), None

    def _quoted(self, buf: str, pos: int, final: bool) -> Any:
        """_repair.quoted_end for the value at pos, its ending looked for before the
        first marker after its break (a call's, <think>'s, or this format's end). In
        a stream the value is looked at again as text arrives: where that marker is,
        and where the call's `)` is as Python reads it, are found by scans that go on
        from where they stopped (the text before does not change)."""
        memo = self.quote_memo
        if memo is None or memo[0] != pos:
            # (pos, break, marker, scanned to, `)` scan, quotes looked at, a whole text's answer)
            memo = self.quote_memo = [pos, -1, -1, -1, None, [], None]
        elif final and memo[6] is not None and memo[6][0] is buf:
            # (A whole text's answer for this value, asked again: pyframe's reading of a
            # list asks first, and where the value is no plain one the driver's lexer asks
            # the same of the same text. Told by the text and the place alone.)
            return memo[6][1]
        stop = self.stop  # (the text ends there: its answers are kept for this reading alone, see run)
        n = len(buf) if stop is None else stop

        def markers(at: int) -> int:
            if memo[1] != at:
                memo[1:4] = [at, -1, at]
            if memo[2] < 0 and memo[3] < n:
                memo[2] = self._first_marker(buf, max(at, memo[3] - self.cutter[1]), n)
                memo[3] = n
            return memo[2]

        def call_end(at: int) -> int:
            extent = memo[4]
            if extent is None or extent.start != at:
                extent = memo[4] = _Extent(at, ")")
            end = extent.advance(buf, 0, stop)
            return n if end is None else end

        passed = self._passed(buf, final) if stop is None else None
        got = _repair.quoted_end(buf, pos, final, markers if self.cutter else None, call_end, memo[5], stop, passed)
        if final:
            memo[6] = (buf, got)
        return got

    def _passed(self, buf: str, final: bool) -> dict:
        """_repair.quoted_end's record for the text read (see there): the quotes that no
        value's end follows, read for a value before, passed over with a count for the
        values after it. A stream's text is only added to: one record while it grows (what
        it says holds whatever text comes). A whole text's is that text's (by identity):
        two are kept, as a list closed before its call's `)` is read up to its `]` alone,
        the whole text bounded there (stop: kept for no text) or, from a step that reads
        no bound on, that text cut there (_unbound), a text of its own between the whole
        text's values."""
        key = buf if final else None
        kept = self.quote_passed
        if kept and kept[0][0] is key:
            return kept[0][1]
        if len(kept) > 1 and kept[1][0] is key:
            kept.reverse()
            return kept[0][1]
        record: dict = {}
        self.quote_passed = [(key, record)] + kept[:1]
        return record

    def _slipped(self, buf: str, pos: int, end: int | None, final: bool) -> int | None:
        """Where the JSON value at pos, whose brackets close at `end` (None: not in the
        text so far), ends when the model closed a string in it with the other quote and
        its brackets close after that, prose after them (_repair.slipped_end: -1 while the
        text so far cannot tell); None where it does not (JSON reads it, or no string in
        it holds both quotes' kinds). `{"a": "x'} Then it's fine.` ends at its `}` as
        one its end marker closed reads (QA22 D9): not with the prose in the string (its
        brackets never close) nor, where its brackets close later (a `"` in the prose),
        with the prose in the value as an error. A stream decides as parse() does: the
        lenient pass tells a slip only where no longer text reads it otherwise."""
        stop = len(buf) if end is None else end
        if buf.find("'", pos, stop) < 0 or buf.find('"', pos, stop) < 0:
            return None  # (the usual case: one kind of quote, no slip)
        if end is not None:
            try:
                if _repair.scan_json(buf, pos)[1] == end:
                    return None  # (JSON reads it)
            except (StopIteration, ValueError, RecursionError):
                pass
        return _repair.slipped_end(buf, pos, final)

    def _cut(self, buf: str, pos: int, end: int | None, final: bool) -> Any:
        """_close.cut for the value at pos that closes at `end` (None: it runs on to the
        end of the text)."""
        n = len(buf) if self.stop is None else self.stop
        if end is None and not final and self.own_hint is not None:
            m = self.own_hint.get((self.fmt.name, pos))
            if m is not None and m < n:  # (past the window's end: it waits, as a stream does)
                self.cut_at = m  # (as the whole text's reading cut it: see own_hint)
                return m
        if end is None and not final and self._first_marker(buf, pos + 1, n) < 0:
            # Open, with no marker in it yet: nowhere to cut it. (cut would say None or
            # WAIT, which the caller takes alike for a value that is open; it would read
            # the value from its start to tell them apart, at each recheck.)
            return None
        if self.stop is not None:
            # (A whole text's, final: _close.cut's first look, which most values end at.)
            if final and self._first_marker(buf, pos + 1, n if end is None else end) < 0:
                return None
            raise Unbounded
        known = self.quote_wait
        if known is not None and not final and end is not None and known[0] == pos and known[1] == end:
            # (Waiting on the call its string quotes, alone: read on by its frame. _close._quoted_wait)
            got = self.cutter[4](buf, known[2], self.fmt, False, known[3])
            if type(got) is _LoopWait:
                self.quote_wait = (pos, end, known[2], got)
                return WAIT
        self.quote_wait = None
        cut = _close.cut(self, buf, pos, n if end is None else end, final)
        if cut is not None and cut is not WAIT:
            self.cut_at = cut
        return cut

    def _closed_wait(self, end: int) -> Any:
        """What the driver waits with (its hint) where _cut waited on a value closed at
        `end`: the wait of the call its string quotes, which alone more text can change
        (_close._quoted_wait); else _HOLD, looked at again once settled (_settling)."""
        wait = self.quote_wait
        if wait is not None:
            return wait[3]
        self._settling(end)
        return _HOLD



    def _cut_past_list(self, buf: str, cut: Any) -> bool:
        """Whether a value's cut (_cut) is at a call marker that is not this format's own
        end (at its own end, `<|tool_call_start|>[f(a="x"] ok<|tool_call_end|>`, the value
        runs on to the region's end and cannot be read: QA23), so that a list's `]`
        before it may close the list (see _lex's LISTED)."""
        if cut is None or cut is WAIT:
            return False
        return not any(e and buf.startswith(e, cut) for e in self.fmt.ends)

    def _call_before_close(self, buf: str, pos: int, close: int) -> bool:
        """Whether another format's call that reads whole lies between the value at pos
        and the list's `]` at close (its string closed by a quote inside that call:
        `[f(a="x] <tool_call>{"name": "g", …}</tool_call>\nHe said "hi] <tool_call>…`).
        That `]` is no list's close the value was written up to: the value is cut at the
        first marker, as before, and that call is read (QA27d R1: it was lost in the
        error's prose). A marker in a string that closes before the `]`, `"x <tool_call>"]`,
        begins no whole call."""
        return _close._call_between(self, buf, pos + 1, close) >= 0

    def _settling(self, stop: int) -> None:
        """_cut waited on a value that closes at `stop` (a marker may still start before
        it, not yet whole): its answer is settled once the text runs the longest
        marker's length past `stop` (_close.cut: `settled`), and until then a delta
        can only make it decide sooner, the same way (a marker it did not see whole,
        it would have waited on). So look again then, not at every delta: re-cutting
        the value from its start on each one cost the square of its length."""
        at = stop + self.cutter[1]
        if not self.recheck or at < self.recheck:
            self.recheck = at

    def _call_after_json(self, buf: str, pos: int, end: int) -> int:
        """Where a call begins, as the scanner finds one in prose (its call_re, the line
        conditions of its markers and all: cutter[6]), in the text after the JSON value
        of a payload token at pos that ran to `end` (`<tool_call>{…}\n[f(a=1)]` with tools
        offered, `{…}\n[TOOL_CALLS]g[ARGS]{}`): the token ends there, its close supplied
        (closed_tag), and the scanner reads that call, as after a call closed (issue 19:
        it was the payload's prose, the call lost with no error). -1: none. What follows
        the value is prose either way: read so, a mention of a marker in it is what it is
        after any call. So too where the format's end marker closed the token
        (`{…}\n[TOOL_CALLS]g[ARGS]{}</tool_call>`) or an end-of-turn token did: the call
        is read as where the close was left out, and that end marker, written after it,
        is the region's close, markup (cut_close; issue 19: the call was the payload's
        remark, markup left in the text). Text with no such call in it before the end
        marker (`{…}\n[1] Source</tool_call>`) is the call's remark, as before. A fence's
        close (```) reads the same (issue 19: the call was the fence's text, its markers
        in the text; the ``` after it is markup as `</tool_call>` is). A stream knows where the token
        ends only once it does, at a `<` or at the end of the reply, and completes the
        call then, as before."""
        self.cut_close = None
        call_re = self.cutter[6]
        if call_re is None:
            return -1
        closer = next((e for e in (*self.fmt.ends, *self.fmt.end_of_turn) if e and buf.startswith(e, end)), None)
        call = self._call_in_tail(buf, pos, end, call_re, closer is not None and len(self.cutter) > 7)
        if call > pos and closer is not None:
            self.cut_close = (call, closer, end)
        return call

    def _call_in_tail(self, buf: str, pos: int, end: int, call_re: Any, closed: bool = False) -> int:
        """_call_after_json's search: where in buf[pos:end] the call after the JSON value
        begins; -1: none. `closed`: the model closed the token at `end` (the format's end
        marker, or an end-of-turn token): there only a marker at which a call reads
        whole before `end` counts (cutter[7], Scanner.call_before). A marker a remark
        names (`Use `[TOOL_CALLS]` next time.`, `The [TOOL_CALLS] marker is Mistral's.`,
        a fence's ```json, a list that calls no tool offered) is the remark's text, as
        it was before calls after a closed payload were read (rv34: the remark was cut
        there, its call given closed_tag, and the close it was written with left in the
        text). The first such marker decides: one that begins no call ends the search
        (each marker of a remark read at most once: linear)."""
        if _last_closer(buf, pos, end) < 0:
            return -1  # (the value never closes: no call after it. At once, where a search of
            # every marker over 32 KB of `[` took 15 ms, a `[` at each place.)
        m = _tail_find(call_re, buf, pos + 1, end)  # (the region's other candidates ask the same: `<tool_call>` is several formats')
        if m is None:
            return -1
        text = buf[pos:end]  # (the builder reads this copy too: the value's scan costs what it reads)
        j = _JSON_START.match(text).end()
        close = _repair.value_end(text, j)
        if close is None:
            return self._call_after_open(buf, pos, end, call_re, text, j, closed)
        listed = text[j] == "["  # (the payload a Python list: `<tool_call>[f(a="x")]`)
        at = pos + close
        while True:
            m = _tail_find(call_re, buf, at, end)
            if m is None:
                return -1
            mark = m.group()
            if mark not in ("{", "["):
                if closed and not self.cutter[7](buf, m.start(), mark, end, self.fmt):
                    return -1  # (a remark naming the marker: the call's, as before)
                return m.start()  # (another format's marker: `[TOOL_CALLS]`)
            # A bracket first on its line (a quiet format's marker: a JSON object line,
            # a Python list): JSON after the payload's JSON is the payload's (several
            # objects, one nameless or cut, as with `</tool_call>` after them: QA32 R1),
            # and so is a list after a list payload (an unknown tool in it gets its
            # error). Only a Python call list after a JSON payload is a call of its own.
            if mark == "[" and not listed and _PY_CALL.match(buf, m.start(), end):
                if closed and not self.cutter[7](buf, m.start(), mark, end, self.fmt):
                    return -1  # (a list that calls no tool offered, or not whole: the remark's)
                return m.start()
            after = _repair.value_end(text, m.start() - pos)
            if after is None:
                return -1  # (cut by the end: the payload's, as before)
            at = pos + after

    def _call_after_open(self, buf: str, pos: int, end: int, call_re: Any, text: str, j: int, closed: bool = False) -> int:
        """_call_in_tail where the payload's JSON value never closes (text = buf[pos:end],
        the value at text[j]): its close left out right before the next call
        (`{"name": "g", "arguments": {"a": 1}\n[TOOL_CALLS]f[ARGS]{}`, issue 19: read as
        another format's, granite's, its close tag left in the text). Where that call
        begins: a marker as _call_in_tail takes one, right after a closing bracket of the
        value (blanks between), outside any string (extent.open_before), the value up to
        it whole once closed (closed_json, as before the format's own `<tool_call>`);
        -1: none (the payload's, as before). The first few markers only. `closed`: as in
        _call_in_tail, the token closed at `end`: the first such marker counts only where
        a call reads whole there before `end` (cutter[7]), else the payload's, as before."""
        if text[j : j + 1] not in ("{", "["):
            return -1
        listed = text[j] == "["
        at = pos + j + 1
        for _ in range(_OPEN_TRIES):
            m = _tail_find(call_re, buf, at, end)
            if m is None:
                return -1
            at = max(m.end(), m.start() + 1)
            mark = m.group()
            if mark == "{" or mark == "[" and (listed or not _PY_CALL.match(buf, m.start(), end)):
                continue  # (JSON in the value, or a list after a list: the payload's, as above)
            k = m.start() - pos
            if not open_before(text, j, k):
                continue
            try:
                _repair.loads(text[:k])
            except _repair.RepairError:
                return -1
            if closed and not self.cutter[7](buf, m.start(), mark, end, self.fmt):
                return -1  # (no call read whole before the close: the payload's, as before)
            return m.start()
        return -1

    def _marker_at(self, buf: str, pos: int, end: int) -> bool:
        """Whether a call marker of markup (the scanner's, three characters or more)
        starts at pos and lies whole before `end`, the end of the value read there."""
        if self.stop is not None and pos + self.cutter[1] > self.stop:
            raise Unbounded  # (one may run past the cut: as _first_marker)
        m = self.cutter[0](buf, pos, pos + 1)
        return m == pos and pos + 3 <= end

    def _first_marker(self, buf: str, start: int, stop: int) -> int:
        """Where the first marker in [start, stop) starts (the scanner's, or this
        format's end), or -1."""
        cut = self.stop  # (the text ends there: a marker is one whole before it)
        if cut is None:
            # (Its answers for the text, kept: close.cut asks the same of a value's text
            # again, its readings one after another each looking at the same span, a
            # marker's search and one look-up per end marker each time.)
            memo = self.marker_memo
            if memo is None or memo[0] is not buf:
                memo = self.marker_memo = (buf, {})
            found = memo[1].get((start, stop))
            if found is None:
                found = self._first_marker_in(buf, start, stop, None)
                if len(memo[1]) >= _MARKER_MEMO:
                    memo[1].clear()
                memo[1][start, stop] = found
            return found
        return self._first_marker_in(buf, start, stop, cut)

    def _first_marker_in(self, buf: str, start: int, stop: int, cut: int | None) -> int:
        """_first_marker, the text ending at cut (None: at its end)."""
        best = self.cutter[0](buf, start, stop)
        find = self.cutter[3]  # (the scanner's, remembered: see RegionReader.find)
        if cut is not None and best >= 0 and best + self.cutter[1] > cut:
            raise Unbounded  # (it may run past the cut: the scanner's search, whole, is not bounded so)
        for e in self.fmt.ends:
            i = find(e, start, buf)
            if cut is not None and i + len(e) > cut:
                i = -1
            if 0 <= i < stop and (best < 0 or i < best):
                best = i
        return best

    def absorbs(self, text: str, n: int) -> bool:
        """After run() waited with a hint: would `text`, appended to the n characters
        of text so far, leave it waiting the same way? True means run() need not
        see it yet (the caller keeps it and hands it over with the next text that
        matters). Bracket scanners move on over the text either way."""
        if self.recheck and n + len(text) >= self.recheck:
            return False  # (a JSON value that does not close: time to see if it is broken)
        for grower in self.hint:
            if type(grower) is _Extent:
                if grower.advance(text, n) is not None:
                    return False
            elif not grower.absorbs(text, n):
                return False
        return True

    # -- the parse table --------------------------------------------------
    def _feed(self, token: Tok) -> bool:
        if self.marks:
            self.settle_mark()  # (a supplied token: the next real one has settled it in _mark)
        stack, values = self.stack, self.values
        c = self.c
        states = c.states
        try:
            action, arg = states[stack[-1]][token.type]
        except KeyError:
            return False
        if action is Shift:  # (the commonest: told before the reductions' tables are looked up)
            stack.append(arg)
            values.append(token)
            return True
        # The reductions this token makes, then its shift, as made before from the same
        # states at the top of the stack, as deep as they looked (the grammar's feed_chains): each
        # tree made as then, the states they leave put back at once, not looked up in the
        # table one by one (a parameter's close left out: five reductions at the next
        # tag, at each of a thousand parameters). None that finishes a call. (Kept per
        # grammar: pyframe's probes feed through here too.)
        key = (stack[-1], token.type)
        chains = c.derived.get("feed_chains")
        if chains is None:
            chains = c.derived["feed_chains"] = {}
        known = chains.get(key)
        callbacks, call_rules = c.callbacks, c.call_rules
        if known is _UNKEPT:
            # (Where a call ended before: read the table's way, noting nothing.)
            while True:
                if action is Shift:
                    stack.append(arg)
                    values.append(token)
                    return True
                size = len(arg.expansion)
                if size:
                    children = values[-size:]
                    del stack[-size:]
                    del values[-size:]
                else:
                    children = []
                values.append(callbacks[arg](children))
                name = arg.origin.name
                if name in call_rules:
                    self.calls += 1
                    _close_extent(values[-1], children)
                stack.append(states[stack[-1]][name][1])
                try:
                    action, arg = states[stack[-1]][token.type]
                except KeyError:
                    return False
        if known is not None:
            for depth, seen, popped, made, tail in known:
                if stack[-depth:] == seen:
                    for size, build in made:
                        if size:
                            children = values[-size:]
                            del values[-size:]
                        else:
                            children = []
                        values.append(build(children))
                    values.append(token)
                    if popped:
                        del stack[-popped:]
                    stack.extend(tail)
                    return True
        top = len(stack)
        base = top  # (stack[:base]: the states it had, none popped yet)
        low = top - 1  # (the deepest of them looked at)
        gone: list = []  # (its states from base on, popped)
        made: list | None = []  # (each reduction: its size and its tree's maker; None: not kept)
        while True:
            if action is Shift:
                stack.append(arg)
                values.append(token)
                if made is None:
                    if known is None:
                        chains[key] = _UNKEPT  # (a call ends here: see above)
                elif known is None or len(known) < 8:
                    entry = (top - low, stack[low:base] + gone, top - base, tuple(made), stack[base:])
                    chains[key] = (*known, entry) if known is not None else (entry,)
                return True
            size = len(arg.expansion)
            if size:
                children = values[-size:]
                at = len(stack) - size
                if at < base:
                    gone[:0] = stack[at:base]
                    base = at
                del stack[-size:]
                del values[-size:]
            else:
                children = []
            build = callbacks[arg]
            values.append(build(children))
            name = arg.origin.name
            if name in call_rules:
                self.calls += 1
                _close_extent(values[-1], children)
                made = None
            elif made is not None:
                made.append((size, build))
            if len(stack) - 1 < low:
                low = len(stack) - 1
            stack.append(states[stack[-1]][name][1])
            try:
                action, arg = states[stack[-1]][token.type]
            except KeyError:
                return False

    def _mark(self, term: str) -> None:
        """Before `term` is read, in a replay: does it finish a call (its lookahead
        reduces one)? Then a call ends where the last token did, and that point keeps
        the copy of its stack it was waiting for (see _keep_mark)."""
        marks = self.marks
        if marks:
            last = marks[-1]
            if _reduces_call(self.c, self.stack, term):
                last[2] = True
            if last[1] is _PENDING:
                last[1] = list(self.stack) if last[2] else None

    def _keep_mark(self, end: int) -> None:
        """Note the point after a token, with a copy of the state stack there. A point
        keeps its copy only where salvage_points may close the frame there: a call
        ends at it, or its stack is as short as between calls (_MARK_STACK); and the
        last point. A value nested deep inside a call (XML-ish elements `<a><a>…`)
        would otherwise cost a copy as deep at each token: the square of the reply,
        in memory, and in time even for copies dropped at the next token. So a deep
        point's copy is made only once it is known to be kept: _PENDING until the
        next token tells (_mark), or the stack changes otherwise (_settle_mark)."""
        marks = self.marks
        if marks:
            prev = marks[-1]
            if not prev[2] and prev[1] is not None and len(prev[1]) > _MARK_STACK:
                prev[1] = None
        stack = self.stack
        if self.c.terminals[self.last_term].looks_past:
            # (A token told by the text after it, cofl's stray text by the tag that
            # follows: the reply cut right after it reads it otherwise, so no point
            # closes the frame there; the one before it does.)
            marks.append([end, None, False])
            return
        marks.append([end, list(stack) if len(stack) <= _MARK_STACK else _PENDING, False])

    def _checked(self, at: int, tok: Any) -> None:
        """Keep the token just lexed from `at` in `checks` (see there); past _CHECKS of
        them, the reading is far (looks.py) from here on."""
        self.check = False
        if self.far:
            return
        if len(self.checks) >= _CHECKS or type(tok) is not tuple:
            self.far = True
            return
        self.checks.append((at, tok, self.pos, Checkpoint(self)))

    def _spot(self) -> None:
        """Keep a Checkpoint here (see spots): the last two; and in `back` (see there)."""
        spots = self.spots
        if len(spots) > 1:
            del spots[0]
        spot = Checkpoint(self)
        spots.append(spot)
        self.spot_due = self.taken + _SPOT_TOKENS + len(self.stack)
        if self.far or self.marks is not None:
            return
        looks = _looks.of(self.c, _close.CUT_ROOM + self.c.longest_literal)
        if looks is None:
            return
        back = self.back
        back.append(spot)
        while len(back) > 1 and back[1].pos + looks.margin <= spot.pos:
            del back[0]

    def _inner(self) -> None:
        """Keep a Checkpoint here (see inner): the last two. Not after a token the text
        after it tells (looks_past: the replay marks no point there, see _keep_mark; the
        next token is asked)."""
        if self.c.terminals[self.last_term].looks_past:
            return
        self.inner_due = self.taken + _SPOT_TOKENS + len(self.stack)
        inner = self.inner
        if len(inner) > 1:
            del inner[0]
        inner.append(Checkpoint(self))

    def settle_mark(self) -> None:
        """Give the last point its copy of the stack, if it waits for one: before the
        stack changes other than by the next token (a supplied closer, the finish), and
        when the replay is over (it is the last point)."""
        marks = self.marks
        if marks and marks[-1][1] is _PENDING:
            marks[-1][1] = list(self.stack)

    def _may_end(self) -> None:
        """Set may_end where the stack takes $END as it is (see there). Asked after each
        token whose state has $END among its lookaheads: a call's values one after
        another leave the same few stacks each time, and so do the calls of a reply,
        each read by a driver of its own. takes' answer is the table's and the stack's
        alone: kept per grammar (`end_takes`, up to _END_ASKED stacks), not per driver,
        each stack asked once. A reply of 300 calls whose values all differ asked it
        five times a call, 5% of its parse (bench_distinct_calls.py)."""
        stack = self.stack
        if stack[-1] == self.c.end_state:
            self.may_end = True
        elif len(stack) <= _MARK_STACK and _takes_end(self.c, stack):
            self.may_end = True

    def supply(self, term: str) -> None:
        """Feed `term` as a token the text left out (a close marker, a bracket): empty,
        at self.pos."""
        self.may_close = self.may_end = True
        self.supplied = self.taken
        self._feed(Tok(term, "", self.pos, self.pos))

    def _finish(self, end: int) -> str:
        self.may_close = self.may_end = True
        if self.marks:
            self.settle_mark()
        stack, values = self.stack, self.values
        states, callbacks = self.c.states, self.c.callbacks
        end_state = self.c.end_state
        while stack[-1] != end_state:
            try:
                action, rule = states[stack[-1]]["$END"]
            except KeyError:
                return self._fail("the call ended too early")
            if action is Shift:  # pragma: no cover - $END is never shifted
                break
            size = len(rule.expansion)
            children = values[-size:] if size else []
            if size:
                del stack[-size:]
                del values[-size:]
            values.append(callbacks[rule](children))
            if rule.origin.name in self.c.call_rules:
                _close_extent(values[-1], children)
            stack.append(states[stack[-1]][rule.origin.name][1])
        self.tree = values[-1] if values else None
        self.end = end
        self.status = DONE
        return DONE

    def _ends_here(self) -> bool:
        """Whether the region can end here (see _simulate)."""
        stack = self.stack
        return _takes_end(self.c, stack) if len(stack) <= _MARK_STACK else takes(self.c, stack, "$END")

    def _close(self, buf: str, final: bool, at_marker) -> str:
        return _close.close(self, buf, final, at_marker)

    def _cut_close(self, buf: str, allowed) -> str | None:
        return _close.cut_close(self, buf, allowed)

    def _closing_plan(self) -> list[str] | None:
        """The missing literals that complete the frame, or None (see closing_plan)."""
        return closing_plan(self.c, self.stack, self.fmt.ends)

    def _simulate(self, stack: list, term: str) -> list | None:
        """The state stack after taking `term` ("$END": after finishing), or None
        when the parser would reject it. Simulated on a copy of the state stack
        alone, because an LALR row lists terminals that only fail after some
        reductions (merged lookaheads), and a failed feed cannot be undone cleanly
        (Lark's tree callbacks extend child lists in place)."""
        return simulate(self.c, stack, term)

    def _close_before(self, end_marker: str) -> str:
        return _close.close_before(self, end_marker)

    def expected(self) -> list[str]:
        """The terminals the grammar takes where the driver is (table.expected): after
        a failure, what the text at self.pos should have been. Read-only."""
        return expected(self.c, self.stack)

    def _fail(self, reason: str) -> str:
        self.status = FAIL
        self.reason = reason
        self.end = max(self.pos, self.start)
        return FAIL


# What a JSON-text payload token cannot begin with: a tag; and a payload of calls
# (Compiled.call_text), a word and then a tag either (GLM's `<tool_call>get_weather
# <arg_key>…`: a name before the JSON, as functionary writes a call, has the object
# after it). The fast frame's regex says the same, from these sources. (The word is
# anything up to a space, a tag, a bracket, a quote, a backtick, "," or "=": no class
# that depends on Unicode's tables, which `re` and `regex` do not read alike; see
# _words.py. And it is a name's length at most: this look-ahead is tried at every
# region's payload, and one that ran on over a run of markers such as ```json```json…
# would cost each of them the rest of the run, the square of the reply.)
# A state stack longer than this is deep inside a call (see _keep_mark): between calls
# every grammar's stack holds a few states (the section, the list of calls).
_MARK_STACK = 64
_MARKER_MEMO = 64  # (the answers _first_marker keeps for a text, at most)
_UNCUT_MEMO = 64  # (the values _uncut_listed keeps, at most)
_END_ASKED = 256  # (stacks _takes_end remembers takes' answer for, per grammar)


def _takes_end(c: Compiled, stack: list) -> bool:
    """takes(c, stack, "$END") for a short stack (_MARK_STACK), remembered per grammar by
    the whole stack (Driver._may_end, _ends_here)."""
    key = tuple(stack)
    asked = c.derived.get("end_takes")
    if asked is None:
        asked = c.derived["end_takes"] = {}
    told = asked.get(key)
    if told is None:
        told = takes(c, stack, "$END")
        if len(asked) >= _END_ASKED:
            asked.clear()  # (a bound: a grammar's short stacks are few)
        asked[key] = told
    return told
_SPOT_TOKENS = 32  # (tokens read between two spots at least: see Driver.spots)
_CHECKS = 16  # (tokens kept in Driver.checks at most: a salvage lexes each again)
class _Firsts(dict):
    """Per terminal name, the characters a match of the terminal may begin with (a
    _FirstChars: any, where its pattern's shape does not tell), or None: not a plain
    terminal. A plain one is a pattern whose match is the token, and no match no token,
    with nothing else to do: none that reads on past its match or stops at a tag
    (json_text, loose_text, the nest's), nor JSON or PYVALUE. A marker's own terminals
    are tried at each token (`<invoke`, `</invoke>`, `<parameter` at a line's break,
    then again after it): the pattern ran for each, and the general way's tests."""

    def __init__(self, c: Compiled) -> None:
        super().__init__()
        self.c = c
        self.plains: dict = {}  # (id of a state's allowed -> its _Plain: see Driver._tag_tokens)
        self.starting: dict = {}  # (id of a state's allowed -> its _Starting: see Driver._lex)
        self.tag_steps: dict = {}  # ((state, character, terminal) -> Driver._tag_step's answer)
        self.tag_steps_far: dict = {}  # (the same, for a whole text read far)
        self.value_plans: dict = {}  # ((state, character) -> Driver._value_plan's answer)
        self.tag_macros: dict = {}  # ((state, a tag reader's plan, index) -> its tokens from there: Driver._tag_tokens)
        self.skip = {*c.json_text, *c.loose_text, *(c.nest.terminals if c.nest is not None else ()), *SPECIAL_TERMINALS}

    def __missing__(self, name: str) -> Any:
        t = self.c.terminals.get(name)
        if t is None or t.literal is not None or name in self.skip:
            found = None
        else:
            found = _FirstChars(t.first or _ANY)  # (t.first: compiled on first use)
        self[name] = found
        return found


class _Starting(dict):
    """Per character, (the terminals of a state's `allowed` (in its order) that _lex's
    loop may take or wait on at a place that character begins: a literal that begins
    with it (or an empty one), a plain terminal whose match may (_Firsts), any other
    pattern. The loop passes over each of the rest at once (no literal it does not begin
    matches there, or grows into a stream's text; no match of the plain terminal begins
    there), and none of them changes what it found: asked once per state and character,
    not at each token of a run of them (the tags and values of a thousand parameters
    whose closes were left out); whether each of them is a literal or a plain terminal;
    how many of them come first that are, each of a higher priority than the first that
    is not (0: not so)).
    Remembered for the first few hundred characters."""

    def __init__(self, allowed: Any, firsts: _Firsts) -> None:
        super().__init__()
        self.allowed = allowed  # (held: its id keys this in _Firsts.starting)
        self.firsts = firsts

    def __missing__(self, ch: str) -> tuple:
        firsts = self.firsts
        found = []
        plain = True  # (each a literal, not empty, or a plain terminal: see _lex)
        lead = 0  # (how many of them come first that are)
        for t in self.allowed:
            lit = t.literal
            if lit is not None:
                if not lit or lit[0] == ch:
                    found.append(t)
                    plain = plain and bool(lit)
            else:
                first = firsts[t.name]
                if first is None or first[ch]:
                    found.append(t)
                    plain = plain and first is not None
            if plain:
                lead = len(found)
        if not plain and any(t.priority <= found[lead].priority for t in found[:lead]):
            lead = 0  # (a plain one that may tie with it: _lex's general loop reads them all)
        got = (tuple(found), plain, lead)
        if len(self) < 512:
            self[ch] = got
        return got


class _Plain(dict):
    """Per character, the terminals of a state's `allowed` (in its order) whose match
    may begin with it, when each is a literal or a plain terminal (_Firsts); None when
    one that is neither may (its reading is _lex's). Remembered for the first few
    hundred characters asked."""

    def __init__(self, allowed: tuple, firsts: _Firsts) -> None:
        super().__init__()
        self.allowed = allowed
        self.firsts = firsts

    def __missing__(self, ch: str) -> Any:
        got = plain_starting(self.allowed, self.firsts, ch)
        if len(self) < 512:
            self[ch] = got
        return got


class _FirstChars(dict):
    """Character -> whether the terminal's match may begin with it (its pattern's
    first item matches it: Terminal.first); remembered for the first few hundred
    characters asked (a reply of many different ones does not grow it without end)."""

    def __init__(self, first: Any) -> None:
        super().__init__()
        self.first = first

    def __missing__(self, ch: str) -> bool:
        may = self.first.match(ch) is not None
        if len(self) < 512:
            self[ch] = may
        return may


_ANY = regex.compile(r"(?s).")


def _firsts(c: Compiled) -> _Firsts:
    found = c.derived.get("firsts")
    if found is None:
        found = c.derived["firsts"] = _Firsts(c)
    return found


_NEVER = float("inf")
_UNKEPT = object()  # (Driver._feed: a token whose reductions finished a call there; none kept)
# (What may follow a quoted value's string up to its list's `]`, read up to there: see
# Driver._listed_whole.)
_LISTED_TAIL = lazy(regex.compile, r"[\s\]]*")
LISTED = "listed"  # (run's status: the value ran on over a list's `]`; see Driver.listed)
RESUMED = "resumed"  # (the reading up to that `]` closed the list there: see Driver._close_list)
_PENDING = object()  # (a deep point's copy of the stack, not made yet: see _keep_mark)
_SPACE_TO_END = lazy(regex.compile, r"\s*\Z")  # (whitespace to the end of the text; matched from a point)
_SPACE = lazy(regex.compile, r"\s*")  # (blanks from a point: _comma_list_close)
_COMMA_CALL = lazy(regex.compile, r"\s*+,\s*+[A-Za-z_][\w.]*+\s*+\(")  # (_comma_list_close)
_CALL_AFTER = lazy(regex.compile, r"\s*+[A-Za-z_][\w.]*+\s*+\(")  # (a call's name and `(` after a `,`: _bracket_for_paren)
# (After a call's `)` in _CallsTail's scan: the list's `]`, or the next call's `, h(`.)
_CALLS_TAIL = lazy(regex.compile, r"\s*+(?:(\])|(,)\s*+[A-Za-z_][\w.]*+\s*+\()")


def _grown(growers: list | None, waits: Any) -> list | None:
    """Driver._lex's growers after a value that waits on `waits` (_comma_after's WAIT or
    _CallsTail): None where no grower tells (WAIT: the text after the `,`, each delta);
    else `growers`, `waits` added."""
    if growers is None or waits is WAIT:
        return None
    growers.append(waits)
    return growers


class _CallsTail:
    """Driver._paren_left_out's scan from the `,` at `start`: whether calls alone follow
    it, `, g(…)`, each closed by its `)` (a bracket scan, strings respected: _Extent,
    which stops at a `)` or `]` at its depth), up to the list's `]` after blanks. It
    resumes where it stopped (a stream's text, scanned once); a grower while it waits
    on a call's arguments (absorbs), looked at again at each delta between calls."""

    __slots__ = ("start", "tails", "n", "final", "at", "args", "close")

    def __init__(self, start: int, tails: dict) -> None:
        self.start = start
        self.tails = tails  # (the driver's scans by the `,` they pass: each `,` it passes is noted)
        self.n = 0  # (the length of the longest text scanned)
        self.final = False  # (scanned as a whole text: its answer is that text's)
        self.at = start  # (the `,` or a call's `)`: what follows is matched by _CALLS_TAIL)
        self.args = None  # (the _Extent of the arguments of the call it is in)
        self.close = None  # (the answer once told: the list's `]`, or -1)

    def scan(self, buf: str, final: bool) -> Any:
        """Where the list's `]` is; -1: not calls alone up to one; WAIT: not yet told."""
        if len(buf) > self.n:
            self.n = len(buf)
        if final:
            self.final = True
        while self.close is None:
            if self.args is not None:
                k = self.args.advance(buf, 0)
                if k is None:
                    if not final:
                        return WAIT
                    self.close = -1
                elif buf[k] != ")":
                    self.close = -1  # (a `]` closes the call's arguments: not a call)
                else:
                    self.args = None
                    self.at = k + 1
                continue
            if self.at == self.start:
                m = _CALL_AFTER.match(buf, self.at + 1, partial=not final)
            else:
                m = _CALLS_TAIL.match(buf, self.at, partial=not final)
            if m is None:
                self.close = -1
            elif m.partial:
                return WAIT
            elif self.at != self.start and m.group(1) is not None:
                # (Not where a closer follows it, blanks between: `]]` after a value is
                # its call's `)` written as a `]`, then the list's (twin_close), g f's
                # argument as in `[f(a="x", g(b=1))]`; `])` alike.)
                k = _SPACE.match(buf, m.end()).end()
                if k >= len(buf) and not final:
                    return WAIT
                self.close = -1 if k < len(buf) and buf[k] in ")]" else m.start(1)
            else:
                if self.at != self.start:
                    self.tails[m.start(2)] = self  # (from that `,` on, the same scan)
                self.args = _Extent(m.end(), ")]")
        return self.close

    def absorbs(self, text: str, n: int) -> bool:
        self.n = n + len(text)
        return self.args is not None and self.args.advance(text, n) is None


_TURN_TOKENS: dict = {}


def turn_tokens(drv: Driver) -> tuple:
    """The end-of-turn tokens of drv's format that its grammar does not read itself (GLM's
    `<|observation|>` is a terminal of its own, which ends a call): those a reply that
    ends with one is read without (_scan/region.py). A format of Python calls (a bare
    value, PYVALUE, reads any word) takes every end-of-turn token the scanner knows
    (cutter[5]) too: `[g(<|eot_id|>` is the call `[g(` that the end of the turn cut (Llama
    3's token after a bare pythonic list), not `<|eot_id|>` read as its positional
    argument (issue 19)."""
    key = id(drv.c)
    found = _TURN_TOKENS.get(key)
    if found is None or found[0] is not drv.c:
        found = _TURN_TOKENS[key] = (drv.c, _unread(drv, drv.fmt.end_of_turn), "PYVALUE" in drv.c.terminals, {})
    cutter = drv.cutter
    if not found[2] or cutter is None or len(cutter) < 6 or not cutter[5]:
        return found[1]
    more = cutter[5]
    tokens = found[3].get(more)
    if tokens is None:
        tokens = found[3][more] = tuple(dict.fromkeys((*found[1], *_unread(drv, more))))
    return tokens


def _unread(drv: Driver, tokens: tuple) -> tuple:
    """Those of `tokens` that drv's grammar does not read itself, nor ends a call with."""
    read: set = set()
    for name, term in drv.c.terminals.items():
        literal = getattr(term, "literal", None)
        if literal is not None:
            read.add(literal)
        elif _ENDING_NAME.search(name.rpartition("__")[2]) is not None:
            read.update(t for t in tokens if term.pattern.fullmatch(t) is not None)
    return tuple(t for t in tokens if t not in read and t not in drv.fmt.ends)


def turn_end_at(buf: str, tokens: tuple, pos: int) -> int:
    """Where one of `tokens` (a format's end-of-turn tokens) begins, at or after pos,
    when it ends the text, blanks after it at most (-1: none does)."""
    end = len(buf)
    while end > pos and buf[end - 1].isspace():
        end -= 1
    for token in tokens:
        at = end - len(token)
        if at >= pos and buf.startswith(token, at):
            return at
    return -1


def turn_end_may(buf: str, tokens: tuple, pos: int) -> int:
    """Where one of `tokens` (a format's end-of-turn tokens) that may end the reply
    begins, at or after pos, in a stream's text so far: whole at its end (blanks after
    it at most), or begun there (the text may end inside it); -1: none."""
    at = turn_end_at(buf, tokens, pos)
    if at < 0:
        n = len(buf)
        for token in tokens:
            # (begun: the text's last characters, a start of the token, the longest such
            # start at or after pos: tried only where the token's first character is, not
            # at each length in turn, a str.endswith each: a stream of markers asked this
            # of a format's dozens of tokens at each delta, 200 ends looked at a time.)
            lo = n - min(len(token) - 1, n - pos)
            j = buf.find(token[0], lo) if lo < n else -1
            while j >= 0 and not token.startswith(buf[j:]):
                j = buf.find(token[0], j + 1)
            if j >= 0:
                at = j if at < 0 else min(at, j)
    return at


def told_end(d: Any, buf: str) -> int:
    """How far a stream's text so far (not final) is surely text of d's region as parse()
    reads it: the text's end, or where an end-of-turn token of d's format that may end
    the reply begins (turn_end_may), which a reply that ends there is read without
    (_scan/region.py's _before_turn_end). A failure quotes the characters after its
    place and marks with `…` that more follow (tokens._snippet): where they reach such
    a token, only the end of the reply or more text tells what parse() quotes."""
    n = len(buf)
    tokens = turn_tokens(d) if hasattr(d, "c") else ()
    if not tokens:
        return n
    at = turn_end_may(buf, tokens, d.pos)
    return n if at < 0 else at


def _turn_end_next(buf: str, tokens: tuple, pos: int, d: Any = None) -> bool:
    """Whether the text so far ends, at or after pos, with one of `tokens`, whole (blanks
    after it at most) or its start (a stream's text may end inside it), with blanks
    before it from pos, or (`d`: the driver) the start of one of its grammar's literals
    or end markers (`<｜tool▁c` then `<｜end▁of▁sentence｜>`: a closer the end of the
    reply cut, read so once the token is dropped: _close.cut_close)."""
    at = turn_end_may(buf, tokens, pos)
    if at < 0:
        return False
    before = buf[pos:at].lstrip()
    if not before:
        return True
    if d is None or len(before) >= d.c.longest_literal:
        return False
    literals = (t.literal for t in d.c.terminals.values() if t.literal is not None)
    return _close.cut_marker(before, d.fmt.ends) or any(lit.startswith(before) for lit in literals)


TAG_FIRST = r"\s*<"
CALL_TAG_FIRST = r"""\s*(?:[^\s<>{}\[\]()"',=`]{1,256}\s*)?<"""
_TAG_FIRST = fast_source(TAG_FIRST)[1]  # (by `re`: see _words.fast)
_CALL_TAG_FIRST = fast_source(CALL_TAG_FIRST)[1]


def _close_extent(tree: Any, children: list) -> None:
    """A call rule's tree leaves out its anonymous tokens (`)` of `name(a=1)`), so
    the extent of what it keeps stops short of the call's end: note where its last
    token ends (Lark's own field for it, meta.end_pos) for the builder's span. And
    its last part, kept or not (meta.last): whether the call's own end was read
    from the text (a supplied token is empty), for the builder to tell a call the
    end of the reply cut (see Builder._call_end)."""
    if children and isinstance(tree, Tree):
        last = children[-1]
        tree.meta.last = last
        if type(last) is Tok:
            tree.meta.end_pos = last.end_pos

_TRIPLE_FIRST = frozenset("rRuU\"'")  # (what a triple-quoted value may open with: see extent.triple_quote)
