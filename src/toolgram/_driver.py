"""An incremental LALR run of one format's grammar over one call region.

We drive Lark's parse table ourselves instead of Lark's InteractiveParser: the
table and the tree-building callbacks are Lark's, but lexing is ours because
 - a region ends where the grammar is satisfied, not at the end of the text;
 - when more text may still arrive, a token that touches the end of the buffer
   is not final (`1500` may become `1500.0`, `</tool_ca` may become a marker):
   we wait instead of guessing, which keeps streaming equal to one-shot parsing;
 - JSON and Python-value payloads are delimited by a bracket scanner (grammars
   cannot count brackets), then decoded by json.loads.
"""

from __future__ import annotations

from lark.parsers.lalr_analysis import Shift

from . import _repair
from ._registry import Compiled, Format

WAIT, DONE, FAIL = "wait", "done", "fail"


class Tok:
    """A token: lighter than lark.Token, which the tree callbacks don't need."""

    __slots__ = ("type", "value", "start_pos", "end_pos")

    def __init__(self, type: str, value: str, start_pos: int, end_pos: int) -> None:
        self.type = type
        self.value = value
        self.start_pos = start_pos
        self.end_pos = end_pos

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"Tok({self.type}, {self.value!r})"

# Closing a frame that the model left open: at most this many missing tokens.
_MAX_VIRTUAL = 6


