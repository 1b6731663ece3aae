"""A marker inside a string of a call that no format read (QA12 N5): prose, as the
call around it is.

A call with no marker (a Python list `[write_file(path='…')]`, a JSON object
`{"name": …}`, Functionary v3.2's `{…}` after `>>>name`, Gemma's bare `call:f{…}`) is
read only where its format allows (with tools, at the reply's start, at a line's
start); elsewhere it stays prose. A string in it may quote a call of a format that has
markers (`{"content": "<|tool_call>call:rm{…}<tool_call|>"}`): read as a real call, it
would run a call the model only wrote about, with the string's escapes in its
arguments, and leave a hole in the prose. So a start marker found in prose is prose
when, read back from it, it is inside a string of such a call: the last place before
it within LOOK that opens one (`{"`, `[name(` then an argument, `call:name{`), its
strings and brackets read up to the marker, leaves a string open there and the call's
brackets not yet closed.

Only the text before the marker decides, no further back than LOOK: a stream keeps
that much before the place its prose has reached (Scanner._trim), so it decides as a
whole parse does, with nothing held back.
"""

from __future__ import annotations

import re

import regex

# How far back from a marker the call around it is looked for.
LOOK = 2048
# What any string of them holds (`<|"|>` holds a `"`): a prose without one is told at
# once (the common case, between two calls, is asked per call). Written to begin with
# a character class, `<escape>` told by what follows its `<`: the stdlib's engine then
# skips to those three characters (`[\"']|<escape>`, an alternation, was tried at each
# character: 5 µs for 300 characters of prose).
QUOTE = re.compile(r"[\"'<](?:(?<=<)escape>|(?<!<))")


def quoted(buf: str, lo: int, hi: int) -> bool:
    """Whether buf[lo:hi] holds what QUOTE matches: str.find of each quote and of `<`
    (memchr, faster still than QUOTE's search), then of `<escape>` from that `<`."""
    find = buf.find
    if find('"', lo, hi) >= 0 or find("'", lo, hi) >= 0:
        return True
    lt = find("<", lo, hi)
    return lt >= 0 and find("<escape>", lt, hi) >= 0

