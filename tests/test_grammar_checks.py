"""Checks made when a grammar is compiled (toolgram._grammar): LALR conflicts, Lark's
messages whole, warnings, the pytest plugin on a broken grammar, bounded registries,
and every grammar on the oldest supported Lark."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import toolgram
from toolgram import GrammarError
from toolgram._grammar import lark_table, registry as _registry
from toolgram._grammar.header import Format, GrammarWarning

ROOT = Path(__file__).resolve().parent.parent
pytest_plugins = ["pytester"]


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# -- conflicts --------------------------------------------------------------------------

# The three built-in grammars with conflicts, each declared in its header (shift is meant).
KNOWN_CONFLICTS = {
    "bfcl_verbose_xml": {("unclosed", '"<"'), ("unclosed", "TEXT_XML"), ("unclosed", '"<param"'), ("unclosed", '"</param>"')},
    "cohere_cofl_xml": {("unclosed", "VALUE"), ("unclosed", "_VALUE"), ("unclosed", '"</cofl:value>"')},
    "minimax_m3_nested_xml": {("unclosed", "VALUE"), ("unclosed", "_OPEN"), ("unclosed", "_CLOSE")},
}


def test_every_builtin_grammar_is_checked_for_conflicts() -> None:
    found = {}
    for name, fmt in _registry.default_registry().builtin.items():
        compiled = fmt.compiled  # an undeclared conflict would raise
        if compiled.conflicts:
            from toolgram._grammar.compile import _shown

            show = _shown(fmt, compiled.terminals)
            found[name] = {(c.reduce_rule, show(c.terminal)) for c in compiled.conflicts}
    assert found == KNOWN_CONFLICTS


def test_builtin_headers_declare_only_conflicts_that_occur() -> None:
    for name, fmt in _registry.default_registry().builtin.items():
        assert not [w for w in fmt.compiled.warnings if "declared conflict" in w], name


SILENT = """\
    // format: two_objects
    // anchor: whole
    start: json_calls+
    json_calls: PAYLOAD
    PAYLOAD: /\\{[^{}]*\\}/
    %import common.WS
    %ignore WS
    """


def test_undeclared_conflict_is_a_grammar_error(tmp_path: Path) -> None:
    # Lark would take the shift: `{"x":1}{"y":2}` read as one object, only {'y': 2} kept.
    text = """\
        // format: two_objects
        // anchor: whole
        start: json_calls+
        json_calls: object+
        object: PAYLOAD
        PAYLOAD: /\\{[^{}]*\\}/
        """
    path = write(tmp_path, "two.lark", text)
    with pytest.raises(GrammarError) as info:
        toolgram.parse('{"x":1}{"y":2}', grammar_paths=path)
    message = str(info.value)
    head = message.splitlines()[0]
    assert head.startswith(f"{path}:"), message
    assert "shift/reduce conflict" in head and "json_calls PAYLOAD" in head, message
    assert "reduce `json_calls: object_plus`" in message or "reduce `json_calls:" in message, message
    assert "// conflicts: json_calls PAYLOAD" in message


def test_declared_conflict_loads_and_a_stale_one_warns(tmp_path: Path) -> None:
    text = """\
        // format: two_objects
        // anchor: whole
        // conflicts: json_calls PAYLOAD — objects side by side are one payload
        start: json_calls+
        json_calls: object+
        object: PAYLOAD
        PAYLOAD: /\\{[^{}]*\\}/
        """
    path = write(tmp_path, "two.lark", text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fmt = _registry.load_user_format(path)
    assert [(c.reduce_rule, c.terminal) for c in fmt.compiled.conflicts] == [("json_calls", "PAYLOAD")]
    stale = write(tmp_path / "s", "s.lark", text.replace("json_calls: object+", "json_calls: PAYLOAD").replace("object: PAYLOAD\n", ""))
    with pytest.warns(GrammarWarning, match="declared conflict json_calls PAYLOAD does not occur"):
        _registry.load_user_format(stale)
    bad = write(tmp_path / "b", "b.lark", text.replace(" — objects side by side are one payload", ""))
    with pytest.raises(GrammarError, match=r"b\.lark:3: write '// conflicts: RULE TERMINAL"):
        _registry.load_user_format(bad)


def test_conflict_report_names_rules_and_terminal() -> None:
    lark = lark_table.build('start: a "x" | b\na: "y"\nb: "y" "x" "z"\n', import_paths=[], cache=False)
    conflicts = lark_table.conflicts_of(lark)
    assert conflicts == [] or all(c.reduce_rule and c.terminal for c in conflicts)


# -- Lark's messages, whole -----------------------------------------------------------------

MINE = """\
    // format: mine
    // start: <<call>>
    start: START json_calls END
    json_calls: JSON
    START: "<<call>>"
    END: "<</call>>"
    JSON: /[\\[{]/
    """


@pytest.mark.parametrize(
    ("body", "line", "expect"),
    [
        ('start: START (json_calls END\njson_calls: JSON\nSTART: "<<call>>"\nEND: "<</call>>"\nJSON: /x/\n', 3, ["^", "expected ')'"]),
        ('start: START json_calls END\njson_calls: JSON\nSTART: "<<call>>"\nEND: "<</call>>"\nJSON: /[x/\n', 7, ["JSON", "regex: unterminated character set"]),
        ('start: START (a | b) END\na: JSON\nb: JSON\nSTART: "<<call>>"\nEND: "<</call>>"\nJSON: /x/\n', None, ["Reduce/Reduce collision", "- <a : JSON>", "- <b : JSON>"]),
        ('start: START json_calls END ;\njson_calls: JSON\nSTART: "<<call>>"\nEND: "<</call>>"\nJSON: /x/\n', 3, ["^"]),
    ],
    ids=["caret", "regex", "reduce_reduce", "unexpected_input"],
)
def test_lark_messages_reach_the_user_whole(tmp_path: Path, body: str, line: int | None, expect: list[str]) -> None:
    path = write(tmp_path, "g.lark", "// format: g\n// start: <<call>>\n" + body)
    with pytest.raises(GrammarError) as info:
        _registry.load_user_format(path)
    message = str(info.value)
    if line is not None:
        assert message.startswith(f"{path}:{line}: "), message
    for words in expect:
        assert words in message, message


def test_caret_sits_under_the_column(tmp_path: Path) -> None:
    path = write(tmp_path, "g.lark", '// format: g\n// start: <x>\nstart: "<x>" (a\na: "a"\n')
    with pytest.raises(GrammarError) as info:
        _registry.load_user_format(path)
    lines = str(info.value).splitlines()
    assert lines[1].strip() == 'start: "<x>" (a'
    assert info.value.column is not None
    assert lines[2].index("^") - lines[1].index("s") == info.value.column - 1


# -- warnings ---------------------------------------------------------------------------


def test_marker_the_grammar_never_reads_warns(tmp_path: Path) -> None:
    path = write(tmp_path, "m.lark", MINE.replace("// start: <<call>>", "// start: <<call>>\n// start: [[go]]\n// end: ]]stop"))
    with pytest.warns(GrammarWarning) as caught:
        fmt = _registry.load_user_format(path)
    messages = [str(w.message) for w in caught]
    assert any("start marker '[[go]]'" in m for m in messages), messages
    assert any("end marker ']]stop'" in m for m in messages), messages
    assert not any("'<<call>>'" in m for m in messages)
    assert len(fmt.warnings) == 2


def test_quadratic_payload_terminal_warns(tmp_path: Path) -> None:
    slow = MINE.replace("json_calls: JSON", "json_calls: JSON\n      | TEXT").replace('JSON: /[\\[{]/', 'JSON: /[\\[{]/\n    TEXT: /(.|\\n)+?(?=<\\/x>)/')
    path = write(tmp_path, "q.lark", slow)
    with pytest.warns(GrammarWarning, match=r"terminal TEXT .*quadratic"):
        _registry.load_user_format(path)
    fast = slow.replace("TEXT: /(.|\\n)+?(?=<\\/x>)/", "TEXT: /[^<]+(?:<(?!\\/x>)[^<]*)*/")
    path = write(tmp_path / "f", "q.lark", fast)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _registry.load_user_format(path)


def test_builtin_grammar_warnings_are_known() -> None:
    found = {(name, w.split(": ", 1)[1].split(" /")[0]) for name, fmt in _registry.default_registry().builtin.items() for w in fmt.warnings}
    # Payload terminals the driver's loop analysis does not recognise (see grammars/README.md):
    # two, and DeepSeek's text after the calls and Cohere cofl's text in a block between its
    # calls and in a call outside any value, each of which takes at most 320 characters.
    assert found == {
        ("bfcl_verbose_xml", "terminal TEXT_XML"), ("cohere", "terminal TEXT"),
        ("deepseek_v3", "terminal AFTER_TEXT"), ("deepseek_v31", "terminal AFTER_TEXT"),
        ("cohere_cofl_xml", "terminal STRAY"), ("cohere_cofl_xml", "terminal BLOCK_TEXT"),
    }


def test_user_format_shadowing_a_builtin_warns(tmp_path: Path) -> None:
    path = write(tmp_path, "h.lark", MINE.replace("format: mine", "format: hermes"))
    with pytest.warns(GrammarWarning, match="replaces the built-in format hermes"):
        registry = _registry.Registry(user_paths=[path])
    assert registry.shadowed == ["hermes"]


# -- the pytest plugin --------------------------------------------------------------------


def test_pytest_plugin_shows_a_broken_grammar(pytester: pytest.Pytester) -> None:
    (pytester.path / "captures").mkdir()
    (pytester.path / "captures" / "one.txt").write_text("<<call>>{}<</call>>", encoding="utf-8")
    (pytester.path / "mine.lark").write_text(textwrap.dedent(MINE).replace("json_calls: JSON", "json_calls: NOPE"), encoding="utf-8")
    pytester.makeini("[pytest]\ntoolgram_corpus = captures\ntoolgram_grammar_paths = mine.lark\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out, out
    assert "repr_failure" not in out, out
    assert "toolgram cannot load a grammar" in out, out
    assert "mine.lark:4: " in out and "NOPE" in out, out
    result.assert_outcomes(failed=1)


# -- bounded registries --------------------------------------------------------------------


def _live_formats() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Format))


def test_registries_are_bounded(tmp_path: Path) -> None:
    before = _live_formats()
    for i in range(50):
        path = write(tmp_path / f"g{i}", "mine.lark", MINE)
        registry = _registry.registry_for(path)
        registry.formats["mine"].compiled  # noqa: B018
    del registry
    after = _live_formats()
    per_registry = len(_registry.default_registry().formats) + 1
    assert len(_registry._registries) <= _registry.MAX_REGISTRIES
    assert after - before <= (_registry.MAX_REGISTRIES + 1) * per_registry, (before, after)


# -- Lark versions ----------------------------------------------------------------------

OLDEST = ROOT / ".ci" / "lark-oldest"

_ON_OLDEST = r"""
import lark, sys
from toolgram._grammar.registry import default_registry
import toolgram
print("lark", lark.__version__, lark.__file__)
assert lark.__file__.startswith(sys.argv[1]), lark.__file__
for name, fmt in sorted(default_registry().builtin.items()):
    fmt.compiled
calls = toolgram.parse('<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>').calls
assert [(c.name, c.arguments) for c in calls] == [("a", {"x": 1})], calls
calls = toolgram.parse('[get_weather(city="Paris"), search(q="x")]', ["get_weather", "search"]).calls
assert [c.name for c in calls] == ["get_weather", "search"], calls
calls = toolgram.parse(']<]minimax[>[<tool_call>]<]minimax[>[<invoke name="f">]<]minimax[>[<a>1]<]minimax[>[</a>]<]minimax[>[</invoke>]<]minimax[>[</tool_call>').calls
assert [c.name for c in calls] == ["f"], calls
print("ok", len(default_registry().builtin))
"""


@pytest.mark.skipif(
    not OLDEST.is_dir(),
    reason=f"{OLDEST} is absent: .ci/run installs lark==1.2.2 there (pip install --target .ci/lark-oldest lark==1.2.2)",
)
def test_every_grammar_on_the_oldest_supported_lark(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(OLDEST), str(ROOT / "src")]), TOOLGRAM_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", _ON_OLDEST, str(OLDEST)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "lark 1.2.2" in done.stdout and "ok" in done.stdout, done.stdout
