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

A string opened in prose that never closes as a value does is no quote: a Windows
path (`{"path": "C:\\dir\\"}.[TOOL_CALLS]…`), an apostrophe, prose naming Gemma's
syntax (`Try call:foo{a:<|"|>` then a new line). So the string must also close after
the marker, as a value closes (its quote, then `,` `)` `]` `}` or `:`), within
2 * LOOK of where it opens (every marker asked about then has LOOK after it): a quoted
call is one whose string closes around it (`{"content": "<tool_call>…</tool_call>"}`,
`call:write_file{content:<|"|>…<tool_call>…<|"|>}`), while a real call after such
prose closes it, if at all, at one of its own quotes (`{"name"`: a key, no value's
end). A JSON or Python string ends at its line's end as before; a Gemma one may hold
new lines (QA14 R2, R3, P1, P8: one rule for all three kinds).

The text before the marker decides where the string opens, no further back than LOOK: a
stream keeps that much before the place its prose has reached (Scanner._trim). The
text after it decides whether the string closes: a stream waits at the marker until
it has that (in_string answers None), at most 2 * LOOK characters.
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


def _gemma_body(quote: str) -> str:
    """What a Gemma string quoted by `quote` holds after it (new lines too)."""
    q = regex.escape(quote)
    return f"[^<]*+(?:<(?!{q[1:]})[^<]*+)*+"


_GEMMA_QUOTE, _ESCAPE = '<|"|>', "<escape>"
_GEMMA_TOKENS = "|".join(
    (*(f"{regex.escape(q)}{_gemma_body(q)}(?P<{g}>{regex.escape(q)})?" for q, g in ((_GEMMA_QUOTE, "c"), (_ESCAPE, "d"))), r"[\[\]{}]")
)
_GEMMA = ("call:", regex.compile(r"call:[\w.\-]+\{"), regex.compile(_GEMMA_TOKENS), False)
# A string's body after its opening quote, then its close (group c) if it has one: read
# on from where a stream's text ended (_closes). As the tokens above read them.
_LINE_BODY = r'[^{q}\\\n]*+(?:\\.[^{q}\\\n]*+)*+(?P<c>{q})?'
_BODIES = {
    '"': regex.compile(_LINE_BODY.format(q='"')),
    "'": regex.compile(_LINE_BODY.format(q="'")),
    **{q: regex.compile(f"{_gemma_body(q)}(?P<c>{regex.escape(q)})?") for q in (_GEMMA_QUOTE, _ESCAPE)},
}
# How far from where it opens a string open at a marker must close (see the docstring).
REACH = 2 * LOOK
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

    __slots__ = ("key", "resume", "depth", "upto", "string", "closes", "resume_string", "past")

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.resume = self.depth = self.upto = 0
        # Whether the string that opens at `string` (its pattern and place in the reply)
        # closes as a value (_closes): once told, the same for every marker in it.
        # (None: not told yet, read up to resume_string.)
        self.string: tuple | None = None
        self.closes: bool | None = False
        self.resume_string = 0
        self.past: tuple | None = None  # (_past's place in the reply and depth, read on from)


def in_string(
    buf: str, i: int, floor: int = 0, reading: Reading | None = None, base: int = 0, final: bool = True,
) -> bool | None:
    """Whether the marker at i is inside a string of a call that begins before it, at
    or after `floor` (see the module's docstring). reading: what the scanner keeps of
    the last reading (see Reading), buf beginning at `base` in the reply. None: buf
    (not `final`, a stream's text so far) ends before the string is told to close."""
    lo = max(0, floor, i - LOOK)
    if lo >= i or not quoted(buf, lo, i):
        return False  # (the usual case: no string before it)
    line = buf.rfind("\n", lo, i) + 1 or lo
    for first, opens, tokens, one_line in _KINDS:
        start = line if one_line else lo
        at = buf.rfind(first, start, i)
        if at < 0 and opens is _JSON[1] and line > lo:
            # None on the marker's line: a JSON call object first on a line before it
            # (a Llama 3 call line, a fence's object, pretty-printed too) whose string its
            # line's end broke, still open at the marker: the model wrote the line breaks
            # and the quoted call's quotes unescaped (`{"name": "write_file", "parameters":
            # {"content": "Docs:\n<tool_call>\n{"name": "rm_rf", …}}\n</tool_call>\nThat
            # is all."}}`, QA15 F2: rm_rf ran and write_file was lost), as _open_string tells.
            at = _call_object(buf, lo, line)
            if at >= 0:
                start, opens = lo, _CALL_OBJECT
        if at >= 0:
            got = _open_string(buf, start, i, at, first, opens, tokens, reading, base, final)
            if got is not False:
                return got
    return False


