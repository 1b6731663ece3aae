"""A fast lexer for the plainest Python call lists (`[f(a=1, b='x'), g()]`).

Read by the LALR driver, a 32 KB call list costs about 3 µs a token in the
driver's loop (its contextual lexer tries each allowed terminal, then simulates
the table before each reduce). For a whole reply whose region is a list of
plain calls, one regex finds the same tokens at once; they are fed to the same
parse table (Driver._feed) and the same finish, so the tree, and what the
builder makes of it, are the general way's own. Anything less plain (stray or
escaped quotes, comments, text no token fits, a marker's characters inside a
value, deep nesting, a list not followed by the end of its line or of the reply)
makes read() answer False before the driver is touched, and the driver reads the
region as it always did. A stream's driver reads on from where it stopped, the
general way (a stream decides nothing this does not: it equals parse()).

Only for the grammar `pythonic` (its terminals are checked: see _fits), and only
where the driver's lexer would take exactly these tokens: each alternative below
is one it reads the same way (a keyword, which outranks a value; a value that
ends where its brackets and quotes say, blanks after it left out; the literals).
benchmarks/diff_pyframe.py compares the two ways on the corpus and generated lists.
"""

from __future__ import annotations

import re
from typing import Any

from .._lalr.tokens import Tok

# The formats whose grammar is the plain call list of pythonic.lark.
FORMATS = frozenset({"pythonic"})

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
_ARG = re.compile(
    rf"(?:(?P<key>[A-Za-z_][A-Za-z0-9_]*)(?P<s1>[ \t]*)=(?!=)(?P<s2>[ \t]*))?"
    rf"(?P<value>(?>{_STR}|{_ATOM}|{_nested(2)}))(?P<s3>[ \t]*+)(?P<sep>[,)])",
    re.ASCII,
)
_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]*)([ \t]*)\(([ \t]*)", re.ASCII)
_BLANK = re.compile(r"[ \t]*")
_WS = re.compile(r"[ \t\r\n\f]*")


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


def tokens(buf: str, pos: int, lines: bool) -> tuple[list, int, bool] | None:
    """The tokens (terminal, start, end) the driver would read from the list at pos,
    where the region ends, and whether it ended at a line's end (lines: the
    format's regions end there); None: not a plain list."""
    out: list = []
    add = out.append
    n = len(buf)
    while True:
        if pos >= n or buf[pos] != "[":
            return None
        add(("LSQB", pos, pos + 1))
        pos = _WS.match(buf, pos + 1).end()
        while True:
            m = _NAME.match(buf, pos)
            if m is None:
                return None
            add(("NAME", m.start(1), m.end(1)))
            add(("LPAR", m.end(2), m.end(2) + 1))
            pos = m.end()
            if buf.startswith(")", pos):
                add(("RPAR", pos, pos + 1))
                pos += 1
            else:
                while True:
                    a = _ARG.match(buf, pos)
                    if a is None:
                        return None
                    if a.start("key") >= 0:  # (else a positional value)
                        add(("KEY", a.start("key"), a.end("key")))
                        eq = a.end("s1")
                        add(("EQUAL", eq, eq + 1))
                    add(("PYVALUE", a.start("value"), a.end("value")))
                    sep = a.start("sep")
                    pos = a.end()
                    if buf[sep] == ")":
                        add(("RPAR", sep, pos))
                        break
                    add(("COMMA", sep, pos))
                    pos = _BLANK.match(buf, pos).end()
                    if buf.startswith(")", pos):
                        return None  # (a trailing comma: the general way)
            pos = _WS.match(buf, pos).end()
            if buf.startswith(",", pos):
                add(("COMMA", pos, pos + 1))
                pos = _WS.match(buf, pos + 1).end()
                continue
            if buf.startswith("]", pos):
                add(("RSQB", pos, pos + 1))
                pos += 1
                break
            return None
        end = pos
        after = _WS.match(buf, pos).end()
        if after >= n:
            return out, end, False
        if lines and "\n" in buf[pos:after]:
            return out, end, True
        if buf[after] != "[":
            return None
        pos = after


def read(drv: Any, buf: str) -> bool:
    """Read drv's region of the whole text buf through the fast tokens, as Driver.run
    would: True, drv done; False, drv untouched (or, after a token the table would
    not take, spoilt: the caller starts a new one)."""
    if drv.fmt.name not in FORMATS or drv.pos != drv.start or drv.status != "wait":
        return False
    found = tokens(buf, drv.pos, drv.lines)
    if found is None:
        return False
    toks, end, line_end = found
    fits = drv.c.derived.get("pyframe")
    if fits is None:
        fits = drv.c.derived["pyframe"] = _fits(drv.c)
    if not fits:
        return False
    feed = drv._feed
    for term, s, e in toks:
        if not feed(Tok(term, buf[s:e], s, e)):
            drv.status = "spoilt"
            return False
        drv.taken += 1
    term, s, e = toks[-1]
    drv.pos = drv.last_end = e
    drv.last_start = s
    drv.last_term = term
    drv.line_end = line_end
    if drv.after_run(buf, True, drv._finish(end)) != "done":
        drv.status = "spoilt"  # (a failure of its own is no answer: the general way's)
        return False
    return True
