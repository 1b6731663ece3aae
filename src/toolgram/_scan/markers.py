"""Marker search: what the scanner looks for in prose, and how it finds it.

`Markers` (one per ordered set of formats, see markers_for) holds the searches;
`MarkerSearch`, a base of Scanner, runs them over the scanner's buffer, keeping
each search's answer until the position passes it. The specialised searches
(_whole_next for a whole text, _next_literal for a stream, take_plain's quick
search, _markers_from for the drivers' cuts) must agree with the plain marker
regexes (call_re, any_re): tests/test_scan_search.py checks that they do.
"""

from __future__ import annotations

import re
from typing import Any

import regex

from .._guard import passes_through
from . import fastpath as _frame
from .instring import LOOK as _OBJECT_LOOK  # (as far as _after_object reads back from a `}`)
from .._grammar.registry import Format
from .._grammar.words import lazy

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


class Markers:
    """What the scanner searches prose for, for one ordered set of formats
    (built once per set: parse() is called per reply).

    Whether tools were given changes two things: `offered_only: always` formats
    are left out without tools, and an `anchor: line` format is searched for (its
    start literal first on any line) only with tools; without, it may only open
    the reply, like `anchor: reply`. A reply-anchored format's `line_start` literals
    (Llama 3's `{`) are searched for as that start literal is, with tools only."""

    def __init__(self, formats: tuple[Format, ...], tools_given: bool = True) -> None:
        self.by_marker: dict[str, list[Format]] = {}
        self.anchored: list[Format] = []
        for fmt in formats:
            if fmt.needs_tools and not tools_given:
                continue
            if fmt.anchor == "line" and not tools_given:
                self.anchored.append(fmt)
                continue
            if fmt.anchor and fmt.anchor != "line":
                self.anchored.append(fmt)
            for marker in fmt.starts:
                self.by_marker.setdefault(marker, []).append(fmt)
            if tools_given:
                for marker in fmt.line_starts:
                    self.by_marker.setdefault(marker, []).append(fmt)
        # Reasoning blocks: <think>, and those the formats declare (`// reasoning:`). An
        # opener maps to the closers that end its block; `closes` are the closers that
        # are markup (a closer that is also a call marker, harmony's `<|start|>`, ends
        # the block and is read next as what it starts); `ends` all closers, the ones
        # that end a block the prompt opened (in_think).
        opens: dict[str, tuple[str, ...]] = {THINK_OPEN: (THINK_CLOSE,)}
        for fmt in formats:
            for opener, closers in fmt.reasoning:
                if opener:
                    opens[opener] = tuple(dict.fromkeys((*opens.get(opener, ()), *closers)))
        ends = {THINK_CLOSE: None}
        for fmt in formats:
            for _, closers in fmt.reasoning:
                ends.update(dict.fromkeys(closers))
        self.think_opens = opens
        self.think_ends = tuple(ends)
        self.think_closes = frozenset(c for c in ends if c not in self.by_marker)
        self.think_width = max(map(len, (*ends, *opens)))
        # (The tags a block that never closes reads as units: Scanner._tag_over.)
        self.think_tags = tuple(t for t in dict.fromkeys((*opens, *ends)) if len(t) > 1)
        self.think_firsts = frozenset(o[0] for o in opens if o)
        thinking = {*opens, *self.think_closes}
        # End-of-turn tokens (`// end_of_turn:`): markup where they end the reply, text
        # elsewhere (Scanner._in_prose). Searched for as markers are, so that a stream
        # holds one back until what follows it tells; a driver does not cut a value at
        # one (they are left out of the cut searches).
        self.turn_ends = frozenset(
            t for fmt in formats if not (fmt.needs_tools and not tools_given) for t in fmt.end_of_turn
        ) - self.by_marker.keys() - set(opens)
        thinking |= self.turn_ends
        # The markers of the prose that are no call's (reasoning tags, end-of-turn tokens):
        # a stream's reasoning block that may never close shows its text up to such a
        # one that a string open before it may quote (Scanner._quoted_tag).
        tags = sorted((t for t in thinking if t and t not in self.by_marker), key=len, reverse=True)
        self.tag_re = lazy(regex.compile, "|".join(map(regex.escape, tags))) if tags else None
        self.tag_width = len(tags[0]) if tags else 0
        markers = sorted(self.by_marker, key=len, reverse=True)
        # A literal that only line-anchored formats start with counts only first on a line.
        line = {m for m in markers if all(f.anchor == "line" or m in f.line_starts for f in self.by_marker[m])}

        # (The end of a reasoning block starts a line too: models write
        # `</think>[get_weather(city="LA")]` as often as with a newline between.)
        closes = sorted(self.think_closes, key=len, reverse=True)
        after = r"(?<=(?:^|" + "|".join(map(regex.escape, closes)) + r")[ \t]*)"

        def pattern(m: str) -> str:
            return after + regex.escape(m) if m in line else regex.escape(m)

        # (Each search is compiled when first run: a reply runs few of them; see Lazy.)
        self.call_re = lazy(regex.compile, "|".join(map(pattern, markers)), regex.M) if markers else None
        # The markers that are plainly a call's (not only first on a line, not a quiet
        # format's `[` or `{`), written first on a line or with a payload's bracket or a
        # line break right after them: past max_chars, one of them says the reply went on
        # with calls nobody read (_pipeline.past_max_chars). Not one in a sentence (`wrap
        # calls in <tool_call> tags`), which is a mention. The width: the text a search
        # needs around a marker the limit cuts (a newline and 16 blanks before it; 4
        # blanks and a character after it).
        plain = [m for m in markers if m not in line and any(not f.quiet for f in self.by_marker[m])]
        either = "(?:" + "|".join(map(regex.escape, plain)) + ")"
        self.cap_re = (
            lazy(regex.compile, r"\n[ \t]{0,16}" + either + "|" + either + r"(?=[ \t]{0,4}[{\[\n])") if plain else None
        )
        self.cap_width = max(map(len, plain), default=0) + 17
        markers = sorted({*markers, *thinking}, key=len, reverse=True)
        self.any_re = lazy(regex.compile, "|".join(map(pattern, markers)), regex.M)
        self.prefixes = frozenset(m[:i] for m in markers for i in range(1, len(m)))
        self.max_prefix = max((len(m) for m in markers), default=1) - 1
        self.quick = _quick_searches(self.by_marker, thinking)
        # For _in_prose: markers that start with a letter ("functools", "Action:") are
        # found by str.find, the others by one search. (One search for all of them
        # stops at every a, c, f of the prose: several times slower.)
        literal = sorted({*self.by_marker, *thinking} - {""}, key=lambda m: (-len(m), m))
        self.words = tuple(m for m in literal if m[0].isalnum())
        symbols = [m for m in literal if not m[0].isalnum()]
        self.symbols = lazy(re.compile, _trie(symbols) or "(?!)")
        # Symbol markers that no other one starts with: where such a marker starts, it is
        # the longest one there (fastpath.run takes it for the one it just read).
        self.unextended = frozenset(m for m in symbols if not any(o != m and o.startswith(m) for o in symbols))
        # Where one may start: found by a character class first (an alternation of
        # dozens of markers is tried at every character of the prose: ten times slower).
        starts = "".join(sorted({m[0] for m in symbols}))
        self.symbol_firsts = lazy(re.compile, f"[{re.escape(starts)}]" if starts else "(?!)")
        self.symbol_chars = frozenset(starts)
        # Where a driver may cut a broken value short (Driver._cut): the markers of three
        # characters or more. (`{` and `[` open a reply's JSON, and are in every value.)
        cut = [m for m in symbols if len(m) >= 3 and m not in self.turn_ends]
        self.cut_symbols = lazy(re.compile, _trie(cut) or "(?!)")
        self.cut_firsts = lazy(re.compile, "[" + re.escape("".join(sorted({m[0] for m in cut}))) + "]" if cut else "(?!)")
        # What a whole text is searched for (Scanner._whole_next): those characters,
        # then the word markers, longest first; each with the character that finish()
        # looks for first (see _guard).
        self.literal_keys = (*sorted(starts), *self.words)
        self.key_guards = tuple((k, _guard(k)) for k in self.literal_keys)
        # The fast frame (see fastpath.py) of the first format each marker opens.
        self.frames = Frames(self.by_marker)
        # A found literal needs the full search only if a line-start condition applies.
        self.line = frozenset(line)
        # The markers that are a format's `line_start` literal (Llama 3's `{`, with tools):
        # Scanner._after_object looks at the line before only for those.
        object_markers = frozenset(m for m, fs in self.by_marker.items() if any(m in f.line_starts for f in fs))
        # Start markers that, written twice in a row, are a stutter (Scanner._repeated): of
        # three characters or more, not a word, not only line-anchored, of a format that
        # is not quiet (a fence or a `[` written twice is no call's opener).
        self.stutters = frozenset(
            m for m in symbols
            if len(m) >= 3 and m in self.by_marker and m not in line and any(not f.quiet for f in self.by_marker[m])
        )  # fmt: skip
        # The line markers that no branch of Scanner._in_prose takes before the line
        # markers' own (no reasoning opener, turn end, closer or stutter): the prose before
        # one is put out once it is known to open something (see _in_prose).
        line_plain = frozenset(line) - set(opens) - self.turn_ends - self.think_closes - self.stutters
        # Of a whole text (parse: no delta to wait for), the markers that take none of those
        # branches either, line-anchored or not: the prose before one waits as well.
        prose_plain = frozenset(self.by_marker) - set(opens) - self.turn_ends - self.think_closes - self.stutters
        self.openers: dict[str, tuple] = {}  # opening.opening() of each first character (Scanner._start)
        self.line_openers: dict[str, tuple | None] = {}  # opening.line_opening() of each marker in `line`
        # Whether a marker opens a format at a line's start (Llama 3's `{`, with tools): then
        # the scanner keeps the text _after_object reads back over (see Scanner.object_look).
        self.line_started = any(m in f.line_starts for m, fs in self.by_marker.items() for f in fs)
        # The end markers a call region of each format closes with, where the model left
        # its end marker out and prose followed (`<|tool_call_start|>[f(a=1)] junk<|tool_call_end|>`,
        # `<tool_call><function>f</function>{…} junk</tool_call>`): the first of them in
        # that prose, before any marker, is the region's end, markup (Scanner.after_call,
        # _in_prose). A quiet format (the bare list `[f(a=1)]`) takes those of the formats
        # whose `also:` names it (LFM2's and Llama 4's markers, which the model left out
        # around that list), and its own. Only markers of three characters or more that
        # nothing else searched for in prose begins with or is (a fence's ``` is no
        # region's end written in prose).
        searched = {*self.by_marker, *thinking}
        open_ends: dict[str, tuple[str, ...]] = {}
        # Of those, the end markers of a Python call list's region, the only ones a region
        # broken at the next call's marker watches for after that call (RegionReader.
        # _watch_after): a call marker cuts a bare Python value (`[f(a=<tool_call>{…}`), the
        # list left open around the call the model wrote inside it. A JSON value token's
        # end marker is watched for only after a call read whole whose JSON prose ended:
        # a region that broke before any value (`<tool_call>Sure.<tool_call>{…}</tool_call>`,
        # the first `<tool_call>` prose) left none open to close, and which of the formats
        # sharing its marker were tried differs between parse()'s fast path and the
        # general way (hypothesis test_fast_and_general_agree_on_runs_of_calls).
        cut_ends: dict[str, tuple[str, ...]] = {}
        for fmt in formats:
            donors = [fmt] if not fmt.quiet else [fmt, *(f for f in formats if fmt.name in f.also and not f.quiet)]
            # (Formats whose call ends with a value its brackets delimit, after which prose
            # ends the call: a Python call list's `]`, a JSON value token's `}` or `]`. Not
            # a payload token that runs on to the next `<` (Hermes's `</tool_call>` after
            # prose is that payload's remark, read by its grammar: watched here, a stream
            # took it where parse() read it as text after a turn token,
            # `{…}<|im_start|></tool_call>`.)
            donors = [f for f in donors if f.stream_python or _valued(f)]
            for kept, into in ((donors, open_ends), ([f for f in donors if f.stream_python], cut_ends)):
                ends = tuple(dict.fromkeys(
                    w for f in kept for e in f.ends
                    if len(e) >= 3 and not e.startswith("`") and not any(m.startswith(e) or e.startswith(m) for m in searched if m)
                    for w in _closes_before(f, e)
                ))  # fmt: skip
                if ends:
                    into[fmt.name] = ends
        quick, risky_ends, firsts, literals, first_set, end_pairs, lane = self.quick
        self.scanner_types: dict = {}  # (Scanner.__new__: the scanner's class for these, per class asked)
        self.shared = {
            "by_marker": self.by_marker, "call_markers": frozenset(self.by_marker), "anchored": self.anchored, "call_re": self.call_re,
            "cap_re": self.cap_re, "cap_width": self.cap_width,
            "any_re": self.any_re, "prefixes": self.prefixes, "max_prefix": self.max_prefix,
            "quick": quick, "risky_ends": risky_ends, "firsts": firsts, "literals": literals, "lane_search": lane,
            "first_set": first_set, "end_pairs": end_pairs, "line": self.line, "object_markers": object_markers, "line_plain": line_plain, "prose_plain": prose_plain,
            "symbols": self.symbols, "symbol_firsts": self.symbol_firsts, "words": self.words, "unextended": self.unextended,
            "symbol_chars": self.symbol_chars, "literal_keys": self.literal_keys, "key_guards": self.key_guards,
            "cut_symbols": self.cut_symbols, "cut_firsts": self.cut_firsts,
            "cut_keys": ("", *(w for w in self.words if w not in self.turn_ends)), "turn_ends": self.turn_ends, "turn_list": tuple(sorted(self.turn_ends, key=lambda t: (-len(t), t))),
            "turn_by_last": _by_last(self.turn_ends),
            "frames": self.frames, "openers": self.openers, "line_openers": self.line_openers, "stutters": self.stutters,
            "think_opens": self.think_opens, "think_ends": self.think_ends, "think_closes": self.think_closes,
            "think_width": self.think_width, "think_firsts": self.think_firsts, "think_tags": self.think_tags, "tag_re": self.tag_re, "tag_width": self.tag_width,
            "object_look": _OBJECT_LOOK if self.line_started else 0, "open_ends": open_ends, "cut_ends": cut_ends,
        }  # fmt: skip


