"""Finding format grammars, reading their headers, compiling them once.

A format is one `.lark` file. Its leading `//` comment block is a header of
`key: value` lines that makes the file self-describing:

    // format: hermes
    // title: Hermes / Qwen tool-call tags
    // models: Hermes 2 Pro, Qwen2.5, Qwen3
    // markers: <tool_call> … </tool_call>
    // start: <tool_call>          (repeatable: a literal that opens a call region)
    // end: </tool_call>           (repeatable: a literal that closes it)
    // anchor: reply | whole       (no start marker: the region must open the reply,
    //                              or be the whole reply)
    // anchor: line                (the start literal counts only first on a line; after
    //                              the reply's start only when tools are given)
    // quiet: yes                  (a region that is not a call stays prose silently)
    // order: 20                   (position among formats when formats=None)
    // args_key: parameters        (the native key of the arguments in JSON call objects)
    // code_tool: code_interpreter  (the name of a call that is only raw `code`)
    // offered_only: yes           (a marker-less shape: a call only when it names an offered tool)
    // offered_only: always        (and never a call when no tools are given: code-like shapes)

The body is a Lark grammar (LALR) for one call region.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import regex
from lark import Lark
from lark.lexer import PatternStr

from .words import words

_PACKAGE = Path(__file__).resolve().parent.parent  # toolgram/

#: Terminals whose extent is found by a scanner instead of their pattern.
SPECIAL_TERMINALS = ("JSON", "PYVALUE")


def grammar_dirs() -> list[Path]:
    """The packaged grammars (wheel) first, then the source tree's (editable install)."""
    dirs = []
    for candidate in (_PACKAGE / "grammars", _PACKAGE.parent.parent / "grammars"):
        if candidate.is_dir():
            dirs.append(candidate)
            break
    return dirs


class UnknownFormat(KeyError):
    """A format name that no grammar declares (a KeyError that says what to do)."""

    def __init__(self, name: str, known: Any = ()) -> None:
        super().__init__(name)
        self.name = name
        close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.75)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        self.message = f"unknown format {name!r} ({hint}'toolgram formats' lists all {len(known)})"

    def __str__(self) -> str:
        return self.message


