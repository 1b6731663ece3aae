"""A fast lexer for the plainest Python call lists (`[f(a=1, b='x'), g()]`).

Read by the LALR driver, a 32 KB call list costs about 3 µs a token in the
driver's loop (its contextual lexer tries each allowed terminal, then simulates
the table before each reduce). For a region of plain call lists, one regex an
argument finds the same tokens; each list's are fed to the same parse table
(Driver._feed) once the list has closed, and the region is finished as the
driver finishes it, so the tree, and what the builder makes of it, are the
general way's own. A list that is less plain (stray or escaped quotes, comments,
text no token fits, a marker's characters inside a value, deep nesting) is read
by the driver itself, from its `[`, the general way; so is what follows the lists
when it is not the end of the line (with tools), of the reply, or another list.
The driver stops after each list's `]` (Driver.pause), and the next list is
looked at here again.

A list is taken whole or not at all: where a quoted value ends can depend on the
text after it, up to the call's `)` (`'say 'hi', then go', n=2)`: _repair.quoted_end),
and no value of a plain list has a quote inside, or a marker, so once its `]` has
come its reading no longer depends on what follows. (But for one kind: a value whose
quotes inside, of its own kind, pair up as quoted words, `command="echo "hi" there"`,
which the driver reads whole. Where it ends, the driver's own _quoted tells, as its
lexer would, from the same text: a stream waits while it cannot tell yet. Replies
repeat such a call, and each list was the driver's, token by token: _quoted_arg.)
A stream therefore holds the
driver back while the text ends inside a plain list (HOLD: the deltas are put aside
until one holds a character that may end an item), reading it on from the last
whole argument (a match made never changes with more text: each ends at a `,` or
`)` it has seen), and feeds the list once its `]` has come; the general way where
it is not plain, or where an item left open runs past _HOLD_MAX characters. So a
stream decides nothing a whole parse does not (stream == parse(), in any chunking).

Two lists closed before a call's `)` are read here too, in a whole text (issue 17: the
driver took 70-100 us a list, token by token): a trailing comma then the list's `]`
(`[g(b=1), f(a="x", ]`: Shut) and a plain string value then a `]` written for the
call's `)`, then the next call (`[f(a="x"], g(b=1)]`: Paren). What is not plain there
(the `)` supplied, a value that takes the `]`) is decided by asking the driver itself
each question its own reading asks at that place (Driver._quoted, _comma_list_close,
argument_end, _bracket_for_paren, ...), and done by its own methods; where an answer is
not the one that reading then follows, read_list's answer is taken, as before.

Only for the grammar `pythonic` (its terminals are checked: see _fits), and only
where the driver's lexer would take exactly these tokens: each alternative below
is one it reads the same way (a keyword, which outranks a value; a value that
ends where its brackets and quotes say, blanks after it left out; the literals).
benchmarks/diff_pyframe.py compares the two ways on the corpus and generated lists.
"""

from __future__ import annotations

import re
from typing import Any

import regex

from .._lalr.checkpoint import Checkpoint
from .._lalr.close import CUT_ROOM, open_cut
from .._lalr.extent import triple_quote, twin_before
from .._recover import repair as _repair
from .._lalr.tokens import DONE, Tok
from .._grammar.tables import Shift
from .._grammar.words import lazy
from .._lalr.tree import Meta, Tree

# The formats whose grammar is the plain call list of pythonic.lark.
FORMATS = frozenset({"pythonic"})

HOLD = "hold"  # (advance: a stream waits for the rest of a plain list)

# An item left open at the end of a stream's text (a long value) is looked at again
# with each delta that may end it: past this many characters, the driver reads the list.
_HOLD_MAX = 1024

_STR = r"""'[^'"\\\n\r<>`|]*+'|"[^'"\\\n\r<>`|]*+\""""
_ATOM = r"-?+(?:\d++(?:\.\d*+)?+|\.\d++)(?:[eE][+-]?+\d++)?+|True|False|None|true|false|null"
_INNER_STR = r"""'[^'"\\\n\r<>`|()\[\]{}]*+'|"[^'"\\\n\r<>`|()\[\]{}]*+\""""


def _nested(depth: int) -> str:
    """A bracketed value of atoms and simple strings, at most `depth` levels deep."""
    # (Each repetition possessive, each item atomic: a value that fails late, a long
    # run of digits before a stray letter, is given up at once, not in every split.)
    item = f"(?>{_INNER_STR}|{_ATOM}|[ \\t,:])"
    for _ in range(depth):
        inner = f"(?:{item})*+"
        item = f"(?>{_INNER_STR}|{_ATOM}|[ \\t,:]|\\[{inner}\\]|\\({inner}\\)|\\{{{inner}\\}})"
    inner = f"(?:{item})*+"
    return f"\\[{inner}\\]|\\({inner}\\)|\\{{{inner}\\}}"


# One argument: a keyword and `=` (or none: a positional value), a value, then `,`
# or `)` (blanks around each). (A keyword given twice is the builder's to tell.)
_ARG_SOURCE = (
    rf"(?:(?P<key>[A-Za-z_][A-Za-z0-9_]*)(?P<s1>[ \t]*)=(?!=)(?P<s2>[ \t]*))?"
    rf"(?P<value>(?>{_STR}|{_ATOM}|{_nested(2)}))(?P<s3>[ \t]*+)(?P<sep>[,)])"
)
_NAME_SOURCE = r"([A-Za-z_][A-Za-z0-9_.\-]*)([ \t]*)\("
# (Each compiled when a pythonic list is first read, not at import: the argument's
# patterns, nested brackets and all, cost tens of milliseconds to compile.)
# (The blanks before it too: no argument starts with a `)`, which read_list then looks for.)
_ARG = lazy(re.compile, rf"[ \t]*+(?:{_ARG_SOURCE})", re.ASCII)
_NAME = lazy(re.compile, _NAME_SOURCE, re.ASCII)
# (The same, where a stream's text ends: does it end inside one? regex's partial match.)
_ARG_BEGUN = lazy(regex.compile, _ARG_SOURCE, regex.ASCII | regex.V0)
_NAME_BEGUN = lazy(regex.compile, _NAME_SOURCE, regex.ASCII | regex.V0)
# (_ARG's groups, by number: its groupindex, which tests/test_frame.py checks.)
_KEY, _S1, _VALUE, _SEP = 1, 2, 4, 6
_BLANK = lazy(re.compile, r"[ \t]*")
_WS = lazy(re.compile, r"[ \t\r\n\f]*")
# An argument whose value opens with a quote (a keyword and `=` first, or none), up to
# that quote; and what follows such a value (see _quoted_arg).
_QUOTED_ARG = lazy(re.compile, r"(?:([A-Za-z_][A-Za-z0-9_]*)([ \t]*)=(?!=)[ \t]*)?(?=['\"])", re.ASCII)
_VALUE_SEP = lazy(re.compile, r"[ \t]*+([,)])")
# An argument whose plain string value a `]` follows, written for its call's `)` (see
# Paren); and the driver's own first characters of a triple-quoted value.
_PAREN_ARG = lazy(re.compile, rf"(?:([A-Za-z_][A-Za-z0-9_]*)([ \t]*)=(?!=)[ \t]*)?({_STR})[ \t]*\]", re.ASCII)
_TRIPLE_FIRST = frozenset("rRuU\"'")

