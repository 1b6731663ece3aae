"""Close tags of a call found in the prose after it, closing nothing (QA10 D3).

A value that quotes a run of its format's closers, then prose on that line
(`Example: </parameter></invoke></minimax:tool_call> and then …`), is read as the
value's text only where the value's own close comes within a bounded look after the
run (issue 21: a stream completes the call that run closes a bounded look after it,
not at the end of the reply). Past the look the run closes the call, and the value's
real close, when it comes later, is left in the prose with no call open. The call
cannot be taken back then (a stream has sent it), but the closers can tell: the
first of the format's own value closes that starts its line in the prose after the
call, then (blanks between) a close of what holds a value, is markup, an "error"
segment whose message says the call before may have ended early.

Only after a call whose last line goes on with prose (the shape above): a call that
ends its line costs nothing after that line. The prose is searched for them once,
from where it was read to (each character once), until the next region begins:
Scanner._in_prose asks `find`; take_plain holds back a value close first on its line
until the text after it tells (plain_hold), and gives way to find for a run (and for
every delta until the call's line is told). Each `<` is looked at once a delta there.
"""

from __future__ import annotations

import re
from typing import Any

import regex

from .items import Failure
from .._build.builder import Draft

WAIT = object()  # (the text so far cannot tell yet)
_BLANKS = 32  # blanks at most between two closers of the run (as a stutter's)
_RUN_BACK = 8  # closers at most looked back through where a call ended (nest's _RUN)
_LINE_BLANKS = re.compile(r"[^\S\n]*")  # (blanks but a line break, as str.isspace() tells: `re`'s \s)


class Watch:
    """What the prose after a call of an XML-ish format is searched for."""

    __slots__ = ("own", "tags", "holders", "firsts", "longest", "name", "key", "seen", "armed", "fresh")

    def __init__(self, own: Any, tags: tuple, holders: tuple, name: str, key: str, at: int, firsts: frozenset, longest: int) -> None:
        self.own = own  # compiled: any of the format's value closes, `tags`
        self.tags = tags
        self.holders = holders  # the closers of what holds a value
        self.firsts = firsts  # (the tags' first characters, and the longest's length)
        self.longest = longest
        self.name = name  # the call before, and its last argument's key ("" none)
        self.key = key
        # How far the call's last line (from its end, in the reply) has been looked at,
        # and whether it held prose there: only then is the rest of the reply watched.
        self.seen = at
        self.armed = False
        # Whether the text right after the call (blanks between) is still to be looked at
        # for a run of closers (_right_after).
        self.fresh = True


def watch_of(fmt: Any, region: Any, buf: str, end: int, base: int) -> Watch | None:
    """The Watch for the prose after `region` of `fmt`, which ends at buf[end] (base +
    end in the reply; None: nothing to watch for: no call in it, or a format whose
    values have no close tag)."""
    return of_args(watch_args(fmt, region, buf, end)[0], buf, end, base)


def of_args(a: Any, buf: str, end: int, base: int) -> Watch | None:
    """The Watch of watch_args' arguments `a` for a call that ends at buf[end]; None where
    there are none, or where the text after a Python call list tells already that there
    is nothing to watch for: its line ends right there and the next begins with no
    closer and no blank (`[f(a=1)]\n[g(b=2)]`; _right_after and line_after would say so
    at their first look: a Watch made for each of a storm's lines cost 5% of its read)."""
    if a is None or a[1] is PY_TAGS and buf[end + 1 : end + 2] not in PY_NOT_AFTER and buf[end : end + 1] == "\n":
        return None  # (Scanner._after_call asks the same, inline: a storm's line each)
    return Watch(a[0], a[1], a[2], a[3], a[4], base + end, a[5], a[6])


