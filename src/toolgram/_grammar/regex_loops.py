"""What a terminal's regex streams like: whether it has the unrolled-loop shape
`[^E]*(?:X[^E]*)*` (_loop), read with the `re` module's own pattern parser (private
stdlib: re._parser), imported on first use; without it no pattern is taken for a
loop (the slow path, lexing again, stays correct). The driver's streaming waits
(_lalr/growth.py) use it per token; the grammar compiler warns of a payload
terminal that is no such loop (it would stream in quadratic time)."""

from __future__ import annotations

import re
from typing import Any

import regex

from .._guard import passes_through
from .words import fast, words

_C: Any = None  # re._constants, once sre() has imported it
_sre: Any = None  # re._parser
_SRE_MISSING = False


def sre() -> Any:
    """The `re` module's pattern parser (re._parser; sre_parse before 3.11),
    imported on first use; None when this Python has neither."""
    global _C, _sre, _SRE_MISSING
    if _sre is None and not _SRE_MISSING:
        try:
            from re import _constants as C
            from re import _parser as P
        except ImportError:  # Python 3.10
            try:
                import sre_constants as C  # type: ignore[no-redef]
                import sre_parse as P  # type: ignore[no-redef]
            except ImportError:
                _SRE_MISSING = True
                return None
        _CATEGORIES.update({
            C.CATEGORY_DIGIT: regex.compile(r"\d").match,
            C.CATEGORY_SPACE: regex.compile(r"\s").match,
            C.CATEGORY_WORD: regex.compile(words(r"\w")).match,
        })
        _C, _sre = C, P
    return _sre


def _loop(source: str) -> tuple | None:
    """For a pattern of the unrolled-loop shape `[^E]+(?:X[^E]*)*` (also `*`), where
    X starts with a character of E and is bounded (literals, classes, lookarounds,
    `?`) and takes no other character of E; or `P[^E]*(?:X[^E]*)*`, with a bounded
    start P (`(?:[^E]|X)`, `[{(]`): (a regex finding a character of E, E, a bound
    on how far X or P reads, the tail `(?:X[^E]*)*`, the most P takes (0: no P),
    the loop and tail without P (None: no P), and for `R*P[^E]*(?:X[^E]*)*`, a
    leading run of a class R without a character of E, R* (else None)). Such a match,
    once it has run past P and X into the loop, absorbs any text without a character
    of E. None for any other pattern (those are always re-lexed). Last, what P and X
    read, as item lists (for reads_to)."""
    try:
        items = list(sre().parse(source))  # (None without the parser: not a loop)
    except Exception as exc:  # noqa: BLE001 - a pattern only the `regex` module reads
        if passes_through(exc):
            raise
        return None
    if len(items) == 4:
        # A run of a class first (`\s*`, Cohere's cofl VALUE), then a start P: that run
        # is skipped as P is, once (`space` finds where P starts).
        end = _item_end(source, 0)
        op, av = items[0]
        if end is None or source[end : end + 1] != "*" or op is not _C.MAX_REPEAT or av[:2] != (0, _C.MAXREPEAT):
            return None
        inner = _loop(source[end + 1 :])
        space = fast(regex.compile(source[: end + 1]))[1]  # (as the token's `regex` reads it)
        if inner is None or not inner[4] or any(space.match(c).end() for c in inner[1]):
            return None  # (no P after it, or the run may take a character of E)
        return (*inner[:6], space, inner[7])
    if not items or len(items) > 3:
        return None
    lead = 0
    skip = 0
    width = 1  # how far X (or P) reads from where it starts: what it takes or looks at
    reads: list = []  # (P's items and X's: see reads_to)
    if len(items) == 3 or _negated_loop(items[0]) is None:
        # The start P: what it takes is read by the whole pattern, once.
        if len(items) < 2 or not _bounded(items[0]):
            return None
        lead = _width(items[0])
        width = _reach(items[:1])
        reads.append(items[:1])
        skip = _item_end(source, 0)
        if skip is None:
            return None
        items = items[1:]
    exits = _negated_loop(items[0])
    if exits is None:
        return None
    if len(items) == 2:
        op, av = items[1]
        if op is not _C.MAX_REPEAT or av[0] != 0 or av[1] is not _C.MAXREPEAT:
            return None
        body = list(av[2])
        if len(body) == 1 and body[0][0] is _C.SUBPATTERN:
            body = list(body[0][1][-1])
        if len(body) < 2 or _negated_loop(body[-1]) != exits:
            return None
        first = body[0]
        if first[0] is not _C.LITERAL or chr(first[1]) not in exits:
            return None
        if not all(_bounded(item, exits) for item in body[1:-1]):
            return None
        width = max(width, _reach(body[:-1]))
        reads.append(body[:-1])
    # The loop's source, `[^E]+` or `[^E]*`, and the tail `(?:X[^E]*)*` after it.
    head = regex.compile(r"\[\^(?:\\.|[^\]\\])+\][+*]").match(source, skip)
    if head is None:
        return None
    try:
        tail = regex.compile(source[head.end() :] or "(?:)")
        loop = regex.compile(source[skip:]) if lead else None
    except Exception as exc:  # noqa: BLE001
        if passes_through(exc):
            raise
        return None
    chars = "".join(sorted(exits))
    return re.compile("[" + re.escape(chars) + "]"), chars, width, tail, lead, loop, None, Reads(reads)