# What a list's items are: a call (after `[` or a `,` between calls), its first
# argument or `)` (after `(`), an argument (after a `,` in a call), `,` or `]` (after
# a call's `)`).
_CALL, _FIRST, _NEXT, _AFTER = "call", "first", "next", "after"


# The terminals of pythonic.lark as compiled (a pattern's source, or a literal; its
# priority): the tokens below are what its lexer reads. A grammar of that name with
# other terminals (a user's, or this one edited) goes the general way, which
# tests/test_frame.py would tell for the built-in one.
_NAME_CHARS = r"[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}"
_TERMINALS = {
    "NAME": (rf"(?:[A-Za-z_]|\\_){_NAME_CHARS}.\-]*+(?:\\_{_NAME_CHARS}.\-]*+)*+(?=\s*\()", 0),
    "KEY": (rf"(?:[A-Za-z_]|\\_){_NAME_CHARS}]*+(?:\\_{_NAME_CHARS}]*+)*+(?=\s*=(?!=))", 2),
    "PYVALUE": (r"[^\s,()]", -1),
    "WS": ("(?:[ \t\x0c\r\n])+", 0),
    "LSQB": ("[", 0), "RSQB": ("]", 0), "LPAR": ("(", 0), "RPAR": (")", 0), "COMMA": (",", 0),
    "EQUAL": ("=", 0), "QUOTE": ("'", 0), "DBLQUOTE": ('"', 0), "SEMICOLON": (";", 0),
}  # fmt: skip


def _fits(c: Any) -> bool:
    """Whether c's terminals and %ignore are those of pythonic.lark."""
    got = {name: (t.literal if t.literal is not None else t.source, t.priority) for name, t in c.terminals.items()}
    return got == _TERMINALS and [t.source for t in c.ignore] == [_TERMINALS["WS"][0]]


class Begun:
    """How far a plain list's reading got where a stream's text ended inside it: its
    tokens so far, where its next item's text starts (blanks first), what it is."""

    __slots__ = ("toks", "pos", "item")

    def __init__(self, toks: list, pos: int, item: str) -> None:
        self.toks = toks
        self.pos = pos
        self.item = item


class Part:
    """The plain beginning of a list that is not plain further on (an item no token
    here fits, or, final, the end of the text inside an item): its tokens up to the
    `)` of its last whole call, and where that `)` ends. A call's reading depends on
    no text after its `)` (see the module's docstring), so the driver takes these
    tokens as its own lexer would, and reads on from there the general way. Where the
    end of the reply cut a call inside an argument, no more text can come: its whole
    keyword arguments before are taken too (through the `,` after the last; not where
    it has a positional one, whose quoted value may end where a later quote says)."""

    __slots__ = ("toks", "end")

    def __init__(self, toks: list, end: int) -> None:
        self.toks = toks
        self.end = end


class Shut:
    """A plain list but for its last call, whose `)` was left out after a trailing comma
    before the list's `]` (`[g(b=1), f(a="x", ]`): its tokens through that comma, and
    where the `]` is (after blanks). A whole text's only (read_list's `final`, asked by
    advance: `quoted`); advance reads it as the driver does (_shut), or hands it over."""

    __slots__ = ("toks", "close")

    def __init__(self, toks: list, close: int) -> None:
        self.toks = toks
        self.close = close


class Paren:
    """A plain list up to an argument whose plain string value a `]` follows (`[f(a="x"],
    g(b=1)]`), which the driver may read as written for the call's `)`, the list going on
    (Driver._bracket_for_paren): its tokens before that argument, where it begins (`pos`,
    blanks passed; `at`, `item`: as _short takes them, the reading's own where it is not
    read so: read_list's answer then), and its match (_PAREN_ARG). A whole text's only
    (read_list's `final`, asked by advance: `quoted`); advance reads it (_paren)."""

    __slots__ = ("toks", "pos", "at", "item", "m")

    def __init__(self, toks: list, pos: int, at: int, item: str, m: Any) -> None:
        self.toks = toks
        self.pos = pos
        self.at = at
        self.item = item
        self.m = m


def _part(toks: list, cut: bool = False) -> Part | None:
    """The Part of a list whose item after `toks` is not plain (`cut`: the end of the
    reply cut that item, an argument); None: nothing of it to take."""
    k = len(toks)
    while k > 1 and toks[k - 1][0] not in _CLOSERS:  # (the last call's own tokens, read once)
        k -= 1
    if cut and k > 1 and toks[k - 1][0] == "COMMA":
        # (Keyword arguments only, each KEY EQUAL PYVALUE COMMA, since the call's `(`.)
        i = k - 1
        while i >= 4 and toks[i - 1][0] == "PYVALUE" and toks[i - 2][0] == "EQUAL":
            i -= 4
        if toks[i][0] == "LPAR":
            return Part(toks[:k], toks[k - 1][2])
    while k > 1 and toks[k - 1][0] != "RPAR":
        k -= 1
    return Part(toks[:k], toks[k - 1][2]) if k > 1 else None


_CLOSERS = frozenset({"RPAR", "COMMA"})


def read_list(buf: str, start: int, final: bool, begun: Begun | None = None, quoted: Any = None) -> Any:
    """The tokens (terminal, start, end) of the plain list whose `[` is at start, once
    it has closed: (tokens, where it ends); None: not a plain list (or, final, one
    the text cuts), a Part where its calls before the item that is not are; a Begun
    where a stream's text ends inside a plain list (`begun`: one such, to read on
    from). quoted: the driver's reading of a quoted value with quotes of its kind
    inside (see _quoted_arg); None: such a value is no plain one."""
    if begun is None:
        toks = [("LSQB", start, start + 1)]
        pos, item = start + 1, _CALL
    else:
        toks, pos, item = begun.toks, begun.pos, begun.item
    add = toks.append
    n = len(buf)
    while True:
        at = pos  # (where this item's text starts: a stream reads it again from here)
        if item is _CALL:
            pos = _WS.match(buf, pos).end()
            m = _NAME.match(buf, pos)
            if m is None:
                return _short(_NAME_BEGUN, buf, pos, final, toks, at, item)
            regs = m.regs  # (the groups' places at once: a list of calls has thousands)
            add(("NAME", *regs[1]))
            pos = regs[0][1]
            add(("LPAR", regs[2][1], pos))
            item = _FIRST
            continue
        if item is _AFTER:
            pos = _WS.match(buf, pos).end()
            if pos >= n:
                return _part(toks) if final else Begun(toks, at, item)
            if buf[pos] == ",":
                add(("COMMA", pos, pos + 1))
                pos, item = pos + 1, _CALL
                continue
            if buf[pos] == "]":
                add(("RSQB", pos, pos + 1))
                return toks, pos + 1
            return _part(toks)
        a = _ARG.match(buf, pos)  # (the commonest first: an argument)
        if a is not None:
            regs = a.regs
            if regs[_KEY][0] >= 0:  # (else a positional value)
                add(("KEY", *regs[_KEY]))
                eq = regs[_S1][1]
                add(("EQUAL", eq, eq + 1))
            add(("PYVALUE", *regs[_VALUE]))
            sep, pos = regs[_SEP]  # (the match's last group)
            if buf[sep] == ")":
                add(("RPAR", sep, pos))
                item = _AFTER
            else:
                add(("COMMA", sep, pos))
                item = _NEXT
            continue
        pos = _BLANK.match(buf, pos).end()
        if item is _FIRST and buf.startswith(")", pos):
            add(("RPAR", pos, pos + 1))
            pos, item = pos + 1, _AFTER
            continue
        if item is _NEXT and buf.startswith(")", pos):
            return _part(toks)  # (a trailing comma: the general way)
        if item is _NEXT and final and quoted is not None and buf.startswith("]", pos):
            return Shut(toks, pos)  # (a trailing comma, then the list's `]`: see Shut)
        if quoted is not None:
            got = _quoted_arg(buf, pos, quoted, add)
            if got is _UNDECIDED:  # (a stream's: a whole text always tells)
                return Begun(toks, at, item) if not final else _part(toks)
            if got is not None:
                pos, item = got
                continue
            if final:
                m = _PAREN_ARG.match(buf, pos)
                if m is not None:
                    return Paren(toks, pos, at, item, m)  # (a `]` for the call's `)`? see Paren)
        return _short(_ARG_BEGUN, buf, pos, final, toks, at, item)  # (no argument here)


