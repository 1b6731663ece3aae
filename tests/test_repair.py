"""The JSON recovery layer: loads() and its repairs, value_end(), scalar_end()."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

try:
    from toolgram._recover import repair as _repair
except ImportError:  # running from a checkout that is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from toolgram._recover import repair as _repair

from toolgram._lalr import jsonscan as _jsonscan
from toolgram._lalr.extent import StopIndex, twin_close

from toolgram._recover.repair import MAX_DEPTH, BracketIndex, RepairError, loads, scalar_end, value_end

# --- loads: what it reads, and the repairs it names ----------------------------

CASES = [
    # Valid JSON goes through json.loads untouched.
    ('{"a": 1}', {"a": 1}, ()),
    ('  [1, 2.5, -3e2, true, false, null]\n', [1, 2.5, -300.0, True, False, None], ()),
    ('"it\'s"', "it's", ()),
    ('{"a": "line one\nline two\ttab"}', {"a": "line one\nline two\ttab"}, ()),
    ('"\\ud83d\\ude00"', "\U0001f600", ()),
    ("0", 0, ()),
    # single_quotes, with Python escapes.
    ("{'a': 'b'}", {"a": "b"}, ("single_quotes",)),
    (r"'it\'s \"q\" \\ \n\t\u00e9\x41'", "it's \"q\" \\ \n\t\u00e9A", ("single_quotes",)),
    (r"'\ud83d\ude00 \U0001F600'", "\U0001f600 \U0001f600", ("single_quotes",)),
    (r"'C:\dir'", "C:\\dir", ("single_quotes",)),  # unknown escapes keep their backslash
    ("['say \"hi\"', \"it's\"]", ['say "hi"', "it's"], ("single_quotes",)),
    # python_literals, and tuples as lists.
    ('{"a": True, "b": False, "c": None}', {"a": True, "b": False, "c": None}, ("python_literals",)),
    ("(1, 2)", [1, 2], ("python_literals",)),
    ('{"a": (1, (2, 3)), "b": ()}', {"a": [1, [2, 3]], "b": []}, ("python_literals",)),
    # comments: outside strings only; one left open runs to the end
    ('{"q": 1 // note\n}', {"q": 1}, ("comments",)),
    ('{"q": 1, /* c */ "r": "a//b /* c */"}', {"q": 1, "r": "a//b /* c */"}, ("comments",)),
    ('{"q": 1} // done', {"q": 1}, ("comments",)),
    ("[1, 2 /* cut", [1, 2], ("comments", "closed_json")),
    ("{'u': 'http://x'}", {"u": "http://x"}, ("single_quotes",)),
    # trailing_comma
    ("[1,2,]", [1, 2], ("trailing_comma",)),
    ('{"a":1,}', {"a": 1}, ("trailing_comma",)),
    ('{"a": [1, ], }', {"a": [1]}, ("trailing_comma",)),
    # unquoted_keys, also dotted and hyphenated
    ("{a: 1}", {"a": 1}, ("unquoted_keys",)),
    ('{location: "x"}', {"location": "x"}, ("unquoted_keys",)),
    ('{user.name: 1, max-tokens: 2, $ref: 3, _x: 4}', {"user.name": 1, "max-tokens": 2, "$ref": 3, "_x": 4},
     ("unquoted_keys",)),
    # closed_json: strings
    ('{"a": "hel', {"a": "hel"}, ("closed_json",)),
    ('{"a": "x\\', {"a": "x"}, ("closed_json",)),
    ('{"a": "x\\u00', {"a": "x"}, ("closed_json",)),
    ('{"a": "x\\\\', {"a": "x\\"}, ("closed_json",)),  # an escaped backslash is kept
    ('{"a": "x\\n', {"a": "x\n"}, ("closed_json",)),
    ('"abc', "abc", ("closed_json",)),
    ("['ab", ["ab"], ("single_quotes", "closed_json")),
    # closed_json: literals
    ("[tru", [True], ("closed_json",)),
    ("[fal", [False], ("closed_json",)),
    ('{"a": nul', {"a": None}, ("closed_json",)),
    ("[Tr", [True], ("closed_json", "python_literals")),
    ("[N", [None], ("closed_json", "python_literals")),
    ("[1, -Inf", [1, None], ("closed_json", "non_finite_number")),
    ("tru", True, ("closed_json",)),
    # closed_json: numbers
    ("[1.", [1], ("closed_json",)),
    ("[1e", [1], ("closed_json",)),
    ("[1.5e-", [1.5], ("closed_json",)),
    ("[12", [12], ("closed_json",)),
    ("[1, -", [1], ("closed_json",)),
    ('{"a": -', {}, ("closed_json",)),
    # closed_json: dangling keys and commas, open brackets
    ('{"a": 1, "b"', {"a": 1}, ("closed_json",)),
    ('{"a": 1, "b":', {"a": 1}, ("closed_json",)),
    ('{"a": 1, "b": ', {"a": 1}, ("closed_json",)),
    ('{"a": 1, "b', {"a": 1}, ("closed_json",)),
    ('{"a": 1, b', {"a": 1}, ("unquoted_keys", "closed_json")),
    ('{"a": 1,', {"a": 1}, ("closed_json",)),
    ("[1, 2,", [1, 2], ("closed_json",)),
    ("{", {}, ("closed_json",)),
    ('{"a": [1, {"b": 2', {"a": [1, {"b": 2}]}, ("closed_json",)),
    ('{"a": {"b": [', {"a": {"b": []}}, ("closed_json",)),
    ("(1, 2", [1, 2], ("python_literals", "closed_json")),
    # closed_json: trailing whitespace does not hide a cut, and a cut string keeps it
    ('{"a": tru\n', {"a": True}, ("closed_json",)),
    ("[1.  ", [1], ("closed_json",)),
    ('{"a": 1, "b"  \n', {"a": 1}, ("closed_json",)),
    ('{"a": "x  ', {"a": "x  "}, ("closed_json",)),
    # extra_bracket
    ('{"a": 1}}', {"a": 1}, ("extra_bracket",)),
    ("[1]] ]\n", [1], ("extra_bracket",)),
    ('{"a": 1}})]', {"a": 1}, ("extra_bracket",)),
    # missing_bracket: a close of an outer container, or a list's next object, after a value
    ('[{"name": "a", "arguments": {"x": 1}, {"name": "b", "arguments": {}}]',
     [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}], ("missing_bracket",)),
    ('[{"name": "a", "arguments": {"x": 1}]', [{"name": "a", "arguments": {"x": 1}}], ("missing_bracket",)),
    ('{"a": [1, 2}', {"a": [1, 2]}, ("missing_bracket",)),
    # missing_comma
    ('{"a": 1 "b": 2}', {"a": 1, "b": 2}, ("missing_comma",)),
    ('{"a":1"b":2}', {"a": 1, "b": 2}, ("missing_comma",)),
    ("[1 2 3]", [1, 2, 3], ("missing_comma",)),
    ('["a" "b"]', ["a", "b"], ("missing_comma",)),
    ('[{"a": 1} {"b": 2}]', [{"a": 1}, {"b": 2}], ("missing_comma",)),
    ("[1\n-2]", [1, -2], ("missing_comma",)),
    # Combinations, in the order first needed.
    ("{'a': True, b: (1, 2,),", {"a": True, "b": [1, 2]},
     ("single_quotes", "python_literals", "unquoted_keys", "trailing_comma", "closed_json")),
    ("{name: 'get_weather', arguments: {location: 'Paris', unit: None}}}",
     {"name": "get_weather", "arguments": {"location": "Paris", "unit": None}},
     ("unquoted_keys", "single_quotes", "python_literals", "extra_bracket")),
    ('{"a": 1 "b": [1, 2,]}}', {"a": 1, "b": [1, 2]}, ("missing_comma", "trailing_comma", "extra_bracket")),
    ("{'query': 'weather in \\'Paris\\'', 'limit': 5, 'exact': Fal",
     {"query": "weather in 'Paris'", "limit": 5, "exact": False},
     ("single_quotes", "closed_json", "python_literals")),
    ('{"a": "line\none", b: NaN', {"a": "line\none", "b": None}, ("unquoted_keys", "non_finite_number", "closed_json")),
]


def same(a, b):
    """Equality that takes NaN as equal to itself."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.parametrize(("text", "value", "repairs"), CASES, ids=[c[0][:40] for c in CASES])