class Reads:
    """What a loop's P and X read, as item lists (for reads_to), and the static reaches
    reads_to falls back on, worked out once per place in them."""

    __slots__ = ("seqs", "reach", "seen", "floor", "last", "tails", "back")

    def __init__(self, seqs: list) -> None:
        # How far before where it starts X (or P) may look back (its look-behinds: fixed
        # width, as the `re` parser reads them): what a text must keep before a character
        # of E to match X there again (growth._LoopWait.absorbs).
        self.back = max((_behind(seq) for seq in seqs), default=0)
        self.seqs, self.floor = _shared(tuple(map(_plain, seqs)))
        self.reach: dict = {}  # (id of an item list, index, rest) -> _reach of what follows
        # The next _SEEN characters from a place -> (how far past it the looks read, the
        # text they read): markup repeats (a block's closers, each call's opener), and
        # where the same text follows, its looks are not followed again.
        self.seen: dict = {}
        self.last: tuple | None = None  # (the answer of `seen` last stored or found: see reads_to)
        # The text from a place to the end of a stream's text, shorter than _SEEN -> how far
        # past the place the looks read (see reads_to).
        self.tails: dict = {}

    def static(self, items: Any, i: int, rest: tuple) -> int:
        key = (id(items), i, tuple((id(r), j) for r, j in rest))
        far = self.reach.get(key)
        if far is None:
            far = self.reach[key] = _reach([*items[i:], *(item for r, j in rest for item in r[j:])])
        return far


def _shared(seqs: tuple) -> tuple:
    """seqs without one that reads only what the others do: a start P that is a choice
    between one character and another's X (`(?:[^<]|<(?!…))` before `[^<]*(?:<(?!…)[^<]*)*`,
    the raw values' shape), whose look is X's own, or one character (1: `floor`, how far
    reads_to reads at the least). Reading that look twice at each `<` was half a stream's
    cost of a value of tags whose closes were left out (Q11)."""
    one = (_C.LITERAL, _C.NOT_LITERAL, _C.IN, _C.ANY)

    def choices(seq: tuple) -> Any:
        if len(seq) != 1:
            return None
        op, av = seq[0]
        while op is _C.SUBPATTERN and not av[1] and not av[2] and len(av[-1]) == 1:
            op, av = av[-1][0]  # (a group of one choice: as _seq_reads reads it)
        return av[1] if op is _C.BRANCH else None

    alts = [choices(seq) for seq in seqs]
    plain = [seq for seq, a in zip(seqs, alts) if a is None]
    kept, floor = [], 0
    for seq, a in zip(seqs, alts):
        if a is not None and all((len(c) == 1 and c[0][0] in one) or c in plain for c in a) and any(c in plain for c in a):
            floor = max(floor, 1 if any(c not in plain for c in a) else 0)
            continue
        kept.append(seq)
    return tuple(kept), floor