def watch_args(fmt: Any, region: Any, buf: str, end: int) -> tuple:
    """(Watch's arguments but where it is: (own, tags, holders written, name, key,
    firsts, longest), or None for no Watch; the least index of buf they read). A storm's
    memo keeps them for a remembered outcome whose window holds what they read."""
    nest = fmt.compiled.nest
    if region is None:
        return None, end
    # (Not a code fence's calls, ```` ```python\n[f(a=1)]\n``` ````: its close ends the code,
    # and a `)` or `]` after it is the prose's, a parenthesis around the fence; the fence's
    # `stream_python` line is for the stream, and reads no closer after it.)
    python = nest is None and bool(fmt.stream_python) and "```" not in fmt.ends
    if not python and (nest is None or not nest.own or not nest.holders):
        return None, end
    for last in reversed(region.items):  # (its last call: a loop, no generator made per call)
        if type(last) is Draft and last.name:
            break
    else:
        # (No named call: one with no name, a list's item that is no call (`3` of
        # `[f(a=1), 3)]`) is named by none; the call before it is the one the message
        # names, the one the closers may have been meant to close.)
        for last in reversed(region.items):
            if type(last) is Draft:
                break
        else:
            return None, end
    if python:
        # A Python call list's closers: a call's `)` (its values' holder, as a value's is
        # in a list), and the list's `]` (issue 19: `[f(a=1)])]`, `[f(a=1)]\n)]` were
        # prose with no error, where an XML-ish format's run of closers after its call is
        # one). The same rules: right after the call, a run that ends its line; in the
        # prose after a call whose line goes on, a `)` first on its line, then one more.
        return (_PY_OWN, PY_TAGS, _PY_HOLDERS, last.name, "", _PY_FIRSTS, 1), end
    key = last.params[-1][0] if last.params else ""
    derived = fmt.compiled.derived
    found = derived.get("stray_closes")
    if found is None:
        tags = tuple(sorted(nest.own, key=len, reverse=True))
        holders = tuple(sorted(nest.holders, key=len, reverse=True))
        own = regex.compile("|".join(regex.escape(t) for t in tags))
        closers = holders + tags
        found = derived["stray_closes"] = (own, tags, holders, closers, frozenset(t[0] for t in tags), len(tags[0]),
                                           max(map(len, closers)))
    own, tags, holders, closers, firsts, longest, widest = found
    written, low = _written(buf, end, closers, holders, widest)
    return (own, tags, written, last.name, key, firsts, longest), low


# (watch_args' for a Python call list: see there.)
_PY_OWN = regex.compile(r"\)")
PY_TAGS = (")",)
_PY_HOLDERS = (")", "]")
# (What may begin a run after the line break, or blanks before one; "": the text so far ends there.)
PY_NOT_AFTER = frozenset((*")] \t\r\n\f\v", ""))
_PY_FIRSTS = frozenset(")")


def _written(buf: str, end: int, closers: tuple, holders: tuple, widest: int) -> tuple:
    """The closers of what holds a value that the call wrote in the run of closers it
    ended with (blanks between, at most _RUN_BACK of them), where it wrote any: the
    spelling of its format's calls. A grammar that reads several spellings (MiniMax's
    and dots' read MiniCPM5's `<function …>`/`</function>` too) declares their closers
    all, and prose after a MiniMax call naming Qwen's `</parameter></function>` is no
    closer of that call (QA11 D6). Else all the format's (a call whose closers were left
    out tells no spelling). And the least index of buf it read, at most (`widest`: the
    longest closer's length)."""
    seen: list = []
    j = end
    low = end
    for _ in range(_RUN_BACK):
        k = j
        while k > 0 and j - k < _BLANKS and buf[k - 1].isspace():
            k -= 1
        low = k - widest - 1
        for tag in closers:  # (the holders' first, then the value's: `closers`)
            if buf.endswith(tag, 0, k):
                break
        else:
            break
        seen.append(tag)
        j = k - len(tag)
    written = tuple(t for t in holders if t in seen)
    return written or holders, low


def line_after(w: Watch, buf: str, base: int, final: bool) -> bool | None:
    """Whether the line the call ended on goes on with prose after it (`…</invoke></minimax:tool_call>
    and then …`), the shape whose value may have gone on (see the module): then the
    watch is armed (True); False where blanks end it; None while the text so far
    cannot tell (the line goes on: a stream gives every delta to _in_prose till then)."""
    start = max(0, w.seen - base)
    if w.fresh:
        # (A run of closers right after the call, on its line or the next: see _right_after.)
        j = _BLANKS_AFTER.match(buf, start).end()
        if j >= len(buf) and not final and j - start < _AFTER:
            return None
        if j < len(buf) and _opens_closer(w, buf, j):
            w.armed = True
            return True
        w.fresh = False
    # (The first character after the blanks that are no line break: prose, the line's
    # end, or the text's. Not a find of the line break and a copy of the line: with none
    # in the text, both ran to its end, at each call of a storm.)
    at = _LINE_BLANKS.match(buf, start).end()
    if at < len(buf) and buf[at] != "\n":
        w.armed = True
        return True
    if at >= len(buf) and not final:
        w.seen = base + len(buf)
        return None
    return False