def test_loads(text, value, repairs):
    got, got_repairs = loads(text)
    assert same(got, value)
    assert got_repairs == repairs


def test_nan_and_infinity_become_null():
    # Not JSON (a client's JSON.parse throws on them): arguments stay JSON that
    # json.dumps(allow_nan=False) writes, and the repair says so.
    assert loads("[NaN, Infinity, -Infinity]") == ([None, None, None], ("non_finite_number",))
    assert loads("[NaN, Infinity, -Infinity,]") == ([None, None, None], ("non_finite_number", "trailing_comma"))
    assert loads('{"big": 1e999, "small": -1e999, "ok": 1e308}') == (
        {"big": None, "small": None, "ok": 1e308},
        ("non_finite_number",),
    )
    assert loads("[1e99") == ([1e99], ("closed_json",))
    assert loads("[1e999") == ([None], ("non_finite_number", "closed_json"))


ERRORS = [
    ("", "empty payload"),
    ("  \n\t ", "empty payload"),
    ('{"a": @}', 'unexpected character \'@\' after \'{"a": \''),
    ('{"a":1} hello', "extra text after the value: 'hello'"),
    ('{"a": 1} {"b": 2}', 'extra text after the value: \'{"b": 2}\''),
    ("[1],", "extra text after the value: ','"),
    ('{"a" 1}', 'expected \':\' after \'{"a" \''),
    ("[hello]", "unexpected word 'hello'"),
    ('{"a": undefined}', "unexpected word 'undefined'"),
    ("[01]", "bad number '01'"),
    ("[1.]", "bad number '1.'"),
    ("[1abc]", "bad number '1a'"),
    ("[1-2]", "unexpected character '-' after '[1'"),
    ("-", "unexpected end of text"),
    ("[1, 2}", "unexpected character '}' after '[1, 2'"),
    ('{"a": }', 'unexpected character \'}\' after \'{"a": \''),
    ("[,1]", "unexpected character ',' after '['"),
    ("[1,,2]", "unexpected character ',' after '[1,'"),
    ('{"a": [1]]}', 'unexpected character \']\' after \'{"a": [1]\''),
    ("{1: 2}", "unexpected character '1' after '{'"),
    ("}", "unexpected character '}' at the start"),
    ("[" + "1" * 5000 + "]", 'number too long'),
    ("[" * 10_000, "nested too deeply"),
    ("{" * 10_000, "unexpected character '{' after '{'"),  # (the first thing it cannot read)
    ('{"a":' * 10_000, "nested too deeply"),
    ("[" * 10_000 + "]" * 10_000, "nested too deeply"),
    ("(" * 10_000, "nested too deeply"),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested too deeply"),
]


