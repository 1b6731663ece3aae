"""Captured model outputs as test cases: what `toolgram check` and the pytest plugin read.

Two layouts, mixed freely:

- JSON lines (`*.jsonl`): one record per line with `raw` (the exact model text) and,
  optionally, `tools` or `tools_offered` (anything `tools=` accepts), `formats` (a list
  of format names to try), `expected` (a list of `{"name", "arguments"}`; other shapes,
  such as null or a dict, mean "no expectation"), `in_think` (true: the reply starts
  inside a `<think>` block the prompt opened, as parse()'s in_think), `truncated`
  ("repair" or "error", as parse()'s) and `id` (names the case; otherwise
  `line_<n>`). Every other key (`format`, `model`, `note`, …) is ignored.
- Folders of `.txt` files, one reply each, byte for byte (the layout of tests/corpus):
  `<case>.txt` and optional sidecars `<case>.tools.json`, `<case>.formats.json`,
  `<case>.expected.json`, `<case>.in_think.json` (`true`) and `<case>.truncated.json`
  (`"error"`). Sub-folders are read too (the case id keeps the folder:
  `hermes/single_call`); names starting with `.` or `_` (e.g. `_snapshots`) are not.

A case's `id` is `<folder name>/<path in it without .txt>` for a folder given,
`<folder>/<name>` for a .txt file given, and `<jsonl stem>/<id or line_n>` for a record
(record ids must be unique within a file). The pytest plugin uses ids relative to the
corpus folder (`folder_cases`) to name snapshots.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class CaseError(Exception):
    """A corpus file that cannot be read; the message is one line naming the file."""


@dataclass(frozen=True)
class Case:
    id: str  # "hermes/single_call", "captures/line_3"
    source: str  # where it came from: "dir/hermes/single_call.txt", "file.jsonl:3"
    raw: str
    tools: Any = None
    formats: tuple[str, ...] | None = None
    expected: tuple[dict, ...] | None = None  # only list-shaped expectations
    label: str = ""  # the folder name, or the record's descriptive `format`
    in_think: bool = False  # the reply starts inside a <think> block (parse's in_think)
    truncated: str | None = None  # parse's truncated ("repair", "error"); None: not said (the default, or the command's)
    expected_other: bool = False  # the record's `expected` is not a list of calls (another tool's answer key): not compared


def load_cases(paths: list[str | Path]) -> list[Case]:
    """Every case under these files and folders, in a stable order. Raises CaseError."""
    cases: list[Case] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            cases.extend(folder_cases(path, prefix=path.resolve().name))
        elif path.is_file():
            if path.suffix == ".jsonl":
                cases.extend(_jsonl(path, path.stem))
            elif path.suffix == ".txt":
                cases.append(_txt(path, f"{path.parent.name}/{path.stem}" if path.parent.name else path.stem))
            else:
                raise CaseError(f"{path}: not a .jsonl file, a .txt case or a folder")
        else:
            raise CaseError(f"{path}: no such file or folder")
    return cases


def case_files(folder: Path) -> list[Path]:
    """The .txt and .jsonl files a folder contributes, sorted."""
    out = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if any(part.startswith((".", "_")) for part in rel.parts):
            continue
        if path.is_file() and path.suffix in (".txt", ".jsonl"):
            out.append(path)
    return out


def folder_cases(folder: Path, prefix: str = "") -> list[Case]:
    """The cases in a folder, ids relative to it (after `prefix/` when given)."""
    cases = []
    for path in case_files(folder):
        rel = path.relative_to(folder).with_suffix("").as_posix()
        rel = f"{prefix}/{rel}" if prefix else rel
        if path.suffix == ".jsonl":
            cases.extend(_jsonl(path, rel))
        else:
            cases.append(_txt(path, rel))
    return cases


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CaseError(f"{path}: {_one_line(exc)}") from None


def _txt(path: Path, case_id: str) -> Case:
    stem = path.name[: -len(".txt")]
    try:
        # bytes, not read_text(): text mode would turn "\r\n" into "\n"
        raw = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"{path}: {_one_line(exc)}") from None
    sidecar = {s: path.with_name(f"{stem}.{s}.json") for s in ("tools", "formats", "expected", "in_think", "truncated")}
    tools = _checked_tools(_read_json(sidecar["tools"]), str(sidecar["tools"])) if sidecar["tools"].exists() else None
    formats = _read_json(sidecar["formats"]) if sidecar["formats"].exists() else None
    expected = _read_json(sidecar["expected"]) if sidecar["expected"].exists() else None
    in_think = _read_json(sidecar["in_think"]) if sidecar["in_think"].exists() else False
    if not isinstance(in_think, bool):
        raise CaseError(f"{sidecar['in_think']}: expected true or false")
    truncated = _read_json(sidecar["truncated"]) if sidecar["truncated"].exists() else None
    if truncated is not None and truncated not in ("repair", "error"):
        raise CaseError(f'{sidecar["truncated"]}: expected "repair" or "error"')
    if formats is not None and not (isinstance(formats, list) and all(isinstance(f, str) for f in formats)):
        raise CaseError(f"{sidecar['formats']}: expected a JSON list of format names")
    if expected is not None and _expected(expected) is None:
        raise CaseError(f'{sidecar["expected"]}: expected a JSON list of {{"name", "arguments"}} objects')
    return Case(
        id=case_id,
        source=str(path),
        raw=raw,
        tools=tools,
        formats=tuple(formats) if formats is not None else None,
        expected=_expected(expected),
        label=path.parent.name,
        in_think=in_think,
        truncated=truncated,
    )


def _jsonl(path: Path, prefix: str) -> list[Case]:
    try:
        # Split on "\n" only: U+2028, U+0085, \x1c… are characters inside a record (json.dumps
        # with ensure_ascii=False writes them as is), not line ends as for str.splitlines().
        lines = path.read_bytes().decode("utf-8").removeprefix("\ufeff").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"{path}: {_one_line(exc)}") from None
    cases = []
    seen: dict[str, int] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise CaseError(f"{path}:{n}: not JSON: {_one_line(exc)}") from None
        if not isinstance(record, dict) or not isinstance(record.get("raw"), str):
            raise CaseError(f'{path}:{n}: a record needs a "raw" string')
        formats = record.get("formats")
        if formats is not None and not (isinstance(formats, list) and all(isinstance(f, str) for f in formats)):
            raise CaseError(f'{path}:{n}: "formats" must be a list of format names')
        rid = record.get("id")
        name = _SAFE.sub("_", str(rid)).strip("_.") if isinstance(rid, (str, int)) and str(rid).strip() else ""
        if name and name in seen:
            raise CaseError(f'{path}:{n}: id {rid!r} is also the id of line {seen[name]}')
        seen[name] = n
        tools = _checked_tools(record.get("tools", record.get("tools_offered")), f"{path}:{n}")
        label = record.get("format")
        in_think = record.get("in_think", False)
        if not isinstance(in_think, bool):
            raise CaseError(f'{path}:{n}: "in_think" must be true or false')
        truncated = record.get("truncated")
        if truncated is not None and truncated not in ("repair", "error"):
            raise CaseError(f'{path}:{n}: "truncated" must be "repair" or "error"')
        cases.append(
            Case(
                id=f"{prefix}/{name or f'line_{n}'}",
                source=f"{path}:{n}",
                raw=record["raw"],
                tools=tools,
                formats=tuple(formats) if formats is not None else None,
                expected=_expected(record.get("expected")),
                label=label if isinstance(label, str) else path.stem,
                in_think=in_think,
                truncated=truncated,
            )
        )
    return cases


def _checked_tools(tools: Any, where: str) -> Any:
    """A case's tools, as given, once normalize_tools can read them: a wrong shape is
    said with its place when the cases load, not as a TypeError from a worker."""
    from .._tools.tools import normalize_tools

    try:
        normalize_tools(tools)
    except TypeError as exc:
        raise CaseError(f"{where}: not tools ({exc})") from None
    return tools


def _expected(value: Any) -> tuple[dict, ...] | None:
    if isinstance(value, list) and all(isinstance(v, dict) and isinstance(v.get("name"), str) for v in value):
        return tuple(value)
    return None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# -- results as plain JSON data ----------------------------------------------------


def call_data(call: Any) -> OrderedDict:
    """One ToolCall as JSON data (the snapshot shape)."""
    return OrderedDict(
        name=call.name,
        arguments=_plain(call.arguments),
        id=call.id,
        kind=call.kind,
        format=call.format,
        span=list(call.span),
        repairs=list(call.repairs),
    )


def result_data(result: Any) -> OrderedDict:
    """A ParseResult as JSON data: what a case's snapshot holds (same shape as the
    project's own corpus snapshots)."""
    return OrderedDict(
        text=result.text,
        reasoning=result.reasoning,
        errors=list(result.errors),
        calls=[call_data(c) for c in result.calls],
    )


