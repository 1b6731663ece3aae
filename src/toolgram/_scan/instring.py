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
it within LOOK that opens one (`{"`, `[name(` or `name(` then an argument,
`call:name{`), its strings and brackets read up to the marker, leaves a string open
there and the call's brackets not yet closed.

A string opened in prose that never closes as a value does is no quote: a Windows
path (`{"path": "C:\\dir\\"}.[TOOL_CALLS]…`), an apostrophe, prose naming Gemma's
syntax (`Try call:foo{a:<|"|>` then a new line). So the string must also close around
the marker's call (_Told), as a value closes (its quote, then what goes on after a
value in that kind of call: `}` `]` or `,"` in JSON; `)` `]` or `, name=` in Python;
`}` or `, key:` in Gemma): its first quote after the marker, or else its quote right
after the call's END (its format's end marker; a format with none, where its brackets
close), blanks, words, an apostrophe in a word, quoted words and a stray quote right
before the close (blanks after it too: `</tool_call>" "}`) between, on the lines of
the call's paragraph for a JSON or Python string (whose line breaks the model may have
left unescaped: a blank line ends it, but for a close right after it; no line count,
QA18 Q4). No quote inside the call counts: a quoted call's own quotes
(`"<tool_call>{"name": …}</tool_call>"}`, `<function name="rm_rf">`, `<|"|>`) and a
real call's (`It's always fresh.'`) say nothing about the string around it. A real
call after such prose is followed by prose, not by a close (`"C:\\dir\\"} now
<tool_call>…</tool_call> for the 27", 32" screens`). Where the string quotes the call,
the whole call is prose (its wrapper's inner markers on later lines too); all within
REACH of where the string opens (QA16 G1, G2, G3).

A JSON or Python string opened on a line before the marker's is open there only within
its paragraph and fenced block (no blank line or fence line between, the marker's line no
fence's; a JSON call object first on its line excepted, and a JSON object member's value,
`"key": "`, past blank lines, not fence lines: `{"note": "Docs:\n\n<tool_call>…`), and a Python string's other quote
closes it only on the call's end line: a real call after prose that left a code string
open is read (QA19 R1, R2, R3).

The text before the marker decides where the string opens, no further back than LOOK (and
the character before that, whether the look begins a line): a stream keeps all of that
before the place its prose has reached (Scanner._trim), not only the parts thought to
matter, so that it asks of the same text as parse() does. The
text after it decides whether the string closes: a stream waits at the marker until
it has that (in_string answers None): the call's end, then the string's close, a
quote that closes no value or a blank line (a JSON or Python string), or the string's
close (Gemma), at most REACH (2 * LOOK) characters from the string's opening, reading
on from where it stopped at each delta.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from itertools import chain as _chain
from typing import Any

import regex

from .._grammar.fence import FENCE_HEAD
from .._grammar.words import lazy
from .._recover.repair import escaped as _escaped  # (a character after an odd run of backslashes)

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
# line, or on one before it whose string its line's end broke (in_string); a Gemma
# string may hold new lines.
_JSON = ('{"', lazy(regex.compile, r'\{"'), lazy(regex.compile, r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+(?P<c>")?|[\[\]{}]'), True)
_PYTHON = (
    "[",
    lazy(regex.compile, r"\[[ \t]*[A-Za-z_][\w.]*\((?=[ \t]*(?:[A-Za-z_]\w*[ \t]*=|['\"]))"),
    # (A triple-quoted string first, which may hold line breaks: `"""` is no empty string
    # then a quote, issue 19.)
    lazy(regex.compile, "'''(?:[^'\\\\]|\\\\.|'(?!''))*+(?P<e>''')?|" + '"""(?:[^"\\\\]|\\\\.|"(?!""))*+(?P<f>""")?|' + r"""'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+(?P<c>')?|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+(?P<d>")?|[\[\](){}]"""),
    True,
)
# A Python call written without its list (`write_file(content="…")`: bare_pythonic's
# shape, a model's pythonic call after prose): a `(` glued to a name (a letter, digit,
# `_` or `.` right before it), then an argument as above (QA18 Q1).
_BARE = ("(", lazy(regex.compile, r"(?<=[\w.])\((?=[ \t]*(?:[A-Za-z_]\w*[ \t]*=|['\"]))"), _PYTHON[2], True)


def _gemma_body(quote: str) -> str:
    """What a Gemma string quoted by `quote` holds after it (new lines too)."""
    q = regex.escape(quote)
    return f"[^<]*+(?:<(?!{q[1:]})[^<]*+)*+"


_GEMMA_QUOTE, _ESCAPE = '<|"|>', "<escape>"
_GEMMA_BODY = "call:"  # (what a Gemma call's body begins with after its marker: _Strings)
_GEMMA_TOKENS = "|".join(
    (*(f"{regex.escape(q)}{_gemma_body(q)}(?P<{g}>{regex.escape(q)})?" for q, g in ((_GEMMA_QUOTE, "c"), (_ESCAPE, "d"))), r"[\[\]{}]")
)
_GEMMA = ("call:", lazy(regex.compile, r"call:[\w.\-]+\{"), lazy(regex.compile, _GEMMA_TOKENS), False)
# A string's body after its opening quote, then its close (group c) if it has one: read
# on from where a stream's text ended (_closes). As the tokens above read them.
_LINE_BODY = r'[^{q}\\\n]*+(?:\\.[^{q}\\\n]*+)*+(?P<c>{q})?'
_BODIES = {
    '"': lazy(regex.compile, _LINE_BODY.format(q='"')),
    "'": lazy(regex.compile, _LINE_BODY.format(q="'")),
    **{q: lazy(regex.compile, f"{_gemma_body(q)}(?P<c>{regex.escape(q)})?") for q in (_GEMMA_QUOTE, _ESCAPE)},
    # (A Python triple-quoted string's: line breaks too.)
    **{q * 3: lazy(regex.compile, rf"(?:[^{q}\\]|\\.|{q}(?!{q}{q}))*+(?P<c>{q}{q}{q})?") for q in ('"', "'")},
}
_TRIPLES = ('"""', "'''")
# How far from where it opens a string open at a marker must close (see the docstring).
REACH = 2 * LOOK
# How many places a call's first characters are found at, back from the marker, that do
# not open one (`[1]`, `[see`) before the search gives up.
_TRIES = 4
_OPEN = frozenset("[({")
_KINDS = (_JSON, _PYTHON, _BARE, _GEMMA)


class Reading:
    """How far _open_string read the tokens of a call opening, per kind of opening (its
    first characters: `opened`), in the reply (`base`: where buf begins in it; a stream's
    text is only added to): the opening's place, the token it stopped at (resume), the
    depth of brackets before it, the marker it was asked about (upto), and the text from
    the opening to that token and its first character. The next marker after it, with
    the same opening and that text, reads on from there: the tokens before that one do
    not change with the text after them, and that one is read again (a string it cut, a
    blank run to the marker). In a string opened in prose and then 30 KB of markers,
    each read back to the opening, that was 2,048 characters a marker. (Per kind: with
    one reading kept for all, a prose holding a JSON opening and a Python one read both
    from their openings again at each marker, each kind's reading having replaced the
    other's; 7,000 of 11,700 readings in the 20 slowest fuzz soups.)"""

    __slots__ = ("opened", "string", "closes", "told", "span", "groups", "seen", "breaks", "hops")

    def __init__(self) -> None:
        self.opened: dict = {}  # kind of opening (its first characters) -> (opening, resume, depth, upto: in the reply; the text read; searched: see _tokens)
        # Whether the string open at a marker (`string`: its quote, its place and the
        # marker's in the reply) closes around the marker's call (_closes). None: not
        # told yet, `told` reads on; True: it quotes the reply up to `span`.
        self.string: tuple | None = None
        self.closes: bool | None = False
        self.told: _Told | None = None
        self.span = 0
        self.groups = Groups()  # (the bracket groups _Told's walks read: kept for the next marker's)
        self.seen: dict = {}  # (_Told._next_end's searches for end markers: kept for the next marker's)
        self.hops: dict = {}  # (_Told._hop's steps from a call to the next marker's: kept for the next marker's)
        self.breaks: tuple | None = None  # (_last_break's last search, in the reply: kept for the next delta's)


def in_string(
    buf: str, i: int, floor: int = 0, reading: Reading | None = None, base: int = 0, final: bool = True,
    after: int = -1, ends: tuple = (),
) -> bool | None:
    """Whether the marker at i is inside a string of a call that begins before it, at
    or after `floor` (see the module's docstring). reading: what the scanner keeps of
    the last reading (see Reading), buf beginning at `base` in the reply; `after`: the
    marker's end, `ends`: the end markers of the formats it opens. None: buf (not
    `final`, a stream's text so far) ends before the string is told to close."""
    if after < 0:
        after = i
    lo = max(0, floor, i - LOOK)
    if lo >= i or not quoted(buf, lo, i):
        return False  # (the usual case: no string before it)
    line = buf.rfind("\n", lo, i) + 1 or lo
    for first, opens, tokens, one_line in _KINDS:
        start = line if one_line else lo
        member = -1
        at = buf.rfind(first, start, i)
        if at < 0 and one_line and line > lo:
            # None on the marker's line: one on a line before it whose string its line's
            # end broke, still open at the marker, none of its quotes from there on (as
            # _open_string tells): the model wrote the line breaks and the quoted call's
            # quotes unescaped (`{"note": "Docs:\n<tool_call>…`, QA18 Q4; `{"name":
            # "write_file", "parameters": {"content": "Docs:\n<tool_call>\n{"name": "rm_rf",
            # …}}\n</tool_call>\nThat is all."}}`, QA15 F2: rm_rf ran and write_file was
            # lost). For JSON, a call object first on its line too (a Llama 3 call line, a
            # fence's object, pretty-printed: `{\n  "name": …`).
            # Not past a blank line or a code fence's line (``` or ~~~) before the
            # marker's: a string opened before a blank line ended with its paragraph
            # (as its close must come within the call's, _Told._after), and one opened
            # inside a fenced block is code the fence's line ends (QA19 R1, R2: a real
            # call after `print("hi` then a closed fence or a blank line was read as
            # quoted, and lost, where a quote and a closer came after it).
            # (A JSON call object first on its line, ffabbe7's, reads on past blank and
            # fence lines as at 5a77358: a write_file's content of paragraphs and code
            # fences, its line breaks left unescaped, quoting a call, QA15 F2.)
            start = _paragraph(buf, lo, line, reading, base)
            at = buf.rfind(first, start, line)
            if opens is _JSON[1]:
                b = _call_object(buf, lo, line)
                if b > at:
                    at, opens, start = b, _CALL_OBJECT, lo
                elif at < 0 and start > lo and buf[start - 1] == "\n":
                    # None in the marker's paragraph: a JSON object's member value (`"key":
                    # "`) opened in one before it, past its blank lines but no fence's line,
                    # is open still (`{"note": "Docs:\n\n<tool_call>…</tool_call>\n"}`: a
                    # note of paragraphs quoting a call, QA18 Q4). A key's colon before the
                    # quote is JSON's own structure; code's strings (`print("hi`, `f(q="x`)
                    # end with their paragraph (QA19 R2).
                    member, start = start, _fenced(buf, lo, line)
                    at = buf.rfind(first, start, member)
        if at >= 0:
            got = _open_string(buf, start, i, at, first, opens, tokens, reading, base, final, after, ends, member)
            if got is not False:
                return got
    return False


# A code fence's line, told by its head (_grammar/fence.py: the one rule, which
# quotation.Fences and the searches here, back for the line a string opened before
# cannot cross, both ask).
_FENCE = lazy(regex.compile, FENCE_HEAD)

# The last blank line or code fence's line before a marker's line: searched back from
# it, once (regex.REVERSE).
_BREAK = lazy(regex.compile, r"\n[ \t\r]*\n|\n" + FENCE_HEAD, regex.REVERSE)


_FENCE_LINE = lazy(regex.compile, r"\n" + FENCE_HEAD, regex.REVERSE)


def _fenced(buf: str, lo: int, line: int) -> int:
    """Where the text in buf[lo:line] begins after its last code fence's line (lo: none),
    blank lines read past (_paragraph's, for a JSON member value)."""
    if _FENCE.match(buf, line) is not None:
        return line  # (the marker's line is a fence's own)
    m = _FENCE_LINE.search(buf, lo, line)
    if m is None:
        if (lo > 0 and buf[lo - 1] != "\n") or _FENCE.match(buf, lo) is None:
            return lo
        at = lo  # (a fence's line at the look's start)
    else:
        at = m.end()
    nl = buf.find("\n", at, line)
    return nl + 1 if nl >= 0 else line


# The last _BREAK search of a text: (buf, lo, line, the break's start and end, -1 for
# none). The markers of a text are asked in order, each searching back from its line up
# to LOOK characters: a line of markers with no blank line read LOOK characters for
# each (a 32 KB storm of cut MiniMax calls: 240 ms). The next marker's search reads on
# from the last one's line only (see _last_break). A text read with a Reading keeps it
# there instead, in the reply's places: a stream's text is a new str at each delta, and
# only added to, so its markers read on from the last search of the delta before too.
_BREAKS: tuple = (None, 0, 0, -1, -1)


def _last_break(buf: str, lo: int, line: int, reading: Reading | None = None, base: int = 0) -> tuple[int, int]:
    """The start and end of the last _BREAK match in buf[lo:line] ((-1, -1): none), as
    _BREAK.search(buf, lo, line) finds it. Where the last search was of the same text,
    from no later a `lo`, up to a line start no later than `line`, only the text from
    that line's `\n` on is searched: a match that ends past that line starts at that
    `\n` or after it (a break holds no line break but its first and last characters);
    one that ends before it is the last search's, if it starts at `lo` or after. The
    same text: the same str, or with `reading`, the same reply (buf begins at `base` in
    it: a stream's text before its end does not change; see Reading)."""
    global _BREAKS
    if reading is not None:
        memo = reading.breaks
        if memo is None or memo[1] - base <= lo:
            memo = (None, 0, 0, -1, -1)  # (none, or none that saves a search: from lo on)
        else:
            # (In the reply's places: back to buf's.)
            memo = (buf, memo[0] - base, memo[1] - base, memo[2] - base if memo[2] >= 0 else -1, memo[3] - base)
    else:
        memo = _BREAKS
    last, lo1, line1, s1, e1 = memo
    if last is buf and lo1 <= lo and line1 <= line and line1 > lo1 and buf[line1 - 1] == "\n":
        m = _BREAK.search(buf, max(lo, line1 - 1), line)
        if m is not None:
            s1, e1 = m.span()
        elif s1 < lo:
            s1 = e1 = -1
    else:
        m = _BREAK.search(buf, lo, line)
        s1, e1 = m.span() if m is not None else (-1, -1)
    if reading is not None:
        reading.breaks = (lo + base, line + base, s1 + base if s1 >= 0 else -1, e1 + base if e1 >= 0 else -1)
    else:
        _BREAKS = (buf, lo, line, s1, e1)
    return s1, e1


def _paragraph(buf: str, lo: int, line: int, reading: Reading | None = None, base: int = 0) -> int:
    """Where the text in buf[lo:line] (line: the marker's line's start) begins that a
    string open at the marker may have opened in: after the last blank line or fence
    line in it (lo: none). A fence line's own text (```python) is not in it; nor is any
    where the marker's line is a fence's (its ``` is a marker). (reading, base: see
    _last_break.)"""
    if _FENCE.match(buf, line) is not None:
        return line  # (the marker's line is a fence's own: its ``` is no string's text)
    end = _last_break(buf, lo, line, reading, base)[1]
    if end < 0:
        if (buf[lo - 1] == "\n" if lo > 0 else base == 0) and _FENCE.match(buf, lo) is not None:
            # A fence's line that begins the look, first on its line (the reply's first
            # line): as one after a line break (_BREAK's, which holds the break), its text
            # is no string's (`` ```<page> {"content": "…`` then a call on the next line).
            nl = buf.find("\n", lo, line)
            return nl + 1 if nl >= 0 else line
        return lo
    if buf[end - 1] == "\n":
        return end
    nl = buf.find("\n", end, line)
    return nl + 1 if nl >= 0 else line


# A JSON call object's start, its first key "name" (see _call_object).
_CALL_OBJECT = lazy(regex.compile, r'\{\s*"name"\s*:')


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
    reading: Reading | None = None, base: int = 0, final: bool = True, marker_end: int = -1, ends: tuple = (),
    member: int = -1,
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
    depth, p, known, held = 0, at, -1, ""
    if reading is not None:
        kept = reading.opened.get(first)
        if kept is not None and kept[0] == base + at and kept[3] <= base + i and buf.startswith(kept[4], at):
            depth, p, known, held = kept[2], kept[1] - base, kept[5] - base, kept[6]
    last, last_depth, last_held = p, depth, held
    found: bool | None = False
    read = False  # (whether a token was read)
    searched = -1  # (in the reply: up to where no token begins after the last one read; -1: not known)
    for t in _tokens(tokens, buf, p, i, known):
        read = True
        last, last_depth, last_held = t.start(), depth, held
        s = t.group()
        if len(s) == 1 and s in "[](){}":
            depth += 1 if s in _OPEN else -1
            held = held + s if s in _OPEN else held[:-1]  # (the brackets open: a JSON key's place)
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
            if t.end() < i and buf.find(s[0], t.end(), i) >= 0:
                break
            if t.start() < member and buf[_back(buf, at, t.start())] != ":":
                break  # (opened before a blank line, not as an object member's value)
            if t.end() < i and first == '{"' and (buf[_back(buf, at, t.start())] == "{" or held[-1:] == "{" and buf[_back(buf, at, t.start())] == ","):
                # (A JSON object's key, its line's end breaking it: a key holds no lines of
                # text as a value written with its line breaks unescaped may, so it is no
                # string the marker on a later line is in. `{"name": "get_weather", "arg`
                # then a line of backticks and a call: qa54 F1, whose stream held the call
                # to flush() waiting on a close no key takes.)
                break
            kind = _KIND_OF[first[0]]
            if kind == 1 and buf[_back(buf, at, t.start())] == "=":
                kind = 3  # (a keyword argument's value: no positional one may follow it)
            found = _closes(buf, t.start(), kind, i, max(marker_end, i), ends, reading, base, final)
            break
        after = _forth(buf, t.end(), i)
        if after < i and buf[after] not in _AFTER:
            break
    else:
        # (The tokens ran out before the marker: none begins after the last one's end
        # up to it, which the next marker's reading need not search again: _tokens.)
        if read:
            searched = base + i
    if reading is not None:
        reading.opened[first] = (base + at, base + last, last_depth, base + i, buf[at : last + 1], searched, last_held)
    return found


# The longest a token's first characters run before a match of it is sure (`<escape>`,
# Gemma's: a match may begin that many characters before the text's end, less one, and
# be found only in a longer text; a quote or bracket is one character).
_TOKEN_HEAD = max(len(_ESCAPE), len(_GEMMA_QUOTE), 3)


def _tokens(tokens: regex.Pattern, buf: str, p: int, i: int, known: int) -> Any:
    """tokens.finditer(buf, p, i), where the reading read on from the token at p, and
    no token was found after that one's end up to `known` (-1: not known), a marker's
    place before: the token at p, then the search from there, past what the last
    reading searched (a run of markers, each read back up to LOOK characters from its
    opening's last token: 2,000 characters a marker). A match of a token begins with
    its first characters and then may hold nothing (a quote, or `<escape>`: its body,
    then its close if any), so the text up to `known` held none beginning more than
    _TOKEN_HEAD characters before `known`, and a longer text holds none either."""
    if known - _TOKEN_HEAD <= p:
        return tokens.finditer(buf, p, i)
    head = tokens.match(buf, p, i)
    if head is None:
        return tokens.finditer(buf, p, i)  # (not so: the search as it was)
    return _chain((head,), tokens.finditer(buf, max(head.end(), known - _TOKEN_HEAD), i))


def _closes(
    buf: str, s: int, kind: int, i: int, after: int, ends: tuple, reading: Reading | None, base: int, final: bool,
) -> bool | None:
    """Whether the string opening at s, open at the marker at i (ending at `after`),
    closes around the call there as a value does (see the module's docstring): its
    first quote after the marker closes it there (a marker named in a string), or its
    quote comes right after the call's end (_Told). None: buf (not final) ends first;
    `reading` then keeps how far it was read, and the next delta reads on from there (a
    stream waits at the marker for up to REACH characters: read again from the marker
    at each, the square). Where True, reading.span is the end of what it quotes."""
    quote = (
        buf[s : s + 3] if buf[s : s + 3] in _TRIPLES else buf[s] if buf[s] in "\"'" else _GEMMA_QUOTE if buf.startswith(_GEMMA_QUOTE, s) else _ESCAPE
    )
    key = (quote, base + s, base + i)
    if reading is not None and reading.string == key:
        if reading.closes is not None:
            return reading.closes
        told = reading.told
    else:
        told = _Told(quote, kind, base + s, base + after, ends, buf[i:after])
        if reading is not None:
            told.groups, told.seen, told.hops = reading.groups, reading.seen, reading.hops
    got = told.read(buf, base, final)
    if reading is not None:
        reading.string, reading.closes, reading.told = key, got, told
        reading.span = told.span
    return got


# What may follow a string's close where it ends a value, by the kind of call it is in
# (JSON: the object or list closes, or a key comes; Python: the call or a list closes,
# or an argument comes; Gemma: the object closes, or a key comes). Partial matches
# tell a stream that the text so far ends too soon.
_GO_ON = (
    lazy(regex.compile, r'[ \t\r\n]*+(?:[}\]]|,[ \t\r\n]*+")'),
    lazy(regex.compile, r"""[ \t\r\n]*+(?:[)\]}]|,[ \t\r\n]*+(?:[A-Za-z_]\w*+[ \t]*+=(?!=)|['"\d\[{(\-]|(?:True|False|None)\b))"""),
    lazy(regex.compile, r"[ \t\r\n]*+(?:\}|,[ \t\r\n]*+[A-Za-z_][\w.\-]*+:)"),
    # (Python, the string a keyword argument's value: Python reads no positional argument
    # after one, `f(q='…', 5)`; prose does: `The kids', 5 of them.`)
    lazy(regex.compile, r"""[ \t\r\n]*+(?:[)\]}]|,[ \t\r\n]*+[A-Za-z_]\w*+[ \t]*+=(?!=))"""),
)
_SHUT = lazy(regex.compile, r"[ \t\r\n]*+[)\]}]")
_BRACKETS = "([{)]}"
_BRACKET = re.compile(r"[()\[\]{}]")  # (_Told._left_open)
_BLANK_LINE = re.compile(r"\n[ \t\r]*\n")  # (a paragraph's end: _Told._after)
_KIND_OF = {"{": 0, "[": 1, "(": 1, "c": 2}  # (a kind's first characters' first: _KINDS' order)


class _Told:
    """The reading of whether a string open at a marker closes around its call, kept
    between a stream's deltas (positions in the reply). Three steps:
    - `first`: the string's first quote after the marker, where it closes a value
      (`{"a": "the <tool_call> tag", "b": 1}`: a marker named, no call written);
    - `end`: else the call's end: its format's end marker (`</tool_call>`, `<tool_call|>`,
      a run of them), or, for a format with none (Mistral's `[TOOL_CALLS]`), where its
      first bracket group holding a `{` or `(` closes (strings inside read whole). No
      quote before it counts: they are the call's own (`"name"`, `It's`, `<|"|>`);
    - `after`: from there, the string's close quote must come, a value's continuation
      after it (_GO_ON). Blanks, words and quotes that are no close come between: an
      apostrophe in a word (`don't`) and a quoted word (`(see "docs")`) are read past;
      any other quote decides. A JSON or Python string whose line breaks the model left
      unescaped runs on over the lines after the call's to the end of their paragraph
      (a blank line, but for its close right after it). A real
      call after a string left open in prose (`"C:\\dir\\"} now <tool_call>…</tool_call>
      for the 27", 32" screens`) is followed by no such close, and is read."""

    __slots__ = ("quote", "kind", "step", "at", "depth", "grouped", "limit", "ends", "span", "after", "skipped", "marker", "seen", "close_at", "strings", "blanks", "counted", "opened", "groups", "hops", "ended")

    def __init__(self, quote: str, kind: int, opens: int, after: int, ends: tuple, marker: str) -> None:
        self.quote, self.kind, self.ends, self.marker = quote, kind, ends, marker
        self.step = "first"
        self.at = self.after = after  # (where to read on from, in the reply)
        self.limit = opens + REACH  # (from the string's opening: what a stream holds at most)
        self.depth, self.grouped = 0, False
        self.span = after
        self.skipped = False  # (_after: the blanks after the call read)
        self.blanks = -1  # (_after, while not skipped: how far the blanks after the call's end markers were read, in the reply)
        self.counted, self.opened = -1, [0, 0, 0]  # (_after: brackets the text after the call left open, up to `counted`)
        self.close_at = -1  # (_after: where a close right after the call would be, in the reply)
        self.seen: dict = {}  # (_end: end marker -> its next place found and how far searched, in the reply)
        self.strings: _Strings | None = None  # (_end: the call's strings, read from its marker)
        self.groups: Groups | None = None  # (_brackets' groups read by the walks before, where kept)
        self.hops: dict | None = None  # (_hop's steps from a call to the next marker's, where kept)
        self.ended = -1  # (_after: where it last looked for an end marker after the call's, in the reply)

    def read(self, buf: str, base: int, final: bool) -> bool | None:
        end = min(len(buf), self.limit - base)
        more = not final and end < self.limit - base  # (the text so far ends before the limit)
        hops = self.hops
        hop = -1  # (where the call being read begins, its reading fresh: see _hop)
        while True:
            step = self.step
            if hops is not None and (step == "end" and self.strings is None or step == "brackets" and not self.ends) and self.at == self.after and not (self.depth or self.grouped or self.skipped):
                hop = self.after
                if not more and self._hop(buf, base, end):
                    continue
            if step == "first":
                got = self._first(buf, base, end, more)
                if got is not False:
                    return got
                self.call_from(self.after)
            elif step == "end":
                got = self._end(buf, base, end, more)
                if got is None:
                    return None
                if got:
                    self.step = "after"
                else:
                    self.step, self.at = "brackets", self.after
            elif step == "brackets":
                g = self.groups
                if g is None or self.depth or self.grouped:
                    got = self._brackets(buf, base, end, more)
                else:
                    got = g.brackets(self, buf, base, end, more, final)
                if got is not True:
                    return got
                self.step = "after2"
            else:
                got = self._after(buf, base, end, more)
                if got is not False or self.step != step:
                    if self.step == step:
                        return got
                    if hops is not None and step == "after2" and hop >= 0 and self._kept(buf, base, end, final, hop):
                        hops[(self.quote, self.kind, self.ends, self.marker, hop)] = (self.after, base + end)
                    hop = -1
                    continue  # (the marker again, after the call: its call read to its end)
                if step == "after2":
                    return False
                # (An end marker the call may have left out, Granite's `<|tool_call|>[…]`:
                # its brackets, where they follow the marker, are its end too.)
                self.step, self.at, self.skipped, self.blanks = "brackets", self.after, False, -1

    def _hop(self, buf: str, base: int, end: int) -> bool:
        """Where the reading of the call from self.after (fresh: as call_from left it) is
        one a reading before took to the marker again (_after's `again`: a run of calls
        after a string left open, each read to its end, then on to the next marker):
        read on from the last such marker it reaches, as that reading did (True), not
        the calls again. A storm of lines `[f(a='+)<|tool_call_start|>[g()]` read, for
        each marker, every later one within REACH of its string's opening: 40 calls a
        marker, one reading apart from the next (issue 17).
        Why the same: from a fresh call_from state, what the reading does is a function
        of the call's place, the quote, its kind, the end markers, the marker, `end`
        and the text before it. A step to the next marker (the end step finding no end
        marker, the brackets' group closing, then _after finding the marker before the
        string's close) is taken only on what the text holds before that marker (each
        search the first place after a point; a search the text's end bounded is
        passed over only where nothing of what it looks for comes before `end`, and
        then the marker is not found either). So it is taken again wherever `end` is
        no earlier (hops: the next call's place and the `end` it was read with, in the
        reply) and nothing else decides: the text is whole up to `end` (not `more`: a
        stream's end step would wait), and no end marker comes from here to `end` (the
        end step, which the format's end markers make, finds none at each call after
        here too; told by _next_end's own memo). Only steps through end (none found),
        brackets and after2 are kept; a call whose end marker came, the general way."""
        hops = self.hops
        key = (self.quote, self.kind, self.ends, self.marker)
        x = self.after
        got = hops.get((*key, x))
        limit = base + end
        if got is None or got[1] > limit:
            return False
        if self.ends and self._next_end(buf, base, x - base, end)[0] >= 0:
            return False
        path = [x]
        z = got[0]
        while True:
            nxt = hops.get((*key, z))
            if nxt is None or nxt[1] > limit:
                break
            path.append(z)
            z = nxt[0]
        # (Each place on the path then leads to z, with the latest `end` of the steps after it.)
        latest = -1
        for p in reversed(path):
            latest = max(latest, hops[(*key, p)][1])
            hops[(*key, p)] = (z, latest)
        self.call_from(z)
        return True

    def _kept(self, buf: str, base: int, end: int, final: bool, hop: int) -> bool:
        """Whether the step from the call at `hop` to the marker again, just read, is one
        _hop may take again: the end step found no end marker there (none up to `end`),
        and where _after looked for one after the call's group (`ended`), the text held
        its length (a stream's, whose next characters may complete one: not kept)."""
        if not self.ends:
            return True
        if not final and len(buf) < self.ended - base + max(map(len, self.ends)):
            return False
        return self._next_end(buf, base, hop - base, end)[0] < 0

    def call_from(self, after: int) -> None:
        """Read a call from `after` (the end of its marker, in the reply) to its end."""
        self.step = "end" if self.ends else "brackets"
        self.at = self.after = after
        self.depth, self.grouped, self.skipped, self.blanks = 0, False, False, -1
        self.strings = None

    def _first(self, buf: str, base: int, end: int, more: bool) -> bool | None:
        quote = self.quote
        p = self.at - base
        t = _BODIES[quote].match(buf, p, end)
        if t.lastgroup is None:
            stop = t.end()
            if more and stop >= end - 1:
                if len(quote) > 1:
                    # (Read again from where a close may begin that the text so far
                    # cut: its last characters but one, or the escape `\` before them,
                    # not the character it escapes: `\''` then `'` is no close.)
                    stop = max(p, stop - len(quote) + 1)
                    if stop > p and _escaped(buf, stop):
                        stop -= 1
                self.at = base + stop
                return None  # (the text so far ends in it, or in its last escape `\`)
            return False
        c = t.start("c")
        got = self._goes_on(buf, c + len(quote), end, more)
        if got is None:
            self.at = base + c  # (read again from its close)
        elif got:
            self.span = base + c + len(quote)
        return got

    def _goes_on(self, buf: str, p: int, end: int, more: bool, other: bool = False, cut: bool = True) -> bool | None:
        """Whether a value's continuation follows the close ending at p (None: the text
        so far ends first); the reply's end is one (the call around it cut there). A
        Python string's other quote (`other`) closes it only before `)` `]` `}`."""
        m = (_SHUT if other else _GO_ON[self.kind]).match(buf, p, end, partial=more)
        if m is None:
            return cut and not more and _forth(buf, p, end) >= len(buf)
        return None if m.partial else True

    def _end(self, buf: str, base: int, end: int, more: bool) -> bool | None:
        """Whether the call's end marker comes (self.at then after it). One inside a
        string of the call is its text (`"body": "Use </tool_call> to end a call."`),
        as the call's reading takes it (_Strings)."""
        p = self.at - base
        strings = self.strings
        if strings is None:
            q = _forth(buf, p, end)
            if more and (q >= end or (end - q < len(_GEMMA_BODY) and _GEMMA_BODY.startswith(buf[q:end]))):
                # (The text so far ends before the call's body tells its kind, or in its
                # `call:`: _Strings read `ca` as a body with no strings, and a stream took
                # an end marker inside a Gemma string of the call for its end, where parse()
                # read the string whole: the marker before it quoted, no call, no error.)
                return None
            strings = self.strings = _Strings(buf, base, q, end)
        while True:
            found, size = self._next_end(buf, base, p, end)
            if found < 0:
                if more:
                    self.at = base + max(p, end - max(map(len, self.ends)) + 1)
                    return None
                return False
            if not strings.inside(buf, base, found):
                break
            p = found + 1
        self.at = base + found + size
        return True

    def _next_end(self, buf: str, base: int, p: int, end: int) -> tuple:
        """The first end marker's place from p (-1: none before end) and its size."""
        found, size = -1, 0
        seen = self.seen
        start, stop = base + p, base + end
        for e in self.ends:
            # (Each end marker's next place is kept, with where its search began and how
            # far it went: a run of calls in the string, each read to its end, does not
            # search again for the one that never comes; nor does the next marker's
            # reading, where the scanner's Reading shares them (issue 17: a storm of
            # quoted `[f(a=1, ` calls, each marker's search read REACH characters).)
            since, at, to = seen.get(e, (-1, -1, -1))
            n = len(e)
            if 0 <= since <= start and (at >= start or (at < 0 and to >= start)):
                if at >= 0:
                    if at + n > stop:
                        continue  # (the first from here ends past end: none before it)
                    at -= base
                elif to >= stop:
                    continue
                else:
                    at = buf.find(e, max(start, to - n + 1) - base, end)
                    seen[e] = (since, base + at if at >= 0 else -1, stop)
            else:
                at = buf.find(e, p, end)
                seen[e] = (start, base + at if at >= 0 else -1, stop)
            if at >= 0 and (found < 0 or at < found):
                found, size = at, n
        return found, size

    def group_follows(self, buf: str, base: int, end: int, more: bool) -> bool | None:
        """What every bracket walk asks first where it starts right after the call's
        marker, of a format with an end marker: whether a bracket group follows there
        (True, as where the walk starts elsewhere); False where none does (the call's end
        is its end marker only); None where a stream's text so far ends in blanks."""
        if not (self.ends and self.at == self.after):
            return True
        q = _forth(buf, self.at - base, end)
        if q >= end:
            return None if more else False
        return buf[q] in _OPEN

    def _brackets(self, buf: str, base: int, end: int, more: bool) -> bool | None:
        """Whether the call's first bracket group holding a `{` or `(` closes (self.at
        then after it): `rm_rf[ARGS]{"p": "/"}`, `[{"name": …}]`, `[rm_rf(p='/')]`."""
        p, depth, grouped = self.at - base, self.depth, self.grouped
        follows = self.group_follows(buf, base, end, more)
        if follows is not True:
            return follows
        while p < end:
            c = buf[p]
            if c in _OPEN:
                depth += 1
                grouped = grouped or c != "["
            elif c in "}])":
                depth -= 1
                if depth <= 0:
                    depth = 0
                    if grouped:
                        self.at = base + p + 1
                        return True
            elif depth > 0 and (c == '"' or c == "'") and buf[_back(buf, 0, p)] in _BEFORE:
                t = _BODIES[c].match(buf, p + 1, end)
                if t.lastgroup is None:
                    if more and t.end() >= end - 1:
                        break
                    return False  # (a string its line's end broke: no call read here)
                p = t.end()
                continue
            elif depth > 0 and c == "<" and more and _GEMMA_QUOTE.startswith(buf[p:end]) and end - p < len(_GEMMA_QUOTE):
                break  # (a Gemma quote cut at the text's end: read again from its `<`)
            elif depth > 0 and c == "<" and buf.startswith(_GEMMA_QUOTE, p):
                t = _BODIES[_GEMMA_QUOTE].match(buf, p + len(_GEMMA_QUOTE), end)
                if t.lastgroup is None:
                    if more:
                        break
                    return False
                p = t.end()
                continue
            p += 1
        if more:
            self.at, self.depth, self.grouped = base + p, depth, grouped
            return None
        return False

    def _after(self, buf: str, base: int, end: int, more: bool) -> bool | None:
        """Whether the string's close comes after the call's end (self.at), as a value's."""
        quote, n, ends = self.quote, len(self.quote), self.ends
        p = self.at - base
        one_line = n == 1
        if not self.skipped:
            # (Blanks, and a run of end markers: `</function>\n</tool_call>`.)
            while True:
                q = _forth(buf, max(p, self.blanks - base), end)
                for e in ends:
                    if buf.startswith(e, q):
                        p = q + len(e)
                        break
                else:
                    break
            if more and (q >= end or any(len(e) > end - q and e.startswith(buf[q:end]) for e in ends)):
                # The text so far ends in the blanks, or in an end marker's first
                # characters (`<|tool_call_end|><|tool_calls_sec`): read again from
                # the call's end. Skipped as blanks-then-prose, the run's next marker
                # was read as text after the call, no close right after it (close_at),
                # where parse() reads the whole run and the quote after it (Q15).
                # (From the last end marker read, its blanks not read again: a stream
                # of a blank a delta after `</tool_call>` read them all at each.)
                self.at, self.blanks = base + p, base + q
                return None
            self.skipped = True
            self.ended = base + q  # (where the end markers were looked for last: _kept)
            # (Where the reply ends right after a quote, that quote closes the string
            # only if it follows the call's end on its line: `</tool_call>"` cut there;
            # not `</tool_call>\nDone"`, prose after a real call.)
            self.close_at = base + q if "\n" not in buf[p:q] else -1
            self.counted, self.opened = base + q, [0, 0, 0]
            if one_line and buf.count("\n", p, q) > 1 and not buf.startswith(quote, q):
                return False  # (a blank line after the call: the string's text ended before)
            p = q
        # (In a Python call, a string opened with one quote and closed with the other is
        # still taken to close there: `content="<call>…')]` quotes the call, the safe way;
        # but only on the call's end line: on a line after it, the other quote is prose's
        # after a real call (`Try f(q="dogs` … `That's it')`, QA19 R3: the call was lost).)
        other = ('"' if quote == "'" else "'") if self.kind in (1, 3) and n == 1 else ""
        while True:
            self.at = base + p
            quote = self.quote
            k = buf.find(quote, p, end)
            if other:
                j = buf.find(other, p, end if k < 0 else k)
                if j >= 0 and (self.close_at < 0 or buf.find("\n", self.close_at - base, j) >= 0):
                    j = -1  # (past the call's end line: only the string's own quote closes it)
                if j >= 0:
                    k, quote = j, other
            again = buf.find(self.marker, p, end if k < 0 else k)
            if one_line:
                # A JSON or Python string's text goes on over the lines after the call's
                # (its line breaks unescaped: `</tool_call>\nmore\nmore"}`), to the end of
                # their paragraph: a blank line before the close ends it (prose after a
                # real call), but for the close right after it (`</tool_call>\n\n"}`).
                b = _BLANK_LINE.search(buf, p, end if k < 0 else k)
                if b is not None and (again < 0 or b.start() < again):
                    q = _forth(buf, b.end(), end)
                    if q >= end and more:
                        return None  # (read again from p)
                    if q != k:
                        return False
            if again >= 0:
                # The marker again before the close: a string that quotes two calls, or
                # a run of calls after a string left open. The one after tells.
                self.call_from(base + again + len(self.marker))
                return False
            if k < 0:
                if more:
                    back = end - max(n, len(self.marker)) + 1
                    nl = buf.rfind("\n", p, end) if one_line else -1
                    if 0 <= nl < back and _forth(buf, nl + 1, end) >= end:
                        back = nl  # (a blank line that the text's end may cut: read again from it)
                    self.at = base + max(p, back)
                    return None
                return False
            before = buf[k - 1] if k > 0 else " "
            next_at = k + n
            if n > 1 and quote not in _TRIPLES and buf[_back(buf, 0, k)] == ":":
                # A Gemma string opened after a key (`Try call:w{q:<|"|>`, prose again):
                # a value's opening, not this string's close, which none came before.
                return False
            if n == 1 and before == "\\" and _escaped(buf, k):
                p = next_at  # (`\"`: no string's close, as a quote inside the string is none)
                continue
            if next_at >= end and more:
                return None
            follow = buf[next_at] if next_at < end else ""
            if quote == "'" and before.isalnum() and follow.isalnum():
                p = next_at  # (an apostrophe in a word: don't)
                continue
            if n == 1 and follow and follow in " \t":
                # A stray quote, blanks, then a quote (`</tool_call>" "}`, `" ')]`): the
                # second one tells, as where no blank comes between (QA18 Q2).
                q = next_at
                while q < end and buf[q] in " \t":
                    q += 1
                if q >= end and more:
                    return None
                if q < end and (buf[q] == self.quote or buf[q] == other):
                    p = q
                    continue
            if n == 1 and follow and (follow == self.quote or follow == other):
                p = next_at  # (a quote written twice: `</function>""}`, the second closes)
                continue
            if not (before.isalnum() or before in "_.!?") and (follow.isalnum() or follow == "_"):
                # A quoted word (`(see "docs")`): read past its close.
                close = buf.find(quote, next_at, end)
                if close < 0 or (one_line and "\n" in buf[next_at:close]):
                    if close < 0 and more:
                        return None
                    return False
                p = close + n
                colon = _forth(buf, p, end)
                if colon >= end and more:
                    return None  # (read again from the quoted word's opening)
                if colon < end and buf[colon] == ":":
                    return False  # (a key, `"q": …`: a call's text after the call, not the string's)
                continue
            q = _forth(buf, next_at, end)
            if q >= end and more:
                return None
            if q < end and buf[q] in ")]}" and self._left_open(buf, base, k, ")]}".index(buf[q])):
                # A closer of a bracket the text after the call opened (`</tool_call>\nDone
                # (see the users').`): prose's, not the call's around the string.
                p = next_at
                continue
            got = self._goes_on(buf, next_at, end, more, quote != self.quote, base + k == self.close_at)
            if got:
                self.span = base + next_at
            return got


    def _left_open(self, buf: str, base: int, k: int, kind: int) -> bool:
        """Whether the text from the call's end to k leaves a bracket of `kind` (0: `(`,
        1: `[`, 2: `{`) open; counted once, on from where the last ask stopped."""
        lo = self.counted - base
        if k > lo:
            opened = self.opened
            for m in _BRACKET.finditer(buf, lo, k):
                x = _BRACKETS.index(m.group())
                if x < 3:
                    opened[x] += 1
                elif opened[x - 3] > 0:
                    opened[x - 3] -= 1  # (a closer of none opened there, `'x')`, counts none)
            self.counted = base + k
        return self.opened[kind] > 0


class Groups:
    """The tokens _Told's bracket walks (_brackets) read, each read once a text and kept
    for every later marker's walk (issue 17). A walk reads plain text up to the first
    opener, then that opener's group up to its closer (strings inside read whole), and on
    from there if the group holds no `{` or `(`. From a token read inside a group (an
    opener, a closer, a string after a value-opening character, _BEFORE, or a Gemma
    quote), the tokens after it are the text's alone, wherever the walk began. So the
    tokens are read in runs (_GroupRun, as extent.BracketIndex's for JSON): a run that
    comes to a token another run noted goes on as that run (a link, its heights offset).
    Each walk's question, where its opener's group closes and whether it holds a `{` or
    `(`, is answered from the runs' closers by height: at a 32 KB storm of
    `<function=f>{"city": "Par<|eot_id|> `, each `{` inside a string of every walk before
    it, the walks were REACH characters each, 250 ms; now each token is read once.
    A string's close is read to the text's end, not the walk's: one that closes past the
    walk's end (where it was a break) puts the group's closer past it too, False either
    way. A stream's text is read as far as it is settled (a string cut by the text's end,
    a Gemma quote's first characters: read again when more comes)."""

    __slots__ = ("tokens",)

    def __init__(self) -> None:
        self.tokens: dict = {}  # (a token's place in the reply -> its run and index there)

    def brackets(self, t: _Told, buf: str, base: int, end: int, more: bool, final: bool) -> bool | None:
        """t._brackets(buf, base, end, more) for a walk at depth 0, nothing grouped: where
        the text so far cannot tell (more), t.at is left at the opener to read again."""
        p = t.at - base
        follows = t.group_follows(buf, base, end, more)
        if follows is not True:
            return follows
        while True:
            m = _OPENER.search(buf, p, end)
            if m is None:
                if more:
                    t.at = base + max(p, end)
                    return None
                return False
            o = m.start()
            got = self.group(buf, base, o, end, final)
            if got is _BEYOND:
                if more:
                    t.at = base + o
                    return None
                return False
            if got is _BROKEN:
                return False
            close, grouped = got
            if grouped:
                t.at = base + close + 1
                return True
            p = close + 1

    def group(self, buf: str, base: int, o: int, end: int, final: bool) -> object:
        """Where the group opened at o (local) closes, before end, and whether it holds a
        `{` or `(`; _BROKEN: a string in it that never closes (its line's end, the text's);
        _BEYOND: not before end (or the text so far does not tell)."""
        found = self.tokens.get(base + o)
        if found is None:
            run = _GroupRun(base + o)
            self._read(run, buf, base, o + 1, final, 0)  # (the opener at o: no run noted it)
            found = run, 0
        run, i = found
        level = run.heights[i] + 1  # (the closer that ends it comes at the height after it)
        grouped = False
        limit = base + end
        while True:
            closers = run.closers.get(level)
            if closers is not None:
                k = bisect_left(closers, i)  # (a link's token may be the closer itself)
                if k < len(closers):
                    c = closers[k]
                    if run.starts[c] >= limit:
                        return _BEYOND
                    return run.starts[c] - base, grouped or run.grouping[c] > run.grouping[i]
            if run.link is None and not run.broken:
                got = self._read(run, buf, base, end, final, level)
                if type(got) is int:
                    return run.starts[got] - base, grouped or run.grouping[got] > run.grouping[i]
                if got is not _LINKED:
                    return got
            grouped = grouped or run.grouping[-1] > run.grouping[i]
            if run.broken:
                return _BROKEN
            run, i, offset = run.link
            level -= offset

    def _read(self, run: _GroupRun, buf: str, base: int, end: int, final: bool, level: int) -> object:
        """Read run's tokens on, each where it begins before end, up to a closer that
        ends at `level` (its index), a token another run noted (_LINKED), a string that
        never closes (_BROKEN), or end, or where the text so far does not tell what comes
        (_BEYOND: read on from there when asked again)."""
        tokens, starts, heights, grouping = self.tokens, run.starts, run.heights, run.grouping
        height, g = run.height, grouping[-1]
        size = len(buf)
        p, q = run.at - base, run.next - base if run.next >= 0 else -1
        search = _TOKEN.search
        got: object = _BEYOND
        while True:
            if q < 0:
                while True:
                    m = search(buf, p)
                    q = m.start() if m is not None else size
                    if not final and q > size - len(_GEMMA_QUOTE):
                        # (A Gemma quote's first characters at the text's end: not read past.)
                        lt = buf.find("<", max(p, size - len(_GEMMA_QUOTE) + 1), q)
                        while lt >= 0 and not _GEMMA_QUOTE.startswith(buf[lt:]):
                            lt = buf.find("<", lt + 1, q)
                        if lt >= 0:
                            p, q = lt, -1
                            break
                    if m is None:
                        p, q = size, -1
                        break
                    c = buf[q]
                    if (c == '"' or c == "'") and buf[_back(buf, 0, q)] not in _BEFORE:
                        p = q + 1  # (a quote that opens no string: text)
                        continue
                    break
                if q < 0:
                    break  # (_BEYOND)
            if q >= end:
                break  # (_BEYOND, the next token found)
            at = base + q
            other = tokens.get(at)
            if other is not None:
                r, j = other
                run.link = r, j, height - r.heights[j]
                got = _LINKED
                break
            c = buf[q]
            to = q + 1
            if c == '"' or c == "'" or c == "<":
                m = (_BODIES[c].match(buf, to) if c != "<" else _BODIES[_GEMMA_QUOTE].match(buf, q + len(_GEMMA_QUOTE)))
                if m.lastgroup is None:
                    if not final and (c == "<" or m.end() >= size - 1):
                        break  # (_BEYOND: the text so far ends in it, read again when more comes)
                    run.broken = True
                to = m.end()
            k = len(starts)
            tokens[at] = run, k
            starts.append(at)
            heights.append(height)
            hit = False
            if c in _OPEN:
                height += 1
                if c != "[":
                    g += 1
            elif c in "}])":
                run.closers.setdefault(height, []).append(k)
                hit = height == level
                height -= 1
            grouping.append(g)
            p, q = to, -1
            if run.broken:
                got = _BROKEN
                break
            if hit:
                got = k
                break
        run.at, run.next, run.height = base + p, (base + q if q >= 0 else -1), height
        return got


class _GroupRun:
    """One reading of Groups' tokens from an opener on: each token's place, the height
    before it (openers minus closers from the run's start), the closers by height, how
    many `{` or `(` openers come before each token (`grouping`, one longer); read up to
    `at` (the next token's place, where found, `next`), up to a string that never closes
    (`broken`, its last token) or a token another run noted (`link`: that run, the
    token's index there, the offset from that run's heights to this one's)."""

    __slots__ = ("at", "next", "height", "starts", "heights", "closers", "grouping", "link", "broken")

    def __init__(self, at: int) -> None:
        self.at, self.next = at, -1
        self.height = 0
        self.starts: list = []
        self.heights: list = []
        self.closers: dict = {}
        self.grouping: list = [0]
        self.link: tuple | None = None
        self.broken = False


_LINKED, _BROKEN, _BEYOND = object(), object(), object()
# What Groups reads: brackets, quotes (a string where a value opens, _BEFORE) and Gemma's.
_TOKEN = re.compile(r"""[\[\](){}"']|<\|"\|>""")
_OPENER = re.compile(r"[\[({]")


class _Strings:
    """The strings of a call whose body is JSON (`{`, `[`) or Gemma's (`call:`), read
    from its start up to each end marker found, in order: whether that one is inside
    a string (the call's text, not its end). A JSON string ends at its line's end (a
    broken call's `"Par"is"}}` leaves none open on the next line). Other bodies (XML tags) have no strings
    that hold their end marker: none is inside."""

    __slots__ = ("quote", "at", "open")

    def __init__(self, buf: str, base: int, q: int, end: int) -> None:
        c = buf[q] if q < end else ""
        self.quote = '"' if c in ("{", "[") else _GEMMA_QUOTE if buf.startswith(_GEMMA_BODY, q, end) else ""
        self.at, self.open = base + q, False  # (read up to `at`, in the reply; in a string there)

    def inside(self, buf: str, base: int, k: int) -> bool:
        quote = self.quote
        if not quote:
            return False
        p, is_open = self.at - base, self.open
        if quote == '"':
            nl = buf.rfind("\n", p, k)
            if nl >= 0:
                p, is_open = nl + 1, False  # (a JSON string ends at its line's end: a broken one too)
        if k > p:
            while True:
                j = buf.find(quote, p, k)
                if j < 0:
                    break
                if not (quote == '"' and _escaped(buf, j)):
                    is_open = not is_open
                p = j + len(quote)
            self.at, self.open = base + max(p, k), is_open
        return is_open


def closes_on(buf: str, reading: Reading, base: int, final: bool) -> bool | None:
    """_closes for the string and marker in_string last answered None about
    (reading.string), read on from where it stopped: a stream's marker waiting for it
    asks only this at each delta (Scanner._in_string). False: in_string must be asked
    again (its other kinds)."""
    got = reading.told.read(buf, base, final)
    reading.closes, reading.span = got, reading.told.span
    return got


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