def _plain(items: Any) -> tuple:
    """The parser's items as tuples, all the way down (its SubPattern indexes slowly)."""
    out = []
    for op, av in items:
        if op is _C.SUBPATTERN:
            av = (*av[:-1], _plain(av[-1]))
        elif op is _C.BRANCH:
            av = (av[0], tuple(map(_plain, av[1])))
        elif op is _C.ASSERT or op is _C.ASSERT_NOT:
            av = (av[0], _plain(av[1]))
        elif op is _C.MAX_REPEAT or op is _C.MIN_REPEAT:
            av = (av[0], av[1], _plain(av[2]))
        elif op is _C.IN:
            av = tuple(av)
        out.append((op, av))
    return tuple(out)


def reads_to(reads: Reads, buf: str, q: int) -> int:
    """Where the text that the loop's P and X, tried at q (a character of E, or where the
    token starts), look at ends, as far as the text tells (past len(buf): more text
    may change what they find there): an alternative whose spelled start the text does
    not have there fails, whatever comes after, so it reads no further than that; any
    other part reads what _reach says it may. (Kimi K3's VALUE may look 1,579
    characters on from a `<|open|>call`; from `<|close|>tools<|sep|>` then prose, about
    80: the width alone held a stream's reading that long after every call.) Each
    spelled start is followed once per way into it: a look costs its pattern's size."""
    key = buf[q : q + _SEEN]
    if len(key) == _SEEN:
        got = reads.seen.get(key)
        if got is not None:
            reads.last = got
            if buf.startswith(got[1], q):
                return q + got[0]
            n = len(buf)
            if n - q < got[0] and got[1].startswith(buf[q:n]):
                # (The text so far begins the text a look from here read to its end, past
                # the end of this one: the same look reads past it too. A stream's last
                # look before the end of its text, on a value of lines repeated, was
                # followed anew at each delta: QA11 D7.)
                return n + 1
    else:
        # (Fewer than _SEEN characters from q to the end of a stream's text: no key, but
        # the last look's answer is asked as above. A value of tags whose closes were
        # left out looked again, at each delta, at the tags near the end of the text.)
        got = reads.last
        if got is not None:
            if buf.startswith(got[1], q):
                return q + got[0]
            if len(key) < got[0] and got[1].startswith(key):
                return len(buf) + 1
        # What the looks read from q depends on the text from q to its end alone (they read
        # no character at or past the end: a spelled start cut there reads past it), so the
        # answer for that text is kept: a stream whose delta ends inside a closer (`</tool`
        # of `</tool_call>`) asked it anew, the looks followed item by item, for each call.
        far = reads.tails.get(key)
        if far is not None:
            end = q + far
            if end < len(buf) and far <= _SEEN_TEXT:
                reads.last = (far, buf[q:end])
            return end
    end = max((_seq_reads(reads, seq, 0, buf, q, ()) for seq in reads.seqs), default=q + reads.floor)
    if end < q + reads.floor:
        end = q + reads.floor
    if len(key) < _SEEN and len(reads.tails) < _SEEN_KEPT:
        reads.tails[key] = end - q
    if end < len(buf) and end - q <= _SEEN_TEXT:
        got = reads.last = (end - q, buf[q:end])
        if len(key) == _SEEN and len(reads.seen) < _SEEN_KEPT:
            reads.seen[key] = got
    return end


_SEEN = 48
# (The answers live as long as the grammar, across replies: a few hundred short ones
# cover a reply's repeated markup; 4,096 of up to 1,600 characters each grew a process
# that checked 16,000 logged replies by 10 MiB: tests/test_check_logs.py.)
_SEEN_KEPT = 512
_SEEN_TEXT = 512


