"""The two catalogues are the only lists of their names, and the documents that
show them are generated from them:

- the rule vocabulary (src/toolgram/_grammar/vocabulary.py): grammars/README.md's
  table of rules, the builder's dispatch, the sets the pipeline keeps;
- the repairs (src/toolgram/_recover/catalog.py): docs/repairs.md's table.

Regenerate the tables with `python -m toolgram._audit.catalog --write-readme`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from toolgram._audit import catalog as tables
from toolgram._build import builder
from toolgram._grammar import vocabulary
from toolgram._grammar.catalog import builtin_formats
from toolgram._recover import catalog as repairs

SRC = REPO_ROOT / "src" / "toolgram"


@pytest.mark.parametrize("path, start, end, table", tables.generated_tables(), ids=lambda v: getattr(v, "name", None))
def test_generated_tables_are_current(path: Path, start: str, end: str, table: str) -> None:
    assert table.count("\n") > 5
    assert tables.readme_table(path.read_text(encoding="utf-8"), start, end) == table, (
        f"{path}: stale; run python -m toolgram._audit.catalog --write-readme"
    )


def test_check_fails_on_a_stale_rules_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "README.md"
    stale.write_text(f"# Grammars\n\n{vocabulary.START}\n| rule | meaning |\n{vocabulary.END}\n", encoding="utf-8")
    monkeypatch.setattr(tables, "RULES_DOC", stale)
    assert tables.main(["--check"]) == 1
    assert tables.main(["--write-readme"]) == 0
    assert tables.readme_table(stale.read_text(encoding="utf-8"), vocabulary.START, vocabulary.END) == vocabulary.rules_table()
    assert tables.main(["--check"]) == 0


# -- the vocabulary ----------------------------------------------------------------------

# Rule names built-in grammars use for structure only (the builder walks through them).
STRUCTURE = {
    "start", "key", "value", "type", "arg", "attr_key", "attr_name", "attr_other", "attr_type", "bare_value",
    "dq_value", "sq_value", "function_end", "invoke_end", "key_end", "param_end", "parameter_end", "value_end",
    "nested", "not_json", "open_param", "other_args", "request", "s_call", "s_thought", "wrapper", "next_call",
    "next_name", "block_call", "after_calls",
}
_GENERATED = re.compile(r"_(?:star|plus)_\d+$")  # (Lark's names for `x*`, `x+`)


def test_every_rule_of_a_builtin_grammar_is_in_the_vocabulary_or_structure() -> None:
    # A misspelt vocabulary name (`json_call`) would be structure, silently: the region
    # would make no call.
    used = set()
    for fmt in builtin_formats():
        for rule in fmt.compiled.callbacks:
            # (the name its tree gets: an alias's, `tool_instructions: T -> instructions`)
            name = vocabulary.rule_name(rule.tree_name)
            if not name.startswith("_") and not _GENERATED.search(name):
                used.add(name)
    assert len(used & set(vocabulary.BY_NAME)) > 15
    assert used - set(vocabulary.BY_NAME) - STRUCTURE == set()
    assert not STRUCTURE & set(vocabulary.BY_NAME)


def test_the_builder_has_a_handler_for_each_rule_it_reads_at_region_level() -> None:
    assert set(builder._HANDLERS) == set(vocabulary.REGION_LEVEL)
    assert {"call", "json_calls", "prose", "unclosed"} <= set(vocabulary.REGION_LEVEL)


def test_a_namespaced_rule_has_its_vocabulary_name() -> None:
    assert vocabulary.rule_name("pycall__call") == "call"
    assert vocabulary.rule_name("a__b__json_calls") == "json_calls"
    assert vocabulary.rule_name("pycall___arg") == "_arg"  # (inlined, as the grammar says)
    assert vocabulary.rule_name("call") == "call"


def test_the_driver_counts_calls_by_the_vocabulary() -> None:
    pythonic = next(f for f in builtin_formats() if f.name == "pythonic")
    assert "call" in pythonic.compiled.call_rules
    assert all(vocabulary.rule_name(r) in vocabulary.COUNTED_CALLS for r in pythonic.compiled.call_rules)


# -- the repairs ---------------------------------------------------------------------------

_NAME = re.compile(r"[a-z]+(?:_[a-z]+)+|comments|apostrophe")


def recorded_names() -> dict[str, list[str]]:
    """Repair names the code records: string literals in a call of note(...) / _note(...),
    or in a list, tuple or expression on a line that speaks of repairs."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "catalog.py":
            continue
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and _NAME.fullmatch(node.value)):
                continue
            line = lines[node.lineno - 1]
            if re.search(r"\brepairs\b|\bnote\(|_note\(", line) and not line.lstrip().startswith(("#", "def ")):
                found.setdefault(node.value, []).append(f"{path.relative_to(SRC)}:{node.lineno}")
    return found


# Literals on such lines that are no repair names.
NOT_REPAIRS = {"store_true", "prose_at", "listed_ends", "paren_ends"}  # (an argparse action; a Driver slot; Checkpoint slots)


def test_every_repair_the_code_records_is_in_the_catalogue() -> None:
    found = recorded_names()
    assert {"closed_tag", "trailing_comma", "cut_by_max_chars"} <= set(found)  # (the scan finds them)
    unknown = {n: where for n, where in found.items() if n not in repairs.NAMES and n not in NOT_REPAIRS}
    assert not unknown, f"repairs missing from src/toolgram/_recover/catalog.py: {unknown}"


def test_every_repair_in_the_catalogue_is_recorded_somewhere() -> None:
    found = recorded_names()
    code = "\n".join(p.read_text(encoding="utf-8") for p in SRC.rglob("*.py") if p.name != "catalog.py")
    stale = [n for n in sorted(repairs.NAMES) if n not in found and f'"{n}"' not in code]
    assert not stale, f"catalogued repairs no code records: {stale}"


def test_catalogue_names_are_unique() -> None:
    names = [n for group, _ in repairs.REPAIRS for n in group]
    assert len(names) == len(set(names)) == len(repairs.NAMES) > 20
