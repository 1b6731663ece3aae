"""A format's LALR table as toolgram runs it, and the cache that keeps it between processes.

Lark analyses a grammar; what the driver needs of that is plain data: the terminals
(name, pattern, literal, priority), the %ignore'd ones, the rules (their symbols and
how their trees are shaped) and the action table. `table_data(lark)` takes it out of
Lark's objects as such data (dicts, tuples, strings and numbers), `Table(data)` makes
what the driver runs on: rows of `(Shift, state)` / `(Reduce, Rule)` actions and the
tree callbacks, built here as Lark's ParseTreeBuilder builds them (a `_rule` inlined,
filtered tokens left out, a `?rule` of one child replaced by it) but making
toolgram's own Tree (_lalr/tree.py).

So a built-in grammar, once analysed, needs neither Lark nor its analysis again:
the data is kept in a cache file (marshal, one per grammar and version of what
shapes it) and the first reply of a process reads it back without importing Lark.
The cache is only a shortcut: its key is the grammar's text, the shared grammars it
may import, the Lark version and this module's own sources, compared whole (not a
hash of them), so a file written for another version is never used; a file that
cannot be read, is corrupt or belongs to another key is ignored (the grammar is
compiled by Lark, as without a cache), and a folder that cannot be written is no
error: nothing is kept. TOOLGRAM_CACHE_DIR names the folder (by default the user's
cache folder: $XDG_CACHE_HOME/toolgram or ~/.cache/toolgram; %LOCALAPPDATA%\\toolgram
on Windows); TOOLGRAM_CACHE_DIR= (empty) turns the cache off.
"""

from __future__ import annotations

import marshal
import os
import sys
import threading
import zlib
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import Any

from .._guard import passes_through
from .._lalr.tree import Tree
from .words import words

#: Bumped when the shape of the data changes (the key holds it).
DATA_VERSION = 2  # (2: states numbered by _numbering, rows in order of name)


class _Action:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


Shift = _Action("Shift")
Reduce = _Action("Reduce")


class Symbol:
    """A rule's symbol: a terminal (`is_term`; `filter_out`: an anonymous or `_`
    token its tree leaves out) or a rule."""

    __slots__ = ("name", "is_term", "filter_out")

    def __init__(self, name: str, is_term: bool, filter_out: bool = False) -> None:
        self.name = name
        self.is_term = is_term
        self.filter_out = filter_out

    def __repr__(self) -> str:
        return self.name


class Rule:
    """One expansion of a rule: `origin.name` (namespace and all), its symbols, and
    what its tree is called (`tree_name`: the alias, or the rule's name)."""

    __slots__ = ("origin", "expansion", "tree_name", "expand1", "keep_all_tokens")

    def __init__(self, origin: str, expansion: tuple, tree_name: str, expand1: bool, keep_all_tokens: bool) -> None:
        self.origin = Symbol(origin, False)
        self.expansion = tuple(Symbol(*s) for s in expansion)
        self.tree_name = tree_name
        self.expand1 = expand1
        self.keep_all_tokens = keep_all_tokens

    def __repr__(self) -> str:
        return f"<{self.origin.name} : {' '.join(s.name for s in self.expansion)}>"


def table_data(lark: Any) -> dict:
    """What the driver needs of a Lark LALR parser, as plain data (see Table)."""
    from . import lark_table

    lt = lark_table.table_of(lark)
    index = {rule: i for i, rule in enumerate(lt.callbacks)}
    rules = []
    for rule in lt.callbacks:
        options = rule.options
        rules.append(
            (
                str(rule.origin.name),
                tuple((str(s.name), bool(s.is_term), bool(s.is_term and s.filter_out)) for s in rule.expansion),
                str(rule.alias or options.template_source or rule.origin.name),
                bool(options.expand1 and not rule.alias),
                bool(options.keep_all_tokens),
            )
        )
    number = _numbering(lt.states, lt.start_state, lark_table.Shift)
    states = {}
    for state in sorted(lt.states, key=number.__getitem__):
        row = lt.states[state]
        states[number[state]] = {
            str(sym): (1, number[arg]) if kind is lark_table.Shift else (0, index[arg])
            for sym, (kind, arg) in sorted(row.items(), key=lambda item: str(item[0]))
        }
    terminals = tuple(
        # (\w: a word character as the whole library reads it; see words.py)
        (
            str(t.name),
            "".join(f"(?{f})" for f in t.flags) + words(str(t.regexp)),
            None if t.literal is None else str(t.literal),
            int(t.priority),
        )
        for t in lt.terminals
    )
    return {
        "terminals": terminals,
        "ignore": tuple(map(str, lt.ignore)),
        "rules": tuple(rules),
        "states": states,
        "start": number[lt.start_state],
        "end": number[lt.end_state],
    }