def _by_last(tokens: frozenset) -> dict:
    """The tokens by their last character, each group in the set's own order (the order
    Scanner._turn_end_at tried them in before it looked at that character first)."""
    out: dict = {}
    for t in tokens:
        if t:
            out[t[-1]] = (*out.get(t[-1], ()), t)
    return out


# How many places a search by first character may find no marker at before one search of
# the markers themselves takes over: in prose such places are few, and a class search
# with a match at each is several times faster than the markers' alternation; where they
# come one after another (`[[[[…`: each `[` begins `[TOOL_CALLS]`), a match per place in
# Python cost 12 ms over 32 KB, the alternation's one search 0.6.
_MISSES = 8


# A grammar's JSON value token (`JSON: /[\[{]/`, read to its closing bracket), and a close
# tag its rules write right before the end marker (`"</tools>" END`).
_JSON_TOKEN = lazy(re.compile, r"^JSON\s*:", re.M)
_CLOSE_BEFORE_END = lazy(re.compile, r'"(</[^"\s]+>)"\s+END\b')


def _valued(fmt: Format) -> bool:
    """Whether fmt's calls end with a JSON value token (its grammar's JSON terminal)."""
    return _JSON_TOKEN.search(fmt.source) is not None


def _closes_before(fmt: Format, end: str) -> tuple[str, ...]:
    """The end marker `end` as an open region's close is written after prose: that marker,
    and the close tag fmt's grammar writes right before it, with it (`</tools></response>`,
    a newline between or none), which the watch then takes whole."""
    inner = tuple(dict.fromkeys(m.group(1) for m in _CLOSE_BEFORE_END.finditer(fmt.source)))
    return (*(t + sep + end for t in inner for sep in ("", "\n")), end)