# Where a call opens (matched at the place a search for its first characters found) and
# the tokens that matter inside it: strings (closed: a named group matched) and brackets.
# (A string's body is written as runs of plain characters between its escapes: a
# character at a time, `(?:[^"\\]|\\.)*+`, the regex module took 90 ns each.)
# A JSON or Python string ends at its line's end, so their call opens on the marker's
# line; a Gemma string may hold new lines.
_JSON = ('{"', regex.compile(r'\{"'), regex.compile(r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+(?P<c>")?|[\[\]{}]'), True)
_PYTHON = (
    "[",
    regex.compile(r"\[[ \t]*[A-Za-z_][\w.]*\((?=[ \t]*(?:[A-Za-z_]\w*[ \t]*=|['\"]))"),
    regex.compile(r"""'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+(?P<c>')?|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+(?P<d>")?|[\[\](){}]"""),
    True,
)


def _gemma_tokens(plain: str) -> str:
    """Gemma's tokens, a string's characters `plain` (with or without new lines)."""
    quote, escape = r'<\|"\|>', "<escape>"
    strings = (f"{q}{plain}*+(?:<(?!{q[1:]}){plain}*+)*+(?P<{g}>{q})?" for q, g in ((quote, "c"), (escape, "d")))
    return "|".join((*strings, r"[\[\]{}]"))


_GEMMA = ("call:", regex.compile(r"call:[\w.\-]+\{"), regex.compile(_gemma_tokens("[^<]")), False)
# A Gemma call named in a sentence (`Use call:foo{a:<|"|>…`: see _in_sentence) is prose
# about the syntax: its string, left open, ends at its line's end as a JSON one does
# (QA13 F3: else every call for LOOK characters after it was prose, silently).
_GEMMA_IN_LINE = regex.compile(_gemma_tokens("[^<\\n]"))
# How many places a call's first characters are found at, back from the marker, that do
# not open one (`[1]`, `[see`) before the search gives up.
_TRIES = 4
_OPEN = frozenset("[({")
_KINDS = (_JSON, _PYTHON, _GEMMA)
OPENING_WIDTH = max(len(kind[0]) for kind in _KINDS) - 1  # (an opening cut at a search's end)


def first_opening(buf: str, lo: int, hi: int) -> int:
    """Where the first place in buf[lo:hi] is that in_string may read back to (the first
    characters of a call's opening), or -1: what a stream keeps of its prose (and the
    character before it: whether a Gemma call is first on its line)."""
    found = [at for at in (buf.find(kind[0], lo, hi) for kind in _KINDS) if at >= 0]
    return min(found) if found else -1


class Reading:
    """How far _open_string read the tokens of one call opening (`key`: its tokens'
    pattern and its place), in the reply (`base`: where buf begins in it; a stream's
    text is only added to): the token it stopped at (`resume`), the depth of brackets
    before it, and the marker it was asked about (`upto`). The next marker after it,
    with the same opening, reads on from there: the tokens before that one do not
    change with the text after them, and that one is read again (a string it cut, a
    blank run to the marker). In a string opened in prose and then 30 KB of markers,
    each read back to the opening, that was 2,048 characters a marker."""

    __slots__ = ("key", "resume", "depth", "upto")

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.resume = self.depth = self.upto = 0


def in_string(buf: str, i: int, floor: int = 0, reading: Reading | None = None, base: int = 0) -> bool:
    """Whether the marker at i is inside a string of a call that begins before it, at
    or after `floor` (see the module's docstring). reading: what the scanner keeps of
    the last reading (see Reading), buf beginning at `base` in the reply."""
    lo = max(0, floor, i - LOOK)
    if lo >= i or not quoted(buf, lo, i):
        return False  # (the usual case: no string before it)
    line = buf.rfind("\n", lo, i) + 1 or lo
    for first, opens, tokens, one_line in _KINDS:
        start = line if one_line else lo
        at = buf.rfind(first, start, i)
        if at >= 0 and _open_string(buf, start, i, at, first, opens, tokens, reading, base):
            return True
    return False


def _open_string(
    buf: str, lo: int, i: int, at: int, first: str, opens: regex.Pattern, tokens: regex.Pattern,
    reading: Reading | None = None, base: int = 0,
) -> bool:
    """Whether the last call opening (`opens`, whose `first` characters are found at `at`
    and before) in [lo, i) leaves a string open at i, its brackets still open."""
    for _ in range(_TRIES):
        if opens.match(buf, at, i) is not None:
            break
        at = buf.rfind(first, lo, at)
        if at < 0:
            return False
    else:
        return False
    if first == "call:" and _in_sentence(buf, lo, at):
        tokens = _GEMMA_IN_LINE
    key = (tokens, base + at)
    depth, p = 0, at
    if reading is not None and reading.key == key and reading.upto <= base + i:
        depth, p = reading.depth, reading.resume - base
    last, last_depth = p, depth
    found = False
    for t in tokens.finditer(buf, p, i):
        last, last_depth = t.start(), depth
        s = t.group()
        if len(s) == 1 and s in "[](){}":
            depth += 1 if s in _OPEN else -1
            if depth <= 0:
                break  # (the call closed before the marker)
            continue
        # A string opens only where a value begins, and a value ends where the call goes
        # on: else the call is broken there (`origin="Lis"bon"`), and what its quotes
        # hold is not told (the marker after it may be a call).
        if buf[_back(buf, at, t.start())] not in _BEFORE:
            break
        if t.lastgroup is None:
            # (A string left open up to the marker: not one its line's end broke.)
            found = t.end() >= i or buf[t.end()] != "\n"
            break
        after = _forth(buf, t.end(), i)
        if after < i and buf[after] not in _AFTER:
            break
    if reading is not None:
        reading.key, reading.resume, reading.depth, reading.upto = key, base + last, last_depth, base + i
    return found


def _in_sentence(buf: str, lo: int, at: int) -> bool:
    """Whether the Gemma call opening at `at` is named in a sentence: after a blank or a
    "`" (`Use call:f{…`), no call opening before it on its line (after lo). A call glued
    to prose (`Let me check.call:f{…`), first on its line, or after another call on it
    (`call:f{…} Then: call:g{…`) is the model's own, its string may hold new lines.
    (Only the character before `at` and [lo, at) are read: a stream keeps them,
    Scanner._string_look.)"""
    if at <= lo or buf[at - 1] not in " \t`":
        return False
    line = buf.rfind("\n", lo, at) + 1 or lo
    return buf.rfind("call:", line, at) < 0


_BEFORE = frozenset("([{,:=")  # (what a value follows)
_AFTER = frozenset(",)]}:")  # (what follows a value)


def _back(buf: str, lo: int, p: int) -> int:
    """The place of the last character before p, after lo, that is no blank (lo: none)."""
    p -= 1
    while p > lo and buf[p] in " \t\r\n":
        p -= 1
    return p


def _forth(buf: str, p: int, hi: int) -> int:
    """The place of the first character from p, before hi, that is no blank (hi: none)."""
    while p < hi and buf[p] in " \t\r\n":
        p += 1
    return p