def _seq_reads(reads: Reads, items: Any, i: int, buf: str, pos: int, rest: tuple) -> int:
    """reads_to for items[i:], then for each (list, index) of `rest` in turn (what follows
    a group or an alternative: its list from that index), from pos."""
    n = len(buf)
    while True:
        if i == len(items):
            if not rest:
                return pos
            (items, i), rest = rest[0], rest[1:]
            continue
        op, av = items[i]
        if op is _C.LITERAL:
            if pos >= n:
                return n + 1  # (the text ends inside what it spells)
            if buf[pos] != chr(av):
                return pos + 1  # (it fails here, whatever follows)
            pos += 1
            i += 1
        elif op is _C.SUBPATTERN and not av[1] and not av[2]:
            items, i, rest = av[-1], 0, ((items, i + 1), *rest)  # (a group: its items, then the rest)
        elif op is _C.BRANCH:
            after = ((items, i + 1), *rest)
            return max(_seq_reads(reads, alt, 0, buf, pos, after) for alt in av[1])
        elif (op is _C.MAX_REPEAT or op is _C.MIN_REPEAT) and av[0] == 0 and av[1] == 1:
            # `Y?`: Y then the rest, or the rest alone (`<(?!/?tool_call>)`: a `</b>` is
            # told no call's close at its `b`, not the width of the whole look past it).
            after = ((items, i + 1), *rest)
            return max(_seq_reads(reads, av[2], 0, buf, pos, after), _seq_reads(reads, items, i + 1, buf, pos, rest))
        elif (op is _C.ASSERT or op is _C.ASSERT_NOT) and av[0] == 1:
            # A look-ahead reads on from here; what follows it too, where it lets it.
            return max(_seq_reads(reads, av[1], 0, buf, pos, ()), _seq_reads(reads, items, i + 1, buf, pos, rest))
        elif op is _C.ASSERT or op is _C.ASSERT_NOT:
            i += 1  # (a look-behind reads only text before pos)
        else:
            return pos + reads.static(items, i, rest)


def _behind(items: Any) -> int:
    """The most characters a look-behind in items (at any depth) reads before the start
    of items: at most its own width, plus what a look-behind inside it reads."""
    far = 0
    for op, av in items:
        if op is _C.ASSERT or op is _C.ASSERT_NOT:
            far = max(far, (sum(map(_width, av[1])) if av[0] != 1 else 0) + _behind(av[1]))
        elif op is _C.BRANCH:
            far = max(far, *map(_behind, av[1]))
        elif op is _C.SUBPATTERN:
            far = max(far, _behind(av[-1]))
        elif op is _C.MAX_REPEAT or op is _C.MIN_REPEAT:
            far = max(far, _behind(av[2]))
    return far


def _item_end(source: str, i: int) -> int | None:
    """Where the one item of the pattern that starts at source[i] ends (a group, a
    class, an escape or a character, with a `?` after it); None if it cannot tell."""
    try:
        ch = source[i]
        if ch == "\\":
            j = i + 2
        elif ch == "[":
            j = i + 1
            if source[j] == "^":
                j += 1
            if source[j] == "]":
                j += 1
            while source[j] != "]":
                j += 2 if source[j] == "\\" else 1
            j += 1
        elif ch == "(":
            depth = 0
            j = i
            while True:
                c = source[j]
                if c == "\\":
                    j += 2
                    continue
                if c == "[":
                    j = _item_end(source, j)
                    if j is None:
                        return None
                    continue
                depth += (c == "(") - (c == ")")
                j += 1
                if depth == 0:
                    break
        else:
            j = i + 1
    except IndexError:
        return None
    if source[j : j + 1] == "?":
        j += 1
    return j