@pytest.mark.parametrize(("text", "reason"), ERRORS, ids=[e[0][:30] for e in ERRORS])
def test_loads_errors(text, reason):
    with pytest.raises(RepairError) as info:
        loads(text)
    assert str(info.value) == reason


def test_repair_error_is_a_value_error():
    assert issubclass(RepairError, ValueError)


def test_not_text():
    with pytest.raises(RepairError):
        loads(b'{"a": 1}')  # type: ignore[arg-type]


def test_max_depth_itself_is_fine():
    value, repairs = loads("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    assert repairs == ()
    json.dumps(value)
    value, repairs = loads("[" * MAX_DEPTH)
    assert repairs == ("closed_json",)
    json.dumps(value)


def test_brackets_inside_strings_do_not_count_as_depth():
    text = json.dumps({"code": "[" * 2000, "more": "{" * 2000})
    assert loads(text) == ({"code": "[" * 2000, "more": "{" * 2000}, ())
    assert loads("{'code': '" + "(" * 2000 + "'}")[0] == {"code": "(" * 2000}


def test_closers_inside_strings_do_not_hide_depth():
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    for text in ('["' + "]" * 2000 + '", ' + deep + "]", "['" + "}" * 2000 + "', " + deep + "]"):
        with pytest.raises(RepairError, match="nested too deeply"):
            loads(text)


def test_lenient_pass_counts_depth_itself():
    # The pre-check guards json.loads; the lenient pass has its own limit.
    with pytest.raises(RepairError, match="nested too deeply"):
        _repair._Reader("[" * (MAX_DEPTH + 1)).read()


def test_deep_nesting_fails_fast():
    # Ten times as deep costs about ten times as much (asserted: at most 40x), not more.
    from conftest import cpu_time_per_call

    def refused(text: str, match: str) -> None:
        with pytest.raises(RepairError, match=match):
            loads(text)

    for make in (lambda n: "[" * n, lambda n: '{"a": [' * (n // 2), lambda n: "['x', " * n, lambda n: "[" * n + "@"):
        assert cpu_time_per_call(lambda: refused(make(10_000), "nested too deeply")) <= 40 * cpu_time_per_call(
            lambda: refused(make(1_000), "nested too deeply")
        )
    # Text that breaks before it is deep is told where it breaks.
    for make in (lambda n: "{" * n, lambda n: "[{" * (n // 2), lambda n: "[@" + "[" * n):
        assert cpu_time_per_call(lambda: refused(make(10_000), "unexpected character")) <= 40 * cpu_time_per_call(
            lambda: refused(make(1_000), "unexpected character")
        )


# --- value_end and scalar_end --------------------------------------------------

VALUE_ENDS = [
    ('{"a": 1} tail', 0, 8),
    ("x = [1, [2, 3]] y", 4, 15),
    ('{"a": "}"}', 0, 10),
    ("{'a': '}'}", 0, 10),
    ('{"a": "it\'s"} more', 0, 13),  # an apostrophe in a "string" is literal
    ('{"a": "\\"}"}', 0, 12),  # so is an escaped quote
    ("{'a': 'it\\'s'}", 0, 14),
    ("(1, [2])", 0, 8),
    ("[1}", 0, 3),  # closers are counted, not matched
    ("[1, 2", 0, None),
    ('{"a": "never closes}', 0, None),
    ("{\"a\": it's}", 0, None),  # a bogus 'string' runs to the end
    ('["a\\', 0, None),
    ("x", 0, None),
    ("[]", 5, None),
    ("[]", -1, None),
    ("", 0, None),
]


@pytest.mark.parametrize(("text", "pos", "end"), VALUE_ENDS)
def test_value_end(text, pos, end):
    assert value_end(text, pos) == end


CALL = 'f(a=1, b="x, y", c=[1, (2)], d=None, e={"k": ")"}, f=\'q,)\')'


@pytest.mark.parametrize(
    ("name", "value"),
    [("a", "1"), ("b", '"x, y"'), ("c", "[1, (2)]"), ("d", "None"), ("e", '{"k": ")"}'), ("f", "'q,)'")],
)
def test_scalar_end_in_a_call(name, value):
    start = CALL.index(name + "=") + len(name) + 1
    end = scalar_end(CALL, start, ",)")
    assert CALL[start:end] == value
    assert CALL[end] in ",)"


SCALAR_ENDS = [
    ("abc", 0, ",", 3),  # no stop: the end of the text
    ('"a, b', 0, ",", 5),  # a string that never closes
    ("x), y", 0, ",", 2),  # a closer at depth 0 that is not a stop is skipped
    ("[a, b], c", 0, ",", 6),
    ("a, b", 2, ",", 4),
    ("(a, b) c", 0, "", 8),
]


@pytest.mark.parametrize(("text", "pos", "stops", "end"), SCALAR_ENDS)
def test_scalar_end(text, pos, stops, end):
    assert scalar_end(text, pos, stops) == end


def test_scans_are_linear_on_big_text():
    from conftest import cpu_time_per_call

    def rows(n: int) -> str:
        return json.dumps({"rows": [{"id": i, "name": f"item {i}", "tags": ["a", "it's"]} for i in range(n)]})

    def scans(big: str) -> None:
        assert value_end(big, 0) == len(big)
        assert scalar_end(big, 1, ",") == len(big)  # the commas are all nested

    small, big = rows(300), rows(3000)
    assert cpu_time_per_call(lambda: scans(big)) <= 40 * cpu_time_per_call(lambda: scans(small))  # (linear: 10)


# --- properties ---------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=3)
jsonish_text = st.text(alphabet="{}[]()\"':,.-+eE0123456789 \n\\utrfalsenNTFIa_x", max_size=60)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_loads(text):
    """loads either raises RepairError or returns a value json.dumps can write."""
    try:
        value, repairs = loads(text)
    except RepairError as err:
        assert str(err) and not str(err).endswith(".")
        return None
    json.dumps(value)
    assert len(set(repairs)) == len(repairs)
    return value, repairs


@SETTINGS
@given(st.text(max_size=80) | jsonish_text)
def test_loads_raises_only_repair_error(text):
    check_loads(text)


@SETTINGS
@given(json_values, st.sampled_from([None, 1, 2]))
def test_loads_reads_valid_json_as_is(value, indent):
    assert loads(json.dumps(value, indent=indent)) == (value, ())


@SETTINGS
@given(json_values)
# (A key holding a quote: repr writes it in "double quotes", with Python's escapes.)
@example({"'\U00012544": None})
def test_loads_reads_python_repr(value):
    # Python's repr spells JSON with single quotes, True/False/None and
    # Python escapes; tuples do not occur here, lists read back as lists.
    # (A string with a single quote in it repr writes in double quotes: a "JSON
    # string", whose escapes are JSON's, `\x1f` kept as written: see the next test.)
    text = repr(value)
    got, repairs = loads(text)
    # (Nor `\U0001…`, which repr writes for a character it cannot print: ESCAPES below
    # keeps it in a "JSON string", as documented.)
    if re.search(r'"[^"]*\\[xU]', text) is None:
        assert got == value
    assert set(repairs) <= {"single_quotes", "python_literals", "invalid_escape"}


# Escapes JSON does not have, in a "JSON string": the backslash is the model's own
# (a Windows path, a regex), kept with the character after it, and said (invalid_escape);
# `\'` is the quote. In a 'single-quoted' string (Python's repr) they are Python's.
ESCAPES = [
    ('{"p": "C:\\apps\\data"}', {"p": "C:\\apps\\data"}, ("invalid_escape",)),
    ('{"p": "D:\\vault\\x41"}', {"p": "D:\\vault\\x41"}, ("invalid_escape",)),
    ('{"re": "^\\d{3}\\s$"}', {"re": "^\\d{3}\\s$"}, ("invalid_escape",)),
    ('{"e": "\\U0001F642 ok"}', {"e": "\\U0001F642 ok"}, ("invalid_escape",)),
    ('{"t": "don\\\'t"}', {"t": "don't"}, ("invalid_escape",)),
    ('{"f": "my\\_notes.md"}', {"f": "my\\_notes.md"}, ("escaped_underscores",)),
    ('{"ok": "tab\\there \\u00e9 \\\\a"}', {"ok": "tab\there \u00e9 \\a"}, ()),
    ('{"k\\q": 1}', {"k\\q": 1}, ("invalid_escape",)),
    ('{"p": "C:\\apps', {"p": "C:\\apps"}, ("closed_json", "invalid_escape")),
    ("{'p': 'tab\\x41'}", {"p": "tabA"}, ("single_quotes",)),
]


@pytest.mark.parametrize(("text", "value", "repairs"), ESCAPES, ids=[c[0][:30] for c in ESCAPES])
def test_escapes_json_lacks(text, value, repairs):
    assert loads(text) == (value, repairs)


def test_python_values_read_python_escapes():
    assert loads("'C:\\x41'", python=True) == ("C:A", ("single_quotes",))
    assert loads('"a\\x41\\d"', python=True)[0] == "aA\\d"


# Every prefix of a document costs len(document) reads: fewer examples.
PREFIX_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PREFIX_SETTINGS
@given(json_objects, st.sampled_from([None, 1]))
def test_every_prefix_of_an_object(value, indent):
    text = json.dumps(value, indent=indent)
    for cut in range(len(text) + 1):
        prefix = text[:cut]
        got = check_loads(prefix)
        if got is None:
            assert cut == 0  # every other prefix of an object can be closed
            continue
        # (A prefix that ends in a string after its other quote and a closer, `{"a": "it'}`,
        # read as no reply's end (cut=False), reads as that quote closing the string: a
        # repair, said; where the reply ended there, it is a cut: test_unescaped_quotes.)
        if "closed_json" not in got[1] and "mismatched_quote" not in got[1]:
            assert got == (json.loads(prefix), ())
    assert check_loads(text) == (value, ())


@PREFIX_SETTINGS
@given(st.lists(json_values, min_size=1, max_size=3))
def test_every_prefix_of_json_never_raises_anything_else(values):
    text = json.dumps(values)[1:-1]  # top-level scalars and containers, side by side
    for cut in range(len(text) + 1):
        check_loads(text[:cut])


@SETTINGS
@given(st.text(alphabet="[]{}()ab ,", max_size=40), st.sampled_from("[{("))
def test_value_end_is_none_exactly_when_unbalanced(tail, opener):
    text = opener + tail
    depth, expected = 0, None
    for i, ch in enumerate(text):
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if depth == 0:
            expected = i + 1
            break
    assert value_end(text, 0) == expected


@SETTINGS
@given(json_values, st.sampled_from(["", " tail", "}]", ' "x"', "</tool_call>"]))
def test_value_end_of_a_json_container_is_where_it_ends(value, tail):
    # (Where the JSON decoder reads the value, value_end takes its answer: the same.)
    text = json.dumps(value if isinstance(value, (list, dict)) else [value], ensure_ascii=False)
    assert value_end(text + tail, 0) == len(text)
    assert value_end(" " + text + tail, 1) == len(text) + 1


@SETTINGS
@given(st.text(alphabet="[]{}()\"'\\ab", max_size=40) | jsonish_text, st.lists(st.integers(0, 40), max_size=12))
def test_bracket_index_answers_as_value_end(text, order):
    # One index asked about many places, in any order, agrees with a scan for each.
    index = BracketIndex()
    for pos in [*order, *range(len(text))]:
        assert index.end(text, pos) == value_end(text, pos), (text, pos)


@pytest.mark.parametrize(
    ("tail", "end"),
    [("", None), ("]" * 600, 1200), ("]" * 599, None), ("]" * 599 + "}", 1200), ('"]" ' * 600, None), ("'", None), ("]" * 601, 1200)],
)
def test_a_value_nested_past_the_decoders_depth_ends_where_its_brackets_say(tail, end):
    # 600 openers: the decoder refuses it (RecursionError), and where no closer follows
    # at all the answer is at once; where some do, the scan counts them as for any value.
    text = "[" * 600 + tail
    assert value_end(text, 0) == end
    assert BracketIndex().end(text, 0) == end
    assert BracketIndex().end("x" + text, 1) == (None if end is None else end + 1)


@SETTINGS
@given(
    st.text(alphabet="[]{}()\"'\\ab ,\n", max_size=40) | jsonish_text,
    st.lists(st.integers(-2, 42), max_size=12),
    st.sampled_from([",)", ")", ",", ",)]"]),
)
def test_stop_index_answers_as_scalar_end(text, order, stops):
    # One index asked about many places, in any order, agrees with a scan for each
    # (strings its trace passed over, closers that end a level, apostrophes).
    index = StopIndex(stops)
    for pos in [*order, *range(len(text))]:
        assert index.end(text, pos) == scalar_end(text, pos, stops), (text, pos)


@SETTINGS
@given(st.text(alphabet="[]{}()\"'\\ab ,\n", max_size=40) | jsonish_text, st.integers(0, 300), st.integers(0, 40))
def test_argument_end_is_where_a_drivers_scan_ends(text, pad, at):
    # The index a parse gives its drivers answers as the scan a stream resumes (a value
    # that ends within its first characters, and one that runs on past them).
    from toolgram._lalr.extent import _Extent

    text = text[:at] + "a" * pad + text[at:]
    index = BracketIndex()
    for pos in range(len(text)):
        assert index.argument_end(text, pos) == _Extent(pos, ",)").advance(text, 0), (text, pos)


@SETTINGS
@given(st.text(alphabet="[]{}()\"'\\ab ,\n", max_size=40) | jsonish_text, st.integers(0, 300), st.integers(0, 40))
def test_list_close_is_where_a_scan_for_the_lists_bracket_ends(text, pad, at):
    # A list's `]` after a value (salvage.list_closed), found in the next characters or
    # by the index: where a scan of the whole text finds it (None: nowhere before its end),
    # the second of `]]` there (twin_close).
    text = text[:at] + "a" * pad + text[at:]
    index = BracketIndex()
    for pos in range(len(text)):
        end = scalar_end(text, pos, "]")
        assert index.list_close(text, pos) == (twin_close(text, end) if end < len(text) else None), (text, pos)


def test_twin_close_is_the_second_bracket_of_two() -> None:
    # (QA24c R2: `]]` right after a value whose call never closed is its `)`, then the list's `]`.)
    assert twin_close('[f(a="x"]] ok', 8) == 9
    assert twin_close('[f(a="x"] ] ok', 8) == 8
    assert twin_close('[f(a="x"]]]', 8) == 9


@SETTINGS
@given(st.text(alphabet=" \t\n\r\x0b\x1c\x85\xa0\u2028\u3000ab{", max_size=40), st.integers(0, 200))
def test_stripped_end_is_the_length_of_rstrip(text, pad):
    for t in (text, text + " " * pad, "x" * pad + text, text + "\n" * pad + text):
        assert _repair._stripped_end(t) == len(t.rstrip()), t


@SETTINGS
@given(st.text(max_size=60) | jsonish_text, st.integers(-2, 62), st.text(alphabet=",)]:'", max_size=3))
def test_scans_never_raise(text, pos, stops):
    end = value_end(text, pos)
    assert end is None or pos < end <= len(text)
    end = scalar_end(text, pos, stops)
    assert min(max(pos, 0), len(text)) <= end <= len(text)


# -- where a value breaks for good (unreadable_at: Driver._cut cuts a broken value there)
JSONISH = st.lists(
    st.sampled_from([
        "{", "}", "[", "]", '"', "'", ":", ",", " ", "\n", "a", "1", "9", "-", "+", ".", "e", "E", "(", ")",
        "true", "Tru", "None", '"k"', '"v"', "'s'", "12", "1.5", "-Inf", "x", "<tool_call>", "\\", "is",
        "/", "</tool_call>",
    ]),
    max_size=24,
).map("".join)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(JSONISH, JSONISH)
# (A break after a string its other quote closed, where its own quote is nowhere after
# it: the text that follows holds that quote, the string runs on to it, and the break
# is elsewhere. Not for good (_Reader.unsettled); it was taken as such.)
@example("(\"}'}'None</tool_call>/{}None", "(\"}'}'None</tool_call>/{}None")
# (A text of comments alone ends before any value: no break for good, `{}` may follow.)
@example("//", "\n{")
@example("//", "\n}")
def test_a_break_for_good_stays_whatever_follows(text: str, more: str) -> None:
    at = _repair.unreadable_at(text)
    if at is None:
        return
    with pytest.raises(_repair.RepairError):
        _repair.loads(text + more)
    assert _repair.breaks_at(text + more) == at


def test_where_a_value_breaks() -> None:
    broken = '{"city": "Par"is"}} and the text goes on'
    assert _repair.unreadable_at(broken) == _repair.breaks_at(broken) == 16  # (after `is`, where ':' was due)
    assert _repair.unreadable_at('{"city": "Par"is') is None  # (too near the end to tell)
    assert _repair.unreadable_at('{"a": 1, "b": "cut off') is None  # (it reads: closed_json)
    assert _repair.breaks_at('{"a": 1}') is None
    # A string closed with the other quote breaks where it did whatever follows: a "/"
    # after it (a path, a URL, a close tag) once turned that slip off for the whole text,
    # which then read as one string left open (fuzz seed 7, input 7045754).
    slipped = '{"text": "Hi\'}} now <tool_call>'
    assert _repair.breaks_at(slipped) == 19  # (after `now`)
    assert _repair.breaks_at(slipped + "{} </tool_call>") == 19
    # That break is for good in the value's whole text only: its own quote is nowhere
    # after the string, and a longer text may hold it (`", "b": 1}` after it reads).
    assert _repair.unreadable_in(slipped, 0, len(slipped)) == 19
    assert _repair.unreadable_at(slipped) is None
    assert _repair.loads(slipped + '", "b": 1}')[0] == {"text": "Hi'}} now <tool_call>", "b": 1}
    # (So too a slip its own quote closes later on: `"}'` broke at the `}` after it, but
    # with the text again after it, the string as written runs on to the second `"`.)
    unsettled = "(\"}'}'None</tool_call>/{}None"
    assert _repair.breaks_at(unsettled) == 5
    assert _repair.unreadable_at(unsettled) is None
    assert _repair.breaks_at(unsettled + unsettled) == 32
    # A text of comments alone gives up at its end, not for good: a value may follow.
    assert _repair.breaks_at("//") == 2
    assert _repair.unreadable_at("// note") is None
    assert _repair.loads("// note\n{}") == ({}, ("comments",))
    # (And a string after a comment, found where its token is.)
    assert _repair.loads('{"a": /* it\'s "x" */ "it\', "c": 1}') == ({"a": "it", "c": 1}, ("mismatched_quote", "comments"))


# -- scan_json: the decoder's scan_once, at the cost of what it reads -------------------
def _scan_outcome(scan: Any, text: str, pos: int) -> tuple:
    try:
        value, end = scan(text, pos)
        return ("value", json.dumps(value, sort_keys=True, default=str), end)
    except StopIteration as exc:
        return ("none", exc.value)
    except json.JSONDecodeError as exc:
        return ("broken", exc.msg, exc.pos)
    except ValueError as exc:  # (NaN and Infinity are refused by the decoder's hooks)
        return ("refused", str(exc))


_JSONISH = st.text(alphabet='{}[]":,. -+0123456789eEtrufalsnINfiy\\u\n x"é', max_size=120)


@settings(max_examples=400, deadline=None)
@given(prefix=st.text(alphabet="ab\n", max_size=40), body=_JSONISH, window=st.integers(20, 60))
def test_scan_json_is_scan_once(prefix: str, body: str, window: int) -> None:
    # A short window makes the copy end inside values, where scan_json must read on.
    from toolgram._recover import repair as _repair

    text = prefix + body
    old = _jsonscan._WINDOW
    _jsonscan._WINDOW = window
    try:
        assert _scan_outcome(_jsonscan.scan_json, text, len(prefix)) == _scan_outcome(
            _jsonscan._JSON.scan_once, text, len(prefix)
        )
    finally:
        _jsonscan._WINDOW = old


@pytest.mark.parametrize("cut", [0, 1, 7, 30, 61, 100])
def test_scan_json_reads_values_longer_than_its_window(cut: int) -> None:
    from toolgram._recover import repair as _repair

    value = {"code": "x = 1\n" * 600, "tags": [True, None, 1.5e3], "n": 12345678901234567890}
    text = "prose " + json.dumps(value)
    text = text[: len(text) - cut] if cut else text
    assert len(text) > 2 * _jsonscan._WINDOW
    assert _scan_outcome(_jsonscan.scan_json, text, 6) == _scan_outcome(_jsonscan._JSON.scan_once, text, 6)


@pytest.mark.parametrize("token", ["true", "false", "null", "-Infinity", "12345.5e3", '"\\u00e9"', '"abc"'])
def test_scan_json_reads_a_token_its_window_cuts(token: str) -> None:
    # The token straddles the end of the first copy at every offset: the decoder fails
    # there on the copy, and only the rest of the text tells that the value is fine.
    from toolgram._recover import repair as _repair

    for shift in range(len(token) + 2):
        head = '{"a": [' + " " * (_jsonscan._WINDOW - 7 - shift)
        text = head + token + "]}"
        assert _scan_outcome(_jsonscan.scan_json, text, 0) == _scan_outcome(_jsonscan._JSON.scan_once, text, 0), shift


# --- loads(cut=True): what the end of the reply cut short (cut_value) --------------

CUT_CASES = [
    # A value cut short: cut_value (and closed_json for the brackets).
    ('{"city": "Par', {"city": "Par"}, ("closed_json", "cut_value")),
    ('{"n": 12', {"n": 12}, ("closed_json", "cut_value")),  # (`12` may have been `1250`)
    ('{"n": 1.', {"n": 1}, ("closed_json", "cut_value")),
    ('{"ok": tru', {"ok": True}, ("closed_json", "cut_value")),
    ('{"ok": tru ', {"ok": True}, ("closed_json", "cut_value")),  # (completed: cut, whatever follows)
    ('{"ok": true', {"ok": True}, ("closed_json", "cut_value")),  # (a word running to the very end)
    ('{"a": 1, "unit', {"a": 1}, ("closed_json", "cut_value")),  # a key with no value
    ('{"a": 1, "unit"', {"a": 1}, ("closed_json", "cut_value")),
    ('{"a": 1, "unit":', {"a": 1}, ("closed_json", "cut_value")),
    ('{"a": 1,', {"a": 1}, ("closed_json", "cut_value")),  # a `,` with nothing after it
    ('{"a": [', {"a": []}, ("closed_json", "cut_value")),  # an opening bracket, nothing in it
    ("{", {}, ("closed_json", "cut_value")),
    ("12", 12, ("cut_value",)),
    # Only brackets closed around complete values: closed_json alone.
    ('{"city": "Paris"', {"city": "Paris"}, ("closed_json",)),
    ('{"n": 12 ', {"n": 12}, ("closed_json",)),
    ('{"a": ["x", {"b": null}]', {"a": ["x", {"b": None}]}, ("closed_json",)),
    ("{'city': 'Paris'", {"city": "Paris"}, ("single_quotes", "closed_json")),
    ('{"a": 1}', {"a": 1}, ()),
    ('"x"', "x", ()),
]


@pytest.mark.parametrize("text, value, repairs", CUT_CASES)
def test_loads_where_the_reply_ended(text, value, repairs):
    assert loads(text, cut=True) == (value, repairs)
    # Not where the reply ended (a marker cut it): closed_json alone says it.
    assert loads(text)[1] == tuple(r for r in repairs if r != "cut_value")


def test_loads_gives_the_containers_the_end_left_open():
    left_open: list = []
    value, _ = loads('[{"name": "f", "arguments": {}}, {"name": "g", "arguments": {"a": "x', True, left_open)
    assert left_open == [id(value), id(value[1]), id(value[1]["arguments"])]
    left_open = []
    value, _ = loads('[{"name": "f"}', True, left_open)
    assert left_open == [id(value)]  # (the call object closed: a call with no arguments)


@pytest.mark.parametrize(
    "text, cut",
    [
        ('"Par', True), ("12", True), ("12 ", False), ("'x'", False), ("True", True), ("cels", True),
        ("cels ", False), ("[1, 2", True), ('["a"', False), ("'grep 'TODO' src/'", False), ("", True),
    ],
)
def test_cut_short(text, cut):
    assert _repair.cut_short(text) is cut


def _whole_part(got: Any, full: Any) -> bool:
    """Whether `got` is `full` as far as it goes: the first keys or items of each
    container, every scalar equal (nothing in it cut short)."""
    if isinstance(full, dict):
        return isinstance(got, dict) and list(got) == list(full)[: len(got)] and all(
            _whole_part(got[k], full[k]) for k in got
        )
    if isinstance(full, list):
        return isinstance(got, list) and len(got) <= len(full) and all(_whole_part(a, b) for a, b in zip(got, full))
    return got == full and type(got) is type(full)


@PREFIX_SETTINGS
@given(json_objects, st.sampled_from([None, 1]))
def test_a_prefix_without_cut_value_holds_nothing_cut(value, indent):
    # Wherever the reply ends in a document, a value it cut short says cut_value: a
    # prefix read without it is the document as far as it goes, every value whole.
    text = json.dumps(value, indent=indent)
    for cut in range(1, len(text) + 1):
        got, repairs = loads(text[:cut], cut=True)
        if "cut_value" not in repairs:
            assert _whole_part(got, value), text[:cut]


# A key given twice: two values cannot be read (which one was meant, nothing tells);
# the same value twice is read once. Keys repeated in different objects are no repeat.
TWICE = [
    ('{"a": 1, "a": 2}', '"a" is given twice (1, then 2)'),
    ('{"a": "x", "b": 0, "a": "x"}', {"a": "x", "b": 0}),
    ('{"o": {"k": [1], "k": [2]}}', '"k" is given twice ([…], then […])'),
    ('[{"a": 1}, {"a": 2}]', [{"a": 1}, {"a": 2}]),
    ('{"s": "k\\": v", "t": 1}', {"s": 'k": v', "t": 1}),  # (a `":` in a string: read again, for nothing)
    ("{'a': 1, 'a': 2,}", '"a" is given twice (1, then 2)'),  # (the lenient pass sees it)
    ('{"n" : "f", "n" : "g"}', '"n" is given twice ("f", then "g")'),
]


@pytest.mark.parametrize(("text", "expected"), TWICE, ids=[t[0][:30] for t in TWICE])
def test_key_given_twice(text, expected):
    if isinstance(expected, str):
        with pytest.raises(_repair_module().RepairError, match=re.escape(expected)):
            loads(text)
    else:
        assert loads(text)[0] == expected


def _repair_module():
    from toolgram._recover import repair

    return repair
