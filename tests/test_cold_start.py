"""Cold start: what `import toolgram` and the first parse load, and the table cache
that lets the first parse of a process run without Lark (_grammar/tables.py).

The cache must give the tables Lark builds (the tree callbacks included: they are
toolgram's own, built as Lark builds its), be invalidated by any change of what
they are made of, and never be a reason to fail: a missing, corrupt or foreign
file, or a folder that cannot be written, leaves the grammar compiled by Lark."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

import toolgram
from toolgram._grammar import registry as _registry
from toolgram._grammar import tables
from toolgram._grammar.compile import _lark_of
from toolgram._lalr.tree import Tree

ROOT = Path(__file__).resolve().parent.parent
BUILTIN = [f for f in _registry.Registry().formats.values() if f.parser == "lalr"]
REPLY = (
    "Let me look that up for you.\n"
    '<tool_call>\n{"name": "find_train", "arguments": {"from": "Lyon", "to": "Turin", "seats": 2}}\n</tool_call>\n'
    '<tool_call>\n{"name": "find_hotel", "arguments": {"city": "Turin", "nights": 3}}\n</tool_call>'
)

_CHILD = """
import json, sys
import toolgram
loaded_at_import = sorted(m for m in ("lark", "regex", "jsonschema", "toolgram.openai", "toolgram._constrain.grammar",
                                     "toolgram._tools.prompts", "toolgram._stream.parser", "importlib.metadata") if m in sys.modules)
result = toolgram.parse(sys.argv[1])
print(json.dumps({"import": loaded_at_import, "lark": "lark" in sys.modules,
                  "metadata": "importlib.metadata" in sys.modules,
                  "calls": [[c.name, c.arguments, list(c.span)] for c in result.calls], "text": result.text}))
