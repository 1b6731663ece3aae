"""A fast frame for Gemma 4's plain calls (`<|tool_call>call:NAME{…}<tool_call|>`, gemma4_call).

The general way reads such a call with a driver (its marker, `call:`, the name, the
arguments, the close: five tokens, each through the contextual lexer, the arguments
looked at for a Gemma string open at their stop), makes a tree, a Builder, a Draft and
a Region of it, and the Assembler a call of that: about 100 µs a call, and a 32 KB
reply of short calls holds hundreds of them. This frame reads a plain one with one
regex and hands its arguments to the builder's own readers (decode_loose, then
coerce_param against the tool's schema, as Builder._call does), so the call is the
general way's own: the same name, the same arguments, the same span (the region's),
no repairs.

A call is plain where the driver could read it only one way: the marker, `call:`
right after it, the NAME as its terminal reads it, the arguments from `{` up to the
close marker right after their last `}` (no blank between), holding no `<` but in
`<|"|>` delimiters (so no marker, no other tag: the grammar's ARGS runs to the close
marker, and with the delimiters paired no string is open there, so the driver's
through_loose reads no further), and then the close marker. The arguments are read
whole: decode_loose and coerce_param name no repair, and the text after the `}` is
empty. Anything else (blanks, no `call:`, a repair, a name not offered with tools, a
stream's text, which is not whole) goes the general way, which decides it exactly as
it always did (read() answers None). tests/test_frame.py compares the two ways on
every corpus case, whole and streamed; benchmarks/diff_gemcall.py on random calls.

Only for the grammar `gemma4_call` as compiled (its terminals are checked: _fits).
"""

from __future__ import annotations

from typing import Any

import regex

from .._build.coerce import Node, coerce_param
from .._build.depth import TooDeep, too_deep_argument
from .._build.loose import StrayDelimiter, decode_loose
from .._recover import repair as _repair
from .._result.model import make_call

FORMATS = frozenset({"gemma4_call"})

# The terminals of gemma4_call.lark as compiled (a literal, or a pattern's source; its
# priority). A grammar of that name with other terminals goes the general way.
_TERMINALS = {
    "WS": ("(?:[ \t\x0c\r\n])+", 0),
    "_CALL": ("(?:call)?:", 0),
    "NAME": ("[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}][\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}.\\-]*", 0),
    "ARGS": ("[{(][^<]*(?:<(?!tool_call\\||\\|tool_call>)[^<]*)*", 0),
    "__ANON_0": ("<|tool_call>", 0),
    "__ANON_1": ("<tool_call|>", 0),
}


def fits(fmt: Any) -> bool:
    """Whether fmt is gemma4_call as compiled here (see _TERMINALS)."""
    if fmt.name not in FORMATS or fmt.ends != ("<tool_call|>",) or fmt.starts != ("<|tool_call>",):
        return False
    c = fmt.compiled
    got = {name: (t.literal if t.literal is not None else t.source, t.priority) for name, t in c.terminals.items()}
    return got == _TERMINALS and [t.pattern.pattern for t in c.ignore] == [_TERMINALS["WS"][0]] and c.nest is None


class GemmaFrame:
    """gemma4_call's fast frame (see the module's docstring). Not a fastpath.Frame: it
    reads no JSON call object (a stream announces nothing by it: Builder.json_named)."""

    __slots__ = ("fmt", "framing", "name", "pattern", "repeated")

    def __init__(self, fmt: Any) -> None:
        self.fmt = fmt
        self.name = fmt.name
        self.framing = fmt.framing
        self.repeated = fmt.repeated
        name = fmt.compiled.terminals["NAME"].pattern
        # (The arguments' runs are possessive: no `<` but a delimiter's is in them.)
        self.pattern = regex.compile(
            r'<\|tool_call>call:(' + name.pattern + r')(\{[^<]*+(?:<\|"\|>[^<]*+)*+)<tool_call\|>', name.flags
        )

    def read(self, buf: str, pos: int, final: bool, tools: Any, wait: Any = None) -> Any:
        """The call at pos (a ToolCall: a region holding just it, its span the region's,
        no repairs), or None: the general way reads it (always so in a stream)."""
        if not final:
            return None
        return self.streamed(buf, pos, tools)

    def streamed(self, buf: str, pos: int, tools: Any) -> Any:
        """The call at pos as read() reads it, the text read so far (a stream's) or whole:
        a call ends at its close marker, and what follows it changes nothing of it. Only
        the Scanner asks it in a stream, where the general way would begin the call's
        region (and so decide it on the same delta: see Scanner._in_prose)."""
        m = self.pattern.match(buf, pos)
        if m is None:
            return None
        args = m.group(2)
        if args.count('<|"|>') % 2:
            return None  # (a string open at the close marker: the driver reads on through it)
        name = m.group(1)
        if tools is not None and name not in tools:
            return None  # (refused, and said so: the general way's)
        try:
            root, repairs, tail = decode_loose(args, False)
        except (TooDeep, StrayDelimiter, RecursionError):
            return None
        if repairs or tail:
            return None
        arguments: dict = {}
        if root.children:
            schema = tools.schema(name) if tools is not None else None
            try:
                value, repairs = coerce_param(
                    Node(type="object", children=root.children), None, schema, schema, self.framing, self.repeated
                )
            except (_repair.RepairError, RecursionError):
                return None
            if repairs or type(value) is not dict:
                return None
            arguments.update(value)
            if too_deep_argument(arguments) is not None:
                return None
        return make_call(name, arguments, None, "tool", self.name, (pos, m.end()), (), None)
