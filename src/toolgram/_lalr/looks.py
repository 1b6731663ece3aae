"""How far the lexer may look past a token: what lets a salvage's reading of a region
cut short (the text up to a point, `buf[:end]`) take up where the first reading of
the whole text stood, instead of reading the region again from its start.

The first reading and the cut one read the same tokens, the same way, wherever the
lexer looked at no character at or past `end`: the regex engine, given the same
characters, takes the same path. So each terminal's pattern is put in one of three
shapes (its items read with the `re` module's parser, as regex_loops.py reads them):

 - bounded: no repeat without a bound; a try at p looks before p + reach;
 - a loop `P[^E]*(?:X[^E]*)*` (regex_loops._loop): a try that fails looks before
   p + width, one that matches to q before q + width (the loop stopped at a
   character of E where X failed, and X reads at most `width`);
 - runs: bounded items and repeats of one character class each (`"[ \\t]*"`,
   `[^\\s"'<>=]+`, `\\s+`), in a sequence or an alternation of them. A try may look
   as far as the runs go, but every character it looks at is in a run's class except
   at most `fixed` of them: where the text from the point taken up to `end` holds
   more characters outside every class than that, no try before the point got to `end`.

A token whose reading takes another way (a JSON or Python value, a raw value read on
past its tags, a marker search, a close supplied: Driver.far) is none of these; the
reading is not taken up past it. A format with a terminal of no such shape is never
taken up (`of` answers None)."""

from __future__ import annotations

from typing import Any

import regex

from .._grammar import regex_loops
from .._guard import passes_through


class Looks:
    """A format's bound on the lexer's look (see the module's docstring): `margin`, how
    far past the place taken up the cut text must go on; `runs`, per terminal of the
    runs shape, (its fixed count, a regex finding a character outside its classes);
    `loops`, the names of the terminals of the loop shape."""

    __slots__ = ("margin", "runs", "loops")

    def __init__(self, margin: int, runs: list, loops: frozenset) -> None:
        self.margin = margin
        self.runs = runs
        self.loops = loops

    def clear(self, buf: str, at: int, end: int) -> bool:
        """Whether no try of a runs terminal before `at` looked at `end` or past it: the
        text between holds more than its fixed count of characters outside its classes."""
        for fixed, outside in self.runs:
            p = at
            for _ in range(fixed + 1):
                m = outside.search(buf, p, end)
                if m is None:
                    return False
                p = m.end()
        return True


def of(c: Any, cut_room: int) -> Looks | None:
    """c's Looks (kept in c.derived), None when a terminal has no shape this knows.
    `cut_room`: how near the end of the text the lexer looks whether a closer was cut
    (close.cut_closer), which the margin covers too."""
    try:
        return c.derived["looks"]
    except KeyError:
        pass
    looks = None
    try:
        looks = _derive(c, cut_room)
    except Exception as exc:  # noqa: BLE001 - no shape known: never taken up, always correct
        if passes_through(exc):
            raise
    c.derived["looks"] = looks
    return looks


def _derive(c: Any, cut_room: int) -> Looks | None:
    if regex_loops.sre() is None:
        return None
    C = regex_loops._C
    margin = max(cut_room, c.longest_literal) + 2  # (+2: a raw value's `</` looked at: _lalr/nest.py)
    runs: list = []
    loops = set()
    for t in [*c.terminals.values(), *c.ignore]:
        if t.literal is not None:
            margin = max(margin, len(t.literal))
            continue
        if t.name in ("JSON", "PYVALUE"):
            continue  # (the driver looks at its first character, else Driver.far)
        source, escapes = _hide_properties(t.source)
        parsed = regex_loops.sre().parse(source)
        if parsed.state.flags & ~(C.SRE_FLAG_UNICODE):
            return None  # (a class's members would differ with the flags)
        items = list(parsed)
        got = _span(items)
        if got is not None:
            margin = max(margin, got[1])
            continue
        loop = regex_loops._loop(t.source)
        if loop is not None and loop[6] is None:
            margin = max(margin, loop[2])
            loops.add(t.name)
            continue
        shape = _runs(items, escapes)
        if shape is None:
            return None
        runs.append(shape)
    return Looks(margin + 1, runs, frozenset(loops))


def _span(items: Any) -> tuple[int, int] | None:
    """(the most characters the items take, how far past their start they look), or None
    where a repeat has no bound."""
    C = regex_loops._C
    width = reach = 0
    for op, av in items:
        if op in (C.LITERAL, C.NOT_LITERAL, C.IN, C.ANY):
            took, far = 1, 1
        elif op is C.AT:
            took, far = 0, 1  # (`\Z`, `$`, `\b`: the character there, if any)
        elif op in (C.ASSERT, C.ASSERT_NOT):
            inner = _span(av[1])
            if inner is None:
                return None
            took, far = 0, (inner[1] if av[0] == 1 else 0)  # (a lookbehind looks back)
        elif op is C.SUBPATTERN or op is C.ATOMIC_GROUP:
            inner = _span(av[-1] if op is C.SUBPATTERN else av)
            if inner is None:
                return None
            took, far = inner
        elif op is C.BRANCH:
            spans = [_span(alt) for alt in av[1]]
            if any(s is None for s in spans):
                return None
            took, far = max(s[0] for s in spans), max(s[1] for s in spans)
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            inner = _span(av[2])
            if inner is None or av[1] is C.MAXREPEAT:
                return None
            if av[1] == 0:
                took, far = 0, 0
            else:
                took, far = av[1] * inner[0], (av[1] - 1) * inner[0] + max(inner)
        else:
            return None  # (a back reference, a conditional: not known)
        reach = max(reach, width + max(took, far))
        width += took
    return width, reach


