"""The one module that touches Lark's internals (lark>=1.2,<2).

Everything toolgram needs from Lark beyond its documented API comes through here:
the LALR parse table and the tree-builder callbacks (reached from the documented
`Lark.parse_interactive()`, falling back to the frontend's parser), the terminals,
the %ignore list, the `Shift` action, `PatternStr`, and the conflict analysis
(`lark.parsers.lalr_analysis`), which Lark resolves silently (shift wins) unless
`strict=True`. When Lark changes, this is the file to change; tests/test_grammar_checks.py
(test_every_grammar_on_the_oldest_supported_lark) compiles every grammar with the oldest
supported Lark, when .ci/lark-oldest holds it; the suite itself runs on the installed one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lark import Lark
from lark.lexer import PatternStr
from lark.parsers.lalr_analysis import Shift

from .._guard import passes_through
from .vocabulary import rule_name

__all__ = [
    "Shift", "PatternStr", "LarkTable", "LarkTerminal", "Conflict", "build", "build_earley", "terminals_of", "table_of",
    "conflicts_of",
]  # fmt: skip


@dataclass(frozen=True)
class LarkTerminal:
    name: str
    regexp: str  # the pattern as a Python regex, without its flags
    flags: tuple[str, ...]
    literal: str | None  # set when the terminal is a plain string with no flags
    priority: int


@dataclass(frozen=True)
class LarkTable:
    states: dict  # LALR state -> {terminal or rule name: (Shift, state) | (Reduce, rule)}
    start_state: Any
    end_state: Any
    callbacks: dict  # rule -> tree-builder callback (children list -> Tree)
    terminals: tuple[LarkTerminal, ...]
    ignore: tuple[str, ...]  # names of the %ignore'd terminals
    rules: tuple  # lark.grammar.Rule objects (origin.name, expansion, …)


@dataclass(frozen=True)
class Conflict:
    """An LALR shift/reduce conflict that Lark resolves as shift."""

    terminal: str  # the lookahead terminal's name
    reduce_rule: str  # the rule that could be reduced instead (namespace stripped)
    reduce_text: str  # that rule, written out: `unclosed: <empty>`
    shift_rules: tuple[str, ...]  # the rules the shift continues, written out with a dot


def build(source: str, *, import_paths: list, cache: Any) -> Lark:
    """The Lark object of one format's grammar (LALR, contextual lexer); Lark's own
    exceptions propagate."""
    return Lark(
        source,
        parser="lalr",
        lexer="contextual",
        import_paths=import_paths,
        cache=cache,
        maybe_placeholders=False,
    )


def build_earley(source: str, *, import_paths: list) -> Lark:
    """The Lark object of a `parser: earley` grammar: Earley with the dynamic lexer,
    an ambiguity resolved by Lark (priorities, then rule order), the same tree shape
    as LALR (no placeholders) and rule positions (`meta.end_pos` of a call, as the
    LALR driver notes it). Lark caches LALR analyses only; an Earley grammar has none."""
    return Lark(
        source,
        parser="earley",
        lexer="dynamic",
        ambiguity="resolve",
        import_paths=import_paths,
        maybe_placeholders=False,
        propagate_positions=True,
        regex=True,
    )


def terminals_of(lark: Lark) -> tuple[tuple[LarkTerminal, ...], tuple[str, ...]]:
    """The grammar's terminals and the names of its %ignore'd ones (any parser)."""
    terminals = tuple(
        LarkTerminal(
            t.name,
            t.pattern.to_regexp(),
            tuple(t.pattern.flags),
            t.pattern.value if isinstance(t.pattern, PatternStr) and not t.pattern.flags else None,
            t.priority,
        )
        for t in lark.terminals
    )
    ignore = getattr(lark, "ignore_tokens", None)
    if ignore is None:
        ignore = lark.lexer_conf.ignore
    return terminals, tuple(ignore)


def _parse_conf(lark: Lark) -> Any:
    """(parse_table, callbacks) through the documented entry point where it works."""
    try:
        conf = lark.parse_interactive("").parser_state.parse_conf
        return conf.parse_table, conf.callbacks
    except Exception as exc:  # noqa: BLE001 - a Lark whose interactive parser differs: the frontend
        if passes_through(exc):
            raise
        parser = lark.parser.parser.parser
        return parser.parse_table, parser.callbacks


def table_of(lark: Lark, start: str = "start") -> LarkTable:
    table, callbacks = _parse_conf(lark)
    terminals, ignore = terminals_of(lark)
    return LarkTable(
        states=table.states,
        start_state=table.start_states[start],
        end_state=table.end_states[start],
        callbacks=callbacks,
        terminals=terminals,
        ignore=ignore,
        rules=tuple(lark.rules),
    )





def _symbol(sym: Any, show: Any) -> str:
    return show(sym.name) if sym.is_term else rule_name(sym.name)


def _written(rule: Any, show: Any, dot: int | None = None) -> str:
    parts = [_symbol(s, show) for s in rule.expansion]
    if dot is not None:
        parts.insert(dot, "•")
    return f"{rule_name(rule.origin.name)}: {' '.join(parts) or '<empty>'}"


def conflicts_of(lark: Lark, show: Any = str, start: str = "start") -> list[Conflict]:
    """The shift/reduce conflicts of the grammar's LALR(1) analysis (Lark would pick
    shift for each, silently). Reduce/reduce collisions are Lark's own GrammarError.
    `show(terminal name)` writes a terminal for the messages."""
    from lark.common import ParserConf
    from lark.parsers.lalr_analysis import LALR_Analyzer

    analysis = LALR_Analyzer(ParserConf(list(lark.rules), {}, [start]))
    analysis.compute_lr0_states()
    analysis.compute_reads_relations()
    analysis.compute_includes_lookback()
    analysis.compute_lookaheads()
    found: dict[tuple[str, str], Conflict] = {}
    for itemset in analysis.lr0_itemsets:
        for la, rules in itemset.lookaheads.items():
            if la not in itemset.transitions:
                continue
            if len(rules) > 1:  # a reduce/reduce tie broken by priority: the winner reduces
                best = max(rules, key=lambda r: r.options.priority or 0)
                rules = {best}
            shifts = tuple(
                sorted(
                    {_written(rp.rule, show, rp.index) for rp in itemset.closure if not rp.is_satisfied and rp.next == la}
                )
            )
            for rule in rules:
                key = (la.name, _written(rule, show))
                old = found.get(key)
                merged = tuple(sorted(set(shifts) | set(old.shift_rules))) if old else shifts
                found[key] = Conflict(la.name, rule_name(rule.origin.name), key[1], merged)
    return sorted(found.values(), key=lambda c: (c.reduce_rule, c.terminal))