class GrammarError(Exception):
    """A grammar file that cannot be used; says which file and why.

    The message reads `path:line: what is wrong` when the line is known (`path: …`
    otherwise); `path` and `line` are also attributes (None when unknown).
    """

    def __init__(self, message: str, path: Path | str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


@dataclass(frozen=True)
class Terminal:
    name: str
    pattern: Any  # compiled `regex` pattern
    literal: str | None  # set when the terminal is a plain string
    priority: int


@dataclass
class Compiled:
    states: dict
    start_state: Any
    end_state: Any
    callbacks: dict
    terminals: dict[str, Terminal]
    ignore: tuple[Terminal, ...]
    # per LALR state: the terminals it accepts, best first (priority, then literal length)
    allowed: dict = field(default_factory=dict)
    accepts_end: dict = field(default_factory=dict)
    # The regex terminals that are the whole of a rule whose text is decoded as JSON
    # (`json_calls: PAYLOAD`, MFCS `args: TEXT`): a marker inside one of its JSON
    # strings does not end them (Driver._through).
    json_text: frozenset = frozenset()
    # Those of them that are a payload of calls and nothing else (`json_calls: PAYLOAD`).
    call_text: frozenset = frozenset()
    # What a marker of the grammar may start with (a literal token's first character
    # that is no letter or digit, a bracket, a tag): text after a call that starts
    # otherwise is prose (Driver.prose_at).
    literal_firsts: frozenset = frozenset()  # (set by _compile)


@dataclass(eq=False)  # identity equality: formats are hashed as cache keys
class Format:
    name: str
    path: Path
    source: str
    title: str = ""
    models: str = ""
    markers: str = ""
    starts: tuple[str, ...] = ()
    ends: tuple[str, ...] = ()
    anchor: str = ""  # "", "reply", "whole" or "line"
    quiet: bool = False
    order: int = 100
    args_key: str = "arguments"
    code_tool: str = ""  # the name of a call that is only raw `code`
    offered_only: bool = False
    needs_tools: bool = False  # offered_only: always
    _compiled: Compiled | None = field(default=None, repr=False)

    @property
    def compiled(self) -> Compiled:
        if self._compiled is None:
            self._compiled = _compile(self)
        return self._compiled


def read_header(text: str) -> dict[str, list[str]]:
    header: dict[str, list[str]] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("//"):
            break
        key, sep, value = stripped[2:].strip().partition(":")
        if sep and key.strip().isidentifier():
            header.setdefault(key.strip(), []).append(value.strip())
    return header


def load_format(path: Path) -> Format:
    text = path.read_text(encoding="utf-8")
    header = read_header(text)
    name = (header.get("format") or [path.stem])[0]
    try:
        order = int((header.get("order") or ["100"])[0])
    except ValueError:
        raise GrammarError(f"{path}: 'order' must be a whole number") from None
    return Format(
        name=name,
        path=path,
        source=text,
        title=(header.get("title") or [""])[0],
        models=(header.get("models") or [""])[0],
        markers=(header.get("markers") or [""])[0],
        starts=tuple(header.get("start", ())),
        ends=tuple(header.get("end", ())),
        anchor=(header.get("anchor") or [""])[0],
        quiet=(header.get("quiet") or ["no"])[0].lower() in ("yes", "true"),
        order=order,
        args_key=(header.get("args_key") or ["arguments"])[0],
        code_tool=(header.get("code_tool") or [""])[0],
        offered_only=(header.get("offered_only") or ["no"])[0].lower() in ("yes", "true", "always"),
        needs_tools=(header.get("offered_only") or ["no"])[0].lower() == "always",
    )


_JSON_TEXT_RULES = frozenset({"json_calls", "args", "keyed_calls", "json_reply"})


def _compile(fmt: Format) -> Compiled:
    try:
        lark = Lark(
            fmt.source,
            parser="lalr",
            lexer="contextual",
            import_paths=[fmt.path.parent / "shared", fmt.path.parent, *_builtin_shared()],
            cache=_cache_path(fmt),
            maybe_placeholders=False,
        )
    except Exception as exc:  # lark raises several kinds; all mean "this file is broken"
        raise located_error(fmt, exc) from exc
    conf = lark.parser.parser.parser.parse_table, lark.parser.parser.parser.callbacks
    table, callbacks = conf
    _check_call_rules(fmt, {str(rule.origin.name).rpartition("__")[2] for rule in callbacks})
    terminals: dict[str, Terminal] = {}
    for t in lark.terminals:
        literal = t.pattern.value if isinstance(t.pattern, PatternStr) and not t.pattern.flags else None
        flags = "".join(f"(?{f})" for f in t.pattern.flags)
        # (\w: a word character as the whole library reads it; see _words.py)
        source = flags + words(t.pattern.to_regexp())
        terminals[t.name] = Terminal(t.name, regex.compile(source), literal, t.priority)
    ignore = tuple(terminals[n] for n in lark.lexer_conf.ignore if n in terminals)
    compiled = Compiled(
        states=table.states,
        start_state=table.start_states["start"],
        end_state=table.end_states["start"],
        callbacks=callbacks,
        terminals=terminals,
        ignore=ignore,
    )
    compiled.json_text = frozenset(
        rule.expansion[0].name
        for rule in callbacks
        if str(rule.origin.name).rpartition("__")[2] in _JSON_TEXT_RULES
        and len(rule.expansion) == 1
        and rule.expansion[0].name in terminals
        and rule.expansion[0].name != "JSON"  # (the bracket scanner delimits that one)
        and terminals[rule.expansion[0].name].literal is None
    )
    elsewhere = {
        sym.name
        for rule in callbacks
        if not (str(rule.origin.name).rpartition("__")[2] == "json_calls" and len(rule.expansion) == 1)
        for sym in rule.expansion
    }
    compiled.call_text = frozenset(
        rule.expansion[0].name
        for rule in callbacks
        if str(rule.origin.name).rpartition("__")[2] == "json_calls"
        and len(rule.expansion) == 1
        and rule.expansion[0].name in compiled.json_text
        and rule.expansion[0].name not in elsewhere
    )
    compiled.literal_firsts = frozenset("<[{").union(
        t.literal[0] for t in terminals.values() if t.literal and not t.literal[0].isalnum()
    )
    for state, row in table.states.items():
        allowed = [terminals[k] for k in row if k in terminals]
        allowed.sort(key=lambda t: (-t.priority, -len(t.literal or "")))
        compiled.allowed[state] = tuple(allowed)
        compiled.accepts_end[state] = "$END" in row
    return compiled


def _cache_path(fmt: Format) -> str | bool:
    # Lark's cache file name includes a hash of the grammar, so a stale file is never used.
    base = os.environ.get("TOOLGRAM_CACHE_DIR")
    if base:
        Path(base).mkdir(parents=True, exist_ok=True)
        return str(Path(base) / f"{fmt.name}-{sys.version_info[0]}{sys.version_info[1]}.lark.cache")
    return True


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
            user.setdefault(fmt.name, fmt)  # the first path that defines a name wins
        self.formats.update(user)

    def select(self, names: Any = None) -> tuple[Format, ...] | list[Format]:
        """The formats named, in that order; names=None: every format, in the order
        they are tried, as one tuple kept for the next caller (parse() asks once per
        reply, and the scanner knows a set of formats it has seen by that tuple)."""
        if names is None:
            cached = self.__dict__.get("_ordered")
            if cached is None or len(cached) != len(self.formats):
                cached = self.__dict__["_ordered"] = tuple(sorted(self.formats.values(), key=lambda f: (f.order, f.name)))
            return cached
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
        return chosen


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
_NAME = regex.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
_registries: dict[tuple, Registry] = {}
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
    found = _registries.get(key)
    if found is None:
        found = _build_registry(explicit, env)
        _registries[key] = found
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
    if _entry_point_paths is None:
        from importlib.metadata import entry_points

        found: list[tuple[str, Any]] = []
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                value = ep.load()
                if callable(value):
                    value = value()
                for path in split_paths(value):
                    found.append((ep.name, path))
            except Exception as exc:  # noqa: BLE001 - a broken plugin must not break parsing
                found.append((ep.name, _BrokenEntryPoint(f"entry point {ep.name} = {ep.value}: {exc}")))
        _entry_point_paths = found
    return _entry_point_paths


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
    time with `path:line: …` instead of in the middle of a reply."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GrammarError(f"{path}: cannot read: {exc}", path) from None
    lines = text.splitlines()

    def at(key: str) -> int:
        for i, line in enumerate(lines, 1):
            if line.strip().startswith("//") and line.strip()[2:].strip().startswith(key + ":"):
                return i
        return 1

    try:
        fmt = load_format(path)
    except GrammarError:
        raise GrammarError(f"{path}:{at('order')}: 'order' must be a whole number", path, at("order")) from None
    if not _NAME.match(fmt.name):
        raise GrammarError(f"{path}:{at('format')}: format name {fmt.name!r} is not a plain name", path, at("format"))
    if fmt.anchor not in ("", "reply", "whole", "line"):
        raise GrammarError(f"{path}:{at('anchor')}: anchor must be 'reply', 'whole' or 'line', not {fmt.anchor!r}", path, at("anchor"))
    if not fmt.starts and not fmt.anchor:
        raise GrammarError(
            f"{path}:1: the header has no '// start: <marker>' line and no '// anchor:', so the format could never match",
            path,
            1,
        )
    fmt.compiled  # noqa: B018 - compile now: raises a located GrammarError
    return fmt


def _builtin_shared() -> list[Path]:
    return [d / "shared" for d in grammar_dirs() if (d / "shared").is_dir()]


_LINE_IN_MESSAGE = regex.compile(r"\bline (\d+)")
# Lark messages that name the symbol at fault without a line: find where it is defined.
_DEFINED_SYMBOL = (
    regex.compile(r"Cannot compile token ([A-Za-z_][A-Za-z0-9_]*)"),
    regex.compile(r"\(([A-Z_][A-Z0-9_]*): "),  # zero-width terminals (START: '…')
    regex.compile(r"following rules:\s*-\s*<([A-Za-z_][A-Za-z0-9_]*) :"),  # collisions
    regex.compile(r"Terminals? '?([A-Z_][A-Z0-9_]*)'?"),
)


# The rules the builder makes calls of, and the parts it reads only inside one.
_CALL_HOLDERS = frozenset({"call", "agent_call", "memory_call", "json_calls", "keyed_calls", "json_reply"})
_CALL_PARTS = ("name", "args", "param", "typed_param", "kwarg", "posarg", "loose_args", "element", "code")


def _check_call_rules(fmt: Format, rules: set) -> None:
    """A grammar that names a call's parts (`name`, `args`, …) but has no `call` rule
    to hold them would read regions that make no call: its text would vanish, with
    no error. Said when the file is loaded instead."""
    if rules & _CALL_HOLDERS:
        return
    parts = [r for r in _CALL_PARTS if r in rules]
    if parts:
        line = _line_of(fmt.source, regex.escape(parts[0]), parts[0])
        where = f"{fmt.path}:{line}" if line else str(fmt.path)
        raise GrammarError(
            f"{where}: rule {parts[0]!r} is read only inside a 'call' rule, and the grammar has none "
            f"(write `call: … name … args …` and use `call` in `start`)",
            fmt.path,
            line,
        )


def located_error(fmt: Format, exc: Exception) -> GrammarError:
    """A Lark (or import) error as GrammarError `path:line: message`."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    line = getattr(exc, "line", None)
    if not isinstance(line, int) or line < 1:
        m = _LINE_IN_MESSAGE.search(str(exc))
        line = int(m.group(1)) if m else _line_of_symbol(fmt.source, str(exc))
    message = regex.sub(r",? at line \d+,? column \d+(?: in <string>)?:?", "", message).rstrip(" :.")
    token = getattr(exc, "token", None)
    if token is not None and getattr(exc, "expected", None):  # lark's grammar-of-grammars parser
        expected = ", ".join(sorted(_LARK_TOKENS.get(e, e) for e in exc.expected))
        message = f"unexpected {_LARK_TOKENS.get(token.type, repr(str(token)))}, expected {expected}"
    if isinstance(exc, FileNotFoundError) and exc.filename:
        message = f"%import: no grammar {exc.filename!r} beside the file, in shared/ or built in"
        line = _line_of(fmt.source, regex.escape(Path(str(exc.filename)).stem), "%import") or line
    where = f"{fmt.path}:{line}" if line else str(fmt.path)
    return GrammarError(f"{where}: {message}", fmt.path, line)


_LARK_TOKENS = {"_NL": "end of line", "_RPAR": "')'", "_LPAR": "'('", "_RBRA": "']'", "_LBRA": "'['",
                "_COLON": "':'", "_OR": "'|'", "_DOT": "'.'", "RULE": "a rule name", "TERMINAL": "a terminal name",
                "STRING": "a string", "REGEXP": "a /regexp/", "$END": "end of file"}


def _line_of_symbol(source: str, message: str) -> int | None:
    if "defined more than once" in message:
        m = regex.search(r"'([A-Za-z_][A-Za-z0-9_]*)'", message)
        if m:
            hits = _lines_defining(source, m.group(1))
            return hits[1] if len(hits) > 1 else (hits[0] if hits else None)
    if "NonTerminal('start')" in message:
        return None
    m = regex.search(r"Rule '([A-Za-z_][A-Za-z0-9_]*)' used but not defined \(in rule ([A-Za-z_][A-Za-z0-9_]*)\)", message)
    if m:
        return _line_of(source, regex.escape(m.group(1)), None, after=_lines_defining(source, m.group(2))[:1])
    for pattern in _DEFINED_SYMBOL:
        m = pattern.search(message)
        if m:
            hits = _lines_defining(source, m.group(1))
            if hits:
                return hits[0]
    return None


def _lines_defining(source: str, symbol: str) -> list[int]:
    pat = regex.compile(rf"^\s*[?!]?{regex.escape(symbol)}(?:\.\-?\d+)?\s*:")
    return [i for i, line in enumerate(source.splitlines(), 1) if pat.match(line)]


def _line_of(source: str, word: str, prefix: str | None, after: list[int] = ()) -> int | None:
    start = after[0] if after else 1
    pat = regex.compile(rf"(?<![A-Za-z0-9_]){word}(?![A-Za-z0-9_])")
    for i, line in enumerate(source.splitlines(), 1):
        if i < start or line.strip().startswith("//"):
            continue
        if (prefix is None or line.lstrip().startswith(prefix)) and pat.search(line):
            return i
    return None