# A JSON call object's start, its first key "name" (see _call_object).
_CALL_OBJECT = regex.compile(r'\{\s*"name"\s*:')


def _call_object(buf: str, lo: int, hi: int) -> int:
    """Where the last JSON call object in buf[lo:hi] begins that is first on its line
    (`{"name":`, blanks around), or -1. (One str.rfind: asked per marker in prose.)"""
    k = buf.rfind('"name"', lo, hi)
    if k < 0:
        return -1
    b = _back(buf, lo, k)
    if b < lo or buf[b] != "{":
        return -1
    head = buf.rfind("\n", lo, b) + 1 or lo
    return b if not buf[head:b].strip(" \t") else -1


def _open_string(
    buf: str, lo: int, i: int, at: int, first: str, opens: regex.Pattern, tokens: regex.Pattern,
    reading: Reading | None = None, base: int = 0, final: bool = True,
) -> bool | None:
    """Whether the last call opening (`opens`, whose `first` characters are found at `at`
    and before) in [lo, i) leaves a string open at i, its brackets still open, that
    closes after i as a value does (None: buf ends before that is told)."""
    for _ in range(_TRIES):
        if opens.match(buf, at, i) is not None:
            break
        at = buf.rfind(first, lo, at)
        if at < 0:
            return False
    else:
        return False
    key = (tokens, base + at)
    depth, p = 0, at
    if reading is not None and reading.key == key and reading.upto <= base + i:
        depth, p = reading.depth, reading.resume - base
    last, last_depth = p, depth
    found: bool | None = False
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
            # (A string left open up to the marker, or one its line's end broke: before
            # the marker's line, only with none of its quotes from there to the marker,
            # which it then holds.)
            if t.end() >= i or buf.find(s[0], t.end(), i) < 0:
                found = _closes(buf, t.start(), reading, base, final)
            break
        after = _forth(buf, t.end(), i)
        if after < i and buf[after] not in _AFTER:
            break
    if reading is not None:
        reading.key, reading.resume, reading.depth, reading.upto = key, base + last, last_depth, base + i
    return found


