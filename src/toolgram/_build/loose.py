"""Gemma-style argument objects: JSON with bare keys and custom string delimiters.

Gemma 4 writes `{location:<|"|>London<|"|>,days:3,opts:{metric:true},tags:[<|"|>a<|"|>]}`;
FunctionGemma the same with `<escape>…<escape>`. Delimited strings are text as
written (no escapes); bare values (numbers, true/false/null, words) run to the
next `,` `}` `]`. The result is a `Node` tree, typed afterwards by the tool's
schema (a delimited string is a string unless the schema says otherwise; a bare
value is typed like an untyped XML value).

Models break this notation in a few known ways, which are read as meant:
  - a delimited string never closed (`{command:<|"|>ls}`): it ends at the
    object's closing brace at the end of the payload (repair closed_json);
  - a value opened with a quote and closed with the delimiter
    (`pattern:':\\s*'<|"|>`): the quotes are dropped (repair single_quotes);
  - a bare value with commas in it (`content:a, b`): in an object, a comma ends
    a bare value only when a `key:` follows it (in an array, `[1,2]`, always); a
    key may be several words (`{flag:false,key with space:1.5}`), as the template
    writes any key unquoted;
  - no closing brace at all: the rest of the payload is the last value
    (repair closed_json).
"""

from __future__ import annotations

import json
import math
import re

from .coerce import Node
from .depth import VALUE_DEPTH, TooDeep
from .._grammar.words import lazy
from .._lalr.close import TO_END, brace_closes, cut_markup, next_opener, quoted_close

DELIMITERS = ('<|"|>', "<escape>")
_DELIM = lazy(re.compile, r'<\|"\|>|<escape>')
# A bare key is words joined by spaces or tabs (`key with space:1.5`, n8n's `Basic LLM
# Chain:{…}`): Gemma's template writes an object's keys unquoted, whatever they hold.
_BARE_KEY = r"[^\s:,{}\[\]<>\"']+(?:[ \t]+[^\s:,{}\[\]<>\"']+)*"
_KEY = lazy(re.compile, r"\s*(" + _BARE_KEY + r"|\"[^\"]*\")\s*:")
_NEXT_KEY = lazy(re.compile, r"\s*(?:" + _BARE_KEY + r"|\"[^\"]*\"|<\|\"\|>[^<]*<\|\"\|>|<escape>[^<]*<escape>)\s*:")
_WS = lazy(re.compile, r"\s*")
_KEY_CUT = lazy(re.compile, r"\s*(?:" + _BARE_KEY + r"|\"[^\"]*|<\|\"\|>[^<]*|<escape>[^<]*|<[^>]*)?\s*\Z")
_BARE_STOP = lazy(re.compile, r"[,}\]]")
_ONLY_CLOSERS = lazy(re.compile, r"[\s}\]]*\Z")
_CLOSER = lazy(re.compile, r"[}\]]")
_JSON_STRING = lazy(re.compile, r'"((?:[^"\\]|\\.)*)"')
_QUOTED_TO_DELIM = lazy(re.compile, r"""(['"])(.*)\1?\s*(?:<\|"\|>|<escape>)""", re.S)
_OPEN_DELIM = lazy(re.compile, r"""(?:<\|"\|>|<escape>)(.*)""", re.S)
_DELIMS = ('<|"|>', "<escape>")  # (what _QUOTED_TO_DELIM ends with)
_MAX_DEPTH = VALUE_DEPTH  # (an argument's value: the arguments' own braces are not counted)
_CONTAINER_TYPES = ("object", "array")  # (the Nodes value() opens and obj() fills)


