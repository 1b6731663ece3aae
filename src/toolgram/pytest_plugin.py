"""pytest plugin: your model's captured outputs as regression tests, one snapshot each.

Installed with toolgram (entry point `pytest11`, name `toolgram.pytest_plugin`); it does
nothing until you point it at a folder. One line of configuration:

    # pytest.ini                         # or pyproject.toml
    [pytest]                             # [tool.pytest.ini_options]
    toolgram_corpus = captures           # toolgram_corpus = ["captures"]

Every case in `captures/` (see toolgram._audit.cases: `<case>.txt` files with optional
`<case>.tools.json` / `.formats.json` / `.expected.json` / `.in_think.json` / `.truncated.json` sidecars,
and `*.jsonl` files of `{"raw": …}` records) becomes a test item that parses the reply and compares the
result (text, reasoning, errors, calls with arguments, spans and repairs) with its
snapshot, `captures/_snapshots/<case id>.json`, through syrupy:

    pytest --snapshot-update      # write the snapshots; review and commit them
    pytest                        # a parse that changed fails, with a diff

Optional settings: `toolgram_tools` (a JSON file of tools for cases without their own),
`toolgram_formats` (format names to try), `toolgram_grammar_paths` (your .lark files),
`toolgram_compare` (what differences fail a case, as `toolgram check --compare`: `calls`,
`text`, `errors` or `all`, the default; e.g. `calls text` lets error wording, spans and
repairs change). Whatever the choice, the summary counts the differences by kind.
When `pytest` runs its `testpaths` and the corpus lies outside them, the corpus is
collected too. A snapshot whose case no longer exists fails the run (like syrupy's
unused snapshots); `--snapshot-update` deletes it, `--snapshot-warn-unused` only warns.

Your own assertions instead: `toolgram_cases("captures")` returns the cases, e.g. for
`@pytest.mark.parametrize("case", toolgram_cases("captures"), ids=lambda c: c.id)`.
Disable the plugin with `-p no:toolgram.pytest_plugin`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# Not syrupy's "__snapshots__": syrupy treats `<folder of a test file>/__snapshots__` as
# its own and, in a run with no snapshot assertion (e.g. stopped by a collection error),
# would delete every file there that it did not see used.
SNAPSHOT_FOLDER = "_snapshots"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("toolgram_corpus", type="paths", default=[], help="toolgram: folders/.jsonl files of captured model outputs to snapshot-test")
    parser.addini("toolgram_tools", type="paths", default=[], help="toolgram: JSON file of the tools offered (cases without their own)")
    parser.addini("toolgram_formats", type="linelist", default=[], help="toolgram: format names to try (default: all)")
    parser.addini("toolgram_grammar_paths", type="paths", default=[], help="toolgram: your own .lark format files or folders")
    parser.addini(
        "toolgram_compare",
        type="args",
        default=["all"],
        help="toolgram: what differences from a snapshot fail a case: calls, text, errors or all (default: all)",
    )


def toolgram_cases(*paths: str | Path) -> list[Any]:
    """The cases under these folders/files (toolgram._audit.cases.Case: id, raw, tools, formats,
    expected, in_think, truncated), for tests of your own."""
    from ._audit.cases import load_cases

    return load_cases(list(paths))  # ids: <folder name>/<case>, <jsonl stem>/<id or line_n>


# -- configuration -----------------------------------------------------------------


class _Settings:
    def __init__(self, config: pytest.Config) -> None:
        self.corpora = [Path(p).resolve() for p in config.getini("toolgram_corpus")]
        tools_files = config.getini("toolgram_tools")
        self.tools_file = Path(tools_files[0]) if tools_files else None
        self.formats = list(config.getini("toolgram_formats")) or None
        self.grammar_paths = [str(p) for p in config.getini("toolgram_grammar_paths")] or None
        self._tools: Any = None
        self.used: set[Path] = set()  # corpora that had items collected
        from ._audit.baseline import BaselineError, failing_kinds

        choices = [c for arg in config.getini("toolgram_compare") for c in arg.split(",") if c]
        try:
            self.compare = failing_kinds(choices or ["all"])
        except BaselineError as exc:
            raise pytest.UsageError(f"toolgram_compare: {str(exc).removeprefix('--compare ')}") from None
        self.partial = "all" not in choices and bool(choices)
        # kind -> [(case id, whether it failed)], for the summary (toolgram._audit.baseline.KINDS)
        self.kinds: dict[str, list[tuple[str, bool]]] = {}

    def tools(self) -> Any:
        if self.tools_file is None:
            return None
        if self._tools is None:
            try:
                self._tools = json.loads(self.tools_file.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise pytest.UsageError(f"toolgram_tools = {self.tools_file}: {exc}") from None
        return self._tools

    def corpus_of(self, path: Path) -> Path | None:
        path = path.resolve()
        for root in self.corpora:
            if root == path or root in path.parents:
                return root
        return None


_KEY = pytest.StashKey[_Settings]()


def pytest_configure(config: pytest.Config) -> None:
    settings = _Settings(config)
    missing = [root for root in settings.corpora if not root.exists()]
    if missing:
        # (Else a misspelt folder collects nothing, and pytest says only "no tests ran".)
        raise pytest.UsageError(f"toolgram_corpus: {missing[0]}: no such folder or file")
    config.stash[_KEY] = settings
    if settings.corpora and config.args_source == pytest.Config.ArgsSource.TESTPATHS:
        # `pytest` with no arguments runs testpaths; run the corpus too.
        collected = [Path(a).resolve() for a in config.args]
        for root in settings.corpora:
            if root.exists() and not any(root == c or c in root.parents for c in collected):
                config.args.append(str(root))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    settings = parent.config.stash.get(_KEY, None)
    if settings is None or not settings.corpora or file_path.suffix not in (".txt", ".jsonl"):
        return None
    root = settings.corpus_of(file_path)
    if root is None:
        return None
    if root.is_dir():
        rel = file_path.resolve().relative_to(root)
        if any(part.startswith((".", "_")) for part in rel.parts):
            return None
    return CorpusFile.from_parent(parent, path=file_path, root=root)


# -- collection ----------------------------------------------------------------------


class CorpusFile(pytest.File):
    """One .txt case or one .jsonl file of cases."""

    def __init__(self, *, root: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.root = root

    def collect(self):  # type: ignore[override]
        try:
            import syrupy  # noqa: F401
        except ImportError:
            raise pytest.UsageError("toolgram_corpus needs syrupy for its snapshots: pip install syrupy") from None
        settings = self.config.stash[_KEY]
        settings.used.add(self.root)
        cases = _file_cases(self.path, self.root)
        snapshots = _snapshot_root(self.root)
        for case in cases:
            item = CaseItem.from_parent(self, name=case.id.rpartition("/")[2], callobj=_check_case)
            item.toolgram_case = case  # type: ignore[attr-defined]
            item.toolgram_snapshot = snapshots / f"{case.id}.json"  # type: ignore[attr-defined]
            yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:  # type: ignore[override]
        from ._audit.cases import CaseError

        from ._grammar.header import GrammarError

        if isinstance(excinfo.value, CaseError):
            return f"toolgram corpus: {excinfo.value}"
        if isinstance(excinfo.value, GrammarError):
            return f"toolgram cannot load a grammar:\n{excinfo.value}"
        return super().repr_failure(excinfo)


def _file_cases(path: Path, root: Path) -> list[Any]:
    """The cases of one file, ids relative to the corpus folder (hermes/single_call,
    runs/line_3) or, for a corpus that is one .jsonl file, <stem>/<id>."""
    from dataclasses import replace

    from ._audit.cases import load_cases

    cases = load_cases([path])
    if root.is_dir():
        rel = path.resolve().relative_to(root).with_suffix("").as_posix()
        prefix = rel if path.suffix == ".jsonl" else rel.rpartition("/")[0]
        cases = [replace(c, id=f"{prefix}/{c.id.rpartition('/')[2]}".lstrip("/")) for c in cases]
    return cases


def _snapshot_root(root: Path) -> Path:
    return (root if root.is_dir() else root.parent) / SNAPSHOT_FOLDER


def _check_case(request: pytest.FixtureRequest, snapshot: Any) -> None:
    """Parse the captured reply; the result must equal the case's snapshot."""
    from ._audit.cases import result_data
    from ._pipeline import parse

    case = request.node.toolgram_case
    settings = request.config.stash[_KEY]
    tools = case.tools if case.tools is not None else settings.tools()
    formats = list(case.formats) if case.formats is not None else settings.formats
    result = parse(
        case.raw,
        tools,
        formats=formats,
        grammar_paths=settings.grammar_paths,
        in_think=case.in_think,
        truncated=case.truncated or "repair",
    )
    assertion = snapshot.use_extension(_extension())
    data = result_data(result)
    stored = _stored(request.node.toolgram_snapshot)
    failing: dict[str, str] = {}
    if stored is not None:
        from ._audit.baseline import differences

        kinds = differences(stored, json.loads(json.dumps(data)))
        update = getattr(request.config.option, "update_snapshots", False)
        failing = {k: v for k, v in kinds.items() if k in settings.compare and not update}
        for kind in kinds:
            settings.kinds.setdefault(kind, []).append((case.id, kind in failing))
        if settings.partial and kinds and not failing and not update:
            return  # only differences toolgram_compare leaves out: a pass
    if not assertion == data:  # noqa: SIM201 - syrupy records the comparison
        # Spelled out rather than left to assertion rewriting, which may not reach this
        # module; the explanation is syrupy's diff, as for a plain `assert snapshot == x`.
        config = request.config
        found = config.hook.pytest_assertrepr_compare(config=config, op="==", left=assertion, right=data)
        lines = next((e for e in found if e), None) or ["snapshot differs"]
        if failing:
            from ._audit.baseline import KINDS

            lines = [f"{KINDS[k]}: {v}" for k, v in failing.items()] + lines
        raise CaseMismatch("\n".join(lines))