def _hide_properties(source: str) -> tuple[str, dict]:
    """source with each `\\p{…}` or `\\P{…}` (the `regex` module's, which the `re` parser
    does not read; words.py writes `\\w` so) put as a character of its own, from the
    private use area: (that source, {character: the escape})."""
    escapes: dict = {}

    def hide(m: Any) -> str:
        ch = chr(0xF0000 + len(escapes))
        escapes[ch] = m.group()
        return ch

    return _PROPERTY.sub(hide, source), escapes


_PROPERTY = regex.compile(r"(?<!\\)(?:\\\\)*\K\\[pP]\{[^{}]*\}")


def _runs(items: Any, escapes: dict) -> tuple[int, Any] | None:
    """(fixed, a regex finding a character outside the runs' classes) for a pattern of
    the runs shape (see the module's docstring), else None."""
    classes: list[str] = []
    fixed = _count(items, escapes, classes)
    if fixed is None or not classes:
        return None
    return fixed, regex.compile("(?:(?!" + "|".join(classes) + ")[\\s\\S])")


def _count(items: Any, escapes: dict, classes: list) -> int | None:
    """How many characters outside the classes of their runs (put in `classes`) a try of
    the items looks at, at most; None: not of the runs shape. Each run stops at one such
    character; a bounded item looks at as many as it reaches; a lookahead looks on
    from where the items after it start (so its count adds up, as theirs); an
    alternation counts its most."""
    C = regex_loops._C
    total = 0
    for item in items:
        op, av = item
        got = _span([item])
        if got is not None:
            total += max(got)
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT) and av[1] is C.MAXREPEAT:
            took = _one_char(av[2], escapes)
            if took is None:
                return None
            classes.extend(took[0])
            total += took[1]  # (what stops the run, and what its lookaheads look at past it)
        elif op in (C.ASSERT, C.ASSERT_NOT):
            if av[0] != 1:
                continue  # (a lookbehind looks back, at text both readings share)
            inner = _count(av[1], escapes, classes)
            if inner is None:
                return None
            total += inner
        elif op is C.SUBPATTERN and (av[1] or av[2]):
            return None  # (`(?i:…)`: its classes take other characters than they spell)
        elif op is C.SUBPATTERN or op is C.ATOMIC_GROUP:
            inner = _count(av[-1] if op is C.SUBPATTERN else av, escapes, classes)
            if inner is None:
                return None
            total += inner
        elif op is C.BRANCH:
            counts = [_count(alt, escapes, classes) for alt in av[1]]
            if any(n is None for n in counts):
                return None
            total += max(counts)
        else:
            return None
    return total


def _one_char(body: Any, escapes: dict) -> tuple[list, int] | None:
    """For the body of a run (repeated without a bound) that takes one character each
    time, a class or an alternation of classes each with lookarounds (`[^"<\\n]|<(?!\\|)`):
    (the classes of the characters it takes, how many characters one try looks at)."""
    C = regex_loops._C
    got = _span(body)
    if got is None or got[0] != 1:
        return None
    if len(body) == 1 and body[0][0] is C.SUBPATTERN:
        body = body[0][1][-1]
    alts = body[0][1][1] if len(body) == 1 and body[0][0] is C.BRANCH else [body]
    classes = []
    for alt in alts:
        takes = [item for item in alt if item[0] not in (C.ASSERT, C.ASSERT_NOT)]
        if len(takes) != 1:
            return None
        one = _class(takes[0], escapes)
        if one is None:
            return None
        classes.append(one)
    return classes, got[1]


_ESCAPES = {"CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s",
            "CATEGORY_NOT_SPACE": r"\S", "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W"}  # fmt: skip


def _class(item: Any, escapes: dict) -> str | None:
    """The pattern of one character that the item takes (as the terminal's own engine,
    `regex`, reads its class), or None."""
    C = regex_loops._C
    op, av = item
    if op is C.LITERAL:
        return escapes.get(chr(av)) or regex.escape(chr(av))
    if op is C.NOT_LITERAL:
        return "[^" + (escapes.get(chr(av)) or regex.escape(chr(av))) + "]"
    if op is C.ANY:
        return "[^\\n]"
    if op is not C.IN:
        return None
    parts = []
    negate = False
    for o, a in av:
        if o is C.NEGATE:
            negate = True
        elif o is C.LITERAL:
            parts.append(escapes.get(chr(a)) or regex.escape(chr(a)))
        elif o is C.RANGE:
            if chr(a[0]) in escapes or chr(a[1]) in escapes:
                return None
            parts.append(regex.escape(chr(a[0])) + "-" + regex.escape(chr(a[1])))
        elif o is C.CATEGORY and str(a) in _ESCAPES:
            parts.append(_ESCAPES[str(a)])
        else:
            return None
    return "[" + ("^" if negate else "") + "".join(parts) + "]"
