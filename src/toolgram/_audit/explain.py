"""The audit view: which format read which span of a reply, with which grammar rules.

`explain(raw, tools, formats=…, grammar_paths=…)` runs the same Scanner and Assembler as
parse() and keeps what parse() throws away: each region's parse tree (the rules that
built its calls), every format that was tried at a marker and why it did not read it,
and which repairs were applied. `toolgram explain FILE` prints it.

The scanner is observed, not changed: a `_Recorder` is told when a region begins (a
marker or the reply's start), when a grammar read it and when a candidate did not, and
records each candidate format's outcome and the tree it built, keyed by the Region or
Failure the scanner reports. Only the fast path is off (it builds no tree; test_frame
checks it reads what the general way reads), so what is explained is what parse() does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .._lalr.tree import Tree

from .._result.model import ParseResult, ToolCall
from .._pipeline import Assembler, check_truncated, read_calls, select_formats
from .._scan.scanner import Failure, Piece, Region, Scanner
from .._grammar.vocabulary import rule_name
from .._grammar.words import WORD
from .._lalr.table import skip_ignored
from .._lalr.tokens import FAIL
from .._tools.tools import normalize_tools


@dataclass
class Attempt:
    """One format tried at one place: `ok`, or why not."""

    format: str
    ok: bool
    reason: str = ""
    # Where the grammar stopped (an offset into the reply; -1: it did not stop in its
    # grammar, e.g. its payload did not decode) and the terminals it would have taken
    # there, as they read (see expected_text): "</tool_call>", PAYLOAD /…/, the end.
    at: int = -1
    expected: list[str] = field(default_factory=list)
    told: bool = False  # this attempt's reason is the one the region's failure tells


@dataclass
class Step:
    """One slice of the reply, in order: kind "text", "reasoning", "markup", "turn_end"
    or "closer" (markers removed), "call" (a region a grammar read) or "error" (a region
    no format could read)."""

    kind: str
    start: int
    end: int
    format: str = ""
    tree: Any = None  # lark Tree of the region (kind "call")
    grammar: str = ""  # the grammar file that read it
    calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    # (kind "error" kept as prose: the spans of its markers, dropped from the text as
    # markup, mention.failed_prose)
    markers: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Explanation:
    raw: str
    formats: list[str]
    steps: list[Step]
    result: ParseResult
    # formats anchored to the reply's start (no marker) tried there, when none read it
    opening: list[Attempt] = field(default_factory=list)


class _Recorder:
    """The scanner's observer: per region, every format tried and each read tree."""

    def region_begins(self, candidates: list, start: int, marker_len: int) -> None:
        self.session = []
        if marker_len == 0 and not self.opened:  # the first marker-less region: the reply's start
            self.opening, self.opened = self.session, True

    def region_read(self, drv: Any, region: Any) -> None:
        if isinstance(region, Region):
            self.session.append(Attempt(drv.fmt.name, True))
            self.found[id(region)] = (self.session, drv.tree, str(drv.fmt.path))

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self.session: list[Attempt] = []  # the formats tried for the current region
        self.opening: list[Attempt] = []  # the anchored formats tried at the reply's start
        self.opened = False
        # id(Region or Failure reported) -> (attempts, tree, grammar file)
        self.found: dict[int, tuple[list[Attempt], Any, str]] = {}

    def candidate_failed(self, drv: Any, reason: str, told: Any) -> None:
        why = reason or ("names no offered tool" if drv.fmt.offered_only else "not a call")
        attempt = Attempt(drv.fmt.name, False, why, told=told is not None)
        if reason and drv.status == FAIL:  # (stopped in its grammar, not in decoding)
            attempt.at = skip_ignored(drv.c, self.raw, max(drv.pos, drv.start))
            attempt.expected = [expected_text(drv.c, name) for name in drv.expected()]
        self.session.append(attempt)
        if told is not None:
            self.found[id(told)] = (self.session, None, "")


def explain(
    raw: str,
    tools: Any = None,
    *,
    formats: Any = None,
    grammar_paths: Any = None,
    max_chars: int | None = 32_768,
    in_think: bool = False,
    truncated: str = "repair",
) -> Explanation:
    check_truncated(truncated)
    if max_chars is None:
        max_chars = len(raw)
    toolset = normalize_tools(tools)
    fmts = select_formats(formats, grammar_paths)
    head = raw[:max_chars]
    recorder = _Recorder(head)
    scanner = Scanner(fmts, toolset, in_think, read_calls, recorder)
    asm = Assembler(toolset, truncated=truncated)
    steps: list[Step] = []
    for item in scanner.read(head):
        produced = asm.add(item)
        if isinstance(item, Piece):
            if steps and steps[-1].kind == item.kind and steps[-1].end == item.start and item.kind not in ("markup", "turn_end", "closer"):
                steps[-1].end = item.end  # one step per run of prose
            else:
                steps.append(Step(item.kind, item.start, item.end))
        elif isinstance(item, Region):
            attempts, tree, grammar = recorder.found.get(id(item), ([], None, ""))
            step = Step("call", item.start, item.end, item.fmt, tree, grammar)
            step.calls = [v for k, v in produced if k == "call"]
            step.errors = [v for k, v in produced if k == "error"]
            step.repairs = list(item.repairs)
            for part in item.items:  # refused calls (unknown tool, …) were repaired too
                step.repairs += [r for r in getattr(part, "repairs", ()) if r not in step.repairs]
            step.attempts = attempts
            steps.append(step)
        elif isinstance(item, Failure):
            # The failure's text was reported as pieces just before it (text, and a told
            # failure's markers, "opener", mention.failed_prose): replace those.
            markers: list[tuple[int, int]] = []
            while steps and steps[-1].kind in ("text", "opener") and steps[-1].end > item.start and steps[-1].end <= item.end:
                if steps[-1].kind == "opener":
                    markers.insert(0, (steps[-1].start, steps[-1].end))
                if steps[-1].start < item.start:
                    steps[-1].end = item.start
                    break
                steps.pop()
            step = Step("error", item.start, item.end, errors=[item.message], markers=markers)
            step.attempts = recorder.found.get(id(item), ([], None, ""))[0]
            steps.append(step)
    if len(raw) > max_chars:
        steps.append(Step("text", max_chars, len(raw), errors=[f"not read: beyond max_chars={max_chars}"]))
    opening = [] if any(a.ok for a in recorder.opening) else recorder.opening
    return Explanation(raw, [f.name for f in fmts], steps, asm.result(), opening)