class Frames(dict):
    """marker -> the fast frame of the first format it opens (None: it has none),
    derived when the marker is first met: deriving a frame compiles the format's
    grammar, and a reply meets few of the markers (a cold start compiles only
    those). Frames({}): no frame for any marker."""

    __slots__ = ("by_marker",)

    def __init__(self, by_marker: dict[str, list[Format]]) -> None:
        super().__init__()
        self.by_marker = by_marker

    def __missing__(self, marker: str) -> Any:
        fmts = self.by_marker.get(marker)
        frame = self[marker] = _frame.frame_of(fmts[0]) if fmts else None
        return frame


# Markers are kept on the first format of their set (in its compiled.derived, under
# "markers": the set and tools_given -> Markers), so they die with the formats (a
# server that builds registry after registry does not grow); at most _PER_FORMAT
# sets per first format, the oldest dropped first.
_PER_FORMAT = 16
_ELSEWHERE: dict[tuple, Markers] = {}  # (those of no formats, or of a first one that does not compile)


_LAST: dict[bool, tuple] = {}  # tools_given -> (the tuple of formats last asked for, its Markers)


# Characters from the rarest in replies to the most frequent (any other is rarer still):
# "|", lower-case letters, what markup is made of, what JSON and prose are full of.
_COMMON = '|zqxjkvbpygfwmucldrhsnioate_/[]<> .,:"{}\n'


