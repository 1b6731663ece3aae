"""What a pattern's `\\w`, `\\s`, `\\d` and `\\b` mean: one reading, whichever engine runs it.

Grammar terminals are matched by the `regex` module (the driver, the fast frames'
partial matches in a stream). The stdlib `re` is faster, and some patterns built from
terminals are run by it where a whole text is read at once; but the two engines do
not agree on Unicode text: `re`'s `\\w` is `str.isalnum()` (no combining marks, but
superscript digits), `regex`'s is Unicode's word characters (marks and the zero-width
joiners), and their Unicode tables differ in version; `re`'s `\\s` takes the
separators U+001C to U+001F, `regex`'s does not. A name such as `t\\u0301` was then
a call in a stream and prose in parse().

So:

  * `\\w` in a grammar's terminal is a word character as the `regex` module reads it
    (letters, combining marks, decimal digits, connector punctuation) without the
    invisible joiners U+200C and U+200D (`words()` rewrites it when a grammar is
    compiled): `cafe\\u0301` is a name, `f\\u200d` is not;
  * every pattern built from terminals is compiled by `regex`, and run by `re` only
    where `re` matches exactly as `regex` does (`fast()`): on an ASCII text, compiled
    with re.ASCII (there `\\w`, `\\s`, `\\d` and `\\b` mean the same to both); on any
    text, when its only such class is `\\s`, spelled out. (`str.isascii()` costs
    nothing: CPython keeps it as a flag.)
"""

from __future__ import annotations

import re
import sys
import warnings
from typing import Any

import regex

# The body of a character class: `regex`'s \w (Alphabetic, Mark, Decimal_Number,
# Connector_Punctuation, Join_Control) without Join_Control.
WORD = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}"
# `regex`'s \s (Unicode's White_Space), spelled out: `re` reads these alike.
SPACE = r"\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"

class _Pattern:
    """What Lazy and _Made share: the pattern's source, and how to compile it."""

    def __init__(self, make: Any, source: str, scope: dict | None = None) -> None:
        self._make = make
        self.pattern = source
        self._scope = scope

    # (Shared, as a compiled pattern is by copy and deepcopy: not its module's globals.)
    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: dict) -> Any:
        return self


class Lazy(_Pattern):
    """A pattern compiled when first used: `make()` compiles it. `pattern` is its
    source from the start. A cold start builds many patterns that a reply never runs
    (the searches of a stream, the opening tests of a text that is not ASCII, the
    pythonic list's lexer in a Hermes reply): each costs a compile only when it runs.

    At the first use, the module names bound to it (`scope`: the globals of the module
    whose top level made it, see lazy()) are bound to the compiled pattern instead, so
    that later calls through them cost what the pattern's own do; and the compiled
    pattern's attributes (match, search, …, groupindex) are put on the instance, whose
    class becomes _Made, with no __getattr__ (a class with one goes through a slower
    attribute lookup on every access), for the references kept elsewhere (a tuple, a
    frame's attribute, another module's import of the name)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_make", "pattern", "_scope"):
            raise AttributeError(name)
        compiled = self._make()
        own = self.__dict__
        for attr in dir(compiled):
            if not attr.startswith("__"):
                own.setdefault(attr, getattr(compiled, attr))
        scope, self._scope = self._scope, None
        if scope is not None:
            for key in [key for key, value in scope.items() if value is self]:
                scope[key] = compiled
        self.__class__ = _Made
        return getattr(compiled, name)


class _Made(_Pattern):
    """A Lazy once compiled: its attributes are the compiled pattern's (see Lazy)."""


def lazy(compile: Any, source: str, flags: int = 0) -> Lazy:
    """`compile(source, flags)` (re.compile or regex.compile), when first used. Made at
    a module's top level, the module's name for it is bound to the compiled pattern
    then (see Lazy)."""
    caller = sys._getframe(1)
    scope = caller.f_globals if caller.f_code.co_name == "<module>" else None
    return Lazy(lambda: compile(source, flags), source, scope)


_KEEP = object()
_REFUSE = None