# -- rendering ----------------------------------------------------------------


def tree_lines(tree: Any, width: int = 60) -> list[str]:
    """A region's parse tree, one node a line: rules by name (a rule imported from
    grammars/shared shows its namespace), tokens as `TERMINAL 'text' [start, end)`;
    a token the driver supplied for a missing close marker shows as `(supplied)`."""
    lines: list[str] = []

    def walk(node: Any, depth: int) -> None:
        pad = "  " * depth
        if isinstance(node, Tree):
            name = str(node.data)
            space, _, rule = name.rpartition("__")
            lines.append(f"{pad}{rule}" + (f"  ({space})" if space else ""))
            for child in node.children:
                walk(child, depth + 1)
        elif hasattr(node, "type") and hasattr(node, "start_pos"):  # lark Token or the driver's Tok
            if node.start_pos is not None and node.start_pos == node.end_pos and not str(node):
                lines.append(f"{pad}{node.type}  (supplied)")
            else:
                lines.append(f"{pad}{node.type}  {shorten(str(node), width)}  [{node.start_pos}, {node.end_pos})")

    if tree is not None:
        walk(tree, 0)
    return lines


# The terminals whose extent a scanner finds, not their pattern (compile.SPECIAL_TERMINALS).
_SCANNED = {"JSON": "JSON (a JSON object or array)", "PYVALUE": "PYVALUE (a Python value)"}


def expected_text(c: Any, name: str, width: int = 48) -> str:
    """A terminal of the compiled grammar `c` as a reader knows it: a literal as its
    quoted text ("</tool_call>"), a pattern by its name and pattern (PAYLOAD /[^<]+…/),
    an anonymous one (__ANON_3) by its pattern alone; "$END" as the region's end."""
    if name == "$END":
        return "the end of the region"
    if name in _SCANNED:
        return _SCANNED[name]
    t = c.terminals[name]
    if t.literal is not None:
        return json.dumps(t.literal, ensure_ascii=False)
    # (the pattern as written: \w was spelt out for the regex engine, see _grammar/words.py)
    pattern = t.source.replace(f"[{WORD}]", "\\w").replace(WORD, "\\w")
    pattern = pattern.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    if len(pattern) > width:
        pattern = pattern[: width - 1] + "…"
    shown = f"/{pattern}/"
    if name.startswith("__"):  # (Lark's __ANON_n: a pattern the grammar did not name)
        return shown
    # As the grammar file names it: without the namespace an %import gives it
    # (_function_param__PARAMETER is the shared grammar's _PARAMETER).
    name = "_" + rule_name(name[1:]) if name.startswith("_") else rule_name(name)
    return f"{name} {shown}"


def line_col(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of an offset."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def shorten(text: str, width: int = 60) -> str:
    r = repr(text)
    return r if len(r) <= width else r[: width - 2] + "…" + r[-1]


def attempt_data(raw: str, a: Attempt) -> dict:
    """One format tried, as JSON data: with, where its grammar stopped, the place
    (offset, line, column), the text there and the terminals it expected."""
    data: dict = {"format": a.format, "ok": a.ok, "reason": a.reason}
    if a.at >= 0:
        line, col = line_col(raw, a.at)
        data.update(at=a.at, line=line, column=col, text=raw[a.at : a.at + 40], expected=a.expected)
    return data


def explanation_data(exp: Explanation) -> dict:
    """The explanation as JSON data (`toolgram explain --json`)."""
    from .cases import call_data

    return {
        "formats": exp.formats,
        "opening": [{"format": a.format, "reason": a.reason} for a in exp.opening],
        "steps": [
            {
                "kind": s.kind,
                "start": s.start,
                "end": s.end,
                "text": exp.raw[s.start : s.end],
                **({"format": s.format, "grammar": s.grammar} if s.format else {}),
                **({"tree": tree_lines(s.tree, 200)} if s.tree is not None else {}),
                **({"calls": [call_data(c) for c in s.calls]} if s.calls else {}),
                **({"errors": s.errors} if s.errors else {}),
                **({"repairs": s.repairs} if s.repairs else {}),
                **({"markers": [exp.raw[a:b] for a, b in s.markers]} if s.markers else {}),
                **(
                    {"attempts": [attempt_data(exp.raw, a) for a in s.attempts]}
                    if s.attempts
                    else {}
                ),
            }
            for s in exp.steps
        ],
        "errors": list(exp.result.errors),
    }