def result_json(result: Any) -> OrderedDict:
    """Everything in a ParseResult, for `toolgram parse --json`: the snapshot shape plus
    each call's MFCS instructions and the segments (which slice of the raw went where)."""
    data = result_data(result)
    for entry, call in zip(data["calls"], result.calls):
        if call.instructions is not None:
            entry["instructions"] = call.instructions
    data["segments"] = [OrderedDict(kind=s.kind, start=s.start, end=s.end) for s in result.segments]
    return data


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return repr(value)


def mismatch(expected: tuple[dict, ...] | None, calls: list[Any]) -> str | None:
    """None when the calls are what was expected (names in order; arguments when the
    expectation gives them), else a one-line description of the difference."""
    if expected is None:
        return None
    got = [(c.name, c.arguments) for c in calls]
    if len(expected) != len(got):
        return f"expected {len(expected)} call(s): {_calls_text(expected)}; got {len(got)}: {_calls_text(got)}"
    for i, (want, (name, args)) in enumerate(zip(expected, got)):
        if want["name"] != name:
            return f"call {i + 1}: expected {want['name']}, got {name}"
        if "arguments" in want and _plain(want["arguments"]) != _plain(args):
            return f"call {i + 1} ({name}): expected arguments {_dumps(want['arguments'])}, got {_dumps(args)}"
    return None


def _calls_text(calls: Any) -> str:
    items = [(c["name"], c.get("arguments")) if isinstance(c, dict) else c for c in calls]
    if not items:
        return "none"
    return ", ".join(f"{name}({_dumps(args) if args is not None else '…'})" for name, args in items)


def _dumps(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 120 else text[:119] + "…"
