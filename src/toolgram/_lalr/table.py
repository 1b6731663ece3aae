"""Facts read off a format's LALR table: pure functions over Compiled and a state
stack (step, simulate, the closing plans, whether a call is reduced or left open).
The driver, its recovery moves (close.py), salvage and the fast paths
all read the table through these."""

from __future__ import annotations

import re
from typing import Any

from .._grammar.tables import Shift
from .._grammar.registry import Compiled
from .._grammar.vocabulary import rule_name
from .._grammar.words import lazy

# Closing a frame that the model left open: at most this many missing tokens.
_MAX_VIRTUAL = 6

def _left_open(c: Compiled, stack: list, plan: list[str]) -> bool:
    """Whether supplying `plan` at `stack` completes a call left open: a marker is
    supplied, or a missing close tag assumed (an `unclosed` rule), before the first
    call is reduced (the first supplied token's lookahead reduces one that the text
    finished)."""
    state = {"unclosed": False, "call": False}

    def reduced(rule: Any) -> bool:
        name = rule.origin.name
        if name in c.call_rules:  # (the rules that hold whole calls: where one is reduced, calls end)
            state["call"] = True
            return False  # (stop there)
        if rule_name(name) == "unclosed":
            state["unclosed"] = True
        return True

    stack = list(stack)
    for i, term in enumerate([*plan, "$END"]):
        step(c, stack, term, reduced)
        if state["call"]:
            return i > 0 or state["unclosed"]
    return False


def _reduces_call(c: Compiled, stack: list, term: str) -> bool:
    """Whether the table at `stack`, taking `term`, reduces a call rule first thing."""
    seen: list = []

    def reduced(rule: Any) -> bool:
        if rule.origin.name in c.call_rules:
            seen.append(rule)
            return False  # (stop there: that is all we ask)
        return True

    peek(c, stack, term, reduced)
    return bool(seen)


def goes_on(c: Compiled, stack: list, term: str) -> bool:
    """Whether the table `c` at `stack` takes `term` without reducing a call rule
    first: it goes on with the call open there (the marker that opens its arguments),
    where one taken after a call is reduced begins what comes after it (the next call)."""
    return peek(c, stack, term, lambda rule: rule.origin.name not in c.call_rules)


def takes(c: Compiled, stack: list, term: str) -> bool:
    """Whether the table `c` at `stack` takes `term` ("$END": can finish): simulate's
    answer, without its copy of the stack. First told by the top state alone where
    every stack under it takes `term` (see _sure), or else by the state the first
    reduction goes to (the stack says which): the driver asks at each token a
    reduction starts from, and the simulation was a tenth of a long reading's time.
    Else remembered per grammar by the states it looked at: a value nested a thousand
    levels deep asks the same question at each level, and the answer depends on the
    top of the stack that the reductions reach down to, no deeper (so an answer found
    for those states is the answer for any stack that has them on top)."""
    sure = c.derived.get("sure_takes")
    if sure is None:
        sure = c.derived["sure_takes"] = {}
    told = sure.get((stack[-1], term))
    if told is None:
        told = _sure(c, stack[-1], term, sure, set())
    if told:
        return True
    action = c.states[stack[-1]].get(term)
    if action is not None and action[0] is not Shift and len(action[1].expansion) < len(stack):
        # (A Qwen3-Coder call left open, at the start of the reply or after another:
        # only the second is sure to take the next `<function=`, and the stack says.)
        rule = action[1]
        goto = c.states[stack[-1 - len(rule.expansion)]].get(rule.origin.name)
        if goto is not None and _sure(c, goto[1], term, sure, set()):
            return True
    memo = c.derived.get("takes")
    if memo is None:
        memo = c.derived["takes"] = ({}, {})
    depths, answers = memo
    reach = depths.get((term, stack[-1]))
    if reach is not None:
        n = len(stack)
        for d in reach:
            if d <= n:
                found = answers.get((term, *stack[n - d :]))
                if found is not None:
                    return found
    found, low = _peek_reach(c, stack, term)
    if len(answers) >= _TAKES:
        depths.clear()  # (a bound: a grammar's stacks are few, but replies are many)
        answers.clear()
    d = len(stack) - low
    reach = depths.setdefault((term, stack[-1]), [])
    if d not in reach:
        reach.append(d)
    answers[(term, *stack[low:])] = found
    return found