def _opens_closer(w: Watch, buf: str, j: int) -> bool:
    """Whether the text at j begins one of the closers (or the text so far ends inside
    one): told by its first character first (most calls have prose, or nothing, there)."""
    c = buf[j]
    if c not in w.firsts and all(h[0] != c for h in w.holders):
        return False
    return any(t.startswith(buf[j : j + len(t)]) for t in (*w.holders, *w.tags))


def find(w: Watch, buf: str, pos: int, stop: int, final: bool, base: int, ends: Any = (), more: Any = None) -> Any:
    """The first stray run in buf[pos:stop] (see the module): a Failure for it; WAIT,
    with where the text is settled to, (WAIT, at), when the text so far cannot tell
    whether a value close at `at` begins one; None when there is none (then how far
    the text is settled is the caller's, but for a tag cut by the end: see hold).
    `ends`: the end-of-turn tokens, and `more` (None: none) the end markers of the call's
    region where it left them out (Scanner.end_watch), which end a run's line as a line
    break does."""
    if w.fresh:
        got = _right_after(w, buf, pos, final, ends if more is None else (*ends, *more))
        if got is not None:
            return got
        # No run right after the call: its line tells now, on this text, as for a call
        # with none (line_after). Left to the caller's next look, a stream had put out
        # the prose up to there first (a delta later than parse()'s one look), and a
        # close on the next line was text in it and an error in parse()'s:
        # `</tool_call></param` then `\n</parameter></tool_call>`.
        if not w.armed and line_after(w, buf, base, final) is not True:
            return None
    at = pos
    while True:
        m = w.own.search(buf, at, stop)
        if m is None:
            return None
        at = m.end()
        if not _first_on_line(buf, m.start()):
            continue
        end, count = _holders_after(w, buf, at, final)
        if end is WAIT:
            return WAIT, m.start()
        if count:
            return Failure(m.start(), end, _message(w, buf[m.start() : end]), False)


def hold(w: Watch, buf: str, pos: int) -> int:
    """How many characters at the end of buf (from pos on) may begin a value close."""
    for i in range(max(pos, len(buf) - w.longest + 1), len(buf)):
        if buf[i] in w.firsts and any(t.startswith(buf[i:]) for t in w.tags):
            return len(buf) - i
    return 0


def plain_hold(w: Watch, buf: str, pos: int, value: str) -> int | None:
    """For take_plain: `value` is the text from buf[pos] on (what is held back, then a
    delta). None where a stray run starts in it (the slow way puts it out: see find);
    else how many characters at its end may begin one, a value close first on its
    line cut by the end or followed by blanks or a holder's close so far (held back,
    as the start of a marker is), 0 none."""
    if w.fresh:
        return None  # (the text right after the call is not told yet: _right_after, the slow way)
    for first in w.firsts:
        i = value.find(first)
        while i >= 0:
            k = i - 1
            while k >= 0 and value[k] in " \t":
                k -= 1
            if (value[k] in "\r\n") if k >= 0 else _first_on_line(buf, pos):
                tail = value[i : i + w.longest]
                tag = next((t for t in w.tags if tail.startswith(t)), None)
                if tag is not None:
                    end, count = _holders_after(w, value, i + len(tag), False)
                    if end is WAIT:
                        return len(value) - i  # (not told yet: held from the close on)
                    if count:
                        return None
                elif any(t.startswith(tail) for t in w.tags):
                    return len(value) - i  # (the end cut it: its start, held)
            i = value.find(first, i + 1)
    return 0


def _first_on_line(buf: str, at: int) -> bool:
    k = at - 1
    while k >= 0 and buf[k] in " \t":
        k -= 1
    return k < 0 or buf[k] in "\r\n"


def _holders_after(w: Watch, buf: str, at: int, final: bool) -> tuple:
    """(where the run of holders' closes after `at` ends, how many), blanks between;
    (WAIT, 0) when the end of the text so far may still begin one."""
    count = 0
    n = len(buf)
    while True:
        j = at
        cap = min(n, at + _BLANKS)
        while j < cap and buf[j].isspace():
            j += 1
        tag = next((t for t in w.holders if buf.startswith(t, j)), None)
        if tag is None:
            if not final and j < at + _BLANKS and any(t.startswith(buf[j:]) for t in w.holders):
                return WAIT, 0  # (blanks or a closer's start up to the end: not told yet)
            return at, count
        count += 1
        at = j + len(tag)


