"""The package's layers: each module imports only from its own layer or the ones below,
late imports (inside functions) included, and no modules import each other in a circle.

From the bottom up, as a reply flows through them:

    leaves      _guard, _tools (the tool set, validation, prompts), _result.model and
                _result.openai, _lalr.jsonscan and .extent (scanning JSON and brackets),
                _recover.repair (lenient JSON), _grammar.words, _lalr.tree (the parse
                tree the drivers build, made by the grammar tables' callbacks)
    _grammar    grammar files to compiled formats
    _lalr       one region under one grammar: the incremental LALR driver, and the
                closing moves it makes (close.py)
    _recover    recovery of what a model broke in a payload (lenient JSON)
    _build      parse trees to call drafts
    _scan       prose and regions, with the policies for a region no candidate read
                (mention.py, salvage.py: they judge the scanner's items)
    _result     drafts to what the user gets; the stream's events (toolgram.events)
    _pipeline   parse()
    _stream     StreamParser, ProseFilter, MfcsSession
    public      toolgram, toolgram.tools, toolgram.prompts, toolgram.openai
    _audit      explain, check, cases, the CLI; the pytest plugin; toolgram.dataset (Arrow
                batches, as `check`'s baselines store results); __main__; _serve (toolgram serve)

Each package is one layer (leaf modules aside): a module's place says what it may use.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "toolgram"

LAYERS: list[list[str]] = [
    [
        "toolgram._guard", "toolgram._tools", "toolgram._result.model", "toolgram._result.openai",
        "toolgram._lalr.jsonscan", "toolgram._lalr.extent", "toolgram._recover.repair", "toolgram._grammar.words",
        "toolgram._lalr.tree",
    ],
    ["toolgram._grammar"],
    ["toolgram._lalr"],
    ["toolgram._recover"],
    ["toolgram._build"],
    ["toolgram._scan"],
    ["toolgram._result", "toolgram.events"],
    ["toolgram._pipeline"],
    ["toolgram._stream"],
    ["toolgram", "toolgram.tools", "toolgram.prompts", "toolgram.openai"],
    ["toolgram._audit", "toolgram._serve", "toolgram.pytest_plugin", "toolgram.dataset", "toolgram.__main__"],
]


def module_name(path: Path) -> str:
    parts = ["toolgram", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    """The layer of the longest prefix listed (a package's modules share its layer)."""
    best, found = -1, None
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, found = len(name), i
    assert found is not None, f"{module} is in no layer: add it to LAYERS"
    return found


def imports_of(module: str) -> list[tuple[str, int]]:
    path = MODULES[module]
    return imports_in(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")


def imports_in(source: str, module: str, is_package: bool) -> list[tuple[str, int]]:
    """The toolgram modules `module` imports (each name of `from X import a, b` that is a
    module counts as that module), with the line, late imports included."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    tree = ast.parse(source)
    # (Imports for type checkers only are not run.)
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "toolgram"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "toolgram":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub if sub in MODULES else target, node.lineno))
    return found


def test_every_module_has_a_layer() -> None:
    assert len(MODULES) > 30
    for module in MODULES:
        layer_of(module)


def upward(module: str, imports: list[tuple[str, int]]) -> list[str]:
    mine = layer_of(module)
    return [
        f"{module}:{line} imports {target} (layer {layer_of(target)} > {mine})"
        for target, line in imports
        if target in MODULES and layer_of(target) > mine
    ]




@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_reaches_up(module: str) -> None:
    found = upward(module, imports_of(module))
    assert not found, "\n".join(found)


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph = {m: sorted({t for t, _ in imports_of(m) if t in MODULES and t != m}) for m in MODULES}
    # (A package imports its own modules from __init__: that edge is no circle of code.)
    circles = []
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    assert not circles, circles


def test_the_check_sees_a_late_upward_import() -> None:
    source = "import json\n\ndef f():\n    from .._pipeline import parse\n    return parse\n"
    assert upward("toolgram._build.builder", imports_in(source, "toolgram._build.builder", False)) == [
        "toolgram._build.builder:4 imports toolgram._pipeline (layer 7 > 4)"
    ]
    # A module named in `from package import module` counts as that module.
    assert imports_in("from .._scan import scanner\n", "toolgram._build.builder", False) == [("toolgram._scan.scanner", 1)]