# takes remembers so many answers per grammar.
_TAKES = 4096


def shifts_plain(c: Compiled, stack: list, term: str) -> bool:
    """peek(c, stack, term) reducing no empty rule (no left-out tag supplied): the
    driver asks it where a raw value's pattern matches nothing at a tag, at each value
    of a call whose closes were left out. Remembered per grammar as takes' answers are
    (by the states the walk looked at, from the top down)."""
    memo = c.derived.get("shifts_plain")
    if memo is None:
        memo = c.derived["shifts_plain"] = ({}, {})
    depths, answers = memo
    n = len(stack)
    reach = depths.get((term, stack[-1]))
    if reach is not None:
        for d in reach:
            if d <= n:
                found = answers.get((term, *stack[n - d :]))
                if found is not None:
                    return found
    found, low = _walk(c, stack, term, _not_empty)
    if len(answers) >= _TAKES:
        depths.clear()
        answers.clear()
    d = n - low
    reach = depths.setdefault((term, stack[-1]), [])
    if d not in reach:
        reach.append(d)
    answers[(term, *stack[low:])] = found
    return found


def _not_empty(rule: Any) -> bool:
    return bool(rule.expansion)


def _peek_reach(c: Compiled, stack: list, term: str) -> tuple[bool, int]:
    """peek(c, stack, term), and the lowest index of `stack` it looked at: the answer
    is the same for any stack whose states from there up are these (takes' memo)."""
    return _walk(c, stack, term, None)


def _walk(c: Compiled, stack: list, term: str, reduced: Any) -> tuple[bool, int]:
    """step()'s answer on a copy of `stack`, without copying it, and the lowest index of
    `stack` it looked at: the reductions pop into the stack below an index and push
    onto a short list above it. A copy costs the depth of the stack, and the driver
    asks this at each token: a value nested thousands of levels deep made each token
    cost thousands of states (the square of the reply). With `reduced`, False at the
    first reduction it refuses (it may also count them: _left_out_count)."""
    states = c.states
    end_state = c.end_state
    base = len(stack)
    low = base - 1
    top: list = []
    while True:
        if top:
            state = top[-1]
        else:
            state = stack[base - 1]
            low = min(low, base - 1)
        if term == "$END" and state == end_state:
            return True, low
        action = states[state].get(term)
        if action is None:
            return False, low
        kind, arg = action
        if kind is Shift:
            return True, low
        if reduced is not None and not reduced(arg):
            return False, low
        size = len(arg.expansion)
        if size:
            mine = min(size, len(top))
            if mine:
                del top[-mine:]
            base -= size - mine
        if top:
            under = top[-1]
        else:
            under = stack[base - 1]
            low = min(low, base - 1)
        top.append(states[under][arg.origin.name][1])


def _sure(c: Compiled, state: Any, term: str, sure: dict, on_way: set) -> bool:
    """Whether the table takes `term` at `state` whatever the stack under it (a stack
    the table built: each state on it reached from the one below by its symbol):
    it shifts `term` there, or it reduces, and at each state the reduction may go to
    (the goto from any state the rule's length of steps back) it is sure again.
    False is only "not sure": peek tells then. (A cycle of reductions, never in a
    table Lark built, is not followed: not sure.) Remembered in `sure`."""
    key = (state, term)
    told = sure.get(key)
    if told is not None:
        return told
    if key in on_way:
        return False
    told = False
    if term == "$END" and state == c.end_state:
        told = True
    else:
        action = c.states[state].get(term)
        if action is not None and action[0] is Shift:
            told = True
        elif action is not None:
            rule = action[1]
            name = rule.origin.name
            on_way.add(key)
            told = True
            for under in _under(c, state, len(rule.expansion)):
                goto = c.states[under].get(name)
                if goto is None or not _sure(c, goto[1], term, sure, on_way):
                    told = False
                    break
            on_way.discard(key)
    if told or not on_way:
        sure[key] = told  # (a False found on a cycle's way is kept only at its top)
    return told


