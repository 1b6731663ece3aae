"""A fast lexer for plain lines of Gemma's bare calls (`call:NAME{…}` lines, gemma4_bare).

Read by the LALR driver, a line of gemma4_bare costs four tokens of the driver's
loop (its contextual lexer tries each allowed terminal, looks for a Gemma string
open before the argument token's stop, then simulates the table before each
reduce): about 12 µs a call, and a 32 KB reply of short calls holds thousands. One
regex a line finds the same tokens where the line is plain; they are fed to the
same parse table (Driver._feed), so the tree, and what the builder makes of it,
are the general way's own.

A line is plain where the driver could read it only one way, whatever text came
after: `call:`, a NAME, the arguments opening with `{` or `(` and holding no `<`
(no marker, no `<|"|>` string: the driver's through_loose has nothing to look
for), then the line's end, blanks, and `call:` beginning the next line. The
grammar's ARGS stops at that line end and its _NL runs from there to the `call:`,
each as this pattern reads them. Nothing here depends on where the text ends: a
line is fed only once the next line's `call:` has come, and then no later text
changes its tokens. So a stream reads what parse() reads (the last line, and any
line that is not plain, are read by the driver, which reads on after each _NL:
Driver.pause). The frame tries each line start once: a line the stream's text
ends inside is the driver's, and is not scanned again with every delta.

Only for the grammar `gemma4_bare` as compiled (its terminals are checked: _fits).
benchmarks/diff_gemframe.py compares the two ways.
"""

from __future__ import annotations

from typing import Any

import regex

from .._lalr.tokens import Tok

FORMATS = frozenset({"gemma4_bare"})

# The terminals of gemma4_bare.lark as compiled (a literal, or a pattern's source; its
# priority): the tokens below are what its lexer reads. A grammar of that name with other
# terminals goes the general way.
_TERMINALS = {
    "_CALL": ("call:", 0),
    "_NL": ("\\s*\n\\s*(?=call:)", 0),
    "_END": ("(?:<end_function_call>|<tool_call\\|>)", 0),
    "NAME": ("[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}][\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}.\\-]*", 0),
    "ARGS": (
        "[{(][^<\n]*(?:(?:\n(?!\\s*call:)|<(?!tool_call\\||\\|tool_call>|end_function_call>|start_function_call>))[^<\n]*)*",
        0,
    ),
}


def _fits(c: Any) -> bool:
    got = {name: (t.literal if t.literal is not None else t.source, t.priority) for name, t in c.terminals.items()}
    return got == _TERMINALS and not c.ignore


def _line(c: Any) -> Any:
    """One plain line and the blanks to the next line's `call:`: the NAME as its terminal
    reads it (no `{`, `(` in it, so it ends where the arguments begin), the arguments
    to the line's end (ARGS's first run, possessive: a line followed by no `call:` fails
    at once), and _NL (from that line end, a run of blanks, `call:` after it)."""
    name = c.terminals["NAME"].pattern
    return regex.compile(f"call:({name.pattern})([{{(][^<\n]*+)(\n\\s*+)(?=call:)", name.flags)


def applies(drv: Any) -> bool:
    """Whether advance may read drv's region (its format's grammar is gemma4_bare's)."""
    line = getattr(drv, "gem", False)
    if line is None:
        line = drv.c.derived.get("gemframe")
        if line is None:
            line = drv.c.derived["gemframe"] = _line(drv.c) if _fits(drv.c) else False
        drv.gem = line if drv.fmt.name in FORMATS else False
        line = drv.gem
    return line is not False


def advance(drv: Any, buf: str) -> bool:
    """Feed drv the tokens of the plain lines from where it is (the region's start, or
    right after an _NL) on; False when the table refused one (drv.status "spoilt": read
    the region afresh, the general way)."""
    pos = drv.pos
    if drv.status != "wait" or drv.gem_at == pos:
        return True
    if not (drv.taken == 0 and pos == drv.start) and drv.last_term != "_NL":
        return True
    drv.gem_at = pos  # (a line start is looked at once: see the module's docstring)
    match = drv.gem.match
    feed = drv._feed
    taken = 0
    nl_at = pos
    while True:
        m = match(buf, pos)
        if m is None:
            break
        name_at, args_at = m.span(1)
        nl_at, end = m.span(3)
        for tok in (
            Tok("_CALL", "call:", pos, name_at),
            Tok("NAME", buf[name_at:args_at], name_at, args_at),
            Tok("ARGS", buf[args_at:nl_at], args_at, nl_at),
            Tok("_NL", buf[nl_at:end], nl_at, end),
        ):
            if not feed(tok):
                drv.status = "spoilt"
                return False
            if not drv.may_close:
                _may_close(drv)
        taken += 4
        pos = end
    if taken:
        drv.taken += taken
        drv.last_start, drv.last_end, drv.pos = nl_at, pos, pos
        drv.last_term = "_NL"
        drv.gem_at = pos
    return True


def _may_close(drv: Any) -> None:
    """As Driver._run notes after each token it reads (see Driver.may_close)."""
    c = drv.c
    top = drv.stack[-1]
    if c.accepts_end[top] or top == c.end_state:
        drv.may_close = drv.may_end = True