_UNDECIDED = "undecided"
# (advance's `quoted`: the driver's lexer reads the value cut at a marker in it, not whole.)
_CUT = "cut"
# How far _short looks for a line's end after an item that did not match.
_LINE_LOOK = 256


def _quoted_arg(buf: str, pos: int, quoted: Any, add: Any) -> tuple | str | None:
    """The argument at pos whose value opens with a quote and has quotes of its kind
    inside, unescaped, that pair up as quoted words (`command="echo "hi" there"`):
    where it ends is what the driver's lexer takes it to be, _repair.quoted_end (it
    looks at the text after it, up to the call's structure), asked of the driver
    itself (`quoted`: its _quoted at a place). Its tokens added, as the driver reads
    them, where a `,` or `)` follows it on its line: (where the next item starts, what
    it is). _UNDECIDED: a stream's text cannot tell yet; None: not such an argument (a
    triple-quoted string, a value Python's reading ends, a stray quote: the driver
    reads the list)."""
    m = _QUOTED_ARG.match(buf, pos)
    if m is None:
        return None
    at = m.end()
    if triple_quote(buf, at) is not None:
        return None
    got = quoted(at)
    if got is _repair.OPEN or type(got) is _repair.QuoteWait:
        return _UNDECIDED
    if type(got) is not tuple or got[1] is not True:
        return None
    end = got[0]
    sep = _VALUE_SEP.match(buf, end)
    if sep is None:
        return None
    if m.start(1) >= 0:
        add(("KEY", m.start(1), m.end(1)))
        eq = m.end(2)
        add(("EQUAL", eq, eq + 1))
    add(("PYVALUE", at, end))
    s, e = sep.span(1)
    if buf[s] == ")":
        add(("RPAR", s, e))
        return e, _AFTER
    add(("COMMA", s, e))
    return e, _NEXT


def _short(begun: Any, buf: str, pos: int, final: bool, toks: list, at: int, item: str) -> Begun | None:
    """Where an item's pattern did not match at pos: a Begun when a stream's text ends
    inside what may still be one, else the Part before it (not plain)."""
    # (No character an item's pattern matches is a line's end: with one soon after pos,
    # the text cannot end inside an item begun there, and the partial match, which costs
    # more than the rest of a list's reading, is not tried. Looked for so far only: a
    # reply of one long line is not searched to its end at each item.)
    ends_inside = buf.find("\n", pos, pos + _LINE_LOOK) < 0
    if final:
        # (The end of the text inside an argument: what was begun may still be one.)
        m = begun.match(buf, pos, partial=True) if item is not _CALL and pos < len(buf) and ends_inside else None
        return _part(toks, item is not _CALL and (pos >= len(buf) or (m is not None and m.partial)))
    if pos < len(buf):
        if not ends_inside:
            return _part(toks)
        m = begun.match(buf, pos, partial=True)
        if m is None or not m.partial:
            return _part(toks)
    return Begun(toks, at, item)


def tokens(buf: str, pos: int, lines: bool) -> tuple[list, int, bool] | None:
    """The tokens of a whole reply's region of plain lists at pos, where it ends,
    and whether it ended at a line's end (lines: the format's regions end there);
    None: not plain (what advance reads, at once: for tests/test_frame.py)."""
    out: list = []
    while True:
        got = read_list(buf, pos, True)
        if got is None or type(got) is Part:
            return None
        toks, end = got
        out += toks
        after = _WS.match(buf, end).end()
        if lines and "\n" in buf[end:after]:
            return out, end, True
        if after >= len(buf):
            return out, end, False
        if buf[after] != "[":
            return None
        pos = after


class _Hold:
    """A stream's delta that cannot change advance's answer (see HOLD): none of
    `stops` in it, and the text held no longer than _HOLD_MAX from `at` on (an
    item's start: the hold is bounded however the text goes on)."""

    __slots__ = ("stops", "until")

    def __init__(self, stops: Any, at: int) -> None:
        self.stops = stops
        self.until = at + _HOLD_MAX

    def absorbs(self, text: str, n: int) -> bool:
        return n + len(text) <= self.until and self.stops.search(text) is None


# (In a list: a character that may end an item, or show it is no plain one; after a
# list: anything but blanks on its line.)
_IN_LIST = re.compile(r"[,()\]\n'\"]")
_AFTER_LIST = re.compile(r"[^ \t]")


def applies(drv: Any) -> bool:
    """Whether advance may read drv's region (its format's grammar is pythonic.lark's;
    an Earley parse has no table to feed: _lalr/earley.py)."""
    py = getattr(drv, "py", False)
    if py is None:
        fits = drv.c.derived.get("pyframe")
        if fits is None:
            fits = drv.c.derived["pyframe"] = _fits(drv.c)
        py = drv.py = fits and drv.fmt.name in FORMATS
    return py is not False


