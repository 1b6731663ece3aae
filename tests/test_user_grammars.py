"""User grammars: `grammar_paths=`, TOOLGRAM_GRAMMAR_PATH and `toolgram.grammars` entry points.

Rules under test (toolgram/_registry.py):
- user formats are used next to the built-in ones; one with a built-in's name replaces it;
- explicit `grammar_paths` is configuration: a broken or missing file raises GrammarError
  whose message is `path:line: …`;
- TOOLGRAM_GRAMMAR_PATH and entry points are ambient: a broken file there is left out with
  a warning, parse() never raises and reports the message in result.errors.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import toolgram
from toolgram import GrammarError
from toolgram._grammar import registry as _registry
from toolgram._grammar.header import KEYS, header_warnings, validate_header

from conftest import streamed

MINE = """\
// format: mine
// title: Test format
// models: none
// markers: <<call>> JSON <</call>>
// start: <<call>>
// end: <</call>>

start: START json_calls END
json_calls: JSON
JSON: /[\\[{]/
START: "<<call>>"
END: "<</call>>"
%import common.WS
%ignore WS
"""

REPLY = 'Sure. <<call>>{"name": "lookup", "arguments": {"q": "cats"}}<</call>> Done.'


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees its own registry cache, entry points and environment."""
    monkeypatch.setattr(_registry, "_registries", {})
    monkeypatch.setattr(_registry, "_entry_point_paths", None)
    monkeypatch.delenv("TOOLGRAM_GRAMMAR_PATH", raising=False)


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# -- grammar_paths= -------------------------------------------------------------------


def test_grammar_paths_file_and_folder(tmp_path: Path) -> None:
    path = write(tmp_path / "g", "mine.lark", MINE)
    for given in (path, str(path), tmp_path / "g", [str(tmp_path / "g")]):
        result = toolgram.parse(REPLY, grammar_paths=given)
        assert [(c.name, c.arguments, c.format) for c in result.calls] == [("lookup", {"q": "cats"}, "mine")]
        assert result.text.split() == ["Sure.", "Done."]
        assert result.errors == []
    # without it the format is unknown and the markers stay prose
    assert toolgram.parse(REPLY).calls == []


def test_user_format_next_to_builtins(tmp_path: Path) -> None:
    path = write(tmp_path, "mine.lark", MINE)
    raw = REPLY + '\n<tool_call>{"name": "other", "arguments": {}}</tool_call>'
    result = toolgram.parse(raw, grammar_paths=[path])
    assert [(c.name, c.format) for c in result.calls] == [("lookup", "mine"), ("other", "hermes")]
    assert toolgram.parse(raw, formats=["mine"], grammar_paths=[path]).calls[0].format == "mine"


def test_user_format_replaces_builtin_of_same_name(tmp_path: Path) -> None:
    path = write(tmp_path, "my_hermes.lark", MINE.replace("format: mine", "format: hermes"))
    raw = REPLY + '<tool_call>{"name": "x", "arguments": {}}</tool_call>'
    with pytest.warns(toolgram.GrammarWarning, match=r"my_hermes.lark \(format hermes\) replaces the built-in format hermes"):
        result = toolgram.parse(raw, formats=["hermes"], grammar_paths=path)
    assert [(c.name, c.format) for c in result.calls] == [("lookup", "hermes")]  # <tool_call> is no longer its marker
    assert _registry.registry_for(path).formats["hermes"].path == path
    assert _registry.registry_for(None).formats["hermes"].path.name == "hermes.lark"


# A replacement for hermes that reads one JSON object, as the built-in does. Granite
# (order 70) also opens at <tool_call>: the replacement must be tried first, where
# hermes was, or granite reads its calls.
MY_HERMES = """\
// format: hermes
// start: <tool_call>
// end: </tool_call>
start: "<tool_call>" json_calls "</tool_call>"
json_calls: JSON
JSON: /[{]/
"""


@pytest.mark.parametrize(
    ("header", "order", "read_by"),
    [("", 20, "hermes"), ("// order: 90\n", 90, "granite")],
    ids=["takes the built-in's order", "its own order kept"],
)
def test_a_replacement_is_tried_where_the_builtin_was(tmp_path: Path, header: str, order: int, read_by: str) -> None:
    path = write(tmp_path, "my_hermes.lark", MY_HERMES.replace("// end:", header + "// end:"))
    raw = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    with pytest.warns(toolgram.GrammarWarning, match="replaces the built-in format hermes"):
        formats = _registry.registry_for(path).select(None)
    assert next(f.order for f in formats if f.name == "hermes") == order
    assert [(c.name, c.format) for c in toolgram.parse(raw, grammar_paths=path).calls] == [("f", read_by)]


def test_first_path_wins_among_user_formats(tmp_path: Path) -> None:
    a = write(tmp_path / "a", "mine.lark", MINE)
    b = write(tmp_path / "b", "mine.lark", MINE.replace("<<call>>", "<<go>>").replace("<</call>>", "<</go>>"))
    assert _registry.registry_for([a, b]).formats["mine"].path == a
    assert _registry.registry_for([b, a]).formats["mine"].path == b


def test_user_grammar_imports_builtin_shared_rules(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "pyish.lark",
        """\
        // format: pyish
        // start: <<py>>
        start: "<<py>>" call
        %import .pycall (call, name, kwarg, posarg, key, value, NAME, KEY, PYVALUE)
        %import common.WS
        %ignore WS
        """,
    )
    result = toolgram.parse("<<py>> lookup(q='cats', n=2)", grammar_paths=path)
    assert [(c.name, c.arguments) for c in result.calls] == [("lookup", {"q": "cats", "n": 2})]


# -- broken grammars name the file and the line -----------------------------------------

BROKEN = {
    "undefined rule": (MINE.replace("json_calls: JSON", "json_calls: PAYLOAD"), 9, "PAYLOAD"),
    "syntax error": (MINE.replace("start: START json_calls END", "start: START (json_calls END"), 8, "expected ')'"),
    "bad regex": (MINE.replace("JSON: /[\\[{]/", "JSON: /[\\[{/"), 10, "JSON"),
    "defined twice": (MINE + 'END: "</x>"\n', 15, "more than once"),
    "no start marker": (MINE.replace("// start: <<call>>\n", ""), 1, "no '// start: <marker>'"),
    "bad order": (MINE.replace("// end: <</call>>", "// order: soon"), 6, "'order' must be a whole number"),
    "missing import": ("// format: x\n// start: <x>\n\n%import .nowhere (call)\nstart: call\n", 4, "%import"),
    # (A region it read would make no call: its text would vanish, with no error.)
    "name and args with no call rule": (
        '// format: x\n// start: <x>\nstart: START name ">" args\nname: NAME\nargs: JSON\n'
        'START: "<x"\nNAME: /\\w+/\nJSON: /[\\[{]/\n',
        4,
        "inside a 'call' rule",
    ),
    # Header values that were read as something else, silently (`quiet: maybe` as no).
    "quiet neither yes nor no": (MINE.replace("// end: <</call>>\n", "// end: <</call>>\n// quiet: maybe\n"), 7, "quiet must be 'yes' or 'no', not 'maybe'"),
    "offered_only unknown": (
        MINE.replace("// end: <</call>>\n", "// end: <</call>>\n// offered_only: sometimes\n"),
        7,
        "offered_only must be 'yes', 'no' or 'always', not 'sometimes'",
    ),
    "framing unknown": (
        MINE.replace("// end: <</call>>\n", "// end: <</call>>\n// framing: spaces\n"),
        7,
        "framing must be 'none' or 'newline', not 'spaces'",
    ),
    "done_at unknown": (
        MINE.replace("// end: <</call>>\n", "// end: <</call>>\n// done_at: soon\n"),
        7,
        "done_at must be 'end', 'next' or 'reply', not 'soon'",
    ),
    "nest with no closer": (
        MINE.replace("// end: <</call>>\n", "// end: <</call>>\n// nest: <<arg>>\n"),
        7,
        "write '// nest: OPENER … CLOSER'",
    ),
    "stream_param with no closer": (
        MINE.replace("// end: <</call>>\n", "// end: <</call>>\n// stream_call: <<call>> … <</call>>\n// stream_param: <<arg>>\n"),
        8,
        "write '// stream_param: OPENER … CLOSER'",
    ),
    "stream_call alone": (
        MINE.replace("// end: <</call>>\n", "// end: <</call>>\n// stream_call: <<call>> … <</call>>\n"),
        7,
        "'stream_call' and 'stream_param' go together",
    ),
    "stream_stop alone": (
        MINE.replace("// end: <</call>>\n", "// end: <</call>>\n// stream_stop: <</\n"),
        7,
        "'stream_stop' goes with 'stream_param'",
    ),
    "empty start marker": (MINE.replace("// start: <<call>>", "// start:"), 5, "an empty start marker"),
    "empty end marker": (MINE.replace("// end: <</call>>", "// end: "), 6, "an empty end marker"),
    "empty end_of_turn token": (MINE.replace("// end: <</call>>", "// end: <</call>>\n// end_of_turn:"), 7, "an empty end_of_turn marker"),
    "misspelt start key": (MINE.replace("// start:", "// strat:"), 1, "('strat:' is no header key)"),
    # (Nor a rule that makes calls at all: every region it read would vanish.)
    "no rule that makes a call": (
        '// format: x\n// start: <a>\n// end: </a>\nstart: "<a>" NAME "</a>"\nNAME: /[a-z]+/\n',
        4,
        "no rule produces a call",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN), ids=list(BROKEN))
def test_broken_grammar_error_names_file_and_line(tmp_path: Path, case: str) -> None:
    text, line, words = BROKEN[case]
    path = write(tmp_path, "broken.lark", text)
    with pytest.raises(GrammarError) as info:
        toolgram.parse("anything", grammar_paths=path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert words in message
    # one line says where and what; Lark's explanation follows, indented
    assert all(more.startswith("    ") for more in message.splitlines()[1:]), message
    assert info.value.path == path and info.value.line == line


# A user's XML-ish format: its header's `nest:` pairs make an example call written inside
# a value the value's text (docs/formats.md, "Markers inside values"), with no code of its own.
TAGGED = """\
// format: tagged
// start: <call
// end: </call>
{nests}
start: call
call: "<call" name ">" param* "</call>"
param: "<arg" key ">" [value] "</arg>"
name: NAME
key: NAME
value: VALUE
NAME: /\\w+/
VALUE: /[^<]+(?:<(?!\\/?(?:arg|call)[\\s>])[^<]*)*/
%import common.WS
%ignore WS
"""
EXAMPLE_INSIDE = '<call save>\n<arg body>Write <call ping>\n<arg host>db</arg>\n</call> to ping.</arg>\n</call>'


@pytest.mark.parametrize(
    ("nests", "body"),
    [
        ("// nest: <call … </call>\n// nest: <arg … </arg>", "Write <call ping>\n<arg host>db</arg>\n</call> to ping."),
        ("//", "Write "),  # (without them, the value ends at the first tag: the example is a call)
    ],
)
def test_nest_pairs_of_a_user_format(tmp_path: Path, nests: str, body: str) -> None:
    path = write(tmp_path, "tagged.lark", TAGGED.format(nests=nests))
    result = toolgram.parse(EXAMPLE_INSIDE, grammar_paths=path, formats=["tagged"])
    assert (result.calls[0].name, result.calls[0].arguments) == ("save", {"body": body})
    assert len(result.calls) == (1 if "nest" in nests else 2)


def test_a_user_format_that_declares_its_tags_streams_its_parameters(tmp_path: Path) -> None:
    # (StreamParser(announce="name") reads the tags the header declares: no code of its own.)
    declared = "// stream_call: <call {name}> … </call>\n// stream_param: <arg {key}> … </arg>"
    raw = "<call save>\n<arg path>notes.txt</arg>\n<arg body>" + "Tides at six, then at noon. " * 20 + "</arg>\n</call>"
    for nests, streams in ((declared, True), ("//", False)):
        path = write(tmp_path, f"tagged{streams}.lark", TAGGED.format(nests=nests))
        sp = toolgram.StreamParser(grammar_paths=path, formats=["tagged"], announce="name")
        fed = [sp.feed(raw[i : i + 5]) for i in range(0, len(raw), 5)] + [sp.flush()]
        (call,) = sp.close().calls
        deltas = [e.text for batch in fed for e in batch if type(e) is toolgram.ArgumentsDelta]
        assert "".join(deltas) == json.dumps(call.arguments)
        assert (len(deltas) > 20) is streams


# A user's format declares the token that ends its model's turn (`// end_of_turn:`): at the
# very end of a reply it is markup, dropped from the text (a "markup" segment); elsewhere text.
@pytest.mark.parametrize(
    ("reply", "text", "segments"),
    [
        ("All done.<<eot>>", "All done.", [("text", 0, 9), ("markup", 9, 16)]),
        ("All done.<<eot>>\n \n", "All done.", [("text", 0, 9), ("markup", 9, 16), ("text", 16, 19)]),
        ("All <<eot>> done.", "All <<eot>> done.", [("text", 0, 17)]),
        ("All done.<<eot>> ok", "All done.<<eot>> ok", [("text", 0, 19)]),
        ("All done.<<eot", "All done.<<eot", [("text", 0, 14)]),
    ],
)
def test_end_of_turn_token_of_a_user_format(tmp_path: Path, reply: str, text: str, segments: list) -> None:
    from toolgram._stream.parser import StreamParser

    path = write(tmp_path, "mine.lark", MINE.replace("// end: <</call>>", "// end: <</call>>\n// end_of_turn: <<eot>>"))
    result = toolgram.parse(reply, grammar_paths=path, formats=["mine"])
    assert (result.text, [tuple(s) for s in result.segments]) == (text, segments)
    assert toolgram.parse(reply, formats=["hermes"]).text == reply.strip()  # (hermes declares no such token)
    for size in (1, 2, 5):
        sp = StreamParser(grammar_paths=path, formats=["mine"])
        for i in range(0, len(reply), size):
            sp.feed(reply[i : i + size])
        sp.flush()
        streamed = sp.close()
        assert (streamed.text, streamed.segments) == (result.text, result.segments)


def test_an_unknown_header_key_is_warned_about(tmp_path: Path) -> None:
    path = write(tmp_path, "mine.lark", MINE.replace("// title: Test format", "// titel: Test format"))
    message = f"{path}:2: unknown header key 'titel' (did you mean 'title'?), not used; the keys are format, title, "
    with pytest.warns(toolgram.GrammarWarning, match=re.escape(message)):
        result = toolgram.parse(REPLY, grammar_paths=path)
    assert [c.format for c in result.calls] == ["mine"]  # (it still loads)
    fmt = _registry.registry_for(path).formats["mine"]
    assert fmt.title == "" and [w for w in fmt.warnings if "titel" in w] == [message + ", ".join(KEYS[2:])]


def test_builtin_headers_pass_the_checks_a_users_get() -> None:
    for fmt in _registry.default_registry().builtin.values():
        validate_header(fmt)
        assert header_warnings(fmt) == [], fmt.name


@pytest.mark.parametrize(
    "header", ["// format: x\n// start: <a>\n", "// format: x\n// start: <a>\n// end: </a>\n// parser: earley\n"], ids=["lalr", "earley"]
)
def test_a_grammar_with_no_start_rule_says_so(tmp_path: Path, header: str) -> None:
    # (Lark says "Using an undefined rule: NonTerminal('start')", with no line: there is none.)
    path = write(tmp_path, "onlyheader.lark", header)
    with pytest.raises(GrammarError) as info:
        toolgram.parse("anything", grammar_paths=path)
    assert str(info.value) == f"{path}: no start rule: a grammar reads one call region from its `start: …` rule"


def test_missing_explicit_path_raises(tmp_path: Path) -> None:
    with pytest.raises(GrammarError, match="no such grammar file or folder"):
        toolgram.parse("x", grammar_paths=tmp_path / "nope.lark")


# -- TOOLGRAM_GRAMMAR_PATH ----------------------------------------------------------------


def test_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "a", "mine.lark", MINE)
    other = write(tmp_path / "b", "go.lark", MINE.replace("mine", "go").replace("call>>", "go>>"))
    monkeypatch.setenv("TOOLGRAM_GRAMMAR_PATH", f"{tmp_path / 'a'}{__import__('os').pathsep}{other}")
    result = toolgram.parse(REPLY + '<<go>>{"name": "g", "arguments": {}}<</go>>')
    assert [(c.name, c.format) for c in result.calls] == [("lookup", "mine"), ("g", "go")]
    monkeypatch.delenv("TOOLGRAM_GRAMMAR_PATH")
    assert toolgram.parse(REPLY).calls == []  # the registry follows the variable


def test_broken_ambient_grammar_is_left_out_not_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "mine.lark", MINE)
    bad = write(tmp_path, "zbad.lark", MINE.replace("format: mine", "format: bad").replace("json_calls: JSON", "json_calls: NOPE"))
    monkeypatch.setenv("TOOLGRAM_GRAMMAR_PATH", str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = toolgram.parse(REPLY)
    assert [c.format for c in result.calls] == ["mine"]  # the good file still works
    # The warning tells the developer; the errors, which go to the model, do not.
    assert any(f"{bad}:9: Rule 'NOPE' used but not defined (in rule json_calls)" in str(w.message) for w in caught)
    assert result.errors == []
    # asking for it by name raises
    with pytest.raises(GrammarError, match=r"zbad\.lark:9:"):
        toolgram.parse(REPLY, formats=["bad"])


def test_missing_ambient_path_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLGRAM_GRAMMAR_PATH", str(tmp_path / "gone"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = toolgram.parse('<tool_call>{"name": "a", "arguments": {}}</tool_call>')
    assert [c.name for c in result.calls] == ["a"]
    assert [str(w.message) for w in caught] == [f"toolgram: grammar left out: {tmp_path / 'gone'}: no such grammar file or folder"]
    assert result.errors == []


# -- entry points ---------------------------------------------------------------------------


def test_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    grammars = tmp_path / "pkg_grammars"
    write(grammars, "mine.lark", MINE)
    write(tmp_path / "extra", "go.lark", MINE.replace("mine", "go").replace("call>>", "go>>"))
    write(
        tmp_path,
        "acme_toolgram.py",
        f"""\
        GRAMMARS = {str(grammars)!r}

        def more():
            return [{str(tmp_path / 'extra')!r}]

        def broken():
            raise RuntimeError("boom")
        """,
    )
    dist = tmp_path / "acme_toolgram-1.0.dist-info"
    write(dist, "METADATA", "Metadata-Version: 2.1\nName: acme-toolgram\nVersion: 1.0\n")
    write(
        dist,
        "entry_points.txt",
        "[toolgram.grammars]\nacme = acme_toolgram:GRAMMARS\nacme_more = acme_toolgram:more\nacme_broken = acme_toolgram:broken\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = toolgram.parse(REPLY + '<<go>>{"name": "g", "arguments": {}}<</go>>')
    assert [(c.name, c.format) for c in result.calls] == [("lookup", "mine"), ("g", "go")]
    assert "entry point acme_broken = acme_toolgram:broken: boom" in " ".join(str(w.message) for w in caught)
    assert result.errors == []
    monkeypatch.delitem(sys.modules, "acme_toolgram", raising=False)


# -- the streaming classes take grammar_paths too -------------------------------------------


def test_stream_parser_and_prose_filter_take_grammar_paths(tmp_path: Path) -> None:
    path = write(tmp_path, "mine.lark", MINE)
    from toolgram.events import CallDone
    from toolgram._stream.prose_filter import ProseFilter
    from toolgram._stream.parser import StreamParser

    sp = StreamParser(grammar_paths=path)
    events = [e for i in range(0, len(REPLY), 7) for e in sp.feed(REPLY[i : i + 7])] + sp.flush()
    assert [e.call.format for e in events if isinstance(e, CallDone)] == ["mine"]
    pf = ProseFilter(grammar_paths=path)
    shown = "".join(pf.push(REPLY[i : i + 5]) for i in range(0, len(REPLY), 5)) + pf.flush()
    assert "<<call>>" not in shown and "Sure." in shown
    with pytest.raises(GrammarError):
        StreamParser(grammar_paths=tmp_path / "missing.lark")


PAYLOAD_TAGGED = """\
// format: payload_tagged
// start: <<call>>
// end: <</call>>
// payload: args

start: START call END
call: "<name>" name "</name>" "<args>" args "</args>"
name: NAME
args: JSON
NAME: /[a-z_]+/
JSON: /[\\[{]/
START: "<<call>>"
END: "<</call>>"
%import common.WS
%ignore WS
"""


@pytest.mark.parametrize(
    ("payload", "text"),
    [
        # (What the grammar read inside the broken call that is no `payload:` rule's is markup.)
        ("// payload: args", "Hi {bad} ok"),
        # (None declared: the call's text stays text, but its opener and end marker.)
        ("", "Hi <name>f</name> <args>{bad}</args> ok"),
    ],
    ids=["declared", "none"],
)
def test_the_payload_header_tells_a_failures_markup_from_its_text(tmp_path: Path, payload: str, text: str) -> None:
    path = write(tmp_path, "payload.lark", PAYLOAD_TAGGED.replace("// payload: args", payload))
    reply = "Hi <<call>><name>f</name> <args>{bad}</args><</call>> ok"
    result = toolgram.parse(reply, grammar_paths=path, formats=["payload_tagged"])
    assert result.calls == [] and len(result.errors) == 1
    assert result.text == text
    for size in (1, 3, 7):
        got = streamed(reply, size, grammar_paths=path, formats=["payload_tagged"])
        assert (got.text, got.segments) == (result.text, result.segments)


def test_a_payload_rule_the_grammar_has_not_is_warned_about(tmp_path: Path) -> None:
    path = write(tmp_path, "payload.lark", PAYLOAD_TAGGED.replace("// payload: args", "// payload: argz"))
    with pytest.warns(toolgram.GrammarWarning, match=re.escape(f"{path}:4: payload rule 'argz': the grammar has no such rule")):
        toolgram.parse("x", grammar_paths=path)