"""


def _fresh(cache: Path, reply: str = REPLY) -> dict:
    env = {**os.environ, "TOOLGRAM_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT / "src")}
    env.pop("TOOLGRAM_GRAMMAR_PATH", None)
    out = subprocess.run([sys.executable, "-c", _CHILD, reply], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_first_parse_of_a_process_needs_no_lark_once_the_cache_is_warm(tmp_path: Path) -> None:
    cold = _fresh(tmp_path)  # (compiles with Lark, keeps the tables)
    assert cold["lark"] and any(tmp_path.glob("hermes-*.tables"))
    warm = _fresh(tmp_path)
    assert (warm["calls"], warm["text"]) == (cold["calls"], cold["text"])
    assert [c[0] for c in warm["calls"]] == ["find_train", "find_hotel"]
    assert not warm["lark"], "the first parse imported Lark although its tables were cached"
    # Importing toolgram loads the parser, not the command line, prompts, OpenAI shapes,
    # the stream, the validator or Lark; and with no distribution declaring grammars,
    # entry points are not looked up through importlib.metadata.
    assert warm["import"] == ["regex"] or warm["import"] == []
    assert not warm["metadata"]


def test_lazy_names_of_the_package_are_the_modules_names() -> None:
    from toolgram import events, openai, prompts, tools
    from toolgram._stream.parser import StreamParser

    assert toolgram.StreamParser is StreamParser
    assert toolgram.Text is events.Text and toolgram.render_prompt is prompts.render_prompt
    assert toolgram.normalize_tools is tools.normalize_tools and toolgram.openai is openai
    assert set(toolgram.__all__) <= set(dir(toolgram))
    with pytest.raises(AttributeError):
        toolgram.no_such_name  # noqa: B018


def _shape(node: object) -> object:
    """A tree (Lark's or ours) as nested tuples: its name and its children."""
    if hasattr(node, "data") and hasattr(node, "children"):
        return (str(node.data), tuple(_shape(c) for c in node.children))
    return node


def _children(rule: object, names: list[str]) -> list:
    """Children for a reduction of `rule`: a token text per terminal, a tree per rule
    (with two children of its own, so that inlining a `_rule` shows), each unique."""
    out = []
    for i, sym in enumerate(rule.expansion):
        if sym.is_term:
            out.append(f"tok{i}:{sym.name}")
        else:
            out.append((sym.name, [f"in{i}a", f"in{i}b"]))
    return out


@pytest.mark.parametrize("fmt", BUILTIN, ids=lambda f: f.name)
def test_the_tree_callbacks_shape_trees_as_larks_do(fmt) -> None:
    from lark import Tree as LarkTree

    from toolgram._grammar import lark_table

    lark = _lark_of(fmt)
    theirs = lark_table.table_of(lark).callbacks
    data = tables.table_data(lark)
    ours = tables.Table(marshal.loads(marshal.dumps(data)))  # (as the cache gives it back)
    assert len(ours.rules) == len(theirs)
    for rule, (their_rule, their_callback) in zip(ours.rules, theirs.items()):
        assert rule.origin.name == str(their_rule.origin.name)
        assert [s.name for s in rule.expansion] == [str(s.name) for s in their_rule.expansion]
        kids = _children(rule, [])
        mine = ours.callbacks[rule]([Tree(k[0], list(k[1])) if isinstance(k, tuple) else k for k in kids])
        lark_kids = [LarkTree(k[0], list(k[1])) if isinstance(k, tuple) else k for k in kids]
        assert _shape(mine) == _shape(their_callback(lark_kids)), rule
    # The actions: the same moves, state by state (numbered anew: tables._numbering).
    lt = lark_table.table_of(lark)
    number = tables._numbering(lt.states, lt.start_state, lark_table.Shift)
    assert sorted(number.values()) == list(range(len(lt.states)))
    assert (ours.start_state, ours.end_state) == (number[lt.start_state], number[lt.end_state]) and ours.start_state == 0
    for state, row in lt.states.items():
        mine_row = ours.states[number[state]]
        assert set(mine_row) == {str(k) for k in row}
        for sym, (kind, arg) in row.items():
            my_kind, my_arg = mine_row[str(sym)]
            assert my_kind.name == kind.name
            assert my_arg == number[arg] if my_kind is tables.Shift else my_arg.origin.name == str(arg.origin.name)


def test_a_cached_table_reads_as_the_built_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLGRAM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_registry, "_registries", {})
    built = toolgram.parse(REPLY, formats=["hermes"])
    assert any(tmp_path.glob("hermes-*.tables"))
    monkeypatch.setattr(_registry, "_registries", {})  # (new Format objects: compiled again, from the file)
    again = toolgram.parse(REPLY, formats=["hermes"])
    assert again == built and len(again.calls) == 2


def _store_and_key(folder: Path, fmt) -> tuple[str, Path]:
    key = tables.cache_key(fmt.source, [])
    tables.store(fmt.name, key, tables.table_data(_lark_of(fmt)))
    (path,) = folder.glob(f"{fmt.name}-*.tables")
    return key, path


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b"",
        lambda b: b"not marshal data at all",
        lambda b: b[: len(b) // 2],
        lambda b: marshal.dumps(("the key", {"rules": "nonsense"})),
        lambda b: marshal.dumps([1, 2, 3]),
        # (The right key, and data that does not hold together.)
        lambda b: marshal.dumps((marshal.loads(b)[0], {**marshal.loads(b)[1], "terminals": [("X", 1, 2, 3)]})),
        lambda b: marshal.dumps((marshal.loads(b)[0], {**marshal.loads(b)[1], "states": {
            k: {s: (1, 99_999) for s in row} for k, row in marshal.loads(b)[1]["states"].items()}})),
    ],
    ids=["empty", "garbage", "cut", "bad data", "wrong shape", "bad terminals, right key", "shifts to nowhere, right key"],
)
def test_a_corrupt_cache_file_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage) -> None:
    monkeypatch.setenv("TOOLGRAM_CACHE_DIR", str(tmp_path))
    fmt = _registry.Registry().formats["hermes"]
    key, path = _store_and_key(tmp_path, fmt)
    assert tables.load(fmt.name, key) is not None
    path.write_bytes(damage(path.read_bytes()))
    assert tables.load(fmt.name, key) is None
    # And a parse with it compiles the grammar as without a cache (and mends the file).
    monkeypatch.setattr(_registry, "_registries", {})
    result = toolgram.parse(REPLY, formats=["hermes"])
    assert [c.name for c in result.calls] == ["find_train", "find_hotel"]