def _negated_loop(item) -> frozenset | None:
    """E for `[^E]*` or `[^E]+` (E a few plain characters), else None."""
    op, av = item
    if op is not _C.MAX_REPEAT or av[0] > 1 or av[1] is not _C.MAXREPEAT or len(av[2]) != 1:
        return None
    op, av = av[2][0]
    if op is _C.NOT_LITERAL:
        return frozenset(chr(av))
    if op is _C.IN and av and av[0][0] is _C.NEGATE and 1 < len(av) <= 5:
        if all(o is _C.LITERAL for o, _ in av[1:]):
            return frozenset(chr(a) for _, a in av[1:])
    return None


def _bounded(item, exits: frozenset = frozenset()) -> bool:
    """Matches or looks at a bounded number of characters, each spelled in the pattern
    (a class is one), and takes none of `exits` (a lookaround may look at them)."""
    op, av = item
    if op is _C.LITERAL:
        return chr(av) not in exits
    if op is _C.NOT_LITERAL:
        return exits <= {chr(av)}
    if op is _C.IN:
        return _avoids(av, exits)
    if op in (_C.ASSERT, _C.ASSERT_NOT):
        return all(map(_bounded, av[1]))
    if op is _C.BRANCH:
        return all(all(_bounded(i, exits) for i in alt) for alt in av[1])
    if op is _C.SUBPATTERN:
        return all(_bounded(i, exits) for i in av[-1])
    if op is _C.MAX_REPEAT:
        # (`?`, or a short counted run such as `\s{0,32}` in a lookahead: whether a
        # close tag is followed by the next tag; _reach counts what it may read.)
        return av[1] is not _C.MAXREPEAT and av[1] <= _MAX_COUNT and all(_bounded(i, exits) for i in av[2])
    if op is _C.AT:
        return av is _C.AT_END_STRING  # (`\Z`: reads nothing; at the end of a stream, a partial match)
    return False


# The longest counted repeat a bounded item may have (see _bounded).
_MAX_COUNT = 256


# (As the `regex` module, which matches the tokens, reads them: not str's methods.
# Keyed by the parser's constants: filled by sre().)
_CATEGORIES: dict = {}


def _avoids(members: list, exits: frozenset) -> bool:
    """Whether a class `[…]` takes none of `exits` (unsure: False)."""
    if not exits:
        return True
    if members and members[0][0] is _C.NEGATE:
        return exits <= {chr(a) for o, a in members[1:] if o is _C.LITERAL}
    for op, av in members:
        if op is _C.LITERAL:
            if chr(av) in exits:
                return False
        elif op is _C.RANGE:
            if any(av[0] <= ord(ch) <= av[1] for ch in exits):
                return False
        elif op is _C.CATEGORY and av in _CATEGORIES:
            if any(map(_CATEGORIES[av], exits)):
                return False
        else:
            return False
    return True


def _reach(items) -> int:
    """How far past its start a run of _bounded items reads: what it takes, or what
    a lookahead in it looks at."""
    pos = reach = 0
    for item in items:
        op, av = item
        if op is _C.ASSERT or op is _C.ASSERT_NOT:
            far = _reach(av[1]) if av[0] == 1 else 0  # (a lookbehind looks back)
        elif op is _C.BRANCH:
            far = max(map(_reach, av[1]))
        elif op is _C.SUBPATTERN:
            far = _reach(av[-1])
        elif op is _C.MAX_REPEAT:
            far = av[1] * _reach(av[2])
        else:
            far = 1
        reach = max(reach, pos + far)
        pos += _width(item)
    return reach


def _width(item) -> int:
    """The most characters a _bounded item takes."""
    op, av = item
    if op in (_C.ASSERT, _C.ASSERT_NOT):
        return 0
    if op is _C.BRANCH:
        return max(sum(map(_width, alt)) for alt in av[1])
    if op is _C.SUBPATTERN:
        return sum(map(_width, av[-1]))
    if op is _C.MAX_REPEAT:
        return av[1] * sum(map(_width, av[2]))
    if op is _C.AT:
        return 0
    return 1