def advance(drv: Any, buf: str, final: bool) -> str | None:
    """Read drv's region on through plain lists, from where drv is (its start, or
    right after a list's `]`): DONE (drv is done: the region ends after a list),
    HOLD (a stream's text ends inside a plain list, or after one, before what
    decides: drv waits, hint set), or None: the driver reads on from where it is
    (drv.status "spoilt": a token the table refused; read the region afresh)."""
    if drv.status != "wait":
        return None
    if drv.taken == 0 and drv.pos == drv.start:
        end = -1
    elif drv.last_term == "RSQB":
        end = drv.pos
    else:
        return None
    n = len(buf)
    asked = [0]  # (how many values _quoted_arg asked the driver about: see `last` below)

    def quoted(p: int) -> Any:
        asked[0] += 1
        got = drv._quoted(buf, p, final)
        if type(got) is tuple and got[1] is True and drv.cutter and open_cut(drv, buf, p, final) is not None:
            # (Read whole, its quotes paired, but for a marker inside Python's string that
            # cuts it, or may (a stream's WAIT): the driver's lexer asks close.open_cut next,
            # and reads it cut there. So does the driver here: the value is no plain one.
            # It was read whole here, in a whole text only: `[f(c=''P<tool_call>{…}</tool_call>
            # \n[e('[')` ran on to the last quote, where the general way, and a stream past
            # _HOLD_MAX, cut it at the line's end (issue 17, fuzz seed 7 #102007488).)
            return _CUT
        return got

    feed, arg = drv._feed, _shortcut(drv.c)  # (once a region, not once a list)
    # The last whole list read here, as (its text, its tokens' places from its `[`; made
    # once a list follows it: till then (None, where it starts, ends, its tokens), then
    # (its text, where it starts, its tokens) till a list the same follows it): a
    # list written the same again (a reply of one call repeated, thousands) has the same
    # tokens, at their places from its own `[` (read_list looks at no text past its `]`),
    # and is not read again. Not a list with a value _quoted_arg read: where that ends,
    # the driver's _quoted tells from the text after it.
    last: tuple | None = None
    # (A list of one call after one the same, that the table read from the same stack to
    # the same stack, the call before folded into the tree of the lists before it: what
    # it makes of the next one the same, from that stack, is that again: _again.)
    twin: list | None = None
    # (The same, for a list of as many plain calls as the list before, written the same or
    # not: the table reads only their tokens' kinds, and puts each call whole (_call): what
    # it makes of the next one so, from that stack, is that again, its calls made anew:
    # _again_shaped.)
    shape: list | None = None
    while True:
        if end < 0:
            at = drv.start
        else:
            at = _WS.match(buf, end).end()
            line_end = drv.lines and "\n" in buf[end:at]
            if line_end or at >= n:
                if not (line_end or final):
                    # (Blanks after the list, that long: the driver reads on, the general way.)
                    return _hold(drv, _AFTER_LIST, end) if n - end <= _HOLD_MAX else None
                drv.line_end = line_end
                status = drv._finish(end)
                if final:
                    status = drv.after_run(buf, True, status)
                if status != DONE:
                    drv.status = "spoilt"  # (a failure of its own is no answer: the general way's)
                    return None
                return DONE
        if not buf.startswith("[", at):
            return _handed(drv, end)
        begun = drv.py if type(drv.py) is Begun and drv.py.toks[0][1] == at else None
        if last is not None and begun is None and len(last) == 4:
            last = (buf[last[1] : last[2]], last[1], last[3])  # (its text, made once a list follows it)
        if last is not None and begun is None and buf.startswith(last[0], at):
            drv.py = True
            if len(last) == 3:
                # (Its tokens' places from its `[`, made once the text is written again: a
                # list that differs from the one before, as each other one of a reply whose
                # lists the driver reads every second (`[f(a="x"]` then `[g()]`), does not
                # need them.)
                p, toks = last[1], last[2]
                last = (last[0], [(t, s - p, e - p) for t, s, e in toks])
            toks = last[1]
            end = at + len(last[0])
            if twin is not None and _again(drv, buf, toks, at, twin):
                continue
            if shape is not None and _again_shaped(drv, buf, toks, at, shape, True):
                continue
            seen = _before(drv) if arg is not None else None
            held = _held(drv) if arg is not None else None
            if not _fed(drv, buf, toks, feed, arg, at):
                return None
            twin = _twin(drv, seen, toks, at) if seen is not None else None
            shape = _shaped(drv, held, toks, at) if held is not None and twin is None else None
            continue
        before = asked[0]
        paren = None  # (a Paren handed over: see _before_paren)
        got = read_list(buf, at, final, begun, quoted)
        if type(got) is Begun:
            drv.py = True
            if n - got.pos > _HOLD_MAX:
                return None  # (an item that long: the driver reads the list)
            drv.py = got
            return _hold(drv, _IN_LIST, got.pos)
        drv.py = True
        if got is None:
            return _handed(drv, end)
        if type(got) is Paren:
            parts = _paren(drv, buf, got, final, quoted)
            if parts is not None:
                for toks, stray in parts[:-1]:
                    if not _fed(drv, buf, toks, feed, arg):
                        return None
                    if stray:
                        drv.stray = True  # (as its lexer notes, a stray quote after the value)
                    drv.far = True  # (as the driver's lexer notes at a value it reads)
                    if drv.cutter:
                        drv.quote_wait = None  # (as Driver._cut notes)
                    told = len(drv.listed_ends or ())
                    drv._paren_for_bracket()  # (the call's `)`, supplied: closed_tag)
                    if len(drv.listed_ends or ()) == told:
                        return None  # (the table took no `)` there: the driver reads on, as it would)
                toks, end = parts[-1]
                if not _fed(drv, buf, toks, feed, arg):
                    return None
                last = twin = shape = None
                continue
            paren = got
            got = _short(_ARG_BEGUN, buf, got.pos, final, got.toks, got.at, got.item)  # (read_list's answer)
            if got is None:
                _handed(drv, end)
                return _before_paren(drv, buf, paren, 0)
        if type(got) is Shut:
            shut = _shut(drv, buf, got, feed, arg, quoted, final)
            if shut is None:
                return None
            if shut:
                end, last, twin, shape = got.close + 1, None, None, None
                continue
            got = _part(got.toks)  # (not read so here: the driver reads the call, as before)
            if got is None:
                return _handed(drv, end)
        if type(got) is Part:
            # The driver reads on from the `)` of the list's last whole call, or the `,`
            # after the last whole argument of a call the end cut; a salvage of what it
            # then fails to read goes on from there too (Checkpoint: and from that `)`,
            # a point between calls).
            toks = got.toks
            if drv.last_term == "RSQB" and not (drv.checkpoints and drv.checkpoints[-1].pos >= drv.pos):
                # (Right after the whole list before it, read here: a point between lists,
                # which no text after it changes (a call's reading looks at none past its
                # `)`). A salvage of what the driver then fails to read replays from there,
                # and reads the region again up to its points from there, not from the
                # region's start: a thousand plain lists, the last cut before its `]`, were
                # read four times by the driver's own lexer (issue 17: 1 s at 32 KB).)
                drv.checkpoints.append(Checkpoint(drv))
            whole = len(toks)
            while whole > 0 and toks[whole - 1][0] != "RPAR":
                whole -= 1
            for part in (toks[:whole], toks[whole:]) if 0 < whole < len(toks) else (toks,):
                if not _fed(drv, buf, part, feed, arg):
                    return None
                drv.checkpoints.append(Checkpoint(drv))
            if paren is not None:
                return _before_paren(drv, buf, paren, len(toks))
            return None
        toks, end = got
        last = (None, at, end, toks) if asked[0] == before and begun is None else None
        if shape is not None and _again_shaped(drv, buf, toks, 0, shape):
            continue
        held = _held(drv) if arg is not None else None
        if not _fed(drv, buf, toks, feed, arg):
            return None
        shape = _shaped(drv, held, toks, 0) if held is not None else None


