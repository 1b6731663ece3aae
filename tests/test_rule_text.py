"""A rule's text (a call's `name`, a parameter's `value`, …) is the reply's text from
the rule's first token to its last, not its tokens joined: what lies between them,
`%ignore`d spaces and the literals Lark leaves out of the tree, is the model's text
too. Tokens left out at either end stay out, and so does what the parser supplied
(a missing close marker).

tests/rule_text/dotted.lark writes a name as `NAME ("." NAME)*` (the dots are
literals, dropped from the tree); tests/rule_text/words.lark a value as `WORD+` with
`%ignore WS`; tests/rule_text/spaced.lark (`parser: earley`) a value as words with a
filtered `_WS` between them. Each case is read whole and streamed in chunks, alike.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import toolgram
from toolgram._stream.parser import StreamParser

HERE = Path(__file__).resolve().parent / "rule_text"

# (grammar, reply, the calls it reads as (name, arguments))
CASES = {
    "dots between names": ("dotted", '<<flight.book {"to": "Rome"}>>', [("flight.book", {"to": "Rome"})]),
    "spaces around the dots kept": ("dotted", 'Go <<flight . book {"to": "Rome"}>> ok', [("flight . book", {"to": "Rome"})]),
    "close supplied after the args": ("dotted", '<<flight.book {"to": "Rome"}', [("flight.book", {"to": "Rome"})]),
    "spaces inside a value kept": ("words", "{{get city: New   York; }}", [("get", {"city": "New   York"})]),
    "spaces around a value left out": (
        "words",
        "{{get city:  New York ; note: a\tb\nc; }}",
        [("get", {"city": "New York", "note": "a\tb\nc"})],
    ),
    "supplied markers not in the value": ("words", "x {{get city: New York", [("get", {"city": "New York"})]),
    "earley: filtered spaces between words kept": (
        "spaced",
        "Hi <<call get_weather city: Paris France unit: C>> bye",
        [("get_weather", {"city": "Paris France", "unit": "C"})],
    ),
    "earley: close supplied": ("spaced", "x <<call get_weather city: New   York", [("get_weather", {"city": "New   York"})]),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_a_rules_text_is_the_replys_text_between_its_tokens(case: str) -> None:
    grammar, raw, calls = CASES[case]
    paths = [HERE / f"{grammar}.lark"]
    result = toolgram.parse(raw, grammar_paths=paths)
    assert [(c.name, c.arguments) for c in result.calls] == calls
    assert result.errors == []
    for size in (1, 3, len(raw)):
        sp = StreamParser(grammar_paths=paths)
        for i in range(0, len(raw), size):
            sp.feed(raw[i : i + size])
        assert sp.close() == result, size