def _right_after(w: Watch, buf: str, pos: int, final: bool, ends: Any = ()) -> Any:
    """Right after a call (pos, blanks between): a run of its format's closers, the
    closes of values and of what holds one (blanks between, at most _RUN_BACK), one of
    the latter at least, that ends its line (`…</minimax:tool_call>\n</parameter>\n</invoke>\n</minimax:tool_call>`,
    `…</minimax:tool_call></invoke></minimax:tool_call>` then the next line): they close
    nothing, and are one error, as a run after prose is (QA13 F7: the first two were
    prose and the last dropped as markup). A run with text after it on its line is
    written about, and prose. An end-of-turn token (`ends`), or the region's end marker
    left out till there, right after the run ends its line as a line break does
    (`[f(a=1)])]<|im_end|>` as `[f(a=1)])]`: QA32 G1). The
    Failure; (WAIT, pos) while the text so far cannot tell; None: none (and no more
    looked for here)."""
    n = len(buf)
    j = start = _BLANKS_AFTER.match(buf, pos).end()
    if j >= n and not final:
        # (Nothing but blanks after pos so far: a stream there, after a region that
        # failed right after the call, told "no run" where parse() read one: cofl's
        # `…</cofl:tool_calls></cofl:tool_call>`.)
        return WAIT, pos
    holders = 0
    for _ in range(_RUN_BACK):
        tag = next((t for t in w.holders + w.tags if buf.startswith(t, j)), None)
        if tag is None:
            if not final and j < n and any(t.startswith(buf[j:]) for t in w.holders + w.tags):
                return WAIT, pos  # (a closer cut by the end so far)
            break
        holders += tag in w.holders
        end = j + len(tag)
        j = _RUN_BLANKS.match(buf, end).end()
        if j >= n and not final:
            return WAIT, pos  # (blanks up to the end so far: the run may go on)
        if j >= n or buf[j] not in w.firsts and all(h[0] != buf[j] for h in w.holders):
            break  # (no closer's first character: an XML-ish format's `<`, a Python list's `)` or `]`)
    if j > start:
        j = end  # (where the run's last closer ends)
    eol = _LINE_END.match(buf, j)
    if eol is None and holders and ends:
        k = _TAB_BLANKS.match(buf, j).end()
        for e in ends:
            got = buf[k : k + len(e)]
            if got == e:
                eol = _TAB_BLANKS.match(buf, j)  # (the token ends the run's line)
                break
            if got and len(got) < len(e) and k + len(got) >= n and e.startswith(got):
                if not final:
                    return WAIT, pos  # (a token cut by the end so far)
                # (The token the end of the reply cut, `[f(a=1)])]<|t`: it ends the run's
                # line as the whole token does; it is markup, as a cut close is.)
                eol = _TAB_BLANKS.match(buf, j)
                break
    if holders and eol is not None and not final and eol.end() >= n and not buf[j : eol.end()].endswith("\n"):
        return WAIT, pos  # (blanks after the run up to the end so far: its line not told yet)
    w.fresh = False
    if not holders or eol is None:  # (no run; or text after it on its line: written about)
        w.armed = False  # (the call's line is looked at as before: line_after)
        return None
    return Failure(start, j, _message(w, buf[start:j]), False)


# (_right_after: the blanks between a call and a run of closers right after it, on its line
# or the next, and between two closers of a run; what may end the run's line.)
_AFTER = 64
_BLANKS_AFTER = regex.compile(r"\s{0,%d}" % _AFTER)
_RUN_BLANKS = regex.compile(r"\s{0,%d}" % _BLANKS)
_LINE_END = regex.compile(r"[ \t]{0,32}(?:\r?\n|\Z)")
_TAB_BLANKS = regex.compile(r"[ \t]{0,32}")


def _message(w: Watch, run: str) -> str:
    tags = "".join(run.split())
    where = f' at close tags written inside its "{w.key}" value' if w.key else ""  # (a Python list's: none)
    return (
        f"Couldn't read a tool call: `{tags}` closes no call here. The call \"{w.name}\" before it may have "
        f"ended early{where}; if so, write that call again."
    )