class Driver:
    __slots__ = ("fmt", "c", "start", "pos", "stack", "values", "status", "end", "tree", "repairs", "reason")

    def __init__(self, fmt: Format, start: int) -> None:
        self.fmt = fmt
        self.c: Compiled = fmt.compiled
        self.start = start
        self.pos = start
        self.stack = [self.c.start_state]
        self.values: list = []
        self.status = WAIT
        self.end = start
        self.tree = None
        self.repairs: list[str] = []
        self.reason = ""

    # -- the loop ---------------------------------------------------------
    def run(self, buf: str, final: bool, at_marker) -> str:
        """Advance as far as the text allows. `at_marker(buf, pos)` tells whether a
        call marker (of any format) starts at pos: True, False, or None when the
        text ends inside what could still become one."""
        if self.status != WAIT:
            return self.status
        c = self.c
        while True:
            state = self.stack[-1]
            allowed = c.allowed[state]
            if not allowed and c.accepts_end[state]:
                return self._finish(self.pos)
            tok = self._lex(buf, final, allowed)
            if tok is WAIT:
                return WAIT
            if tok is None:
                if c.accepts_end[state] and self._ends_here():
                    return self._finish(self.pos)
                return self._close(buf, final, at_marker)
            term, end = tok
            if not self._feed(Tok(term, buf[self.pos : end], self.pos, end)):
                return self._fail(f"unexpected {_snippet(buf, self.pos)}")
            self.pos = end

    # -- lexing -----------------------------------------------------------
    def _lex(self, buf: str, final: bool, allowed):
        """The best token at self.pos: (terminal name, end), None, or WAIT."""
        n = len(buf)
        pos = self.pos
        while True:
            if pos >= n:
                return None if final else WAIT
            best = None
            best_len = -1
            best_prio = None
            grow = False
            for t in allowed:
                if best_prio is not None and t.priority < best_prio:
                    break
                name = t.name
                if t.literal is not None:
                    lit = t.literal
                    if buf.startswith(lit, pos):
                        end = pos + len(lit)
                    else:
                        if not final and n - pos < len(lit) and lit.startswith(buf[pos:]):
                            grow = True
                        continue
                elif name == "JSON":
                    if buf[pos] not in "{[":
                        continue
                    end = _repair.value_end(buf, pos)
                    if end is None:
                        if not final:
                            return WAIT
                        end = n  # truncated: the decoder closes it
                elif name == "PYVALUE":
                    if buf[pos].isspace() or buf[pos] in ",)]":
                        continue
                    end = _repair.scalar_end(buf, pos, ",)")
                    if end >= n and not final:
                        grow = True
                    while end > pos and buf[end - 1].isspace():
                        end -= 1
                    if end == pos:
                        continue
                else:
                    m = t.pattern.match(buf, pos, partial=not final)
                    if m is None:
                        continue
                    end = m.end()
                    if not final and end >= n:
                        grow = True
                    if m.partial or end == pos:
                        continue
                if end - pos > best_len:
                    best, best_len, best_prio = name, end - pos, t.priority
            if grow:
                return WAIT
            if best is not None:
                self.pos = pos
                return best, pos + best_len
            # Nothing fits: skip %ignore'd text, but the region never ends inside it.
            skipped = False
            for t in self.c.ignore:
                m = t.pattern.match(buf, pos)
                if m and m.end() > pos:
                    if m.end() >= n and not final:
                        return WAIT
                    pos = m.end()
                    skipped = True
                    break
            if not skipped:
                return None

    # -- the parse table --------------------------------------------------
    def _feed(self, token: Tok) -> bool:
        stack, values = self.stack, self.values
        states, callbacks = self.c.states, self.c.callbacks
        while True:
            try:
                action, arg = states[stack[-1]][token.type]
            except KeyError:
                return False
            if action is Shift:
                stack.append(arg)
                values.append(token)
                return True
            size = len(arg.expansion)
            if size:
                children = values[-size:]
                del stack[-size:]
                del values[-size:]
            else:
                children = []
            values.append(callbacks[arg](children))
            stack.append(states[stack[-1]][arg.origin.name][1])

    def _finish(self, end: int) -> str:
        stack, values = self.stack, self.values
        states, callbacks = self.c.states, self.c.callbacks
        end_state = self.c.end_state
        while stack[-1] != end_state:
            try:
                action, rule = states[stack[-1]]["$END"]
            except KeyError:
                return self._fail("the call ended too early")
            if action is Shift:  # pragma: no cover - $END is never shifted
                break
            size = len(rule.expansion)
            children = values[-size:] if size else []
            if size:
                del stack[-size:]
                del values[-size:]
            values.append(callbacks[rule](children))
            stack.append(states[stack[-1]][rule.origin.name][1])
        self.tree = values[-1] if values else None
        self.end = end
        self.status = DONE
        return DONE

    def _ends_here(self) -> bool:
        """Whether the region can end here. An LALR row lists $END for some states
        where it only fails after reducing (merged lookaheads: a call inside a list
        shares its states with a call at the top of a grammar whose end marker is
        optional), so follow the reductions on a copy of the state stack."""
        states, stack = self.c.states, self.stack[:]
        while stack[-1] != self.c.end_state:
            action, rule = states[stack[-1]].get("$END", (None, None))
            if rule is None or action is Shift:
                return False
            if rule.expansion:
                del stack[-len(rule.expansion) :]
            stack.append(states[stack[-1]][rule.origin.name][1])
        return True

    def _close(self, buf: str, final: bool, at_marker) -> str:
        """The frame is open but nothing more fits. Close it with the missing
        markers when the text has ended or the next call starts here."""
        pos = self.pos
        n = len(buf)
        while pos < n and buf[pos].isspace():
            pos += 1
        if pos >= n:
            if not final:
                return WAIT
        else:
            hit = at_marker(buf, pos)
            if hit is None and not final:
                return WAIT
            if not hit:
                return self._fail(f"unexpected {_snippet(buf, self.pos)}")
        ends = self.fmt.ends
        for _ in range(_MAX_VIRTUAL):
            state = self.stack[-1]
            if self.c.accepts_end[state] and self._ends_here():
                if "closed_tag" not in self.repairs:
                    self.repairs.append("closed_tag")
                return self._finish(self.pos)
            literals = [t for t in self.c.allowed[state] if t.literal is not None]
            if not literals:
                break
            # Close what is open: the format's end markers first, then closing
            # brackets and tags, and only then anything else the grammar allows.
            literals.sort(key=lambda t: (t.literal not in ends, not _closes(t.literal)))
            for t in literals:
                # LALR rows list some terminals that only fail after reducing
                # (merged lookaheads): try each on a copy of the stacks.
                saved = self.stack[:], self.values[:]
                if self._feed(Tok(t.name, "", self.pos, self.pos)):
                    break
                self.stack, self.values = saved
            else:
                break
        expected = [t.literal for t in self.c.allowed[self.stack[-1]] if t.literal]
        if pos >= n:
            return self._fail("the reply ended inside the call" + (f" (expected {expected[0]})" if expected else ""))
        return self._fail(f"unexpected {_snippet(buf, self.pos)}")

    def _fail(self, reason: str) -> str:
        self.status = FAIL
        self.reason = reason
        self.end = max(self.pos, self.start)
        return FAIL


def _closes(literal: str) -> bool:
    return literal[:1] in ")]}" or literal.startswith("</") or "end" in literal.lower()


def _snippet(buf: str, pos: int) -> str:
    if pos >= len(buf):
        return "end of reply"
    piece = buf[pos : pos + 20]
    return repr(piece + ("…" if len(buf) > pos + 20 else ""))