def _shut(drv: Any, buf: str, got: Shut, feed: Any, arg: tuple | None, quoted: Any, final: bool) -> bool | None:
    """Read the list got notes (Shut) as the driver's own reading of it does: its tokens
    through the trailing comma, the call's `)` supplied there (Driver._comma_list_close:
    closed_tag, the call's own), then the list's `]`; True. False: not read so here,
    nothing fed (a quoted value of that call that Driver._quoted reads otherwise than
    as the plain string it ends at, or a call after the `]`: the list goes on). None:
    drv spoilt, or handed over after that comma (the driver reads on from there).

    Why these are the driver's tokens: the calls before the last one are whole (Part's
    reasoning); in the last one, each value ends at its `,` where the driver's lexer ends
    it too: an unquoted one where the argument's scan stops (the `,`, as in a whole call),
    a quoted one where Driver._quoted, asked as its lexer asks it, finds Python's string
    to be the value (None: its end is then the scan's too). At the `]` after the comma no
    token fits (PYVALUE begins with none of `,)]`; blanks are skipped), and _run, the
    reading far, asks _comma_list_close, which supplies the `)` at the comma's end; the
    `]` is then the next token, the list's. Only blanks between: a line's end there is
    the driver's to read (Driver.lines). The checkpoint after the `]` (a point between
    lists) is where a salvage replays from, as after a list the driver read."""
    toks, close = got.toks, got.close
    if "```" in drv.fmt.ends or _comma_call().match(buf, close + 1) is not None:
        return False  # (close.fence_cut reads a quoted value; a call after the `]`: the list goes on)
    k = len(toks) - 1
    while toks[k][0] != "NAME":
        k -= 1
    stray = False
    for term, s, _ in toks[k:]:
        if term == "PYVALUE" and buf[s] in "'\"":
            told = _told(quoted, s)
            if told is None:
                return False
            stray = stray or told
    if not _fed(drv, buf, toks, feed, arg):
        return None
    if stray:
        drv.stray = True  # (as its lexer notes, a stray quote after a value)
    drv.far = True  # (as _run notes where its lexer found no token)
    if drv._comma_list_close(buf, final) is not True:
        drv.checkpoints.append(Checkpoint(drv))  # (handed over after the comma, as a Part of a cut call is)
        return None
    if not _fed(drv, buf, [("RSQB", close, close + 1)], feed, arg):
        return None
    drv.checkpoints.append(Checkpoint(drv))
    return True


def _paren(drv: Any, buf: str, got: Paren, final: bool, quoted: Any) -> list | None:
    """The tokens of the list got begins (Paren), where the driver's own reading of it
    reads each such argument's `]` as written for its call's `)` (_lone) and the rest of
    the list is plain: [the tokens up to each such value, the value and its `]` last (the
    `)` to supply after it), ..., (the tokens after the last, through the list's `]`, where
    it ends)]. None: not so (nothing asked of the driver changed what it reads).

    Why these are the driver's tokens: those before the call of such an argument are a
    plain list's (read_list); in that call, a quoted value before it ends where
    Driver._quoted finds Python's string to be the value (asked, as its lexer asks), an
    unquoted one where the argument's scan stops, at its `,`; the argument's key and `=`
    are the lexer's own (its patterns, at that text alone); the value is the driver's
    PYVALUE through the `]` (_lone: each question its lexer asks there, asked and
    answered so); after the `)` the driver supplies there, the list reads on as a plain
    one does, from that `)` (read_list), each call whole."""
    parts: list = []
    while True:
        m = got.m
        toks = got.toks
        k = len(toks) - 1
        while k >= 0 and toks[k][0] != "NAME":
            k -= 1
        if k < 0:
            return None
        for term, s, _ in toks[k:]:
            if term == "PYVALUE" and buf[s] in "'\"" and _told(quoted, s) is not False:
                return None
        value = m.start(3)
        if _lone(drv, buf, value, final, quoted) != m.end():
            return None
        toks = list(toks)
        if m.start(1) >= 0:
            toks.append(("KEY", m.start(1), m.end(1)))
            eq = m.end(2)
            toks.append(("EQUAL", eq, eq + 1))
        toks.append(("PYVALUE", value, m.end()))
        parts.append((toks, _told(quoted, value)))  # (its stray quote: the driver notes it)
        got = read_list(buf, m.end(), final, Begun([], m.end(), _AFTER), quoted)
        if type(got) is tuple:
            parts.append(got)
            return parts
        if type(got) is not Paren:
            return None


def _before_paren(drv: Any, buf: str, got: Paren, fed: int) -> None:
    """None (the driver reads on), where advance hands the list of got (Paren) over to
    the driver, the first `fed` of its tokens taken: the plain tokens after them up to
    that argument's value, `[f(a=` or `, g(b=` (the call's name, `(`, and the argument's
    key and `=`, as _paren reads them), taken by the driver as its lexer reads them
    (Driver.take_read), not read again. Not where an argument of that call comes
    before (its value's reading is the driver's)."""
    rest = got.toks[fed:]
    for term, _, _ in rest:
        if term == "PYVALUE":
            return None
    m = got.m
    if m.start(1) >= 0:
        eq = m.end(2)
        rest = [*rest, ("KEY", m.start(1), m.end(1)), ("EQUAL", eq, eq + 1)]
    if rest and drv.status == "wait":
        drv.py_from = drv.pos  # (the list still counts as handed over: region._read)
        drv.take_read(buf, rest)
    return None


# The first tokens of a list, `[f(a=`, as read_list and _before_paren read them: the
# `[`, blanks, the call's name and `(`, blanks and the first argument's key and `=`.
_HEAD = lazy(re.compile, r"\[[ \t\r\n\f]*([A-Za-z_][A-Za-z0-9_.\-]*)[ \t]*\([ \t]*([A-Za-z_][A-Za-z0-9_]*)([ \t]*)=(?!=)", re.ASCII)


def take_head(drv: Any, buf: str) -> None:
    """Where region._read lets the driver read the next list on its own, pyframe not
    looking (after lists in a row it handed over, none plain: Driver.py_back), the
    plain first tokens of that list, `[f(a=`, taken by the driver as its lexer reads
    them (Driver.take_read), as _before_paren hands them over after such a look: not
    lexed one by one (a storm of lists closed before their call's `)`, each read by the
    driver: a third of the reading of each). A whole text's only, right after a list's
    `]`, blanks alone between; the driver takes what take_read takes, and lexes the rest."""
    if drv.status != "wait" or drv.last_term != "RSQB":
        return
    at = _WS.match(buf, drv.pos).end()
    m = _HEAD.match(buf, at)
    if m is None:
        return
    eq = m.end(3)
    toks = [("LSQB", at, at + 1), ("NAME", m.start(1), m.end(1))]
    lpar = buf.index("(", m.end(1))
    toks += [("LPAR", lpar, lpar + 1), ("KEY", m.start(2), m.end(2)), ("EQUAL", eq, eq + 1)]
    drv.take_read(buf, toks)


def _told(quoted: Any, pos: int) -> bool | None:
    """What the driver's lexer makes of the quoted value at pos (Driver._quoted, asked as
    it asks): False, Python's string is the value (its end then the argument's scan's);
    True, so too, a quote after it that pairs with none (it notes Driver.stray); None,
    not so (it reads the value another way)."""
    got = quoted(pos)
    if got is None:
        return False
    return True if type(got) is tuple and got[1] is False else None


