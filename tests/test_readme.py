"""The formats tables (docs/formats.md's in full, README.md's short) are generated from
the grammar files' headers, and docs/repairs.md's table names every repair the corpus shows.

When a formats table is stale, a grammar's header changed (or a format was added):
regenerate both with

    python -m toolgram._audit.catalog --write-readme
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO_ROOT, corpus_cases

import toolgram
from toolgram._audit import catalog as _catalog
from toolgram._grammar import catalog as _tables


def test_readme_formats_table_is_current() -> None:
    assert _catalog.README == REPO_ROOT / "README.md"
    text = _catalog.README.read_text(encoding="utf-8")
    table = _catalog.readme_table(text)
    assert table is not None, f"README.md has no {_catalog.START} … {_catalog.END} section"
    assert table == _catalog.short_table(), "stale formats table in README.md: run python -m toolgram._audit.catalog --write-readme"


def test_docs_formats_table_is_current() -> None:
    assert _catalog.FORMATS_DOC == REPO_ROOT / "docs" / "formats.md"
    text = _catalog.FORMATS_DOC.read_text(encoding="utf-8")
    table = _catalog.readme_table(text)
    assert table is not None, f"docs/formats.md has no {_catalog.START} … {_catalog.END} section"
    assert table == toolgram.formats_table(), "stale formats table in docs/formats.md: run python -m toolgram._audit.catalog --write-readme"


def test_check_fails_on_a_stale_table_and_write_fixes_it(tmp_path: Path) -> None:
    readme, doc = tmp_path / "README.md", tmp_path / "docs" / "formats.md"
    readme.write_text(f"# Title\n\n{_catalog.START}\n{toolgram.formats_table()}{_catalog.END}\n", encoding="utf-8")  # the wrong table
    args = ["--readme", str(readme), "--formats-doc", str(doc)]
    assert _catalog.main(["--check", *args]) == 1
    assert _catalog.main(["--write-readme", *args]) == 0
    assert _catalog.main(["--check", *args]) == 0
    assert _catalog.readme_table(readme.read_text(encoding="utf-8")) == _catalog.short_table()
    assert _catalog.readme_table(doc.read_text(encoding="utf-8")) == toolgram.formats_table()


@pytest.mark.parametrize("table, cells", [(toolgram.formats_table, 7), (_catalog.short_table, 5)], ids=["full", "short"])
def test_table_lists_every_builtin_format_once(table, cells: int) -> None:
    names = [f.name for f in _catalog.builtin_formats()]
    rows = table().splitlines()[2:]
    assert len(rows) == len(names)
    for name, row in zip(names, rows):
        assert row.startswith(f"| `{name}` |")
        assert len(re.findall(r"(?<!\\)\|", row)) == cells + 1, row  # escaped pipes stay inside their cells


def test_markers_are_code_and_pipes_escaped() -> None:
    fmt = next(f for f in _catalog.builtin_formats() if f.name == "lfm2")
    row = toolgram.formats_table([fmt]).splitlines()[2]
    assert row.endswith("| `<\\|tool_call_start\\|>[name(key=value, …), …]<\\|tool_call_end\\|>` | yes | yes | its end |")
    assert _tables._code("```json x ```") == "` ```json x ``` `"
    assert _tables._code("a `b` c") == "``a `b` c``"


def test_streams_arguments_says_how_a_format_streams() -> None:
    # (a JSON call object through a fast frame, or after the opener a header declares; per
    # parameter, the tags a header declares; yes, a Python-style list's keyword arguments)
    rows = {f.name: row for f, row in zip(_catalog.builtin_formats(), _catalog.short_table().splitlines()[2:])}
    rows = {name: row.rsplit(" | ", 1)[0] + " |" for name, row in rows.items()}  # (call done at: below)
    assert rows["hermes"].endswith("| yes |")
    assert rows["minimax_m2_invoke"].endswith("| per parameter |") and rows["kimi_k3_open_close"].endswith("| per parameter |")
    assert rows["mistral"].endswith("| yes |") and rows["kimi_k2"].endswith("| yes |")
    assert rows["pythonic"].endswith("| yes |") and rows["harmony"].endswith("| yes |")
    assert rows["llama3_builtin"].endswith("| yes |") and rows["gemma4_call"].endswith("| yes |") and rows["mfcs"].endswith("| yes |")
    assert rows["cohere_cofl_xml"].endswith("| per parameter |") and rows["minimax_m3_nested_xml"].endswith("| per parameter |")
    assert rows["bfcl_verbose_xml"].endswith("| per parameter |")  # (values in attributes: stream_attr)


def test_call_done_at_says_where_a_stream_completes_a_call() -> None:
    # (measured on the canonical form, or from the header; tests/test_call_done_at.py checks
    # each row against the stream on the corpus)
    rows = {f.name: row for f, row in zip(_catalog.builtin_formats(), _catalog.short_table().splitlines()[2:])}
    assert rows["hermes"].endswith("| its end |") and rows["functools"].endswith("| its end |")
    assert rows["llama3_json"].endswith("| the text after it |") and rows["pythonic"].endswith("| the text after it |")
    assert rows["mistral"].endswith("| the text after it |") and rows["granite"].endswith("| the text after it |")
    assert rows["gigachat"].endswith("| its end |")  # (done_at: end)
    assert rows["json_reply"].endswith("| the reply's end |")


def test_with_table_appends_then_replaces() -> None:
    text = _catalog.with_table("# Title\n", "| a |\n")
    assert text == f"# Title\n\n{_catalog.START}\n| a |\n{_catalog.END}\n"
    assert _catalog.readme_table(text) == "| a |\n"
    again = _catalog.with_table(text + "More.\n", "| b |\n")
    assert again == f"# Title\n\n{_catalog.START}\n| b |\n{_catalog.END}\nMore.\n"


REPAIRS_DOC = REPO_ROOT / "docs" / "repairs.md"


def documented_repairs(text: str) -> set[str]:
    """The repair names in the first column of the table that starts with `| repair |`."""
    start = text.index("\n| repair |") + 1
    end = text.find("\n\n", start)
    table = text[start : end if end >= 0 else len(text)]
    return set(re.findall(r"`([a-z_]+)`", "\n".join(line.split("|")[1] for line in table.splitlines() if line.startswith("| `"))))


def test_documented_repairs_reads_the_first_column() -> None:
    text = "Intro `not_this`.\n\n| repair | what |\n|---|---|\n| `a_b` | x `c` |\n| `d`, `e` | y |\n\nAfter `f`.\n"
    assert documented_repairs(text) == {"a_b", "d", "e"}
    with pytest.raises(ValueError):
        documented_repairs("no table here\n")


def test_every_repair_the_corpus_shows_is_in_the_repairs_table() -> None:
    """Each repair a call records is one the repairs table of docs/repairs.md explains."""
    documented = documented_repairs(REPAIRS_DOC.read_text(encoding="utf-8"))
    seen = set()
    for case in corpus_cases():  # (parsed now: a stored snapshot may be out of date)
        result = toolgram.parse(case.raw, case.tools, formats=case.formats, in_think=case.in_think)
        for call in result.calls:
            seen.update(call.repairs)
    assert len(seen) > 10, f"too few repairs in the corpus: {sorted(seen)}"
    assert seen <= documented, f"repairs not in the table of docs/repairs.md: {sorted(seen - documented)}"
