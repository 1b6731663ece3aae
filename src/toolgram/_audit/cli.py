"""The `toolgram` command (also `python -m toolgram`).

    toolgram parse [FILE|-]          read one reply: prose, calls, errors, repairs (--json)
    toolgram stream                  read standard input as it arrives; events as JSON lines
    toolgram formats                 the known formats (built-in and user)
    toolgram grammar NAME|FILE       print a format's grammar file (warnings, declared conflicts on stderr)
    toolgram explain FILE            which format read which span, with which rules and repairs
    toolgram check CORPUS...         run captured outputs or logs; a table per format; exit 1 on a
                                     mismatch or a difference from --baseline, 3 on bad records
    toolgram new-format NAME --example FILE   a starting grammar and corpus case

Exit status: 0 success, 1 `check` found a mismatch (or a difference from its baseline), 3
`check` skipped bad records (and found nothing else), 2 bad arguments, unreadable input or
a broken grammar (one line on stderr, never a traceback; a broken grammar's Lark
explanation follows its first line, indented), 70 a bug of ours (one line;
TOOLGRAM_DEBUG=1 shows the traceback), 141 the reader of stdout went away.
"""

from __future__ import annotations

import argparse
import codecs
import json
import os
import re
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any, NoReturn, TextIO

PROG = "toolgram"


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + error
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


# -- small helpers -----------------------------------------------------------------


class Style:
    """ANSI colours when writing to a terminal and NO_COLOR is unset (--color overrides)."""

    CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "cyan": "36"}

    def __init__(self, stream: TextIO, mode: str = "auto") -> None:
        if mode == "always":
            self.on = True
        elif mode == "never":
            self.on = False
        else:
            self.on = _isatty(stream) and not os.environ.get("NO_COLOR")

    def __call__(self, text: str, *styles: str) -> str:
        if not self.on or not styles:
            return text
        codes = ";".join(self.CODES[s] for s in styles)
        return f"\033[{codes}m{text}\033[0m"


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def read_text(path: str) -> str:
    """A reply from a file or `-` (stdin), as text; CRLF kept; invalid UTF-8 replaced; a
    byte order mark at the start skipped (an editor's, not the model's: `toolgram check`
    skips it in its files too, and the spans shown are the reply's without it)."""
    try:
        if path == "-":
            if _isatty(sys.stdin):
                sys.stderr.write(f"{PROG}: reading the reply from standard input (end it with Ctrl-D)\n")
            data = sys.stdin.buffer.read()
        else:
            data = Path(path).read_bytes()
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from None
    return data.decode("utf-8-sig", errors="replace")


def read_tools(path: str | None) -> Any:
    """The --tools file's JSON, checked now (a number, a definition with no name, …
    is one error line, not a TypeError from deep in parse)."""
    from .._tools.tools import normalize_tools

    if path is None:
        return None
    text = read_text(path)
    try:
        tools = json.loads(text)
    except ValueError as exc:
        raise CLIError(f"{path}: not JSON ({exc})") from None
    try:
        normalize_tools(tools)
    except TypeError as exc:
        raise CLIError(f"{path}: not tools ({exc})") from None
    return tools


def format_names(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    return names or None


def registry(args: argparse.Namespace) -> Any:
    from .._grammar.registry import registry_for

    return registry_for(args.grammar_path or None)


def unknown_format(name: str, reg: Any) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(reg.formats), n=3, cutoff=0.75)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    return f"unknown format {name!r} ({hint}'toolgram formats' lists all {len(reg.formats)})"


def resolve_formats(args: argparse.Namespace) -> list[Any] | None:
    """Check the --format names now, for a clear error; None means all formats."""
    names = format_names(getattr(args, "format", None))
    if names is None:
        return None
    reg = registry(args)
    unknown = [n for n in names if n not in reg.formats and n not in reg.broken]
    if unknown:
        raise CLIError(unknown_format(unknown[0], reg))
    return names


