"""A call the prose shows, not one the model makes (QA18 Q14): prose, no call, no error,
as a call in inline code is (Scanner._in_prose's backtick before a marker).

 - a quotation: the call's start marker right after an opening quote (`"`, `“`, `'`,
   `‘`, `«`) that follows the start of the reply, a blank or an opening bracket, and
   its end right before the matching close quote (`”` for `“`), all on one line:
   `The syntax is "<tool_call>{…}</tool_call>". I will not run it.`,
   `Write "[TOOL_CALLS]rm_rf[ARGS]{"p": "/"}" to call.` The call's end is instring's
   (_Told): its format's end marker outside its strings, a run of them
   (`<|tool_call_end|><|tool_calls_section_end|>`); for a format with none, where its
   first bracket group holding a `{` or `(` closes. Not a quote with text between it
   and the marker (`"Calling: <tool_call>…</tool_call>"`), nor an apostrophe after a
   word (`Here's the call:<tool_call>…`), nor a call whose end is not right before the
   close quote (`"<tool_call>…</tool_call> now"`).
 - a code sample: the marker inside a fenced block whose info string's first word is
   text, txt, plaintext, md or markdown (CODE_SAMPLES). Other fences (```` ``` ````
   with no info string, `~~~`, ```` ```json ````, ```` ```python ````: formats read
   those) and indented blocks are unchanged. The fences are read forward over the prose
   since the last call or region (Scanner.prose_from), as CommonMark reads them: a fence
   line opens a block, and only a line of the same character, as long or longer, with
   nothing but blanks after it closes it (a fence line with an info string inside a
   block is its text). Each line is looked at once (Fences keeps how far it read), so
   no bound on how far back the block opened.

A stream decides a quotation when the text shows the call's end and the character
after it (or the line's end): it waits at the marker until then (Scanner.string_wait),
reading on from where it stopped (Quotation keeps it). A code sample is decided at the
marker: the fences are in the lines before it.
"""

from __future__ import annotations

from .._grammar.fence import INDENT
from .._grammar.words import lazy
from .instring import _FENCE, _OPENER, Groups, _Told
import regex

# A line cut before it can tell whether it is a fence's (Fences._line): blanks, then at
# most two of a fence's characters (more text may make it one).
_FENCE_BEGUN = lazy(regex.compile, r"[ \t]{0,%d}+(?:`{0,2}|~{0,2})" % INDENT)

# An opening quote and its close.
OPENS = {'"': '"', "\u201c": "\u201d", "'": "'", "\u2018": "\u2019", "\u00ab": "\u00bb"}
# What an opening quote follows (and the start of the reply): a word before it makes it
# an apostrophe or a closing quote (`Here's`, `it"`).
_BEFORE = frozenset(" \t\r\n([{")
# The info strings (their first word, any case) of a fenced block that shows text.
CODE_SAMPLES = frozenset(("text", "txt", "plaintext", "md", "markdown"))
_WORD = 16  # (an info string's first word longer than this names none of them)


def opening(buf: str, i: int, base: int) -> str:
    """The close quote the marker at i asks for, where the character before it is an
    opening quote that opens a quotation ("" where none): after the start of the reply,
    a blank or an opening bracket. (buf begins at `base` in the reply; a stream keeps
    the characters before its prose's place: Scanner._trim.)"""
    if i < 1:
        return ""
    close = OPENS.get(buf[i - 1])
    if close is None:
        return ""
    if i >= 2:
        return close if buf[i - 2] in _BEFORE else ""
    return close if base == 0 else ""


