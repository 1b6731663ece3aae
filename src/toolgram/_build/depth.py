"""How deep an argument's value may nest: one bound for every format's reader.

A value the library returns is handed on: json.dumps, the OpenAI conversions,
`toolgram parse --json`, a stream's events, the caller's own code (copy, repr, a
schema validator). Those recurse once or twice a level, and Python stops them at
its recursion limit (1000 frames, some of them already the caller's). So no
argument value nests deeper than VALUE_DEPTH containers (a scalar is 0 deep,
`[1]` 1, `{"a": [1]}` 2), in any format: deeper is an error that names the
argument, never a value cut short.

The readers have guards of their own, on what they read (the JSON reader's
MAX_DEPTH counts a whole payload's brackets, call object included; the Gemma and
XML-ish element readers stop a little past VALUE_DEPTH, before they would recurse
that deep); every call then passes `too_deep` (_pipeline.finish_call), which is
what decides, for all of them alike.
"""

from __future__ import annotations

from typing import Any

VALUE_DEPTH = 256
_CONTAINERS = (dict, list, tuple, set, frozenset)


class TooDeep(ValueError):
    """A value nested deeper than VALUE_DEPTH (`key`: the argument's name, when known)."""

    def __init__(self, key: str | None = None) -> None:
        super().__init__(too_deep_message(key))
        self.key = key


def too_deep_message(key: str | None) -> str:
    if key is None:
        return f"an argument is nested too deeply (more than {VALUE_DEPTH} levels)"
    return f'"{key}" is nested too deeply (more than {VALUE_DEPTH} levels)'


def depth_over(value: Any, limit: int = VALUE_DEPTH) -> bool:
    """Whether `value` nests more than `limit` dicts and lists (tuples, sets) deep.

    Walked with a stack of its own, not by recursion, and given up at the first
    container past the limit: linear in the value's size, whatever its depth (a
    structure that holds itself is, by this walk, too deep)."""
    todo = [(value, 0)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, dict):
            items = v.values()
        elif isinstance(v, (list, tuple, set, frozenset)):
            items = v
        else:
            continue
        if d >= limit:
            return True
        for c in items:  # (a loop, not a generator: one is made for every container)
            if isinstance(c, _CONTAINERS):
                todo.append((c, d + 1))
    return False


def too_deep_argument(arguments: Any) -> str | None:
    """The name of the first argument whose value nests deeper than VALUE_DEPTH, or
    None. (Arguments that are no dict: "" when they are too deep themselves.)"""
    if isinstance(arguments, dict):
        for key, value in arguments.items():
            if isinstance(value, _CONTAINERS) and depth_over(value):  # (a scalar is 0 deep)
                return str(key)
        return None
    return "" if depth_over(arguments, VALUE_DEPTH + 1) else None