def _guard(key: str) -> str:
    """The character of `key` that a text lacks most often: finish() looks for it
    before the key. A one-character search is a memchr, a word's is several times
    slower, and a text without the guard cannot hold the key ("=" for "commentary
    to=", "|" for "function call<|role_sep|>"). A one-character key is its own guard."""
    if len(key) == 1:
        return key
    return min(key, key=_COMMON.find)


def markers_for(formats, tools_given: bool = True) -> Markers:
    last = _LAST.get(tools_given)
    if last is not None and last[0] is formats:
        return last[1]  # (the registry's own tuple, asked for again: no key to hash)
    key = (*formats, tools_given)
    known = _known_markers(formats)
    found = known.get(key)
    if found is None:
        found = Markers(tuple(formats), tools_given)
        while len(known) >= _PER_FORMAT:
            del known[next(iter(known))]
        known[key] = found
    if type(formats) is tuple:  # (a list could change under the same identity)
        _LAST[tools_given] = (formats, found)
    return found


def _known_markers(formats) -> dict:
    """Where the Markers of a set of formats are kept: on its first format."""
    if not formats:
        return _ELSEWHERE
    try:
        derived = formats[0].compiled.derived
    except Exception as exc:  # noqa: BLE001 - a broken grammar: its driver will say so, as before
        if passes_through(exc):
            raise
        return _ELSEWHERE
    known = derived.get("markers")
    if known is None:
        known = derived["markers"] = {}
    return known


