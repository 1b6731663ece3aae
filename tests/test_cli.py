"""The `toolgram` command, run as `python -m toolgram …` on real corpus files.

The library is the oracle: what the command prints must agree with toolgram.parse() on the
same input, so these tests do not pin parse outcomes that other tests own.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import toolgram
from toolgram._audit import cli as _cli
from toolgram._audit.cases import result_data, result_json
from toolgram._grammar.registry import default_registry, load_user_format

CORPUS = Path(__file__).resolve().parent / "corpus"
PROSE_AND_CALLS = CORPUS / "hermes" / "prose_before_between_after.txt"
REPAIRED = CORPUS / "hermes" / "python_literals.txt"
UNREADABLE = CORPUS / "hermes" / "missing_name.txt"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run(*args: str, stdin: str | None = None, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TOOLGRAM_GRAMMAR_PATH")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "toolgram", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=full_env,
        timeout=60,
    )


def raw(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


# -- parse -----------------------------------------------------------------------------


def test_parse_json_is_the_parse_result() -> None:
    proc = run("parse", "--json", str(PROSE_AND_CALLS))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    expected = json.loads(json.dumps(result_json(toolgram.parse(raw(PROSE_AND_CALLS)))))
    assert data == expected
    assert data["calls"] and all(len(c["span"]) == 2 for c in data["calls"])
    assert {"kind", "start", "end"} <= set(data["segments"][0])


def main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """The command in-process (same code, no interpreter start-up): (status, stdout)."""
    code = _cli.main(list(argv))
    return code, capsys.readouterr().out


def test_parse_text_from_stdin_shows_calls_repairs_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for path in (REPAIRED, UNREADABLE):
        result = toolgram.parse(raw(path))
        if path == REPAIRED:
            proc = run("parse", stdin=raw(path))  # no FILE: standard input
            assert proc.returncode == 0, proc.stderr
            out = proc.stdout
        else:
            code, out = main(capsys, "parse", str(path))
            assert code == 0
        assert not ANSI.search(out)  # not a terminal: no colour
        assert f"calls ({len(result.calls)})" in out
        for call in result.calls:
            assert call.name in out and json.dumps(call.arguments, ensure_ascii=False) in out
            for repair in call.repairs:
                assert repair in out
        for error in result.errors:
            assert error in out


def test_parse_colour_when_asked() -> None:
    proc = run("parse", "--color", "always", str(REPAIRED))
    assert ANSI.search(proc.stdout)
    assert "python_literals" in ANSI.sub("", proc.stdout)


def test_parse_format_and_tools_options(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text('["something_else"]', encoding="utf-8")
    proc = run("parse", "--json", "--tools", str(tools), "--format", "hermes", str(PROSE_AND_CALLS))
    data = json.loads(proc.stdout)
    expected = toolgram.parse(raw(PROSE_AND_CALLS), ["something_else"], formats=["hermes"])
    assert data["errors"] == expected.errors and any("Unknown tool" in e for e in data["errors"])


def test_parse_in_think(tmp_path: Path) -> None:
    reply = tmp_path / "r1.txt"
    reply.write_text("Let me see.</think>\nIt is sunny.", encoding="utf-8")
    data = json.loads(run("parse", "--json", "--in-think", str(reply)).stdout)
    assert (data["reasoning"], data["text"]) == ("Let me see.", "It is sunny.")
    assert json.loads(run("parse", "--json", str(reply)).stdout)["reasoning"] == ""


def test_a_files_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    """An editor's byte order mark is no part of the reply: parse, explain and stream skip it,
    as check does, so spans count from the reply's first character (QA: `toolgram parse` of
    a file saved with one read no call)."""
    reply = tmp_path / "bom.txt"
    body = '<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|> Done.'
    reply.write_bytes(b"\xef\xbb\xbf" + body.encode())
    data = json.loads(run("parse", "--json", str(reply)).stdout)
    assert data == json.loads(json.dumps(result_json(toolgram.parse(body))))
    assert data["text"] == "Done." and data["calls"][0]["span"][0] == 0
    proc = subprocess.run(
        [sys.executable, "-m", "toolgram", "stream"], stdin=reply.open("rb"), capture_output=True, timeout=60,
        env={k: v for k, v in os.environ.items() if k != "TOOLGRAM_GRAMMAR_PATH"},
    )  # fmt: skip
    done = [json.loads(line)["call"] for line in proc.stdout.decode().splitlines() if '"call_done"' in line]
    assert [c["span"][0] for c in done] == [0]
    assert "[0, 63) lfm2" in run("explain", str(reply)).stdout


# -- bad input: one line, exit 2, never a traceback ----------------------------------------


def test_errors_are_one_line_in_a_subprocess(tmp_path: Path) -> None:
    proc = run("parse", str(tmp_path / "missing.txt"))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("toolgram: error: cannot read ")


def _bad_cases(tmp_path: Path) -> list[list[str]]:
    broken = tmp_path / "broken.lark"
    broken.write_text("// format: b\n// start: <b>\nstart: nothing_here\n", encoding="utf-8")
    not_json = tmp_path / "tools.txt"
    not_json.write_text("{nope", encoding="utf-8")
    bad_jsonl = tmp_path / "bad.jsonl"
    bad_jsonl.write_text('{"raw": "x"}\n{"no_raw": 1}\n', encoding="utf-8")
    f = str(REPAIRED)
    # JSON that is no tools: a --tools file, a record's tools, a case's tools sidecar.
    wrong_tools = []
    for n, text in enumerate(("42", "true", "4.5", '[{"nope": 1}]', '[{"type": "function", "function": {"description": "x"}}]')):
        path = tmp_path / f"wrong_tools_{n}.json"
        path.write_text(text, encoding="utf-8")
        record = tmp_path / f"wrong_tools_{n}.jsonl"
        record.write_text(json.dumps({"raw": "x", "tools": json.loads(text)}) + "\n", encoding="utf-8")
        case = tmp_path / f"wrong_tools_case_{n}" / "one.txt"
        case.parent.mkdir()
        case.write_text("x", encoding="utf-8")
        case.with_name("one.tools.json").write_text(text, encoding="utf-8")
        wrong_tools += [
            *([c, "--tools", str(path), f] for c in ("parse", "explain", "check")),
            ["stream", "--tools", str(path)],
            ["check", "--strict", str(record)],  # (without --strict: skipped, exit 3; tests/test_check_logs.py)
            ["check", "--strict", str(case.parent)],
        ]
    return wrong_tools + [
        [],
        ["bogus"],
        ["parse", "--format", "nope", f],
        ["parse", "--tools", str(not_json), f],
        ["parse", "--grammar-path", str(broken), f],
        ["parse", "--grammar-path", str(tmp_path / "nowhere"), f],
        ["grammar", "nope"],
        ["explain"],
        ["explain", str(tmp_path / "missing.txt")],
        ["check"],
        ["check", str(tmp_path / "missing")],
        ["check", "--strict", str(bad_jsonl)],
        ["check", "--jobs", "0", str(CORPUS / "hermes")],
        ["check", str((tmp_path / "empty").mkdir() or tmp_path / "empty")],  # no cases
        ["new-format", "Bad Name", "--example", f],
        ["new-format", "ok_name"],  # --example missing
        ["new-format", "hermes", "--example", f, "--dir", str(tmp_path / "nf")],  # a built-in's name
        ["stream", "--format", "nope"],
    ]


def test_bad_arguments_and_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in _bad_cases(tmp_path):
        try:
            code = _cli.main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code
        out, err = capsys.readouterr()
        assert code == 2, (argv, out, err)
        assert err.count("\n") == 1 and err.startswith("toolgram"), (argv, err)
        assert "Traceback" not in err
    # the messages say what is wrong
    _cli.main(["parse", "--grammar-path", str(tmp_path / "broken.lark"), str(REPAIRED)])
    assert f"{tmp_path / 'broken.lark'}:3: " in capsys.readouterr().err
    _cli.main(["check", "--strict", str(tmp_path / "bad.jsonl")])
    assert f"{tmp_path / 'bad.jsonl'}:2: " in capsys.readouterr().err
    _cli.main(["parse", "--tools", str(tmp_path / "wrong_tools_0.json"), str(REPAIRED)])
    assert capsys.readouterr().err == (
        f"toolgram: error: {tmp_path / 'wrong_tools_0.json'}: not tools (tools must be names, tool definitions or None, not int)\n"
    )
    _cli.main(["check", "--strict", str(tmp_path / "wrong_tools_1.jsonl")])
    assert capsys.readouterr().err.startswith(f'toolgram: error: {tmp_path / "wrong_tools_1.jsonl"}:1: "tools" is not tools (')


# -- stream ------------------------------------------------------------------------------


def test_stream_reads_input_as_it_arrives() -> None:
    # Only hermes: formats anchored at the reply's start may rightly hold the first prose
    # back; this is about the command reading what is available, not about that policy.
    reply = raw(PROSE_AND_CALLS)
    first = "Thinking out loud for a moment. "
    env = {k: v for k, v in os.environ.items() if k != "TOOLGRAM_GRAMMAR_PATH"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolgram", "stream", "--format", "hermes"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)
    reader.start()
    try:
        proc.stdin.write(first.encode())
        proc.stdin.flush()
        early = json.loads(lines.get(timeout=30))  # arrives while stdin is still open
        assert early["event"] == "text" and first.startswith(early["text"]) and early["text"]
        proc.stdin.write(reply.encode())
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
        # (The process may end before the reader has taken its last lines: wait for its EOF.)
        reader.join(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    events = [early]
    while not lines.empty():
        events.append(json.loads(lines.get()))
    result = toolgram.parse(first + reply, formats=["hermes"])
    done = [e["call"] for e in events if e["event"] == "call_done"]
    assert done == [json.loads(json.dumps(c)) for c in result_data(result)["calls"]]
    starts = [e for e in events if e["event"] == "call_start"]
    assert [s["name"] for s in starts] == [c.name for c in result.calls]
    for i, call in enumerate(result.calls):
        deltas = "".join(e["text"] for e in events if e["event"] == "arguments_delta" and e["index"] == i)
        assert json.loads(deltas) == call.arguments
    assert [e["message"] for e in events if e["event"] == "error"] == result.errors


# -- formats / grammar ------------------------------------------------------------------------


def test_formats_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    registry = default_registry()
    proc = run("formats")
    assert proc.returncode == 0
    header, *rows = proc.stdout.splitlines()
    assert header.split() == ["format", "grammar", "markers", "models"]
    assert [r.split()[0] for r in rows] == [f.name for f in registry.select(None)]
    hermes = next(r for r in rows if r.startswith("hermes "))
    assert "hermes.lark" in hermes and "<tool_call>" in hermes
    data = json.loads(main(capsys, "formats", "--json")[1])
    assert {d["name"] for d in data} == set(registry.formats)
    assert all(d["builtin"] for d in data)


def test_formats_with_user_grammars(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine.lark"
    mine.write_text('// format: mine\n// markers: <<c>>\n// start: <<c>>\nstart: "<<c>>" json_calls\njson_calls: JSON\nJSON: /[{]/\n', encoding="utf-8")
    hermes = tmp_path / "over" / "hermes.lark"
    hermes.parent.mkdir()
    hermes.write_text(mine.read_text().replace("format: mine", "format: hermes"), encoding="utf-8")
    code = _cli.main(["formats", "--grammar-path", str(mine), "--grammar-path", str(hermes.parent)])
    out, err = capsys.readouterr()
    # The replacement is said once on stderr, as a line of toolgram's, not as a Python warning.
    assert err == f"toolgram: warning: {hermes} (format hermes) replaces the built-in format hermes (hermes.lark); give it another name in its '// format:' line to keep both\n"
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert code == 0
    assert f"{mine} (user)" in rows["mine"] and "<<c>>" in rows["mine"]
    assert f"{hermes} (replaces built-in)" in rows["hermes"]
    code, md = main(capsys, "formats", "--markdown", "--grammar-path", str(mine))
    assert md.startswith("| format |") and "| `mine` |" in md


def test_grammar_prints_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    fmt = default_registry().formats["hermes"]
    proc = run("grammar", "hermes")
    assert proc.returncode == 0 and proc.stdout == fmt.source
    assert main(capsys, "grammar", "--path", "hermes") == (0, f"{fmt.path}\n")


def test_grammar_shows_a_user_grammars_warnings_on_stderr(tmp_path: Path) -> None:
    mine = tmp_path / "mine.lark"
    # The second start marker is never read: the grammar's start takes only "<<c>>".
    mine.write_text('// format: mine\n// start: <<c>>\n// start: [[c\n// end: >>\nstart: "<<c>>" call ">>"\ncall: name\nname: NAME\nNAME: /[a-z]+/\n', encoding="utf-8")
    warning = f"toolgram: warning: {mine}:3: start marker '[[c': no token the grammar's start accepts reads it, so a region opened there never parses\n"
    for argv in (["grammar", str(mine)], ["grammar", "mine", "--grammar-path", str(tmp_path)]):
        proc = run(*argv)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, mine.read_text(), warning), argv
    with pytest.warns(toolgram.GrammarWarning, match="start marker '\\[\\[c'"):
        load_user_format(mine)
    assert "GrammarWarning" not in toolgram.__all__


def test_grammar_file_that_replaces_a_builtin_says_so(tmp_path: Path) -> None:
    mine = tmp_path / "hermes.lark"
    mine.write_text('// format: hermes\n// start: <tool_call>\nstart: "<tool_call>" json_calls\njson_calls: JSON\nJSON: /[{]/\n', encoding="utf-8")
    warning = (
        f"toolgram: warning: {mine} (format hermes) replaces the built-in format hermes (hermes.lark); "
        "give it another name in its '// format:' line to keep both\n"
    )
    for argv in (["grammar", str(mine)], ["grammar", "hermes", "--grammar-path", str(mine)]):
        proc = run(*argv)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, mine.read_text(), warning), argv


def test_grammar_shows_declared_conflicts() -> None:
    fmt = default_registry().formats["minimax_m3_nested_xml"]
    proc = run("grammar", "minimax_m3_nested_xml")
    assert proc.returncode == 0 and proc.stdout == fmt.source
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"toolgram: declared conflict (resolved as shift): {fmt.path}:8: unclosed VALUE _OPEN _CLOSE — an element ends")
    assert lines[1:] == [
        "    on VALUE: reduce `unclosed: <empty>`, or shift in `value: • VALUE`",
        "    on _CLOSE: reduce `unclosed: <empty>`, or shift in `_element_end: • _CLOSE`",
        "    on _OPEN: reduce `unclosed: <empty>`, or shift in `element: • _OPEN key \">\" __element_star_2 _element_end`, "
        "`element: • _OPEN key \">\" _element_end`",
    ]


# -- explain ---------------------------------------------------------------------------------


def test_explain_example_in_the_docs_is_what_it_prints(tmp_path: Path) -> None:
    # docs/cli.md shows the end of `toolgram explain examples/reply.txt …` run from the
    # checkout's root, where the grammar's path is relative; elsewhere it is in full.
    root = CORPUS.parent.parent
    doc = (root / "docs" / "cli.md").read_text(encoding="utf-8")
    shown = doc.split("`toolgram explain examples/reply.txt --tools examples/tools.json`", 1)[1]
    shown = shown.split("```text\n", 1)[1].split("```", 1)[0]
    args = ("explain", "examples/reply.txt", "--tools", "examples/tools.json")
    proc = run(*args, cwd=root)
    assert proc.returncode == 0 and proc.stdout.endswith(shown), proc.stdout
    elsewhere = run(*(str(root / a) if a.startswith("examples/") else a for a in args), cwd=tmp_path)
    grammar = default_registry().formats["hermes"].path
    assert f"  grammar: {grammar}\n" in elsewhere.stdout and grammar.is_absolute()


def test_explain_shows_regions_rules_and_repairs() -> None:
    text = raw(REPAIRED)
    result = toolgram.parse(text)
    proc = run("explain", str(REPAIRED))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    call = result.calls[0]
    assert f"[{call.span[0]}, {call.span[1]})" in out
    assert f"{call.format}  {call.name}" in out
    assert "rules:" in out and "START  '<tool_call>'" in out and "json_calls" in out
    assert f"repairs: {', '.join(call.repairs)}" in out
    assert f"result: {len(result.calls)} call(s), {len(result.errors)} error(s)" in out


def test_explain_unreadable_region_lists_each_format_tried() -> None:
    result = toolgram.parse(raw(UNREADABLE))
    proc = run("explain", "--json", str(UNREADABLE))
    data = json.loads(proc.stdout)
    assert data["errors"] == result.errors
    unread = [s for s in data["steps"] if s["kind"] == "error"]
    assert unread and unread[0]["errors"] == result.errors[:1]
    tried = [a["format"] for a in unread[0]["attempts"]]
    assert "hermes" in tried and not any(a["ok"] for a in unread[0]["attempts"])
    # the steps cover the whole reply, in order, without overlap
    spans = [(s["start"], s["end"]) for s in data["steps"]]
    assert spans[0][0] == 0 and spans[-1][1] == len(raw(UNREADABLE))
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


def test_explain_names_the_marker_less_formats_tried_at_the_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prose = tmp_path / "prose.txt"
    prose.write_text("Nothing to call here, just words.", encoding="utf-8")
    code, out = main(capsys, "explain", "--json", str(prose))
    data = json.loads(out)
    anchored = {f.name for f in default_registry().select(None) if f.anchor}
    assert code == 0 and anchored and {a["format"] for a in data["opening"]} <= anchored
    assert [s["kind"] for s in data["steps"]] == ["text"]


BROKEN_PARAMETERS = CORPUS / "qwen3_coder_xml" / "broken_block_names_its_own_error.txt"  # <oops> among the tags


def test_explain_says_what_the_grammar_expected_where_a_region_failed() -> None:
    proc = run("explain", "--color", "never", str(BROKEN_PARAMETERS))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    at = lines.index("  tried: qwen3_coder_xml: unexpected '\\n<oops>\\n</function>\\n…'")
    assert lines[at + 1 : at + 3] == [
        "    stopped at 7:1 (offset 93): '<oops>\\n</function>\\n</tool_call>'",
        '    expected one of "</function>", "</parameter>", "</tool_call>", FUNCTION /<function(?:=| (?=name=))/, _PARAMETER /<parameter(?:=| (?=name=))/, _PARAMETER_BARE /<parameter(?=>)/',
    ]
    # hermes stopped at the block's first line: its payload cannot begin with a tag
    at = lines.index("  tried: hermes: unexpected '\\n<function=get_weath…'")
    assert lines[at + 1 : at + 3] == [
        "    stopped at 2:12 (offset 33): '\\n<function=get_weather>\\n<parameter=city>'",
        "    expected PAYLOAD /[^<]+(?:<(?!\\/?tool_call>|\\|im_(?:start|end)\\|>…/",
    ]


def test_explain_expected_terminals_as_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from toolgram._audit.explain import explain

    # A Hermes block with no JSON in it: the grammar wanted its payload where <oops> is.
    exp = explain("Hi <tool_call><oops></tool_call> bye", formats=["hermes"])
    [error] = [s for s in exp.steps if s.kind == "error"]
    # (hermes first; then the Hermes drift formats its `also:` lines bring, which share the marker)
    attempt = error.attempts[0]
    assert (attempt.format, attempt.at, attempt.told) == ("hermes", 14, True)
    assert attempt.expected == ["PAYLOAD /[^<]+(?:<(?!\\/?tool_call>|\\|im_(?:start|end)\\|>…/"]
    # A decoding failure (the grammar read the block whole) says no place.
    exp = explain("<tool_call>garbage here</tool_call>", formats=["hermes"])
    attempt = [s for s in exp.steps if s.kind == "error"][0].attempts[0]
    assert attempt.reason == "unexpected word 'garbage'" and (attempt.at, attempt.expected) == (-1, [])
    # An anonymous pattern shows as its pattern, a literal as its text; --json has both.
    mine = tmp_path / "mine.lark"
    mine.write_text('// format: mine\n// start: <<c>>\n// end: >>\nstart: "<<c>>" call ">>"\ncall: name\nname: /[a-z]+/ | "?"\n', encoding="utf-8")
    reply = tmp_path / "reply.txt"
    reply.write_text("x\n<<c>>42>>", encoding="utf-8")
    code, out = main(capsys, "explain", "--json", "--grammar-path", str(mine), "--format", "mine", str(reply))
    [error] = [s for s in json.loads(out)["steps"] if s["kind"] == "error"]
    assert code == 0 and error["attempts"] == [
        {
            "format": "mine", "ok": False, "reason": "unexpected '42>>'",
            "at": 7, "line": 2, "column": 6, "text": "42>>", "expected": ['"?"', "/[a-z]+/"],
        }
    ]  # fmt: skip


# -- check -----------------------------------------------------------------------------------


def test_check_corpus_folder_table() -> None:
    proc = run("check", str(CORPUS / "hermes"), str(CORPUS / "fenced_json"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["format", "cases", "clean", "repaired", "errors", "mismatches"]
    total = next(line for line in lines if line.startswith("total")).split()
    n_cases = len(list((CORPUS / "hermes").glob("*.txt"))) + len(list((CORPUS / "fenced_json").glob("*.txt")))
    assert int(total[1]) == n_cases
    assert int(total[2]) + int(total[3]) + int(total[4]) == n_cases  # every case counted once
    assert "no mismatch" in proc.stdout


def test_check_expected_calls_and_mismatch_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = toolgram.parse(raw(PROSE_AND_CALLS))
    expected = [{"name": c.name, "arguments": c.arguments} for c in good.calls]
    records = [
        {"raw": raw(PROSE_AND_CALLS), "expected": expected, "id": "matches"},
        {"raw": raw(REPAIRED), "tools_offered": [c.name for c in toolgram.parse(raw(REPAIRED)).calls]},
        {"raw": raw(UNREADABLE), "expected": None, "format": "label only"},
    ]
    corpus = tmp_path / "captures.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    code, out = main(capsys, "check", str(corpus))
    assert code == 0, out
    assert "3 cases, 1 with expected calls: no mismatch" in out

    records[0]["expected"] = expected[:1]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    proc = run("check", "--json", str(corpus))
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["summary"]["total"]["mismatches"] == 1
    case = next(c for c in data["cases"] if c["id"] == "captures/matches")
    assert case["mismatch"].startswith(f"expected 1 call(s): {expected[0]['name']}(")
    code, text = main(capsys, "check", str(corpus))
    assert code == 1
    assert "mismatches (1)" in text and f"captures/matches ({corpus}:1" in text


def test_check_reads_in_think_from_the_case_or_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from toolgram._audit.cases import load_cases
    from toolgram._audit.check import _init, run_case

    # Inside the block the prompt opened, the call is reasoning; without in_think, a call.
    reply = 'Maybe <tool_call>{"name": "get_weather", "arguments": {}}</tool_call> first.</think> Done.'
    assert [c.name for c in toolgram.parse(reply).calls] == ["get_weather"]
    assert toolgram.parse(reply, in_think=True).calls == []
    corpus = tmp_path / "r1.jsonl"
    corpus.write_text(json.dumps({"raw": reply, "in_think": True, "id": "opened"}) + "\n", encoding="utf-8")
    folder = tmp_path / "captures"
    folder.mkdir()
    (folder / "opened.txt").write_text(reply, encoding="utf-8")
    (folder / "opened.in_think.json").write_text("true", encoding="utf-8")
    (folder / "plain.txt").write_text(reply, encoding="utf-8")
    cases = {c.id: c for c in load_cases([corpus, folder])}
    assert [cases[i].in_think for i in ("r1/opened", "captures/opened", "captures/plain")] == [True, True, False]
    try:
        _init({})
        assert [run_case(cases[i]).calls for i in ("r1/opened", "captures/opened", "captures/plain")] == [
            [],
            [],
            ["get_weather"],
        ]
        _init({"in_think": True})  # `toolgram check --in-think`: every case
        assert run_case(cases["captures/plain"]).calls == []
    finally:
        _init({})
    data = json.loads(run("check", "--json", "--in-think", str(folder)).stdout)
    assert [c["calls"] for c in data["cases"]] == [[], []]
    (folder / "plain.in_think.json").write_text('"yes"', encoding="utf-8")
    assert _cli.main(["check", str(folder)]) == 3  # a bad case is skipped, and said
    assert "plain.in_think.json: expected true or false" in capsys.readouterr().out


def test_check_jobs_gives_the_same_table(capsys: pytest.CaptureFixture[str]) -> None:
    folders = [str(CORPUS / "hermes"), str(CORPUS / "lfm2")]
    parallel = run("check", "--jobs", "2", *folders)
    assert (parallel.returncode, parallel.stdout) == main(capsys, "check", *folders)


def test_check_shared_corpus(shared_dir: Path) -> None:
    files = sorted((shared_dir / "corpus").glob("*.jsonl"))
    if not files:
        pytest.skip("no shared corpus files")
    proc = run("check", *map(str, files))
    n_records = sum(1 for f in files for line in f.read_text(encoding="utf-8").splitlines() if line.strip())
    total = next(line for line in proc.stdout.splitlines() if line.startswith("total")).split()
    assert int(total[1]) == n_records
    mismatches, checked = map(int, total[5].split("/"))
    assert checked > 0  # records with a list of expected calls are compared
    # The known mismatches, each named: a new one fails here, and so does one fixed
    # (then take it out of this list).
    listed = sorted(line.split()[0] for line in proc.stdout.split("mismatches (", 1)[-1].splitlines()[1:] if line.strip())
    assert listed == sorted(KNOWN_SHARED_MISMATCHES), proc.stdout[-3000:]
    assert mismatches == len(KNOWN_SHARED_MISMATCHES)
    assert proc.returncode == 1, proc.stderr


# Captures in ../shared/corpus whose `expected` toolgram does not give, with why:
KNOWN_SHARED_MISMATCHES = [
    # qwen2.5-coder wrote an XML element of its own invention, fenced; no format has it.
    "repo_captures/line_6",
    # The same model, the call as one self-closing XML element.
    "repo_captures/line_7",
    # Hermes 2 Pro's invented "output" key is read as the arguments of a call that has none.
    "repo_captures/line_8",
]


def test_progress_bar_only_on_a_terminal(tmp_path: Path) -> None:
    """A real terminal on stderr (a pty) gets tqdm's bar, with records per second; a pipe gets none."""
    pytest.importorskip("tqdm")
    import fcntl
    import pty
    import struct
    import termios

    log = tmp_path / "many.jsonl"
    log.write_text("".join(json.dumps({"raw": f"reply {i}"}) + "\n" for i in range(300)), encoding="utf-8")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # (a new pty is 0 columns wide)
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    proc = subprocess.run(
        [sys.executable, "-m", "toolgram", "check", str(log)], stdout=subprocess.PIPE, stderr=slave, env=env, timeout=60
    )
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert proc.returncode == 0
    text = shown.decode("utf-8", "replace")
    assert "300/300" in text and "records/s" in text, text
    assert b"300/300" not in proc.stdout and b"records/s" not in proc.stdout
    piped = run("check", str(log))
    assert piped.returncode == 0 and piped.stderr == ""