def _lone(drv: Any, buf: str, pos: int, final: bool, quoted: Any) -> int:
    """Where the driver's lexer, at the quoted value at pos (a plain string, blanks and a
    `]` after it), ends its PYVALUE at a `]` written for the call's `)`, a `,` and a call
    after it (Driver._lex, _bracket_for_paren: it then supplies that `)`); -1: not so, or
    not told here (a question of its reading answered otherwise, or not asked here: a
    value near the end of the text, a stream's)."""
    if not final or drv.listed is None or drv.listing or drv.stop is not None or drv.brackets is None or "```" in drv.fmt.ends:
        return -1
    n = len(buf)
    if n - pos < drv.c.longest_literal + CUT_ROOM:
        return -1  # (a closer cut short? the lexer asks close.cut_closer there)
    if buf[pos] in _TRIPLE_FIRST and triple_quote(buf, pos, n) is not None:
        return -1
    cutter = drv.cutter
    if cutter and buf[pos] in cutter[2]:
        return -1  # (a marker at the value's start? the lexer asks)
    if _told(quoted, pos) is None:
        return -1  # (its quotes' reading is the driver's: Python's string is not the value)
    end = None if _repair.open_known(buf, pos) else drv.brackets.argument_end(buf, pos)
    if end is None or not buf.startswith(",", end):
        return -1
    if cutter and drv._first_marker(buf, pos + 1, end) >= 0:
        return -1  # (a marker inside: close.cut's reading; none: it cuts nothing)
    if twin_before(buf, pos, end) >= 0:
        return -1
    lone = drv._bracket_for_paren(buf, pos, end, final)
    return lone if type(lone) is int else -1


def _comma_call() -> Any:
    """The driver's own pattern of a call after a `,` (Driver._comma_list_close)."""
    if not _COMMA_CALL:
        from .._lalr import driver  # (the driver imports the scan package: looked up once, here)

        _COMMA_CALL.append(driver._COMMA_CALL)
    return _COMMA_CALL[0]


_COMMA_CALL: list = []


def _handed(drv: Any, end: int) -> None:
    """None (the driver reads on from where drv is), after a list's `]` (end >= 0) a
    Checkpoint kept there first: a salvage of what the driver then fails to read
    replays the region from that point between lists (salvage_points, _again), not
    from its start through the driver's own lexer. (A region of two thousand plain
    lists whose last one the reply's end cuts right after its `[` was read three
    times more by the driver, for the calls the lists before had already given.)"""
    if end >= 0 and not (drv.checkpoints and drv.checkpoints[-1].pos >= drv.pos):
        drv.checkpoints.append(Checkpoint(drv))
    return None


def _fed(drv: Any, buf: str, toks: list, feed: Any, arg: tuple | None, off: int = 0) -> bool:
    """Feed drv the tokens, as its own reading would have taken them (feed: drv._feed;
    arg: _shortcut's; off: where their places count from); False: the table refused
    one (drv spoilt)."""
    if not _put(drv, feed, buf, toks, arg, off):
        drv.status = "spoilt"
        return False
    drv.taken += len(toks)
    term, start, end = toks[-1]
    drv.pos = drv.last_end = end + off
    drv.last_start = start + off
    drv.last_term = term
    return True


def _put(drv: Any, feed: Any, buf: str, toks: list, arg: tuple | None, off: int = 0) -> bool:
    """Feed drv the tokens (feed: its _feed; their places counted from off); False
    where the table refused one. A call followed by a token (its `,` or `]`) is put
    on the stack whole (_call), and an argument followed by one (its `,` or `)`) in a
    call that is not (_arg); the other tokens are fed one by one. arg: the rule of an
    argument (see _shortcut); None: every token fed."""
    i, n = 0, len(toks)
    while i < n:
        term, s, e = toks[i]
        if arg is not None:
            if term == "NAME":
                got = _call(drv, buf, toks, i, n, off)
            elif term == "KEY" or term == "PYVALUE":  # (a kwarg's PYVALUE goes with its KEY)
                got = _arg(drv, buf, toks, i, n, arg, off)
            else:
                got = -1
            if got >= 0:
                i = got
                continue
        s += off
        e += off
        tok = _new(Tok)  # (as _call_tree makes its tokens)
        tok.type = term
        tok.value = buf[s:e]
        tok.start_pos = s
        tok.end_pos = e
        if not feed(tok):
            return False
        i += 1
    return True


def _call(drv: Any, buf: str, toks: list, i: int, n: int, off: int = 0) -> int:
    """Put the call whose NAME is toks[i] on drv's stack whole, its tree made here, as
    the table would have made it (see _shortcut), where a token of the list follows
    its `)` (which reduces it: a call the list ends with stays open on the stack, as
    a Checkpoint keeps it); and where the state it starts from shifts its NAME (no
    reduce before it) and has a goto for it. The index of the token after the call;
    else -1."""
    stack = drv.stack
    row = drv.c.states[stack[-1]]
    first, goto = row.get("NAME"), row.get("call")
    if first is None or first[0] is not Shift or goto is None:
        return -1
    end = i + 2
    while end < n and toks[end][0] != "RPAR":
        end += 1
    if end + 1 >= n:
        return -1  # (the list's last token, or the call the text cut)
    stack.append(goto[1])
    drv.values.append(_call_tree(buf, toks, i, end, off))
    drv.calls += 1
    return end + 1


def _call_tree(buf: str, toks: list, i: int, end: int, off: int, _new=object.__new__) -> Tree:
    """The tree of the call whose NAME is toks[i] and `)` toks[end], as the table makes it
    (see _call). (Its trees and tokens made with their fields set, not through their
    __init__: a call of a list of thousands makes a dozen.)"""
    _, s, e = toks[i]
    s += off
    e += off
    tok = _new(Tok)
    tok.type = "NAME"
    tok.value = buf[s:e]
    tok.start_pos = s
    tok.end_pos = e
    tree = _new(Tree)
    tree.data = "name"
    tree.children = [tok]
    tree._meta = None
    parts = [tree]
    k = i + 2  # (past NAME and `(`)
    while k < end:  # (each argument KEY EQUAL PYVALUE, or PYVALUE; COMMA between)
        term, s, e = toks[k]
        s += off
        e += off
        if term == "KEY":
            _, vs, ve = toks[k + 2]
            vs += off
            ve += off
            tok = _new(Tok)
            tok.type = "KEY"
            tok.value = buf[s:e]
            tok.start_pos = s
            tok.end_pos = e
            key = _new(Tree)
            key.data = "key"
            key.children = [tok]
            key._meta = None
            tok = _new(Tok)
            tok.type = "PYVALUE"
            tok.value = buf[vs:ve]
            tok.start_pos = vs
            tok.end_pos = ve
            value = _new(Tree)
            value.data = "value"
            value.children = [tok]
            value._meta = None
            tree = _new(Tree)
            tree.data = "kwarg"
            tree.children = [key, value]
            tree._meta = None
            k += 4
        else:
            tok = _new(Tok)
            tok.type = "PYVALUE"
            tok.value = buf[s:e]
            tok.start_pos = s
            tok.end_pos = e
            tree = _new(Tree)
            tree.data = "posarg"
            tree.children = [tok]
            tree._meta = None
            k += 2
        parts.append(tree)
    _, s, e = toks[end]
    s += off
    e += off
    tok = _new(Tok)
    tok.type = "RPAR"
    tok.value = buf[s:e]
    tok.start_pos = s
    tok.end_pos = e
    meta = _new(Meta)  # (Meta() and its fields set, at once)
    meta.__dict__ = {"empty": True, "last": tok, "end_pos": e, "plain": True}  # (plain: what builder._plain_parts would find of it)
    tree = _new(Tree)
    tree.data = "call"
    tree.children = parts
    tree._meta = meta
    return tree