_CHAR_WAITS: dict[tuple, tuple] = {}


class _CharWait:
    """The scanner's own wait, where only a marker (or end marker) can change
    anything: a delta matters if it holds a character one starts with, or may
    complete one begun in the last `width` characters."""

    __slots__ = ("search", "last", "width")

    def __init__(self, search: Any, last: int, width: int) -> None:
        self.search = search
        self.last = last  # such a character among the last `width`, or -1
        self.width = width

    @classmethod
    def of(cls, buf: str, firsts: frozenset, more: tuple, width: int) -> _CharWait:
        # (Made after every delta of a broken frame: what the markers decide is kept.)
        key = (firsts, more, width)
        known = _CHAR_WAITS.get(key)
        if known is None:
            chars = "".join(sorted(firsts | {m[0] for m in more if m}))
            known = (chars, re.compile("[" + re.escape(chars) + "]").search, max([width, *map(len, more)]))
            if len(_CHAR_WAITS) < 1000:
                _CHAR_WAITS[key] = known
        chars, search, width = known
        # The last such character among the last `width`: one search of that tail.
        tail = buf[max(0, len(buf) - width) :]
        m = search(tail[::-1])
        last = len(buf) - 1 - m.start() if m is not None else -1
        return cls(search, last, width)

    def absorbs(self, text: str, n: int) -> bool:
        return self.search(text) is None and (self.last < 0 or n - self.last >= self.width)