# -- new-format ------------------------------------------------------------------------------


def test_new_format_writes_a_grammar_that_reads_the_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    example = tmp_path / "Acme Reply.txt"
    example.write_text('Checking.\n<|act_begin|>{"name": "get_weather", "arguments": {"city": "Paris"}}<|act_end|>', encoding="utf-8")
    proc = run("new-format", "acme", "--example", str(example), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    grammar = tmp_path / "grammars" / "acme.lark"
    case = tmp_path / "tests" / "corpus" / "acme" / "acme_reply.txt"
    assert case.read_bytes() == example.read_bytes()
    fmt = load_user_format(grammar)
    assert (fmt.name, fmt.starts, fmt.ends) == ("acme", ("<|act_begin|>",), ("<|act_end|>",))
    assert "the example parses: 1 call(s) (get_weather)" in proc.stdout
    monkeypatch.chdir(tmp_path)
    code, parsed = main(capsys, "parse", "--json", "--grammar-path", "grammars", "--format", "acme", str(case))
    assert [c["name"] for c in json.loads(parsed)["calls"]] == ["get_weather"]
    code, audit = main(capsys, "explain", "--grammar-path", "grammars", str(case))
    assert code == 0 and "acme  get_weather" in audit and "START  '<|act_begin|>'" in audit
    assert _cli.main(["new-format", "acme", "--example", str(example)]) == 2
    assert "exists (use --force" in capsys.readouterr().err


def test_new_format_python_style_into_dir(tmp_path: Path) -> None:
    example = tmp_path / "py.txt"
    example.write_text('<<fn>>[lookup(q="x"), other(a=1)]<</fn>> done', encoding="utf-8")
    assert _cli.main(["new-format", "py_calls", "--example", str(example), "--dir", str(tmp_path / "proj")]) == 0
    grammar = tmp_path / "proj" / "grammars" / "py_calls.lark"
    result = toolgram.parse(example.read_text(), formats=["py_calls"], grammar_paths=grammar)
    assert [(c.name, c.arguments) for c in result.calls] == [("lookup", {"q": "x"}), ("other", {"a": 1})]


def test_max_chars_option(tmp_path: Path) -> None:
    reply = tmp_path / "long.txt"
    reply.write_text('<tool_call>{"name": "write_file", "arguments": {"content": "' + "x" * 80 + '"}}</tool_call> ok', encoding="utf-8")
    cut = json.loads(run("parse", "--json", "--max-chars", "60", str(reply)).stdout)
    assert cut["calls"][0]["repairs"][-1] == "cut_by_max_chars"
    assert cut["text"].endswith("</tool_call> ok")
    whole = json.loads(run("parse", "--json", "--max-chars", "none", str(reply)).stdout)
    assert whole["calls"][0]["arguments"] == {"content": "x" * 80} and whole["calls"][0]["repairs"] == []
    assert run("parse", "--max-chars", "-1", str(reply)).returncode == 2


def test_truncated_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A call the end of the reply cut inside a value: repaired (the default), or an error.
    reply = tmp_path / "cut.txt"
    reply.write_text('<tool_call>{"name": "get_weather", "arguments": {"city": "Par', encoding="utf-8")
    for mode in ("repair", "error"):
        expected = json.loads(json.dumps(result_json(toolgram.parse(raw(reply), truncated=mode))))
        code, out = main(capsys, "parse", "--json", "--truncated", mode, str(reply))
        assert code == 0 and json.loads(out) == expected
    assert expected["calls"] == [] and expected["errors"][0].startswith('Arguments for "get_weather" were cut off')
    code, out = main(capsys, "parse", str(reply))
    assert code == 0 and "cut_value" in out  # (repaired: closed_tag, closed_json, cut_value)
    code, out = main(capsys, "explain", "--truncated", "error", str(reply))
    assert code == 0 and expected["errors"][0] in out and "repairs: closed_tag, closed_json, cut_value" in out
    proc = run("stream", "--truncated", "error", stdin=raw(reply))
    assert [json.loads(line) for line in proc.stdout.splitlines()] == [{"event": "error", "message": expected["errors"][0]}]
    assert run("parse", "--truncated", "refuse", str(reply)).returncode == 2


def test_check_reads_truncated_from_the_case_or_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from toolgram._audit.cases import load_cases

    reply = '<tool_call>{"name": "get_weather", "arguments": {"city": "Par'
    folder = tmp_path / "captures"
    folder.mkdir()
    (folder / "refused.txt").write_text(reply, encoding="utf-8")
    (folder / "refused.truncated.json").write_text('"error"', encoding="utf-8")
    (folder / "plain.txt").write_text(reply, encoding="utf-8")
    corpus = tmp_path / "r.jsonl"
    corpus.write_text(json.dumps({"raw": reply, "truncated": "error", "id": "refused"}) + "\n", encoding="utf-8")
    cases = {c.id: c for c in load_cases([corpus, folder])}
    assert [cases[i].truncated for i in ("r/refused", "captures/refused", "captures/plain")] == ["error", "error", None]
    data = json.loads(run("check", "--json", str(folder), str(corpus)).stdout)
    assert {c["id"]: [call["name"] for call in c["calls"]] for c in data["cases"]} == {
        "captures/plain": ["get_weather"],
        "captures/refused": [],
        "r/refused": [],
    }
    data = json.loads(run("check", "--json", "--truncated", "error", str(folder)).stdout)
    assert [c["calls"] for c in data["cases"]] == [[], []]
    (folder / "plain.truncated.json").write_text('"refuse"', encoding="utf-8")
    assert _cli.main(["check", str(folder)]) == 3
    assert 'plain.truncated.json: expected "repair" or "error"' in capsys.readouterr().out
    assert _cli.main(["check", "--strict", str(folder)]) == 2
    assert 'plain.truncated.json: expected "repair" or "error"' in capsys.readouterr().err


# A reply cut between the two escapes of an emoji holds a lone surrogate: JSON reads
# it, UTF-8 cannot write it. Each command writes its escape instead of failing.
LONE_SURROGATE = '<tool_call>{"name": "get_weather", "arguments": {"city": "Hi \\ud83d'


@pytest.mark.parametrize("command", [["stream"], ["parse", "-"], ["parse", "--json", "-"], ["explain", "-"]])
def test_a_lone_surrogate_in_a_value_is_written_as_its_escape(command: list[str]) -> None:
    proc = run(*command, stdin=LONE_SURROGATE)
    assert proc.returncode == 0, proc.stderr
    assert "\\ud83d" in proc.stdout


def test_parse_writes_control_characters_of_the_reply_as_escapes() -> None:
    """QA: an escape sequence in a reply acted on the terminal `toolgram parse` wrote to
    (`explain` already escaped it); CRLF line ends stay line ends."""
    proc = run("parse", "-", stdin="before\x1b[2Jafter\r\nnext\x07line")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "before\\x1b[2Jafter\n  next\\x07line" in proc.stdout


def test_explain_writes_control_characters_of_the_reply_as_escapes(tmp_path: Path) -> None:
    """QA: a tool name with an escape sequence in it reached the terminal raw from
    explain's region, call and error lines (with tools given, the unknown tool's error)."""
    reply = tmp_path / "reply.txt"
    reply.write_text('<tool_call>{"name": "x\x1b]0;t\x07\x1b[2J", "arguments": {}}</tool_call>', encoding="utf-8")
    tools = tmp_path / "tools.json"
    tools.write_text('["get_weather"]', encoding="utf-8")
    for extra in ([], ["--tools", str(tools)]):
        proc = run("explain", str(reply), *extra, env={"NO_COLOR": "1"})
        assert proc.returncode == 0, proc.stderr
        assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
        assert "x\\x1b]0;t\\x07" in proc.stdout