def _under(c: Compiled, state: Any, steps: int) -> frozenset:
    """The states a stack with `state` on top may hold `steps` places under it: those
    from which that many shifts and gotos lead to `state` (remembered per grammar)."""
    memo = c.derived.get("under")
    if memo is None:
        back: dict = {}
        for s, row in c.states.items():
            for kind, arg in row.values():
                if kind is Shift:
                    back.setdefault(arg, set()).add(s)
        # ("back" before "under": a thread that finds "under" reads "back" at once;
        # published the other way round, one parsing beside this one met a KeyError.)
        c.derived["back"] = back
        memo = c.derived["under"] = {}
    key = (state, steps)
    found = memo.get(key)
    if found is None:
        found = frozenset([state])
        back = c.derived["back"]
        for _ in range(steps):
            found = frozenset(p for s in found for p in back.get(s, ()))
        memo[key] = found
    return found


def peek(c: Compiled, stack: list, term: str, reduced: Any = None) -> bool:
    """step()'s answer on a copy of `stack`, without its copy (see _walk); with
    `reduced`, False at the first reduction it refuses."""
    return _walk(c, stack, term, reduced)[0]


def simulate(c: Compiled, stack: list, term: str) -> list | None:
    """A copy of the state stack after the table `c` takes `term` ("$END": after
    finishing), or None when it rejects it (see Driver._simulate)."""
    stack = list(stack)
    return stack if step(c, stack, term) else None


def step(c: Compiled, stack: list, term: str, reduced: Any = None) -> bool:
    """Feed `term` ("$END": finish) to the state stack, in place: True, or False
    when the table rejects it. `reduced(rule)` is told each rule it reduces, before
    the reduction, and may refuse it (False: the step fails there)."""
    states = c.states
    end_state = c.end_state
    while True:
        if term == "$END" and stack[-1] == end_state:
            return True
        action = states[stack[-1]].get(term)
        if action is None:
            return False
        kind, arg = action
        if kind is Shift:
            stack.append(arg)
            return True
        if reduced is not None and not reduced(arg):
            return False
        size = len(arg.expansion)
        if size:
            del stack[-size:]
        stack.append(states[stack[-1]][arg.origin.name][1])


def closing_plan(c: Compiled, stack: list, ends: tuple) -> list[str] | None:
    """The missing literals that complete a frame whose parser is at `stack`, or
    None: the format's end markers (`ends`) first, then closing brackets and tags,
    then anything else. Remembered per grammar for a stack no deeper than
    _PLAN_STACK (the plan is the table's answer for the whole stack): each region a
    storm of one broken call fails in asks it at the same stack, often more than once
    (the failure, the salvage's points), and working it out simulates the table for
    each terminal of each state on the way."""
    key = (tuple(stack), tuple(ends)) if len(stack) <= _PLAN_STACK else None
    if key is not None:
        memo = c.derived.get("closing_plans")
        if memo is None:
            memo = c.derived["closing_plans"] = {}
        found = memo.get(key, _UNKNOWN)
        if found is not _UNKNOWN:
            return None if found is None else list(found)

    def best_first(allowed):
        literals = [t for t in allowed if t.literal is not None]
        literals.sort(key=lambda t: (t.literal not in ends, not _closes(t.literal)))
        return literals

    plan = _plan(c, stack, "$END", best_first)
    if key is not None:
        if len(memo) >= _PLANS:
            memo.clear()  # (a bound: a grammar's frames are few, but replies are many)
        memo[key] = None if plan is None else tuple(plan)
    return plan


# closing_plan remembers so many plans per grammar, of stacks so deep at most.
_PLANS = 512
_PLAN_STACK = 64
_UNKNOWN = object()


def _plan(c: Compiled, stack: list, goal: str, usable) -> list[str] | None:
    """The literals to supply, in order, after which the table `c` at `stack` takes
    `goal` ("$END": the frame is complete), or None when none get there. `usable`
    picks, best first, which of a state's allowed terminals may be supplied."""
    plan = []
    # (Never back to a state the plan was in: a closer the grammar takes again and
    # again, `"</arg_value>"+`, would be supplied until the plan ran out, whichever
    # of the closers tied first, by the order of a set.)
    seen = {tuple(stack)}
    for _ in range(_MAX_VIRTUAL + 1):
        if simulate(c, stack, goal) is not None:
            return plan
        for t in usable(_fewest_left_out(c, stack)):
            after = simulate(c, stack, t.name)
            if after is not None and tuple(after) not in seen:
                stack = after
                seen.add(tuple(after))
                plan.append(t.name)
                break
        else:
            return None
    return None


