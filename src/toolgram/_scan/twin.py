"""Twin candidates: a later candidate of a marker whose driver reads that marker's
region as an earlier candidate's did, token for token, tree for tree (Apriel's
`<tool_calls>` block is Jamba's, written out again in apriel.lark beside its
`[BEGIN FINAL RESPONSE]` markers). Where the earlier one's reading was no call, the
later one's is none either, and the same failure, told second (note_failure tells
the first on a tie): RegionReader._drop_failing does not give it a driver.

Twins are told from the grammars, not from the formats' names: from the state the
marker's token leads to, the two LALR tables act alike (the same tokens allowed in the
same order, the same shifts, the same reductions by rules that build the same trees,
the same states reached), and the formats' keys that the driver, the builder and the
mention rules read are equal. What may still differ is the later format's own
literals and start markers that the earlier one lacks (apriel's `[END FINAL
RESPONSE]`: a value's text cut at it, an own marker, a longer literal near the text's
end): twin() gives them, and the region's reader skips the twin only where none of
them is written in the text from the region's start on, and the text runs on past
where the earlier driver stopped by more than the later one's closers may look at
(region._twin_read).
"""

from __future__ import annotations

from typing import Any

from .._grammar.registry import Format
from .._grammar.tables import Shift

# The format keys a region's reading depends on, besides the grammar (starts and the
# literals: the text test; name, order, title, reasoning and the like: not read there).
_KEYS = (
    "ends", "anchor", "line_starts", "quiet", "args_key", "code_tool", "offered_only",
    "needs_tools", "parser", "framing", "repeated", "nests", "stream_call", "stream_param",
    "stream_sep", "stream_stop", "stream_json", "stream_json_list", "stream_python", "stream_pycall", "stream_loose", "stream_attr", "end_of_turn",
)  # fmt: skip


def twin(a: Format, b: Format, marker: str) -> tuple[str, ...] | None:
    """None where b's driver at `marker` may read otherwise than a's; else the texts
    whose presence in the region's text may still make them differ (b's literals and
    start markers that are not a's). Worked out once per pair and marker (kept in b's
    compiled.derived, so it dies with the format)."""
    known = b.compiled.derived.setdefault("twin", {})
    key = (a.name, marker)
    got = known.get(key)
    if got is None or got[0] is not a:
        got = known[key] = (a, _twin(a, b, marker))
    return got[1]


def _twin(a: Format, b: Format, marker: str) -> tuple[str, ...] | None:
    if a is b or a.parser != "lalr" or b.parser != "lalr":
        return None
    if any(getattr(a, k) != getattr(b, k) for k in _KEYS):
        return None
    from . import fastpath as _frame  # (the builder reads the frame's kind: Builder.json_named)

    if type(_frame.frame_of(a)) is not type(_frame.frame_of(b)):
        return None
    ca, cb = a.compiled, b.compiled
    if ca.nest is not None or cb.nest is not None or ca.earley is not None or cb.earley is not None:
        return None
    if ca.ignore != cb.ignore or ca.json_text != cb.json_text or ca.call_text != cb.call_text or ca.loose_text != cb.loose_text or ca.call_rules != cb.call_rules:
        return None
    # Every terminal of a's is b's: b's others (literals only) are the text test's.
    extra = []
    for name, t in cb.terminals.items():
        ta = ca.terminals.get(name)
        if ta is None:
            if t.literal is None:
                return None  # (a pattern of b's alone: it may match anywhere)
            extra.append(t.literal)
        elif ta != t:
            return None
    if any(name not in cb.terminals for name in ca.terminals):
        return None
    if not _same_tables(ca, cb, marker):
        return None
    extra.extend(s for s in b.starts if s and s not in a.starts)
    return tuple(dict.fromkeys(extra))


def _rule_key(rule: Any) -> tuple:
    return (rule.origin.name, rule.tree_name, rule.expand1, rule.keep_all_tokens, tuple((s.name, s.is_term, s.filter_out) for s in rule.expansion))


def _same_tables(ca: Any, cb: Any, marker: str) -> bool:
    """Whether the two tables act alike from the states their start states shift the
    marker's token to: a pairing of their states, each pair with the same actions (in
    the start states, only the marker's shift and the gotos of the rules reduced in
    pairs reached)."""
    sa, sb = ca.start_state, cb.start_state
    ta = next((t for t in ca.allowed.get(sa, ()) if t.literal == marker), None)
    tb = next((t for t in cb.allowed.get(sb, ()) if t.literal == marker), None)
    if ta is None or tb is None or ta != tb:
        return False
    first_a, first_b = ca.states[sa].get(ta.name), cb.states[sb].get(tb.name)
    if first_a is None or first_b is None or first_a[0] is not Shift or first_b[0] is not Shift:
        return False
    pair: dict = {sa: sb}
    back: dict = {sb: sa}
    todo = []

    def meet(x: Any, y: Any) -> bool:
        if x in pair or y in back:
            return pair.get(x, None) == y and back.get(y, None) == x
        pair[x], back[y] = y, x
        todo.append((x, y))
        return True

    if not meet(first_a[1], first_b[1]):
        return False
    reduced: set = set()
    while todo:
        x, y = todo.pop()
        if (x == ca.end_state) != (y == cb.end_state) or ca.accepts_end.get(x) != cb.accepts_end.get(y):
            return False
        if tuple(ca.allowed.get(x, ())) != tuple(cb.allowed.get(y, ())):
            return False
        row_a, row_b = ca.states[x], cb.states[y]
        if row_a.keys() != row_b.keys():
            return False
        for sym, (act, arg) in row_a.items():
            act_b, arg_b = row_b[sym]
            if act is not act_b:
                return False
            if act is Shift:
                if not meet(arg, arg_b):
                    return False
            else:
                if _rule_key(arg) != _rule_key(arg_b):
                    return False
                reduced.add(arg.origin.name)
    # A reduction may bare the start state: its gotos for those rules pair too (and lead
    # to states already paired, or to the end state's pair).
    row_a, row_b = ca.states[sa], cb.states[sb]
    for name in reduced:
        ga, gb = row_a.get(name), row_b.get(name)
        if (ga is None) != (gb is None):
            return False
        if ga is None:
            continue
        if ga[0] is not gb[0] or ga[0] is not Shift:
            return False
        if not meet(ga[1], gb[1]):
            return False
    while todo:  # (a goto of the start state's reached a state not yet paired)
        x, y = todo.pop()
        if (x == ca.end_state) != (y == cb.end_state) or ca.states[x].keys() != cb.states[y].keys():
            return False
        if any(act is Shift or cb.states[y][s][0] is Shift or _rule_key(arg) != _rule_key(cb.states[y][s][1]) for s, (act, arg) in ca.states[x].items()):
            return False  # (kept simple: only reductions, as the end state's $END)
    return True