def out_json(data: Any, stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout
    stream.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# Control characters of a reply, but newlines and tabs: written as their escapes in a
# report for a terminal (an escape sequence the model wrote would act on it).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _shown(text: str) -> str:
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def _indent(text: str, pad: str = "  ") -> str:
    return "\n".join(pad + line for line in _shown(text.replace("\r\n", "\n")).split("\n")) if text else ""


# -- parse ---------------------------------------------------------------------------


def cmd_parse(args: argparse.Namespace) -> int:
    from .cases import result_json
    from .._pipeline import parse

    raw = read_text(args.file)
    formats = resolve_formats(args)
    result = parse(
        raw,
        read_tools(args.tools),
        formats=formats,
        grammar_paths=args.grammar_path or None,
        in_think=args.in_think,
        max_chars=args.max_chars,
        truncated=args.truncated,
    )
    if args.json:
        out_json(result_json(result))
        return 0
    st = Style(sys.stdout, args.color)
    w = sys.stdout.write
    if result.reasoning:
        w(st("reasoning", "bold", "dim") + "\n" + st(_indent(result.reasoning), "dim") + "\n")
    w(st("text", "bold") + "\n" + (_indent(result.text) if result.text else st("  (none)", "dim")) + "\n")
    w(st(f"calls ({len(result.calls)})", "bold") + "\n")
    for i, call in enumerate(result.calls, 1):
        info = [call.format, f"chars {call.span[0]}-{call.span[1]}"]
        if call.id is not None:
            info.append(f"id {call.id}")
        if call.kind != "tool":
            info.append(call.kind)
        line = f"  {i}. {st(_shown(call.name), 'bold', 'cyan')}  " + st("(" + ", ".join(info) + ")", "dim")
        if call.repairs:
            line += "  " + st("repaired: " + ", ".join(call.repairs), "yellow")
        w(line + "\n     " + _dumps(call.arguments) + "\n")
    if result.errors:
        w(st(f"errors ({len(result.errors)})", "bold", "red") + "\n")
        for err in result.errors:
            w("  " + st(_shown(err), "red") + "\n")
    return 0


# -- stream --------------------------------------------------------------------------


def event_data(event: Any) -> dict[str, Any]:
    """A stream event as JSON data: {"event": "<snake_case class>", fields…}."""
    from dataclasses import fields

    from .cases import call_data

    name = type(event).__name__
    kind = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
    data: dict[str, Any] = {"event": kind}
    for f in fields(event):
        value = getattr(event, f.name)
        data[f.name] = call_data(value) if f.name == "call" else value
    return data


def cmd_stream(args: argparse.Namespace) -> int:
    from .._stream.parser import StreamParser

    sp = StreamParser(
        read_tools(args.tools),
        formats=resolve_formats(args),
        grammar_paths=args.grammar_path or None,
        in_think=args.in_think,
        max_chars=args.max_chars,
        truncated=args.truncated,
    )
    decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")  # (as read_text)
    fd = sys.stdin.fileno()
    out = sys.stdout

    def emit(events: list) -> None:
        for event in events:
            out.write(json.dumps(event_data(event), ensure_ascii=False) + "\n")
        if events:
            out.flush()

    while True:
        chunk = os.read(fd, 65536)  # what is available now, not a full buffer
        if not chunk:
            break
        text = decoder.decode(chunk)
        if text:
            emit(sp.feed(text))
    tail = decoder.decode(b"", final=True)
    if tail:
        emit(sp.feed(tail))
    emit(sp.flush())
    return 0


# -- formats / grammar -------------------------------------------------------------------


def _shown_path(path: Any) -> str:
    """Relative to the current directory when under it, else as is."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except (ValueError, OSError):
        return str(path)


def _grammar_label(fmt: Any, reg: Any) -> str:
    builtin = reg.builtin.get(fmt.name)
    if builtin is fmt:
        return fmt.path.name
    return _shown_path(fmt.path) + (" (replaces built-in)" if builtin is not None else " (user)")


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def cmd_formats(args: argparse.Namespace) -> int:
    reg = registry(args)
    fmts = reg.select(None)
    if args.markdown:  # docs/formats.md's table (toolgram._audit.catalog), user formats included
        from .catalog import formats_table

        sys.stdout.write(formats_table(fmts))
        return 0
    if args.json:
        out_json(
            [
                {
                    "name": f.name,
                    "title": f.title,
                    "models": f.models,
                    "markers": f.markers,
                    "grammar": str(f.path),
                    "builtin": reg.builtin.get(f.name) is f,
                }
                for f in fmts
            ]
        )
        return 0
    rows = [("format", "grammar", "markers", "models")]
    rows += [(f.name, _grammar_label(f, reg), f.markers, f.models) for f in fmts]
    st = Style(sys.stdout, args.color)
    # Long markers and model lists are cut (in full: --json, --markdown); on a terminal
    # the models column is cut further to fit its width.
    rows = [(a, b, _cut(c, 60), _cut(d, 80)) for a, b, c, d in rows]
    if _isatty(sys.stdout):
        width = shutil.get_terminal_size((120, 24)).columns
        fixed = sum(max(len(r[i]) for r in rows) for i in (0, 1, 2)) + 6
        rows = [(a, b, c, _cut(d, max(12, width - fixed))) for a, b, c, d in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for n, row in enumerate(rows):
        line = "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
        sys.stdout.write((st(line, "bold") if n == 0 else line) + "\n")
    for problem in reg.problems:
        sys.stderr.write(f"{PROG}: warning: grammar left out: {problem}\n")
    return 0


def cmd_constrain(args: argparse.Namespace) -> int:
    """toolgram.constrain's grammar on stdout (see docs/constrain.md)."""
    from .._constrain.grammar import constrain
    from .._grammar.registry import UnknownFormat

    tools = read_tools(args.tools)
    try:
        text = constrain(tools, args.format, engine=args.engine, prose=not args.no_prose,
                         max_calls=args.max_calls, special_tokens=args.special_token)  # fmt: skip
    except (ValueError, UnknownFormat) as exc:
        raise CLIError(str(exc).strip('"')) from None
    sys.stdout.write(text)
    return 0


def cmd_grammar(args: argparse.Namespace) -> int:
    """A format's grammar file on stdout (its path with --path); on stderr, what
    loading it warns about and the conflicts its header declares. NAME may be a
    grammar file (a path, or a name ending in .lark): it is loaded and checked."""
    import warnings

    from .._grammar.compile import declared_conflict_lines
    from .._grammar.registry import Registry, load_user_format, replaces

    shadows = ""
    problems: list[str] = []
    with warnings.catch_warnings(record=True):  # (said below, once, without Python's warning format)
        warnings.simplefilter("always")
        if args.name.endswith(".lark") or os.sep in args.name or (os.altsep and os.altsep in args.name):
            fmt = load_user_format(Path(args.name))
            builtin = Registry().builtin.get(fmt.name)  # (the built-in formats alone: no user path)
            if builtin is not None:
                shadows = replaces(fmt, builtin)
        else:
            reg = registry(args)
            problems = reg.problems  # (ambient grammars left out: as `toolgram formats` says)
            fmt = reg.formats.get(args.name)
            if fmt is None:
                if args.name in reg.broken:
                    raise CLIError(reg.broken[args.name])
                raise CLIError(unknown_format(args.name, reg))
            if fmt.name in reg.shadowed and reg.builtin.get(fmt.name) is not fmt:
                shadows = replaces(fmt, reg.builtin[fmt.name])
        found = fmt.warnings  # (compiles a built-in grammar: a broken one raises here)
    if args.path:
        sys.stdout.write(str(fmt.path) + "\n")
    else:
        sys.stdout.write(fmt.source if fmt.source.endswith("\n") else fmt.source + "\n")
    sys.stdout.flush()
    for problem in problems:
        sys.stderr.write(f"{PROG}: warning: grammar left out: {problem}\n")
    for message in ([shadows] if shadows else []) + list(found):
        sys.stderr.write(f"{PROG}: warning: {message}\n")
    lines = declared_conflict_lines(fmt)
    for line in lines:
        sys.stderr.write((f"{PROG}: declared conflict (resolved as shift): {line}" if not line.startswith(" ") else line) + "\n")
    return 0


# -- explain -------------------------------------------------------------------------


def cmd_explain(args: argparse.Namespace) -> int:
    from .explain import explain, explanation_data, shorten, tree_lines

    raw = read_text(args.file)
    exp = explain(
        raw,
        read_tools(args.tools),
        formats=resolve_formats(args),
        grammar_paths=args.grammar_path or None,
        in_think=args.in_think,
        max_chars=args.max_chars,
        truncated=args.truncated,
    )
    if args.json:
        out_json(explanation_data(exp))
        return 0
    st = Style(sys.stdout, args.color)
    w = sys.stdout.write
    name = "standard input" if args.file == "-" else args.file
    shown = ", ".join(exp.formats[:8]) + (f", … (+{len(exp.formats) - 8}; see 'toolgram formats')" if len(exp.formats) > 8 else "")
    w(f"{name}: {len(raw)} characters; {len(exp.formats)} formats, tried in this order: {shown}\n")
    if exp.opening:
        names = ", ".join(a.format for a in exp.opening)
        w(st(f"the reply's start is not a marker-less call ({names})", "dim") + "\n")
    for step in exp.steps:
        span = f"[{step.start}, {step.end})"
        piece = raw[step.start : step.end]
        if step.kind in ("text", "reasoning", "markup", "turn_end", "closer"):
            label = {"markup": "removed", "turn_end": "removed (end of turn)", "closer": "removed (the closer again)"}.get(step.kind, step.kind)
            extra = f"  {st(_shown(step.errors[0]), 'yellow')}" if step.errors else ""
            w(f"\n{st(span, 'dim')} {st(label, 'dim')}  {shorten(piece, 70)}{extra}\n")
            continue
        if step.kind == "call":
            # (A region with no call and no error is a "markup" segment: a message's markers.)
            names = ", ".join(st(_shown(c.name), "bold", "cyan") for c in step.calls) or ("(no call)" if step.errors else "(markup, no call)")
            w(f"\n{st(span, 'dim')} {st(step.format, 'bold', 'green')}  {names}\n")
            w(f"  grammar: {_shown_path(step.grammar)}\n")
            for attempt in step.attempts:
                if not attempt.ok:
                    w(f"  tried first: {attempt.format}: {_shown(attempt.reason)}\n")
                    _stopped(w, st, raw, attempt)
            w(f"  region: {shorten(piece, 100)}\n")
            for call in step.calls:
                w(_shown(f"  call {call.name}: {_dumps(call.arguments)}" + (f" (id {call.id})" if call.id else "")) + "\n")
            for err in step.errors:
                w("  " + st(f"error: {_shown(err)}", "red") + "\n")
            w(f"  repairs: {st(', '.join(step.repairs), 'yellow') if step.repairs else 'none'}\n")
            w("  rules:\n")
            for line in tree_lines(step.tree):
                w("    " + line + "\n")
        else:  # error: a marker no format could read
            w(f"\n{st(span, 'dim')} {st('unread', 'bold', 'red')}  {shorten(piece, 70)}\n")
            for err in step.errors:
                w("  " + st(_shown(err), "red") + "\n")
            for attempt in step.attempts:
                w(f"  tried: {attempt.format}: {_shown(attempt.reason)}\n")
                _stopped(w, st, raw, attempt)
            markers = ", ".join(repr(raw[a:b]) for a, b in step.markers)
            w("  kept as prose" + (f", but its markers, {markers}, removed (markup)" if markers else "") + "\n")
    res = exp.result
    w(f"\nresult: {len(res.calls)} call(s), {len(res.errors)} error(s)\n")
    for err in res.errors:
        w("  " + st(_shown(err), "red") + "\n")
    return 0


def _stopped(w: Any, st: Style, raw: str, attempt: Any) -> None:
    """Where a format's grammar stopped, the text there, and what it expected instead."""
    from .explain import line_col, shorten

    if attempt.at < 0:
        return
    line, col = line_col(raw, attempt.at)
    w(f"    stopped at {line}:{col} (offset {attempt.at}): {shorten(raw[attempt.at : attempt.at + 40], 50)}\n")
    if attempt.expected:
        w("    " + st("expected " + ("" if len(attempt.expected) == 1 else "one of ") + ", ".join(attempt.expected), "yellow") + "\n")


# -- check ---------------------------------------------------------------------------


SHOWN = 100  # mismatches, errors listed in the table's output (--json: all)
BAD_SHOWN = 20


def cmd_check(args: argparse.Namespace) -> int:
    from collections import Counter

    from . import baseline as bl
    from .check import NO_CALL, InternalError, Outcome, Tally, progress_bar, run_stream, table
    from .logs import Fields, InputError, check_inputs, estimate, units

    try:
        check_inputs(args.corpus, args.input_format)
    except InputError as exc:
        raise CLIError(str(exc)) from None
    formats = resolve_formats(args)
    if args.jobs < 1:
        raise CLIError("--jobs must be at least 1")
    if args.examples < 0:
        raise CLIError("--examples must be at least 0")
    try:
        failing = bl.failing_kinds(format_names(args.compare) or list(bl.DEFAULT_COMPARE))
    except bl.BaselineError as exc:
        raise CLIError(str(exc)) from None
    if args.baseline and args.save_baseline and Path(args.baseline).resolve() == Path(args.save_baseline).resolve():
        raise CLIError("--baseline and --save-baseline name the same file")
    settings = {
        "tools": read_tools(args.tools),
        "formats": formats,
        "grammar_paths": args.grammar_path or None,
        "in_think": args.in_think,
        "truncated": args.truncated,
        "max_chars": args.max_chars,
        "fields": Fields(raw=args.raw_field, tools=args.tools_field, id=args.id_field),
        "keep_data": bool(args.json or args.baseline or args.save_baseline),
    }
    registry(args)  # a broken --grammar-path fails here, once, not in every worker
    if "-" in args.corpus and _isatty(sys.stdin):
        sys.stderr.write(f"{PROG}: reading records from standard input (end them with Ctrl-D)\n")
    try:
        matcher = bl.Matcher(bl.read(args.baseline)) if args.baseline else None
        writer = bl.Writer(args.save_baseline) if args.save_baseline else None
    except bl.BaselineError as exc:
        raise CLIError(str(exc)) from None

    tally = Tally(args.by)
    bad_count, bads = 0, []
    mismatch_count, mismatches = 0, []
    error_count, erring = 0, []
    other_expected = 0
    kind_counts: Counter = Counter()
    examples: dict[str, list] = {k: [] for k in bl.KINDS}
    failing_records = 0
    n = 0
    out = sys.stdout
    if args.json:
        out.write('{\n  "cases": [')
    bar = progress_bar(estimate(args.corpus, args.input_format)) if _isatty(sys.stderr) else None

    def differ(case_id: str, source: str, kinds: dict) -> bool:
        for kind, text in kinds.items():
            kind_counts[kind] += 1
            if len(examples[kind]) < args.examples:
                examples[kind].append({"id": case_id, "source": source, "difference": text})
        return bool(failing & kinds.keys())

    try:
        for item in run_stream(units(args.corpus, args.input_format), settings, jobs=args.jobs):
            if bar is not None:
                bar.update(1)
            if not isinstance(item, Outcome):
                if args.strict:
                    raise CLIError(f"{item.where}: {item.message} (--strict stops at the first bad record)")
                bad_count += 1
                if len(bads) < (1000 if args.json else BAD_SHOWN):
                    bads.append(item)
                continue
            o = item
            tally.add(o)
            other_expected += o.expected_other
            if o.mismatch is not None:
                mismatch_count += 1
                if not args.json and len(mismatches) < SHOWN:  # (--json has them in "cases")
                    mismatches.append(o)
            if o.errors and args.show_errors and not args.json:
                error_count += 1
                if len(erring) < SHOWN:
                    erring.append(o)
            if writer is not None:
                writer.write(bl.record(o.id, o.source, o.data))
            kinds: dict = {}
            if matcher is not None:
                old = matcher.take(o.id)
                kinds = {"new": "not in the baseline"} if old is None else bl.differences(old, o.data)
                failing_records += differ(o.id, o.source, kinds)
            if args.json:
                entry = {
                    "id": o.id, "source": o.source, "format": o.format, "status": o.status,
                    "calls": o.data["calls"], "repairs": o.repairs, "errors": o.errors, "mismatch": o.mismatch,
                }  # fmt: skip
                if matcher is not None:
                    entry["differences"] = kinds
                out.write(("\n    " if n == 0 else ",\n    ") + json.dumps(entry, ensure_ascii=False))
            n += 1
        if matcher is not None:
            for rec in matcher.rest():
                failing_records += differ(rec["id"], rec.get("source", ""), {"missing": "not in this run"})
    except InternalError as exc:
        raise RuntimeError(str(exc)) from exc
    except bl.BaselineError as exc:
        raise CLIError(str(exc)) from None
    finally:
        if bar is not None:
            bar.close()
        if writer is not None:
            writer.close()
    if n == 0 and bad_count == 0:
        raise CLIError("no cases found (give .jsonl, .jsonl.gz, .json, .csv, .parquet or .txt files, folders of them, or -)")
    rows = tally.rows()
    failed = mismatch_count > 0 or failing_records > 0
    code = 1 if failed else (3 if bad_count else 0)
    compared = sorted(failing, key=list(bl.KINDS).index)
    if args.json:
        tail: dict[str, Any] = {
            "summary": rows,
            "bad_records": {"count": bad_count, "shown": [{"where": b.where, "message": b.message} for b in bads]},
            "expected_not_compared": other_expected,
        }
        if matcher is not None:
            tail["baseline"] = {
                "file": args.baseline,
                "records": matcher.count,
                "compare": compared,
                "failing_records": failing_records,
                "kinds": {
                    k: {"title": title, "count": kind_counts[k], "fails": k in failing, "examples": examples[k]}
                    for k, title in bl.KINDS.items()
                },
            }
        out.write(("\n  ],\n" if n else "],\n") + json.dumps(tail, ensure_ascii=False, indent=2)[2:] + "\n")
        return code
    st = Style(sys.stdout, args.color)
    w = sys.stdout.write
    lines = table(rows, "format" if args.by == "format" else "label")
    w(st(lines[0], "bold") + "\n" + "\n".join(lines[1:]) + "\n")
    if other_expected:
        w(f"\n{other_expected} record(s) have an `expected` that is not a list of calls (another tool's answer key?): not compared\n")
    if bad_count:
        w("\n" + st(f"bad records ({bad_count}, skipped)", "bold", "yellow") + "\n")
        for b in bads:
            w(f"  {b.where}: {b.message}\n")
        if bad_count > len(bads):
            w(f"  … and {bad_count - len(bads)} more\n")
    if erring:
        w("\n" + st(f"errors ({error_count} cases)", "bold") + "\n")
        for o in erring:
            w(f"  {o.id} ({o.source}): " + st(o.errors[0], "red") + (f" (+{len(o.errors) - 1})" if len(o.errors) > 1 else "") + "\n")
        if error_count > len(erring):
            w(f"  … and {error_count - len(erring)} more (--json lists every outcome)\n")
    if matcher is not None:
        _baseline_report(w, st, args.baseline, matcher.count, kind_counts, examples, failing, compared)
    if mismatches:
        w("\n" + st(f"mismatches ({mismatch_count})", "bold", "red") + "\n")
        for o in mismatches:
            where = o.format if o.format != NO_CALL else "no call"
            w(f"  {o.id} ({o.source}, {where}): {o.mismatch}\n")
            if o.errors:
                w("    " + st(o.errors[0], "red") + "\n")
        if mismatch_count > len(mismatches):
            w(f"  … and {mismatch_count - len(mismatches)} more (--json lists every outcome)\n")
    if not failed:
        checked = rows["total"]["checked"]
        verdict = "no mismatch" + (f", no difference in {', '.join(compared)}" if matcher is not None else "")
        w(f"\n{n} cases, {checked} with expected calls: " + st(verdict, "green") + "\n")
    if args.save_baseline:
        w(f"baseline of {n} records written to {args.save_baseline}\n")
    return code


def _baseline_report(w: Any, st: Style, path: str, count: int, counts: Any, examples: dict, failing: set, compared: list) -> None:
    from . import baseline as bl

    w("\n" + st(f"against the baseline {path} ({count} records; failing: {', '.join(compared)})", "bold") + "\n")
    width = max(len(t) for t in bl.KINDS.values())
    for kind, title in bl.KINDS.items():
        mark = "fails" if kind in failing and counts[kind] else ("" if kind in failing else "(not compared)")
        line = f"  {title.ljust(width)}  {counts[kind]:>7}  {mark}".rstrip()
        w((st(line, "red") if mark == "fails" else line) + "\n")
    for kind, title in bl.KINDS.items():
        if not examples[kind]:
            continue
        w(f"\n{title}:\n")
        for ex in examples[kind]:
            w(f"  {ex['id']} ({ex['source']}): {ex['difference']}\n")
        if counts[kind] > len(examples[kind]):
            w(f"  … and {counts[kind] - len(examples[kind])} more\n")


# -- new-format ----------------------------------------------------------------------


def cmd_new_format(args: argparse.Namespace) -> int:
    from .._pipeline import parse
    from .._grammar.registry import GrammarError, load_user_format
    from .scaffold import NAME_RE, case_name, grammar_text, guess

    if not NAME_RE.match(args.name):
        raise CLIError(f"format name {args.name!r}: use lower case letters, digits and _ (e.g. my_model)")
    example = read_text(args.example)
    if not example.strip():
        raise CLIError(f"{args.example}: the example is empty")
    root = Path(args.dir)
    grammar_file = root / "grammars" / f"{args.name}.lark"
    case_dir = root / "tests" / "corpus" / args.name
    case_file = case_dir / f"{case_name(Path(args.example))}.txt"
    for target in (grammar_file, case_file):
        if target.exists() and not args.force:
            raise CLIError(f"{target} exists (use --force to overwrite)")
    from .._grammar.registry import default_registry

    if args.name in default_registry().builtin and not args.force:
        # A user format of a built-in's name replaces the built-in wherever its folder is used.
        raise CLIError(f"{args.name!r} is a built-in format, which this grammar would replace; pick another name (or --force)")
    g = guess(example)
    text = grammar_text(args.name, g, case_file.relative_to(root).as_posix())
    try:
        grammar_file.parent.mkdir(parents=True, exist_ok=True)
        grammar_file.write_text(text, encoding="utf-8")
        case_dir.mkdir(parents=True, exist_ok=True)
        case_file.write_bytes(example.encode("utf-8"))
        if args.tools:
            case_file.with_name(case_file.stem + ".tools.json").write_text(
                json.dumps(read_tools(args.tools), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
    except OSError as exc:
        raise CLIError(f"cannot write: {exc}") from None
    w = sys.stdout.write
    markers = f"{g.start} … {g.end}".strip(" …") if g.start else f"none (anchor: {g.anchor})"
    w(f"wrote {grammar_file}  (markers: {markers}; payload: {g.payload})\n")
    w(f"wrote {case_file}\n")
    try:
        load_user_format(grammar_file)
        result = parse(example, read_tools(args.tools), formats=[args.name], grammar_paths=[grammar_file])
    except GrammarError as exc:
        w(f"the grammar does not compile yet: {exc}\n")
    else:
        if result.calls:
            names = ", ".join(c.name for c in result.calls)
            w(f"the example parses: {len(result.calls)} call(s) ({names})\n")
        else:
            why = result.errors[0] if result.errors else "no call found"
            w(f"the example does not parse yet: {why}\n")
    w("next: fill in the header (title, models), then check the grammar with\n")
    w(f"  toolgram explain {case_file} --grammar-path {grammar_file.parent}\n")
    return 0


# -- the parser ----------------------------------------------------------------------


def _max_chars(text: str) -> int | None:
    if text.strip().lower() == "none":
        return None
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of characters (or 'none')") from None
    if n < 0:
        raise argparse.ArgumentTypeError("must be >= 0 (or 'none')")
    return n


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--grammar-path",
        action="append",
        metavar="PATH",
        help="your own .lark format file or folder (repeatable; also TOOLGRAM_GRAMMAR_PATH)",
    )
    reading = argparse.ArgumentParser(add_help=False)
    reading.add_argument("--tools", metavar="FILE", help="JSON file of the tools offered (any shape tools= accepts)")
    reading.add_argument(
        "--format", action="append", metavar="NAME", help="only try these formats (repeatable or comma-separated)"
    )
    reading.add_argument(
        "--in-think",
        action="store_true",
        help="the reply starts inside a reasoning block the prompt opened (<think>, [THINK], …: DeepSeek-R1, QwQ, Mistral templates); any declared closer ends it",
    )
    reading.add_argument(
        "--truncated",
        choices=("repair", "error"),
        default="repair",
        help="a call the end of the reply cut inside a value (repair cut_value): a call, repaired (default), "
        "or an error that asks the model to write it again",
    )
    limit = argparse.ArgumentParser(add_help=False)
    limit.add_argument(
        "--max-chars",
        type=_max_chars,
        default=32_768,
        metavar="N",
        help="parse only the first N characters, the rest is prose ('none': all; default 32768)",
    )
    color = argparse.ArgumentParser(add_help=False)
    color.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto", help="colour output (auto: on a terminal, unless NO_COLOR is set)"
    )

    parser = _Parser(prog=PROG, description="Read tool calls out of LLM text; audit and regression-test the parsing.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("parse", parents=[common, reading, limit, color], help="parse one reply (a file or stdin)")
    p.add_argument("file", nargs="?", default="-", metavar="FILE", help="the raw reply; '-' or nothing reads stdin")
    p.add_argument("--json", action="store_true", help="the ParseResult as JSON (spans, repairs, segments)")
    p.set_defaults(func=cmd_parse)

    p = sub.add_parser("stream", parents=[common, reading, limit], help="parse stdin as it arrives; events as JSON lines")
    p.set_defaults(func=cmd_stream)

    p = sub.add_parser("formats", parents=[common, color], help="list the known formats")
    p.add_argument("--json", action="store_true", help="as JSON")
    p.add_argument("--markdown", action="store_true", help="as the Markdown table of docs/formats.md")
    p.set_defaults(func=cmd_formats)

    p = sub.add_parser("grammar", parents=[common], help="print a format's grammar file; its warnings and declared conflicts on stderr")
    p.add_argument("name", metavar="NAME|FILE", help="a format's name, or a grammar file (a path, or ending in .lark) to load and check")
    p.add_argument("--path", action="store_true", help="print the file's path instead")
    p.set_defaults(func=cmd_grammar)

    p = sub.add_parser("explain", parents=[common, reading, limit, color], help="audit: which format read which span, how")
    p.add_argument("file", metavar="FILE", help="the raw reply; '-' reads stdin")
    p.add_argument("--json", action="store_true", help="as JSON")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("check", parents=[common, reading, limit, color], help="run captured outputs or logs; exit 1 on a mismatch")
    p.add_argument(
        "corpus", nargs="+", metavar="CORPUS",
        help="logs (.jsonl, .jsonl.gz, .json arrays, .csv, .parquet), .txt cases, folders of them, or - (stdin)",
    )  # fmt: skip
    p.add_argument("--jobs", "-j", type=int, default=1, metavar="N", help="parse in N processes")
    p.add_argument("--by", choices=("format", "label"), default="format", help="rows: detected format, or the case's folder / record label")
    p.add_argument("--show-errors", action="store_true", help="also list the cases with errors")
    p.add_argument("--json", action="store_true", help="summary and per-case outcomes (calls with arguments) as JSON")
    logs = p.add_argument_group("logs")
    logs.add_argument("--input-format", choices=("jsonl", "json", "csv", "parquet", "txt"), help="the inputs' kind (default: from the name; stdin: sniffed, JSONL)")
    logs.add_argument("--raw-field", default="raw", metavar="PATH", help="the field holding the reply; a dotted path for nested records (choices.0.message.content)")
    logs.add_argument("--tools-field", metavar="PATH", help="the field holding the tools offered (default: tools, else tools_offered)")
    logs.add_argument("--id-field", default="id", metavar="PATH", help="the field naming the record (default: id; else line_N / row_N)")
    logs.add_argument("--strict", action="store_true", help="stop at the first bad record (exit 2) instead of skipping it (exit 3)")
    base = p.add_argument_group("baselines")
    base.add_argument("--save-baseline", metavar="FILE", help="write every record's result to FILE (Parquet with pyarrow, else JSON lines)")
    base.add_argument("--baseline", metavar="FILE", help="compare every record's result with FILE's; differences grouped by kind")
    base.add_argument(
        "--compare", action="append", metavar="KIND",
        help="what differences fail the run: calls, text, errors or all (repeatable or comma-separated; default: calls,text)",
    )  # fmt: skip
    base.add_argument("--examples", type=int, default=3, metavar="N", help="examples shown of each kind of difference (default 3)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("constrain", parents=[], help="print the grammar that makes a model write calls in a format")
    p.add_argument("format", metavar="FORMAT")
    p.add_argument("--tools", required=True, metavar="FILE", help="JSON file of the tools (any shape tools= accepts)")
    p.add_argument("--engine", choices=("llguidance", "gbnf"), default="llguidance", help="grammar syntax (default: llguidance)")
    p.add_argument("--no-prose", action="store_true", help="no text before the calls")
    p.add_argument("--max-calls", type=int, metavar="N", help="at most N calls")
    p.add_argument("--special-token", action="append", metavar="MARKER", help="a marker the tokenizer has as one special token (repeatable; llguidance)")
    p.set_defaults(func=cmd_constrain)

    p = sub.add_parser("new-format", parents=[], help="start a grammar and a corpus case from an example reply")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--example", required=True, metavar="FILE", help="a raw reply in the new format")
    p.add_argument("--tools", metavar="FILE", help="tools offered in the example (written as a sidecar)")
    p.add_argument("--dir", default=".", metavar="DIR", help="project root: writes DIR/grammars/ and DIR/tests/corpus/NAME/")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.set_defaults(func=cmd_new_format)

    p = sub.add_parser(
        "serve", parents=[], help="an OpenAI-compatible server reading tool calls out of a raw-text backend's replies"
    )
    p.add_argument("--backend", required=True, metavar="URL", help="the backend's base URL (http://127.0.0.1:8080 or …/v1)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    p.add_argument(
        "--formats", action="append", metavar="NAME", help="only read these formats (repeatable or comma-separated)"
    )
    p.add_argument(
        "--truncated",
        choices=("repair", "error"),
        default="repair",
        help="a call the end of the reply cut inside a value: a call, repaired (default), or an error in the "
        "toolgram extension field that asks the model to write it again",
    )
    p.add_argument(
        "--max-chars",
        type=int,
        default=None,
        metavar="N",
        help="read at most N characters of a reply (default: all of it; parse()'s default of 32768 would cut a "
        "long call's arguments)",
    )
    p.add_argument(
        "--whole-arguments",
        action="store_true",
        help="streamed: send each call whole, in one chunk, once it is certain, and never withdraw one. By "
        "default a call's index, id and name are sent once its name is certain and its arguments as the model "
        "writes them, in the formats the formats table marks 'streams arguments' (docs/formats.md): a JSON call "
        "object whose name comes first (Hermes, LongCat, fenced JSON, InternLM), JSON arguments after an opener "
        "(Kimi K2, Mistral, harmony, DeepSeek V3 and V3.1, Functionary v3.1 and v3.2, <function>NAME</function>, PLaMo 3), "
        "Llama 3 JSON, GigaChat, JSON lists of call objects (Granite, Nemotron, Jamba, Apriel, xLAM, Command R, Cohere, "
        "Apertus, functools), the keyword arguments of a Python-style list (pythonic, Llama 4, LFM2, OLMo 3, a "
        "```python fence), and per parameter "
        "the XML-ish formats whose grammars declare their tags (Qwen3-Coder, Seed-OSS, GLM, MiniMax M2, DSML, "
        "Kimi K3, dots.llm, MiniCPM5, Step-3, Hunyuan Hy3); other formats send a call whole. A call's arguments "
        "are valid JSON only once it completes; a call that fails after it was sent is withdrawn in the toolgram "
        "extension field and its JSON never completes",
    )
    p.add_argument(
        "--stream-arguments",
        action="store_true",
        help="accepted for compatibility, no effect: arguments stream as written by default (see --whole-arguments)",
    )
    p.add_argument(
        "--prompt", metavar="FORMAT", help="write the tools into the system prompt in FORMAT (for a chat template without tools)"
    )
    p.add_argument(
        "--in-think",
        action="store_true",
        help="the replies start inside a reasoning block the chat template opened (DeepSeek-R1, QwQ, Qwen3 "
        "thinking): what comes before its closer is sent as reasoning_content, not content",
    )
    p.add_argument("--api-key", metavar="KEY", help="the key clients must send (default: TOOLGRAM_API_KEY; none: no check)")
    p.add_argument("--backend-api-key", metavar="KEY", help="the key sent to the backend (default: TOOLGRAM_BACKEND_API_KEY)")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S", help="seconds to wait for the backend (default 600)")
    p.add_argument("--log-level", default="warning", help="uvicorn's log level (default warning)")
    p.set_defaults(func=cmd_serve)
    return parser


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        from .._serve import serve
    except ImportError as exc:
        raise CLIError(f"serve needs its extra: pip install 'toolgram[serve]' ({exc})") from None
    formats = [n.strip() for v in args.formats for n in v.split(",") if n.strip()] if args.formats else None
    try:
        serve(
            args.backend,
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            formats=formats,
            truncated=args.truncated,
            max_chars=args.max_chars,
            arguments="whole" if args.whole_arguments else "as_written",
            prompt=args.prompt,
            in_think=args.in_think,
            api_key=args.api_key or os.environ.get("TOOLGRAM_API_KEY") or None,
            backend_api_key=args.backend_api_key or os.environ.get("TOOLGRAM_BACKEND_API_KEY") or None,
            timeout=args.timeout,
        )
    except ValueError as exc:  # (an unknown --prompt format)
        raise CLIError(str(exc)) from None
    return 0


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    text = str(message)
    text = text[len(PROG) + 2 :] if text.startswith(f"{PROG}: ") else text
    sys.stderr.write(f"{PROG}: warning: {text}\n")


def main(argv: list[str] | None = None) -> int:
    from .._grammar.registry import GrammarError, GrammarWarning, UnknownFormat

    parser = build_parser()
    args = parser.parse_args(argv)
    for stream in (sys.stdout, sys.stderr):
        # A value may hold a lone surrogate (a reply cut between the two `\uXXXX` escapes
        # of an emoji): written as its escape, which is the same in JSON output, rather
        # than failing the whole command on UTF-8's refusal.
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            pass
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning  # (one line on stderr, not Python's file:line form)
            warnings.simplefilter("always", GrammarWarning)  # (a command's user is told, whatever the filters)
            return args.func(args)
    except CLIError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 2
    except GrammarError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 2
    except UnknownFormat as exc:  # an unknown format name from deeper down
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`toolgram check … | head`): exit quietly, as SIGPIPE would.
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keep interpreter shutdown from writing
        except OSError:
            pass
        return 141
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback
        if os.environ.get("TOOLGRAM_DEBUG"):
            raise
        sys.stderr.write(f"{PROG}: internal error: {type(exc).__name__}: {exc} (TOOLGRAM_DEBUG=1 shows the traceback)\n")
        return 70
