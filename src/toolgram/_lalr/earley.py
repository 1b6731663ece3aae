"""One region under a `parser: earley` grammar: delimited by markers, parsed once.

A grammar LALR cannot express (an ambiguous shape) runs on Lark's Earley parser,
which has no incremental or interactive mode. So its region is delimited by
markers alone: it starts at the start marker and ends at the format's end marker,
or at the next call marker of any format, or at the end of the reply. Until one of
those is in the text the driver waits, and a stream puts its deltas aside unseen
(`absorbs`: only a character a marker starts with, or the end of one begun, makes
it look, from where it stopped), so a stream costs linear time. Then the region is
parsed once, with the end marker supplied where the model left it out (repair
`closed_tag`); its tree has the shape the LALR driver's has (rule names, tokens
with their places in the reply, a call's `meta.end_pos`) and goes to the same
builder (JSON repairs and all). No closing plan, salvage or fast path: what the
parse cannot read is a failure ("unexpected …"). It has the LALR Driver's face
where the scanner and the recovery policies look (status, end, tree, repairs, …).
"""

from __future__ import annotations

import re
from typing import Any

from .._grammar.registry import Format
from .tokens import DONE, FAIL, WAIT, Tok, _snippet
from .tree import Meta, Tree

# The longest region (from its start marker to its end) an Earley grammar reads.
# Earley's time grows with the cube of the text on an ambiguous grammar (and is
# ~50x LALR's on a plain one: grammars/README.md, "Earley"); a longer region is a
# failure ("Couldn't read a tool call: …"), its text prose, and a stream stops
# waiting on it there.
EARLEY_MAX_REGION = 8192


