"""ProseFilter: show a streaming reply's prose, hide its call markup.

    f = ProseFilter()
    f.push("Sure <tool_")                                  # -> "Sure "
    f.push('call>{"name":"open_cart"}</tool_call> done')  # -> " done"
    f.flush()                                              # -> ""

`push(delta)` returns the prose that is safe to show so far: text that might
still start a marker of a registered format (or `<think>`) is held back, and
text inside a call region or a `<think>` block is dropped. A lone `<` (`3 < 5`)
is released as soon as the next character shows it starts no marker.

Design: the filter is the raw prose, exactly as the model wrote it. It runs the
same Scanner as parse() (so it hides exactly the regions parse() reads, and
shows a region that turns out not to be a call), but it does not trim
whitespace or insert separators where markup was cut out, as `result.text`
does; the seed example needs "Sure " with its trailing space. The pieces it
returns, concatenated, are the prose parse() puts into `result.text` before
that joining. For events that add up to `result.text` exactly, use
StreamParser's Text events.
"""

from __future__ import annotations

from typing import Any

from .._build.builder import Prose
from .._guard import escapes
from .._result.model import TextOf
from .._pipeline import read_calls, select_formats
from .._scan.scanner import Piece, Region, Scanner
from .._tools.tools import normalize_tools

__all__ = ["ProseFilter"]


class ProseFilter:
    """Filter a streaming reply down to its prose (see the module docstring).

    `formats`: as for parse(). `tools`: optional, as for parse(); a format that
    only counts with offered tools (a line of `[name(...)]`) is recognised only
    when they are given, so pass the same tools to hide what parse() would read.
    `in_think`: as for parse() (the reply starts inside a reasoning block).
    """

    def __init__(
        self, formats: Any = None, *, tools: Any = None, grammar_paths: Any = None, in_think: bool = False
    ) -> None:
        self._scanner = Scanner(select_formats(formats, grammar_paths), normalize_tools(tools), in_think, read_calls)
        self._broken = False
        self._done = False
        self._text_of = TextOf()  # (deltas that are not str)

    def push(self, delta: str) -> str:
        """Take the next piece of the reply; return the prose that is safe to show."""
        if self._done:
            raise RuntimeError("ProseFilter.push() after flush()")
        if not isinstance(delta, str):
            delta = self._text_of(delta)
        if self._broken:
            return delta
        try:
            plain = self._scanner.take_plain(delta)
        except Exception as exc:  # noqa: BLE001 - the slow way reports it
            if escapes(exc):
                raise
            plain = None
        if plain is not None:
            kind, value, _ = plain
            return value if kind == "text" else ""
        return self._run(delta, False)

    def flush(self) -> str:
        """The reply is complete: return the prose still held back."""
        if self._done:
            return ""
        rest = self._text_of.rest()  # (bytes pushed: a character left incomplete)
        shown = self.push(rest) if rest else ""
        self._done = True
        if self._broken:
            return shown
        return shown + self._run("", True)

    def _run(self, delta: str, final: bool) -> str:
        scanner = self._scanner
        try:
            items = scanner.finish() if final else scanner.feed(delta, False)
        except Exception as exc:  # noqa: BLE001 - never raise: show the rest as it is
            if escapes(exc):
                raise
            self._broken = True
            return scanner.unread()
        if not items:
            return ""
        if len(items) == 1:
            item = items[0]
            if type(item) is Piece:
                return item.value if item.kind == "text" else ""
        out = []
        for item in items:
            if type(item) is Piece:
                if item.kind == "text":
                    out.append(item.value)
            elif type(item) is Region:
                out.extend(part.text for part in item.items if type(part) is Prose)
        return "".join(out)