def _rewrite(source: str, table: dict) -> str | None:
    """The pattern with each escape of `table` replaced by its (in a class, outside
    one) spelling; _KEEP leaves it, _REFUSE gives None (it cannot be spelled)."""
    out: list[str] = []
    i, n = 0, len(source)
    in_class = False
    while i < n:
        c = source[i]
        if c == "\\" and i + 1 < n:
            pair = source[i : i + 2]
            spelt = table.get(pair, (_KEEP, _KEEP))[0 if in_class else 1]
            if spelt is _REFUSE:
                return None
            out.append(pair if spelt is _KEEP else spelt)
            i += 2
            continue
        if in_class and source.startswith("[:", i):
            end = source.find(":]", i + 2)
            if end > 0:  # (a POSIX class, `[:alpha:]`, which `regex` reads in a class)
                out.append(source[i : end + 2])
                i = end + 2
                continue
        out.append(c)
        i += 1
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            # (A `]` first in a class, after an optional `^`, is one of its members.)
            if source[i : i + 1] == "^":
                out.append("^")
                i += 1
            if source[i : i + 1] == "]":
                out.append("]")
                i += 1
    return "".join(out)


_WORDS = {"\\w": (WORD, f"[{WORD}]"), "\\W": (_KEEP, f"[^{WORD}]")}


def words(source: str) -> str:
    """A grammar terminal's pattern with each `\\w` read as WORD: in a class, its
    members; elsewhere a class of them (and `\\W`, outside a class, the class of the
    rest)."""
    if "\\w" not in source and "\\W" not in source:
        return source
    return _rewrite(source, _WORDS)  # type: ignore[return-value]  # (nothing refused)


# For any text, `re` reads a pattern as `regex` does once \s is spelled out, if it has
# no other class that depends on Unicode's tables.
_ANY_TEXT = {
    "\\s": (SPACE, f"[{SPACE}]"),
    "\\S": (_REFUSE, f"[^{SPACE}]"),
    **{e: (_REFUSE, _REFUSE) for e in ("\\w", "\\W", "\\d", "\\D", "\\b", "\\B")},
}
_CASELESS = lazy(regex.compile, r"\(\?[a-zA-Z]*i")
_FLAGS = ((regex.M, re.M), (regex.S, re.S), (regex.X, re.X))
_KNOWN = regex.U | regex.V0 | regex.M | regex.S | regex.X


def fast(pattern: Any) -> tuple[Any, Any]:
    """`pattern` (a `regex` one) for a whole text, compiled by `re` (faster) where `re`
    matches exactly as it does: (for an ASCII text, for any text). For an ASCII text,
    with re.ASCII, where \\w, \\s, \\d and \\b mean what they mean to `regex`; for
    any text, where the pattern's only such class is \\s, spelled out. Either is the
    pattern itself where `re` cannot read it, reads it otherwise (a warning:
    `[[:alpha:]]`, a set operation), or would fold case otherwise."""
    if pattern is None:
        return None, None
    source = pattern.pattern
    if pattern.flags & ~_KNOWN or _CASELESS.search(source):
        return pattern, pattern
    flags = 0
    for ours, theirs in _FLAGS:
        if pattern.flags & ours:
            flags |= theirs
    spelt = None if WORD in source else _rewrite(source, _ANY_TEXT)
    anywhere = pattern if spelt is None else _stdlib(spelt, flags) or pattern
    ascii = _stdlib(source.replace(WORD, r"\w"), flags | re.ASCII) or pattern
    return ascii, anywhere


def _stdlib(source: str, flags: int) -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return re.compile(source, flags)
    except (re.error, Warning):
        return None


# An inline flag group (`(?s)`, `(?x:`, `(?-i:`): its letters.
_INLINE_FLAGS = lazy(re.compile, r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?[:)]")


def _other_flags(source: str) -> bool:
    """Whether the source sets a flag other than m, s and x (the ones fast() maps)."""
    return any(set(on + (off or "")) - set("msx") for on, off in _INLINE_FLAGS.findall(source))


def fast_source(source: str, by_regex: Any = None) -> tuple[Lazy, Lazy]:
    """fast(regex.compile(source)) without compiling anything now: (for an ASCII text,
    for any text), each compiled when first used, by `re` where `re` reads it as
    `regex` does, else by `regex` (a pattern with inline flags other than m, s and x
    is left to `regex`, as fast() leaves one it cannot map). `by_regex()`: how the
    `regex` one is made (by default regex.compile(source))."""
    if by_regex is None:

        def by_regex() -> Any:
            return regex.compile(source)

    if _CASELESS.search(source) or _other_flags(source):
        shared = Lazy(by_regex, source)
        return shared, shared
    spelt = None if WORD in source else _rewrite(source, _ANY_TEXT)
    ascii_source = source.replace(WORD, r"\w")
    ascii = Lazy(lambda: _stdlib(ascii_source, re.ASCII) or by_regex(), source)
    anywhere = Lazy(lambda: (_stdlib(spelt, 0) if spelt is not None else None) or by_regex(), source)
    return ascii, anywhere