class Quotation:
    """Whether the call whose marker is at `at` (in the reply; its end `after`) ends on
    the marker's line right before `close` (read): read on from where it stopped, a
    stream's text only growing. `span`: where the call ends (True)."""

    __slots__ = ("at", "close", "told", "line", "span", "walks")

    def __init__(self, at: int, close: str, after: int, ends: tuple, marker: str, walks: "Walks | None" = None) -> None:
        self.at, self.close = at, close
        self.walks = walks
        told = self.told = _Told(close, 0, at, after, ends, marker)
        if walks is not None:
            told.seen = walks.seen  # (the end markers' searches, shared: see _Told._next_end)
        told.call_from(after)  # (its end marker, or else its brackets: instring's steps)
        self.line = after  # (how far the line's end was looked for, in the reply)
        self.span = after

    def read(self, buf: str, base: int, final: bool) -> bool | None:
        """True: a quotation; False: not one; None: the text so far cannot tell."""
        nl = buf.find("\n", self.line - base)
        if nl < 0:
            self.line = base + len(buf)
            end, more = len(buf), not final
        else:
            self.line = base + nl
            end, more = nl, False
        t = self.told
        while True:
            if t.step == "end":
                got = t._end(buf, base, end, more)
                if got is None:
                    return None
                if got:
                    t.step = "close"
                else:
                    # (No end marker on the line: where the format's brackets close, if
                    # they follow the marker, as instring reads a call with none.)
                    t.step, t.at = "brackets", t.after
            elif t.step == "brackets":
                w = self.walks
                if w is None or t.depth or t.grouped:
                    got = t._brackets(buf, base, end, more)
                elif more:
                    got = w.groups.brackets(t, buf, base, end, True, final)
                else:
                    got = w.brackets(t, buf, base, end, final)
                if not got:
                    return got
                t.step = "close"
            else:
                return self._closed(buf, base, end, more)

    def _closed(self, buf: str, base: int, end: int, more: bool) -> bool | None:
        """Whether the close quote follows the call's end (a run of end markers after it
        read first: a section's end after its call's)."""
        t = self.told
        ends = t.ends
        p = t.at - base
        while True:
            for e in ends:
                if buf.startswith(e, p):
                    p += len(e)
                    break
            else:
                break
        t.at = base + p
        if more and (p >= end or any(len(e) > end - p and e.startswith(buf[p:end]) for e in ends)):
            return None
        if buf.startswith(self.close, p, end):
            self.span = base + p
            return True
        return False


class Walks:
    """What the bracket walks (instring._Told._brackets) of the quotations on one line
    read, kept for the next marker's on that line (QA22b R1: a storm of quoted markers
    with no end on their line, each walking the rest of the line, was quadratic). A
    bracket group's reading (where it closes, whether it holds a `{` or `(`) is
    instring.Groups', shared with instring's walks (its tokens read once a text); here,
    the plain text before a walk's first opener is searched once (`scan`), and a walk at
    depth 0 that meets an opener another met there takes its answer (`zero`). Kept for
    one line's end (`end`, in the reply) and a whole line only (a stream's text cut in
    the line walks as Groups.brackets does: its groups read once all the same)."""

    __slots__ = ("end", "scan", "zero", "met", "groups", "seen")

    def __init__(self, groups: Groups | None = None, seen: dict | None = None) -> None:
        self.end = -1
        self.groups = groups if groups is not None else Groups()
        self.seen = seen if seen is not None else {}  # (_Told._next_end's, the scanner's Reading's)
        self.scan = (-1, -1)  # (searched from, the next opener's place or the line's end; in the reply)
        # (An opener met at depth 0, nothing grouped: the walk's answer from there, its
        # text's alone too, -1 for False, else where the call ends; in the reply: a run
        # of `[…]` groups that hold no `{` or `(` is walked once, not once a marker.)
        self.zero: dict = {}
        self.met: list = []

    def brackets(self, t: _Told, buf: str, base: int, end: int, final: bool = True) -> bool:
        """t._brackets(buf, base, end, False), for a walk at depth 0, nothing grouped."""
        if base + end != self.end:
            self.end = base + end
            self.scan, self.zero = (-1, -1), {}
        zero = self.zero
        got = self._walk(t, buf, base, end, zero, final)
        answer = t.at if got else -1
        for o in self.met:
            zero[o] = answer
        return got

    def _walk(self, t: _Told, buf: str, base: int, end: int, zero: dict, final: bool) -> bool:
        met = self.met = []  # (the openers met at depth 0, nothing grouped)
        p = t.at - base
        if not t.group_follows(buf, base, end, False):
            return False
        group = self.groups.group
        while p < end:
            # (Plain text: only an opener tells; closers and quotes are text.)
            lo, found = self.scan
            if not (lo <= base + p <= found):
                m = _OPENER.search(buf, p, end)
                found = base + (m.start() if m else end)
                self.scan = (base + p, found)
            p = found - base
            if p >= end:
                break
            at = base + p
            known = zero.get(at)
            if known is not None:
                if known < 0:
                    return False
                t.at = known
                return True
            met.append(at)
            got = group(buf, base, p, end, final)
            if type(got) is not tuple:
                return False  # (not closed on the line, or a string in it its line's end broke)
            close, grouped = got
            if grouped:
                t.at = base + close + 1
                return True
            p = close + 1
        return False