def test_a_file_of_another_key_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The key is compared whole: a file under the name of this key that was written for
    # another grammar text (the grammar edited since) is not read as this one's.
    monkeypatch.setenv("TOOLGRAM_CACHE_DIR", str(tmp_path))
    fmt = _registry.Registry().formats["hermes"]
    _, path = _store_and_key(tmp_path, fmt)
    edited = tables.cache_key(fmt.source + "\n// edited\n", [])
    path.rename(tables._file(tmp_path, fmt.name, edited))
    assert tables.load(fmt.name, edited) is None
    # What the key is made of: the grammar, the shared grammars, Lark's and Python's versions.
    import lark

    shared = [ROOT / "grammars" / "shared"]
    full = tables.cache_key(fmt.source, shared)
    assert fmt.source in full and lark.__version__ in full and sys.version in full
    assert (ROOT / "grammars" / "shared" / "pycall.lark").read_text(encoding="utf-8") in full


def test_storing_a_grammars_table_drops_its_files_of_other_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An upgrade (of toolgram, Lark or the grammar) stores under a new key: the old
    # file goes, other grammars' files stay (hermes_function_tag starts with "hermes").
    monkeypatch.setenv("TOOLGRAM_CACHE_DIR", str(tmp_path))
    registry = _registry.Registry()
    fmt, other = registry.formats["hermes"], registry.formats["hermes_function_tag"]
    _, old = _store_and_key(tmp_path, fmt)
    _, kept = _store_and_key(tmp_path, other)
    newer = tables.cache_key(fmt.source + "\n// edited\n", [])
    tables.store(fmt.name, newer, tables.table_data(_lark_of(fmt)))
    assert not old.exists() and kept.exists()
    assert [p.name for p in tmp_path.glob("hermes-*.tables")] == [tables._file(tmp_path, fmt.name, newer).name]
    assert tables.load(fmt.name, newer) is not None and not list(tmp_path.glob("*.tmp"))


def test_a_folder_that_cannot_be_written_is_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    monkeypatch.setenv("TOOLGRAM_CACHE_DIR", str(blocker / "cache"))  # (a folder under a file: never made)
    monkeypatch.setattr(_registry, "_registries", {})
    result = toolgram.parse(REPLY, formats=["hermes"])
    assert [c.name for c in result.calls] == ["find_train", "find_hotel"]
    assert not list(tmp_path.glob("**/*.tables")) and not list(tmp_path.glob("**/*.tmp"))


def test_an_empty_cache_variable_turns_the_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLGRAM_CACHE_DIR", "")
    assert tables.cache_dir() is None
    monkeypatch.setenv("TOOLGRAM_CACHE_DIR", str(tmp_path))
    assert tables.cache_dir() == tmp_path