def _closes(buf: str, s: int, reading: Reading | None, base: int, final: bool) -> bool | None:
    """Whether the string opening at s closes as a value does: its quote, within REACH
    of s, then (blanks between) `,` `)` `]` `}` `:` or the text's end. One its line's
    end breaks (JSON, Python), or not closed within REACH, or closed where no value ends
    (`"C:\\dir\\"}. [TOOL_CALLS]f[ARGS]{"path"`: at a key of the call after it) is no
    quote of what follows it. None: buf (not final) ends first; `reading` then keeps how
    far the string was read, and the next delta reads on from there (a stream waits at
    the marker for up to REACH characters: read again from s at each, the square)."""
    quote = buf[s] if buf[s] in "\"'" else _GEMMA_QUOTE if buf.startswith(_GEMMA_QUOTE, s) else _ESCAPE
    key = (quote, base + s)
    p = s + len(quote)
    limit = s + REACH
    end = min(len(buf), limit)
    if reading is not None and reading.string == key:
        if reading.closes is not None:
            return reading.closes
        if reading.past is not None:
            at, depth, line = reading.past
            return _past_told(buf, at - base, depth, quote, end, limit, final, reading, base, line)
        p = reading.resume_string - base
    t = _BODIES[quote].match(buf, p, end)
    got: bool | None
    resume = p
    if t.lastgroup is None:  # (not closed in the text there is)
        stop = t.end()
        if stop < end and buf[stop] == "\n":
            # Its line's end broke it, unless it quotes a call on the lines after (the
            # model wrote the line breaks unescaped: `"<tool_call>\n{"name": …}\n</tool_call>"}`):
            # read past that call's brackets, it closes where a quote after them does.
            if reading is not None:
                reading.string = key
            return _past_told(buf, stop, 0, quote, end, limit, final, reading, base, False)
        elif stop >= end - 1 and end < limit and not final:
            got = None  # (the text so far ends in it, or in its last escape `\`)
            # (From its last escape, or from before a close `<|"|>` cut at the text's end.)
            resume = stop if len(quote) == 1 else max(p, stop - len(quote) + 1)
        else:
            got = False
    else:
        j = _forth(buf, t.end(), end)
        if j < end and buf[j] not in _AFTER:
            # A quote that opens a string of a call the string quotes, whole
            # (`"[TOOL_CALLS]rm_rf[ARGS]{"p": "/"}"}`): its brackets are read past, and
            # the string closes where a quote after them does (QA15 F1).
            b = _BRACKET.search(buf, s + len(quote), t.start("c"))
            if b is not None:
                if reading is not None:
                    reading.string = key
                return _past_told(buf, b.start(), 0, quote, end, limit, final, reading, base)
            got = False
        elif j < end:
            got = buf[j] in _AFTER
        elif end < limit and not final:
            got, resume = None, t.start(t.lastgroup)  # (blanks to the text's end: read from its close)
        else:
            got = True  # (closed at the text's end: the call around it cut there)
    if reading is not None:
        reading.string, reading.closes, reading.resume_string, reading.past = key, got, base + resume, None
    return got


_BRACKET = re.compile(r"[\[{(]")


def _past_told(
    buf: str, i: int, depth: int, quote: str, end: int, limit: int, final: bool, reading: Reading | None, base: int,
    line: bool = True,
) -> bool | None:
    """_past, its answer kept in `reading` (None: where to read on from, too)."""
    got, i, depth = _past(buf, i, depth, quote, end, limit, final, line)
    if reading is not None:
        reading.closes = got
        reading.past = (base + i, depth, line) if got is None else None
    return got


def _past(buf: str, i: int, depth: int, quote: str, end: int, limit: int, final: bool, line: bool = True) -> tuple:
    """Whether a string whose first close quote opens a string of a call it quotes closes
    as a value does, read from i (a bracket in it), `depth` brackets open: the strings
    that open where a value begins inside those brackets are read whole, and the first
    quote elsewhere is the string's close. (Its answer as _closes's, the place to read
    on from and the depth there.)"""
    n = len(quote)
    line = line and n == 1  # (a JSON or Python string ends at its line's end, unless read on)
    while i < end:
        c = buf[i]
        if c == quote[0] and n > 1 and end - i < n and quote.startswith(buf[i:end]) and end < limit and not final:
            return None, i, depth  # (a close `<|"|>` the text so far cuts)
        if c == quote[0] and buf.startswith(quote, i):
            if depth > 0 and buf[_back(buf, 0, i)] in _BEFORE:
                t = _BODIES[quote].match(buf, i + n, end)
                if t.lastgroup is None:
                    stop = t.end()
                    if stop >= end - 1 and end < limit and not final:
                        return None, i, depth
                    return False, i, depth
                i = t.end()
                continue
            j = _forth(buf, i + n, end)
            if j < end:
                return buf[j] in _AFTER, i, depth
            if end < limit and not final:
                return None, i, depth
            return True, i, depth
        if c == "\n" and line:
            return False, i, depth
        if c in _OPEN:
            depth += 1
        elif c in "}])":
            depth -= 1
        elif c == "\\" and n == 1:
            if i + 1 >= end:
                break
            i += 1
        i += 1
    if end < limit and not final:
        return None, i, depth
    return False, i, depth


def closes_on(buf: str, reading: Reading, base: int, final: bool) -> bool | None:
    """_closes for the string in_string last answered None about (reading.string), read
    on from where it stopped: a stream's marker waiting for it asks only this at each
    delta (Scanner._in_string). False: in_string must be asked again (its other kinds)."""
    return _closes(buf, reading.string[1] - base, reading, base, final)


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