class Fences:
    """The fenced blocks of the prose since `start` (in the reply), read forward up to
    `to` (in the reply: a line's start, or, `mid`, inside a line that is no fence's);
    `open`: the fence (its character, its length, its info string's first word) of the
    block open at `to`, or None."""

    __slots__ = ("start", "to", "mid", "open")

    def __init__(self) -> None:
        self.start = self.to = 0
        self.mid = False
        self.open: tuple | None = None

    def read(self, buf: str, base: int, start: int, hi: int) -> None:
        """Read the lines of buf before hi (local) that the prose beginning at `start`
        (in the reply) holds, each as far as it tells what it is (_line): a line cut at hi
        that cannot tell yet is read again from its start."""
        if start != self.start:
            # (A new stretch of prose: a fence in a call's value, or before it, is no
            # block around the prose after the call.)
            self.start = self.to = start
            self.open = None
            lo = start - base
            self.mid = lo > 0 and buf[lo - 1] != "\n"
        p = max(self.to - base, 0)
        while p < hi:
            if self.mid:
                nl = buf.find("\n", p, hi)
                if nl < 0:
                    p = hi
                    break
                p, self.mid = nl + 1, False
                continue
            j = _next_fence(buf, p, hi)
            if j < 0:
                # (No fence on the lines from p: the last one, cut at hi, may begin one.)
                head = buf.rfind("\n", p, hi) + 1 or p
                if self._line(buf[head:hi], False):
                    self.mid, p = True, hi
                else:
                    p = head
                break
            head = buf.rfind("\n", p, j) + 1 or p
            eol = buf.find("\n", j, hi)
            if eol >= 0:
                self._line(buf[head:eol], True)
                p = eol + 1
            elif self._line(buf[head:hi], False):
                self.mid, p = True, hi
            else:
                p = head
                break
        self.to = base + p

    def _line(self, s: str, whole: bool) -> bool:
        """A line from its start (`whole`: all of it, else as far as the text goes): what
        it does to the blocks, a fence's opening or closing one; False where the text so
        far cannot tell (a fence's first characters, its first word not ended, blanks
        after a close). A fence line is read by its head (_grammar/fence.py,
        blanks, three or more backticks or tildes, the info
        string's first word), not its whole: a stream tells it as its head comes."""
        t = s.lstrip(" \t")
        c = t[:1]
        if c != "`" and c != "~" and c:
            return True  # (no fence's character first: the rule's answer, asked cheaply)
        if _FENCE.match(s) is None:
            # No fence's line (_grammar/fence.py's FENCE_HEAD, the one rule), unless the line is cut
            # before it can tell: blanks alone, or a run of fewer than three so far.
            return whole or _FENCE_BEGUN.fullmatch(s) is None
        n = len(t) - len(t.lstrip(c))
        if n == len(t) and not whole:
            return False  # (the run may go on)
        info = t[n:].lstrip(" \t")
        opened = self.open
        if opened is not None:
            if c != opened[0] or n < opened[1] or info.strip(" \t\r"):
                return True  # (the block's text)
            if whole:
                self.open = None
            return whole
        k = 0
        while k < len(info) and k <= _WORD and not info[k].isspace():
            k += 1
        if k == len(info) and not whole and k <= _WORD:
            return False  # (its first word may go on)
        word = info[:k]  # (no backtick in it: FENCE_HEAD)
        self.open = (c, n, word.lower() if k <= _WORD else "")
        return True

    def sample(self) -> bool:
        """Whether the block open at `to` shows text (CODE_SAMPLES)."""
        return self.open is not None and self.open[2] in CODE_SAMPLES


def _next_fence(buf: str, p: int, end: int) -> int:
    """The first ``` or ~~~ in buf[p:end] (-1: none). (Each looked for from its character's
    first place, a one-character find: see fastpath._shown.)"""
    a = buf.find("`", p, end)
    if a >= 0:
        a = buf.find("```", a, end)
    hi = end if a < 0 else a
    b = buf.find("~", p, hi)
    if b >= 0:
        b = buf.find("~~~", b, hi)
    return b if b >= 0 else a
