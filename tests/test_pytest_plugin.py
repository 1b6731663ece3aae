"""The pytest plugin (toolgram/pytest_plugin.py), run by pytester in a temporary project:
a folder of captured replies -> snapshots written by --snapshot-update -> the run passes ->
a changed case fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import toolgram
from toolgram._audit.cases import result_data

pytest_plugins = ["pytester"]

CORPUS = Path(__file__).resolve().parent / "corpus"
CASES = {
    "hermes/two_calls.txt": CORPUS / "hermes" / "prose_before_between_after.txt",
    "hermes/repaired.txt": CORPUS / "hermes" / "python_literals.txt",
    "unreadable.txt": CORPUS / "hermes" / "missing_name.txt",
}
INI = "[pytest]\ntoolgram_corpus = captures\n"
# In-process runs drop the modules they import; hypothesis' plugin would re-import (and
# assertion-rewrite) all of hypothesis on every run: seconds each. It has no part here.
FAST = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")


def runpytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*FAST, *args)


def make_project(pytester: pytest.Pytester, ini: str = INI) -> Path:
    captures = pytester.path / "captures"
    for rel, source in CASES.items():
        target = captures / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
    (captures / "hermes" / "repaired.tools.json").write_text('["get_weather", "search_web"]', encoding="utf-8")
    records = [
        {"raw": "Just prose, no call.", "model": "mine"},
        {"id": "named", "raw": '<tool_call>{"name": "a", "arguments": {"x": 1,}}</tool_call>'},
    ]
    (captures / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    pytester.makeini(ini)
    return captures


def snapshot_files(captures: Path) -> list[str]:
    return sorted(p.relative_to(captures / "_snapshots").as_posix() for p in (captures / "_snapshots").rglob("*.json"))


def test_snapshots_written_then_pass_then_fail_on_change(pytester: pytest.Pytester) -> None:
    captures = make_project(pytester)

    first = runpytest(pytester, "--snapshot-update")
    first.assert_outcomes(passed=5)
    first.stdout.fnmatch_lines(["*5 snapshots generated*"])
    assert snapshot_files(captures) == [
        "hermes/repaired.json",
        "hermes/two_calls.json",
        "runs/line_1.json",
        "runs/named.json",
        "unreadable.json",
    ]
    # a snapshot is the parse result as JSON (tools from the sidecar)
    case = captures / "hermes" / "repaired.txt"
    stored = json.loads((captures / "_snapshots" / "hermes" / "repaired.json").read_text(encoding="utf-8"))
    expected = toolgram.parse(case.read_bytes().decode(), ["get_weather", "search_web"])
    assert stored == json.loads(json.dumps(result_data(expected)))

    second = runpytest(pytester, "-v")
    second.assert_outcomes(passed=5)
    second.stdout.fnmatch_lines(["*captures/hermes/repaired.txt::repaired PASSED*", "*captures/runs.jsonl::named PASSED*"])

    (captures / "runs.jsonl").write_text(
        json.dumps({"raw": "Just prose, no call."}) + "\n"
        + json.dumps({"id": "named", "raw": '<tool_call>{"name": "a", "arguments": {"x": 2}}</tool_call>'}) + "\n",
        encoding="utf-8",
    )
    third = runpytest(pytester)
    third.assert_outcomes(passed=4, failed=1)
    third.stdout.fnmatch_lines(
        [
            "*toolgram case runs/named*",
            "*runs.jsonl:2: the parse result differs from *named.json",
            '*-*"x": 1*',
            '*+*"x": 2*',
            "*repairs*",
        ]
    )
    assert third.ret == pytest.ExitCode.TESTS_FAILED


def test_case_without_a_snapshot_fails(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    result = runpytest(pytester)
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines(["*does not exist*"])


def test_orphan_snapshot_fails_and_update_deletes_it(pytester: pytest.Pytester) -> None:
    captures = make_project(pytester)
    runpytest(pytester, "--snapshot-update").assert_outcomes(passed=5)
    orphan = captures / "_snapshots" / "hermes" / "removed_case.json"
    orphan.write_text("{}", encoding="utf-8")

    result = runpytest(pytester)
    result.assert_outcomes(passed=5)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*toolgram: no case for 1 snapshot(s)*", f"*{orphan}"])
    assert runpytest(pytester, "--snapshot-warn-unused").ret == pytest.ExitCode.OK

    runpytest(pytester, "--snapshot-update").stdout.fnmatch_lines(["*toolgram: deleted 1 snapshot(s)*"])
    assert not orphan.exists()
    assert runpytest(pytester).ret == pytest.ExitCode.OK


def test_selection_and_broken_files_never_delete_snapshots(pytester: pytest.Pytester) -> None:
    captures = make_project(pytester)
    runpytest(pytester, "--snapshot-update").assert_outcomes(passed=5)
    before = snapshot_files(captures)
    runpytest(pytester, "-k", "named", "--snapshot-update").assert_outcomes(passed=1, deselected=4)
    runpytest(pytester, "captures/unreadable.txt", "--snapshot-update").assert_outcomes(passed=1)
    assert snapshot_files(captures) == before
    (captures / "broken.jsonl").write_text('{"no raw": true}\n', encoding="utf-8")
    broken = runpytest(pytester, "--snapshot-update")
    broken.stdout.fnmatch_lines(["*toolgram corpus: *broken.jsonl:1: a record needs a \"raw\" string*"])
    assert broken.ret == pytest.ExitCode.INTERRUPTED
    assert snapshot_files(captures) == before  # syrupy must not take them for unused


def test_corpus_outside_testpaths_is_collected(pytester: pytest.Pytester) -> None:
    make_project(pytester, ini="[pytest]\ntestpaths = tests\ntoolgram_corpus = captures\n")
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_own.py").write_text("def test_own():\n    pass\n", encoding="utf-8")
    runpytest(pytester, "--snapshot-update").assert_outcomes(passed=6)
    # naming a path runs just that path, as usual
    runpytest(pytester, "tests").assert_outcomes(passed=1)


def test_options_tools_formats_and_grammar_paths(pytester: pytest.Pytester) -> None:
    captures = pytester.mkdir("captures")
    (captures / "mine.txt").write_text('Hi <<call>>{"name": "lookup", "arguments": {}}<</call>>', encoding="utf-8")
    grammars = pytester.mkdir("grammars")
    (grammars / "mine.lark").write_text(
        '// format: mine\n// start: <<call>>\n// end: <</call>>\n'
        'start: START json_calls END\njson_calls: JSON\nJSON: /[\\[{]/\nSTART: "<<call>>"\nEND: "<</call>>"\n',
        encoding="utf-8",
    )
    (pytester.path / "tools.json").write_text('["something_else"]', encoding="utf-8")
    pytester.makeini(
        "[pytest]\ntoolgram_corpus = captures\ntoolgram_grammar_paths = grammars\n"
        "toolgram_tools = tools.json\ntoolgram_formats =\n    mine\n"
    )
    runpytest(pytester, "--snapshot-update").assert_outcomes(passed=1)
    stored = json.loads((captures / "_snapshots" / "mine.json").read_text(encoding="utf-8"))
    assert stored["calls"] == [] and stored["errors"] == ['Unknown tool "lookup". Available now: something_else.']


@pytest.mark.parametrize("ini", ["toolgram_corpus = nonexist\n", "toolgram_corpus = captures nonexist\n"])
def test_a_corpus_that_does_not_exist_is_a_usage_error(pytester: pytest.Pytester, ini: str) -> None:
    # (Not "no tests ran", with the missing folder named nowhere.)
    make_project(pytester, ini="[pytest]\n" + ini)
    result = runpytest(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    missing = pytester.path / "nonexist"
    result.stderr.fnmatch_lines([f"ERROR: toolgram_corpus: {missing}: no such folder or file"])


def test_a_case_may_start_inside_think(pytester: pytest.Pytester) -> None:
    captures = pytester.mkdir("captures")
    (captures / "r1.txt").write_text("The user wants Paris.</think>Checking.", encoding="utf-8")
    (captures / "r1.in_think.json").write_text("true", encoding="utf-8")
    pytester.makeini("[pytest]\ntoolgram_corpus = captures\n")
    runpytest(pytester, "--snapshot-update").assert_outcomes(passed=1)
    stored = json.loads((captures / "_snapshots" / "r1.json").read_text(encoding="utf-8"))
    assert (stored["reasoning"], stored["text"]) == ("The user wants Paris.", "Checking.")


def test_inert_without_configuration(pytester: pytest.Pytester) -> None:
    captures = make_project(pytester, ini="[pytest]\n")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = runpytest(pytester)
    result.assert_outcomes(passed=1)
    # pytest's header lists the installed plugins ("plugins: syrupy-…, toolgram-…"): skip it
    output = "\n".join(line for line in result.stdout.lines if not line.startswith("plugins:"))
    assert "toolgram" not in output
    assert not (captures / "_snapshots").exists()


def test_pytest_plugins_line_next_to_the_entry_point(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """`pytest_plugins = ["toolgram.pytest_plugin"]` is harmless when the entry point
    already loaded the plugin (they share one name), and works with autoload disabled."""
    make_project(pytester)
    pytester.makeconftest('pytest_plugins = ["toolgram.pytest_plugin"]\n')
    runpytest(pytester, "--snapshot-update").assert_outcomes(passed=5)
    disabled = runpytest(pytester, "-p", "no:toolgram.pytest_plugin", "-W", "ignore::pytest.PytestConfigWarning")
    assert disabled.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    # entry-point autoload off: the conftest line alone loads it
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = runpytest(pytester, "-p", "syrupy")
    result.assert_outcomes(passed=5)


def test_toolgram_cases_helper(tmp_path: Path) -> None:
    from toolgram.pytest_plugin import toolgram_cases

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.txt").write_text("hi", encoding="utf-8")
    (tmp_path / "a" / "one.expected.json").write_text('[{"name": "x"}]', encoding="utf-8")
    cases = toolgram_cases(tmp_path / "a")
    assert [(c.id, c.raw, c.expected) for c in cases] == [("a/one", "hi", ({"name": "x"},))]


def test_snapshots_escape_a_lone_surrogate() -> None:
    # A reply may hold "\ud800" in a JSON string; json.loads gives a lone surrogate,
    # which UTF-8 cannot write: the snapshot escapes it instead of failing to save.
    from toolgram.pytest_plugin import snapshot_base

    text = snapshot_base()().serialize({"arguments": {"s": "a\ud800b"}, "text": "é"})
    assert text.encode("utf-8")
    assert "\\ud800" in text and json.loads(text) == {"arguments": {"s": "a\ud800b"}, "text": "é"}


def test_compare_option_chooses_what_fails_and_the_summary_groups_by_kind(pytester: pytest.Pytester) -> None:
    captures = pytester.mkdir("captures")
    replies = {
        "args": '<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>',
        "repair": 'Ok. <tool_call>{"name": "g", "arguments": {"y": 2,}}</tool_call>',
    }
    for name, raw in replies.items():
        (captures / f"{name}.txt").write_text(raw, encoding="utf-8")
    pytester.makeini("[pytest]\ntoolgram_corpus = captures\ntoolgram_compare = calls text\n")
    runpytest(pytester, "--snapshot-update").assert_outcomes(passed=2)
    (captures / "repair.txt").write_text(replies["repair"].replace(",}", "}"), encoding="utf-8")  # repairs only
    quiet = runpytest(pytester)
    quiet.assert_outcomes(passed=2)
    quiet.stdout.fnmatch_lines(["*toolgram: differences from the snapshots, by kind*", "*spans or repairs only*1*not compared*repair*"])
    (captures / "args.txt").write_text(replies["args"].replace('"x": 1', '"x": 3'), encoding="utf-8")
    loud = runpytest(pytester)
    loud.assert_outcomes(passed=1, failed=1)
    loud.stdout.fnmatch_lines(['*calls changed (name or arguments): call 1: f({"x": 1}) -> f({"x": 3})*', "*calls changed*1*1 failed*args*"])
    # the default compares everything: the repairs-only change fails too
    pytester.makeini("[pytest]\ntoolgram_corpus = captures\n")
    runpytest(pytester).assert_outcomes(passed=0, failed=2)
    pytester.makeini("[pytest]\ntoolgram_corpus = captures\ntoolgram_compare = spans\n")
    assert runpytest(pytester).ret == pytest.ExitCode.USAGE_ERROR