_new = object.__new__


def _before(drv: Any) -> tuple | None:
    """What _twin compares a list's feeding with: drv's stack and values before it, and
    the number of children of the tree of the lists before (values[-4]); None where
    drv is not between two lists so (its values end with a list's `[`, its items' tree,
    its `]`)."""
    values = drv.values
    if drv.marks or len(values) < 4 or type(values[-4]) is not Tree or type(values[-2]) is not Tree:
        return None
    return list(drv.stack), list(values), len(values[-4].children), drv.calls


def _twin(drv: Any, seen: tuple, toks: list, off: int) -> list | None:
    """After a list of one plain call was fed (seen: _before it): [the stack, the tree of
    the lists before, the name of a list's items' tree] where the table read it from
    that stack back to that stack, folding the items of the list before into that tree
    (its children extended with them), and making the new list's items' tree of its
    call alone, no call reduced but that one (_again makes the same of the next list
    written the same); else None."""
    stack, values, n, calls = seen
    now = drv.values
    if drv.marks or drv.calls != calls + 1 or drv.stack != stack or len(now) != len(values):
        return None
    if toks[1][0] != "NAME" or toks[-2][0] != "RPAR" or any(a is not b for a, b in zip(values[:-4], now[:-4])):
        return None
    tree, items, fresh, old = now[-4], values[-2], now[-2], values[-4]
    # (The tree of the lists before: the same, or one made anew around its children, the
    # same list, extended.)
    if type(tree) is not Tree or tree.children is not old.children or tree.data != old.data or tree._meta is not None or old._meta is not None:
        return None
    if len(tree.children) != n + len(items.children) or any(a is not b for a, b in zip(tree.children[n:], items.children)):
        return None
    if type(fresh) is not Tree or fresh._meta is not None or len(fresh.children) != 1:
        return None
    call = fresh.children[0]
    if type(call) is not Tree or call._meta is None or not call._meta.plain or call._meta.end_pos != toks[-2][2] + off:
        return None
    first, last = now[-3], now[-1]
    if type(first) is not Tok or type(last) is not Tok or (first.type, last.type) != (toks[0][0], toks[-1][0]):
        return None
    return [stack, tree.children, fresh.data, drv.calls, tree is not old]


def _again(drv: Any, buf: str, toks: list, off: int, twin: list) -> bool:
    """Put the list whose tokens are toks (from off) on drv as the table would, the list
    before it written the same and fed from the same stack as twin notes (_twin):
    the call of that list folded into the tree of the lists before, this one's call
    made the list's items. False (nothing done): drv is not as twin found it."""
    stack, children, name, calls, anew = twin
    values = drv.values
    if drv.marks or drv.calls != calls or drv.stack != stack:
        return False
    tree = values[-4]
    if type(tree) is not Tree or tree.children is not children or tree._meta is not None:
        return False
    n = len(toks)
    items = values[-2].children
    children.extend(items)
    if anew:
        values[-4] = Tree(tree.data, children)
    term, s, e = toks[0]
    s += off
    e += off
    first = _new(Tok)  # (as _call_tree makes its tokens)
    first.type = term
    first.value = buf[s:e]
    first.start_pos = s
    first.end_pos = e
    term, s, e = toks[-1]
    s += off
    e += off
    last = _new(Tok)
    last.type = term
    last.value = buf[s:e]
    last.start_pos = s
    last.end_pos = e
    call = _call_tree(buf, toks, 1, n - 2, off)
    before = items[0] if len(items) == 1 else None
    if type(before) is Tree and before._meta is not None and before._meta.plain:
        call._meta.twin = before  # (the call of the list before, written the same)
    tree = _new(Tree)
    tree.data = name
    tree.children = [call]
    tree._meta = None
    values[-3] = first
    values[-2] = tree
    values[-1] = last
    drv.calls = twin[3] = calls + 1
    drv.taken += n
    drv.pos = drv.last_end = e
    drv.last_start = s
    drv.last_term = term
    return True


def _calls_of(toks: list) -> list | None:
    """The (NAME, `)`) indexes of each call of a plain list's tokens (read_list's: `[`, the
    calls with `,` between, `]`); None where they are not so."""
    n = len(toks)
    out = []
    i = 1
    while i < n - 1:
        if toks[i][0] != "NAME":
            return None
        end = i + 2
        while end < n and toks[end][0] != "RPAR":
            end += 1
        if end + 1 >= n:
            return None
        out.append((i, end))
        i = end + 2  # (past the `)` and its `,` or `]`)
        if toks[end + 1][0] != ("RSQB" if i >= n else "COMMA"):
            return None
    return out if out and toks[0][0] == "LSQB" and toks[-1][0] == "RSQB" else None


def _held(drv: Any) -> tuple | None:
    """What _shaped compares a list's feeding with: drv's stack and values before it, the
    number of values the list before left (the tree of the lists before it, its `[`, its
    items' trees, one or two, its `]`) and that tree's number of children, drv.calls;
    None where drv is not between two lists so."""
    values = drv.values
    if drv.marks:
        return None
    n = len(values)
    for size in (4, 5):
        if n < size:
            return None
        if type(values[-size]) is not Tree or type(values[-size + 1]) is not Tok or type(values[-1]) is not Tok:
            continue
        if any(type(v) is not Tree or v._meta is not None for v in values[-size + 2 : -1]):
            continue
        items = [(v, list(v.children)) for v in values[-size + 2 : -1]]
        return list(drv.stack), list(values), size, len(values[-size].children), drv.calls, items
    return None


def _shaped(drv: Any, held: tuple, toks: list, off: int) -> list | None:
    """After a list of plain calls was fed (held: _held before it): [the stack, the tree of
    the lists before, its data, the names of the list's items' trees, the number of its
    calls, drv.calls, whether that tree was made anew] where the table read it from that
    stack back to that stack, folding the items of the list before into that tree (its
    children extended with theirs, in order), and making the new list's items' trees of
    its calls alone, the first call one tree, the others one more, as many values as
    before; else None (_again_shaped makes the same of the next list of as many calls)."""
    stack, values, size, n, calls, before = held
    now = drv.values
    spans = _calls_of(toks)
    if spans is None or drv.marks or drv.stack != stack or len(now) != len(values):
        return None
    k = len(spans)
    if drv.calls != calls + k or size != (4 if k == 1 else 5):
        return None
    if any(a is not b for a, b in zip(values[:-size], now[:-size])):
        return None
    tree, old = now[-size], values[-size]
    if type(tree) is not Tree or tree.children is not old.children or tree.data != old.data or tree._meta is not None or old._meta is not None:
        return None
    folded = [c for _, kids in before for c in kids]
    if len(tree.children) != n + len(folded) or any(a is not b for a, b in zip(tree.children[n:], folded)):
        return None
    # (The first item's tree: its children as they were, or extended with the others'
    # (the list's rule takes that tree's own list for its children).)
    head, kids = before[0]
    if len(head.children) == len(folded) and all(a is b for a, b in zip(head.children, folded)) and len(before) > 1:
        merged = True
    elif len(head.children) == len(kids) and all(a is b for a, b in zip(head.children, kids)):
        merged = False
    else:
        return None
    if any(len(v.children) != len(k2) or any(a is not b for a, b in zip(v.children, k2)) for v, k2 in before[1:]):
        return None
    items = now[-size + 2 : -1]
    if any(type(v) is not Tree or v._meta is not None for v in items):
        return None
    made = [c for v in items for c in v.children]
    if len(items[0].children) != 1 or len(made) != k:
        return None
    for call, (_, end) in zip(made, spans):
        if type(call) is not Tree or call._meta is None or not call._meta.plain or call._meta.end_pos != toks[end][2] + off:
            return None
    first, last = now[-size + 1], now[-1]
    if type(first) is not Tok or type(last) is not Tok or (first.type, last.type) != (toks[0][0], toks[-1][0]):
        return None
    return [stack, tree.children, tree.data, [v.data for v in items], k, drv.calls, tree is not old, merged]