def _stored(path: Path) -> Any:
    """A case's snapshot as JSON data; None when there is none (yet) or it is not JSON."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and {"text", "errors", "calls"} <= data.keys() else None


class CaseMismatch(AssertionError):
    """The parse result differs from the case's snapshot; the message is syrupy's diff."""


class CaseItem(pytest.Function):
    """One captured reply; a failure shows the case and the diff, not plugin internals."""

    def reportinfo(self) -> tuple[Any, int | None, str]:
        case = self.toolgram_case  # type: ignore[attr-defined]
        line = case.source.rpartition(":")[2]
        return self.path, (int(line) - 1 if line.isdigit() else 0), f"toolgram case {case.id}"

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:  # type: ignore[override]
        from ._grammar.header import GrammarError

        if isinstance(excinfo.value, CaseMismatch):
            case = self.toolgram_case  # type: ignore[attr-defined]
            head = f"{case.source}: the parse result differs from {self.toolgram_snapshot}"  # type: ignore[attr-defined]
            return f"{head}\n(- snapshot, + received; --snapshot-update accepts the new result)\n{excinfo.value}"
        if isinstance(excinfo.value, GrammarError):  # toolgram_grammar_paths names a broken grammar
            case = self.toolgram_case  # type: ignore[attr-defined]
            return f"{case.source}: toolgram cannot load a grammar:\n{excinfo.value}"
        # (pytest's Function.repr_failure takes no `style` since pytest 8; pass it only where taken)
        if style is not None and "style" in _parameters(super().repr_failure):
            return super().repr_failure(excinfo, style=style)
        return super().repr_failure(excinfo)


def _parameters(method: Any) -> Any:
    import inspect

    try:
        return inspect.signature(method).parameters
    except (TypeError, ValueError):
        return {}


_BASE: Any = None
_EXTENSION: Any = None


def snapshot_base() -> Any:
    """The JSON snapshot extension a case's snapshot is written with (toolgram's own
    corpus tests use it too): never truncated, lone surrogates escaped, and nothing
    reported to syrupy's unused-snapshot search (unused snapshots are found by case
    id, exactly). Built lazily: syrupy is only needed when a corpus is configured."""
    global _BASE
    if _BASE is None:
        from syrupy.data import SnapshotCollections
        from syrupy.extensions.json import JSONSnapshotExtension

        class JsonCaseSnapshot(JSONSnapshotExtension):
            _max_depth = 1000  # the base class writes "..." below depth 99: never truncate

            def discover_snapshots(self, *, test_location: Any, ignore_extensions: Any = None) -> Any:
                return SnapshotCollections()

            def serialize(self, data: Any, *, exclude: Any = None, include: Any = None, matcher: Any = None) -> str:
                text = super().serialize(data, exclude=exclude, include=include, matcher=matcher)
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:  # a lone surrogate (decoded from "\ud800"): escape it
                    text = json.dumps(json.loads(text), indent=2, ensure_ascii=True) + "\n"
                return text

        _BASE = JsonCaseSnapshot
    return _BASE


def _extension() -> Any:
    """A JSON snapshot per case at <corpus>/_snapshots/<case id>.json."""
    global _EXTENSION
    if _EXTENSION is None:

        class CaseSnapshot(snapshot_base()):  # type: ignore[misc]
            @classmethod
            def dirname(cls, *, test_location: Any) -> str:
                return str(test_location.item.toolgram_snapshot.parent)

            @classmethod
            def discovery_dirname(cls, *, test_location: Any) -> str:
                # syrupy asks this for every collected test, ours or not; nothing is
                # discovered here anyway (see snapshot_base).
                snap = getattr(test_location.item, "toolgram_snapshot", None)
                return str(snap.parent if snap is not None else Path(test_location.filepath).parent)

            @classmethod
            def matches_test_location(cls, *, test_location: Any, snapshot_location: str) -> bool:
                snap = getattr(test_location.item, "toolgram_snapshot", None)
                return snap is not None and Path(snapshot_location) == snap

            @classmethod
            def get_snapshot_name(cls, *, test_location: Any, index: Any = 0) -> str:
                return str(test_location.item.toolgram_snapshot.stem)

        _EXTENSION = CaseSnapshot
    return _EXTENSION


# -- snapshots without a case ------------------------------------------------------------


def _orphans(settings: _Settings) -> list[Path]:
    from ._audit.cases import CaseError, folder_cases, load_cases

    out: list[Path] = []
    for root in sorted(settings.used):
        folder = _snapshot_root(root)
        if not folder.is_dir():
            continue
        try:
            cases = folder_cases(root) if root.is_dir() else load_cases([root])
        except CaseError:
            continue  # already reported as a collection error
        expected = {folder / f"{c.id}.json" for c in cases}
        if root.is_file():  # a lone .jsonl: only its own sub-folder is its business
            folder = folder / root.stem
        out += [p for p in sorted(folder.rglob("*.json")) if p not in expected]
    return out


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    settings = session.config.stash.get(_KEY, None)
    if settings is None or not settings.used or hasattr(session.config, "workerinput"):
        return
    if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return  # interrupted, collection errors, …: the picture is incomplete
    orphans = _orphans(settings)
    settings.orphans = orphans  # type: ignore[attr-defined]
    option = session.config.option
    if orphans and getattr(option, "update_snapshots", False):
        for path in orphans:
            path.unlink()
            try:
                path.parent.rmdir()  # only when empty
            except OSError:
                pass
        settings.deleted = orphans  # type: ignore[attr-defined]
    elif orphans and not getattr(option, "warn_unused_snapshots", False):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    settings = config.stash.get(_KEY, None)
    if settings is not None and settings.kinds:
        from ._audit.baseline import KINDS

        terminalreporter.write_sep("-", "toolgram: differences from the snapshots, by kind")
        width = max(len(KINDS[k]) for k in settings.kinds)
        for kind, title in KINDS.items():
            seen = settings.kinds.get(kind)
            if not seen:
                continue
            failed = sum(f for _, f in seen)
            if getattr(config.option, "update_snapshots", False):
                mark = "updated"
            else:
                mark = f"{failed} failed" if kind in settings.compare else "not compared (toolgram_compare)"
            ids = ", ".join(i for i, _ in seen[:3]) + (", …" if len(seen) > 3 else "")
            terminalreporter.write_line(f"  {title.ljust(width)}  {len(seen):>6}  {mark}: {ids}")
    orphans = getattr(settings, "orphans", None)
    if not orphans:
        return
    deleted = getattr(settings, "deleted", None)
    head = "deleted" if deleted else "no case for"
    terminalreporter.write_sep("-", f"toolgram: {head} {len(orphans)} snapshot(s)")
    for path in orphans:
        terminalreporter.write_line(f"  {path}")
    if not deleted:
        terminalreporter.write_line("delete them, or run with --snapshot-update")