class EarleyDriver:
    __slots__ = (
        "fmt", "c", "start", "pos", "status", "end", "tree", "repairs", "reason", "prose_at", "hint", "quotes",
        "taken", "brackets", "cutter", "marks", "closed_at", "last_end", "calls", "lines", "stray", "deep",
        "body", "call_re", "firsts", "width", "scanned", "last", "last_term", "ended", "decode_failed", "listed",
        "cut_close",
    )  # fmt: skip

    def __init__(self, fmt: Format, start: int, marker_len: int, call_re: Any, firsts: frozenset, width: int) -> None:
        self.fmt = fmt
        self.c = fmt.compiled
        self.start = start
        self.pos = start
        self.status = WAIT
        self.end = start
        self.tree = None
        self.decode_failed: tuple | None = None  # (see RegionReader.decode)
        self.repairs: list[str] = []
        self.reason = ""
        self.quotes = not fmt.quiet
        # (What the LALR driver's readers look at, with nothing to say here: no salvage
        # replay, no prose after a call, no stray quote.)
        self.prose_at = -1
        self.taken = 0
        self.brackets = None
        self.cutter = None
        self.listed = None  # (its region is parsed whole: never read up to a list's `]`)
        self.cut_close = None  # (no payload token cut at a call after its JSON: Driver.cut_close)
        self.marks = None
        self.lines = False
        self.stray = False
        self.deep = False  # (an argument nested too deeply: see Driver.deep)
        self.calls = 0
        self.closed_at = -1
        self.last_end = start
        # (As the LALR driver's: where the text ends when the region ended because the text
        # did, the end marker left out; which token was read last is not known here.)
        self.last_term = None
        self.ended = -1
        self.body = start + marker_len  # where an end marker or the next call marker is looked for
        self.call_re = call_re  # the scanner's search for a call marker of any format (None: none)
        # A delta with none of these characters cannot end the region (see absorbs).
        chars = "".join(sorted(set(firsts) | {e[0] for e in fmt.ends if e}))
        self.firsts = re.compile("[" + re.escape(chars) + "]").search if chars else None
        self.width = width  # the longest marker: one begun this far back may still complete
        self.scanned = self.body  # markers were looked for up to here (less the width)
        self.last = -1  # the last marker character within `width` of the end, when waiting
        self.hint: list | None = None

    def run(self, buf: str, final: bool, at_marker: Any = None) -> str:
        if self.status != WAIT:
            return self.status
        stop, close = self._stop(buf)
        if stop < 0:
            # (A marker yet to be found starts in the last `width` characters or later:
            # past the cap there, the region is too long whatever comes.)
            if len(buf) - self.width - self.start > EARLEY_MAX_REGION:
                return self._too_long()
            if not final:
                self.scanned = max(self.body, len(buf) - self.width)
                self._wait(buf)
                return WAIT
            stop = len(buf)
        if stop - self.start > EARLEY_MAX_REGION:
            return self._too_long()
        return self._parse(buf, stop, close)

    def _stop(self, buf: str) -> tuple[int, str]:
        """Where the region's text stops and its end marker (found or to supply): at the
        first end marker, or the first call marker before it; (-1, "") while neither is."""
        at = self.scanned
        best, close = -1, ""
        for e in self.fmt.ends:
            i = buf.find(e, at)
            if i >= 0 and (best < 0 or i < best):
                best, close = i, e
        if self.call_re is not None:
            m = self.call_re.search(buf, at, best if best >= 0 else len(buf))
            if m is not None and (best < 0 or m.start() < best):
                return m.start(), ""
        if best >= 0:
            return best + len(close), close
        return -1, ""

    def _parse(self, buf: str, stop: int, close: str) -> str:
        start = self.start
        text = buf[start:stop]
        last = start + len(text.rstrip())
        if not close:  # the model left the end marker out: supply it
            self.repairs.append("closed_tag")
            self.closed_at = last
            if stop >= len(buf.rstrip()):  # (and the reply ended there, not at the next call)
                self.ended = len(buf)
            text = buf[start:last] + self.fmt.ends[0]
            stop = last
        self.last_end = last if not close else stop
        self.pos = stop
        # (Lark is loaded already: the grammar was compiled by it, see compile_earley.)
        from lark.exceptions import UnexpectedEOF, UnexpectedInput

        try:
            tree = self.c.earley.parse(text)
        except UnexpectedEOF:
            return self._fail("the call ended too early", stop)
        except UnexpectedInput as exc:
            at = start + (getattr(exc, "pos_in_stream", None) or 0)
            if at >= stop:
                return self._fail("the call ended too early", stop)
            self.taken = 1
            # (Quoted from the region's text only: a stream parses it before the text
            # after it has come.)
            return self._fail(f"unexpected {_snippet(buf[:stop], at)}", at)
        self.tree = _placed(tree, start, stop, self.c.call_rules)
        self.end = stop
        self.taken = 2
        self.status = DONE
        return DONE

    def _too_long(self) -> str:
        self.taken = 1
        return self._fail(f"the region is longer than {EARLEY_MAX_REGION} characters (parser: earley)", self.body)

    def _fail(self, reason: str, at: int) -> str:
        self.status = FAIL
        self.reason = reason
        self.pos = self.end = max(at, self.start)
        return FAIL

    # -- waiting cheaply ----------------------------------------------------
    def _wait(self, buf: str) -> None:
        self.hint = [self]
        self.last = -1
        if self.firsts is not None:
            tail = buf[max(0, len(buf) - self.width) :]
            m = self.firsts(tail[::-1])
            if m is not None:
                self.last = len(buf) - 1 - m.start()

    def absorbs(self, text: str, n: int) -> bool:
        """Can `text`, after the n characters so far, not end the region (no marker
        character in it, none begun near the end before it, and the region not over
        the cap)? Then run() need not see it yet."""
        if n + len(text) - self.width - self.start > EARLEY_MAX_REGION:
            return False
        if self.firsts is not None and self.firsts(text) is not None:
            return False
        return self.last < 0 or n - self.last >= self.width


def _placed(tree: Any, start: int, stop: int, call_rules: frozenset) -> Any:
    """Lark's tree of the region's text as the LALR driver builds it: toolgram's Tree
    (_lalr/tree.py), tokens as Tok, at their places in the reply (a supplied end marker
    at the region's end), and a call rule's `meta.end_pos` where its last token (kept
    or not) ends."""
    from lark import Token
    from lark import Tree as LarkTree

    def made(node: Any) -> Tree:
        meta = node._meta
        ours = Tree(node.data, list(node.children))
        if meta is not None and node.data in call_rules and not meta.empty:
            ours._meta = Meta()
            ours._meta.end_pos = min(start + meta.end_pos, stop)
        return ours

    if not isinstance(tree, LarkTree):
        return tree
    root = made(tree)
    stack = [root]
    while stack:
        children = stack.pop().children
        for i, child in enumerate(children):
            if isinstance(child, Token):
                s = min(start + child.start_pos, stop) if child.start_pos is not None else stop
                e = min(start + child.end_pos, stop) if child.end_pos is not None else stop
                children[i] = Tok(child.type, str(child), s, e)
            elif isinstance(child, LarkTree):
                children[i] = made(child)
                stack.append(children[i])
    return root
