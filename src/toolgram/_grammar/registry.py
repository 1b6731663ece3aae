"""Which formats exist: the built-in grammars, the user's (grammar_paths=,
TOOLGRAM_GRAMMAR_PATH, `toolgram.grammars` entry points), one Registry per set of
paths, a few kept (least recently used first out).

The header is read and checked in header.py, the grammar compiled in compile.py
(through lark_table.py, the only module touching Lark's internals); their names are
re-exported here for the modules that import them from this one.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from .._guard import fatal, signals_deferred
from .compile import SPECIAL_TERMINALS, Compiled, Terminal, compile_format, located_error  # noqa: F401 - re-exported
from .header import (  # noqa: F401 - re-exported
    Format,
    GrammarError,
    GrammarWarning,
    builtin_shared,
    grammar_dirs,
    load_format,
    load_user_format_header,
    read_header,
)


class UnknownFormat(KeyError):
    """A format name that no grammar declares (a KeyError that says what to do)."""

    def __init__(self, name: str, known: Any = ()) -> None:
        super().__init__(name)
        self.name = name
        import difflib  # (only for a name not known: not at import)

        close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.75)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        self.message = f"unknown format {name!r} ({hint}'toolgram formats' lists all {len(known)})"

    def __str__(self) -> str:
        return self.message


class Registry:
    """Every known format, by name.

    `user_paths`: user grammar files and folders, highest priority first, each a path
    (explicit) or a `(path, explicit)` pair; a user format replaces a built-in one of the
    same name. A broken explicit grammar raises GrammarError; a broken ambient one
    (TOOLGRAM_GRAMMAR_PATH, entry points) is left out and its message kept in `problems`.
    """

    def __init__(self, dirs: list[Path] | None = None, *, user_paths: Any = ()) -> None:
        self.formats: dict[str, Format] = {}
        for directory in dirs if dirs is not None else grammar_dirs():
            for path in sorted(directory.glob("*.lark")):
                fmt = load_format(path)
                self.formats.setdefault(fmt.name, fmt)
        self.builtin = dict(self.formats)
        self.problems: list[str] = []
        self.broken: dict[str, str] = {}  # format name -> why it was left out
        self.shadowed: list[str] = []  # built-in format names a user format replaces
        user: dict[str, Format] = {}
        for path, explicit in _expand(user_paths, self.problems):
            try:
                fmt = load_user_format(path)
            except GrammarError as exc:
                if explicit:
                    raise
                self.problems.append(str(exc))
                self.broken.setdefault(_declared_name(path), str(exc))
                continue
            if fmt.name in user:
                continue  # the first path that defines a name wins
            user[fmt.name] = fmt
            builtin = self.builtin.get(fmt.name)
            if builtin is not None:
                if "order" not in read_header(fmt.source):
                    # A replacement is tried where the format it replaces was (a user's
                    # hermes before granite, which shares <tool_call>), not at the default.
                    fmt.order = builtin.order
                self.shadowed.append(fmt.name)
                warnings.warn(f"toolgram: {replaces(fmt, builtin)}", GrammarWarning, stacklevel=3)
        self.formats.update(user)

    def select(self, names: Any = None) -> Sequence[Format]:
        """The formats named, in that order, then those their `also:` lines name
        (_with_also); names=None: every format, in the order
        they are tried, as one tuple kept for the next caller (parse() asks once per
        reply, and the scanner knows a set of formats it has seen by that tuple)."""
        if names is None:
            cached = self.__dict__.get("_ordered")
            if cached is None or len(cached) != len(self.formats):
                cached = self.__dict__["_ordered"] = tuple(sorted(self.formats.values(), key=lambda f: (f.order, f.name)))
            return cached
        # (Names alone, asked again: the tuple made the first time, its formats the same
        # while the registry's are. parse(formats=["hermes"]) asks once per reply, and the
        # scanner knows a set of formats it has seen by that tuple, as for names=None.)
        key = (names,) if type(names) is str else tuple(names) if type(names) in (list, tuple) else None
        if key is not None:
            for name in key:
                if type(name) is not str:
                    key = None  # (a Format given, or no name: made anew, or told, as before)
                    break
        if key is not None:
            selected = self.__dict__.get("_selected")
            if selected is None:
                selected = self.__dict__["_selected"] = {}
            found = selected.get(key)
            if found is not None and found[0] == len(self.formats):
                return found[1]
        if isinstance(names, (str, Format)):
            names = [names]
        elif not isinstance(names, Iterable):
            raise TypeError(f"formats must be format names (or None for all), not {type(names).__name__}")
        chosen = []
        for name in names:
            if not isinstance(name, (str, Format)):
                raise TypeError(f"formats must be format names, not {type(name).__name__} {name!r}")
            fmt = name if isinstance(name, Format) else self.formats.get(name)
            if fmt is None:
                if name in self.broken:
                    raise GrammarError(self.broken[name])
                raise UnknownFormat(name, self.formats)
            chosen.append(fmt)
        if key is None:
            return self._with_also(chosen)
        made = tuple(self._with_also(chosen))
        if len(selected) < 256:
            selected[key] = (len(self.formats), made)
        return made

    def _with_also(self, chosen: list[Format]) -> list[Format]:
        """The formats named, then the ones their headers' `also:` lines name, each
        once, in that order: a format named for a model reads every shape that model
        writes, also those another grammar reads (Llama 4's bare `[f(a=1)]` is
        `pythonic`'s). Not the ones those name in turn: `also:` names the other
        shapes of this format's models, not of that format's (xlam's list in
        Hermes's tags is no reason to read Qwen2's `<response><tools>`, which
        hermes names: QA7 D12). A name no format has is passed over."""
        out = list(chosen)
        seen = {id(f) for f in out}
        for fmt in chosen:
            for name in fmt.also:
                other = self.formats.get(name)
                if other is not None and id(other) not in seen:
                    seen.add(id(other))
                    out.append(other)
        return out


def replaces(fmt: Format, builtin: Format) -> str:
    """What a user format replacing a built-in one is told (a GrammarWarning's text)."""
    return (
        f"{fmt.path} (format {fmt.name}) replaces the built-in format {fmt.name} "
        f"({builtin.path.name}); give it another name in its '// format:' line to keep both"
    )


def default_registry() -> Registry:
    """Built-in formats, plus TOOLGRAM_GRAMMAR_PATH and `toolgram.grammars` entry points."""
    return registry_for(None)


# -- user grammars -------------------------------------------------------------------
#
# Where user formats come from, highest priority first (the first file that defines a
# format name wins; any of them replaces a built-in format of that name):
#   1. `grammar_paths=` (parse, StreamParser, ProseFilter; the CLI's --grammar-path):
#      explicit configuration, so a broken or missing file raises GrammarError;
#   2. the TOOLGRAM_GRAMMAR_PATH variable (os.pathsep-separated files or folders);
#   3. entry points in the group `toolgram.grammars`: each resolves to a folder or file
#      path, a list of them, or a callable returning either.
# 2 and 3 are ambient: a broken file there is left out, with a warning, and parse()
# adds its message to result.errors, so one bad file never breaks every parse.
# A folder contributes its *.lark files (not sub-folders; `shared/` beside them is on
# the %import path). Files are read once per process and path list.

GRAMMAR_PATH_ENV = "TOOLGRAM_GRAMMAR_PATH"
ENTRY_POINT_GROUP = "toolgram.grammars"
#: How many registries are kept (each holds its formats and their compiled tables): a
#: server that builds registries for many path lists does not grow.
MAX_REGISTRIES = 8
_registries: dict[tuple, Registry] = {}  # least recently used first
_last_key: Any = None
_entry_point_paths: list[tuple[str, Any]] | None = None


def _environment_lookup(name: str) -> Any:
    """A function returning os.environ's value for `name`, or None, read each time (a
    test or the program may set it at any moment). os.environ.get goes through
    Mapping.get, __getitem__, the key's encoding and a KeyError when the variable is
    unset, which is most of parse()'s cost on a short reply; the mapping os.environ
    keeps its values in (`_data`, keyed as encodekey() makes them) is read at once."""
    environ = os.environ
    data = getattr(environ, "_data", None)
    encodekey, decode = getattr(environ, "encodekey", None), getattr(environ, "decodevalue", None)
    if type(data) is not dict or encodekey is None or decode is None:
        return partial(environ.get, name)  # (another Python: the public way)
    key = encodekey(name)

    def lookup(_get=data.get, _key=key) -> str | None:
        value = _get(_key)
        return None if value is None else decode(value)

    return lookup


_grammar_path_env = _environment_lookup(GRAMMAR_PATH_ENV)


def registry_for(grammar_paths: Any = None) -> Registry:
    """The registry for these explicit `grammar_paths` (plus the ambient ones), cached."""
    # (cwd may change: paths are made absolute each time)
    explicit = () if grammar_paths is None else tuple(os.path.abspath(p) for p in split_paths(grammar_paths))
    env = _grammar_path_env() or ""
    key = (explicit, env)
    global _last_key
    found = _registries.get(key)
    if found is None:
        found = _build_registry(explicit, env)
        while len(_registries) >= MAX_REGISTRIES:
            del _registries[next(iter(_registries))]
        _registries[key] = found
        _last_key = key
    elif key != _last_key:  # (the same registry again: nothing to move)
        _registries[key] = _registries.pop(key)
        _last_key = key
    return found


def split_paths(paths: Any) -> list[Path]:
    """None, a path, an os.pathsep-separated string, or an iterable of paths -> paths."""
    if paths is None:
        return []
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = []
    for item in paths:
        if isinstance(item, str):
            out.extend(Path(part) for part in item.split(os.pathsep) if part)
        else:
            out.append(Path(item))
    return out


def _build_registry(explicit: tuple[str, ...], env: str) -> Registry:
    import warnings

    ambient = [(p, False) for p in split_paths(env)] + [(p, False) for _, p in _entry_points()]
    registry = Registry(user_paths=[(Path(p), True) for p in explicit] + ambient)
    for problem in registry.problems:
        warnings.warn(f"toolgram: grammar left out: {problem}", RuntimeWarning, stacklevel=3)
    return registry


def _entry_points() -> list[tuple[str, Any]]:
    """(entry point, path) for each path the `toolgram.grammars` entry points give."""
    global _entry_point_paths
    if _entry_point_paths is None and not _may_declare_entry_points():
        _entry_point_paths = []
    if _entry_point_paths is None:
        from importlib.metadata import entry_points

        found: list[tuple[str, Any]] = []
        with signals_deferred():  # (the discovery swallows every Exception)
            points = entry_points(group=ENTRY_POINT_GROUP)
        for ep in points:
            try:
                value = ep.load()
                if callable(value):
                    value = value()
                for path in split_paths(value):
                    found.append((ep.name, path))
            except Exception as exc:  # noqa: BLE001 - a broken plugin must not break parsing
                if fatal(exc):
                    raise
                found.append((ep.name, _BrokenEntryPoint(f"entry point {ep.name} = {ep.value}: {exc}")))
        _entry_point_paths = found
    return _entry_point_paths


def _may_declare_entry_points() -> bool:
    """Whether an installed distribution may declare `toolgram.grammars` entry points:
    False only when none can (a quick look, in place of importing importlib.metadata
    and reading every distribution, most of a cold start's first parse). Each folder
    on sys.path is listed, and the entry_points.txt of each *.dist-info or *.egg-info
    in it searched for the group's name; a path entry that is no folder (a zip, an
    egg) or an importer that finds distributions its own way (not the standard
    PathFinder) may hold some: True, and the standard discovery decides."""
    import sys
    from importlib.machinery import PathFinder

    if any(f is not PathFinder and hasattr(f, "find_distributions") for f in sys.meta_path):
        return True
    needle = ENTRY_POINT_GROUP.encode()
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                names = [e.name for e in it]
        except NotADirectoryError:
            return True  # (a zip or an egg on the path)
        except OSError:
            continue  # (a path entry that does not exist holds nothing)
        for name in names:
            if name.endswith((".dist-info", ".egg-info", ".egg")):
                inner = "EGG-INFO" if name.endswith(".egg") else ""
                try:
                    with open(os.path.join(entry or ".", name, inner, "entry_points.txt"), "rb") as f:
                        if needle in f.read():
                            return True
                except FileNotFoundError:
                    continue
                except OSError:
                    return True  # (one that cannot be read: let the standard way look)
    return False


class _BrokenEntryPoint:
    def __init__(self, message: str) -> None:
        self.message = message


def _expand(user_paths: Any, problems: list[str]) -> list[tuple[Path, bool]]:
    """Paths or (path, explicit) pairs -> (.lark file, explicit); a missing explicit
    path is a GrammarError, a missing ambient one a problem."""
    files: list[tuple[Path, bool]] = []
    for item in user_paths or ():
        path, explicit = item if isinstance(item, tuple) else (item, True)
        if isinstance(path, _BrokenEntryPoint):
            problems.append(path.message)
            continue
        path = Path(path)
        if path.is_dir():
            files.extend((f, explicit) for f in sorted(path.glob("*.lark")))
        elif path.is_file():
            files.append((path, explicit))
        else:
            message = f"{path}: no such grammar file or folder"
            if explicit:
                raise GrammarError(message, path)
            problems.append(message)
    return files


def _declared_name(path: Path) -> str:
    try:
        return (read_header(path.read_text(encoding="utf-8")).get("format") or [path.stem])[0]
    except (OSError, UnicodeDecodeError):
        return path.stem


def load_user_format(path: Path) -> Format:
    """Read, check and compile a user's grammar file now, so mistakes surface at load
    time with `path:line: …` instead of in the middle of a reply. What compiling finds
    questionable is warned (GrammarWarning) and kept in `fmt.warnings`."""
    fmt = load_user_format_header(path)
    for message in fmt.compiled.warnings:  # compile now: raises a located GrammarError
        warnings.warn(f"toolgram: {message}", GrammarWarning, stacklevel=2)
    return fmt