def _numbering(states: dict, start: Any, shift: Any) -> dict:
    """The LALR states numbered in the order a walk from the start state meets them,
    each row's symbols taken by name. Lark numbers them in the order of a set of
    item sets, which changes with PYTHONHASHSEED: the table was the same but for its
    numbers and the order of each row, and the order of a row decided ties between
    terminals (Compiled.allowed), so a reply was read differently by process, and the
    cache kept whichever process wrote it first. Numbered so, the data is the same
    in every process."""
    number = {start: 0}
    queue = [start]
    for state in queue:
        for _, (kind, arg) in sorted(states[state].items(), key=lambda item: str(item[0])):
            if kind is shift and arg not in number:
                number[arg] = len(number)
                queue.append(arg)
    for state in states:  # (a state no shift reaches: none in an LALR table Lark built)
        number.setdefault(state, len(number))
    return number


class Table:
    """The data of table_data() made runnable: `states` (state -> {symbol: (Shift,
    state) or (Reduce, Rule)}), `start_state`, `end_state`, `rules`, `callbacks`
    (Rule -> the function building its tree from its children), `terminals`
    ((name, pattern source, literal, priority), in Lark's order) and `ignore`."""

    def __init__(self, data: dict) -> None:
        self.rules = tuple(Rule(*r) for r in data["rules"])
        rules = self.rules
        self.states = {
            state: {sym: (Shift, arg) if shift else (Reduce, rules[arg]) for sym, (shift, arg) in row.items()}
            for state, row in data["states"].items()
        }
        self.start_state = data["start"]
        self.end_state = data["end"]
        if self.start_state not in self.states or self.end_state not in self.states:
            raise ValueError("a table whose start or end state it does not hold")
        self.callbacks = {rule: _callback(rule) for rule in rules}
        self.terminals = tuple(data["terminals"])
        self.ignore = tuple(data["ignore"])
        _check(self)


def _check(table: Table) -> None:
    """A ValueError unless the table holds together: every shift goes to a state it
    has, every symbol it acts on is a terminal it has or a rule's origin, and each
    terminal is (name, pattern source, literal or None, priority). A file with the
    right key and broken data (a bad disk, a hand edit) is then not used, and is
    written again, rather than making every parse of its format an internal error."""
    names = set()
    for t in table.terminals:
        if not (
            type(t) is tuple and len(t) == 4 and type(t[0]) is str and type(t[1]) is str
            and (t[2] is None or type(t[2]) is str) and type(t[3]) is int
        ):  # fmt: skip
            raise ValueError(f"a terminal that is no (name, pattern, literal, priority): {t!r:.80}")
        names.add(t[0])
    symbols = names | {rule.origin.name for rule in table.rules} | {"$END"}
    for row in table.states.values():
        for sym, (kind, arg) in row.items():
            if sym not in symbols or (kind is Shift and arg not in table.states):
                raise ValueError(f"an action on {sym!r:.40} that leads nowhere")
    if not set(table.ignore) <= names:
        raise ValueError("an ignored terminal the table does not have")


def _callback(rule: Rule) -> Any:
    """The function that makes a rule's tree of its children, as Lark's ParseTreeBuilder
    makes it for LALR without placeholders: the children kept (a token whose terminal
    is filtered out is dropped, unless the rule keeps all tokens; a `_rule`'s children
    take its place; the list is reused, not copied, as Lark's), then the tree, or its
    one child for a `?rule`."""
    name = rule.tree_name
    # (Tree(name, children), made without a function of ours around it: a reduction
    # at each token of a reply of a thousand parameters.)
    tree = partial(Tree, name)
    build = tree
    if rule.expand1:

        def build(children: list, _make=tree) -> Any:
            return children[0] if len(children) == 1 else _make(children)

    keep = rule.keep_all_tokens
    include = [(i, not s.is_term and s.name.startswith("_")) for i, s in enumerate(rule.expansion) if keep or not s.filter_out]
    if len(include) == len(rule.expansion) and not any(inline for _, inline in include):
        return build

    if not any(inline for _, inline in include):
        # (Tokens left out, none inlined: the commonest, a call's `(` and `)`. Picked by
        # itemgetter: a list comprehension is a function call of its own, at each reduction.)
        if len(include) == 1:

            def picked(children: list, _keep=include[0][0], _make=build) -> Any:
                return _make([children[_keep]])

        elif include:

            def picked(children: list, _keep=itemgetter(*(i for i, _ in include)), _make=build) -> Any:
                return _make(list(_keep(children)))

        else:

            def picked(children: list, _make=build) -> Any:
                return _make([])

        return picked
    if include[0][1] and not any(inline for _, inline in include[1:]):
        # (A left-recursive list, `_args: _args "," arg`: the inlined child's own list
        # extended, as below.)
        # The list's tree itself, where it is this rule's (`_args`'s first child is an
        # `_args`) and plain, not a `?rule`'s: its children extended in place, as they are
        # anyway, and no new tree made around them (a tree a list item, thrown away at
        # once: a call of a thousand parameters made a thousand).
        same = build is tree

        def extended(children: list, _first=include[0][0], _rest=tuple(i for i, _ in include[1:]), _make=build, _name=name, _same=same) -> Any:
            first = children[_first]
            out = first.children
            for i in _rest:
                out.append(children[i])
            if _same and type(first) is Tree and first.data == _name and first._meta is None:
                return first
            return _make(out)

        return extended

    def filtered(children: list, _include=tuple(include), _make=build) -> Any:
        out: list = []
        for i, inline in _include:
            if inline:
                if out:
                    out += children[i].children
                else:  # (Lark's: the inlined child's own list, for left recursion)
                    out = children[i].children
            else:
                out.append(children[i])
        return _make(out)

    return filtered


