"""What a format's `nest:` header lines say, compiled: the tags that, written inside a
raw value and balanced there, are the value's text (the driver's reading of them is
_lalr/nest.py; docs/formats.md, "Markers inside values").

    // nest: <tool_call> … </tool_call>
    // nest: <function= … </function>
    // nest: <parameter= … </parameter>

Which closer is a value's own (`</parameter>`, where `</function>` and `</tool_call>`
close what holds the value) is read off the LALR table, not declared: it is a closer
that the parser shifts right after the value's terminal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import regex

from . import vocabulary
from .tables import Shift
from .vocabulary import rule_name


@dataclass(frozen=True)
class Nest:
    tags: Any  # compiled: any declared opener or closer
    closer_of: dict  # tag text -> the closer it needs (an opener), or None (a closer)
    own: frozenset  # the closers that end a raw value, as its grammar says
    terminals: frozenset  # the raw value terminals (the whole of a `value` rule)
    after: tuple  # the terminals the parser shifts right after a raw value (its close tags)
    # The closers of what holds a value (`</invoke>`, `</tool_call>`, a block's close):
    # declared closers, not the value's own, that the parser takes after a value's close
    # (not GLM's `</arg_key>`).
    holders: frozenset = frozenset()
    closers: Any = None  # compiled: any of own and holders, longest first

    def closes_value(self, tag: str) -> bool:
        """Whether the grammar reads `tag` as a raw value's close (any spelling it takes:
        the shared invoke grammar's `</parameter>`, `</param>`, `</steptml:parameter>`)."""
        return any(t.literal == tag or (t.literal is None and t.pattern.fullmatch(tag)) for t in self.after)


def compile_nest(nests: tuple, callbacks: dict, terminals: dict, states: dict) -> Nest | None:
    """The Nest of a grammar, or None when it declares no pairs or has no raw values."""
    rules = [
        rule for rule in callbacks
        if rule_name(rule.tree_name) == vocabulary.VALUE
        and len(rule.expansion) == 1
        and rule.expansion[0].name in terminals
        and terminals[rule.expansion[0].name].literal is None
    ]  # fmt: skip
    raw = frozenset(rule.expansion[0].name for rule in rules)
    if not nests or not raw:
        return None
    # The terminals the parser shifts right after a raw value (once its rule is reduced,
    # from the state that shifted its terminal): its close tags.
    origins = {rule.origin.name for rule in rules}
    after = {
        _past_repeat(states, state, row[origin][1])
        for state, row in states.items() if any(name in raw and row[name][0] is Shift for name in row)
        for origin in origins if origin in row and row[origin][0] is Shift
    }  # fmt: skip
    shifted = {
        terminals[name] for state in after for name, action in states[state].items()
        if name in terminals and action[0] is Shift
    }  # fmt: skip

    def closes_value(closer: str) -> bool:
        return any(t.literal == closer or (t.literal is None and t.pattern.fullmatch(closer)) for t in shifted)

    closer_of: dict = {}
    for opener, closer in nests:
        closer_of[opener] = closer
        closer_of.setdefault(closer, None)
    # An opener that ends in a letter is whole only before a character no name goes on
    # with (`<invoke` in `<invoke name=…>`, not `<invoked>`). Longest first, so that a tag
    # that begins another is not taken for it.
    parts = [
        regex.escape(tag) + (r"(?![\w:\-])" if closer_of[tag] is not None and (tag[-1].isalnum() or tag[-1] == "_") else "")
        for tag in sorted(closer_of, key=len, reverse=True)
    ]
    own = frozenset(c for _, c in nests if closes_value(c))
    # The states after a value's close (its close shifted, or left out: `unclosed`
    # reduced on what comes next) and the terminals they take.
    post = {
        action[1] for state in after for name, action in states[state].items()
        if action[0] is Shift and terminals.get(name) in shifted
    } | after  # fmt: skip
    taken = {terminals[name] for state in post for name in states[state] if name in terminals}
    holders = frozenset(
        c for c, opener in closer_of.items()
        if opener is None and c not in own
        and any(t.literal == c or (t.literal is None and t.pattern.fullmatch(c)) for t in taken)
    )  # fmt: skip
    closers = regex.compile("|".join(regex.escape(c) for c in sorted(own | holders, key=len, reverse=True)))
    return Nest(regex.compile("|".join(parts)), closer_of, own, raw, tuple(shifted), holders, closers)


def _past_repeat(states: dict, state: Any, target: Any) -> Any:
    """The state after a value, where its rule is an item of a repeat (`(value |
    element)*`, Cohere cofl's element: lark's helper rule `__star: value | __star value`):
    the state the repeat goes on in once the value is reduced into it, which takes the
    element's close tag; `target` itself (the value's goto) otherwise."""
    actions = states[target].values()
    rules = {action[1] for action in actions}
    if len(rules) != 1 or any(action[0] is Shift for action in actions):
        return target
    rule = next(iter(rules))
    names = [e.name for e in rule.expansion]
    if not rule.origin.name.startswith("__") or names[-1] != vocabulary.VALUE or len(names) > 2:
        return target
    if len(names) == 1:  # (`__star: value`: the repeat's first item, from this state)
        goto = states[state].get(rule.origin.name)
        return goto[1] if goto is not None and goto[0] is Shift else target
    return state  # (`__star: __star value`: this state was reached by the repeat, and goes on in it)