def test_entry_points_are_looked_up_when_a_distribution_may_declare_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The quick look says False only where no distribution on the path names the group.
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert not _registry._may_declare_entry_points()
    dist = tmp_path / "other-1.0.dist-info"
    dist.mkdir()
    (dist / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n", encoding="utf-8")
    assert not _registry._may_declare_entry_points()
    (dist / "entry_points.txt").write_text("[toolgram.grammars]\nmine = mine:GRAMMARS\n", encoding="utf-8")
    assert _registry._may_declare_entry_points()
    zipped = tmp_path / "bundle.zip"
    zipped.write_bytes(b"PK")
    monkeypatch.setattr(sys, "path", [str(zipped)])
    assert _registry._may_declare_entry_points()  # (a zip: the standard discovery looks inside)


# Formats whose tables once came out differently by process (issues 17/19: Lark numbers
# LALR states in a set's order, and a row's order broke ties between terminals and
# between the closers a cut reply is given): hy3 read `<arg_value>def wrap(x):\n ` cut
# there with or without its `\n ` by PYTHONHASHSEED, and the cache kept either.
_TIED = ["hy_v3_tool_sep_kv", "glm45_arg_kv", "kimi_k3_open_close", "qwen3_coder_xml", "pythonic", "mistral", "functionary_v31"]

_FINGERPRINT = """
import hashlib, sys
from toolgram._grammar.registry import Registry
formats = Registry().formats
for name in sys.argv[1:]:
    c = formats[name].compiled
    data = (
        [(t.name, t.source, t.literal, t.priority) for t in c.terminals.values()],
        [(s, [(k, kind.name, arg if kind.name == "Shift" else repr(arg)) for k, (kind, arg) in row.items()])
         for s, row in c.states.items()],
        [(s, [t.name for t in allowed]) for s, allowed in c.allowed.items()],
        c.start_state, c.end_state,
    )
    print(name, hashlib.sha256(repr(data).encode()).hexdigest())
"""


def _fingerprints(cache: Path, seed: int) -> str:
    env = {**os.environ, "TOOLGRAM_CACHE_DIR": str(cache), "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(ROOT / "src")}
    env.pop("TOOLGRAM_GRAMMAR_PATH", None)
    out = subprocess.run([sys.executable, "-c", _FINGERPRINT, *_TIED], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_compiled_tables_do_not_depend_on_the_process(tmp_path: Path) -> None:
    """Two processes of other hash seeds, each compiling with a fresh cache, make the
    same tables: the same state numbers, rows and ties broken alike (Compiled.allowed)."""
    first = _fingerprints(tmp_path / "a", 0)
    assert len(first.splitlines()) == len(_TIED)
    assert _fingerprints(tmp_path / "b", 1) == first


def test_importing_toolgram_compiles_no_pattern_a_hermes_reply_does_not_run() -> None:
    # (The pythonic list's lexer took ~30 ms to compile at import, in every process.)
    code = (
        "import json, re, sys, toolgram\nfrom toolgram._scan import pyframe\n"
        "before = type(pyframe._ARG).__name__\n"
        "toolgram.parse('<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>')\n"
        "hermes = type(pyframe._ARG).__name__\n"
        "calls = [c.name for c in toolgram.parse('[f(a=1), g(b=\"x\")]').calls]\n"
        "print(json.dumps([before, hermes, calls, type(pyframe._ARG) is re.Pattern, 'difflib' in sys.modules]))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["Lazy", "Lazy", ["f", "g"], True, False]


def test_a_lazy_pattern_is_the_compiled_one_once_used() -> None:
    import re

    from toolgram._grammar import words

    scope: dict = {"lazy": words.lazy, "re": re}
    exec("P = lazy(re.compile, r'(?P<w>a+)b', re.I)\nKEPT = (P,)", scope)  # (a module's top level)
    kept = scope["KEPT"][0]
    assert type(kept) is words.Lazy and kept.pattern == "(?P<w>a+)b"
    assert kept.match("AAb").group("w") == "AA"
    # The module's name is now the compiled pattern; a reference kept elsewhere works as one.
    assert type(scope["P"]) is re.Pattern and scope["P"].flags & re.I
    assert type(kept) is not words.Lazy and not hasattr(type(kept), "__getattr__")
    assert kept.groupindex == {"w": 1} and kept.search("xab").span() == (1, 3) and kept.pattern == "(?P<w>a+)b"
    inner = words.lazy(re.compile, "x")  # (made in a function: nothing to rebind)
    assert inner.fullmatch("x") and inner.groups == 0
