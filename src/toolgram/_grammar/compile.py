"""A format's grammar compiled: the LALR table and the tables derived from it.

Lark is reached only through lark_table.py. Compiling also checks what Lark lets
pass: LALR shift/reduce conflicts (Lark resolves them silently as shift; here an
undeclared one is a GrammarError), a call's parts with no call rule, and it records
warnings (a header marker the grammar never reads, a payload terminal that streams
in quadratic time).
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import regex

from .._guard import passes_through, signals_deferred
from . import header, tables, vocabulary
from .header import (
    Format,
    GrammarError,
    builtin_shared,
    declared_conflicts,
    header_line,
)
from .nest import compile_nest
from .vocabulary import rule_name
from .words import lazy, words

#: Terminals whose extent is found by a scanner instead of their pattern.
SPECIAL_TERMINALS = ("JSON", "PYVALUE")


class Terminal:
    """A grammar's terminal: `name`, `literal` (set when it is a plain string),
    `priority`, and its pattern: `source`, compiled (`pattern`, by `regex`) when first
    matched; a reply meets few of a grammar's terminals, and compiling them all cost
    most of a cold start."""

    def __init__(self, name: str, pattern: Any, literal: str | None, priority: int) -> None:
        self.name = name
        self.literal = literal
        self.priority = priority
        if isinstance(pattern, str):
            self.source = pattern
        else:  # (a compiled pattern)
            self.source = pattern.pattern
            self.__dict__["pattern"] = pattern

    @cached_property
    def pattern(self) -> Any:
        return regex.compile(self.source)

    def _key(self) -> tuple:
        return (self.name, self.source, self.literal, self.priority)

    def __eq__(self, other: object) -> bool:
        return type(other) is Terminal and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Terminal({self.name!r}, /{self.source}/, {self.literal!r}, {self.priority})"

    # What the driver derives from the pattern, worked out on first use and kept on
    # the terminal (so it dies with its format: no global cache keyed by pattern).

    @cached_property
    def looks_past(self) -> bool:
        """Whether the pattern ends with a look-ahead group, `…(?=<\\/cofl:tool_call>)`: what
        it matches depends on text after its end (a reply cut right after the token
        reads that text otherwise: no salvage point, Driver._keep_mark)."""
        if self.literal is not None:
            return False
        src = self.source
        depth, opened, last, i, cls = 0, [], None, 0, False
        while i < len(src):
            ch = src[i]
            if ch == "\\":
                i += 2
                continue
            if cls:
                cls = ch != "]"
            elif ch == "[":
                cls = True
                if src.startswith("^]", i + 1) or src.startswith("]", i + 1):
                    i += 2 if src[i + 1] == "]" else 3
                    continue
            elif ch == "(":
                opened.append(i)
                depth += 1
            elif ch == ")" and opened:
                start = opened.pop()
                depth -= 1
                if depth == 0:
                    last = (start, i)
            i += 1
        return last is not None and last[1] == len(src) - 1 and src.startswith("(?=", last[0])

    @cached_property
    def atomic(self) -> Any:
        """The pattern made atomic, `(?>P)` (the driver's _could_grow), or the pattern
        itself where it cannot be (e.g. global flags inside the group)."""
        try:
            return regex.compile("(?>" + self.pattern.pattern + ")", self.pattern.flags)
        except Exception as exc:  # noqa: BLE001
            if passes_through(exc):
                raise
            return self.pattern

    @cached_property
    def first(self) -> Any:
        """A pattern that matches, alone, each character a match of the pattern can
        begin with (its first item, which every match begins with: a character, a
        class or a one-character escape, not optional), or None where the pattern's
        shape does not say (an alternation, a group first, flags that fold case or
        read the pattern verbosely). The driver skips a terminal whose match cannot
        begin with the text's next character without running the whole pattern."""
        from .regex_loops import _item_end

        source = self.source
        flags = self.pattern.flags
        if flags & (regex.IGNORECASE | regex.VERBOSE | regex.REVERSE):
            return None
        i = 0
        while i < len(source):  # (no `|` outside a group or class: no alternation)
            j = _item_end(source, i)
            if j is None or source[i] == "|":
                return None
            i = j
        end = _item_end(source, 0)
        if not end:
            return None
        item = source[:end]
        rest = source[end:]
        if item.endswith("?") and item != "\\?" or rest[:1] == "*" or rest[:2] in ("{0", "{,"):
            return None  # (optional: a match may begin with what follows it)
        if item[0] == "[":
            if "[" in item[1:]:
                return None  # (a class with a class inside, `[[:alpha:]]`: not read here)
        elif item[0] == "\\":
            if len(item) != 2 or item[1].isalnum() and item[1] not in "sSdDwWtnrfv":
                return None  # (zero-width, `\b`, or longer, `\p{L}`, `\x41`)
        elif item in ("^", "$", "(", ")", "|", "*", "+", "{", "?") or len(item) != 1:
            return None
        try:
            return regex.compile(item, flags)
        except Exception as exc:  # noqa: BLE001
            if passes_through(exc):
                raise
            return None

    @cached_property
    def loop(self) -> tuple | None:
        """regex_loops._loop of the pattern: its unrolled-loop shape, or None."""
        from .regex_loops import _loop

        return _loop(self.source)

    @cached_property
    def rest(self) -> Any:
        """The pattern without its first item (a Gemma payload's opening bracket,
        `[{(]`): the token's match going on from a place inside it, after a
        delimited string the driver read past a marker (Driver._through_loose);
        None when the pattern has no such item."""
        from .regex_loops import _item_end

        source = self.source
        end = _item_end(source, 0)
        if end is None:
            return None
        try:
            return regex.compile(source[end:], self.pattern.flags)
        except Exception:  # noqa: BLE001
            return None


@dataclass
class Compiled:
    states: dict
    start_state: Any
    end_state: Any
    callbacks: dict
    terminals: dict[str, Terminal]
    ignore: tuple[Terminal, ...]
    # per LALR state: the terminals it accepts, best first (priority, then literal length)
    allowed: dict = field(default_factory=dict)
    accepts_end: dict = field(default_factory=dict)
    # The regex terminals that are the whole of a rule whose text is decoded as JSON
    # (`json_calls: PAYLOAD`, MFCS `args: TEXT`): a marker inside one of its JSON
    # strings does not end them (Driver._through).
    json_text: frozenset = frozenset()
    # Those of them that are a payload of calls and nothing else (`json_calls: PAYLOAD`).
    call_text: frozenset = frozenset()
    # The regex terminals that are the whole of a Gemma-style argument rule (`loose_args:
    # ARGS`): a marker inside one of its delimited strings does not end them when the
    # arguments close properly after it (Driver._through_loose).
    loose_text: frozenset = frozenset()
    # The header's `nest:` tags compiled (_grammar/nest.py), or None: where a raw value's
    # token stops at one, the tags balanced there may be its text (_lalr/nest.py).
    nest: Any = None
    # What a marker of the grammar may start with (a literal token's first character
    # that is no letter or digit, a bracket, a tag): text after a call that starts
    # otherwise is prose (Driver.prose_at).
    literal_firsts: frozenset = frozenset()  # (set by compile_format)
    # The length of the longest literal token or end marker (set by compile_format): a rest
    # of the text that long is none of them cut short (Driver._cut_close).
    longest_literal: int = 0
    # The shift/reduce conflicts the header declares (each resolved as shift), and what
    # the grammar's author should know (GrammarWarning texts; `toolgram grammar` shows
    # them): see the properties below.
    found_conflicts: tuple = ()
    found_warnings: tuple[str, ...] = ()
    # For a built-in grammar, the checks above are made when first asked for, not when it
    # is compiled (about half the cost of a compile, on every cold start): the test suite
    # makes them on every built-in grammar (tests/test_grammar_checks.py). A user grammar
    # is checked when it is loaded, so that a broken one fails there.
    deferred_checks: Any = field(default=None, repr=False)
    # The rules (as Lark names them, namespace and all) that are calls to the driver
    # (vocabulary.COUNTED_CALLS): `pycall__call` as well as `call`.
    call_rules: frozenset = frozenset()
    # Data other modules derive from this grammar, kept here so that it dies with its
    # format (no global cache keyed by Format).
    derived: dict = field(default_factory=dict, repr=False)
    # `parser: earley`: the Lark Earley parser that reads a whole region at once (then
    # there is no LALR table: states, allowed and the rest are empty; see compile_earley).
    earley: Any = None

    def _checked(self) -> None:
        check, self.deferred_checks = self.deferred_checks, None
        if check is not None:
            self.found_conflicts, self.found_warnings = check()

    @property
    def conflicts(self) -> tuple:
        self._checked()
        return self.found_conflicts

    @property
    def warnings(self) -> tuple[str, ...]:
        self._checked()
        return self.found_warnings


def compile_format(fmt: Format) -> Compiled:
    if fmt.parser == "earley":
        return compile_earley(fmt)
    # A built-in grammar's table comes from toolgram's cache when it holds it (no Lark
    # at all: see tables.py); any other is analysed by Lark, and a built-in one kept.
    builtin = _builtin(fmt)
    lark = table = key = None
    if builtin:
        key = tables.cache_key(fmt.source, builtin_shared())
        table = tables.load(fmt.name, key)
    if table is None:
        lark = _lark_of(fmt)
        data = tables.table_data(lark)
        table = tables.Table(data)
        if key is not None:
            tables.store(fmt.name, key, data)
    callbacks = table.callbacks
    # (a rule's alias too: `block_call: … -> call` makes calls)
    _check_call_rules(fmt, {rule_name(n) for rule in callbacks for n in (rule.origin.name, rule.tree_name)})
    terminals: dict[str, Terminal] = {}
    for name, source, literal, priority in table.terminals:
        terminals[name] = t = Terminal(name, source, literal, priority)
        if not builtin:
            t.pattern  # noqa: B018 - (a user's pattern is compiled now: a bad one fails at load)
    ignore = tuple(terminals[n] for n in table.ignore if n in terminals)
    compiled = Compiled(
        states=table.states,
        start_state=table.start_state,
        end_state=table.end_state,
        callbacks=callbacks,
        terminals=terminals,
        ignore=ignore,
    )
    # (JSON: the bracket scanner delimits that one)
    compiled.json_text = _whole_of(callbacks, terminals, vocabulary.JSON_TEXT) - {"JSON"}
    compiled.loose_text = _whole_of(callbacks, terminals, vocabulary.LOOSE_TEXT)
    compiled.nest = compile_nest(fmt.nests, callbacks, terminals, table.states)
    elsewhere = {
        sym.name
        for rule in callbacks
        if not (rule_name(rule.origin.name) == vocabulary.PAYLOAD and len(rule.expansion) == 1)
        for sym in rule.expansion
    }
    compiled.call_text = frozenset(
        rule.expansion[0].name
        for rule in callbacks
        if rule_name(rule.origin.name) == vocabulary.PAYLOAD
        and len(rule.expansion) == 1
        and rule.expansion[0].name in compiled.json_text
        and rule.expansion[0].name not in elsewhere
    )
    # (A rule whose tree is named as a call, `next_call: … -> call`, is one too.)
    compiled.call_rules = frozenset(
        rule.origin.name
        for rule in callbacks
        if rule_name(rule.origin.name) in vocabulary.COUNTED_CALLS or rule_name(rule.tree_name) in vocabulary.COUNTED_CALLS
    )
    compiled.literal_firsts = frozenset("<[{").union(
        t.literal[0] for t in terminals.values() if t.literal and not t.literal[0].isalnum()
    )
    compiled.longest_literal = max((len(x) for x in (*fmt.ends, *(t.literal for t in terminals.values())) if x), default=0)
    # (Ties, the same priority and literal length, in the grammar's order of terminals:
    # the first of two that match alike is the token, and the first closer the one a
    # closing plan supplies. Never the row's own order, which was Lark's set order.)
    rank = {name: i for i, name in enumerate(terminals)}
    for state, row in table.states.items():
        allowed = [terminals[k] for k in row if k in terminals]
        allowed.sort(key=lambda t: (-t.priority, -len(t.literal or ""), rank[t.name]))
        compiled.allowed[state] = tuple(allowed)
        compiled.accepts_end[state] = "$END" in row

    def checks(lark: Any = lark) -> tuple[tuple, tuple[str, ...]]:
        if lark is None:  # (the table came from the cache)
            lark = _lark_of(fmt)
        conflicts, stale = _check_conflicts(fmt, lark, terminals)
        warned = header.header_warnings(fmt) + _marker_warnings(fmt, compiled) + _stream_warnings(fmt, compiled) + _payload_warnings(fmt, compiled) + stale
        return conflicts, tuple(warned)

    if builtin:
        compiled.deferred_checks = checks
    else:
        compiled.found_conflicts, compiled.found_warnings = checks()
    return compiled


def compile_now(fmt: Format) -> None:
    """Build fmt's grammar and compile its terminals' patterns now, not when a reply first
    meets them (a built-in pattern is compiled when first lexed; a Unicode class costs
    tens of ms): a server before its first request, a benchmark before its timings."""
    for t in fmt.compiled.terminals.values():
        t.pattern  # noqa: B018


def _lark_of(fmt: Format) -> Any:
    """The Lark parser of fmt's grammar (LALR); a broken grammar is a located GrammarError."""
    from . import lark_table

    try:
        with signals_deferred():  # (Lark's cache load swallows every Exception)
            return lark_table.build(
                fmt.source,
                import_paths=[fmt.path.parent / "shared", fmt.path.parent, *builtin_shared()],
                cache=_cache_path(fmt),
            )
    except Exception as exc:  # lark raises several kinds; all mean "this file is broken"
        if passes_through(exc):
            raise
        raise located_error(fmt, exc) from exc


def _whole_of(callbacks: dict, terminals: dict[str, Terminal], rules: frozenset | set) -> frozenset:
    """The pattern terminals (no literal) that are the whole of a rule named in `rules`."""
    return frozenset(
        rule.expansion[0].name
        for rule in callbacks
        if rule_name(rule.origin.name) in rules
        and len(rule.expansion) == 1
        and rule.expansion[0].name in terminals
        and terminals[rule.expansion[0].name].literal is None
    )


def _builtin(fmt: Format) -> bool:
    """Is fmt one of the packaged grammars (not a user's, nor a copy of one)?"""
    return fmt.path.parent in header.grammar_dirs()


def compile_earley(fmt: Format) -> Compiled:
    """A `parser: earley` grammar: Lark's Earley parser, for a region the scanner
    delimits by markers and the Earley driver (_lalr/earley.py) parses once. The
    bracket-scanned terminals (JSON, PYVALUE) need the LALR driver's lexer: an
    Earley grammar writes its payload as a pattern of its own."""
    for name in SPECIAL_TERMINALS:
        lines = _lines_defining(fmt.source, name)
        if lines:
            raise GrammarError(
                f"{fmt.path}:{lines[0]}: terminal {name} is delimited by a bracket scanner, which only an LALR grammar has; "
                f"with 'parser: earley' write the payload as a pattern (e.g. ARGS: /\\{{[^<]*/)",
                fmt.path,
                lines[0],
            )
    from . import lark_table

    try:
        lark = lark_table.build_earley(
            fmt.source, import_paths=[fmt.path.parent / "shared", fmt.path.parent, *builtin_shared()]
        )
    except Exception as exc:  # lark raises several kinds; all mean "this file is broken"
        if passes_through(exc):
            raise
        raise located_error(fmt, exc) from exc
    found = {t.name for t in lark.terminals} & set(SPECIAL_TERMINALS)
    if found:  # (imported from a shared grammar)
        raise GrammarError(f"{fmt.path}: terminal {min(found)} needs the LALR parser (it is delimited by a bracket scanner)", fmt.path)
    _check_call_rules(fmt, {rule_name(n) for rule in lark.rules for n in (rule.origin.name, rule.alias or "")})
    lterms, lignore = lark_table.terminals_of(lark)
    terminals = {
        t.name: Terminal(t.name, regex.compile("".join(f"(?{f})" for f in t.flags) + words(t.regexp)), t.literal, t.priority)
        for t in lterms
    }
    compiled = Compiled(
        states={}, start_state=None, end_state=None, callbacks={}, terminals=terminals,
        ignore=tuple(terminals[n] for n in lignore if n in terminals), earley=lark,
    )  # fmt: skip
    compiled.call_rules = frozenset(
        rule.origin.name
        for rule in lark.rules
        if rule_name(rule.origin.name) in vocabulary.COUNTED_CALLS or rule_name(rule.alias or "") in vocabulary.COUNTED_CALLS
    )
    every = [t for t in terminals.values() if t not in compiled.ignore]
    warnings = []
    for key, markers in (("start", fmt.starts), ("end", fmt.ends)):
        for nth, marker in enumerate(markers):
            if not any(_reads(t, marker) for t in every):
                line = header_line(fmt.source, key, nth)
                warnings.append(f"{fmt.path}:{line}: {key} marker {marker!r}: no token of the grammar reads it")
    compiled.found_warnings = tuple(header.header_warnings(fmt) + warnings)
    return compiled


def _cache_path(fmt: Format) -> str | bool:
    # Lark's cache file name includes a hash of the grammar, so a stale file is never used.
    # TOOLGRAM_CACHE_DIR holds it beside toolgram's own tables (tables.py); a folder that
    # cannot be made is no error: no cache.
    base = os.environ.get("TOOLGRAM_CACHE_DIR")
    if base:
        try:
            Path(base).mkdir(parents=True, exist_ok=True)
        except OSError:
            return False
        return str(Path(base) / f"{fmt.name}-{sys.version_info[0]}{sys.version_info[1]}.lark.cache")
    return True


# -- conflicts ------------------------------------------------------------------------

# Per grammar text and import path: the analysis is the costly part of a cached load.
_CONFLICTS: dict[tuple, tuple] = {}


def _shown(fmt: Format, terminals: dict[str, Terminal]) -> Any:
    """A terminal as the author wrote it: its name when the grammar names it, else its
    literal in quotes ("</param>", not __ANON_6 or LESSTHAN)."""

    def show(name: str) -> str:
        t = terminals.get(name)
        if t is not None and t.literal is not None and not regex.search(rf"(?<![\w]){regex.escape(name)}(?![\w])", fmt.source):
            return json.dumps(t.literal, ensure_ascii=False)
        return name

    return show


def declared_conflict_lines(fmt: Format) -> list[str]:
    """The conflicts the header declares, as `toolgram grammar` shows them: per
    `// conflicts:` line, `path:line: RULE TERMINAL… — why`, then, indented, each
    conflict of it that occurs (the reduction, and the rules the shift continues)."""
    show = _shown(fmt, fmt.compiled.terminals)
    out = []
    for d in declared_conflicts(fmt):
        out.append(f"{fmt.path}:{d.line}: {d.rule} {' '.join(d.terminals)} — {d.reason}")
        for c in fmt.compiled.conflicts:
            if c.reduce_rule == d.rule and {c.terminal, show(c.terminal)} & set(d.terminals):
                out.append(f"    on {show(c.terminal)}: reduce `{c.reduce_text}`, or shift in " + ", ".join(f"`{r}`" for r in c.shift_rules))
    return out


def _check_conflicts(fmt: Format, lark: Any, terminals: dict[str, Terminal]) -> tuple[tuple, list[str]]:
    """The grammar's shift/reduce conflicts, and a warning for each declared one that
    does not occur; one that its header does not declare is a GrammarError naming the
    rules and the terminal."""
    from . import lark_table

    show = _shown(fmt, terminals)
    key = (fmt.source, str(fmt.path.parent))
    found = _CONFLICTS.get(key)
    if found is None:
        found = tuple(lark_table.conflicts_of(lark, show))
        if len(_CONFLICTS) >= 256:
            _CONFLICTS.pop(next(iter(_CONFLICTS)))
        _CONFLICTS[key] = found
    declared = declared_conflicts(fmt)
    used = set()
    undeclared = []
    for c in found:
        names = {c.terminal, show(c.terminal)}
        hit = next((d for d in declared if d.rule == c.reduce_rule and names & set(d.terminals)), None)
        if hit is None:
            undeclared.append(c)
        else:
            used.add((hit.line, *(names & set(hit.terminals))))
    if undeclared:
        first = undeclared[0]
        lines = _lines_defining(fmt.source, first.reduce_rule)
        line = lines[0] if lines else None
        where = f"{fmt.path}:{line}" if line else str(fmt.path)
        pairs = ", ".join(f"{c.reduce_rule} {show(c.terminal)}" for c in undeclared)
        details = []
        for c in undeclared:
            details.append(f"shift/reduce conflict on {show(c.terminal)}: reduce `{c.reduce_text}`")
            details += [f"    or shift in `{s}`" for s in c.shift_rules]
        details.append(
            "Lark would silently take the shift, so the grammar reads less than it says. Rewrite the rules, "
            "or, if shift is what you mean, declare each in the header: "
            + "; ".join(
                "// conflicts: " + " ".join([rule, *(show(c.terminal) for c in undeclared if c.reduce_rule == rule)])
                + " — why shift is right"
                for rule in dict.fromkeys(c.reduce_rule for c in undeclared)
            )
        )
        raise GrammarError(
            f"{where}: LALR shift/reduce conflict (rule and terminal: {pairs})" + "".join("\n    " + d for d in details),
            fmt.path,
            line,
        )
    stale = []
    for d in declared:
        for term in d.terminals:
            if not any(u[0] == d.line and term in u[1:] for u in used):
                stale.append(f"{fmt.path}:{d.line}: declared conflict {d.rule} {term} does not occur (remove it from the header)")
    return found, stale


# -- warnings -----------------------------------------------------------------------------


def _reads(t: Terminal, marker: str) -> bool:
    """Could the token t take the marker's text (or the marker start the token)?"""
    m = t.pattern.match(marker)
    return bool(m and m.end() > 0) or t.pattern.fullmatch(marker, partial=True) is not None


def _payload_warnings(fmt: Format, compiled: Compiled) -> list[str]:
    """A `payload:` rule the grammar has none of (by its name or an alias): misspelt, its
    text would be read as markup where a call of the format cannot be read."""
    names = {rule_name(n) for rule in compiled.callbacks for n in (rule.origin.name, rule.tree_name)}
    return [
        f"{fmt.path}:{header_line(fmt.source, 'payload')}: payload rule {name!r}: the grammar has no such rule"
        for name in dict.fromkeys(fmt.payload)
        if name not in names
    ]


def _marker_warnings(fmt: Format, c: Compiled) -> list[str]:
    out = []
    ignored = {t.name for t in c.ignore}
    first = [t for t in c.allowed.get(c.start_state, ()) if t.name not in ignored]
    for nth, marker in enumerate(fmt.starts):
        if not any(_reads(t, marker) for t in first):
            line = header_line(fmt.source, "start", nth)
            out.append(f"{fmt.path}:{line}: start marker {marker!r}: no token the grammar's start accepts reads it, so a region opened there never parses")
    every = [t for t in c.terminals.values() if t.name not in ignored]
    for nth, marker in enumerate(fmt.ends):
        if not any(_reads(t, marker) for t in every):
            line = header_line(fmt.source, "end", nth)
            out.append(f"{fmt.path}:{line}: end marker {marker!r}: no token of the grammar reads it")
    return out


# Free text with spaces, punctuation and a line break: a terminal that takes all of
# it is a payload, which may grow over many deltas while streaming.
_FREE_TEXT = "the quick, brown fox;\njumps over (the) lazy dog 42 times."


def _stream_warnings(fmt: Format, c: Compiled) -> list[str]:
    from .regex_loops import (
        _loop,  # (the driver's own analysis: what it streams in linear time)
    )

    out = []
    for t in c.terminals.values():
        if t.literal is not None or t.name in SPECIAL_TERMINALS:
            continue
        if t.pattern.fullmatch(_FREE_TEXT, partial=True) is None:  # (or the start of one)
            continue
        if _loop(t.source) is None:
            lines = _lines_defining(fmt.source, t.name)
            where = f"{fmt.path}:{lines[0]}" if lines else str(fmt.path)
            out.append(
                f"{where}: terminal {t.name} /{_printable(t.source)}/ is re-matched from its start on every streamed "
                "delta (quadratic in its length); write it as an unrolled loop, e.g. /[^<]+(?:<(?!\\/?tag>)[^<]*)*/ "
                "(grammars/README.md, 'Streaming cost')"
            )
    return out


def _printable(pattern: str) -> str:
    return pattern.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


# -- rules the builder needs ----------------------------------------------------------

def _check_call_rules(fmt: Format, rules: set) -> None:
    """A grammar with no rule that makes calls (`call`, `json_calls`, …) would read
    regions that make no call: its text would vanish, with no error. Said when the
    file is loaded instead (naming the parts it has with no `call` to hold them)."""
    if rules & vocabulary.CALL_HOLDERS:
        return
    parts = [r for r in vocabulary.CALL_PARTS if r in rules]
    if not parts:
        lines = _lines_defining(fmt.source, "start")
        line = lines[0] if lines else None
        where = f"{fmt.path}:{line}" if line else str(fmt.path)
        holders = ", ".join(r.name for r in vocabulary.RULES if r.holds_calls)
        raise GrammarError(
            f"{where}: no rule produces a call, so every region the grammar reads would vanish with no call and no "
            f"error; use one of the call rules ({holders}; see grammars/README.md)",
            fmt.path,
            line,
        )
    if parts:
        line = _line_of(fmt.source, regex.escape(parts[0]), parts[0])
        where = f"{fmt.path}:{line}" if line else str(fmt.path)
        raise GrammarError(
            f"{where}: rule {parts[0]!r} is read only inside a 'call' rule, and the grammar has none "
            f"(write `call: … name … args …` and use `call` in `start`)",
            fmt.path,
            line,
        )


# -- Lark's errors, located ---------------------------------------------------------------

_LINE_IN_MESSAGE = lazy(regex.compile, r"\bline (\d+)")
_COLUMN_IN_MESSAGE = lazy(regex.compile, r"\bline \d+,? column (\d+)")
# Lark messages that name the symbol at fault without a line: find where it is defined.
_DEFINED_SYMBOL = (
    regex.compile(r"Cannot compile token ([A-Za-z_][A-Za-z0-9_]*)"),
    regex.compile(r"\(([A-Z_][A-Z0-9_]*): "),  # zero-width terminals (START: '…')
    regex.compile(r"following rules:\s*-\s*<([A-Za-z_][A-Za-z0-9_]*) :"),  # collisions
    regex.compile(r"Terminals? '?([A-Z_][A-Z0-9_]*)'?"),
)


def located_error(fmt: Format, exc: Exception) -> GrammarError:
    """A Lark (or import) error as GrammarError: a first line `path:line: message`,
    then Lark's explanation whole, indented: the caret under the place, the rules of
    a collision, what the regex engine said about a pattern."""
    text = str(exc).strip()
    lines = text.splitlines()
    message = lines[0] if text else type(exc).__name__
    rest = [ln.rstrip() for ln in lines[1:]]
    line = getattr(exc, "line", None)
    column = getattr(exc, "column", None)
    if not isinstance(line, int) or line < 1:
        m = _LINE_IN_MESSAGE.search(text)
        line = int(m.group(1)) if m else _line_of_symbol(fmt.source, text)
        c = _COLUMN_IN_MESSAGE.search(text)
        column = int(c.group(1)) if m and c else None
    if not isinstance(column, int) or column < 1:
        column = None
    message = regex.sub(r",? at line \d+,? column \d+(?: in <string>)?:?", "", message).rstrip(" :.")
    if _NO_START.search(message):
        # (Lark's words for a grammar with no `start` rule at all: a header alone, say.)
        message = "no start rule: a grammar reads one call region from its `start: …` rule"
    token = getattr(exc, "token", None)
    if token is not None and getattr(exc, "expected", None):  # lark's grammar-of-grammars parser
        expected = ", ".join(sorted(_LARK_TOKENS.get(e, e) for e in exc.expected))
        message = f"unexpected {_LARK_TOKENS.get(token.type, repr(str(token)))}, expected {expected}"
        rest = [ln for ln in rest if ln.strip() and not ln.strip().startswith(("Expected one of", "* "))]
    if isinstance(exc, FileNotFoundError) and exc.filename:
        message = f"%import: no grammar {exc.filename!r} beside the file, in shared/ or built in"
        line = _line_of(fmt.source, regex.escape(Path(str(exc.filename)).stem), "%import") or line
    details = [ln for ln in rest if ln.strip()]
    if line and column and not any(ln.strip() == "^" for ln in details):
        source_lines = fmt.source.splitlines()
        if line <= len(source_lines):
            details = [source_lines[line - 1].rstrip(), " " * (column - 1) + "^", *details]
    elif any(ln.strip() == "^" for ln in details):
        # Lark's own caret context: keep its lines as they are aligned
        details = [ln for ln in rest if ln.strip() or False]
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, (re.error, regex.error)) or type(cause).__name__ == "error" and "regex" in type(cause).__module__:
        details.append(f"regex: {cause}")
    where = f"{fmt.path}:{line}" if line else str(fmt.path)
    return GrammarError(f"{where}: {message}" + "".join("\n    " + d for d in details), fmt.path, line, column)