# The empty rules that stand for a tag the model left out (vocabulary.RULES).
_LEFT_OUT = frozenset({"unclosed", "unopened"})


def _fewest_left_out(c: Compiled, stack: list) -> list:
    """The top state's allowed terminals, those the table takes after the fewest
    reductions of `unclosed` or `unopened` first (a tag read as left out), then in
    the grammar's order (Compiled.allowed). Supplied at the end of a cut reply, the
    close of what is open, `</arg_value>` after a value, comes before a close that
    first reads that one as left out, `</tool_call>`: the value keeps what was written
    (a left-out close also drops the whitespace before it: builder._param_value).
    (Once the row's order, which was Lark's set order: the plan changed by process.)"""
    allowed = c.allowed[stack[-1]]
    if len(allowed) < 2:
        return list(allowed)

    counts = _left_out_counts(c, stack, [t.name for t in allowed])
    return sorted(allowed, key=lambda t: counts[t.name])


def _left_out_counts(c: Compiled, stack: list, terms: list) -> dict:
    """_left_out_count(c, stack, term) for each of `terms`, in one walk down the stack
    for those whose actions agree: at each state, the terminals that take the same
    reduction go on together (the same goto, the same states under it), and part only
    where their actions differ. Asked one by one, each walked the whole stack: a value
    nested a thousand levels deep, cut, walked it once per terminal of its top state
    (issue 17: cohere's deep value, a seventh of its parse)."""
    left_out = c.derived.get("left_out_rules")
    if left_out is None:
        left_out = c.derived["left_out_rules"] = frozenset(
            rule.origin.name for rule in c.callbacks if rule_name(rule.origin.name) in _LEFT_OUT
        )
    states = c.states
    end_state = c.end_state
    counts: dict = {}
    # (terms, the states pushed above stack[:base], base, count so far), as _walk keeps them
    work = [(list(dict.fromkeys(terms)), [], len(stack), 0)]
    while work:
        group, top, base, count = work.pop()
        while True:
            state = top[-1] if top else stack[base - 1]
            row = states[state]
            action = row.get(group[0])
            if action is not None and action[0] is not Shift and state != end_state:
                rule = action[1]
                for term in group:
                    other = row.get(term)
                    if other is None or other[1] is not rule or other[0] is not action[0]:
                        break
                else:
                    # (The whole group takes this reduction, as at most levels of a deep
                    # stack: taken in place.)
                    base, name = _reduce_in(states, stack, top, base, rule)
                    if name in left_out:
                        count += 1
                    continue
            ways: dict = {}
            for term in group:
                action = row.get(term)
                if action is None or action[0] is Shift or (term == "$END" and state == end_state):
                    counts[term] = count
                    continue
                ways.setdefault(id(action[1]), (action[1], []))[1].append(term)
            if not ways:
                break
            last = len(ways) - 1
            for k, (rule, same) in enumerate(ways.values()):
                # (The last way goes on in this loop, on this copy; the others from copies.)
                t = top if k == last else list(top)
                b, name = _reduce_in(states, stack, t, base, rule)
                more = count + (name in left_out)
                if k == last:
                    group, top, base, count = same, t, b, more
                else:
                    work.append((same, t, b, more))
    return counts


def _reduce_in(states: Any, stack: list, top: list, base: int, rule: Any) -> tuple[int, str]:
    """_left_out_counts' reduce by rule: its states popped from top (the walk's own
    states), then from the parser's stack below base, without copying it; the goto
    pushed on top. The new base, and the rule's name."""
    size = len(rule.expansion)
    if size:
        mine = min(size, len(top))
        if mine:
            del top[-mine:]
        base -= size - mine
    name = rule.origin.name
    top.append(states[top[-1] if top else stack[base - 1]][name][1])
    return base, name