def _trie(words: list[str]) -> str:
    """A pattern matching the longest of words at a place, spelled as a trie: each
    character is tried once, where an alternation of dozens of markers that share
    their first characters tries them all (the scanner matches one at every marker)."""
    root: dict = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def spell(node: dict) -> str:
        branches = [re.escape(ch) + spell(sub) for ch, sub in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        # A word ending here is taken only when no longer one goes on from here.
        return f"(?:{body})?" if "" in node else body

    return spell(root)


_QUICK: dict[tuple, tuple] = {}


_WORD_START = 4  # (the characters quick looks for of a marker that starts with a letter)


def _quick_searches(by_marker: dict, thinking: set) -> tuple:
    """Searches for take_plain, built once per set of markers (with the reasoning
    blocks' openers and closers: `thinking`):

      quick       where a marker may start: its first four characters when it starts
                  with a letter or digit ("comm" for "commentary to="; "co" would
                  stop at every "could"), else its first (`<`); a marker, or a start
                  of one at the end longer than three characters, holds a match;
      risky_ends  the starts of a marker that quick cannot see, at the end: the
                  proper prefixes of the starts it spells with more than one
                  character ("c", "co", "com");
      firsts      any first character of a marker;
      literals    any marker, as plain text (the line-start condition of some is
                  left out: finding one only sends the text the slow way);
      first_set   the first characters, as a set;
      end_pairs   the last two characters of every start of a marker (proper prefix);
      lane        quick, or one of risky_ends (those quick finds nothing in) at the
                  end, with an empty group: one search tells a delta of prose with
                  nothing to hold back (no match), one whose end is held (a tail:
                  the match's lastindex is set), and one that goes the slow way (see
                  Scanner.lane).

    The stdlib engine is several times faster than `regex` at these. quick and lane
    are written as alternatives that each start with a plain character (`<|\\[|comm`,
    not `[<\\[]|comm`): the engine then skips to the characters that can start a
    match (a "charset prefix") instead of trying every alternative at every
    character, three to four times faster on a delta of prose."""
    markers = tuple(sorted({*by_marker, *thinking}, key=lambda m: (-len(m), m)))
    found = _QUICK.get(markers)
    if found is None:
        markers = tuple(m for m in markers if m)
        starts = {m[:_WORD_START] if m[0].isalnum() else m[0] for m in markers}
        singles = "".join(sorted(x for x in starts if len(x) == 1))
        words = sorted(x for x in starts if len(x) > 1)
        alternatives = [re.escape(x) for x in (*singles, *words)]
        if len(_QUICK) >= 256:  # (per set of marker strings: bounded, the oldest dropped)
            del _QUICK[next(iter(_QUICK))]
        risky = frozenset(x[:i] for x in words for i in range(1, len(x)))
        quick = "|".join(alternatives) or "(?!)"
        # The tails in which quick finds nothing, by first character, each of them
        # longest first (at one place, the one that runs to the end matches).
        tails: dict[str, list[str]] = {}
        for t in sorted(risky, key=lambda t: (-len(t), t)):
            if not any(c in singles for c in t) and not any(w in t for w in words):
                tails.setdefault(t[0], []).append(t[1:])
        for first, rests in sorted(tails.items()):
            longer = "|".join(re.escape(r) for r in rests if r)
            tail = f"(?:{longer}){'?' if '' in rests else ''}" if longer else ""
            alternatives.append(f"{re.escape(first)}{tail}()\\Z")
        lane = "|".join(alternatives) or "(?!)"
        found = _QUICK[markers] = (
            lazy(re.compile, quick),
            risky,
            lazy(re.compile, "[" + re.escape("".join(sorted({m[0] for m in markers}))) + "]"),
            lazy(re.compile, "|".join(re.escape(m) for m in markers)),
            frozenset(m[0] for m in markers),
            frozenset(m[i - 2 : i] for m in markers for i in range(2, len(m))),
            lazy(re.compile, lane),
        )
    return found


class MarkerSearch:
    """The marker searches of a Scanner, over its buffer (Scanner inherits them: they
    read the fields Markers.shared puts on it, and keep their answers on it).
    Their oracle is tests/test_scan_search.py."""

    word_buf: str | None = None  # the buffer word_next is about
    word_first: tuple[int, str] | None = None  # the first word marker in it (-1: none)
    symbol_next: tuple[int, str] | None = None  # the next other marker (-1: none)
    whole_next: dict | None = None  # _whole_next's answers (set by finish)
    mf_buf: str | None = None  # the text mf_found is about (see _markers_from)
    mf_first = (-1, -1)  # (the start it is about, the first marker at or after it)
    mf_kept: tuple | None = None  # (mf_buf, mf_found, mf_first) of the scanner's own text, while another's are
    mf_spare: tuple | None = None  # (the same of a third text, a replay's: see _markers_from)
    dense_at: tuple | None = None  # (_dense_next's last search: the text, its start, its answer)
    # (Per instance, set in Scanner.__init__: whole_keys, what _whole_next looks for;
    # word_next; mf_found.)

    def at_marker(self, buf: str, pos: int):
        """Does a call marker start at pos? None: the text ends inside a possible one."""
        if self.call_re is None:
            return False
        if self.call_re.match(buf, pos):
            return True
        tail = buf[pos : pos + self.max_prefix]
        if len(buf) - pos <= self.max_prefix and tail in self.prefixes:
            return None
        return False

    def _line_next(self, buf: str, found: tuple[int, str]) -> tuple[int, str] | None:
        """The first marker any_re finds from found[0], where found, the first marker as
        plain text there (_whole_next, _next_literal: the longest one at its place), is
        one of `line` (it counts only first on a line, or after a reasoning block's
        closer: blanks between). Where that place starts a line, found is the answer
        (no marker longer than found starts there, and found's condition holds: each
        marker of any_re that may match there is found or a shorter one, tried after
        it), with no search: a reply of lines that open with `[` has thousands (any_re
        is an alternation of every marker, its line condition a look-behind: 1.5 µs a
        search)."""
        i = found[0]
        j = i
        while j > 0 and buf[j - 1] in " \t":
            j -= 1
        if j == 0 or buf[j - 1] == "\n":
            return found
        m = self.any_re.search(buf, i)
        return (m.start(), m.group()) if m is not None else None

    def _held(self, text: str, start: int = 0) -> int:
        """How many characters at the end of text (none before start) might begin a
        marker: hold them back."""
        # The longest such tail starts at the first place that can start a marker.
        end = len(text)
        prefixes, search = self.prefixes, self.firsts.search
        m = search(text, max(start, end - self.max_prefix))
        while m is not None:
            p = m.start()
            if text[p:] in prefixes:
                return end - p
            m = search(text, p + 1)
        return 0

    def _whole_next(self, buf: str, pos: int, nxt: dict) -> tuple[int, str] | None:
        """_next_literal for the whole text (final): the first marker, as plain text,
        at or after pos. It looks only for what the text holds (whole_keys: of the
        symbol markers' first characters, then the word markers, longest first),
        each by str.find, its answer kept in nxt until pos passes it. (A character
        class search is several times slower than a find of one character.)"""
        look = pos
        symbol_chars = self.symbol_chars
        keys = self.whole_keys
        one = keys[0] if len(keys) == 1 else None  # (most replies hold one: "<")
        misses = 0
        while True:
            if misses == _MISSES:
                return self._dense_next(buf, look, nxt)
            if one is not None:
                i = buf.find(one, look)
                key = one
            else:
                i = -1
                key = ""
                for k in keys:
                    at = nxt[k]
                    if at < look and at != -1:  # (-2: not looked for yet)
                        at = nxt[k] = buf.find(k, look)
                    if at >= 0 and (i < 0 or at < i):
                        i, key = at, k
            if i < 0:
                return None
            if key not in symbol_chars:
                return i, key  # (a word marker)
            m = self.symbols.match(buf, i)  # (the longest symbol marker there)
            if m is not None:
                return i, m.group()
            look = i + 1
            misses += 1

    def _dense_next(self, buf: str, look: int, nxt: dict) -> tuple[int, str] | None:
        """_whole_next where its first characters came _MISSES times with no marker there
        (32 KB of `[`, each a marker's first character): the symbol markers' one search,
        in C, and the word markers by str.find."""
        # (The symbol markers' first place found from a start holds for any later start
        # up to it, the text the same: kept. Asked again from each region's end, where
        # the rest of the text holds none, each search went on to its end: the square
        # of the text, 25 ms over 32 KB of `[f(a="x")] Checking now.<|tool_call_end|>`.)
        dense = self.dense_at
        if dense is not None and dense[0] is buf and dense[1] <= look and (dense[2] is None or look <= dense[2][0]):
            best = dense[2]
        else:
            m = self.symbols.search(buf, look)
            best = (m.start(), m.group()) if m is not None else None
            self.dense_at = (buf, look, best)
        for k in self.whole_keys:
            if k in self.symbol_chars:
                continue
            at = nxt[k]
            if at < look and at != -1:
                at = nxt[k] = buf.find(k, look)
            if at >= 0 and (best is None or at < best[0]):
                best = (at, k)
        return best

    def _next_literal(self, buf: str, pos: int) -> tuple[int, str] | None:
        """The first marker (as plain text) at or after pos: (where, which), the
        longest there; None."""
        # Each search's answer holds until pos passes it (the buffer being the same):
        # a text dense with one kind of marker does not search on for the other kind
        # to its end every time.
        if self.word_buf is not buf:
            self.word_buf = buf
            self.word_next = {}
            self.word_first = self.symbol_next = None
        sym = self.symbol_next
        if sym is None or pos > sym[0] >= 0:
            sym = (-1, "")
            find_start, match = self.symbol_firsts.search, self.symbols.match
            c = find_start(buf, pos)
            misses = 0
            while c is not None:
                at = c.start()
                m = match(buf, at)  # (the longest marker there: they are tried longest first)
                if m is not None:
                    sym = (at, m.group())
                    break
                misses += 1
                if misses == _MISSES:  # (dense first characters: one search, see _dense_next)
                    m = self.symbols.search(buf, at + 1)
                    if m is not None:
                        sym = (m.start(), m.group())
                    break
                c = find_start(buf, at + 1)
            self.symbol_next = sym
        i, marker = sym if sym[0] >= 0 else (len(buf), "")
        if self.words:
            first = self.word_first
            if first is None or pos > first[0] >= 0:
                # Where each word marker is next: found again only once passed.
                nxt = self.word_next
                first = (-1, "")
                for w in self.words:  # (longest first: the longest wins a tie)
                    at = nxt.get(w, -2)
                    if at != -1 and at < pos:
                        at = nxt[w] = buf.find(w, pos)
                    if at >= 0 and (first[0] < 0 or at < first[0]):
                        first = (at, w)
                self.word_first = first
            if 0 <= first[0] < i:
                i, marker = first
        return (i, marker) if marker else None

    def _markers_from(self, buf: str, start: int, stop: int) -> int:
        """The first place in [start, stop) where a marker of three characters or more
        starts (a call's, or a reasoning block's opener or closer, as plain text, whole in buf), or -1. A
        driver cuts a broken value there (Driver._cut)."""
        # Each kind's first place at or after a start is kept (with the start) while
        # the text is the same: regions ask for places further on, one after another,
        # and a marker that is not in the rest of the text is not looked for again.
        if self.mf_buf is not buf:
            # Two texts are remembered, as by RegionReader.find: the scanner's own, kept while
            # a salvage replay asks about the text it reads (cut short). Forgotten, the next
            # region's markers were looked for again to the end of the text, after each replay.
            # And the other text while the scanner's own is asked about: a region's drivers
            # read the reply and the reply without the end-of-turn token that ends it in
            # turns (region._before_turn_end), and the latter's answers began anew at each
            # region (fuzz seed 7 #9329795).
            # And a third, a replay's own text while the scanner's is kept: a salvage's replay
            # reads its text (cut short) and, in turns, that text cut at each list's `]` its
            # reading closes (Driver.run, LISTED); begun anew at each list, the next list's
            # markers were looked for again to the end of the text (quadratic: QA26 R2's storm).
            kept, spare = self.mf_kept, self.mf_spare
            if self.mf_buf is self.buf or kept is None or kept[0] is buf or kept[0] is not self.buf:
                self.mf_kept = (self.mf_buf, self.mf_found, self.mf_first)
            else:
                self.mf_spare = (self.mf_buf, self.mf_found, self.mf_first)
            if kept is not None and kept[0] is buf:
                self.mf_buf, self.mf_found, self.mf_first = kept
            elif spare is not None and spare[0] is buf:
                self.mf_buf, self.mf_found, self.mf_first = spare
            else:
                self.mf_buf, self.mf_found, self.mf_first = buf, {}, (-1, -1)
        # (The first of them all, kept the same way: most questions end here.)
        s0, first = self.mf_first
        if 0 <= s0 <= start and (first < 0 or first >= start):
            return first if first < stop else -1
        found = self.mf_found
        first = -1
        for key in self.cut_keys:
            known = found.get(key)
            if known is not None and known[0] <= start and (known[1] < 0 or known[1] >= start):
                i = known[1]
            else:
                i = self._next_marker(buf, start, key)
                found[key] = (start, i)
            if i >= 0 and (first < 0 or i < first):
                first = i
        self.mf_first = (start, first)
        return first if first < stop else -1

    def _next_marker(self, buf: str, start: int, key: str) -> int:
        """The first place at or after start where the word marker `key` starts, or ("")
        a symbol marker; -1."""
        if key:
            return buf.find(key, start)
        search, match = self.cut_firsts.search, self.cut_symbols.match
        m = search(buf, start)
        misses = 0
        while m is not None:
            i = m.start()
            if match(buf, i) is not None:
                return i
            misses += 1
            if misses == _MISSES:  # (dense first characters: one search, see _dense_next)
                m = self.cut_symbols.search(buf, i + 1)
                return m.start() if m is not None else -1
            m = search(buf, i + 1)
        return -1