_NO_START = lazy(regex.compile, r"undefined rule: NonTerminal\('start'\)")

_LARK_TOKENS = {"_NL": "end of line", "_RPAR": "')'", "_LPAR": "'('", "_RBRA": "']'", "_LBRA": "'['",
                "_COLON": "':'", "_OR": "'|'", "_DOT": "'.'", "RULE": "a rule name", "TERMINAL": "a terminal name",
                "STRING": "a string", "REGEXP": "a /regexp/", "$END": "end of file"}


def _line_of_symbol(source: str, message: str) -> int | None:
    if "defined more than once" in message:
        m = regex.search(r"'([A-Za-z_][A-Za-z0-9_]*)'", message)
        if m:
            hits = _lines_defining(source, m.group(1))
            return hits[1] if len(hits) > 1 else (hits[0] if hits else None)
    if "NonTerminal('start')" in message:
        return None
    m = regex.search(r"Rule '([A-Za-z_][A-Za-z0-9_]*)' used but not defined \(in rule ([A-Za-z_][A-Za-z0-9_]*)\)", message)
    if m:
        return _line_of(source, regex.escape(m.group(1)), None, after=_lines_defining(source, m.group(2))[:1])
    for pattern in _DEFINED_SYMBOL:
        m = pattern.search(message)
        if m:
            hits = _lines_defining(source, m.group(1))
            if hits:
                return hits[0]
    return None


def _lines_defining(source: str, symbol: str) -> list[int]:
    pat = regex.compile(rf"^\s*[?!]?{regex.escape(symbol)}(?:\.\-?\d+)?\s*:")
    return [i for i, line in enumerate(source.splitlines(), 1) if pat.match(line)]


def _line_of(source: str, word: str, prefix: str | None, after: list[int] = ()) -> int | None:
    start = after[0] if after else 1
    pat = regex.compile(rf"(?<![A-Za-z0-9_]){word}(?![A-Za-z0-9_])")
    for i, line in enumerate(source.splitlines(), 1):
        if i < start or line.strip().startswith("//"):
            continue
        if (prefix is None or line.lstrip().startswith(prefix)) and pat.search(line):
            return i
    return None


header.compile_format = compile_format