class _Reader:
    def __init__(self, text: str, cut: bool = False) -> None:
        self.text = text
        self.cut = cut  # (the text ends where the reply did: see decode_loose)
        self.pos = 0
        self.repairs: list[str] = []
        self.argument: str | None = None  # the top-level key being read
        # The end of the text found a value unfinished, or one about to begin (a key with
        # no value, a `,` or an opening bracket with nothing after it): cut short, when
        # the text ends where the reply did (decode_loose's `cut`).
        self.short = False

    def note(self, repair: str) -> None:
        if repair not in self.repairs:
            self.repairs.append(repair)

    def skip_ws(self) -> None:
        # (Most often no space is there: the regex only where one is. `\s` is what
        # str.isspace() tells, in `re` as here.)
        text, pos = self.text, self.pos
        if pos < len(text) and text[pos].isspace():
            self.pos = _WS.match(text, pos).end()

    def delim_at(self, pos: int) -> str | None:
        if not self.text.startswith("<", pos):  # (every delimiter opens with `<`)
            return None
        for d in DELIMITERS:
            if self.text.startswith(d, pos):
                return d
        return None

    # -- containers --------------------------------------------------------
    def obj(self, node: Node, closer: str, depth: int) -> None:
        """Read members up to `closer` (the opener is already consumed)."""
        text = self.text
        n = len(text)
        while True:
            self.skip_ws()
            comma = False
            while self.pos < n and text[self.pos] == ",":
                self.pos += 1
                comma = True
                self.skip_ws()
            if self.pos >= n:
                self.note("closed_json")
                if comma or not node.children:
                    self.short = True
                return
            if text[self.pos] == closer:
                if comma and node.children:
                    self.note("trailing_comma")  # (`[1,2,]`, `{i:1,}`: as JSON's lenient pass)
                self.pos += 1
                return
            if closer == "}":
                key = self.key()
                if key is None:
                    # Not a key: the rest cannot be read as members; keep what we have.
                    # (At the end, with no closer after it: a key the end cut.)
                    self.note("closed_json")
                    if not _CLOSER.search(text, self.pos):
                        self.short = True
                    self.pos = n
                    return
            else:
                key = None
            if depth == 0:
                self.argument = key  # (named by a TooDeep below it)
            before = self.pos
            child = self.value(key, depth, closer == "]")
            if self.pos == before and key is None:
                # No item here: the closer of an enclosing object (`{a:[}`). This array
                # was left open; the object's reading goes on at that closer.
                self.note("closed_json")
                return
            if child.type in _CONTAINER_TYPES:
                # (A container value was only opened: its members are read here, one frame
                # a level, so that TooDeep, at _MAX_DEPTH levels, comes long before the
                # interpreter's recursion limit, wherever parse() was called from.)
                self.obj(child, "}" if child.type == "object" else "]", depth + 1)
            node.children.append(child)

    def key(self) -> str | None:
        d = self.delim_at(self.pos)
        if d is not None:
            end = self.text.find(d, self.pos + len(d))
            if end < 0:
                return None
            colon = _WS.match(self.text, end + len(d)).end()
            if not self.text.startswith(":", colon):
                return None
            key = self.text[self.pos + len(d) : end]
            self.pos = colon + 1
            return key.strip()
        m = _KEY.match(self.text, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        key = m.group(1)
        return key[1:-1] if key.startswith('"') else key

    def value(self, key: str | None, depth: int, item: bool = False) -> Node:
        text = self.text
        n = len(text)
        # Spaces (not newlines) before a bare value are layout; any whitespace before
        # a delimited string or a container (`timezone:\n<|"|>GMT<|"|>`).
        while self.pos < n and text[self.pos] in " \t":
            self.pos += 1
        if self.pos < n and text[self.pos] in "\r\n":
            after = _WS.match(text, self.pos).end()
            if after < n and (text[after] in "{[" or self.delim_at(after) is not None):
                self.pos = after
        if self.pos >= n:
            self.note("closed_json")
            self.short = True  # (a key with no value)
            return Node(key=key, text="", exact=True)
        ch = text[self.pos]
        d = self.delim_at(self.pos)
        if d is not None:
            start = self.pos + len(d)
            end = text.find(d, start)
            if end >= 0:
                end = self.string_end(d, start, end, key, item)
            if end < 0:
                # Never closed (or its delimiters inside it, none of them its end, and the
                # end of the reply cut it): it ends where the payload does, minus the
                # closing brackets.
                self.note("closed_json")
                body = text[start:]
                if brace_closes(body):
                    body = body.rstrip()[:-1]
                else:
                    self.short = True  # (no brace after it: the end cut it)
                    if not self.cut:
                        # (A marker ended it, not the reply: the whitespace before the
                        # marker is layout, as before a close left out.)
                        body = body.rstrip()
                    elif (at := cut_markup(body, (d,))) >= 0:
                        # (The end of the reply cut its closing delimiter, `<|"` of
                        # `<|"|>`: markup, not the string's text, as for an opening one.)
                        body = body[:at]
                self.pos = n
                return Node(key=key, type="string", text=body, exact=True)
            self.pos = end + len(d)
            return Node(key=key, type="string", text=text[start:end], exact=True)
        if ch in "{[":
            if depth >= _MAX_DEPTH:
                # (Read as a bare value, its brackets were cut off silently, the rest of
                # them left as prose after a call that seemed whole.)
                raise TooDeep(self.argument)
            self.pos += 1
            return Node(key=key, type="object" if ch == "{" else "array")  # (obj reads its members)
        if self.cut and ch == "<" and _cut_delimiter(text[self.pos :]):
            # (The end of the reply cut the delimiter that opens a string, `<|"` of
            # `<|"|>`: markup, not the value; the string never began, as where the end
            # comes right after the whole delimiter.)
            self.note("closed_json")
            self.short = True
            self.pos = n
            return Node(key=key, type="string", text="", exact=True)
        if ch == '"':
            m = _JSON_STRING.match(text, self.pos)
            if m is not None:
                self.pos = m.end()
                try:
                    return Node(key=key, type="string", text=json.loads(m.group()), exact=True)
                except ValueError:
                    return Node(key=key, type="string", text=m.group(1), exact=True)
        return self.bare(key, item)

    def string_end(self, d: str, start: int, end: int, key: str | None, item: bool) -> int:
        """Where the delimited string from `start` ends: at the delimiter `end`, when what
        follows it may follow a value (`,` and a key, a closer, the end of the text). A
        delimiter that nothing of the kind follows (`<|"|>the <|"|>best<|"|> pizza<|"|>,`:
        the model quoted a phrase with the format's own quote) is the string's text, where
        a later one, within _STRAY_LOOK of them, ends it so (repair unescaped_quotes);
        where none does, the string cannot be read (StrayDelimiter, naming the argument;
        where the end of the reply cut the text first, the string runs on to it),
        never cut there with the arguments after it dropped."""
        text = self.text
        if _may_follow(text, end + len(d), item):
            return end
        at, before = end, start
        for _ in range(_STRAY_LOOK):
            close = self.past_quoted_call(d, before, at, item)
            if close >= len(text):
                self.note("unescaped_quotes")
                return -1  # (the calls it quotes, then the end of the reply: see past_quoted_call)
            if close >= 0:
                if before > start:
                    self.note("unescaped_quotes")
                return close
            before = at + len(d)
            at = text.find(d, before)
            if at < 0:
                break
            if _may_follow(text, at + len(d), item):
                self.note("unescaped_quotes")
                return at
        if self.cut:
            # (The end of the reply came first: the string's end may have been after it.
            # It runs on to there, its delimiters its text: -1.)
            self.note("unescaped_quotes")
            return -1
        raise StrayDelimiter(key, d)

    def past_quoted_call(self, d: str, lo: int, hi: int, item: bool) -> int:
        """Where a string closes that quotes a whole call of the format opening in
        [lo, hi) (before the delimiter at hi, which closes no string): past that call's
        own strings, and any more such calls, as the driver read the token on past them
        (close.quoted_close); -1 when none is quoted so."""
        text = self.text
        opened = next_opener(text, lo, hi - 1)[0]
        if opened < 0:
            return -1
        close = quoted_close(text, opened, d, True, opened)[0]
        if close is TO_END:
            # (No delimiter after them: where the end of the reply cut the text, the
            # string ran on to it, those calls its text, as the driver read it.)
            return len(text) if self.cut else -1
        return close if close >= 0 and _may_follow(text, close + len(d), item) else -1

    def bare(self, key: str | None, item: bool = False) -> Node:
        """A bare value: up to a `}` or `]`, or a `,` that a `key:` follows (any `,`
        for an array's item)."""
        text = self.text
        n = len(text)
        start = self.pos
        i = start
        while True:
            m = _BARE_STOP.search(text, i)
            if m is None:
                i = n
                break
            i = m.start()
            if item or text[i] in "}]" or _NEXT_KEY.match(text, i + 1) or _closes(text, i + 1):
                break
            i += 1
        raw = text[start:i]
        self.pos = i
        if i >= n:
            if raw.rstrip().endswith("}"):
                raw = raw.rstrip()[:-1]
            elif raw == raw.rstrip():
                self.short = True  # (it runs to the very end: `12` may have been `1250`)
        value = raw.strip(" \t")
        # A quote opened and closed by the delimiter instead: '...'<|"|>. (Only a value that
        # ends with the delimiter is tried: on one that does not, the pattern's `(.*)\1?\s*`
        # tried each end of the run of blanks from each place in it, the square of the run.)
        m = _QUOTED_TO_DELIM.fullmatch(value) if value.endswith(_DELIMS) else None
        if m is not None:
            self.note("single_quotes")
            return Node(key=key, type="string", text=m.group(2).rstrip("'\""), exact=True)
        m = _OPEN_DELIM.fullmatch(value)
        if m is not None:
            self.note("closed_json")
            if i >= n:
                self.short = True
            return Node(key=key, type="string", text=m.group(1), exact=True)
        if _NUMBER.fullmatch(value) is not None and math.isfinite(float(value)):
            # A number as Python and JavaScript write it (`1.50`, `0.10`, `1e5`, `2.`,
            # `.5`): in Gemma's notation a bare value, not a delimited string, so a
            # number with no schema to ask too, as a JSON payload's `1.50` is; not
            # kept as its text because JSON would write it back otherwise (QA22 D4).
            # (`007`, `0x10`, `1_000` stay the text: no JSON number.)
            return Node(key=key, type="number", text=value, exact=True)
        return Node(key=key, text=value, exact=True)


# A decimal number (JSON's, and the point floats Python and JavaScript read: `5.`, `.5`).
_NUMBER = lazy(re.compile, r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


# How many delimiters after one that cannot end a string are looked at for the one that does.
_STRAY_LOOK = 16


class StrayDelimiter(ValueError):
    """A delimited string whose end cannot be told: each of its delimiters is followed by
    text that no value is followed by (see _Reader.string_end)."""

    def __init__(self, key: str | None, delim: str) -> None:
        super().__init__(key)
        self.key = key
        self.delim = delim


def _may_follow(text: str, pos: int, item: bool) -> bool:
    """Whether what follows pos may follow a value: blanks, then the end of the text, a
    closer, or a `,` (in an object: then a key, or closers only; `,` `,` counts too)."""
    at = _WS.match(text, pos).end()
    if at >= len(text) or text[at] in "}]":
        return True
    if text[at] != ",":
        return False
    return (
        item or _NEXT_KEY.match(text, at + 1) is not None or _closes(text, at + 1)
        or text.startswith(",", _WS.match(text, at + 1).end())
        or _KEY_CUT.match(text, at + 1) is not None  # (a key the end of the text cut: `,li`)
    )  # fmt: skip


def _cut_delimiter(rest: str) -> bool:
    """Whether the rest of the text is only the start of a delimiter (`<|"`, `<esc`): two
    characters at least (`<` alone may be a bare value's own)."""
    return len(rest) >= 2 and any(len(d) > len(rest) and d.startswith(rest) for d in DELIMITERS)


def _closes(text: str, pos: int) -> bool:
    """Only whitespace and closers are left: `a:1, }`."""
    return _ONLY_CLOSERS.match(text, pos) is not None


def decode_loose(text: str, cut: bool = False) -> tuple[Node, list[str], str]:
    """The arguments in `text` (`{…}`, braces optional) as an object Node, the
    repairs, and the text after the object's closing brace (prose, when the model
    left out the call's close marker and wrote on). `cut`: the text ends where the
    reply ended; a value that end cut short adds the repair cut_value (see
    _repair.loads). Raises TooDeep for an argument nested deeper than VALUE_DEPTH."""
    reader = _Reader(text, cut)
    reader.skip_ws()
    root = Node(type="object")
    if text.startswith("{", reader.pos):
        reader.pos += 1
        reader.obj(root, "}", 0)
    elif reader.pos < len(text):
        reader.note("closed_json")
        reader.obj(root, "}", 0)
    if cut and reader.short:
        reader.note("cut_value")
    # A closer too many after the object's own (`{i:1}}`): markup of the call, dropped,
    # as JSON's lenient pass drops it (extra_bracket), not prose inside the call's markers.
    m = _EXTRA_CLOSERS.match(text, reader.pos)
    if m is not None:
        reader.note("extra_bracket")
        reader.pos = m.end()
    return root, reader.repairs, text[reader.pos :]


# Closers after the arguments' own `}` (blanks between), up to the blanks before what
# follows them.
_EXTRA_CLOSERS = lazy(re.compile, r"\s*[}\]](?:\s*[}\]])*")
