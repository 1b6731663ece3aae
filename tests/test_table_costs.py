"""What the parse table's questions cost in a value nested deep, counted (issue 17: any
reply up to 32 KB parses in 50 ms; a value nested a thousand levels deep asks the same
questions at each level). Not timed: each test counts what the old way did per level,
or checks that the answer remembered is the answer worked out."""

from __future__ import annotations

import pytest

import toolgram
from toolgram._grammar.vocabulary import rule_name
from toolgram._lalr import driver as _driver
from toolgram._lalr import table as _table

COFL_OPEN = '<cofl:tool_calls><cofl:tool_call id="0" name="run">'
COFL_VALUE = '<cofl:value name="a" type="dict">'
BFCL_OPEN = '<functions><function name="run"><params>'
BFCL_VALUE = '<param name="a"><dict>'


def _deep(levels: int) -> list[str]:
    """Deep values of cohere_cofl_xml and bfcl_verbose_xml, left open and closed
    (benchmarks/bench_pathological.py's shapes)."""
    return [
        COFL_OPEN + COFL_VALUE * levels,
        COFL_OPEN + COFL_VALUE * levels + "</cofl:value>" * levels,
        BFCL_OPEN + BFCL_VALUE * levels,
        BFCL_OPEN + BFCL_VALUE * levels + "</dict></param>" * levels,
    ]


def _simulated(monkeypatch: pytest.MonkeyPatch, raw: str) -> int:
    """How many times the table was simulated from the driver's `takes` (and from
    what it calls in table.py) while `raw` was read."""
    count = [0]
    for name in ("peek", "_peek_reach"):
        original = getattr(_table, name, None)
        if original is None:
            continue

        def counted(*args, _original=original, **kwargs):
            count[0] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(_table, name, counted)
    toolgram.parse(raw, ["run"])
    monkeypatch.undo()
    return count[0]


def test_takes_is_worked_out_once_per_question_not_once_per_level(monkeypatch: pytest.MonkeyPatch) -> None:
    # (A token the table reads by a reduction first is checked by simulating the table
    # (merged LALR lookaheads): at each level of the value, the same question about the
    # same top of the stack. 300 levels asked it some 1,200 times, 600 levels twice that.)
    for shallow, deep in zip(_deep(300), _deep(600)):
        toolgram.parse(deep, ["run"])  # (warm: a grammar's answers are remembered per grammar)
        few, more = _simulated(monkeypatch, shallow), _simulated(monkeypatch, deep)
        assert more <= few + 5, (shallow[:60], few, more)


def test_takes_answers_the_same_remembered_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    replies = [
        *_deep(40),
        '<tool_call>{"name": "f", "arguments": {"a": [1, {"b": "x"',
        "<function=f>\n<parameter=a>\n1\n" * 4,
        '[f(a=1), g(b="x"' * 3,
        '<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">x' * 3,
        '<function_calls>\nget_weather(city="Paris")\nget time(tz="UTC")\n</function_calls>\n' * 3,
    ]
    asked = [0]

    def checked(c, stack, term):
        got = takes(c, stack, term)
        assert got == _table.peek(c, stack, term)
        asked[0] += 1
        return got

    takes = _table.takes

    def read() -> list:
        return [repr(toolgram.parse(raw, ["run", "f"])) + repr(list(toolgram.parse(raw).segments)) for raw in replies]

    remembered = read()
    monkeypatch.setattr(_driver, "takes", checked)
    assert read() == remembered
    assert asked[0] > 100
    monkeypatch.setattr(_driver, "takes", lambda c, stack, term: _table.peek(c, stack, term))
    assert read() == remembered


def test_a_plan_counts_left_out_tags_without_naming_each_rule_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # (Closing a value left open 300 levels deep sorts the terminals by how many tags
    # each reads as left out: a reduction at each level for each terminal, and the
    # rule's name parsed again at each one.)
    for raw in _deep(300)[::2]:
        toolgram.parse(raw, ["run"])
        named = [0]

        def counted(name, _original=rule_name):
            named[0] += 1
            return _original(name)

        monkeypatch.setattr(_table, "rule_name", counted)
        toolgram.parse(raw, ["run"])
        monkeypatch.undo()
        assert named[0] < 100, named[0]


def test_left_out_counts_are_peeks_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    # (_left_out_counts walks the terminals whose actions agree together: each count is
    # still the one peek's walk of that terminal alone makes, and _left_out_count's.)
    counts = _table._left_out_counts
    asked = [0]

    def checked(c, stack, terms):
        got = counts(c, stack, terms)
        for term in terms:
            found: list = []
            _table.peek(c, stack, term, lambda rule: found.append(rule_name(rule.origin.name) in _table._LEFT_OUT) or True)
            assert got[term] == sum(found) == _table._left_out_count(c, stack, term)
            asked[0] += 1
        return got

    monkeypatch.setattr(_table, "_left_out_counts", checked)
    monkeypatch.setattr(_table, "_PLAN_STACK", -1)  # (no plan remembered: each worked out)
    for raw in [*_deep(30), '<tool_call>{"name": "f", "arguments": {"a": [1, {"b": "x"', "<function=f>\n<parameter=a>\n1\n" * 4]:
        toolgram.parse(raw, ["run", "f"])
    assert asked[0] > 20