# -- the cache -------------------------------------------------------------------------

_KEY_BASE: str | None = None  # the part of every key that is the same for all grammars (per process)


def cache_dir() -> Path | None:
    """Where table files are kept (None: nowhere; see the module's docstring)."""
    env = os.environ.get("TOOLGRAM_CACHE_DIR")
    if env is not None:
        return Path(env) if env else None
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA")
        return Path(base) / "toolgram" if base else None
    base = os.environ.get("XDG_CACHE_HOME") or (os.path.join(os.path.expanduser("~"), ".cache") if "HOME" in os.environ else "")
    return Path(base) / "toolgram" if base and os.path.isabs(base) else None


def _key_base(shared: list[Path]) -> str:
    """The versions the data depends on: ours, Python's, Lark's (read off its files,
    not imported), this module's and its helpers' sources (their sizes and times),
    and the shared grammars a built-in one may %import (their text)."""
    global _KEY_BASE
    if _KEY_BASE is None:
        parts = [f"toolgram tables {DATA_VERSION}", sys.implementation.cache_tag or "", sys.version]
        parts.append(_lark_version())
        here = Path(__file__).parent
        for name in ("tables.py", "lark_table.py", "words.py"):
            try:
                st = (here / name).stat()
                parts.append(f"{name} {st.st_size} {st.st_mtime_ns}")
            except OSError:
                parts.append(f"{name} ?")
        for folder in shared:
            for path in sorted(folder.glob("*.lark")):
                parts.append(f"--- {path.name}\n{path.read_text(encoding='utf-8')}")
        _KEY_BASE = "\n".join(parts)
    return _KEY_BASE


def _lark_version() -> str:
    """Lark's version, from its package's __init__.py (importing Lark is what the cache
    saves): the file's place and its `__version__` line."""
    lark = sys.modules.get("lark")
    if lark is not None:
        return f"lark {getattr(lark, '__version__', '?')} {getattr(lark, '__file__', '')}"
    from importlib.util import find_spec

    spec = find_spec("lark")
    origin = getattr(spec, "origin", None)
    if not origin:
        return "lark ?"
    with open(origin, encoding="utf-8") as f:
        for line in f:
            if line.startswith("__version__"):
                return f"lark {line.strip()} {origin}"
    return f"lark ? {origin}"


def cache_key(source: str, shared: list[Path]) -> str:
    return _key_base(shared) + "\n--- grammar\n" + source


def _file(folder: Path, name: str, key: str) -> Path:
    return folder / f"{name}-{zlib.crc32(key.encode('utf-8', 'surrogatepass')):08x}.tables"


def load(name: str, key: str) -> Table | None:
    """The cached table of grammar `name` under `key`, or None (no cache, no file, a
    file of another key, corrupt: the caller compiles the grammar instead)."""
    try:
        folder = cache_dir()
        if folder is None:
            return None
        with open(_file(folder, name, key), "rb") as f:
            stored = marshal.loads(f.read())
        if type(stored) is not tuple or len(stored) != 2 or stored[0] != key:
            return None
        return Table(stored[1])
    except Exception as exc:  # noqa: BLE001 - no file, or a bad one: compile as without a cache
        if passes_through(exc):
            raise
        return None


def store(name: str, key: str, data: dict) -> None:
    """Keep `data` for load(); a folder that cannot be written keeps nothing."""
    tmp = None
    try:
        folder = cache_dir()
        if folder is None:
            return
        folder.mkdir(parents=True, exist_ok=True)
        path = _file(folder, name, key)
        # (Named by process and thread: two threads compiling one grammar at once
        # each write their own file, and either whole file is right.)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(marshal.dumps((key, data)))
        os.replace(tmp, path)  # (whole or not at all, for a process reading it meanwhile)
        tmp = None
        # The same grammar's files of other keys are of an older toolgram, Lark or
        # grammar text: dropped, or each upgrade would leave a set behind.
        for old in folder.glob(f"{name}-*.tables"):
            if old != path and old.name[len(name) + 1 : -len(".tables")].isalnum():
                try:
                    old.unlink()
                except OSError:
                    pass
    except Exception as exc:  # noqa: BLE001 - a read-only or full disk: no cache, no error
        if passes_through(exc):
            raise
    finally:
        if tmp is not None:
            try:
                tmp.unlink()
            except OSError:
                pass