def _left_out_count(c: Compiled, stack: list, term: str) -> int:
    """How many reductions of `unclosed` or `unopened` peek(c, stack, term) makes on the
    way (to its shift, or to where the table refuses). Counted by the rule's name,
    told once per grammar: a call left open ten levels deep reduces one at each level
    for each terminal asked (thousands of reductions, a name parsed at each)."""
    left_out = c.derived.get("left_out_rules")
    if left_out is None:
        left_out = c.derived["left_out_rules"] = frozenset(
            rule.origin.name for rule in c.callbacks if rule_name(rule.origin.name) in _LEFT_OUT
        )
    count = 0

    def counted(rule: Any) -> bool:
        nonlocal count
        if rule.origin.name in left_out:
            count += 1
        return True

    _walk(c, stack, term, counted)
    return count


def _closes(literal: str) -> bool:
    return literal[:1] in ")]}" or literal.startswith("</") or "end" in literal.lower()


# A terminal named as what ends something (`FUNCTION_END`, `_PARAM_CLOSE`, `_TURN_END`,
# `EOT`), its namespace left out.
_ENDING_NAME = lazy(re.compile, r"(?:^|_)(?:END|CLOSE|TURN|EOT|EOM)(?:_|$)")


def ends_something(terminal: Any, text: str, ends: tuple) -> bool:
    """Whether a token read from the text, `text` of `terminal` (its `name` and
    `literal`), ends something rather than begins it: a literal close tag
    (`</parameter>`, `/>`), a closing bracket, a literal with `end` in it
    (`<|tool_call_end|>`), the format's end marker, or a terminal named so
    (`INVOKE_CLOSE`, `_TURN_END` for `<|im_end|>` or GLM's `<|observation|>`).
    A pattern's text is not looked into (a value's text may hold `</div>`). Where
    the reply ends right after one, what came before it is whole (see cut_value)."""
    if not text.strip():
        return False  # (a token the driver supplied: nothing ended it)
    literal = getattr(terminal, "literal", None)
    if literal is not None:
        if literal in ends or literal.startswith("</") or literal == "/>" or (len(literal) <= 2 and literal[0] in ")]}"):
            return True
        if "end" in literal.lower() and not literal[:1].isalnum():
            return True  # (`<|tool_call_end|>`, `<|im_end|>`: a marker, not a word)
    elif text.strip() in ends:
        return True
    name = getattr(terminal, "name", "") or ""
    return _ENDING_NAME.search(name.rpartition("__")[2]) is not None


def expected(c: Compiled, stack: list) -> list[str]:
    """The terminals the table `c` at `stack` takes next, by name ("$END" last, when
    the frame could end there): its top state's row, less the terminals that row lists
    only for a reduction that then fails (merged LALR lookaheads; see simulate).
    Literal terminals first (by their text), then patterns (by name). Read-only: for
    telling what a failed region needed (toolgram explain), never on parse()'s path."""
    row = c.states[stack[-1]]
    names = [name for name in row if name in c.terminals and simulate(c, stack, name) is not None]
    names.sort(key=lambda n: (c.terminals[n].literal is None, c.terminals[n].literal or n))
    if "$END" in row and simulate(c, stack, "$END") is not None:
        names.append("$END")
    return names


def skip_ignored(c: Compiled, buf: str, pos: int, blanks: bool = False) -> int:
    """Where the next token could start at `pos`: past the text the grammar
    %ignores (whitespace, usually), a whole token at a time, as the lexer skips it.
    `blanks`: past str.isspace characters too, one at a time, as close() skips them."""
    n = len(buf)
    while pos < n:
        if blanks and buf[pos].isspace():
            pos += 1
            continue
        for t in c.ignore:
            m = t.pattern.match(buf, pos)
            if m and m.end() > pos:
                pos = m.end()
                break
        else:
            return pos
    return pos


def plain_starting(allowed: Any, firsts: Any, ch: str, skip: Any = ()) -> tuple | None:
    """The terminals of a state's `allowed` (in its order, those named in `skip` left
    out) whose match may begin with `ch`, when each is a literal or a plain terminal
    (firsts: the driver's _Firsts); None when one that is neither may (its reading is
    _lex's). Driver._Plain remembers it per character; tagread.candidates asks it with
    the terminals its reader passes over."""
    found = []
    for t in allowed:
        if t.name in skip:
            continue
        if t.literal:
            if t.literal.startswith(ch):
                found.append(t)
            continue
        first = None if t.literal is not None else firsts[t.name]  # (an empty literal: _lex's)
        if first is None:
            return None
        if first[ch]:
            found.append(t)
    return tuple(found)