def _again_shaped(drv: Any, buf: str, toks: list, off: int, shape: list, same: bool = False) -> bool:
    """Put the plain list whose tokens are toks (from off) on drv as the table would, the
    list before it of as many calls and fed from the same stack as shape notes (_shaped):
    the items of that list folded into the tree of the lists before, this one's calls
    made the list's items. False (nothing done): drv is not as shape found it, or the
    list has another number of calls. `same`: the list before is written the same (each
    call's twin, as _again notes it, is that list's call in its place)."""
    stack, children, data, names, k, calls, anew, merged = shape
    values = drv.values
    if drv.marks or drv.calls != calls or drv.stack != stack:
        return False
    spans = _calls_of(toks)
    if spans is None or len(spans) != k:
        return False
    size = len(names) + 3
    tree = values[-size]
    if type(tree) is not Tree or tree.children is not children or tree._meta is not None:
        return False
    before = [c for v in values[-size + 2 : -1] for c in v.children] if same else None
    if merged:  # (the first item's tree takes the others' children, then the lists' tree its)
        head = values[-size + 2].children
        for v in values[-size + 3 : -1]:
            head.extend(v.children)
        children.extend(head)
    else:
        for v in values[-size + 2 : -1]:
            children.extend(v.children)
    if anew:
        values[-size] = Tree(data, children)
    term, s, e = toks[0]
    s += off
    e += off
    first = _new(Tok)  # (as _call_tree makes its tokens)
    first.type = term
    first.value = buf[s:e]
    first.start_pos = s
    first.end_pos = e
    made = [_call_tree(buf, toks, i, end, off) for i, end in spans]
    if before is not None and len(before) == k:
        for call, twin in zip(made, before):
            if type(twin) is Tree and twin._meta is not None and twin._meta.plain:
                call._meta.twin = twin  # (the call in its place of the list before, written the same)
    items = []
    for name, calls_of in zip(names, (made[:1], made[1:])):
        item = _new(Tree)
        item.data = name
        item.children = calls_of
        item._meta = None
        items.append(item)
    term, s, e = toks[-1]
    s += off
    e += off
    last = _new(Tok)
    last.type = term
    last.value = buf[s:e]
    last.start_pos = s
    last.end_pos = e
    values[-size + 1 :] = [first, *items, last]
    drv.calls = shape[5] = calls + k
    drv.taken += len(toks)
    drv.pos = drv.last_end = e
    drv.last_start = s
    drv.last_term = term
    return True


def _arg(drv: Any, buf: str, toks: list, i: int, n: int, arg: tuple, off: int = 0) -> int:
    """Put the argument that starts at toks[i] (KEY EQUAL PYVALUE, or PYVALUE) on drv's
    stack whole, as _call puts a call, where a token follows it (its `,` or `)`,
    which reduces it): the index of that token; else -1."""
    term, s, e = toks[i]
    s += off
    e += off
    size = 3 if term == "KEY" else 1
    if i + size >= n:
        return -1
    row = drv.c.states[drv.stack[-1]]
    first, goto = row.get(term), row.get(arg[0])
    if first is None or first[0] is not Shift or goto is None:
        return -1
    if size == 3:
        _, vs, ve = toks[i + 2]
        vs += off
        ve += off
        key = Tree("key", [Tok("KEY", buf[s:e], s, e)])
        part = Tree("kwarg", [key, Tree("value", [Tok("PYVALUE", buf[vs:ve], vs, ve)])])
    else:
        part = Tree("posarg", [Tok("PYVALUE", buf[s:e], s, e)])
    drv.stack.append(goto[1])
    drv.values.append(Tree(arg[1], [part]))
    return i + size


def _shortcut(c: Any) -> tuple | None:
    """The rule of an argument (its name in the table, its tree's name), where _call
    and _arg make the trees and stacks the table makes for this grammar; None: a
    grammar whose rules differ (a user's, named pythonic), read token by token.
    Worked out once a grammar."""
    got = c.derived.get("pyframe_calls", False)
    if got is False:
        got = c.derived["pyframe_calls"] = _checked_shortcut(c)
    return got


# Lists _checked_shortcut reads both ways, to each of their tokens: calls with no
# argument, keyword ones, positional ones, mixed, each followed by `,` and by `]`.
_PROBES = ("[f(),f(a=1),f(1),f(a=1,2,b='x'),f(1,a=2),f()]", "[f(a=1,b=2)]", "[f(1)]")


def _checked_shortcut(c: Any) -> tuple | None:
    from .._lalr.driver import Driver  # (the driver imports the scan package)

    args = {(r.origin.name, r.tree_name) for r in c.callbacks if [s.name for s in r.expansion] in (["kwarg"], ["posarg"])}
    if len(args) != 1:
        return None
    arg = args.pop()
    for text in _PROBES:
        toks = read_list(text, 0, True)
        if type(toks) is not tuple:
            return None
        toks = toks[0]
        each = _Probe(c)  # (fed one token more at a time)
        for upto in range(1, len(toks) + 1):
            drv = _Probe(c)
            if not (
                _put(each, lambda tok: Driver._feed(each, tok), text, toks[upto - 1 : upto], None)
                and _put(drv, lambda tok, drv=drv: Driver._feed(drv, tok), text, toks[:upto], arg)
            ):
                return None
            if (drv.stack, _shape(drv.values), drv.calls) != (each.stack, _shape(each.values), each.calls):
                return None
    return arg


class _Probe:
    """What Driver._feed reads and changes of a driver."""

    def __init__(self, c: Any) -> None:
        self.c = c
        self.stack = [c.start_state]
        self.values: list = []
        self.calls = 0
        self.marks = None


def _shape(node: Any) -> Any:
    """A tree, its tokens and what a call's meta notes, as plain data to compare."""
    if node is None or type(node) is list:
        return node and [_shape(x) for x in node]
    if type(node) is Tok:
        return (node.type, node.value, node.start_pos, node.end_pos)
    meta = node._meta
    noted = None if meta is None else (_shape(getattr(meta, "last", None)), getattr(meta, "end_pos", None), meta.empty)
    return (node.data, _shape(node.children), noted)


def _hold(drv: Any, stops: Any, at: int) -> str:
    drv.hint = [_Hold(stops, at)]
    drv.recheck = 0
    return HOLD
